//! `notify-keyspace-events`'s value: the event classes, as Redis's flag letters.
//! Pub/Sub publishes the events ([`pubsub::notify`](crate::pubsub::notify)).

/// `K`: publish on `__keyspace@<db>__:<key>`.
pub const KEYSPACE: u32 = 1 << 0;
/// `E`: publish on `__keyevent@<db>__:<event>`.
pub const KEYEVENT: u32 = 1 << 1;
/// `g`: generic commands (`DEL`, `EXPIRE`, `RENAME` …).
pub const GENERIC: u32 = 1 << 2;
/// `$`: string commands.
pub const STRING: u32 = 1 << 3;
/// `l`: list commands.
pub const LIST: u32 = 1 << 4;
/// `s`: set commands.
pub const SET: u32 = 1 << 5;
/// `h`: hash commands.
pub const HASH: u32 = 1 << 6;
/// `z`: sorted-set commands.
pub const ZSET: u32 = 1 << 7;
/// `x`: keys that expired.
pub const EXPIRED: u32 = 1 << 8;
/// `e`: keys evicted under `maxmemory`.
pub const EVICTED: u32 = 1 << 9;
/// `t`: stream commands.
pub const STREAM: u32 = 1 << 10;
/// `m`: key misses.
pub const KEY_MISS: u32 = 1 << 11;
/// `d`: module events.
pub const MODULE: u32 = 1 << 13;
/// `n`: new keys.
pub const NEW: u32 = 1 << 14;
/// `A`: every class but `m` and `n`.
pub const ALL: u32 =
    GENERIC | STRING | LIST | SET | HASH | ZSET | EXPIRED | EVICTED | STREAM | MODULE;

/// The class letters, in the order Redis prints them.
const LETTERS: &[(u32, char)] = &[
    (GENERIC, 'g'),
    (STRING, '$'),
    (LIST, 'l'),
    (SET, 's'),
    (HASH, 'h'),
    (ZSET, 'z'),
    (EXPIRED, 'x'),
    (EVICTED, 'e'),
    (STREAM, 't'),
    (MODULE, 'd'),
    (NEW, 'n'),
];

/// Parses a `notify-keyspace-events` value.
pub fn parse_flags(v: &str) -> Result<u32, String> {
    let mut flags = 0;
    for c in v.chars() {
        flags |= match c {
            'A' => ALL,
            'K' => KEYSPACE,
            'E' => KEYEVENT,
            'm' => KEY_MISS,
            _ => LETTERS
                .iter()
                .find(|(_, l)| *l == c)
                .map(|(f, _)| *f)
                .ok_or_else(|| {
                    "Invalid event class character. Use 'Ag$lshzxeKEtmdn'.".to_string()
                })?,
        };
    }
    Ok(flags)
}

/// Formats flags the way `CONFIG GET notify-keyspace-events` shows them.
pub fn format_flags(flags: u32) -> String {
    let mut out = String::new();
    if flags & ALL == ALL {
        out.push('A');
    } else {
        for (f, l) in LETTERS {
            if flags & f != 0 {
                out.push(*l);
            }
        }
    }
    for (f, l) in [(KEYSPACE, 'K'), (KEYEVENT, 'E'), (KEY_MISS, 'm')] {
        if flags & f != 0 {
            out.push(l);
        }
    }
    out
}

/// The flags the hub acts on: none unless `K` or `E` says where to publish.
pub fn effective(flags: u32) -> u32 {
    if flags & (KEYSPACE | KEYEVENT) == 0 {
        0
    } else {
        flags
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn letters_round_trip_in_redis_order() {
        for (input, shown) in [
            ("KEA", "AKE"),
            ("Kg", "gK"),
            ("K$lshzxetmd", "$lshzxetdKm"),
            ("Kn", "nK"),
            ("KEAmn", "AKEm"),
            ("", ""),
        ] {
            assert_eq!(format_flags(parse_flags(input).expect("valid")), shown);
        }
        assert!(parse_flags("Eq").is_err());
        assert_eq!(effective(parse_flags("g$").expect("valid")), 0);
    }
}
