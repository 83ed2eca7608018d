//! Users written back as rules (`ACL LIST`, the ACL file, `ACL GETUSER`), the way
//! Redis 7.0 writes them: the command bits are described afresh from `+@all`/`-@all`,
//! the categories that fit best, then single commands, so that the same permissions
//! always read the same whatever rules produced them.

use super::catalog::catalog;
use super::rules::{KeyPattern, Selector, UserRules};
use crate::acl::catalog::CATEGORIES;
use crate::reply::Reply;

/// The flag words of a user, in Redis's order.
pub fn flags(r: &UserRules) -> Vec<&'static str> {
    let mut out = vec![if r.enabled { "on" } else { "off" }];
    if r.nopass {
        out.push("nopass");
    }
    match r.sanitize {
        Some(false) => out.push("skip-sanitize-payload"),
        Some(true) => out.push("sanitize-payload"),
        None => {}
    }
    out
}

fn key_pattern(k: &KeyPattern) -> String {
    let prefix = match (k.read, k.write) {
        (true, true) => "~",
        (true, false) => "%R~",
        _ => "%W~",
    };
    format!("{prefix}{}", String::from_utf8_lossy(&k.pattern))
}

/// A selector's key patterns as `ACL GETUSER` shows them.
fn keys_text(s: &Selector) -> String {
    if s.all_keys {
        return "~*".into();
    }
    s.keys.iter().map(key_pattern).collect::<Vec<_>>().join(" ")
}

/// A selector's channel patterns as `ACL GETUSER` shows them.
fn channels_text(s: &Selector) -> String {
    if s.all_channels {
        return "&*".into();
    }
    s.channels
        .iter()
        .map(|c| format!("&{}", String::from_utf8_lossy(c)))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Counts the top-level commands of a category that are on and off in `bits`.
fn count(bits: &Selector, cat_bit: u32) -> (usize, usize) {
    let cat = catalog();
    let (mut on, mut off) = (0, 0);
    for &slot in cat.top() {
        if cat.entry(slot).is_some_and(|e| e.cats & cat_bit != 0) {
            if bits.bit(slot) {
                on += 1;
            } else {
                off += 1;
            }
        }
    }
    (on, off)
}

/// The command rules of a selector.
pub fn command_rules(s: &Selector) -> String {
    let mut rules: Vec<String> = Vec::new();
    let additive = !s.future;
    let mut fake = Selector::empty();
    if additive {
        rules.push("-@all".into());
    } else {
        rules.push("+@all".into());
        fake.apply("+@all").expect("valid rule");
    }
    let mut temp = s.clone();
    loop {
        let mut best: Option<usize> = None;
        let (mut mindiff, mut maxsame) = (usize::MAX, 0);
        for (j, _) in CATEGORIES.iter().enumerate() {
            let (on, off) = count(&temp, 1 << j);
            let (diff, same) = if additive { (off, on) } else { (on, off) };
            if same > diff && (diff < mindiff || (diff == mindiff && same > maxsame)) {
                best = Some(j);
                mindiff = diff;
                maxsame = same;
            }
        }
        let Some(j) = best else { break };
        fake.change_category(1 << j, additive);
        temp.change_category(1 << j, !additive);
        rules.push(format!(
            "{}@{}",
            if additive { '+' } else { '-' },
            CATEGORIES[j]
        ));
    }
    let cat = catalog();
    for &slot in cat.top() {
        let Some(entry) = cat.entry(slot) else {
            continue;
        };
        let user = s.bit(slot);
        if user != fake.bit(slot) {
            rules.push(format!("{}{}", if user { '+' } else { '-' }, entry.name));
            fake.change(slot, user);
        }
        for &sub in &entry.subs {
            let user = s.bit(sub);
            if user != fake.bit(sub) {
                if let Some(e) = cat.entry(sub) {
                    rules.push(format!("{}{}", if user { '+' } else { '-' }, e.name));
                }
                fake.change(sub, user);
            }
        }
        if !user {
            if let Some(args) = s.firstargs.get(&slot) {
                for a in args {
                    rules.push(format!("+{}|{a}", entry.name));
                }
            }
        }
    }
    rules.join(" ")
}

/// A selector as rules: keys, channels, commands.
pub fn selector(s: &Selector) -> String {
    let mut parts: Vec<String> = Vec::new();
    if s.all_keys {
        parts.push("~*".into());
    } else {
        parts.extend(s.keys.iter().map(key_pattern));
    }
    if s.all_channels {
        parts.push("&*".into());
    } else {
        parts.push("resetchannels".into());
        parts.extend(
            s.channels
                .iter()
                .map(|c| format!("&{}", String::from_utf8_lossy(c))),
        );
    }
    parts.push(command_rules(s));
    parts.join(" ")
}

/// A user's rules after its name, as `ACL LIST` and the ACL file write them.
pub fn rules(r: &UserRules) -> String {
    let mut parts: Vec<String> = flags(r).into_iter().map(String::from).collect();
    parts.extend(r.passwords.iter().map(|p| format!("#{p}")));
    parts.push(selector(&r.root));
    parts.extend(r.selectors.iter().map(|s| format!("({})", selector(s))));
    parts.join(" ")
}

/// The `ACL GETUSER` reply.
pub fn getuser(r: &UserRules) -> Reply {
    let b = |t: &str| Reply::bulk(t.as_bytes());
    let selector_map = |s: &Selector| {
        Reply::Map(vec![
            (b("commands"), b(&command_rules(s))),
            (b("keys"), b(&keys_text(s))),
            (b("channels"), b(&channels_text(s))),
        ])
    };
    Reply::Map(vec![
        (
            b("flags"),
            Reply::Set(flags(r).into_iter().map(b).collect()),
        ),
        (
            b("passwords"),
            Reply::Array(r.passwords.iter().map(|p| b(p)).collect()),
        ),
        (b("commands"), b(&command_rules(&r.root))),
        (b("keys"), b(&keys_text(&r.root))),
        (b("channels"), b(&channels_text(&r.root))),
        (
            b("selectors"),
            Reply::Array(r.selectors.iter().map(selector_map).collect()),
        ),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn described(ops: &[&str]) -> String {
        // The command table registers the catalogue rules are read against.
        crate::command::table();
        let mut r = UserRules::new();
        for op in ops {
            r.apply(op).expect("valid rule");
        }
        rules(&r)
    }

    #[test]
    // Single commands come in table order (Redis writes them in its hash order).
    fn describes_like_redis() {
        assert_eq!(described(&[]), "off resetchannels -@all");
        assert_eq!(
            described(&["on", "nopass", "~*", "&*", "+@all"]),
            "on nopass ~* &* +@all"
        );
        assert_eq!(
            described(&["on", ">pw", "~foo*", "+get", "+@hash", "-hset", "&ch*", "%R~r*"]),
            "on #30c952fab122c3f9759f02a6d95c3758b246b4fee239957b2d4fee46e26170c4 ~foo* %R~r* resetchannels &ch* -@all +@hash +get -hset"
        );
        assert_eq!(
            described(&["+get", "+set", "+incr", "-set", "+@string", "-get"]),
            "off resetchannels -@all +@string -get"
        );
        assert_eq!(
            described(&[
                "allcommands",
                "-get",
                "nocommands",
                "+set",
                "allkeys",
                "resetkeys",
                "~a",
                "allchannels"
            ]),
            "off ~a &* -@all +set"
        );
        assert_eq!(
            described(&["%RW~a", "%W~b", "%WR~c", "%R~"]),
            "off ~a %W~b ~c %R~ resetchannels -@all"
        );
        assert_eq!(
            described(&["reset"]),
            "off sanitize-payload resetchannels -@all"
        );
        assert_eq!(
            described(&["+select|0", "+config|get"]),
            "off resetchannels -@all +select|0 +config|get"
        );
    }
}
