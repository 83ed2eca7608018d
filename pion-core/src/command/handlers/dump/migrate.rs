//! `MIGRATE host port key|"" db timeout [COPY] [REPLACE] [AUTH password | AUTH2 user
//! password] [KEYS key …]`: the keys' payloads sent to another server as `RESTORE`
//! commands (after `AUTH` and `SELECT` as needed), the local keys deleted once the
//! target acknowledged them, unless `COPY`.
//!
//! The command runs in three steps. Under its keys' locks it takes each key's
//! payload and remaining time to live; then, with no lock held (a [`Detour`]), it
//! talks to the target over a connection kept for `host:port`
//! ([`crate::server::outbound`]), retrying once on a fresh connection when a kept
//! one turns out dead; under the locks again it deletes what the target
//! acknowledged — unless another client changed a key in between (Redis, which runs
//! one command at a time, has no such case), which then stays — and is logged as
//! `DEL` of what it deleted.
//!
//! [`Detour`]: crate::command::ctx::Detour

use std::io::{self, Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::command::ctx::{Ctx, Resume};
use crate::command::flags::*;
use crate::command::handlers::util::is_kw;
use crate::command::{BeginSearch, CommandSpec, FindKeys, Group, KeySpecDoc};
use crate::engine::Engine;
use crate::error::{DumpError, OpError, OpResult};
use crate::pubsub::notify;
use crate::reply::Reply;
use crate::server::outbound::Cached;
use crate::util::num::parse_i64;

/// `MIGRATE`'s row of the command table.
pub(super) const SPEC: CommandSpec = CommandSpec::new(
    "migrate",
    -6,
    WRITE | DANGEROUS | REDACTS_MIGRATE_AUTH,
    Group::Keyspace,
    migrate,
)
.key_specs(&[
    KeySpecDoc::range(&["RW", "access", "delete"], 3, 0, 1, 0),
    KeySpecDoc {
        notes: "",
        flags: &["RW", "access", "delete", "incomplete"],
        begin: BeginSearch::Keyword("KEYS", -2),
        find: FindKeys::Range {
            lastkey: -1,
            keystep: 1,
            limit: 0,
        },
    },
])
.tips(&["nondeterministic_output"])
.keys(3, 3, 1)
.movable(migrate_keys)
.doc(
    "Atomically transfer a key from a Redis instance to another one.",
    "2.6.0",
);

/// The longest reply line read from the target.
const MAX_LINE: usize = 64 * 1024;

/// The keys `MIGRATE` names: the key argument, or everything after `KEYS` (none when
/// `KEYS` comes with a non-empty key argument, which the command refuses).
fn migrate_keys(argv: &[Vec<u8>]) -> OpResult<Vec<usize>> {
    let mut j = 6;
    while j < argv.len() {
        let a = &argv[j];
        if is_kw(a, "keys") {
            if !argv[3].is_empty() {
                return Ok(Vec::new());
            }
            return Ok((j + 1..argv.len()).collect());
        }
        if is_kw(a, "auth") {
            j += 1;
        } else if is_kw(a, "auth2") {
            j += 2;
        }
        j += 1;
    }
    Ok(vec![3])
}

/// The arguments as `MONITOR` and the slow log show them: a command flagged
/// [`REDACTS_MIGRATE_AUTH`] without its `AUTH`/`AUTH2` credentials, any other as sent.
pub(crate) fn shown_args<'a>(
    spec: &CommandSpec,
    argv: &'a [Vec<u8>],
) -> std::borrow::Cow<'a, [Vec<u8>]> {
    if !spec.has(REDACTS_MIGRATE_AUTH) {
        return std::borrow::Cow::Borrowed(argv);
    }
    let mut shown = argv.to_vec();
    let mut j = 6;
    while j < shown.len() {
        let secrets = if is_kw(&shown[j], "auth") {
            1
        } else if is_kw(&shown[j], "auth2") {
            2
        } else if is_kw(&shown[j], "keys") {
            break;
        } else {
            0
        };
        for s in shown.iter_mut().skip(j + 1).take(secrets) {
            *s = b"(redacted)".to_vec();
        }
        j += 1 + secrets;
    }
    std::borrow::Cow::Owned(shown)
}

/// What the command was asked to do.
struct Request {
    host: String,
    port: u16,
    db: i64,
    timeout: Duration,
    copy: bool,
    replace: bool,
    auth: Option<(Option<Vec<u8>>, Vec<u8>)>,
}

/// One key on its way: its payload and what is left of its time to live.
struct Item {
    key: Vec<u8>,
    ttl_ms: i64,
    payload: Vec<u8>,
    /// Set when another command changes the key while it travels.
    changed: Arc<AtomicBool>,
}

/// What the target made of it: which keys it acknowledged, and the error to reply.
struct Outcome {
    acked: Vec<bool>,
    error: Option<DumpError>,
}

/// The request, and the range of arguments that are its keys.
fn parse(argv: &[Vec<u8>]) -> OpResult<(Request, std::ops::Range<usize>)> {
    let (mut copy, mut replace, mut auth, mut keys) = (false, false, None, 3..4);
    let mut j = 6;
    while j < argv.len() {
        let more = argv.len() - 1 - j;
        let a = &argv[j];
        if is_kw(a, "copy") {
            copy = true;
        } else if is_kw(a, "replace") {
            replace = true;
        } else if is_kw(a, "auth") {
            if more < 1 {
                return Err(OpError::Syntax);
            }
            auth = Some((None, argv[j + 1].clone()));
            j += 1;
        } else if is_kw(a, "auth2") {
            if more < 2 {
                return Err(OpError::Syntax);
            }
            auth = Some((Some(argv[j + 1].clone()), argv[j + 2].clone()));
            j += 2;
        } else if is_kw(a, "keys") {
            if !argv[3].is_empty() {
                return Err(DumpError::KeysWithKey.into());
            }
            keys = j + 1..argv.len();
            break;
        } else {
            return Err(OpError::Syntax);
        }
        j += 1;
    }
    let timeout = parse_i64(&argv[5]).ok_or(OpError::NotInteger)?;
    let db = parse_i64(&argv[4]).ok_or(OpError::NotInteger)?;
    let timeout = if timeout <= 0 { 1000 } else { timeout };
    let host = String::from_utf8_lossy(&argv[1]).into_owned();
    // `atoi`: a port that is not a number is 0, which no connection reaches.
    let port = std::str::from_utf8(&argv[2])
        .ok()
        .and_then(|p| p.parse::<u16>().ok())
        .unwrap_or(0);
    let request = Request {
        host,
        port,
        db,
        timeout: Duration::from_millis(timeout.unsigned_abs()),
        copy,
        replace,
        auth,
    };
    Ok((request, keys))
}

/// The first step, under the keys' locks: payloads and times to live; `NOKEY` when
/// none of the keys exists.
fn migrate(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let (req, keys) = parse(argv)?;
    let (db, now) = (ctx.db(), ctx.now_ms());
    let opts = super::dump_options(ctx);
    let mut items = Vec::new();
    for key in &argv[keys] {
        let Some(value) = ctx.ks.get(db, key)? else {
            continue;
        };
        let payload = crate::value::rdb::dump(value, &opts);
        let ttl_ms = match ctx.ks.expire_at(db, key)?.flatten() {
            Some(at) if at - now < 0 => continue,
            Some(at) => (at - now).max(1),
            None => 0,
        };
        items.push(Item {
            key: key.clone(),
            ttl_ms,
            payload,
            changed: Arc::new(AtomicBool::new(false)),
        });
    }
    ctx.log_as(Vec::new());
    if items.is_empty() {
        return Ok(Reply::status("NOKEY"));
    }
    // From here on a change to a key by another client marks it (the last step
    // unwatches them all).
    for item in &items {
        ctx.watches().watch(db, &item.key, &item.changed);
    }
    ctx.detour = Some(Box::new(move |engine: &Engine| -> Resume {
        let outcome = transfer(engine, &req, &items, now);
        Box::new(move |ctx: &mut Ctx<'_>, _: &[Vec<u8>]| finish(ctx, &req, items, outcome))
    }));
    Ok(Reply::ok())
}

/// The last step, under the locks again: deletes what the target took (unless
/// `COPY`), and replies.
fn finish(ctx: &mut Ctx<'_>, req: &Request, items: Vec<Item>, outcome: Outcome) -> OpResult<Reply> {
    let db = ctx.db();
    let mut deleted = vec![b"DEL".to_vec()];
    for (item, acked) in items.into_iter().zip(outcome.acked) {
        ctx.watches().unwatch(db, &item.key, &item.changed);
        if req.copy || !acked || item.changed.load(Ordering::Acquire) {
            continue;
        }
        if ctx.ks.remove(db, &item.key)?.is_some() {
            ctx.notify(notify::GENERIC, "del", &item.key);
            deleted.push(item.key);
        }
    }
    ctx.log_as(if deleted.len() > 1 {
        vec![deleted]
    } else {
        Vec::new()
    });
    // An error still deletes (and logs) what was acknowledged, as in Redis: it is an
    // error reply, not a failed command.
    Ok(match outcome.error {
        Some(e) => OpError::from(e).into(),
        None => Reply::ok(),
    })
}

/// A command as RESP, appended to `out`.
fn push_command(out: &mut Vec<u8>, args: &[&[u8]]) {
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

/// A connection the target's machine answered with a refusal.
fn refused(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::HostUnreachable
            | io::ErrorKind::NetworkUnreachable
    )
}

fn timed_out(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

/// Reads one reply line (without its CR LF) from the target.
fn read_line(c: &mut Cached) -> io::Result<Vec<u8>> {
    loop {
        if let Some(at) = c.pending.iter().position(|&b| b == b'\n') {
            let mut line: Vec<u8> = c.pending.drain(..=at).collect();
            line.pop();
            if line.last() == Some(&b'\r') {
                line.pop();
            }
            return Ok(line);
        }
        if c.pending.len() > MAX_LINE {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "reply line too long",
            ));
        }
        let mut buf = [0u8; 4096];
        let n = c.link.read(&mut buf)?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        c.pending.extend_from_slice(&buf[..n]);
    }
}

/// How one attempt ended.
enum Attempt {
    /// The replies were read (some keys may have been refused); whether the
    /// connection is still good.
    Done(Outcome, bool),
    /// The connection failed: while writing or reading, by a timeout or not, after
    /// how many `RESTORE` replies.
    Broken {
        writing: bool,
        timeout: bool,
        replies: usize,
        acked: Vec<bool>,
    },
}

/// The second step, with no lock held: the round trip to the target.
fn transfer(engine: &Engine, req: &Request, items: &[Item], now_ms: i64) -> Outcome {
    let name = format!("{}:{}", req.host, req.port);
    let links = engine.links();
    let mut may_retry = true;
    loop {
        let mut cached = match links.take(&name, now_ms) {
            Some(c) => c,
            None => {
                let dialed = engine
                    .dialer()
                    .ok_or_else(|| io::Error::from(io::ErrorKind::Unsupported))
                    .and_then(|d| d.dial(&req.host, req.port, req.timeout));
                let link = match dialed {
                    Ok(link) => link,
                    // Redis connects without blocking and learns of a refusal (or a
                    // reset) only when it writes: it retries once, then fails writing.
                    Err(e) if refused(&e) => {
                        if may_retry {
                            may_retry = false;
                            continue;
                        }
                        return Outcome {
                            acked: vec![false; items.len()],
                            error: Some(DumpError::Io { writing: true }),
                        };
                    }
                    Err(_) => {
                        return Outcome {
                            acked: vec![false; items.len()],
                            error: Some(DumpError::Connect),
                        };
                    }
                };
                links.dialed();
                Cached {
                    link,
                    db: None,
                    last_use_ms: now_ms,
                    pending: Vec::new(),
                }
            }
        };
        match attempt(&mut cached, req, items) {
            Attempt::Done(outcome, keep) => {
                cached.db = if outcome.error.is_none() {
                    Some(req.db)
                } else {
                    None
                };
                links.give_back(name, keep.then_some(cached));
                return outcome;
            }
            Attempt::Broken {
                writing,
                timeout,
                replies,
                acked,
            } => {
                links.give_back(name.clone(), None);
                // A kept connection that died is retried once on a new one, unless
                // the target may have seen the commands (a timeout, or replies read).
                if may_retry && !timeout && replies == 0 {
                    may_retry = false;
                    continue;
                }
                return Outcome {
                    acked,
                    error: Some(DumpError::Io { writing }),
                };
            }
        }
    }
}

/// One attempt on one connection: `AUTH`, `SELECT`, the `RESTORE`s, their replies.
fn attempt(c: &mut Cached, req: &Request, items: &[Item]) -> Attempt {
    let mut acked = vec![false; items.len()];
    let broken = |writing: bool, e: &io::Error, replies: usize, acked: Vec<bool>| Attempt::Broken {
        writing,
        timeout: timed_out(e),
        replies,
        acked,
    };
    let mut out = Vec::new();
    if let Some((user, password)) = &req.auth {
        match user {
            Some(u) => push_command(&mut out, &[b"AUTH", u, password]),
            None => push_command(&mut out, &[b"AUTH", password]),
        }
    }
    let select = c.db != Some(req.db);
    if select {
        push_command(&mut out, &[b"SELECT", req.db.to_string().as_bytes()]);
    }
    for item in items {
        let ttl = item.ttl_ms.to_string();
        let mut args: Vec<&[u8]> = vec![b"RESTORE", &item.key, ttl.as_bytes(), &item.payload];
        if req.replace {
            args.push(b"REPLACE");
        }
        push_command(&mut out, &args);
    }
    let written = c
        .link
        .set_timeout(req.timeout)
        .and_then(|()| c.link.write_all(&out))
        .and_then(|()| c.link.flush());
    if let Err(e) = written {
        return broken(true, &e, 0, acked);
    }
    let mut first_error: Option<Vec<u8>> = None;
    for _ in 0..usize::from(req.auth.is_some()) + usize::from(select) {
        match read_line(c) {
            Ok(line) if line.first() == Some(&b'-') => {
                first_error.get_or_insert(line);
            }
            Ok(_) => {}
            Err(e) => return broken(false, &e, 0, acked),
        }
    }
    // An AUTH or SELECT that failed fails every key; a RESTORE that failed, its own.
    let header_failed = first_error.is_some();
    for i in 0..items.len() {
        let line = match read_line(c) {
            Ok(line) => line,
            Err(e) => {
                return match first_error {
                    // The target's error is the reply; the connection is dropped.
                    Some(text) => Attempt::Done(
                        Outcome {
                            acked,
                            error: Some(target_error(&text)),
                        },
                        false,
                    ),
                    None => broken(false, &e, i, acked),
                };
            }
        };
        if line.first() == Some(&b'-') {
            first_error.get_or_insert(line);
        } else if !header_failed {
            acked[i] = true;
        }
    }
    Attempt::Done(
        Outcome {
            acked,
            error: first_error.as_deref().map(target_error),
        },
        true,
    )
}

fn target_error(line: &[u8]) -> DumpError {
    DumpError::Target(String::from_utf8_lossy(&line[1.min(line.len())..]).into_owned())
}
