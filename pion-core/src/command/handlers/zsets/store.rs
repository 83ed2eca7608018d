//! Multi-key sorted-set algebra: `ZUNION`, `ZINTER`, `ZDIFF`, their `STORE` forms and
//! `ZINTERCARD`. Plain sets take part with every score 1.
//!
//! Aggregation visits the inputs smallest first (stable by position), as Redis does,
//! so that floating-point sums round the same way.

use std::collections::HashMap;

use super::members_reply;
use super::parse::parse_double;
use crate::command::ctx::Ctx;
use crate::command::handlers::util::{int, is_kw};
use crate::error::{OpError, OpResult};
use crate::reply::Reply;
use crate::value::zset::ScoredMember;
use crate::value::{Value, ZSetValue};

/// Which algebra operation a command performs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Union,
    Inter,
    Diff,
}

/// How scores of the same member combine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Aggregate {
    Sum,
    Min,
    Max,
}

impl Aggregate {
    fn apply(self, acc: f64, v: f64) -> f64 {
        match self {
            // inf + -inf is NaN: Redis stores 0 instead.
            Aggregate::Sum => {
                let s = acc + v;
                if s.is_nan() {
                    0.0
                } else {
                    s
                }
            }
            // Written as in Redis so that a NaN operand keeps the accumulator.
            Aggregate::Min => {
                if v < acc {
                    v
                } else {
                    acc
                }
            }
            Aggregate::Max => {
                if v > acc {
                    v
                } else {
                    acc
                }
            }
        }
    }
}

/// Reads `numkeys` at `argv[at]` and returns the key positions that follow it, with
/// Redis's errors for a bad count.
fn numkeys_keys(argv: &[Vec<u8>], at: usize) -> OpResult<Vec<usize>> {
    let n = int(&argv[at])?;
    if n < 1 {
        let name = String::from_utf8_lossy(&argv[0]).to_ascii_lowercase();
        return Err(OpError::custom(format!(
            "ERR at least 1 input key is needed for '{name}' command"
        )));
    }
    if n > (argv.len() - at - 1) as i64 {
        return Err(OpError::Syntax);
    }
    Ok((at + 1..at + 1 + n as usize).collect())
}

/// Key finder for `ZUNION`/`ZINTER`/`ZDIFF`/`ZINTERCARD numkeys key [key ...] …`.
pub(super) fn numkeys_at_1(argv: &[Vec<u8>]) -> OpResult<Vec<usize>> {
    numkeys_keys(argv, 1)
}

/// Key finder for `Z*STORE destination numkeys key [key ...] …`: the destination,
/// then the sources.
pub(super) fn dest_and_numkeys_at_2(argv: &[Vec<u8>]) -> OpResult<Vec<usize>> {
    let mut keys = vec![1];
    keys.extend(numkeys_keys(argv, 2)?);
    Ok(keys)
}

/// One input's (member, score) entries.
type Source = Vec<(Vec<u8>, f64)>;

/// The inputs, as (member, score) entries; missing keys are empty.
fn load_sources(ctx: &mut Ctx<'_>, argv: &[Vec<u8>], keys: &[usize]) -> OpResult<Vec<Source>> {
    let db = ctx.db();
    let mut out = Vec::with_capacity(keys.len());
    for &i in keys {
        let entries = match ctx.ks.get(db, &argv[i])? {
            None => Vec::new(),
            Some(Value::ZSet(z)) => z.iter().map(|e| (e.member.to_vec(), e.score)).collect(),
            Some(Value::Set(s)) => s.members().into_iter().map(|m| (m, 1.0)).collect(),
            Some(_) => return Err(OpError::WrongType),
        };
        out.push(entries);
    }
    Ok(out)
}

/// The parsed options after the keys.
struct Options {
    weights: Vec<f64>,
    aggregate: Aggregate,
    withscores: bool,
}

fn parse_options(
    argv: &[Vec<u8>],
    from: usize,
    nkeys: usize,
    op: Op,
    store: bool,
) -> OpResult<Options> {
    let mut o = Options {
        weights: vec![1.0; nkeys],
        aggregate: Aggregate::Sum,
        withscores: false,
    };
    let mut j = from;
    while j < argv.len() {
        let left = argv.len() - j - 1;
        let opt = &argv[j];
        if op != Op::Diff && is_kw(opt, "weights") && left >= nkeys {
            for (k, w) in o.weights.iter_mut().enumerate() {
                *w = parse_double(&argv[j + 1 + k])
                    .ok_or_else(|| OpError::custom("ERR weight value is not a float"))?;
            }
            j += nkeys;
        } else if op != Op::Diff && is_kw(opt, "aggregate") && left >= 1 {
            let a = &argv[j + 1];
            o.aggregate = if is_kw(a, "sum") {
                Aggregate::Sum
            } else if is_kw(a, "min") {
                Aggregate::Min
            } else if is_kw(a, "max") {
                Aggregate::Max
            } else {
                return Err(OpError::Syntax);
            };
            j += 1;
        } else if !store && is_kw(opt, "withscores") {
            o.withscores = true;
        } else {
            return Err(OpError::Syntax);
        }
        j += 1;
    }
    Ok(o)
}

/// A score times its weight; NaN (0 × inf) counts as 0. Redis applies this to every
/// input of a union, but only to the first input of an intersection (later ones go
/// into the aggregate as they are).
fn weighted(score: f64, weight: f64) -> f64 {
    let v = score * weight;
    if v.is_nan() {
        0.0
    } else {
        v
    }
}

/// Computes the result entries, sorted by (score, member).
fn compute(op: Op, sources: Vec<Source>, o: &Options) -> Vec<ScoredMember> {
    let mut out: Vec<ScoredMember> = match op {
        Op::Diff => {
            let mut it = sources.into_iter();
            let first = it.next().unwrap_or_default();
            let others: Vec<HashMap<Vec<u8>, f64>> = it.map(|s| s.into_iter().collect()).collect();
            first
                .into_iter()
                .filter(|(m, _)| !others.iter().any(|s| s.contains_key(m)))
                .map(|(member, score)| ScoredMember { score, member })
                .collect()
        }
        Op::Union | Op::Inter => {
            let mut order: Vec<usize> = (0..sources.len()).collect();
            order.sort_by_key(|&i| sources[i].len());
            if op == Op::Inter && sources.iter().any(Vec::is_empty) {
                return Vec::new();
            }
            let maps: Vec<HashMap<&[u8], f64>> = sources
                .iter()
                .map(|s| s.iter().map(|(m, v)| (m.as_slice(), *v)).collect())
                .collect();
            let mut acc: HashMap<&[u8], f64> = HashMap::new();
            if op == Op::Union {
                for &i in &order {
                    for (m, s) in &sources[i] {
                        acc.entry(m.as_slice())
                            .and_modify(|a| *a = o.aggregate.apply(*a, weighted(*s, o.weights[i])))
                            .or_insert_with(|| weighted(*s, o.weights[i]));
                    }
                }
            } else {
                let (&smallest, rest) = order.split_first().unwrap_or((&0, &[]));
                'members: for (m, s) in &sources[smallest] {
                    let mut a = weighted(*s, o.weights[smallest]);
                    for &i in rest {
                        let Some(&v) = maps[i].get(m.as_slice()) else {
                            continue 'members;
                        };
                        a = o.aggregate.apply(a, v * o.weights[i]);
                    }
                    acc.insert(m.as_slice(), a);
                }
            }
            acc.into_iter()
                .map(|(m, score)| ScoredMember {
                    score,
                    member: m.to_vec(),
                })
                .collect()
        }
    };
    out.sort();
    out
}

fn algebra(ctx: &mut Ctx<'_>, argv: &[Vec<u8>], op: Op, store: bool) -> OpResult<Reply> {
    let numkeys_at = if store { 2 } else { 1 };
    let keys = numkeys_keys(argv, numkeys_at)?;
    let sources = load_sources(ctx, argv, &keys)?;
    let after = numkeys_at + 1 + keys.len();
    let o = parse_options(argv, after, keys.len(), op, store)?;
    let result = compute(op, sources, &o);
    if !store {
        return Ok(members_reply(
            result.iter().map(ScoredMember::view),
            o.withscores,
        ));
    }
    let db = ctx.db();
    let dst = &argv[1];
    if result.is_empty() {
        if ctx.ks.remove(db, dst)?.is_some() {
            ctx.notify(crate::pubsub::notify::GENERIC, "del", dst);
        }
        return Ok(Reply::Integer(0));
    }
    let limits = ctx.limits();
    let mut z = ZSetValue::with_hint(usize::MAX, 0, &limits);
    for e in &result {
        z.insert(&e.member, e.score, &limits);
    }
    z.convert_to_listpack_if_fits(&limits);
    let n = z.len();
    ctx.ks.set(db, dst, Value::ZSet(z))?;
    let event = match op {
        Op::Union => "zunionstore",
        Op::Inter => "zinterstore",
        Op::Diff => "zdiffstore",
    };
    ctx.notify(crate::pubsub::notify::ZSET, event, dst);
    Ok(Reply::Integer(n as i64))
}

/// `ZUNION numkeys key [key ...] [WEIGHTS w ...] [AGGREGATE SUM|MIN|MAX] [WITHSCORES]`.
pub(super) fn zunion(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    algebra(ctx, argv, Op::Union, false)
}

/// `ZINTER numkeys key [key ...] [WEIGHTS w ...] [AGGREGATE SUM|MIN|MAX] [WITHSCORES]`.
pub(super) fn zinter(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    algebra(ctx, argv, Op::Inter, false)
}

/// `ZDIFF numkeys key [key ...] [WITHSCORES]`.
pub(super) fn zdiff(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    algebra(ctx, argv, Op::Diff, false)
}

/// `ZUNIONSTORE destination numkeys key [key ...] [WEIGHTS …] [AGGREGATE …]`.
pub(super) fn zunionstore(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    algebra(ctx, argv, Op::Union, true)
}

/// `ZINTERSTORE destination numkeys key [key ...] [WEIGHTS …] [AGGREGATE …]`.
pub(super) fn zinterstore(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    algebra(ctx, argv, Op::Inter, true)
}

/// `ZDIFFSTORE destination numkeys key [key ...]`.
pub(super) fn zdiffstore(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    algebra(ctx, argv, Op::Diff, true)
}

/// `ZINTERCARD numkeys key [key ...] [LIMIT limit]`.
pub(super) fn zintercard(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let keys = numkeys_keys(argv, 1)?;
    let sources = load_sources(ctx, argv, &keys)?;
    let mut limit = 0usize;
    let mut j = 2 + keys.len();
    while j < argv.len() {
        if is_kw(&argv[j], "limit") && j + 1 < argv.len() {
            limit = int(&argv[j + 1])
                .ok()
                .and_then(|v| usize::try_from(v).ok())
                .ok_or_else(|| OpError::custom("ERR LIMIT can't be negative"))?;
            j += 2;
        } else {
            return Err(OpError::Syntax);
        }
    }
    let mut order: Vec<usize> = (0..sources.len()).collect();
    order.sort_by_key(|&i| sources[i].len());
    let Some((&smallest, rest)) = order.split_first() else {
        return Ok(Reply::Integer(0));
    };
    let others: Vec<std::collections::HashSet<&[u8]>> = rest
        .iter()
        .map(|&i| sources[i].iter().map(|(m, _)| m.as_slice()).collect())
        .collect();
    let mut count = 0usize;
    for (m, _) in &sources[smallest] {
        if others.iter().all(|s| s.contains(m.as_slice())) {
            count += 1;
            if limit > 0 && count >= limit {
                break;
            }
        }
    }
    Ok(Reply::Integer(count as i64))
}
