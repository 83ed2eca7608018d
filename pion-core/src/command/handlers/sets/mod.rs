//! Set commands: `SADD` and the rest of Redis's set family.
//!
//! Sets of integers keep the sorted intset encoding, so their replies come in ascending
//! order exactly as Redis sends them; hash-table sets answer in an unspecified order.
//! The multi-key algebra (`SINTER`, `SUNION`, `SDIFF` and their `STORE` forms,
//! `SINTERCARD`) lives in [`algebra`].

mod algebra;

#[cfg(test)]
mod tests;

use crate::pubsub::notify;
use std::collections::HashSet;

use crate::command::ctx::Ctx;
use crate::command::flags::*;
use crate::command::handlers::hashes::scan::{scan_reply, ScanOptions};
use crate::command::handlers::hashes::{distinct_positions, random_count, MAX_RANDOM_REPLY};
use crate::command::handlers::util::int;
use crate::command::handlers::util::parse_scan_cursor;
use crate::command::KeySpecDoc;
use crate::command::{CommandSpec, Group};
use crate::error::{OpError, OpResult};
use crate::reply::Reply;
use crate::value::{SetValue, Value};

/// This family's part of the command table.
pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new(
        "sadd",
        -3,
        NOOP_ON_ZERO | WRITE | DENYOOM | FAST,
        Group::Set,
        sadd,
    )
    .key_specs(&[KeySpecDoc::range(&["RW", "insert"], 1, 0, 1, 0)])
    .keys(1, 1, 1)
    .doc("Add one or more members to a set", "1.0.0"),
    CommandSpec::new("srem", -3, NOOP_ON_ZERO | WRITE | FAST, Group::Set, srem)
        .key_specs(&[KeySpecDoc::range(&["RW", "delete"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc("Remove one or more members from a set", "1.0.0"),
    CommandSpec::new("smembers", 2, READONLY, Group::Set, smembers)
        .key_specs(&[KeySpecDoc::range(&["RO", "access"], 1, 0, 1, 0)])
        .tips(&["nondeterministic_output_order"])
        .keys(1, 1, 1)
        .doc("Get all the members in a set", "1.0.0"),
    CommandSpec::new("sismember", 3, READONLY | FAST, Group::Set, sismember)
        .key_specs(&[KeySpecDoc::range(&["RO"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc("Determine if a given value is a member of a set", "1.0.0"),
    CommandSpec::new("smismember", -3, READONLY | FAST, Group::Set, smismember)
        .key_specs(&[KeySpecDoc::range(&["RO", "access"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc(
            "Returns the membership associated with the given elements for a set",
            "6.2.0",
        ),
    CommandSpec::new("scard", 2, READONLY | FAST, Group::Set, scard)
        .key_specs(&[KeySpecDoc::range(&["RO"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc("Get the number of members in a set", "1.0.0"),
    CommandSpec::new("spop", -2, WRITE | FAST, Group::Set, spop)
        .key_specs(&[KeySpecDoc::range(&["RW", "access", "delete"], 1, 0, 1, 0)])
        .tips(&["nondeterministic_output"])
        .keys(1, 1, 1)
        .doc(
            "Remove and return one or multiple random members from a set",
            "1.0.0",
        ),
    CommandSpec::new("srandmember", -2, READONLY, Group::Set, srandmember)
        .key_specs(&[KeySpecDoc::range(&["RO", "access"], 1, 0, 1, 0)])
        .tips(&["nondeterministic_output"])
        .keys(1, 1, 1)
        .doc("Get one or multiple random members from a set", "1.0.0"),
    CommandSpec::new("smove", 4, NOOP_ON_ZERO | WRITE | FAST, Group::Set, smove)
        .key_specs(&[
            KeySpecDoc::range(&["RW", "access", "delete"], 1, 0, 1, 0),
            KeySpecDoc::range(&["RW", "insert"], 2, 0, 1, 0),
        ])
        .keys(1, 2, 1)
        .doc("Move a member from one set to another", "1.0.0"),
    CommandSpec::new("sinter", -2, READONLY, Group::Set, algebra::sinter)
        .key_specs(&[KeySpecDoc::range(&["RO", "access"], 1, -1, 1, 0)])
        .tips(&["nondeterministic_output_order"])
        .keys(1, -1, 1)
        .doc("Intersect multiple sets", "1.0.0"),
    CommandSpec::new("sintercard", -3, READONLY, Group::Set, algebra::sintercard)
        .key_specs(&[KeySpecDoc::keynum(&["RO", "access"], 1, 0, 1, 1)])
        .movable(algebra::sintercard_keys)
        .doc(
            "Intersect multiple sets and return the cardinality of the result",
            "7.0.0",
        ),
    CommandSpec::new(
        "sinterstore",
        -3,
        WRITE | DENYOOM,
        Group::Set,
        algebra::sinterstore,
    )
    .key_specs(&[
        KeySpecDoc::range(&["RW", "update"], 1, 0, 1, 0),
        KeySpecDoc::range(&["RO", "access"], 2, -1, 1, 0),
    ])
    .keys(1, -1, 1)
    .doc(
        "Intersect multiple sets and store the resulting set in a key",
        "1.0.0",
    ),
    CommandSpec::new("sunion", -2, READONLY, Group::Set, algebra::sunion)
        .key_specs(&[KeySpecDoc::range(&["RO", "access"], 1, -1, 1, 0)])
        .tips(&["nondeterministic_output_order"])
        .keys(1, -1, 1)
        .doc("Add multiple sets", "1.0.0"),
    CommandSpec::new(
        "sunionstore",
        -3,
        WRITE | DENYOOM,
        Group::Set,
        algebra::sunionstore,
    )
    .key_specs(&[
        KeySpecDoc::range(&["OW", "update"], 1, 0, 1, 0),
        KeySpecDoc::range(&["RO", "access"], 2, -1, 1, 0),
    ])
    .keys(1, -1, 1)
    .doc(
        "Add multiple sets and store the resulting set in a key",
        "1.0.0",
    ),
    CommandSpec::new("sdiff", -2, READONLY, Group::Set, algebra::sdiff)
        .key_specs(&[KeySpecDoc::range(&["RO", "access"], 1, -1, 1, 0)])
        .tips(&["nondeterministic_output_order"])
        .keys(1, -1, 1)
        .doc("Subtract multiple sets", "1.0.0"),
    CommandSpec::new(
        "sdiffstore",
        -3,
        WRITE | DENYOOM,
        Group::Set,
        algebra::sdiffstore,
    )
    .key_specs(&[
        KeySpecDoc::range(&["OW", "update"], 1, 0, 1, 0),
        KeySpecDoc::range(&["RO", "access"], 2, -1, 1, 0),
    ])
    .keys(1, -1, 1)
    .doc(
        "Subtract multiple sets and store the resulting set in a key",
        "1.0.0",
    ),
    CommandSpec::new("sscan", -3, READONLY, Group::Set, sscan)
        .key_specs(&[KeySpecDoc::range(&["RO", "access"], 1, 0, 1, 0)])
        .tips(&["nondeterministic_output"])
        .keys(1, 1, 1)
        .doc("Incrementally iterate Set elements", "2.8.0"),
];

/// Reads a set key: `Ok(None)` when missing, `WRONGTYPE` for other types.
fn read_set<'c>(ctx: &'c mut Ctx<'_>, key: &[u8]) -> OpResult<Option<&'c SetValue>> {
    let db = ctx.db();
    match ctx.ks.get(db, key)? {
        None => Ok(None),
        Some(v) => Ok(Some(v.as_set()?)),
    }
}

/// Reads a set key again without counting a keyspace hit or miss (for a second pass
/// over keys that [`read_set`] already looked up).
fn peek_set<'c>(ctx: &'c mut Ctx<'_>, key: &[u8]) -> OpResult<Option<&'c SetValue>> {
    let db = ctx.db();
    match ctx.ks.peek(db, key)? {
        None => Ok(None),
        Some(e) => Ok(Some(e.value.as_set()?)),
    }
}

/// The set at `key` for writing, or `None` when missing (`WRONGTYPE` for other types).
fn write_set<'c>(ctx: &'c mut Ctx<'_>, key: &[u8]) -> OpResult<Option<&'c mut SetValue>> {
    let db = ctx.db();
    match ctx.ks.get_mut(db, key)? {
        None => Ok(None),
        Some(v) => Ok(Some(v.as_set_mut()?)),
    }
}

/// The set at `key` for adding `first`, created in the encoding Redis picks for that
/// member when missing.
fn set_for_add<'c>(ctx: &'c mut Ctx<'_>, key: &[u8], first: &[u8]) -> OpResult<&'c mut SetValue> {
    let db = ctx.db();
    ctx.ks
        .get_or_insert_with(db, key, || Value::Set(SetValue::for_first_member(first)))?
        .as_set_mut()
}

fn sadd(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let limits = ctx.limits();
    let set = set_for_add(ctx, &argv[1], &argv[2])?;
    let added = argv[2..].iter().filter(|m| set.insert(m, &limits)).count();
    if added > 0 {
        ctx.notify(notify::SET, "sadd", &argv[1]);
    }
    Ok(Reply::Integer(added as i64))
}

fn srem(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let Some(set) = write_set(ctx, &argv[1])? else {
        return Ok(Reply::Integer(0));
    };
    let mut removed = 0;
    for m in &argv[2..] {
        if set.remove(m) {
            removed += 1;
            if set.is_empty() {
                break;
            }
        }
    }
    if removed > 0 {
        ctx.notify(notify::SET, "srem", &argv[1]);
    }
    Ok(Reply::Integer(removed))
}

/// Every member as a bulk reply, in the set's order.
fn member_bulks(set: &SetValue) -> Vec<Reply> {
    let mut out = Vec::with_capacity(set.len());
    set.for_each(|m| out.push(Reply::bulk(m)));
    out
}

/// A `Reply::Set` of every member, in the set's order (empty for a missing key).
fn members_reply(set: Option<&SetValue>) -> Reply {
    Reply::Set(set.map(member_bulks).unwrap_or_default())
}

fn smembers(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let set = read_set(ctx, &argv[1])?;
    Ok(members_reply(set))
}

fn sismember(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let set = read_set(ctx, &argv[1])?;
    Ok(Reply::Integer(i64::from(
        set.is_some_and(|s| s.contains(&argv[2])),
    )))
}

fn smismember(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let set = read_set(ctx, &argv[1])?;
    Ok(Reply::Array(
        argv[2..]
            .iter()
            .map(|m| Reply::Integer(i64::from(set.is_some_and(|s| s.contains(m)))))
            .collect(),
    ))
}

fn scard(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let set = read_set(ctx, &argv[1])?;
    Ok(Reply::Integer(set.map_or(0, |s| s.len() as i64)))
}

/// `SPOP`: the members are chosen at random, so the log records the `SREM` of the
/// members that were popped, not the `SPOP`.
fn spop(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let reply = pop_random_members(ctx, argv)?;
    let mut srem = vec![b"SREM".to_vec(), argv[1].clone()];
    match &reply {
        Reply::Bulk(m) => srem.push(m.clone()),
        Reply::Set(items) => srem.extend(items.iter().filter_map(|r| match r {
            Reply::Bulk(m) => Some(m.clone()),
            _ => None,
        })),
        _ => {}
    }
    if srem.len() > 2 {
        ctx.notify(notify::SET, "spop", &argv[1]);
    }
    ctx.log_as(if srem.len() > 2 {
        vec![srem]
    } else {
        Vec::new()
    });
    Ok(reply)
}

fn pop_random_members(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let count = match argv.len() {
        2 => None,
        3 => {
            let positive = || OpError::custom("ERR value is out of range, must be positive");
            let n = int(&argv[2]).map_err(|_| positive())?;
            Some(usize::try_from(n).map_err(|_| positive())?)
        }
        _ => return Err(OpError::Syntax),
    };
    let limits = ctx.limits();
    let db = ctx.db();
    let rng = &mut ctx.client.rng;
    let Some(value) = ctx.ks.get_mut(db, &argv[1])? else {
        return Ok(if count.is_some() {
            Reply::Set(Vec::new())
        } else {
            Reply::Null
        });
    };
    let set = value.as_set_mut()?;
    let Some(count) = count else {
        return Ok(Reply::bulk_or_null(set.pop_random(rng)));
    };
    let size = set.len();
    if count >= size {
        // Everything goes: the key is deleted when the dispatcher settles it.
        let reply = members_reply(Some(set));
        *set = SetValue::new();
        return Ok(reply);
    }
    let remaining = size - count;
    if remaining.saturating_mul(5) > count {
        // Few to pop: pop them one by one.
        let popped = (0..count).filter_map(|_| set.pop_random(rng));
        return Ok(Reply::Set(popped.map(Reply::Bulk).collect()));
    }
    // Most members go: pick the few to keep into a new set (created, like Redis, in
    // the encoding its first member calls for) and return the rest in set order.
    let mut kept: Option<SetValue> = None;
    for _ in 0..remaining {
        let Some(m) = set.pop_random(rng) else { break };
        kept.get_or_insert_with(|| SetValue::for_first_member(&m))
            .insert(&m, &limits);
    }
    let reply = members_reply(Some(set));
    *set = kept.unwrap_or_default();
    Ok(reply)
}

fn srandmember(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let count = match argv.len() {
        2 => None,
        3 => Some(random_count(&argv[2])?),
        _ => return Err(OpError::Syntax),
    };
    let db = ctx.db();
    let rng = &mut ctx.client.rng;
    let set = match ctx.ks.get(db, &argv[1])? {
        None if count.is_some() => return Ok(Reply::Array(Vec::new())),
        None => return Ok(Reply::Null),
        Some(v) => v.as_set()?,
    };
    let Some(count) = count else {
        return Ok(Reply::bulk_or_null(set.random(rng)));
    };
    if count < 0 {
        if count.unsigned_abs() > MAX_RANDOM_REPLY {
            return Err(OpError::custom("ERR value is out of range"));
        }
        let picks = (0..count.unsigned_abs()).filter_map(|_| set.random(rng));
        return Ok(Reply::Array(picks.map(Reply::Bulk).collect()));
    }
    let count = usize::try_from(count).unwrap_or(usize::MAX);
    let size = set.len();
    if count >= size {
        return Ok(Reply::Array(member_bulks(set)));
    }
    if count.saturating_mul(3) > size || set.is_compact() {
        // A large share, or an intset: choose positions and keep the set's order.
        let positions = distinct_positions(rng, size, count);
        let mut next = positions.iter().peekable();
        let mut out = Vec::with_capacity(count);
        let mut i = 0;
        set.for_each(|m| {
            if next.next_if_eq(&&i).is_some() {
                out.push(Reply::bulk(m));
            }
            i += 1;
        });
        return Ok(Reply::Array(out));
    }
    // A few out of many: random picks until enough distinct members.
    let mut seen = HashSet::with_capacity(count);
    let mut out = Vec::with_capacity(count);
    while out.len() < count {
        let Some(m) = set.random(rng) else { break };
        if seen.insert(m.clone()) {
            out.push(Reply::Bulk(m));
        }
    }
    Ok(Reply::Array(out))
}

fn smove(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let (src, dst, member) = (&argv[1], &argv[2], &argv[3]);
    let Some(src_set) = write_set(ctx, src)? else {
        return Ok(Reply::Integer(0));
    };
    let in_src = src_set.contains(member);
    // The destination's type is checked even when there is nothing to move.
    write_set(ctx, dst)?;
    if src == dst {
        return Ok(Reply::Integer(i64::from(in_src)));
    }
    if !in_src {
        return Ok(Reply::Integer(0));
    }
    let mut emptied = false;
    if let Some(s) = write_set(ctx, src)? {
        s.remove(member);
        emptied = s.is_empty();
    }
    ctx.notify(notify::SET, "srem", src);
    if emptied {
        // Deleted here rather than when the command settles: Redis reports the
        // `del` between the `srem` and the `sadd`.
        let db = ctx.db();
        ctx.ks.remove(db, src)?;
        ctx.notify(notify::GENERIC, "del", src);
    }
    let limits = ctx.limits();
    // The destination changes only when it lacked the member: otherwise, as in Redis,
    // no `sadd` event and no signal to its watchers.
    if set_for_add(ctx, dst, member)?.insert(member, &limits) {
        ctx.notify(notify::SET, "sadd", dst);
    } else {
        ctx.unmodified_keys.push(2);
    }
    Ok(Reply::Integer(1))
}

fn sscan(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let cursor = parse_scan_cursor(&argv[2])?;
    let Some(set) = read_set(ctx, &argv[1])? else {
        return Ok(scan_reply(0, Vec::new()));
    };
    let opts = ScanOptions::parse(&argv[3..])?;
    let (next, found) = opts.drive(cursor, |c, out| set.scan_step(c, |m| out.push(m.to_vec())));
    let found = found
        .into_iter()
        .filter(|m| opts.matches(m))
        .map(Reply::Bulk)
        .collect();
    Ok(scan_reply(next, found))
}
