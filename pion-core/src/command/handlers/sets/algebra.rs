//! Set algebra over several keys: `SINTER`, `SUNION`, `SDIFF`, their `STORE` forms
//! and `SINTERCARD`.
//!
//! Every source key is type-checked before any work, as Redis does, so one wrong-typed
//! key fails the command even when another is missing. Results are built the way Redis
//! builds them, which clients observe: `SUNION`/`SDIFF` collect into a fresh set that
//! starts as an intset (integer results come back sorted), `SINTER` answers in the
//! order of its smallest input, and the `STORE` forms store a set whose encoding
//! (`OBJECT ENCODING`) follows from how it was built.

use super::{members_reply, peek_set, read_set};
use crate::command::ctx::Ctx;
use crate::command::handlers::util::is_kw;
use crate::error::{OpError, OpResult};
use crate::reply::Reply;
use crate::util::num::parse_i64;
use crate::value::{SetValue, Value};

/// Checks that every key is a set or missing; returns each one's size (`None` when
/// missing).
fn sizes(ctx: &mut Ctx<'_>, keys: &[Vec<u8>]) -> OpResult<Vec<Option<usize>>> {
    keys.iter()
        .map(|k| Ok(read_set(ctx, k)?.map(SetValue::len)))
        .collect()
}

/// The members of the intersection of `keys`, in the order of the smallest set.
fn intersection(ctx: &mut Ctx<'_>, keys: &[Vec<u8>]) -> OpResult<Vec<Vec<u8>>> {
    let sizes = sizes(ctx, keys)?;
    let Some(sizes) = sizes.into_iter().collect::<Option<Vec<usize>>>() else {
        return Ok(Vec::new());
    };
    // Smallest first; the sort is stable, as the C library's merge sort is.
    let mut order: Vec<usize> = (0..keys.len()).collect();
    order.sort_by_key(|&i| sizes[i]);
    let mut candidates = match peek_set(ctx, &keys[order[0]])? {
        Some(s) => s.members(),
        None => return Ok(Vec::new()),
    };
    for &i in &order[1..] {
        if candidates.is_empty() {
            break;
        }
        let Some(set) = peek_set(ctx, &keys[i])? else {
            return Ok(Vec::new());
        };
        candidates.retain(|m| set.contains(m));
    }
    Ok(candidates)
}

/// The union of `keys`, built into a new set that starts as an intset.
fn union(ctx: &mut Ctx<'_>, keys: &[Vec<u8>]) -> OpResult<SetValue> {
    sizes(ctx, keys)?;
    let limits = ctx.limits();
    let mut out = SetValue::new();
    for k in keys {
        if let Some(set) = peek_set(ctx, k)? {
            set.for_each(|m| {
                out.insert(m, &limits);
            });
        }
    }
    Ok(out)
}

/// The first set minus the others, built into a new set that starts as an intset.
///
/// Redis picks one of two algorithms by estimated work, and the choice shows in the
/// result's encoding: filtering the first set's members only ever adds survivors,
/// while copying the first set and removing the others' members converts the result
/// as soon as the copy would, even if the offending members are removed later.
fn difference(ctx: &mut Ctx<'_>, keys: &[Vec<u8>]) -> OpResult<SetValue> {
    let sizes = sizes(ctx, keys)?;
    let limits = ctx.limits();
    let mut out = SetValue::new();
    let Some(first) = sizes[0] else {
        return Ok(out);
    };
    let present = sizes.iter().flatten();
    let filter_work = present.clone().count() * first / 2;
    let copy_work: usize = present.sum();
    if filter_work <= copy_work {
        let Some(set) = peek_set(ctx, &keys[0])? else {
            return Ok(out);
        };
        let mut candidates = set.members();
        for k in &keys[1..] {
            if let Some(set) = peek_set(ctx, k)? {
                candidates.retain(|m| !set.contains(m));
            }
        }
        for m in &candidates {
            out.insert(m, &limits);
        }
    } else {
        if let Some(set) = peek_set(ctx, &keys[0])? {
            set.for_each(|m| {
                out.insert(m, &limits);
            });
        }
        for k in &keys[1..] {
            if out.is_empty() {
                break;
            }
            if let Some(set) = peek_set(ctx, k)? {
                set.for_each(|m| {
                    out.remove(m);
                });
            }
        }
    }
    Ok(out)
}

/// Stores `result` at `dest` (deleting `dest` when the result is empty) and replies
/// with its size.
fn store(ctx: &mut Ctx<'_>, dest: &[u8], result: SetValue, event: &str) -> OpResult<Reply> {
    let db = ctx.db();
    let len = result.len();
    if len == 0 {
        if ctx.ks.remove(db, dest)?.is_some() {
            ctx.notify(crate::pubsub::notify::GENERIC, "del", dest);
        }
    } else {
        ctx.ks.set(db, dest, Value::Set(result))?;
        ctx.notify(crate::pubsub::notify::SET, event, dest);
    }
    Ok(Reply::Integer(len as i64))
}

pub(super) fn sinter(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let members = intersection(ctx, &argv[1..])?;
    Ok(Reply::Set(members.into_iter().map(Reply::Bulk).collect()))
}

pub(super) fn sinterstore(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let members = intersection(ctx, &argv[2..])?;
    let limits = ctx.limits();
    let mut result = SetValue::new();
    for m in &members {
        result.insert(m, &limits);
    }
    store(ctx, &argv[1], result, "sinterstore")
}

pub(super) fn sunion(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let result = union(ctx, &argv[1..])?;
    Ok(members_reply(Some(&result)))
}

pub(super) fn sunionstore(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let result = union(ctx, &argv[2..])?;
    store(ctx, &argv[1], result, "sunionstore")
}

pub(super) fn sdiff(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let result = difference(ctx, &argv[1..])?;
    Ok(members_reply(Some(&result)))
}

pub(super) fn sdiffstore(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let result = difference(ctx, &argv[2..])?;
    store(ctx, &argv[1], result, "sdiffstore")
}

/// `SINTERCARD numkeys key … [LIMIT n]`: the number of keys, with Redis's errors.
fn numkeys(argv: &[Vec<u8>]) -> OpResult<usize> {
    let bad = || OpError::custom("ERR numkeys should be greater than 0");
    let n = argv.get(1).and_then(|a| parse_i64(a)).ok_or_else(bad)?;
    let n = usize::try_from(n).ok().filter(|&n| n > 0).ok_or_else(bad)?;
    if n > argv.len().saturating_sub(2) {
        return Err(OpError::custom(
            "ERR Number of keys can't be greater than number of args",
        ));
    }
    Ok(n)
}

/// Key finder for `SINTERCARD`: the `numkeys` keys after the count.
pub(super) fn sintercard_keys(argv: &[Vec<u8>]) -> OpResult<Vec<usize>> {
    Ok((2..2 + numkeys(argv)?).collect())
}

pub(super) fn sintercard(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let n = numkeys(argv)?;
    let mut limit = 0usize;
    let mut j = 2 + n;
    while j < argv.len() {
        match argv.get(j + 1) {
            Some(value) if is_kw(&argv[j], "limit") => {
                let negative = || OpError::custom("ERR LIMIT can't be negative");
                let v = parse_i64(value).ok_or_else(negative)?;
                limit = usize::try_from(v).map_err(|_| negative())?;
                j += 2;
            }
            _ => return Err(OpError::Syntax),
        }
    }
    let count = intersection(ctx, &argv[2..2 + n])?.len();
    let count = if limit == 0 { count } else { count.min(limit) };
    Ok(Reply::Integer(count as i64))
}
