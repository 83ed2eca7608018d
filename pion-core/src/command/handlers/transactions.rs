//! Transactions: MULTI, EXEC, DISCARD, WATCH and UNWATCH.
//!
//! `MULTI` makes the dispatcher queue the client's commands (checking each as it is
//! queued); `EXEC` runs the queue holding the execution gate exclusively, so no command
//! of another client runs in between, on any thread. `WATCH` registers keys whose
//! change by anyone before `EXEC` makes the transaction fail with a null reply.

use std::sync::atomic::Ordering;

use crate::command::ctx::Ctx;
use crate::command::flags::*;
use crate::command::{run_nested, CommandSpec, Group, KeySpecDoc};
use crate::error::{OpError, OpResult};
use crate::reply::Reply;

const TX: u64 = NOSCRIPT | LOADING | STALE;

/// This family's part of the command table.
pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new(
        "multi",
        1,
        TX | FAST | ALLOW_BUSY | TX_CONTROL,
        Group::Transaction,
        multi,
    )
    .doc("Mark the start of a transaction block", "1.2.0"),
    CommandSpec::new(
        "exec",
        1,
        TX | SKIP_SLOWLOG | EXCLUSIVE | TX_CONTROL,
        Group::Transaction,
        exec,
    )
    .doc("Execute all commands issued after MULTI", "1.2.0"),
    CommandSpec::new(
        "discard",
        1,
        TX | FAST | ALLOW_BUSY | TX_CONTROL,
        Group::Transaction,
        discard,
    )
    .doc("Discard all commands issued after MULTI", "2.0.0"),
    CommandSpec::new(
        "watch",
        -2,
        TX | FAST | ALLOW_BUSY | TX_CONTROL,
        Group::Transaction,
        watch,
    )
    .key_specs(&[KeySpecDoc::range(&["RO"], 1, -1, 1, 0)])
    .keys(1, -1, 1)
    .doc(
        "Watch the given keys to determine execution of the MULTI/EXEC block",
        "2.2.0",
    ),
    CommandSpec::new(
        "unwatch",
        1,
        TX | FAST | ALLOW_BUSY,
        Group::Transaction,
        unwatch,
    )
    .doc("Forgets about watched keys of a transaction.", "2.2.0"),
];

fn multi(ctx: &mut Ctx<'_>, _: &[Vec<u8>]) -> OpResult<Reply> {
    if ctx.client.multi.is_some() {
        return Err(OpError::custom("ERR MULTI calls can not be nested"));
    }
    ctx.client.multi = Some(crate::clients::Transaction::default());
    ctx.client.shared.multi.store(0, Ordering::Relaxed);
    Ok(Reply::ok())
}

fn discard(ctx: &mut Ctx<'_>, _: &[Vec<u8>]) -> OpResult<Reply> {
    if ctx.client.multi.take().is_none() {
        return Err(OpError::custom("ERR DISCARD without MULTI"));
    }
    ctx.client.shared.multi.store(-1, Ordering::Relaxed);
    ctx.client.watches.clear();
    Ok(Reply::ok())
}

fn watch(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    if ctx.client.multi.is_some() {
        return Err(OpError::custom("ERR WATCH inside MULTI is not allowed"));
    }
    let db = ctx.db();
    let registry = std::sync::Arc::clone(ctx.watches());
    for key in &argv[1..] {
        // Looking the key up lets an expired key go first: its expiry is not a change
        // this watch should see.
        let _ = ctx.ks.peek(db, key)?;
        ctx.client.watches.add(&registry, db, key);
    }
    Ok(Reply::ok())
}

fn unwatch(ctx: &mut Ctx<'_>, _: &[Vec<u8>]) -> OpResult<Reply> {
    ctx.client.watches.clear();
    Ok(Reply::ok())
}

/// Runs the queued commands (the dispatcher holds the gate exclusively).
fn exec(ctx: &mut Ctx<'_>, _: &[Vec<u8>]) -> OpResult<Reply> {
    let Some(tx) = ctx.client.multi.take() else {
        return Err(OpError::custom("ERR EXEC without MULTI"));
    };
    ctx.client.shared.multi.store(-1, Ordering::Relaxed);
    if tx.aborted {
        ctx.client.watches.clear();
        return Err(OpError::custom(
            "EXECABORT Transaction discarded because of previous errors.",
        ));
    }
    expire_watched(ctx);
    let dirty = ctx.client.watches.is_dirty();
    ctx.client.watches.clear();
    if dirty {
        return Ok(Reply::NullArray);
    }
    let engine = ctx.engine();
    let replies = tx
        .queue
        .iter()
        .map(|argv| run_nested(engine, ctx.client, argv))
        .collect();
    Ok(Reply::Array(replies))
}

/// A watched key whose time to live ran out before `EXEC` counts as changed: looking
/// each one up at the transaction's time lets expiry remove it and tell its watchers.
fn expire_watched(ctx: &mut Ctx<'_>) {
    let now = ctx.now_ms();
    let keys = ctx.client.watches.keys.clone();
    for (db, key) in keys {
        let mut ks = ctx.keyspace().lock_keys(&[&key], now);
        let _ = ks.peek(db, &key);
    }
}
