//! From an argument vector to a reply: resolve the command in the table, check arity,
//! authentication, ACL and memory, queue it inside `MULTI`, pass the execution gate
//! (exclusively for transactions and scripts), lock the shards of its keys, run the
//! handler, settle the keys, log the effect, and serve clients blocked on what it
//! wrote.

use std::sync::atomic::Ordering;
use std::time::Instant;

use super::resolve::{
    is_exec, key_indices, lock_set_for, resolve, spec_is_exec, table_stat_for_name, KeyPositions,
    Resolved,
};
use super::CommandSpec;
use crate::clients::ClientState;
use crate::command::ctx::{Ctx, Effect};
use crate::engine::Engine;
use crate::error::{OpError, OpResult};
use crate::keyspace::{locate, Location, LockSet};
use crate::reply::Reply;
use smallvec::SmallVec;

/// Runs one command for a client and returns its reply, reading the clock itself.
/// Never panics on input: every failure becomes an error reply with Redis's text.
pub fn execute(engine: &Engine, client: &mut ClientState, argv: &[Vec<u8>]) -> Reply {
    execute_at(engine, client, argv, engine.clock().now()).0
}

/// Runs one command that starts at `started` and returns its reply and the time it
/// finished. A pipeline passes each command's finish time as the next one's start, so
/// one clock read per command serves the command's time, its duration and `INFO`.
///
/// Inside `MULTI` the command is checked and queued instead. Once it has run, clients
/// blocked on the keys it wrote are served, before its own reply leaves.
pub fn execute_at(
    engine: &Engine,
    client: &mut ClientState,
    argv: &[Vec<u8>],
    started: Instant,
) -> (Reply, Instant) {
    // BCAST invalidations of what this command writes leave as one message per
    // prefix when it is done (and its waiters served).
    let hub = engine.pubsub();
    let tracking = hub.tracking.active();
    let _executing = tracking.then(|| {
        // Before each command, as Redis does, the tracking table is brought back
        // within tracking-table-max-keys.
        let max = engine.config().with(|c| c.tracking_table_max_keys);
        hub.tracking.limit_keys(max, engine.clients(), hub);
        hub.tracking.executing(client.id())
    });
    let _batch = if tracking {
        hub.tracking.open_batch(engine.clients(), hub, client.id())
    } else {
        None
    };
    let (reply, finished) = run_top(engine, client, argv, started);
    count_error_reply(engine, client, &reply);
    if !client.retrying_block {
        super::blocking::serve_ready(engine, client.gate_slot);
    }
    (reply, finished)
}

/// Runs one command from inside a command that holds the execution gate exclusively
/// (`EXEC`, a script): the same checks as a command from a client, its own shard locks,
/// the outer command's time, and its log effect collected into the outer command's.
pub fn run_nested(engine: &Engine, client: &mut ClientState, argv: &[Vec<u8>]) -> Reply {
    let started = client
        .nested
        .as_ref()
        .map_or_else(|| engine.clock().now(), |n| n.started);
    let reply = match admit(engine, client, argv) {
        Ok(resolved) => run_resolved(engine, client, argv, resolved, started).0,
        Err(reply) => reply,
    };
    count_error_reply(engine, client, &reply);
    reply
}

/// Counts an error reply in `INFO errorstats`, unless it is one already counted (a
/// script failing with the error of a command it called, as Redis flags it).
fn count_error_reply(engine: &Engine, client: &mut ClientState, reply: &Reply) {
    let counted = std::mem::take(&mut client.error_already_counted);
    if let (Reply::Error(text), false) = (reply, counted) {
        engine.count_error(text);
    }
}

/// The checks every command passes before it runs or is queued: known command, arity,
/// authentication, memory, a failing log.
fn admit(engine: &Engine, client: &mut ClientState, argv: &[Vec<u8>]) -> Result<Resolved, Reply> {
    let resolved = match resolve(argv) {
        Ok(r) => r,
        Err(e) => {
            if let OpError::WrongArity(_) | OpError::UnknownSubcommand { .. } = e {
                if let Ok(r) = table_stat_for_name(argv) {
                    engine.command_stats().reject(r);
                }
            }
            return Err(e.into());
        }
    };
    let spec = resolved.spec;
    if !client.authenticated && engine.requires_auth() && !spec.has(super::flags::NO_AUTH) {
        engine.command_stats().reject(resolved.stat);
        return Err(Reply::error("NOAUTH Authentication required."));
    }
    // ACL: may this user run this command on these keys? (One flag read for users
    // allowed everything.)
    if let Err(e) = crate::command::access::permit(
        engine,
        client,
        spec,
        resolved.full_name,
        resolved.stat,
        argv,
    ) {
        engine.command_stats().reject(resolved.stat);
        return Err(e.into());
    }
    // Over `maxmemory`: evict as the policy says, before this command locks any
    // shard (or refuse a command that may grow memory).
    // EXEC may grow memory when a command it would run may (Redis's rule).
    // (The resolved spec says whether this is EXEC: no second lookup of its name.)
    let deny_oom = spec.has(super::flags::DENYOOM)
        || (spec_is_exec(spec) && client.multi.as_ref().is_some_and(|tx| tx.deny_oom));
    // Inside a transaction or script the outer command made this decision (a script
    // refuses its own first write past maxmemory unless it declared allow-oom), as
    // Redis checks memory only for the command a client sent.
    if client.nested.is_none() {
        if let Err(e) = crate::command::eviction::before_command(engine, deny_oom) {
            engine.command_stats().reject(resolved.stat);
            return Err(e.into());
        }
    }
    if let Some(failure) = engine.durability().and_then(|d| d.wal().failure()) {
        // As Redis does on a failing append-only file: writes (and PING, so that
        // health checks notice) are refused until the engine has healed (a snapshot
        // of memory and a fresh log segment are on disk); reads go on.
        if spec.has(super::flags::WRITE) || spec.name == "ping" {
            engine.command_stats().reject(resolved.stat);
            return Err(OpError::DiskFailed(failure.to_string()).into());
        }
    }
    // A script past busy-reply-threshold: only the commands allowed while busy run,
    // and a transaction that queues another is doomed, as in Redis. (The script's own
    // commands are nested and not refused.)
    if client.nested.is_none() && !spec.has(super::flags::ALLOW_BUSY) && engine.script_busy() {
        engine.command_stats().reject(resolved.stat);
        return Err(Reply::error(engine.gate().busy().refusal()));
    }
    // Pub/Sub: a RESP2 subscriber (or a monitor) runs only what that mode allows.
    if let Some(refused) =
        crate::command::pubsub::refuse_in_subscribed_mode(client, spec, resolved.full_name)
    {
        engine.command_stats().reject(resolved.stat);
        return Err(refused);
    }
    Ok(resolved)
}

/// A command from a client: admitted, queued inside `MULTI`, or run through the
/// execution gate.
fn run_top(
    engine: &Engine,
    client: &mut ClientState,
    argv: &[Vec<u8>],
    started: Instant,
) -> (Reply, Instant) {
    let resolved = match admit(engine, client, argv) {
        Ok(r) => r,
        Err(reply) => {
            // A command refused while queuing dooms the transaction; a refused EXEC
            // discards it at once, saying why.
            if is_exec(argv) {
                discard_transaction(client);
                if let Reply::Error(text) = &reply {
                    let why = text.strip_prefix("ERR ").unwrap_or(text);
                    return (
                        Reply::Error(
                            format!("EXECABORT Transaction discarded because of: {why}").into(),
                        ),
                        started,
                    );
                }
            } else if let Some(tx) = client.multi.as_mut() {
                tx.aborted = true;
            }
            return (reply, started);
        }
    };
    let spec = resolved.spec;
    if let Some(tx) = client.multi.as_mut() {
        if !spec.has(super::flags::TX_CONTROL) {
            if spec.has(super::flags::NO_MULTI) {
                tx.aborted = true;
                return (
                    Reply::error("ERR Command not allowed inside a transaction"),
                    started,
                );
            }
            tx.deny_oom |= spec.has(super::flags::DENYOOM);
            tx.queue.push(argv.to_vec());
            let queued = tx.queue.len() as i64;
            client.shared.multi.store(queued, Ordering::Relaxed);
            return (Reply::status("QUEUED"), started);
        }
    }
    let gate = engine.gate();
    let threshold = engine.busy_threshold_ms();
    if spec.has(super::flags::EXCLUSIVE) {
        return match gate.exclusive_unless_busy(threshold) {
            Some(_exclusive) => run_exclusive(engine, client, argv, resolved, started),
            None => busy_refusal(engine, client, argv, resolved, started),
        };
    }
    match gate.enter(client.gate_slot, threshold) {
        crate::server::gate::Entry::Shared(_shared) => {
            run_resolved(engine, client, argv, resolved, started)
        }
        crate::server::gate::Entry::Batched => {
            run_resolved(engine, client, argv, resolved, started)
        }
        crate::server::gate::Entry::Busy if spec.has(super::flags::ALLOW_BUSY) => {
            run_resolved(engine, client, argv, resolved, started)
        }
        crate::server::gate::Entry::Busy => busy_refusal(engine, client, argv, resolved, started),
    }
}

/// The `-BUSY` answer to a command that met a busy script at the gate; `EXEC`
/// discards its transaction with it, as a command refused before queuing does.
fn busy_refusal(
    engine: &Engine,
    client: &mut ClientState,
    argv: &[Vec<u8>],
    resolved: Resolved,
    started: Instant,
) -> (Reply, Instant) {
    engine.command_stats().reject(resolved.stat);
    let text = engine.gate().busy().refusal();
    if is_exec(argv) {
        discard_transaction(client);
        let reply = format!("EXECABORT Transaction discarded because of: {text}");
        return (Reply::Error(reply.into()), started);
    }
    (Reply::error(text), started)
}

/// Leaves `MULTI` state: the queue and the watched keys are dropped.
fn discard_transaction(client: &mut ClientState) {
    client.multi = None;
    client.shared.multi.store(-1, Ordering::Relaxed);
    client.watches.clear();
}

/// Runs a command that holds the gate exclusively: the commands it runs collect their
/// log effects, which go to the log as one record, so recovery applies all or none.
fn run_exclusive(
    engine: &Engine,
    client: &mut ClientState,
    argv: &[Vec<u8>],
    resolved: Resolved,
    started: Instant,
) -> (Reply, Instant) {
    let in_script = resolved.spec.group == super::Group::Scripting;
    let script_keys = if in_script {
        key_indices(resolved.spec, argv)
            .map(|keys| keys.iter().map(|&i| argv[i].clone()).collect())
            .unwrap_or_default()
    } else {
        Vec::new()
    };
    client.nested = Some(crate::clients::Nested {
        started,
        now_ms: engine.now_ms(),
        effects: Vec::new(),
        in_script,
        script_keys,
    });
    let out = run_resolved(engine, client, argv, resolved, started);
    let (now, effects) = client
        .nested
        .take()
        .map_or_else(|| (engine.now_ms(), Vec::new()), |n| (n.now_ms, n.effects));
    if let (false, Some(d)) = (effects.is_empty(), engine.durability()) {
        let seq = d
            .wal()
            .append(now, effects.iter().map(|(db, c)| (*db, c.as_slice())));
        client.wal_seq = client.wal_seq.max(seq);
    }
    out
}

/// Runs an admitted command: locks its keys' shards, runs the handler, settles the
/// keys, logs the effect (or collects it for the transaction or script around it),
/// holds the reply for the log, and counts the call.
fn run_resolved(
    engine: &Engine,
    client: &mut ClientState,
    argv: &[Vec<u8>],
    resolved: Resolved,
    started: Instant,
) -> (Reply, Instant) {
    let spec = resolved.spec;
    let keys = match locked_keys(spec, argv) {
        Ok(k) => k,
        Err(e) => {
            engine.command_stats().reject(resolved.stat);
            return (e.into(), started);
        }
    };
    client
        .shared
        .last_cmd
        .store(resolved.stat, Ordering::Relaxed);
    // The wall clock read for this command (or for the pipelined batch it is part
    // of), not derived from `started` through the engine's long-lived anchor: the
    // two clocks drift apart while the system clock is slewed, and a client's `PXAT`
    // is set by the wall clock (as Redis's `mstime()` is). Inside a script or
    // transaction, the outer command's time.
    let now = match (&client.nested, client.wall_clock_anchor) {
        (Some(n), _) => n.now_ms,
        (None, Some((at, unix_us))) => {
            let since = started.saturating_duration_since(at).as_micros() as i64;
            (unix_us + since).div_euclid(1000)
        }
        (None, None) => engine.now_ms(),
    };
    let result = {
        let mut ctx = Ctx::new(engine, client, lock_keys(engine, spec, argv, &keys, now));
        // TOUCH exists to touch: NO-TOUCH does not apply to it, as in Redis.
        let no_touch = ctx.client.no_touch && spec.name != "touch";
        ctx.ks.set_no_touch(no_touch);
        ctx.ks.set_lfu(engine.lfu_policy());
        let mut result = run_handler(&mut ctx, spec, argv, &keys, spec.handler);
        if let Some(detour) = ctx.detour.take() {
            // Outside the locks (the handler changed nothing), then under them again.
            ctx.ks = engine.keyspace().lock(&LockSet::None, now);
            let resume = detour(engine);
            ctx.ks = lock_keys(engine, spec, argv, &keys, now);
            ctx.ks.set_no_touch(no_touch);
            ctx.ks.set_lfu(engine.lfu_policy());
            ctx.effect = Effect::AsSent;
            ctx.unmodified_keys.clear();
            ctx.unchanged = false;
            result = run_handler(&mut ctx, spec, argv, &keys, resume);
        }
        if spec.has(super::flags::WRITE | super::flags::MAY_MODIFY) {
            log_effect(&mut ctx, spec, argv, &result, now);
        }
        hold_reply_for_log(&mut ctx);
        // Pub/Sub: client-side caching remembers what was read; MONITOR sees the command.
        crate::command::pubsub::after_command(engine, ctx.client, spec, argv, &keys);
        result
    };
    let finished = engine.clock().now();
    count_call(engine, client, resolved, argv, &result, started, finished);
    let reply = match result {
        Ok(r) => r,
        Err(e) => e.into(),
    };
    (reply, finished)
}

/// The argument positions of the keys whose shards a command locks: none for an
/// exclusive command (what it runs locks its own) or a prompt-cache one (its keys name
/// namespaces, outside the keyspace).
fn locked_keys(spec: &CommandSpec, argv: &[Vec<u8>]) -> OpResult<KeyPositions> {
    if spec.has(super::flags::EXCLUSIVE | super::flags::NAMESPACE_KEYS) {
        Ok(KeyPositions::new())
    } else {
        key_indices(spec, argv)
    }
}

/// Locks the shards of the command's keys (or every shard), remembering where each key
/// lives so the handler does not hash it again.
#[inline]
fn lock_keys<'e>(
    engine: &'e Engine,
    spec: &CommandSpec,
    argv: &[Vec<u8>],
    keys: &[usize],
    now: i64,
) -> crate::keyspace::Locked<'e> {
    if spec.whole_keyspace {
        return engine.keyspace().lock(&LockSet::All, now);
    }
    match keys {
        [] => return engine.keyspace().lock(&LockSet::None, now),
        &[i] => {
            let loc = locate(&argv[i]);
            let mut ks = engine.keyspace().lock(&LockSet::Shard(loc.shard), now);
            ks.remember(&argv[i], loc);
            return ks;
        }
        _ => {}
    }
    let locations: SmallVec<[Location; 4]> = keys.iter().map(|&i| locate(&argv[i])).collect();
    let set = LockSet::Keys(locations.iter().map(|l| l.shard).collect());
    let mut ks = engine.keyspace().lock(&set, now);
    for (&i, &loc) in keys.iter().zip(&locations) {
        ks.remember(&argv[i], loc);
    }
    ks
}

/// Runs the handler; for a write, settles its keys and tells their watchers; a
/// blocking command that found nothing registers its wait, still under the locks.
fn run_handler(
    ctx: &mut Ctx<'_>,
    spec: &CommandSpec,
    argv: &[Vec<u8>],
    keys: &[usize],
    handler: impl FnOnce(&mut Ctx<'_>, &[Vec<u8>]) -> OpResult<Reply>,
) -> OpResult<Reply> {
    let write = spec.has(super::flags::WRITE | super::flags::MAY_MODIFY);
    let watched_before = if write {
        super::watch::existing_watched(ctx, spec, argv, keys)
    } else {
        Vec::new()
    };
    let result = handler(ctx, argv);
    if spec.has(super::flags::NOOP_ON_ZERO) && matches!(result, Ok(Reply::Integer(0))) {
        ctx.effect = Effect::Nothing;
    }
    if let Some(req) = ctx.client.block_request.take() {
        // Found nothing to pop: wait, registered while the keys are still locked.
        if ctx.client.retrying_block {
            ctx.client.block_request = Some(req);
        } else {
            let waiter = ctx.blocking().block(ctx.client, argv, req);
            ctx.client.blocked = Some(waiter);
            ctx.client.shared.blocked.store(true, Ordering::Relaxed);
        }
    }
    if write && !(ctx.unchanged && ctx.effect == Effect::Nothing) {
        settle_keys(ctx, spec, argv, keys);
        if result.is_ok() && ctx.effect != Effect::Nothing {
            super::watch::touch_written(ctx, spec, argv, keys, &watched_before);
        }
    }
    result
}

/// Logs a write's effect, still holding its keys' shards (so the log order is the
/// order in which commands on the same keys ran), or collects it for the transaction
/// or script around it, which logs it all as one record.
fn log_effect(
    ctx: &mut Ctx<'_>,
    spec: &CommandSpec,
    argv: &[Vec<u8>],
    result: &OpResult<Reply>,
    now: i64,
) {
    if result.is_err() {
        return;
    }
    let db = ctx.db();
    if let Some(nested) = ctx.client.nested.as_mut() {
        if !spec.has(super::flags::EXCLUSIVE) {
            match std::mem::take(&mut ctx.effect) {
                Effect::AsSent => nested.effects.push((db, argv.to_vec())),
                Effect::Rewritten(cmds) => nested.effects.extend(cmds.into_iter().map(|c| (db, c))),
                Effect::Nothing => {}
            }
        }
        return;
    }
    let Some(wal) = ctx.durability().map(|d| d.wal()) else {
        return;
    };
    let seq = match &ctx.effect {
        Effect::AsSent => Some(wal.append(now, std::iter::once((db, argv)))),
        Effect::Rewritten(cmds) => Some(wal.append(now, cmds.iter().map(|c| (db, c.as_slice())))),
        Effect::Nothing => None,
    };
    if let Some(seq) = seq {
        ctx.client.wal_seq = seq;
    }
}

/// Whatever the command saw was appended by now: its reply, too, waits until the log
/// has it, so no client is shown a write a crash could take back. (While the disk is
/// failing, reads go on instead, and may show the writes that met the failure; the
/// heal makes those durable.)
fn hold_reply_for_log(ctx: &mut Ctx<'_>) {
    if let Some(d) = ctx.durability() {
        let wal = d.wal();
        if wal.failure().is_none() {
            ctx.client.wal_seq = ctx.client.wal_seq.max(wal.appended_seq());
        }
    }
}

/// Counts a call that ran: its time and outcome in the command's statistics, the slow
/// log and latency monitor, and the client's command count.
fn count_call(
    engine: &Engine,
    client: &mut ClientState,
    resolved: Resolved,
    argv: &[Vec<u8>],
    result: &OpResult<Reply>,
    started: Instant,
    finished: Instant,
) {
    let elapsed = finished.saturating_duration_since(started);
    // A call failed when its reply is an error, returned or built by the command (a
    // script's error reply), as Redis counts failed calls.
    let failed = matches!(result, Err(_) | Ok(Reply::Error(_)));
    if client.retrying_block {
        // A blocked command is one call, counted when it first ran; the run that
        // ends its wait only adds its failure, as Redis counts it.
        if failed {
            engine.command_stats().fail(resolved.stat);
        }
    } else {
        engine
            .command_stats()
            .record(resolved.stat, elapsed, failed);
    }
    let spec = resolved.spec;
    engine.operator().after_command(
        client,
        &crate::command::handlers::dump::shown_args(spec, argv),
        elapsed.as_micros() as u64,
        spec.has(super::flags::SKIP_SLOWLOG),
        spec.has(super::flags::FAST),
    );
    // Only this client's own thread writes its counter: no atomic read-modify-write.
    let commands = &client.shared.commands;
    commands.store(commands.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
}

/// Whether a logged command belongs to the prompt cache (`KV.*`), which keeps its
/// own state when the rest is reloaded in place.
pub fn is_prefix_cache_command(argv: &[Vec<u8>]) -> bool {
    resolve(argv).is_ok_and(|r| r.spec.group == super::Group::PrefixCache)
}

/// What recovery and reloads replay logged commands with (the persistence layer sits
/// below the dispatcher and is handed these).
pub const REPLAYER: crate::engine::persistence::Replayer = crate::engine::persistence::Replayer {
    replay,
    is_prefix_cache_command,
};

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
    let keys = if spec.has(super::flags::NAMESPACE_KEYS) {
        KeyPositions::new()
    } else {
        match key_indices(spec, argv) {
            Ok(k) => k,
            Err(e) => return e.into(),
        }
    };
    let set = lock_set_for(spec, argv, &keys);
    let ks = engine.keyspace().lock(&set, now_ms);
    let mut ctx = Ctx::new(engine, client, ks);
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
    let search = ctx.search();
    let blocking = ctx.blocking();
    for &i in keys {
        // Settling only fails for keys outside the lock, which cannot happen here.
        let removed = matches!(ctx.ks.settle(db, &argv[i]), Ok(true));
        // Pub/Sub: `del` of an emptied key, client-side cache invalidation (not for a
        // command that changed nothing).
        if removed || (ctx.effect != Effect::Nothing && !ctx.unmodified_keys.contains(&i)) {
            crate::command::pubsub::key_settled(ctx, &argv[i], removed);
        }
        search.key_written(&mut ctx.ks, db, &argv[i]);
        // Only a key that holds something can serve a waiter (a blocking pop that
        // found nothing must not wake itself); a key a write deleted is signalled too,
        // as a group read waiting on it ends with an error.
        if blocking.blocked_clients() > 0
            && (ctx.effect != Effect::Nothing || matches!(ctx.ks.peek(db, &argv[i]), Ok(Some(_))))
        {
            if ctx.client.retrying_block {
                ctx.client.written_for_waiters.push((db, argv[i].clone()));
            } else {
                blocking.key_written(db, &argv[i]);
            }
        }
    }
    // The commands that replace databases wholesale. As in RediSearch, any flush
    // drops the indexes too (even of another database); after SWAPDB they are rebuilt
    // from what database 0 now holds.
    if spec.whole_keyspace {
        match spec.name {
            "flushall" | "flushdb" => {
                search.clear();
                // Group reads waiting on a flushed key end with an error, as in Redis.
                let dbs: Vec<usize> = if spec.name == "flushall" {
                    (0..ctx.keyspace().databases()).collect()
                } else {
                    vec![db]
                };
                for db in dbs {
                    for key in blocking.waited_keys(db) {
                        blocking.key_written(db, &key);
                    }
                }
            }
            "swapdb" => {
                search.keyspace_replaced(&mut ctx.ks);
                // Clients blocked on a key the swap changed are served, as in Redis
                // (a key that went away ends a group read's wait).
                for db in argv[1..3]
                    .iter()
                    .filter_map(|a| crate::util::num::parse_i64(a))
                {
                    let db = db as usize;
                    for key in blocking.waited_keys(db) {
                        blocking.key_written(db, &key);
                    }
                }
            }
            _ => {}
        }
    }
}
