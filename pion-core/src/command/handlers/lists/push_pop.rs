//! Adding and removing at the ends of lists: pushes, pops, the two-key moves
//! (`LMOVE`, `RPOPLPUSH`) and the multi-key `LMPOP`.

use super::{list_or_create, parse_end, ranged_count, write_list};
use crate::command::ctx::Ctx;
use crate::command::handlers::util::is_kw;
use crate::error::{OpError, OpResult};
use crate::pubsub::notify;
use crate::reply::Reply;
use crate::value::list::End;

/// `LPUSH`/`RPUSH`/`LPUSHX`/`RPUSHX`: pushes every value in argument order; the `X`
/// forms do nothing (and reply 0) when the key is missing.
fn push(ctx: &mut Ctx<'_>, argv: &[Vec<u8>], end: End, only_existing: bool) -> OpResult<Reply> {
    let key = &argv[1];
    let list = if only_existing {
        match write_list(ctx, key)? {
            Some(l) => l,
            None => return Ok(Reply::Integer(0)),
        }
    } else {
        list_or_create(ctx, key)?
    };
    for v in &argv[2..] {
        list.push(end, v.clone());
    }
    let len = list.len() as i64;
    ctx.notify(notify::LIST, push_event(end), key);
    Ok(Reply::Integer(len))
}

/// `LPUSH key element …`.
pub(super) fn lpush(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    push(ctx, argv, End::Left, false)
}

/// `RPUSH key element …`.
pub(super) fn rpush(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    push(ctx, argv, End::Right, false)
}

/// `LPUSHX key element …`.
pub(super) fn lpushx(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    push(ctx, argv, End::Left, true)
}

/// `RPUSHX key element …`.
pub(super) fn rpushx(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    push(ctx, argv, End::Right, true)
}

/// `LPOP`/`RPOP key [count]`: without a count, one bulk (nil when missing); with a
/// count, an array (nil array when missing, empty for count 0). The count is checked
/// before the key.
fn pop(ctx: &mut Ctx<'_>, argv: &[Vec<u8>], end: End, name: &str) -> OpResult<Reply> {
    if argv.len() > 3 {
        return Err(OpError::WrongArity(name.to_string()));
    }
    let count = match argv.get(2) {
        Some(arg) => Some(ranged_count(
            arg,
            0,
            "ERR value is out of range, must be positive",
        )?),
        None => None,
    };
    let Some(list) = write_list(ctx, &argv[1])? else {
        return Ok(match count {
            Some(_) => Reply::NullArray,
            None => Reply::Null,
        });
    };
    let reply = match count {
        Some(n) => {
            let popped = list.pop_many(end, n);
            if !popped.is_empty() {
                ctx.notify(notify::LIST, pop_event(end), &argv[1]);
            }
            Reply::bulks(popped)
        }
        None => {
            let popped = list.pop(end);
            if popped.is_some() {
                ctx.notify(notify::LIST, pop_event(end), &argv[1]);
            }
            Reply::bulk_or_null(popped)
        }
    };
    Ok(reply)
}

/// The keyspace event of a push at `end`.
fn push_event(end: End) -> &'static str {
    match end {
        End::Left => "lpush",
        End::Right => "rpush",
    }
}

/// The keyspace event of a pop at `end`.
fn pop_event(end: End) -> &'static str {
    match end {
        End::Left => "lpop",
        End::Right => "rpop",
    }
}

/// `LPOP key [count]`.
pub(super) fn lpop(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    pop(ctx, argv, End::Left, "lpop")
}

/// `RPOP key [count]`.
pub(super) fn rpop(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    pop(ctx, argv, End::Right, "rpop")
}

/// Pops one element from `src` at `from` and pushes it onto `dst` at `to`. A missing
/// source gives nil without looking at the destination; a destination of another
/// type is refused before anything is popped. `src` and `dst` may be the same key
/// (rotation).
pub(super) fn move_one(
    ctx: &mut Ctx<'_>,
    src: &[u8],
    dst: &[u8],
    from: End,
    to: End,
) -> OpResult<Reply> {
    let db = ctx.db();
    if write_list(ctx, src)?.is_none() {
        return Ok(Reply::Null);
    }
    if let Some(v) = ctx.ks.get_mut(db, dst)? {
        v.as_list()?;
    }
    let Some(elem) = write_list(ctx, src)?.and_then(|l| l.pop(from)) else {
        return Ok(Reply::Null);
    };
    list_or_create(ctx, dst)?.push(to, elem.clone());
    // Redis reports the push before the pop.
    ctx.notify(notify::LIST, push_event(to), dst);
    ctx.notify(notify::LIST, pop_event(from), src);
    Ok(Reply::Bulk(elem))
}

/// `LMOVE source destination LEFT|RIGHT LEFT|RIGHT`: both ends are parsed
/// before any key is looked up.
pub(super) fn lmove(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let from = parse_end(&argv[3])?;
    let to = parse_end(&argv[4])?;
    move_one(ctx, &argv[1], &argv[2], from, to)
}

/// `RPOPLPUSH source destination`: `LMOVE … RIGHT LEFT`.
pub(super) fn rpoplpush(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    move_one(ctx, &argv[1], &argv[2], End::Right, End::Left)
}

/// The key positions of a `numkeys key …` command whose numkeys sits at
/// `numkeys_at` and which needs at least one more argument after its keys (the
/// direction of `LMPOP`/`BLMPOP`). Redis's errors: numkeys not in `1..` gives
/// `numkeys should be greater than 0`, too few arguments for it a syntax error.
pub(crate) fn mpop_numkeys_keys(argv: &[Vec<u8>], numkeys_at: usize) -> OpResult<Vec<usize>> {
    let n = argv
        .get(numkeys_at)
        .and_then(|a| crate::util::num::parse_i64(a))
        .filter(|&n| n > 0)
        .ok_or_else(|| OpError::custom("ERR numkeys should be greater than 0"))?;
    let room = argv.len().saturating_sub(numkeys_at + 2);
    let n = usize::try_from(n).unwrap_or(usize::MAX);
    if n > room {
        return Err(OpError::Syntax);
    }
    let first = numkeys_at + 1;
    Ok((first..first + n).collect())
}

/// The key finder of `LMPOP numkeys key …`.
pub(super) fn lmpop_keys(argv: &[Vec<u8>]) -> OpResult<Vec<usize>> {
    mpop_numkeys_keys(argv, 1)
}

/// The parsed tail of `LMPOP`/`BLMPOP`: which keys, which end, how many.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct MpopArgs {
    /// Argument positions of the keys, in order.
    pub keys: Vec<usize>,
    /// The end to pop from.
    pub end: End,
    /// At most this many elements (1 without `COUNT`).
    pub count: usize,
}

/// Parses `numkeys key … LEFT|RIGHT [COUNT n]` with numkeys at `numkeys_at`, checking
/// in Redis's order: numkeys, direction, then options left to right.
pub(crate) fn parse_mpop(argv: &[Vec<u8>], numkeys_at: usize) -> OpResult<MpopArgs> {
    let keys = mpop_numkeys_keys(argv, numkeys_at)?;
    let dir_at = numkeys_at + 1 + keys.len();
    let end = parse_end(argv.get(dir_at).ok_or(OpError::Syntax)?)?;
    let mut count = None;
    let mut j = dir_at + 1;
    while j < argv.len() {
        match argv.get(j + 1) {
            Some(n) if is_kw(&argv[j], "count") && count.is_none() => {
                count = Some(ranged_count(n, 1, "ERR count should be greater than 0")?);
                j += 2;
            }
            _ => return Err(OpError::Syntax),
        }
    }
    Ok(MpopArgs {
        keys,
        end,
        count: count.unwrap_or(1),
    })
}

/// Pops from the first non-empty list among the keys: `[key, [elements…]]`, or `None`
/// when every key is missing. A key of another type met before a list is `WRONGTYPE`.
pub(crate) fn mpop(
    ctx: &mut Ctx<'_>,
    argv: &[Vec<u8>],
    args: &MpopArgs,
) -> OpResult<Option<Reply>> {
    for &i in &args.keys {
        let key = &argv[i];
        let Some(list) = write_list(ctx, key)? else {
            continue;
        };
        if list.is_empty() {
            continue;
        }
        let popped = list.pop_many(args.end, args.count);
        ctx.notify(notify::LIST, pop_event(args.end), key);
        return Ok(Some(Reply::Array(vec![
            Reply::bulk(key),
            Reply::bulks(popped),
        ])));
    }
    Ok(None)
}

/// `LMPOP numkeys key … LEFT|RIGHT [COUNT count]`: `[key, [elements…]]`, or the
/// nil array when every key is missing.
pub(super) fn lmpop(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let args = parse_mpop(argv, 1)?;
    Ok(mpop(ctx, argv, &args)?.unwrap_or(Reply::NullArray))
}
