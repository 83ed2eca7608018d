//! Reading lists: `LLEN`, `LRANGE`, `LINDEX` and `LPOS`.

use super::{ranged_count, read_list};
use crate::command::ctx::Ctx;
use crate::command::handlers::util::{int, is_kw};
use crate::error::{OpError, OpResult};
use crate::reply::Reply;

/// `LLEN key`: 0 for a missing key.
pub(super) fn llen(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let len = read_list(ctx, &argv[1])?.map_or(0, |l| l.len());
    Ok(Reply::Integer(len as i64))
}

/// `LRANGE key start stop`: the indices are parsed before the key is looked up.
pub(super) fn lrange(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let start = int(&argv[2])?;
    let stop = int(&argv[3])?;
    Ok(match read_list(ctx, &argv[1])? {
        Some(l) => Reply::bulks(l.range(start, stop)),
        None => Reply::Array(Vec::new()),
    })
}

/// `LINDEX key index`: the key is looked up first, so a missing key answers nil even
/// for an index that is not a number.
pub(super) fn lindex(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let Some(list) = read_list(ctx, &argv[1])? else {
        return Ok(Reply::Null);
    };
    let index = int(&argv[2])?;
    Ok(Reply::bulk_or_null(list.get(index)))
}

const RANK_ZERO: &str = "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list";

/// `LPOS key element [RANK rank] [COUNT num-matches] [MAXLEN len]`: options are
/// checked left to right before the key; without `COUNT` the reply is one index or
/// nil, with it an array (`COUNT 0` = every match).
pub(super) fn lpos(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let mut rank = 1i64;
    let mut count: Option<usize> = None;
    let mut maxlen = 0usize;
    let mut j = 3;
    while j < argv.len() {
        let Some(val) = argv.get(j + 1) else {
            return Err(OpError::Syntax);
        };
        let opt = &argv[j];
        if is_kw(opt, "rank") {
            rank = int(val)?;
            if rank == 0 {
                return Err(OpError::custom(RANK_ZERO));
            }
        } else if is_kw(opt, "count") {
            count = Some(ranged_count(val, 0, "ERR COUNT can't be negative")?);
        } else if is_kw(opt, "maxlen") {
            maxlen = ranged_count(val, 0, "ERR MAXLEN can't be negative")?;
        } else {
            return Err(OpError::Syntax);
        }
        j += 2;
    }
    let found = match read_list(ctx, &argv[1])? {
        Some(l) => l.positions(&argv[2], rank, count.unwrap_or(1), maxlen),
        None => Vec::new(),
    };
    let index = |i: usize| Reply::Integer(i as i64);
    Ok(match count {
        Some(_) => Reply::Array(found.into_iter().map(index).collect()),
        None => found.first().map_or(Reply::Null, |&i| index(i)),
    })
}
