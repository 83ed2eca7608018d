//! Counters: `INCR`, `DECR`, `INCRBY`, `DECRBY` in 64-bit integers, and `INCRBYFLOAT`
//! in C `long double` like Redis. A missing key counts as 0; the key's time to live
//! is kept.

use crate::command::ctx::Ctx;
use crate::command::handlers::util::int;
use crate::error::{OpError, OpResult};
use crate::reply::Reply;
use crate::util::num::long_double_incr;
use crate::value::{StrValue, Value};

/// Adds `delta` to the integer stored at `key` and stores the result `int`-encoded.
fn add(ctx: &mut Ctx<'_>, key: &[u8], delta: i64) -> OpResult<Reply> {
    let reply = add_inner(ctx, key, delta)?;
    ctx.notify(crate::pubsub::notify::STRING, "incrby", key);
    Ok(reply)
}

fn add_inner(ctx: &mut Ctx<'_>, key: &[u8], delta: i64) -> OpResult<Reply> {
    let db = ctx.db();
    match ctx.ks.get_mut(db, key)? {
        None => {
            ctx.ks.set(db, key, Value::Str(StrValue::from_int(delta)))?;
            Ok(Reply::Integer(delta))
        }
        Some(v) => {
            let current = v.as_str()?.as_int().ok_or(OpError::NotInteger)?;
            let sum = current.checked_add(delta).ok_or(OpError::Overflow)?;
            *v = Value::Str(StrValue::from_int(sum));
            Ok(Reply::Integer(sum))
        }
    }
}

/// `INCR key`.
pub(super) fn incr(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    add(ctx, &argv[1], 1)
}

/// `DECR key`.
pub(super) fn decr(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    add(ctx, &argv[1], -1)
}

/// `INCRBY key increment`.
pub(super) fn incrby(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let delta = int(&argv[2])?;
    add(ctx, &argv[1], delta)
}

/// `DECRBY key decrement`: a decrement of `i64::MIN` cannot be negated, which Redis
/// reports before looking at the key.
pub(super) fn decrby(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let delta = int(&argv[2])?;
    let negated = delta
        .checked_neg()
        .ok_or_else(|| OpError::custom("ERR decrement would overflow"))?;
    add(ctx, &argv[1], negated)
}

/// `INCRBYFLOAT key increment`: the sum in `long double`, formatted as Redis does and
/// stored as text (never `int`-encoded).
/// `INCRBYFLOAT`: long-double arithmetic differs between machines, so the log records
/// the result (`SET key result KEEPTTL`), as Redis propagates it.
pub(super) fn incrbyfloat(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let db = ctx.db();
    let key = &argv[1];
    let sum = match ctx.ks.get_mut(db, key)? {
        None => {
            let sum = long_double_incr(None, &argv[2])?;
            ctx.ks
                .set(db, key, Value::Str(StrValue::text(sum.clone())))?;
            sum
        }
        Some(v) => {
            let sum = long_double_incr(Some(v.as_str()?.as_bytes()), &argv[2])?;
            *v = Value::Str(StrValue::text(sum.clone()));
            sum
        }
    };
    ctx.notify(crate::pubsub::notify::STRING, "incrbyfloat", key);
    ctx.log_as(vec![vec![
        b"SET".to_vec(),
        key.clone(),
        sum.clone(),
        b"KEEPTTL".to_vec(),
    ]]);
    Ok(Reply::Bulk(sum))
}
