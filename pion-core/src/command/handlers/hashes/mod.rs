//! Hash commands: `HSET` and the rest of Redis's hash family.
//!
//! Small hashes keep the listpack encoding, so replies that list fields (`HGETALL`,
//! `HKEYS`, `HSCAN`, …) come in insertion order exactly as Redis sends them; large ones
//! answer in hash-table order.

pub(crate) mod scan;

#[cfg(test)]
pub(crate) mod tests;

use crate::pubsub::notify;
use std::collections::HashSet;

use rand::Rng;

use crate::command::ctx::Ctx;
use crate::command::flags::*;
use crate::command::handlers::util::parse_scan_cursor;
use crate::command::handlers::util::{int, is_kw};
use crate::command::KeySpecDoc;
use crate::command::{CommandSpec, Group};
use crate::error::{OpError, OpResult};
use crate::reply::Reply;
use crate::util::num::{long_double_incr, parse_i64};
use crate::value::{HashValue, Value};
use scan::{scan_reply, ScanOptions};

/// This family's part of the command table.
pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("hset", -4, WRITE | DENYOOM | FAST, Group::Hash, hset)
        .key_specs(&[KeySpecDoc::range(&["RW", "update"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc("Set the string value of a hash field", "2.0.0"),
    CommandSpec::new(
        "hsetnx",
        4,
        NOOP_ON_ZERO | WRITE | DENYOOM | FAST,
        Group::Hash,
        hsetnx,
    )
    .key_specs(&[KeySpecDoc::range(&["RW", "insert"], 1, 0, 1, 0)])
    .keys(1, 1, 1)
    .doc(
        "Set the value of a hash field, only if the field does not exist",
        "2.0.0",
    ),
    CommandSpec::new("hmset", -4, WRITE | DENYOOM | FAST, Group::Hash, hmset)
        .key_specs(&[KeySpecDoc::range(&["RW", "update"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc("Set multiple hash fields to multiple values", "2.0.0"),
    CommandSpec::new("hget", 3, READONLY | FAST, Group::Hash, hget)
        .key_specs(&[KeySpecDoc::range(&["RO", "access"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc("Get the value of a hash field", "2.0.0"),
    CommandSpec::new("hmget", -3, READONLY | FAST, Group::Hash, hmget)
        .key_specs(&[KeySpecDoc::range(&["RO", "access"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc("Get the values of all the given hash fields", "2.0.0"),
    CommandSpec::new("hdel", -3, NOOP_ON_ZERO | WRITE | FAST, Group::Hash, hdel)
        .key_specs(&[KeySpecDoc::range(&["RW", "delete"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc("Delete one or more hash fields", "2.0.0"),
    CommandSpec::new("hlen", 2, READONLY | FAST, Group::Hash, hlen)
        .key_specs(&[KeySpecDoc::range(&["RO"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc("Get the number of fields in a hash", "2.0.0"),
    CommandSpec::new("hstrlen", 3, READONLY | FAST, Group::Hash, hstrlen)
        .key_specs(&[KeySpecDoc::range(&["RO"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc("Get the length of the value of a hash field", "3.2.0"),
    CommandSpec::new("hexists", 3, READONLY | FAST, Group::Hash, hexists)
        .key_specs(&[KeySpecDoc::range(&["RO"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc("Determine if a hash field exists", "2.0.0"),
    CommandSpec::new("hkeys", 2, READONLY, Group::Hash, hkeys)
        .key_specs(&[KeySpecDoc::range(&["RO", "access"], 1, 0, 1, 0)])
        .tips(&["nondeterministic_output_order"])
        .keys(1, 1, 1)
        .doc("Get all the fields in a hash", "2.0.0"),
    CommandSpec::new("hvals", 2, READONLY, Group::Hash, hvals)
        .key_specs(&[KeySpecDoc::range(&["RO", "access"], 1, 0, 1, 0)])
        .tips(&["nondeterministic_output_order"])
        .keys(1, 1, 1)
        .doc("Get all the values in a hash", "2.0.0"),
    CommandSpec::new("hgetall", 2, READONLY, Group::Hash, hgetall)
        .key_specs(&[KeySpecDoc::range(&["RO", "access"], 1, 0, 1, 0)])
        .tips(&["nondeterministic_output_order"])
        .keys(1, 1, 1)
        .doc("Get all the fields and values in a hash", "2.0.0"),
    CommandSpec::new("hincrby", 4, WRITE | DENYOOM | FAST, Group::Hash, hincrby)
        .key_specs(&[KeySpecDoc::range(&["RW", "access", "update"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc(
            "Increment the integer value of a hash field by the given number",
            "2.0.0",
        ),
    CommandSpec::new(
        "hincrbyfloat",
        4,
        WRITE | DENYOOM | FAST,
        Group::Hash,
        hincrbyfloat,
    )
    .key_specs(&[KeySpecDoc::range(&["RW", "access", "update"], 1, 0, 1, 0)])
    .keys(1, 1, 1)
    .doc(
        "Increment the float value of a hash field by the given amount",
        "2.6.0",
    ),
    CommandSpec::new("hrandfield", -2, READONLY, Group::Hash, hrandfield)
        .key_specs(&[KeySpecDoc::range(&["RO", "access"], 1, 0, 1, 0)])
        .tips(&["nondeterministic_output"])
        .keys(1, 1, 1)
        .doc("Get one or multiple random fields from a hash", "6.2.0"),
    CommandSpec::new("hscan", -3, READONLY, Group::Hash, hscan)
        .key_specs(&[KeySpecDoc::range(&["RO", "access"], 1, 0, 1, 0)])
        .tips(&["nondeterministic_output"])
        .keys(1, 1, 1)
        .doc(
            "Incrementally iterate hash fields and associated values",
            "2.8.0",
        ),
];

/// The most elements a random-pick reply with repetitions (`HRANDFIELD`/`SRANDMEMBER`
/// with a negative count) may hold. Redis streams any count and exhausts memory on
/// absurd ones; the engine builds the reply first, so it refuses them instead.
pub(crate) const MAX_RANDOM_REPLY: u64 = 10_000_000;

/// Reads a hash key: `Ok(None)` when missing, `WRONGTYPE` for other types.
fn read_hash<'c>(ctx: &'c mut Ctx<'_>, key: &[u8]) -> OpResult<Option<&'c HashValue>> {
    let db = ctx.db();
    match ctx.ks.get(db, key)? {
        None => Ok(None),
        Some(v) => Ok(Some(v.as_hash()?)),
    }
}

/// The hash at `key` for writing, created empty if missing (`WRONGTYPE` for other
/// types). An empty hash left behind is deleted when the dispatcher settles the key.
fn write_hash<'c>(ctx: &'c mut Ctx<'_>, key: &[u8]) -> OpResult<&'c mut HashValue> {
    let db = ctx.db();
    ctx.ks
        .get_or_insert_with(db, key, || Value::Hash(Default::default()))?
        .as_hash_mut()
}

/// Sets the field/value pairs of `argv[2..]`; returns how many fields were new.
fn set_pairs(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<i64> {
    let pairs = argv[2..].chunks_exact(2);
    if !pairs.remainder().is_empty() {
        return Err(OpError::WrongArity(
            String::from_utf8_lossy(&argv[0]).to_ascii_lowercase(),
        ));
    }
    let limits = ctx.limits();
    let h = write_hash(ctx, &argv[1])?;
    let mut created = 0;
    for pair in pairs {
        if h.insert(pair[0].clone(), pair[1].clone(), &limits) {
            created += 1;
        }
    }
    ctx.notify(notify::HASH, "hset", &argv[1]);
    Ok(created)
}

fn hset(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    set_pairs(ctx, argv).map(Reply::Integer)
}

fn hmset(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    set_pairs(ctx, argv).map(|_| Reply::ok())
}

fn hsetnx(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let limits = ctx.limits();
    let h = write_hash(ctx, &argv[1])?;
    if h.contains(&argv[2]) {
        return Ok(Reply::Integer(0));
    }
    h.insert(argv[2].clone(), argv[3].clone(), &limits);
    ctx.notify(notify::HASH, "hset", &argv[1]);
    Ok(Reply::Integer(1))
}

fn hget(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let h = read_hash(ctx, &argv[1])?;
    Ok(Reply::bulk_or_null(h.and_then(|h| h.get(&argv[2]))))
}

fn hmget(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let h = read_hash(ctx, &argv[1])?;
    Ok(Reply::Array(
        argv[2..]
            .iter()
            .map(|f| Reply::bulk_or_null(h.and_then(|h| h.get(f))))
            .collect(),
    ))
}

fn hdel(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let db = ctx.db();
    let Some(v) = ctx.ks.get_mut(db, &argv[1])? else {
        return Ok(Reply::Integer(0));
    };
    let h = v.as_hash_mut()?;
    let mut removed = 0;
    for f in &argv[2..] {
        if h.remove(f).is_some() {
            removed += 1;
        }
        if h.is_empty() {
            break;
        }
    }
    if removed > 0 {
        ctx.notify(notify::HASH, "hdel", &argv[1]);
    }
    Ok(Reply::Integer(removed))
}

fn hlen(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let h = read_hash(ctx, &argv[1])?;
    Ok(Reply::Integer(h.map_or(0, |h| h.len() as i64)))
}

fn hstrlen(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let h = read_hash(ctx, &argv[1])?;
    let len = h.and_then(|h| h.get(&argv[2])).map_or(0, <[u8]>::len);
    Ok(Reply::Integer(len as i64))
}

fn hexists(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let h = read_hash(ctx, &argv[1])?;
    Ok(Reply::Integer(i64::from(
        h.is_some_and(|h| h.contains(&argv[2])),
    )))
}

fn hkeys(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let h = read_hash(ctx, &argv[1])?;
    Ok(Reply::bulks(
        h.into_iter().flat_map(|h| h.iter().map(|(f, _)| f)),
    ))
}

fn hvals(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let h = read_hash(ctx, &argv[1])?;
    Ok(Reply::bulks(
        h.into_iter().flat_map(|h| h.iter().map(|(_, v)| v)),
    ))
}

fn hgetall(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let h = read_hash(ctx, &argv[1])?;
    Ok(Reply::Map(
        h.into_iter()
            .flat_map(|h| h.iter())
            .map(|(f, v)| (Reply::bulk(f), Reply::bulk(v)))
            .collect(),
    ))
}

fn hincrby(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let incr = int(&argv[3])?;
    let limits = ctx.limits();
    let h = write_hash(ctx, &argv[1])?;
    let current = match h.get(&argv[2]) {
        None => 0,
        Some(v) => {
            parse_i64(v).ok_or_else(|| OpError::custom("ERR hash value is not an integer"))?
        }
    };
    let new = current.checked_add(incr).ok_or(OpError::Overflow)?;
    h.insert(argv[2].clone(), new.to_string().into_bytes(), &limits);
    ctx.notify(notify::HASH, "hincrby", &argv[1]);
    Ok(Reply::Integer(new))
}

fn hincrbyfloat(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    // The increment is checked on its own first, for Redis's separate error texts:
    // an unparsable one is "not a valid float", an infinite one "NaN or Infinity".
    match long_double_incr(None, &argv[3]) {
        Err(OpError::NotFloat) => return Err(OpError::NotFloat),
        Err(_) => return Err(OpError::custom("ERR value is NaN or Infinity")),
        Ok(_) => {}
    }
    let limits = ctx.limits();
    let h = write_hash(ctx, &argv[1])?;
    let new = match long_double_incr(h.get(&argv[2]), &argv[3]) {
        // The increment parsed above, so a parse failure now is the stored value's.
        Err(OpError::NotFloat) => return Err(OpError::custom("ERR hash value is not a float")),
        other => other?,
    };
    h.insert(argv[2].clone(), new.clone(), &limits);
    ctx.notify(notify::HASH, "hincrbyfloat", &argv[1]);
    // Logged as its result, like INCRBYFLOAT (long-double arithmetic is per machine).
    ctx.log_as(vec![vec![
        b"HSET".to_vec(),
        argv[1].clone(),
        argv[2].clone(),
        new.clone(),
    ]]);
    Ok(Reply::Bulk(new))
}

/// Parses a random-pick count (`HRANDFIELD`, `SRANDMEMBER`): any `i64` but `i64::MIN`.
pub(crate) fn random_count(arg: &[u8]) -> OpResult<i64> {
    let n = int(arg)?;
    if n == i64::MIN {
        return Err(OpError::custom(
            "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807",
        ));
    }
    Ok(n)
}

/// `count` distinct positions out of `len`, ascending, chosen uniformly.
pub(crate) fn distinct_positions(rng: &mut impl Rng, len: usize, count: usize) -> Vec<usize> {
    let mut picked = rand::seq::index::sample(rng, len, count.min(len)).into_vec();
    picked.sort_unstable();
    picked
}

fn hrandfield(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    if argv.len() == 2 {
        let db = ctx.db();
        let Some(v) = ctx.ks.get(db, &argv[1])? else {
            return Ok(Reply::Null);
        };
        let pick = v.as_hash()?.random(&mut ctx.client.rng).map(|(f, _)| f);
        return Ok(Reply::bulk_or_null(pick));
    }
    let count = random_count(&argv[2])?;
    let with_values = match argv.get(3) {
        None => false,
        Some(opt) if argv.len() == 4 && is_kw(opt, "withvalues") => {
            if count.unsigned_abs() > i64::MAX as u64 / 2 {
                return Err(OpError::custom("ERR value is out of range"));
            }
            true
        }
        Some(_) => return Err(OpError::Syntax),
    };
    let db = ctx.db();
    let h = match ctx.ks.get(db, &argv[1])? {
        None => return Ok(Reply::Array(Vec::new())),
        Some(v) => v.as_hash()?,
    };
    let rng = &mut ctx.client.rng;
    let pairs: Vec<(&[u8], &[u8])> = if count < 0 {
        if count.unsigned_abs() > MAX_RANDOM_REPLY {
            return Err(OpError::custom("ERR value is out of range"));
        }
        h.random_with_repeats(count.unsigned_abs() as usize, rng)
    } else {
        let count = usize::try_from(count).unwrap_or(usize::MAX);
        if count >= h.len() {
            h.iter().collect()
        } else if count.saturating_mul(3) > h.len() || h.is_compact() {
            // A large share (or a small hash): choose positions, keep the hash's order.
            let positions = distinct_positions(rng, h.len(), count);
            let mut next = positions.iter().peekable();
            h.iter()
                .enumerate()
                .filter(|(i, _)| next.next_if_eq(&i).is_some())
                .map(|(_, p)| p)
                .collect()
        } else {
            // A few out of many: random picks until enough distinct fields.
            let mut seen = HashSet::with_capacity(count);
            let mut out = Vec::with_capacity(count);
            while out.len() < count {
                let Some(p) = h.random(rng) else { break };
                if seen.insert(p.0) {
                    out.push(p);
                }
            }
            out
        }
    };
    Ok(if with_values {
        Reply::Pairs(
            pairs
                .into_iter()
                .map(|(f, v)| (Reply::bulk(f), Reply::bulk(v)))
                .collect(),
        )
    } else {
        Reply::bulks(pairs.into_iter().map(|(f, _)| f))
    })
}

fn hscan(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let cursor = parse_scan_cursor(&argv[2])?;
    let Some(h) = read_hash(ctx, &argv[1])? else {
        return Ok(scan_reply(0, Vec::new()));
    };
    let opts = ScanOptions::parse(&argv[3..])?;
    // Like Redis, count every visited field and value towards COUNT, filter after.
    let (next, found) = opts.drive(cursor, |c, out| {
        h.scan_step(c, |f, v| {
            out.push(f.to_vec());
            out.push(v.to_vec());
        })
    });
    let found = found
        .chunks_exact(2)
        .filter(|p| opts.matches(&p[0]))
        .flat_map(|p| [Reply::bulk(&p[0]), Reply::bulk(&p[1])])
        .collect();
    Ok(scan_reply(next, found))
}
