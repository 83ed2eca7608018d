//! The `PFADD`, `PFCOUNT`, `PFMERGE` and `PFDEBUG` handlers.
//!
//! They follow Redis's order of checks and its side effects: every command that
//! edits or reads one HyperLogLog in place leaves it `raw` (Redis unshares the
//! string first), a change fires a `pfadd` event (for `PFMERGE` too), and a call that
//! changes nothing is not logged. `PFCOUNT` of one key stores a recomputed estimate
//! in the value's header, which is then logged like a write; of several keys it
//! merges into a temporary and writes nothing.

use super::estimate::estimate;
use super::sketch::{self, Encoding, REGISTERS};
use crate::command::ctx::{Ctx, Effect};
use crate::error::{OpError, OpResult};
use crate::pubsub::notify;
use crate::reply::Reply;
use crate::value::{StrValue, Value};

/// `hll-sparse-max-bytes` now.
fn sparse_max(ctx: &Ctx<'_>) -> u64 {
    ctx.config().with(|c| c.hll_sparse_max_bytes)
}

/// A HyperLogLog's bytes for editing in place (the value becomes `raw`), looked up
/// as a write (no keyspace hit or miss): `None` when the key is missing, `WRONGTYPE`
/// for other types and for strings that are not HyperLogLogs.
fn hll_for_write<'c>(ctx: &'c mut Ctx<'_>, key: &[u8]) -> OpResult<Option<&'c mut Vec<u8>>> {
    let db = ctx.db();
    match ctx.ks.get_mut(db, key)? {
        None => Ok(None),
        Some(Value::Str(s)) => {
            sketch::check(s.as_bytes())?;
            Ok(Some(s.bytes_mut()))
        }
        Some(_) => Err(OpError::WrongType),
    }
}

/// Creates `key` as an empty HyperLogLog and returns its bytes.
fn create<'c>(ctx: &'c mut Ctx<'_>, key: &[u8]) -> OpResult<&'c mut Vec<u8>> {
    let db = ctx.db();
    ctx.ks
        .set(db, key, Value::Str(StrValue::raw(sketch::empty())))?;
    match ctx.ks.get_mut(db, key)? {
        Some(Value::Str(s)) => Ok(s.bytes_mut()),
        _ => Err(OpError::custom("ERR internal error: HyperLogLog vanished")),
    }
}

/// Reads a HyperLogLog for merging (a keyspace hit or miss is counted): `None` when
/// missing.
fn hll_for_read<'c>(ctx: &'c mut Ctx<'_>, key: &[u8]) -> OpResult<Option<&'c [u8]>> {
    let db = ctx.db();
    match ctx.ks.get(db, key)? {
        None => Ok(None),
        Some(v) => {
            let bytes = v.as_str()?.as_bytes();
            sketch::check(bytes)?;
            Ok(Some(bytes))
        }
    }
}

/// `PFADD key [element ...]`: 1 when a register changed or the key was created.
/// A corrupt value fails at the first element that meets the corruption; what the
/// elements before it changed stays, as in Redis, and is logged.
pub(super) fn pfadd(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let key = &argv[1];
    let max = sparse_max(ctx);
    let (bytes, created) = match hll_for_write(ctx, key)? {
        Some(b) => (b, false),
        None => (create(ctx, key)?, true),
    };
    let mut changed = false;
    for element in &argv[2..] {
        match sketch::add(bytes, element, max) {
            Ok(c) => changed |= c,
            // Redis replies with the error and signals nothing, but the registers
            // already raised stay raised: the command is logged (it replays to the
            // same bytes), with no event, WATCH or tracking message.
            Err(e) if changed => {
                ctx.unmodified_keys.push(1);
                return Ok(Reply::from(OpError::from(e)));
            }
            Err(e) => {
                ctx.effect = Effect::Nothing;
                return Err(e.into());
            }
        }
    }
    if changed || created {
        sketch::invalidate_cache(bytes);
        ctx.notify(notify::STRING, "pfadd", key);
        Ok(Reply::Integer(1))
    } else {
        ctx.changed_nothing();
        Ok(Reply::Integer(0))
    }
}

/// `PFCOUNT key [key ...]`: the estimated cardinality of one HyperLogLog (cached in
/// its header), or of the union of several (merged into a temporary, nothing
/// written). Missing keys count as empty.
pub(super) fn pfcount(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    if argv.len() > 2 {
        ctx.effect = Effect::Nothing;
        let mut max = vec![0u8; REGISTERS];
        for key in &argv[1..] {
            if let Some(bytes) = hll_for_read(ctx, key)? {
                sketch::merge_into(&mut max, bytes)?;
            }
        }
        return Ok(count_reply(estimate(&sketch::raw_histogram(&max))));
    }
    let db = ctx.db();
    // One lookup: read as a read (a hit or miss is counted), updated in place.
    let counted = match ctx.ks.get_mut_counted(db, &argv[1])? {
        None => None,
        Some(Value::Str(s)) => {
            let bytes = s.as_bytes();
            sketch::check(bytes)?;
            Some(sketch::cardinality(bytes).map(|(card, computed)| {
                // Redis unshares the value either way (it becomes `raw`), and stores a
                // recomputed estimate.
                let bytes = s.bytes_mut();
                if computed {
                    sketch::set_cached_card(bytes, card);
                }
                (card, computed)
            }))
        }
        Some(_) => return Err(OpError::WrongType),
    };
    let Some(counted) = counted else {
        ctx.effect = Effect::Nothing;
        return Ok(Reply::Integer(0));
    };
    let (card, computed) = counted.inspect_err(|_| ctx.effect = Effect::Nothing)?;
    if !computed {
        ctx.effect = Effect::Nothing;
    }
    Ok(count_reply(card))
}

/// A cardinality as Redis replies it (a C `long long`).
fn count_reply(card: u64) -> Reply {
    Reply::Integer(card as i64)
}

/// `PFMERGE destkey [sourcekey ...]`: the destination (itself one of the sources)
/// gets the register-wise maximum of all of them, dense when any source is dense.
pub(super) fn pfmerge(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let mut max = vec![0u8; REGISTERS];
    let mut dense = false;
    for key in &argv[1..] {
        if let Some(bytes) = hll_for_read(ctx, key)? {
            dense |= sketch::check(bytes)? == Encoding::Dense;
            sketch::merge_into(&mut max, bytes)?;
        }
    }
    let dest = &argv[1];
    let limit = sparse_max(ctx);
    let bytes = match hll_for_write(ctx, dest)? {
        Some(b) => b,
        None => create(ctx, dest)?,
    };
    if dense {
        sketch::to_dense(bytes)?;
    }
    for (i, &m) in max.iter().enumerate() {
        if m != 0 {
            // The destination was checked as a source: setting cannot fail.
            let _ = sketch::set_register(bytes, i, m, limit);
        }
    }
    sketch::invalidate_cache(bytes);
    ctx.notify(notify::STRING, "pfadd", dest);
    Ok(Reply::ok())
}

/// `PFDEBUG subcommand key`: `GETREG` (the registers, turning the value dense),
/// `DECODE` (a sparse value's opcodes), `ENCODING`, `TODENSE`. The key is looked up
/// and checked before the subcommand is.
pub(super) fn pfdebug(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let sub = argv[1].to_ascii_lowercase();
    ctx.effect = Effect::Nothing;
    let Some(bytes) = hll_for_write(ctx, &argv[2])? else {
        return Err(OpError::custom("ERR The specified key does not exist"));
    };
    let encoding = sketch::check(bytes)?;
    // Only a conversion to dense changes the value (and is logged).
    let (reply, converted) = match sub.as_slice() {
        b"getreg" => {
            let converted = sketch::to_dense(bytes)?;
            let regs = &bytes[sketch::HDR..];
            let values = (0..REGISTERS)
                .map(|i| Reply::Integer(i64::from(sketch::dense_get(regs, i))))
                .collect();
            (Reply::Array(values), converted)
        }
        b"decode" => {
            if encoding != Encoding::Sparse {
                return Err(OpError::custom("ERR HLL encoding is not sparse"));
            }
            (Reply::Bulk(sketch::decode(bytes).into_bytes()), false)
        }
        b"encoding" => (Reply::status(encoding.name()), false),
        b"todense" => {
            let converted = sketch::to_dense(bytes)?;
            (Reply::Integer(i64::from(converted)), converted)
        }
        _ => {
            return Err(OpError::quoting(
                "ERR Unknown PFDEBUG subcommand '",
                &argv[1],
                "'",
            ))
        }
    };
    if converted {
        // Logged, but Redis signals no modification (no WATCH or tracking message).
        ctx.effect = Effect::AsSent;
        ctx.unmodified_keys.push(2);
    }
    Ok(reply)
}
