//! `OBJECT ENCODING | IDLETIME | FREQ | REFCOUNT | HELP`: introspection of one key's
//! value. None of them refreshes the key's access time (that would defeat `IDLETIME`);
//! each counts as a keyspace hit or miss, as in Redis.

use super::peek_counted;
use crate::command::ctx::Ctx;
use crate::command::flags::*;
use crate::command::KeySpecDoc;
use crate::command::{CommandSpec, Group};
use crate::error::{OpError, OpResult};
use crate::keyspace::Entry;
use crate::reply::Reply;
use crate::value::string::StrEncoding;
use crate::value::Value;

/// `OBJECT`'s subcommands.
pub(super) static SUBCOMMANDS: &[CommandSpec] = &[
    CommandSpec::new("encoding", 3, READONLY, Group::Keyspace, encoding)
        .key_specs(&[KeySpecDoc::range(&["RO"], 2, 0, 1, 0)])
        .tips(&["nondeterministic_output"])
        .keys(2, 2, 1)
        .doc("Inspect the internal encoding of a Redis object", "2.2.3"),
    CommandSpec::new("freq", 3, READONLY, Group::Keyspace, freq)
        .key_specs(&[KeySpecDoc::range(&["RO"], 2, 0, 1, 0)])
        .tips(&["nondeterministic_output"])
        .keys(2, 2, 1)
        .doc(
            "Get the logarithmic access frequency counter of a Redis object",
            "4.0.0",
        ),
    CommandSpec::new("idletime", 3, READONLY, Group::Keyspace, idletime)
        .key_specs(&[KeySpecDoc::range(&["RO"], 2, 0, 1, 0)])
        .tips(&["nondeterministic_output"])
        .keys(2, 2, 1)
        .doc(
            "Get the time since a Redis object was last accessed",
            "2.2.3",
        ),
    CommandSpec::new("refcount", 3, READONLY, Group::Keyspace, refcount)
        .key_specs(&[KeySpecDoc::range(&["RO"], 2, 0, 1, 0)])
        .tips(&["nondeterministic_output"])
        .keys(2, 2, 1)
        .doc(
            "Get the number of references to the value of the key",
            "2.2.3",
        ),
    CommandSpec::new("help", 2, LOADING | STALE, Group::Keyspace, help)
        .doc("Show helpful text about the different subcommands", "6.2.0"),
];

/// What Redis reports as the reference count of its shared integer objects.
const SHARED_REFCOUNT: i64 = i32::MAX as i64;

/// Redis shares the string objects of the integers 0 to 9999.
const SHARED_INTEGERS: i64 = 10_000;

/// Runs `f` on the live entry of `argv[2]`, or replies nil when the key is missing.
fn with_entry(
    ctx: &mut Ctx<'_>,
    argv: &[Vec<u8>],
    f: impl FnOnce(&Entry, i64) -> OpResult<Reply>,
) -> OpResult<Reply> {
    let db = ctx.db();
    let now = ctx.now_ms();
    match peek_counted(ctx, db, &argv[2])? {
        Some(entry) => f(entry, now),
        None => Ok(Reply::Null),
    }
}

/// The eviction settings that change what `OBJECT` reports.
struct Policy {
    lfu: bool,
    shares_integers: bool,
}

fn policy(ctx: &Ctx<'_>) -> Policy {
    ctx.config().with(|c| {
        let p = c.maxmemory_policy;
        Policy {
            lfu: p.is_lfu(),
            // Redis stops sharing integers when LRU/LFU data must be per object.
            shares_integers: c.maxmemory == 0 || !(p.is_lfu() || p.is_lru()),
        }
    })
}

fn encoding(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    with_entry(ctx, argv, |e, _| Ok(Reply::bulk(e.value.encoding())))
}

fn idletime(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let lfu = policy(ctx).lfu;
    with_entry(ctx, argv, |e, now| {
        if lfu {
            return Err(OpError::custom(
                "ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.",
            ));
        }
        Ok(Reply::Integer(
            i64::try_from(e.idle_secs(now)).unwrap_or(i64::MAX),
        ))
    })
}

/// `OBJECT FREQ`: the key's logarithmic access counter (Redis's LFU scheme: starts at
/// 5, grows with probability `1 / ((counter - 5) * 10 + 1)` per access, loses one per
/// idle minute), under an LFU policy only.
fn freq(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let lfu = policy(ctx).lfu;
    let params = ctx.keyspace().lfu_params();
    with_entry(ctx, argv, |e, now| {
        if !lfu {
            return Err(OpError::custom(
                "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.",
            ));
        }
        Ok(Reply::Integer(i64::from(e.lfu_counter(now, params))))
    })
}

/// `OBJECT REFCOUNT`: 1, except for the integers Redis keeps as shared objects.
fn refcount(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let shares = policy(ctx).shares_integers;
    with_entry(ctx, argv, |e, _| {
        let shared = match &e.value {
            Value::Str(s) if shares && s.encoding_kind() == StrEncoding::Int => s
                .as_int()
                .is_some_and(|v| (0..SHARED_INTEGERS).contains(&v)),
            _ => false,
        };
        Ok(Reply::Integer(if shared { SHARED_REFCOUNT } else { 1 }))
    })
}

fn help(_: &mut Ctx<'_>, _: &[Vec<u8>]) -> OpResult<Reply> {
    Ok(Reply::Array(
        [
            "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "ENCODING <key>",
            "    Return the kind of internal representation used in order to store the value",
            "    associated with a <key>.",
            "FREQ <key>",
            "    Return the access frequency index of the <key>. The returned integer is",
            "    proportional to the logarithm of the recent access frequency of the key.",
            "IDLETIME <key>",
            "    Return the idle time of the <key>, that is the approximated number of",
            "    seconds elapsed since the last access to the key.",
            "REFCOUNT <key>",
            "    Return the number of references of the value associated with the specified",
            "    <key>.",
            "HELP",
            "    Prints this help.",
        ]
        .iter()
        .map(|l| Reply::status(l))
        .collect(),
    ))
}
