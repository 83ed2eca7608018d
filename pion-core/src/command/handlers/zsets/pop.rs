//! Pops: `ZPOPMIN`, `ZPOPMAX` and the multi-key `ZMPOP`.

use super::write_zset;
use crate::command::ctx::Ctx;
use crate::command::handlers::util::{int, is_kw};
use crate::error::{OpError, OpResult};
use crate::reply::Reply;
use crate::value::zset::ScoredMember;
use crate::value::ZSetValue;

/// Removes up to `count` members from the low (`max == false`) or high end, in pop
/// order.
pub(super) fn pop_end(z: &mut ZSetValue, count: usize, max: bool) -> Vec<ScoredMember> {
    let len = z.len();
    let n = count.min(len);
    if max {
        let mut v = z.remove_range(len - n, len);
        v.reverse();
        v
    } else {
        z.remove_range(0, n)
    }
}

fn pairs(items: Vec<ScoredMember>) -> Reply {
    Reply::Pairs(
        items
            .into_iter()
            .map(|e| (Reply::Bulk(e.member), Reply::Double(e.score)))
            .collect(),
    )
}

fn zpop(ctx: &mut Ctx<'_>, argv: &[Vec<u8>], max: bool) -> OpResult<Reply> {
    if argv.len() > 3 {
        return Err(OpError::Syntax);
    }
    let count = match argv.get(2) {
        None => None,
        Some(a) => Some(
            crate::util::num::parse_i64(a)
                .and_then(|v| usize::try_from(v).ok())
                .ok_or_else(|| OpError::custom("ERR value is out of range, must be positive"))?,
        ),
    };
    let Some(z) = write_zset(ctx, &argv[1])? else {
        return Ok(Reply::Array(Vec::new()));
    };
    let popped = pop_end(z, count.unwrap_or(1), max);
    if !popped.is_empty() {
        let event = if max { "zpopmax" } else { "zpopmin" };
        ctx.notify(crate::pubsub::notify::ZSET, event, &argv[1]);
    }
    if count.is_some() {
        if popped.is_empty() {
            return Ok(Reply::Array(Vec::new()));
        }
        return Ok(pairs(popped));
    }
    // Without a count the reply is one flat member/score couple.
    Ok(Reply::Array(
        popped
            .into_iter()
            .flat_map(|e| [Reply::Bulk(e.member), Reply::Double(e.score)])
            .collect(),
    ))
}

/// `ZPOPMIN key [count]`.
pub(super) fn zpopmin(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    zpop(ctx, argv, false)
}

/// `ZPOPMAX key [count]`.
pub(super) fn zpopmax(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    zpop(ctx, argv, true)
}

/// `ZMPOP`'s numkeys: the same rule as `LMPOP`'s (positive, and MIN|MAX must follow).
fn zmpop_numkeys(argv: &[Vec<u8>]) -> OpResult<usize> {
    Ok(crate::command::handlers::lists::push_pop::mpop_numkeys_keys(argv, 1)?.len())
}

/// Key finder for `ZMPOP numkeys key [key ...] MIN|MAX [COUNT count]`.
pub(super) fn zmpop_keys(argv: &[Vec<u8>]) -> OpResult<Vec<usize>> {
    let n = zmpop_numkeys(argv)?;
    Ok((2..2 + n).collect())
}

/// `ZMPOP numkeys key [key ...] MIN|MAX [COUNT count]`.
pub(super) fn zmpop(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let n = zmpop_numkeys(argv)?;
    let where_at = 2 + n;
    let max = if is_kw(&argv[where_at], "max") {
        true
    } else if is_kw(&argv[where_at], "min") {
        false
    } else {
        return Err(OpError::Syntax);
    };
    let mut count = None;
    let mut j = where_at + 1;
    while j < argv.len() {
        if count.is_none() && is_kw(&argv[j], "count") && j + 1 < argv.len() {
            let c = int(&argv[j + 1])
                .ok()
                .filter(|c| *c > 0)
                .ok_or_else(|| OpError::custom("ERR count should be greater than 0"))?;
            count = Some(c as usize);
            j += 2;
        } else {
            return Err(OpError::Syntax);
        }
    }
    for key in &argv[2..where_at] {
        let Some(z) = write_zset(ctx, key)? else {
            continue;
        };
        if z.is_empty() {
            continue;
        }
        let popped = pop_end(z, count.unwrap_or(1), max);
        let event = if max { "zpopmax" } else { "zpopmin" };
        ctx.notify(crate::pubsub::notify::ZSET, event, key);
        // Unlike ZPOPMIN, ZMPOP nests its pairs in RESP2 too.
        let nested = popped
            .into_iter()
            .map(|e| Reply::Array(vec![Reply::Bulk(e.member), Reply::Double(e.score)]))
            .collect();
        return Ok(Reply::Array(vec![Reply::bulk(key), Reply::Array(nested)]));
    }
    Ok(Reply::NullArray)
}
