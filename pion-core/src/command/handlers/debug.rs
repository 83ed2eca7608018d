//! `DEBUG`: the introspection and test hooks that Redis's own test suite and operators
//! use (object internals, dataset digests, pausing the server, switching active expiry
//! or the periodic tasks off, one reply of each protocol type, letting scripts call
//! denied commands). As in Redis it is refused unless `enable-debug-command` allows it, and, like
//! Redis's single thread, it runs alone: every other command waits while it runs.
//!
//! `RELOAD` saves a snapshot and loads it back; `LOADAOF` loads the snapshot and the
//! log after it, as a restart would ([`crate::engine::persistence::reload`]).
//! Subcommands that need machinery Pion does not have (replication ids, quicklists,
//! crash triggers) are not offered: they answer the unknown
//! subcommand error, so a caller never mistakes them for done.

use std::time::Duration;

use sha1_smol::Sha1;

use crate::command::ctx::Ctx;
use crate::command::flags::*;
use crate::command::{CommandSpec, Group};
use crate::config::DebugCommand;
use crate::error::{OpError, OpResult};
use crate::keyspace::Entry;
use crate::reply::Reply;
use crate::value::Value;

/// This family's part of the command table.
pub static COMMANDS: &[CommandSpec] = &[CommandSpec::new(
    "debug",
    -2,
    ADMIN | NOSCRIPT | LOADING | STALE | EXCLUSIVE,
    Group::Server,
    debug,
)
.doc("A container for debugging commands", "1.0.0")];

type Handler = fn(&mut Ctx<'_>, &[Vec<u8>]) -> OpResult<Reply>;

/// One subcommand: name, least argument count (the whole command line), handler.
struct Sub {
    name: &'static str,
    min_args: usize,
    handler: Handler,
    help: &'static [&'static str],
}

const SUBS: &[Sub] = &[
    Sub {
        name: "digest",
        min_args: 2,
        handler: digest,
        help: &[
            "DIGEST",
            "    Output a hex signature representing the current DB content.",
        ],
    },
    Sub {
        name: "digest-value",
        min_args: 2,
        handler: digest_value,
        help: &[
            "DIGEST-VALUE <key> [<key> ...]",
            "    Output a hex signature of the values of all the specified keys.",
        ],
    },
    Sub {
        name: "loadaof",
        min_args: 2,
        handler: loadaof,
        help: &[
            "LOADAOF",
            "    Write the log through and reload what a restart would recover: the newest",
            "    snapshot and the log after it.",
        ],
    },
    Sub {
        name: "log",
        min_args: 3,
        handler: log,
        help: &["LOG <message>", "    Write <message> to the server log."],
    },
    Sub {
        name: "object",
        min_args: 3,
        handler: object,
        help: &[
            "OBJECT <key>",
            "    Show low level info about the value at <key>.",
        ],
    },
    Sub {
        name: "protocol",
        min_args: 3,
        handler: protocol,
        help: &[
            "PROTOCOL <type>",
            "    Reply with a test value of the specified type. <type> can be: string,",
            "    integer, double, bignum, null, array, set, map, attrib, push, verbatim,",
            "    true, false.",
        ],
    },
    Sub {
        name: "reload",
        min_args: 2,
        handler: reload,
        help: &[
            "RELOAD [option ...]",
            "    Save a snapshot and load it back into memory. Options:",
            "    * MERGE: with NOFLUSH, keys and libraries in the snapshot replace those",
            "      in memory (without it, one in both fails the reload).",
            "    * NOFLUSH: do not empty the server before loading.",
            "    * NOSAVE: load the newest snapshot as it is, without saving first.",
        ],
    },
    Sub {
        name: "set-active-expire",
        min_args: 3,
        handler: set_active_expire,
        help: &[
            "SET-ACTIVE-EXPIRE <0|1>",
            "    Setting it to 0 disables expiring keys in background when they are not",
            "    accessed (otherwise the Redis behavior). Setting it to 1 reenables back the",
            "    default.",
        ],
    },
    Sub {
        // Not in Redis's help either: a test hook.
        name: "set-disable-deny-scripts",
        min_args: 3,
        handler: set_disable_deny_scripts,
        help: &[],
    },
    Sub {
        name: "sleep",
        min_args: 3,
        handler: sleep,
        help: &[
            "SLEEP <seconds>",
            "    Stop the server for <seconds>. Decimals allowed.",
        ],
    },
    Sub {
        name: "pause-cron",
        min_args: 3,
        handler: pause_cron,
        help: &["PAUSE-CRON <0|1>", "    Stop periodic cron job processing."],
    },
];

const NOT_ALLOWED: &str = "ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.";

fn debug(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let allowed = ctx.config().with(|c| c.enable_debug_command);
    let local = is_local(&ctx.client.shared.addr);
    if !(allowed == DebugCommand::Yes || (allowed == DebugCommand::Local && local)) {
        return Err(OpError::custom(NOT_ALLOWED));
    }
    let name = String::from_utf8_lossy(&argv[1]).to_ascii_lowercase();
    if name == "help" {
        let mut lines = vec![Reply::Status(
            "DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:".into(),
        )];
        for sub in SUBS {
            lines.extend(sub.help.iter().map(|l| Reply::Status((*l).into())));
        }
        lines.push(Reply::Status("HELP".into()));
        lines.push(Reply::Status("    Prints this help.".into()));
        return Ok(Reply::Array(lines));
    }
    match SUBS.iter().find(|s| s.name == name) {
        Some(sub) if argv.len() >= sub.min_args => (sub.handler)(ctx, argv),
        _ => Err(OpError::subcommand_syntax(argv)),
    }
}

/// Whether a client address (`ip:port`, or `path:0` for the Unix socket) is on this
/// machine.
fn is_local(addr: &str) -> bool {
    if addr.starts_with('/') {
        return true;
    }
    addr.rsplit_once(':')
        .map(|(ip, _)| ip.trim_start_matches('[').trim_end_matches(']'))
        .and_then(|ip| ip.parse::<std::net::IpAddr>().ok())
        .is_some_and(crate::acl::protected::is_loopback)
}

/// `DEBUG SLEEP seconds`: the whole server stops (the command runs alone).
fn sleep(_: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let secs = std::str::from_utf8(&argv[2])
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .filter(|s| s.is_finite())
        .unwrap_or(0.0)
        .max(0.0);
    std::thread::sleep(Duration::from_secs_f64(secs.min(1e9)));
    Ok(Reply::ok())
}

/// A DEBUG switch argument as Redis reads it (`atoi`: anything not a number is 0).
fn switch(arg: &[u8]) -> bool {
    std::str::from_utf8(arg)
        .ok()
        .and_then(|s| s.parse::<i64>().ok())
        .unwrap_or(0)
        != 0
}

fn set_active_expire(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    ctx.engine().set_active_expire(switch(&argv[2]));
    Ok(Reply::ok())
}

/// `DEBUG SET-DISABLE-DENY-SCRIPTS 0|1`: scripts may call the commands normally
/// denied to them (`DEBUG` …), for tests of what such commands reply.
fn set_disable_deny_scripts(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    ctx.engine().set_scripts_deny_disabled(switch(&argv[2]));
    Ok(Reply::ok())
}

/// `DEBUG PROTOCOL type`: one reply of each kind the protocol has, as Redis's test
/// suite uses them (the values are Redis's).
fn protocol(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let name = String::from_utf8_lossy(&argv[2]).to_ascii_lowercase();
    let counting = || (0..3).map(Reply::Integer);
    Ok(match name.as_str() {
        "string" => Reply::bulk("Hello World"),
        "integer" => Reply::Integer(12345),
        // Redis's test value, not an approximation of pi.
        #[allow(clippy::approx_constant)]
        "double" => Reply::Double(3.141),
        "bignum" => Reply::BigNumber("1234567999999999999999999999999999999".into()),
        "null" => Reply::Null,
        "array" => Reply::Array(counting().collect()),
        "set" => Reply::Set(counting().collect()),
        "map" => Reply::Map((0..3).map(|j| (Reply::Integer(j), Reply::Bool(j == 1))).collect()),
        "attrib" => Reply::Attributed(
            vec![(
                Reply::bulk("key-popularity"),
                Reply::Array(vec![Reply::bulk("key:123"), Reply::Integer(90)]),
            )],
            Box::new(Reply::bulk("Some real reply following the attribute")),
        ),
        "push" => {
            if ctx.client.resp < 3 {
                return Err(OpError::custom("ERR RESP2 is not supported by this command"));
            }
            // A push, then a real reply for clients that skip pushes.
            Reply::Several(vec![
                Reply::Push(vec![Reply::bulk("server-cpu-usage"), Reply::Integer(42)]),
                Reply::bulk("Some real reply following the push reply"),
            ])
        }
        "true" => Reply::Bool(true),
        "false" => Reply::Bool(false),
        "verbatim" => Reply::Verbatim("txt", b"This is a verbatim\nstring".to_vec()),
        _ => {
            return Err(OpError::custom(
                "ERR Wrong protocol type name. Please use one of the following: string|integer|double|bignum|null|array|set|map|attrib|push|verbatim|true|false",
            ))
        }
    })
}

/// `DEBUG PAUSE-CRON 0|1`: the periodic tasks (active expiry, the tracking table's
/// limit) stop or resume.
fn pause_cron(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    ctx.engine().set_cron_paused(switch(&argv[2]));
    Ok(Reply::ok())
}

fn log(_: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    crate::log_warning!("DEBUG LOG: {}", String::from_utf8_lossy(&argv[2]));
    Ok(Reply::ok())
}

/// `DEBUG OBJECT key`: where the value lives, its encoding, the size of its snapshot
/// record and its idle time, in Redis's line format.
fn object(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let db = ctx.db();
    let now = ctx.now_ms();
    let key = &argv[2];
    let mut locked = ctx.keyspace().lock_keys(&[key], now);
    // What is stored, expired or not: Redis's DEBUG OBJECT reads the dictionary.
    let Some((entry, deadline)) = locked.stored(db, key)? else {
        return Err(OpError::custom("ERR no such key"));
    };
    let mut record = Vec::new();
    crate::keyspace::dump::encode_entry(db, key, entry, deadline, &mut record);
    let idle = entry.idle_secs(now);
    // Redis's LRU clock: seconds, 24 bits wide.
    let lru = ((now / 1000) as u64).wrapping_sub(idle) & 0xFF_FFFF;
    let line = format!(
        "Value at:{:p} refcount:1 encoding:{} serializedlength:{} lru:{lru} lru_seconds_idle:{idle}",
        entry as *const Entry,
        entry.value.encoding(),
        record.len()
    );
    Ok(Reply::Status(line.into()))
}

/// `DEBUG RELOAD [MERGE] [NOFLUSH] [NOSAVE]`: save a snapshot, empty the server and
/// load the snapshot back (see [`crate::engine::persistence::reload`]). A load that fails
/// answers Redis's error and logs why.
fn reload(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    use crate::engine::persistence::reload::{reload, ReloadError, ReloadOptions};
    let mut options = ReloadOptions::default();
    for opt in &argv[2..] {
        if opt.eq_ignore_ascii_case(b"merge") {
            options.merge = true;
        } else if opt.eq_ignore_ascii_case(b"noflush") {
            options.flush = false;
        } else if opt.eq_ignore_ascii_case(b"nosave") {
            options.save = false;
        } else {
            return Err(OpError::custom(
                "ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.",
            ));
        }
    }
    let result = reload(
        ctx.engine(),
        options,
        ctx.now_ms(),
        &crate::command::REPLAYER,
    );
    if options.flush && !matches!(result, Err(ReloadError::Save(_))) {
        // The server was emptied: tracking clients drop what they cached.
        crate::command::pubsub::flushed(ctx);
    }
    match result {
        Ok(summary) => {
            crate::log_warning!(
                "DB reloaded by DEBUG RELOAD ({} keys{})",
                summary.keys,
                if summary.resaved { ", saved again" } else { "" }
            );
            Ok(Reply::ok())
        }
        Err(ReloadError::Save(e)) => Err(OpError::custom(format!("ERR {e}"))),
        Err(ReloadError::Load(e)) => {
            crate::log_warning!("DEBUG RELOAD failed: {e}");
            Err(OpError::custom("ERR Error trying to load the RDB dump"))
        }
    }
}

/// `DEBUG LOADAOF`: empty the server and load what a restart would recover (see
/// [`crate::engine::persistence::reload::reload_from_log`]).
fn loadaof(ctx: &mut Ctx<'_>, _: &[Vec<u8>]) -> OpResult<Reply> {
    use crate::engine::persistence::reload::{reload_from_log, ReloadError};
    let result = reload_from_log(ctx.engine(), ctx.now_ms(), &crate::command::REPLAYER);
    if !matches!(result, Err(ReloadError::Save(_))) {
        crate::command::pubsub::flushed(ctx);
    }
    match result {
        Ok(summary) => {
            crate::log_warning!(
                "Reloaded by DEBUG LOADAOF ({} keys from the snapshot, {} log records)",
                summary.keys,
                summary.records
            );
            Ok(Reply::ok())
        }
        Err(ReloadError::Save(e)) => Err(OpError::custom(format!("ERR {e}"))),
        Err(ReloadError::Load(e)) => {
            crate::log_warning!("DEBUG LOADAOF failed: {e}");
            Err(OpError::custom(format!(
                "ERR Error trying to load the log: {e}"
            )))
        }
    }
}

/// `DEBUG DIGEST`: a signature of every database's content (40 zeros when empty).
/// Equal datasets have equal digests however they were built: unordered collections
/// (sets, hashes) are combined order-independently.
fn digest(ctx: &mut Ctx<'_>, _: &[Vec<u8>]) -> OpResult<Reply> {
    let now = ctx.now_ms();
    let ks = ctx.keyspace();
    let mut total = [0u8; 20];
    for db in 0..ks.databases() {
        let mut cursor = 0;
        loop {
            cursor = ks.scan(db, cursor, usize::MAX, now, |key, entry, deadline| {
                let mut h = Sha1::new();
                h.update(&(db as u64).to_le_bytes());
                h.update(&sha1_of(key));
                h.update(&value_digest(entry));
                if let Some(at) = deadline {
                    h.update(b"!!expire!!");
                    h.update(&at.to_le_bytes());
                }
                xor_into(&mut total, &h.digest().bytes());
            });
            if cursor == 0 {
                break;
            }
        }
    }
    Ok(Reply::Status(hex(&total).into()))
}

/// `DEBUG DIGEST-VALUE key …`: each key's value signature (40 zeros when missing).
fn digest_value(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let db = ctx.db();
    let now = ctx.now_ms();
    let keys = &argv[2..];
    let mut locked = ctx.keyspace().lock_keys(keys, now);
    let mut out = Vec::with_capacity(keys.len());
    for key in keys {
        let d = match locked.peek(db, key)? {
            Some(entry) => value_digest(entry),
            None => [0u8; 20],
        };
        out.push(Reply::Status(hex(&d).into()));
    }
    Ok(Reply::Array(out))
}

fn sha1_of(bytes: &[u8]) -> [u8; 20] {
    Sha1::from(bytes).digest().bytes()
}

fn xor_into(acc: &mut [u8; 20], d: &[u8; 20]) {
    for (a, b) in acc.iter_mut().zip(d) {
        *a ^= b;
    }
}

/// Length-prefixed, so element boundaries count.
fn feed(h: &mut Sha1, bytes: &[u8]) {
    h.update(&(bytes.len() as u64).to_le_bytes());
    h.update(bytes);
}

/// A value's signature: its type, then its elements (in order for strings, lists and
/// sorted sets; order-independently for sets and hashes).
fn value_digest(entry: &Entry) -> [u8; 20] {
    let mut h = Sha1::new();
    match &entry.value {
        Value::Str(s) => {
            h.update(b"string");
            feed(&mut h, s.as_bytes());
        }
        Value::List(l) => {
            h.update(b"list");
            for item in l.iter() {
                feed(&mut h, item);
            }
        }
        Value::ZSet(z) => {
            h.update(b"zset");
            for m in z.iter() {
                feed(&mut h, m.member);
                h.update(&m.score.to_bits().to_le_bytes());
            }
        }
        Value::Set(s) => {
            h.update(b"set");
            let mut acc = [0u8; 20];
            s.for_each(|m| xor_into(&mut acc, &sha1_of(m)));
            h.update(&acc);
        }
        Value::Hash(map) => {
            h.update(b"hash");
            let mut acc = [0u8; 20];
            for (f, v) in map.iter() {
                let mut e = Sha1::new();
                feed(&mut e, f);
                feed(&mut e, v);
                xor_into(&mut acc, &e.digest().bytes());
            }
            h.update(&acc);
        }
        Value::Json(j) => {
            h.update(b"ReJSON-RL");
            h.update(&j.to_text());
        }
        Value::VectorSet(_) | Value::Stream(_) | Value::Suggestions(_) => {
            h.update(entry.value.type_name().as_bytes());
            let mut record = Vec::new();
            crate::keyspace::dump::encode_entry(0, b"", entry, None, &mut record);
            h.update(&record);
        }
    }
    h.digest().bytes()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locality_of_addresses() {
        assert!(is_local("127.0.0.1:5000"));
        assert!(is_local("[::1]:5000"));
        assert!(is_local("[::ffff:127.0.0.1]:5000"));
        assert!(is_local("/tmp/pion.sock:0"));
        assert!(!is_local("10.1.2.3:5000"));
        assert!(!is_local(""));
    }

    #[test]
    fn xor_is_order_independent() {
        let (a, b) = (sha1_of(b"a"), sha1_of(b"b"));
        let mut x = [0u8; 20];
        xor_into(&mut x, &a);
        xor_into(&mut x, &b);
        let mut y = [0u8; 20];
        xor_into(&mut y, &b);
        xor_into(&mut y, &a);
        assert_eq!(x, y);
        assert_eq!(hex(&[0u8; 20]), "0".repeat(40));
    }
}
