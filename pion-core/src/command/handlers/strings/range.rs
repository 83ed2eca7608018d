//! Partial reads and in-place edits: `APPEND`, `STRLEN`, `GETRANGE` (and its old name
//! `SUBSTR`), `SETRANGE`. Edits in place make the value `raw`, as in Redis, and keep
//! the key's time to live.

use super::{check_string_length, len_reply};
use crate::command::ctx::Ctx;
use crate::command::handlers::util::int;
use crate::error::{OpError, OpResult};
use crate::pubsub::notify;
use crate::reply::Reply;
use crate::value::{StrValue, Value};

/// `APPEND key value`: the new length. A missing key is created as `SET` would.
pub(super) fn append(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let db = ctx.db();
    let (key, tail) = (&argv[1], &argv[2]);
    let Some(len) = read_string_len(ctx, key)? else {
        ctx.ks.set(db, key, Value::string(tail.clone()))?;
        ctx.notify(notify::STRING, "append", key);
        return Ok(Reply::Integer(len_reply(tail.len())));
    };
    check_string_length(ctx, len as u128 + tail.len() as u128)?;
    let s = string_mut(ctx, key)?;
    let bytes = s.bytes_mut();
    bytes.extend_from_slice(tail);
    let n = len_reply(bytes.len());
    ctx.notify(notify::STRING, "append", key);
    Ok(Reply::Integer(n))
}

/// `STRLEN key`: 0 for a missing key.
pub(super) fn strlen(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let db = ctx.db();
    let len = match ctx.ks.get(db, &argv[1])? {
        None => 0,
        Some(v) => v.as_str()?.len(),
    };
    Ok(Reply::Integer(len_reply(len)))
}

/// The byte range `[start, end]` of a `len`-byte string that `GETRANGE` returns, with
/// Redis 7.0's clamping (negative indexes count from the end and stop at 0), or
/// `None` when it is empty.
fn clamp_range(start: i64, end: i64, len: usize) -> Option<(usize, usize)> {
    if len == 0 {
        return None;
    }
    // A Rust allocation never exceeds isize::MAX bytes, so the length fits an i64.
    let len = len as i64;
    // Both ends negative with start after end is empty before any clamping (Redis
    // checks this first: `GETRANGE k -1 -5` is empty even though both clamp to 0).
    if start < 0 && end < 0 && start > end {
        return None;
    }
    let (mut start, mut end) = (start, end);
    if start < 0 {
        start += len;
    }
    if end < 0 {
        end += len;
    }
    let start = start.max(0);
    let end = end.max(0).min(len - 1);
    if start > end {
        return None;
    }
    Some((start as usize, end as usize))
}

/// `GETRANGE key start end` (also `SUBSTR`): an empty string for a missing key or an
/// empty range.
pub(super) fn getrange(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let start = int(&argv[2])?;
    let end = int(&argv[3])?;
    let db = ctx.db();
    let Some(v) = ctx.ks.get(db, &argv[1])? else {
        return Ok(Reply::Bulk(Vec::new()));
    };
    let bytes = v.as_str()?.as_bytes();
    Ok(Reply::Bulk(match clamp_range(start, end, bytes.len()) {
        Some((s, e)) => bytes[s..=e].to_vec(),
        None => Vec::new(),
    }))
}

/// `SETRANGE key offset value`: overwrites from `offset`, padding with zero bytes;
/// the new length. An empty value changes nothing (and creates no key).
pub(super) fn setrange(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let offset = int(&argv[2])?;
    if offset < 0 {
        return Err(OpError::custom("ERR offset is out of range"));
    }
    let (key, patch) = (&argv[1], &argv[3]);
    let current = read_string_len(ctx, key)?;
    if patch.is_empty() {
        return Ok(Reply::Integer(len_reply(current.unwrap_or(0))));
    }
    // offset is non-negative, so the cast is exact; u128 cannot overflow here.
    let total = offset as u128 + patch.len() as u128;
    check_string_length(ctx, total)?;
    // The length check bounds total by proto-max-bulk-len, which fits memory sizes.
    let offset = offset as usize;
    let db = ctx.db();
    if current.is_none() {
        let mut bytes = vec![0u8; offset];
        bytes.extend_from_slice(patch);
        let len = bytes.len();
        ctx.ks.set(db, key, Value::Str(StrValue::raw(bytes)))?;
        ctx.notify(notify::STRING, "setrange", key);
        return Ok(Reply::Integer(len_reply(len)));
    }
    let bytes = string_mut(ctx, key)?.bytes_mut();
    let end = offset + patch.len();
    if bytes.len() < end {
        bytes.resize(end, 0);
    }
    bytes[offset..end].copy_from_slice(patch);
    let n = len_reply(bytes.len());
    ctx.notify(notify::STRING, "setrange", key);
    Ok(Reply::Integer(n))
}

/// The length of the string at `key` (`None` when missing), or `WRONGTYPE`; looked up
/// as a write, so no keyspace hit or miss is counted.
fn read_string_len(ctx: &mut Ctx<'_>, key: &[u8]) -> OpResult<Option<usize>> {
    let db = ctx.db();
    match ctx.ks.get_mut(db, key)? {
        None => Ok(None),
        Some(v) => Ok(Some(v.as_str()?.len())),
    }
}

/// The string at a key the caller just found to hold one, for editing in place.
fn string_mut<'c>(ctx: &'c mut Ctx<'_>, key: &[u8]) -> OpResult<&'c mut StrValue> {
    let db = ctx.db();
    match ctx.ks.get_mut(db, key)? {
        Some(Value::Str(s)) => Ok(s),
        Some(_) => Err(OpError::WrongType),
        None => Err(OpError::custom("ERR internal error: string vanished")),
    }
}

#[cfg(test)]
mod tests {
    use super::clamp_range;

    #[test]
    fn clamping_matches_redis_7_0() {
        assert_eq!(clamp_range(0, 4, 11), Some((0, 4)));
        assert_eq!(clamp_range(-3, -1, 11), Some((8, 10)));
        assert_eq!(clamp_range(10, 100, 11), Some((10, 10)));
        assert_eq!(clamp_range(11, 100, 11), None);
        assert_eq!(clamp_range(5, 3, 11), None);
        assert_eq!(clamp_range(-100, -50, 11), Some((0, 0)));
        assert_eq!(clamp_range(3, -100, 11), None);
        assert_eq!(clamp_range(0, -100, 11), Some((0, 0)));
        assert_eq!(clamp_range(-1, 0, 0), None);
        assert_eq!(clamp_range(i64::MAX, i64::MIN, 11), None);
        assert_eq!(clamp_range(i64::MIN, i64::MAX, 3), Some((0, 2)));
    }
}
