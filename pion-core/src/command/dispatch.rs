//! From an argument vector to a reply: resolve the command in the table, check arity
//! and authentication, lock the shards of its keys, run the handler, settle the keys.

use std::time::Instant;

use super::{table, CommandSpec};
use crate::client::ClientState;
use crate::engine::Engine;
use crate::error::{OpError, OpResult};
use crate::exec::{Ctx, Effect};
use crate::keyspace::{locate, shard_of, Location, LockSet};
use crate::reply::Reply;
use smallvec::SmallVec;

/// Argument positions of a command's keys (inline for the usual handful).
pub type KeyPositions = SmallVec<[usize; 4]>;

/// A command found in the table.
#[derive(Debug, Clone, Copy)]
pub struct Resolved {
    /// The (sub)command.
    pub spec: &'static CommandSpec,
    /// Full name, `container|sub` for subcommands.
    pub full_name: &'static str,
    /// Index into the engine's per-command counters.
    pub stat: usize,
}

/// Lower-cases a command name into a small buffer without allocating.
fn lower<'b>(name: &[u8], buf: &'b mut [u8; 64]) -> Option<&'b [u8]> {
    if name.len() > buf.len() {
        return None;
    }
    for (d, s) in buf.iter_mut().zip(name) {
        *d = s.to_ascii_lowercase();
    }
    Some(&buf[..name.len()])
}

fn check_arity(spec: &CommandSpec, full_name: &str, argc: usize) -> OpResult<()> {
    let arity = spec.arity;
    let ok = if arity >= 0 {
        argc == arity as usize
    } else {
        argc >= arity.unsigned_abs() as usize
    };
    if ok {
        Ok(())
    } else {
        Err(OpError::WrongArity(full_name.to_string()))
    }
}

/// Finds the command for `argv` and checks its arity.
pub fn resolve(argv: &[Vec<u8>]) -> OpResult<Resolved> {
    let name = argv
        .first()
        .ok_or_else(|| OpError::custom("ERR empty command"))?;
    let unknown = || OpError::UnknownCommand {
        name: String::from_utf8_lossy(name).into_owned(),
        args: argv[1..]
            .iter()
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect(),
    };
    let mut buf = [0u8; 64];
    let lname = lower(name, &mut buf).ok_or_else(unknown)?;
    let t = table();
    let (spec, stat) = t.lookup(lname).ok_or_else(unknown)?;
    if spec.subcommands.is_empty() {
        check_arity(spec, spec.name, argv.len())?;
        return Ok(Resolved {
            spec,
            full_name: spec.name,
            stat,
        });
    }
    let Some(sub) = argv.get(1) else {
        // A container that also runs alone (`COMMAND`) accepts no subcommand.
        if spec.arity == -1 {
            return Ok(Resolved {
                spec,
                full_name: spec.name,
                stat,
            });
        }
        return Err(OpError::WrongArity(spec.name.to_string()));
    };
    let mut subbuf = [0u8; 64];
    let found = lower(sub, &mut subbuf).and_then(|s| t.lookup_sub(spec, s));
    let Some((sub_spec, full_name, stat)) = found else {
        return Err(OpError::UnknownSubcommand {
            sub: String::from_utf8_lossy(sub).into_owned(),
            command: spec.name.to_ascii_uppercase(),
        });
    };
    check_arity(sub_spec, full_name, argv.len())?;
    Ok(Resolved {
        spec: sub_spec,
        full_name,
        stat,
    })
}

/// The argument positions of a command's keys.
pub fn key_indices(spec: &CommandSpec, argv: &[Vec<u8>]) -> OpResult<KeyPositions> {
    if let Some(find) = spec.keys.find {
        return find(argv).map(SmallVec::from_vec);
    }
    let k = spec.keys;
    if k.first <= 0 {
        return Ok(KeyPositions::new());
    }
    let argc = argv.len() as i32;
    let last = if k.last < 0 { argc + k.last } else { k.last };
    let step = k.step.max(1);
    let mut out = KeyPositions::new();
    let mut i = k.first;
    while i <= last && i < argc {
        out.push(i as usize);
        i += step;
    }
    Ok(out)
}

/// The shards a command must lock for these arguments.
pub fn lock_set_for(spec: &CommandSpec, argv: &[Vec<u8>], keys: &[usize]) -> LockSet {
    if spec.whole_keyspace {
        LockSet::All
    } else if keys.is_empty() {
        LockSet::None
    } else {
        LockSet::Keys(keys.iter().map(|&i| shard_of(&argv[i])).collect())
    }
}

/// Runs one command for a client and returns its reply, reading the clock itself.
/// Never panics on input: every failure becomes an error reply with Redis's text.
pub fn execute(engine: &Engine, client: &mut ClientState, argv: &[Vec<u8>]) -> Reply {
    execute_at(engine, client, argv, Instant::now()).0
}

/// Runs one command that starts at `started` and returns its reply and the time it
/// finished. A pipeline passes each command's finish time as the next one's start, so
/// one clock read per command serves the command's time, its duration and `INFO`.
pub fn execute_at(
    engine: &Engine,
    client: &mut ClientState,
    argv: &[Vec<u8>],
    started: Instant,
) -> (Reply, Instant) {
    let (reply, finished) = run(engine, client, argv, started);
    if let Reply::Error(text) = &reply {
        engine.count_error(text);
    }
    (reply, finished)
}

fn run(
    engine: &Engine,
    client: &mut ClientState,
    argv: &[Vec<u8>],
    started: Instant,
) -> (Reply, Instant) {
    let resolved = match resolve(argv) {
        Ok(r) => r,
        Err(e) => {
            if let OpError::WrongArity(_) | OpError::UnknownSubcommand { .. } = e {
                if let Ok(r) = table_stat_for_name(argv) {
                    engine.command_stats().reject(r);
                }
            }
            return (e.into(), started);
        }
    };
    let spec = resolved.spec;
    if !client.authenticated && engine.requires_auth() && !spec.has(super::flags::NO_AUTH) {
        engine.command_stats().reject(resolved.stat);
        return (Reply::error("NOAUTH Authentication required."), started);
    }
    // Pub/Sub: a RESP2 subscriber (or a monitor) runs only what that mode allows.
    if let Some(refused) =
        crate::pubsub::refuse_in_subscribed_mode(client, spec, resolved.full_name)
    {
        engine.command_stats().reject(resolved.stat);
        return (refused, started);
    }
    if spec.has(super::flags::DENYOOM) && over_maxmemory(engine) {
        engine.command_stats().reject(resolved.stat);
        return (
            Reply::error("OOM command not allowed when used memory > 'maxmemory'."),
            started,
        );
    }
    let wal = if spec.has(super::flags::WRITE) {
        engine.durability().map(|d| d.wal())
    } else {
        None
    };
    if let Some(failure) = engine.durability().and_then(|d| d.wal().failure()) {
        // As Redis does on a failing append-only file: writes (and PING, so that
        // health checks notice) are refused until the log is writable again. Each
        // refused command first retries the queued records, so writes resume as soon
        // as the disk does.
        let retried = engine
            .durability()
            .map(|d| d.wal().commit(d.wal().appended_seq()));
        if (wal.is_some() || spec.name == "ping") && !matches!(retried, Some(Ok(()))) {
            engine.command_stats().reject(resolved.stat);
            return (
                Reply::Error(
                    format!("MISCONF Errors writing to the write-ahead log: {failure}").into(),
                ),
                started,
            );
        }
    }
    let keys = match key_indices(spec, argv) {
        Ok(k) => k,
        Err(e) => {
            engine.command_stats().reject(resolved.stat);
            return (e.into(), started);
        }
    };
    client
        .shared
        .last_cmd
        .store(resolved.stat, std::sync::atomic::Ordering::Relaxed);
    let now = engine.wall_ms_at(started);
    let result = {
        let ks = if spec.whole_keyspace {
            engine.keyspace().lock(&LockSet::All, now)
        } else {
            let locations: SmallVec<[Location; 4]> =
                keys.iter().map(|&i| locate(&argv[i])).collect();
            let set = if keys.is_empty() {
                LockSet::None
            } else {
                LockSet::Keys(locations.iter().map(|l| l.shard).collect())
            };
            let mut ks = engine.keyspace().lock(&set, now);
            for (&i, &loc) in keys.iter().zip(&locations) {
                ks.remember(&argv[i], loc);
            }
            ks
        };
        let mut ks = ks;
        // TOUCH exists to touch: NO-TOUCH does not apply to it, as in Redis.
        ks.set_no_touch(client.no_touch && spec.name != "touch");
        ks.set_lfu(engine.lfu_policy());
        let mut ctx = Ctx {
            engine,
            client,
            ks,
            effect: Effect::AsSent,
        };
        let result = (spec.handler)(&mut ctx, argv);
        if spec.has(super::flags::WRITE) {
            let db = ctx.db();
            settle_keys(&mut ctx, spec, argv, &keys);
            if let (Some(wal), true) = (wal, result.is_ok()) {
                // Still holding the keys' shards: the log order is the order in which
                // commands on the same keys ran.
                let seq = match &ctx.effect {
                    Effect::AsSent => Some(wal.append(now, std::iter::once((db, argv)))),
                    Effect::Rewritten(cmds) => {
                        Some(wal.append(now, cmds.iter().map(|c| (db, c.as_slice()))))
                    }
                    Effect::Nothing => None,
                };
                if let Some(seq) = seq {
                    ctx.client.wal_seq = seq;
                }
            }
        }
        if let Some(d) = engine.durability() {
            // Whatever this command saw was appended by now: its reply, too, waits
            // until the log has it, so no client is shown a write a crash could take
            // back. (While the disk is failing, reads go on instead, and may show the
            // writes that met the failure; those are logged when it recovers.)
            let wal = d.wal();
            if wal.failure().is_none() {
                ctx.client.wal_seq = ctx.client.wal_seq.max(wal.appended_seq());
            }
        }
        // Pub/Sub: client-side caching remembers what was read; MONITOR sees the command.
        crate::pubsub::after_command(engine, ctx.client, spec, argv, &keys);
        result
    };
    let finished = Instant::now();
    let usec = finished.saturating_duration_since(started).as_micros() as u64;
    engine
        .command_stats()
        .record(resolved.stat, usec, result.is_err());
    // Only this client's own thread writes its counter: no atomic read-modify-write.
    let commands = &client.shared.commands;
    commands.store(
        commands.load(std::sync::atomic::Ordering::Relaxed) + 1,
        std::sync::atomic::Ordering::Relaxed,
    );
    let reply = match result {
        Ok(r) => r,
        Err(e) => e.into(),
    };
    (reply, finished)
}

/// Re-runs a logged command during recovery, at the time it originally ran
/// (`now_ms`), for `client`'s selected database. Nothing is logged or counted, and no
/// limit that depends on the moment (`maxmemory`, authentication) applies: the command
/// was accepted when it ran.
pub fn replay(engine: &Engine, client: &mut ClientState, argv: &[Vec<u8>], now_ms: i64) -> Reply {
    let resolved = match resolve(argv) {
        Ok(r) => r,
        Err(e) => return e.into(),
    };
    let spec = resolved.spec;
    let keys = match key_indices(spec, argv) {
        Ok(k) => k,
        Err(e) => return e.into(),
    };
    let set = lock_set_for(spec, argv, &keys);
    let ks = engine.keyspace().lock(&set, now_ms);
    let mut ctx = Ctx {
        engine,
        client,
        ks,
        effect: Effect::AsSent,
    };
    let result = (spec.handler)(&mut ctx, argv);
    settle_keys(&mut ctx, spec, argv, &keys);
    match result {
        Ok(r) => r,
        Err(e) => e.into(),
    }
}

/// After a write: re-estimates the memory of the command's keys and deletes those
/// that became empty collections.
/// Search indexes follow: each key's document is brought up to date while its shard is
/// still locked.
fn settle_keys(ctx: &mut Ctx<'_>, spec: &CommandSpec, argv: &[Vec<u8>], keys: &[usize]) {
    let db = ctx.db();
    let search = ctx.engine.search();
    for &i in keys {
        // Settling only fails for keys outside the lock, which cannot happen here.
        let removed = matches!(ctx.ks.settle(db, &argv[i]), Ok(true));
        // Pub/Sub: `del` of an emptied key, client-side cache invalidation.
        crate::pubsub::key_settled(ctx, &argv[i], removed);
        search.key_written(&mut ctx.ks, db, &argv[i]);
    }
    // The commands that replace databases wholesale. As in RediSearch, any flush
    // drops the indexes too (even of another database); after SWAPDB they are rebuilt
    // from what database 0 now holds.
    if spec.whole_keyspace {
        match spec.name {
            "flushall" | "flushdb" => search.clear(),
            "swapdb" => search.keyspace_replaced(&mut ctx.ks),
            _ => {}
        }
    }
}

/// Whether used memory passed `maxmemory`. Pion does not evict yet, so under every
/// policy a command that may grow memory is then refused, as Redis does under
/// `noeviction` (the default).
fn over_maxmemory(engine: &Engine) -> bool {
    let limit = engine.maxmemory();
    limit > 0 && engine.keyspace().used_memory() as u64 > limit
}

/// The counter slot of a top-level command name, for rejected calls.
fn table_stat_for_name(argv: &[Vec<u8>]) -> Result<usize, ()> {
    let mut buf = [0u8; 64];
    let name = argv.first().ok_or(())?;
    let lname = lower(name, &mut buf).ok_or(())?;
    table().lookup(lname).map(|(_, stat)| stat).ok_or(())
}
