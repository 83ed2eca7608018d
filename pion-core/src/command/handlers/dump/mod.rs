//! `DUMP`, `RESTORE`, `RESTORE-ASKING` and `MIGRATE` ([`migrate`]): a value as Redis's
//! serialised payload ([`crate::value::rdb`]) and back, and moved to another server.
//!
//! A restore is logged as the value it made (`RESTORE key <deadline> <payload>
//! REPLACE ABSTTL`), so replaying the log rebuilds it whatever the time of the
//! replay; a restore that only deleted (a time to live already past) is logged as
//! `DEL`.

mod migrate;

pub(crate) use migrate::shown_args;

use crate::command::ctx::Ctx;
use crate::command::flags::*;
use crate::command::handlers::util::is_kw;
use crate::command::{CommandSpec, Group, KeySpecDoc};
use crate::error::{DumpError, OpError, OpResult};
use crate::pubsub::notify;
use crate::reply::Reply;
use crate::util::num::parse_i64;
use crate::value::rdb::{self, DumpOptions, LoadOptions, RdbError};

const RESTORE_KEYS: &[KeySpecDoc] = &[KeySpecDoc::range(&["OW", "update"], 1, 0, 1, 0)];

/// This family's part of the command table.
pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("dump", 2, READONLY, Group::Keyspace, dump)
        .key_specs(&[KeySpecDoc::range(&["RO", "access"], 1, 0, 1, 0)])
        .tips(&["nondeterministic_output"])
        .keys(1, 1, 1)
        .doc(
            "Return a serialized version of the value stored at the specified key.",
            "2.6.0",
        ),
    CommandSpec::new(
        "restore",
        -4,
        WRITE | DENYOOM | DANGEROUS,
        Group::Keyspace,
        restore,
    )
    .key_specs(RESTORE_KEYS)
    .keys(1, 1, 1)
    .doc(
        "Create a key using the provided serialized value, previously obtained using DUMP.",
        "2.6.0",
    ),
    // RESTORE for a slot being imported (a cluster node accepts it after ASKING).
    // Pion runs no cluster mode, so it is RESTORE with the `asking` flag.
    CommandSpec::new(
        "restore-asking",
        -4,
        WRITE | DENYOOM | ASKING | DANGEROUS,
        Group::Keyspace,
        restore,
    )
    .key_specs(RESTORE_KEYS)
    .keys(1, 1, 1)
    .doc(
        "An internal command for migrating keys in a cluster",
        "3.0.0",
    ),
    migrate::SPEC,
];

/// How this server writes payloads (`rdbcompression`, the list node settings).
pub(crate) fn dump_options(ctx: &Ctx<'_>) -> DumpOptions {
    ctx.config().with(|c| DumpOptions {
        compress: c.rdbcompression,
        list_fill: c.list_max_listpack_size,
        list_compress_depth: c.list_compress_depth,
    })
}

/// How this server reads payloads (the encoding thresholds, `proto-max-bulk-len`).
fn load_options(ctx: &Ctx<'_>) -> LoadOptions {
    ctx.config().with(|c| LoadOptions {
        limits: c.limits,
        max_string: usize::try_from(c.proto_max_bulk_len).unwrap_or(usize::MAX),
    })
}

/// `DUMP key`: the payload, or nil for a missing key (a read: it touches the key and
/// counts a hit or miss).
fn dump(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let opts = dump_options(ctx);
    let db = ctx.db();
    Ok(match ctx.ks.get(db, &argv[1])? {
        Some(v) => Reply::bulk(rdb::dump(v, &opts)),
        None => Reply::Null,
    })
}

/// What `RESTORE`'s options asked for.
#[derive(Default)]
struct RestoreOptions {
    replace: bool,
    absttl: bool,
    idle: Option<u64>,
    freq: Option<u8>,
}

fn restore_options(argv: &[Vec<u8>]) -> OpResult<RestoreOptions> {
    let mut o = RestoreOptions::default();
    let mut j = 4;
    while j < argv.len() {
        let more = j + 1 < argv.len();
        if is_kw(&argv[j], "replace") {
            o.replace = true;
        } else if is_kw(&argv[j], "absttl") {
            o.absttl = true;
        } else if is_kw(&argv[j], "idletime") && more && o.freq.is_none() {
            let v = parse_i64(&argv[j + 1]).ok_or(OpError::NotInteger)?;
            o.idle = Some(u64::try_from(v).map_err(|_| DumpError::InvalidIdletime)?);
            j += 1;
        } else if is_kw(&argv[j], "freq") && more && o.idle.is_none() {
            let v = parse_i64(&argv[j + 1]).ok_or(OpError::NotInteger)?;
            o.freq = Some(u8::try_from(v).map_err(|_| DumpError::InvalidFreq)?);
            j += 1;
        } else {
            return Err(OpError::Syntax);
        }
        j += 1;
    }
    Ok(o)
}

/// `RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME s] [FREQ f]` (and
/// `RESTORE-ASKING`), checked in Redis's order: options, an existing key, the time to
/// live, the payload's envelope, its body.
fn restore(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let o = restore_options(argv)?;
    let (key, db) = (&argv[1], ctx.db());
    if !o.replace && ctx.ks.exists(db, key)? {
        return Err(DumpError::BusyKey.into());
    }
    let ttl = parse_i64(&argv[2]).ok_or(OpError::NotInteger)?;
    if ttl < 0 {
        return Err(DumpError::InvalidTtl.into());
    }
    let value = rdb::restore(&argv[3], &load_options(ctx)).map_err(|e| match e {
        RdbError::Envelope => DumpError::BadPayload,
        RdbError::BadData(why) => {
            crate::log_verbose!("RESTORE of a payload that does not decode: {why}");
            DumpError::BadData
        }
    })?;
    let deleted = o.replace && ctx.ks.remove(db, key)?.is_some();
    let now = ctx.now_ms();
    let deadline = match (ttl, o.absttl) {
        (0, _) => None,
        (at, true) => Some(at),
        (rel, false) => Some(rel.saturating_add(now)),
    };
    if deadline.is_some_and(|at| at <= now) {
        // Already past its time: nothing is created, and what REPLACE removed is a DEL.
        if deleted {
            ctx.notify(notify::GENERIC, "del", key);
            ctx.log_as(vec![vec![b"DEL".to_vec(), key.clone()]]);
        } else {
            ctx.log_as(Vec::new());
        }
        return Ok(Reply::ok());
    }
    ctx.ks.set(db, key, value)?;
    if deadline.is_some() {
        ctx.ks.set_expire_at(db, key, deadline)?;
    }
    let lfu = ctx.engine().lfu_policy();
    if let Some(entry) = ctx.ks.entry(db, key)? {
        match (lfu, o.freq, o.idle) {
            (true, Some(f), _) => entry.set_lfu_counter(f, now),
            (false, _, Some(idle)) => entry.set_idle(idle, now),
            _ => {}
        }
    }
    ctx.notify(notify::GENERIC, "restore", key);
    let at = deadline.map_or(b"0".to_vec(), |at| at.to_string().into_bytes());
    ctx.log_as(vec![vec![
        b"RESTORE".to_vec(),
        key.clone(),
        at,
        argv[3].clone(),
        b"REPLACE".to_vec(),
        b"ABSTTL".to_vec(),
    ]]);
    Ok(Reply::ok())
}

#[cfg(test)]
mod tests;
