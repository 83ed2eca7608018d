//! Changing lists in place: `LSET`, `LINSERT`, `LREM` and `LTRIM`.

use super::write_list;
use crate::command::ctx::Ctx;
use crate::command::handlers::util::{int, is_kw};
use crate::error::{OpError, OpResult};
use crate::pubsub::notify;
use crate::reply::Reply;

/// `LSET key index element`: the key is looked up before the index is parsed.
pub(super) fn lset(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let list = write_list(ctx, &argv[1])?.ok_or(OpError::NoSuchKey)?;
    let index = int(&argv[2])?;
    if list.set(index, argv[3].clone()) {
        ctx.notify(notify::LIST, "lset", &argv[1]);
        Ok(Reply::ok())
    } else {
        Err(OpError::IndexOutOfRange)
    }
}

/// `LINSERT key BEFORE|AFTER pivot element`: the new length, 0 for a missing key, -1
/// when the pivot is not found.
pub(super) fn linsert(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let before = if is_kw(&argv[2], "before") {
        true
    } else if is_kw(&argv[2], "after") {
        false
    } else {
        return Err(OpError::Syntax);
    };
    let Some(list) = write_list(ctx, &argv[1])? else {
        return Ok(Reply::Integer(0));
    };
    let n = list
        .insert(&argv[3], before, argv[4].clone())
        .map_or(-1, |n| n as i64);
    if n > 0 {
        ctx.notify(notify::LIST, "linsert", &argv[1]);
    }
    Ok(Reply::Integer(n))
}

/// `LREM key count element`: how many were removed.
pub(super) fn lrem(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let count = int(&argv[2])?;
    let removed = write_list(ctx, &argv[1])?.map_or(0, |l| l.remove(count, &argv[3]));
    if removed > 0 {
        ctx.notify(notify::LIST, "lrem", &argv[1]);
    }
    Ok(Reply::Integer(removed as i64))
}

/// `LTRIM key start stop`: always `OK` once the arguments parse and the type fits.
pub(super) fn ltrim(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let start = int(&argv[2])?;
    let stop = int(&argv[3])?;
    if let Some(list) = write_list(ctx, &argv[1])? {
        list.trim(start, stop);
        ctx.notify(notify::LIST, "ltrim", &argv[1]);
    }
    Ok(Reply::ok())
}
