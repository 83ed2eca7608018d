//! The `ZRANGE` family (by rank, score or lex, forward or reversed, with `LIMIT`),
//! `ZRANGESTORE`, and the `ZREMRANGEBY*` removals.
//!
//! All range commands share one parser, as in Redis, so that each legacy form
//! (`ZREVRANGEBYSCORE` …) accepts exactly the options and gives exactly the errors of
//! its modern `ZRANGE` spelling.

use super::parse::{LexRange, ScoreRange};
use super::{members_reply, read_zset, write_zset};
use crate::command::ctx::Ctx;
use crate::command::handlers::util::{int, is_kw};
use crate::error::{OpError, OpResult};
use crate::reply::Reply;
use crate::value::zset::{ScoredMember, ZEntry};
use crate::value::{Value, ZSetValue};

/// How the two bounds of a range are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Rank,
    Score,
    Lex,
}

/// Which command is parsing: fixes what the options may change.
#[derive(Debug, Clone, Copy)]
struct Form {
    /// The kind, when the command fixes it (`ZRANGEBYSCORE`); `None` for `ZRANGE`.
    kind: Option<Kind>,
    /// Reversed by the command name (`ZREVRANGE…`).
    rev: bool,
    /// Whether `WITHSCORES` is accepted (not for `ZRANGESTORE`).
    scores_allowed: bool,
}

impl Form {
    const fn new(kind: Option<Kind>, rev: bool, scores_allowed: bool) -> Form {
        Form {
            kind,
            rev,
            scores_allowed,
        }
    }
}

/// A parsed range request.
#[derive(Debug, Clone)]
struct Request {
    rev: bool,
    withscores: bool,
    /// `LIMIT offset count`: offset and count (negative count = no limit).
    limit: Option<(i64, i64)>,
    bounds: Bounds,
}

#[derive(Debug, Clone)]
enum Bounds {
    Rank(i64, i64),
    Score(ScoreRange),
    Lex(LexRange),
}

/// Parses `min max [options…]` starting at `argv[first]` (the first bound).
fn parse_request(argv: &[Vec<u8>], first: usize, form: Form) -> OpResult<Request> {
    let mut kind = form.kind;
    let mut rev = form.rev;
    let mut rev_given = false;
    let mut withscores = false;
    let mut limit = None;
    let mut j = first + 2;
    while j < argv.len() {
        let opt = &argv[j];
        let left = argv.len() - j - 1;
        if form.scores_allowed && is_kw(opt, "withscores") {
            withscores = true;
        } else if is_kw(opt, "limit") && left >= 2 {
            limit = Some((int(&argv[j + 1])?, int(&argv[j + 2])?));
            j += 2;
        } else if form.kind.is_none() && kind.is_none() && is_kw(opt, "byscore") {
            kind = Some(Kind::Score);
        } else if form.kind.is_none() && kind.is_none() && is_kw(opt, "bylex") {
            kind = Some(Kind::Lex);
        } else if form.kind.is_none() && !rev_given && is_kw(opt, "rev") {
            rev = true;
            rev_given = true;
        } else {
            return Err(OpError::Syntax);
        }
        j += 1;
    }
    let kind = kind.unwrap_or(Kind::Rank);
    if limit.is_some() && kind == Kind::Rank {
        return Err(OpError::custom(
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
        ));
    }
    if withscores && kind == Kind::Lex {
        return Err(OpError::custom(
            "ERR syntax error, WITHSCORES not supported in combination with BYLEX",
        ));
    }
    // Reversed score and lex ranges name the upper bound first.
    let (lo, hi) = if rev && kind != Kind::Rank {
        (&argv[first + 1], &argv[first])
    } else {
        (&argv[first], &argv[first + 1])
    };
    let bounds = match kind {
        Kind::Rank => Bounds::Rank(int(lo)?, int(hi)?),
        Kind::Score => Bounds::Score(ScoreRange::parse(lo, hi)?),
        Kind::Lex => Bounds::Lex(LexRange::parse(lo, hi)?),
    };
    Ok(Request {
        rev,
        withscores,
        limit,
        bounds,
    })
}

/// The ascending rank interval `start..end` a rank pair selects, Redis-style
/// (negative indexes count from the end; in reverse mode they index the reversed
/// order).
fn rank_interval(len: usize, start: i64, stop: i64, rev: bool) -> (usize, usize) {
    let n = len as i64;
    let mut start = if start < 0 { start + n } else { start };
    let mut stop = if stop < 0 { stop + n } else { stop };
    start = start.max(0);
    if start > stop || start >= n {
        return (0, 0);
    }
    stop = stop.min(n - 1);
    if rev {
        ((n - 1 - stop) as usize, (n - start) as usize)
    } else {
        (start as usize, (stop + 1) as usize)
    }
}

/// The ascending rank interval of a score or lex range.
fn bound_interval(z: &ZSetValue, bounds: &Bounds) -> (usize, usize) {
    let (start, end) = match bounds {
        Bounds::Rank(..) => (0, 0),
        Bounds::Score(r) => (
            z.partition_point(|e| r.below(e)),
            z.partition_point(|e| r.not_above(e)),
        ),
        Bounds::Lex(r) => (
            z.partition_point(|e| r.below(e)),
            z.partition_point(|e| r.not_above(e)),
        ),
    };
    (start, end.max(start))
}

/// The entries a request selects, in reply order.
fn select<'z>(z: &'z ZSetValue, req: &Request) -> Vec<ZEntry<'z>> {
    let (start, end) = match req.bounds {
        Bounds::Rank(a, b) => rank_interval(z.len(), a, b, req.rev),
        _ => bound_interval(z, &req.bounds),
    };
    let (skip, take) = match req.limit {
        None => (0, usize::MAX),
        Some((offset, _)) if offset < 0 => return Vec::new(),
        Some((offset, count)) => (
            usize::try_from(offset).unwrap_or(usize::MAX),
            usize::try_from(count).unwrap_or(usize::MAX),
        ),
    };
    // Skipping by rank is O(log n): shrink the interval instead of walking it.
    let avail = end - start;
    let skip = skip.min(avail);
    let take = take.min(avail - skip);
    if req.rev {
        z.range(start, end - skip).rev().take(take).collect()
    } else {
        z.range(start + skip, start + skip + take).collect()
    }
}

fn range_command(ctx: &mut Ctx<'_>, argv: &[Vec<u8>], form: Form) -> OpResult<Reply> {
    let req = parse_request(argv, 2, form)?;
    let Some(z) = read_zset(ctx, &argv[1])? else {
        return Ok(Reply::Array(Vec::new()));
    };
    Ok(members_reply(select(z, &req).into_iter(), req.withscores))
}

/// `ZRANGE key start stop [BYSCORE|BYLEX] [REV] [LIMIT offset count] [WITHSCORES]`.
pub(super) fn zrange(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    range_command(ctx, argv, Form::new(None, false, true))
}

/// `ZREVRANGE key start stop [WITHSCORES]`.
pub(super) fn zrevrange(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    range_command(ctx, argv, Form::new(Some(Kind::Rank), true, true))
}

/// `ZRANGEBYSCORE key min max [WITHSCORES] [LIMIT offset count]`.
pub(super) fn zrangebyscore(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    range_command(ctx, argv, Form::new(Some(Kind::Score), false, true))
}

/// `ZREVRANGEBYSCORE key max min [WITHSCORES] [LIMIT offset count]`.
pub(super) fn zrevrangebyscore(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    range_command(ctx, argv, Form::new(Some(Kind::Score), true, true))
}

/// `ZRANGEBYLEX key min max [LIMIT offset count]`.
pub(super) fn zrangebylex(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    range_command(ctx, argv, Form::new(Some(Kind::Lex), false, true))
}

/// `ZREVRANGEBYLEX key max min [LIMIT offset count]`.
pub(super) fn zrevrangebylex(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    range_command(ctx, argv, Form::new(Some(Kind::Lex), true, true))
}

/// `ZRANGESTORE dst src min max [BYSCORE|BYLEX] [REV] [LIMIT offset count]`.
pub(super) fn zrangestore(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let form = Form {
        kind: None,
        rev: false,
        scores_allowed: false,
    };
    let req = parse_request(argv, 3, form)?;
    let limits = ctx.limits();
    let picked: Vec<ScoredMember> = match read_zset(ctx, &argv[2])? {
        None => Vec::new(),
        Some(z) => select(z, &req).into_iter().map(ZEntry::to_owned).collect(),
    };
    let db = ctx.db();
    let dst = &argv[1];
    if picked.is_empty() {
        if ctx.ks.remove(db, dst)?.is_some() {
            ctx.notify(crate::pubsub::notify::GENERIC, "del", dst);
        }
        return Ok(Reply::Integer(0));
    }
    let mut out = ZSetValue::with_hint(picked.len(), 0, &limits);
    for e in &picked {
        out.insert(&e.member, e.score, &limits);
    }
    let n = out.len();
    ctx.ks.set(db, dst, Value::ZSet(out))?;
    ctx.notify(crate::pubsub::notify::ZSET, "zrangestore", dst);
    Ok(Reply::Integer(n as i64))
}

/// Removes the ascending rank interval that `pick` chooses; replies with the count.
fn remove_interval(
    ctx: &mut Ctx<'_>,
    key: &[u8],
    event: &str,
    pick: impl FnOnce(&ZSetValue) -> (usize, usize),
) -> OpResult<Reply> {
    let Some(z) = write_zset(ctx, key)? else {
        return Ok(Reply::Integer(0));
    };
    let (start, end) = pick(z);
    let removed = z.remove_range(start, end).len();
    if removed > 0 {
        ctx.notify(crate::pubsub::notify::ZSET, event, key);
    }
    Ok(Reply::Integer(removed as i64))
}

/// `ZREMRANGEBYRANK key start stop`.
pub(super) fn zremrangebyrank(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let (a, b) = (int(&argv[2])?, int(&argv[3])?);
    remove_interval(ctx, &argv[1], "zremrangebyrank", |z| {
        rank_interval(z.len(), a, b, false)
    })
}

/// `ZREMRANGEBYSCORE key min max`.
pub(super) fn zremrangebyscore(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let bounds = Bounds::Score(ScoreRange::parse(&argv[2], &argv[3])?);
    remove_interval(ctx, &argv[1], "zremrangebyscore", |z| {
        bound_interval(z, &bounds)
    })
}

/// `ZREMRANGEBYLEX key min max`.
pub(super) fn zremrangebylex(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let bounds = Bounds::Lex(LexRange::parse(&argv[2], &argv[3])?);
    remove_interval(ctx, &argv[1], "zremrangebylex", |z| {
        bound_interval(z, &bounds)
    })
}
