//! Single-key sorted-set reads and writes: `ZADD`, `ZINCRBY`, `ZREM`, the score and
//! rank lookups, the counts, `ZRANDMEMBER` and `ZSCAN`.

use rand::Rng;

use super::parse::{score_arg, LexRange, ScoreRange};
use super::{read_zset, write_zset};
use crate::command::ctx::Ctx;
use crate::command::handlers::hashes::scan::ScanOptions;
use crate::command::handlers::util::{int, is_kw};
use crate::error::{OpError, OpResult};
use crate::reply::Reply;
use crate::util::num::fmt_g17;
use crate::value::{Value, ZSetValue};

fn nan_error() -> OpError {
    OpError::custom("ERR resulting score is not a number (NaN)")
}

/// The options of one `ZADD`.
#[derive(Debug, Clone, Copy, Default)]
struct AddFlags {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
    ch: bool,
    incr: bool,
}

/// What happened to one member in `ZADD`.
enum AddOutcome {
    Added(f64),
    Updated(f64),
    Unchanged(f64),
    Skipped,
}

/// Applies one score to one member under `ZADD`'s rules.
fn add_one(
    z: &mut ZSetValue,
    member: &[u8],
    score: f64,
    f: AddFlags,
    limits: &crate::value::EncodingLimits,
) -> OpResult<AddOutcome> {
    match z.score(member) {
        Some(cur) => {
            if f.nx {
                return Ok(AddOutcome::Skipped);
            }
            let new = if f.incr { cur + score } else { score };
            if new.is_nan() {
                return Err(nan_error());
            }
            if (f.gt && new <= cur) || (f.lt && new >= cur) {
                return Ok(AddOutcome::Skipped);
            }
            if new == cur {
                return Ok(AddOutcome::Unchanged(new));
            }
            z.insert(member, new, limits);
            Ok(AddOutcome::Updated(new))
        }
        None => {
            if f.xx {
                return Ok(AddOutcome::Skipped);
            }
            z.insert(member, score, limits);
            Ok(AddOutcome::Added(score))
        }
    }
}

/// `ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member [score member ...]`.
pub(crate) fn zadd(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let mut f = AddFlags::default();
    let mut j = 2;
    while let Some(opt) = argv.get(j) {
        match opt.to_ascii_lowercase().as_slice() {
            b"nx" => f.nx = true,
            b"xx" => f.xx = true,
            b"gt" => f.gt = true,
            b"lt" => f.lt = true,
            b"ch" => f.ch = true,
            b"incr" => f.incr = true,
            _ => break,
        }
        j += 1;
    }
    let pairs = &argv[j..];
    if pairs.is_empty() || !pairs.len().is_multiple_of(2) {
        return Err(OpError::Syntax);
    }
    if f.nx && f.xx {
        return Err(OpError::custom(
            "ERR XX and NX options at the same time are not compatible",
        ));
    }
    if (f.nx && (f.gt || f.lt)) || (f.gt && f.lt) {
        return Err(OpError::custom(
            "ERR GT, LT, and/or NX options at the same time are not compatible",
        ));
    }
    if f.incr && pairs.len() > 2 {
        return Err(OpError::custom(
            "ERR INCR option supports a single increment-element pair",
        ));
    }
    let scores = pairs
        .chunks(2)
        .map(|p| score_arg(&p[0]))
        .collect::<OpResult<Vec<f64>>>()?;
    let limits = ctx.limits();
    let key = &argv[1];
    if write_zset(ctx, key)?.is_none() {
        if f.xx {
            return Ok(if f.incr {
                Reply::Null
            } else {
                Reply::Integer(0)
            });
        }
        // Redis 7.0 starts a listpack whatever the number of pairs (129 copies of one
        // pair stay a listpack); the inserts below convert it when needed.
        let db = ctx.db();
        let fresh = ZSetValue::with_hint(1, 0, &limits);
        ctx.ks.set(db, key, Value::ZSet(fresh))?;
    }
    let Some(z) = write_zset(ctx, key)? else {
        return Err(OpError::custom("ERR internal error: sorted set vanished"));
    };
    let (mut added, mut updated) = (0i64, 0i64);
    let mut last = None;
    for (pair, score) in pairs.chunks(2).zip(scores) {
        match add_one(z, &pair[1], score, f, &limits)? {
            AddOutcome::Added(s) => {
                added += 1;
                last = Some(s);
            }
            AddOutcome::Updated(s) => {
                updated += 1;
                last = Some(s);
            }
            AddOutcome::Unchanged(s) => last = Some(s),
            AddOutcome::Skipped => last = None,
        }
    }
    if added + updated > 0 {
        let event = if f.incr { "zincr" } else { "zadd" };
        ctx.notify(crate::pubsub::notify::ZSET, event, key);
    } else {
        // Nothing changed: as in Redis, no watcher is told and nothing is logged.
        ctx.effect = crate::command::ctx::Effect::Nothing;
    }
    if f.incr {
        return Ok(last.map_or(Reply::Null, Reply::Double));
    }
    Ok(Reply::Integer(if f.ch { added + updated } else { added }))
}

/// `ZINCRBY key increment member`.
pub(super) fn zincrby(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let incr = score_arg(&argv[2])?;
    let limits = ctx.limits();
    let key = &argv[1];
    if write_zset(ctx, key)?.is_none() {
        let db = ctx.db();
        let fresh = ZSetValue::with_hint(1, argv[3].len(), &limits);
        ctx.ks.set(db, key, Value::ZSet(fresh))?;
    }
    let Some(z) = write_zset(ctx, key)? else {
        return Err(OpError::custom("ERR internal error: sorted set vanished"));
    };
    let f = AddFlags {
        incr: true,
        ..AddFlags::default()
    };
    let outcome = add_one(z, &argv[3], incr, f, &limits)?;
    ctx.notify(crate::pubsub::notify::ZSET, "zincr", key);
    match outcome {
        AddOutcome::Added(s) | AddOutcome::Updated(s) | AddOutcome::Unchanged(s) => {
            Ok(Reply::Double(s))
        }
        AddOutcome::Skipped => Ok(Reply::Null),
    }
}

/// `ZREM key member [member ...]`.
pub(super) fn zrem(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let Some(z) = write_zset(ctx, &argv[1])? else {
        return Ok(Reply::Integer(0));
    };
    let removed = argv[2..].iter().filter(|m| z.remove(m).is_some()).count();
    if removed > 0 {
        ctx.notify(crate::pubsub::notify::ZSET, "zrem", &argv[1]);
    }
    Ok(Reply::Integer(removed as i64))
}

/// `ZCARD key`.
pub(super) fn zcard(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let n = read_zset(ctx, &argv[1])?.map_or(0, ZSetValue::len);
    Ok(Reply::Integer(n as i64))
}

/// `ZSCORE key member`.
pub(super) fn zscore(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let score = read_zset(ctx, &argv[1])?.and_then(|z| z.score(&argv[2]));
    Ok(score.map_or(Reply::Null, Reply::Double))
}

/// `ZMSCORE key member [member ...]`.
pub(super) fn zmscore(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let z = read_zset(ctx, &argv[1])?;
    Ok(Reply::Array(
        argv[2..]
            .iter()
            .map(|m| {
                z.and_then(|z| z.score(m))
                    .map_or(Reply::Null, Reply::Double)
            })
            .collect(),
    ))
}

fn rank_reply(ctx: &mut Ctx<'_>, argv: &[Vec<u8>], reverse: bool) -> OpResult<Reply> {
    let Some(z) = read_zset(ctx, &argv[1])? else {
        return Ok(Reply::Null);
    };
    Ok(match z.rank(&argv[2]) {
        None => Reply::Null,
        Some(r) if reverse => Reply::Integer((z.len() - 1 - r) as i64),
        Some(r) => Reply::Integer(r as i64),
    })
}

/// `ZRANK key member`.
pub(super) fn zrank(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    rank_reply(ctx, argv, false)
}

/// `ZREVRANK key member`.
pub(super) fn zrevrank(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    rank_reply(ctx, argv, true)
}

/// `ZCOUNT key min max`.
pub(super) fn zcount(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let range = ScoreRange::parse(&argv[2], &argv[3])?;
    let Some(z) = read_zset(ctx, &argv[1])? else {
        return Ok(Reply::Integer(0));
    };
    let start = z.partition_point(|e| range.below(e));
    let end = z.partition_point(|e| range.not_above(e));
    Ok(Reply::Integer(end.saturating_sub(start) as i64))
}

/// `ZLEXCOUNT key min max`.
pub(super) fn zlexcount(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let range = LexRange::parse(&argv[2], &argv[3])?;
    let Some(z) = read_zset(ctx, &argv[1])? else {
        return Ok(Reply::Integer(0));
    };
    let start = z.partition_point(|e| range.below(e));
    let end = z.partition_point(|e| range.not_above(e));
    Ok(Reply::Integer(end.saturating_sub(start) as i64))
}

/// The most picks a negative `ZRANDMEMBER` count may ask for. Redis streams any
/// count until memory runs out; a reply is built in memory here, so larger requests
/// are refused instead of exhausting it.
const MAX_REPEATED_PICKS: u64 = 1 << 26;

/// `ZRANDMEMBER key [count [WITHSCORES]]`.
pub(super) fn zrandmember(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    if argv.len() == 2 {
        let mut rng = ctx.client.rng.clone();
        let pick = read_zset(ctx, &argv[1])?.and_then(|z| {
            let i = rng.gen_range(0..z.len().max(1));
            z.get_by_rank(i).map(|e| Reply::bulk(e.member))
        });
        ctx.client.rng = rng;
        return Ok(pick.unwrap_or(Reply::Null));
    }
    let count = int(&argv[2])?;
    let withscores = match argv.get(3) {
        None => false,
        Some(a) if argv.len() == 4 && is_kw(a, "withscores") => true,
        Some(_) => return Err(OpError::Syntax),
    };
    if count == i64::MIN {
        return Err(OpError::custom(
            "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807",
        ));
    }
    if withscores && count < -(i64::MAX / 2) {
        return Err(OpError::custom("ERR value is out of range"));
    }
    let mut rng = ctx.client.rng.clone();
    let Some(z) = read_zset(ctx, &argv[1])? else {
        return Ok(Reply::Array(Vec::new()));
    };
    if count < 0 && !z.is_empty() && count.unsigned_abs() > MAX_REPEATED_PICKS {
        return Err(OpError::custom("ERR value is out of range"));
    }
    let len = z.len();
    let picks: Vec<usize> = if count == 0 || len == 0 {
        Vec::new()
    } else if count < 0 {
        // Repetitions allowed: |count| independent picks.
        (0..count.unsigned_abs())
            .map(|_| rng.gen_range(0..len))
            .collect()
    } else if count as u64 >= len as u64 {
        // The whole set, highest rank first, as Redis replies.
        (0..len).rev().collect()
    } else {
        rand::seq::index::sample(&mut rng, len, count as usize).into_vec()
    };
    let items = picks.into_iter().filter_map(|i| z.get_by_rank(i));
    let reply = super::members_reply(items, withscores);
    ctx.client.rng = rng;
    Ok(reply)
}

/// A score as `ZSCAN` shows it: a listpack keeps integral scores up to
/// `LLONG_MAX / 2` as integers (`1e18` reads `1000000000000000000`); everything else
/// is `%.17g`.
fn scan_score(score: f64, listpack: bool) -> String {
    const HALF_MAX: f64 = (i64::MAX / 2) as f64;
    if listpack && score.fract() == 0.0 && (-HALF_MAX..=HALF_MAX).contains(&score) {
        (score as i64).to_string()
    } else {
        fmt_g17(score)
    }
}

/// `ZSCAN key cursor [MATCH pattern] [COUNT count]`.
///
/// Every scan completes in one call: the reply carries all members (filtered by
/// `MATCH`) in score order and cursor 0. Redis does the same for `listpack` sets;
/// for large ones this trades its incremental batches for a simple guarantee that no
/// member present throughout is missed.
pub(super) fn zscan(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    crate::command::handlers::util::parse_scan_cursor(&argv[2])?;
    // Redis answers a missing key before it looks at the options.
    let options = ScanOptions::parse(&argv[3..]);
    let Some(z) = read_zset(ctx, &argv[1])? else {
        return Ok(Reply::Array(vec![
            Reply::bulk("0"),
            Reply::Array(Vec::new()),
        ]));
    };
    let options = options?;
    let listpack = z.is_listpack();
    let mut items = Vec::new();
    for e in z.iter() {
        if options.matches(e.member) {
            items.push(Reply::bulk(e.member));
            items.push(Reply::Bulk(scan_score(e.score, listpack).into_bytes()));
        }
    }
    Ok(Reply::Array(vec![Reply::bulk("0"), Reply::Array(items)]))
}
