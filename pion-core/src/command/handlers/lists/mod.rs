//! List commands (the non-blocking part of Redis's list family).
//!
//! The handlers are split by what they do to a list: [`push_pop`] adds and removes at
//! the ends (including the two-key moves and `LMPOP`), [`query`] reads, [`edit`]
//! changes elements in place. Index arithmetic lives in [`crate::value::list`], so the
//! handlers only parse arguments in Redis's order and pick the reply shape.
//! [`push_pop`] is crate-visible so the blocking variants can share its `LMPOP`
//! parsing and popping.

mod blocking;
mod edit;
pub(crate) mod push_pop;
mod query;
#[cfg(test)]
mod tests;

use crate::command::ctx::Ctx;
use crate::command::flags::*;
use crate::command::handlers::util::is_kw;
use crate::command::KeySpecDoc;
use crate::command::{CommandSpec, Group};
use crate::error::{OpError, OpResult};
use crate::value::list::End;
use crate::value::ListValue;

/// The key specs of the commands that pop from one list and push onto another.
const MOVE_KEY_SPECS: &[KeySpecDoc] = &[
    KeySpecDoc::range(&["RW", "access", "delete"], 1, 0, 1, 0),
    KeySpecDoc::range(&["RW", "insert"], 2, 0, 1, 0),
];

/// This family's part of the command table.
pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new(
        "lpush",
        -3,
        WRITE | DENYOOM | FAST,
        Group::List,
        push_pop::lpush,
    )
    .key_specs(&[KeySpecDoc::range(&["RW", "insert"], 1, 0, 1, 0)])
    .keys(1, 1, 1)
    .doc("Prepend one or multiple elements to a list", "1.0.0"),
    CommandSpec::new(
        "rpush",
        -3,
        WRITE | DENYOOM | FAST,
        Group::List,
        push_pop::rpush,
    )
    .key_specs(&[KeySpecDoc::range(&["RW", "insert"], 1, 0, 1, 0)])
    .keys(1, 1, 1)
    .doc("Append one or multiple elements to a list", "1.0.0"),
    CommandSpec::new(
        "lpushx",
        -3,
        NOOP_ON_ZERO | WRITE | DENYOOM | FAST,
        Group::List,
        push_pop::lpushx,
    )
    .key_specs(&[KeySpecDoc::range(&["RW", "insert"], 1, 0, 1, 0)])
    .keys(1, 1, 1)
    .doc(
        "Prepend an element to a list, only if the list exists",
        "2.2.0",
    ),
    CommandSpec::new(
        "rpushx",
        -3,
        NOOP_ON_ZERO | WRITE | DENYOOM | FAST,
        Group::List,
        push_pop::rpushx,
    )
    .key_specs(&[KeySpecDoc::range(&["RW", "insert"], 1, 0, 1, 0)])
    .keys(1, 1, 1)
    .doc(
        "Append an element to a list, only if the list exists",
        "2.2.0",
    ),
    CommandSpec::new("lpop", -2, WRITE | FAST, Group::List, push_pop::lpop)
        .key_specs(&[KeySpecDoc::range(&["RW", "access", "delete"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc("Remove and get the first elements in a list", "1.0.0"),
    CommandSpec::new("rpop", -2, WRITE | FAST, Group::List, push_pop::rpop)
        .key_specs(&[KeySpecDoc::range(&["RW", "access", "delete"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc("Remove and get the last elements in a list", "1.0.0"),
    CommandSpec::new("llen", 2, READONLY | FAST, Group::List, query::llen)
        .key_specs(&[KeySpecDoc::range(&["RO"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc("Get the length of a list", "1.0.0"),
    CommandSpec::new("lrange", 4, READONLY, Group::List, query::lrange)
        .key_specs(&[KeySpecDoc::range(&["RO", "access"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc("Get a range of elements from a list", "1.0.0"),
    CommandSpec::new("lindex", 3, READONLY, Group::List, query::lindex)
        .key_specs(&[KeySpecDoc::range(&["RO", "access"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc("Get an element from a list by its index", "1.0.0"),
    CommandSpec::new("lpos", -3, READONLY, Group::List, query::lpos)
        .key_specs(&[KeySpecDoc::range(&["RO", "access"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc("Return the index of matching elements on a list", "6.0.6"),
    CommandSpec::new("lset", 4, WRITE | DENYOOM, Group::List, edit::lset)
        .key_specs(&[KeySpecDoc::range(&["RW", "update"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc(
            "Set the value of an element in a list by its index",
            "1.0.0",
        ),
    CommandSpec::new("linsert", 5, WRITE | DENYOOM, Group::List, edit::linsert)
        .key_specs(&[KeySpecDoc::range(&["RW", "insert"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc(
            "Insert an element before or after another element in a list",
            "2.2.0",
        ),
    CommandSpec::new("lrem", 4, NOOP_ON_ZERO | WRITE, Group::List, edit::lrem)
        .key_specs(&[KeySpecDoc::range(&["RW", "delete"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc("Remove elements from a list", "1.0.0"),
    CommandSpec::new("ltrim", 4, WRITE, Group::List, edit::ltrim)
        .key_specs(&[KeySpecDoc::range(&["RW", "delete"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc("Trim a list to the specified range", "1.0.0"),
    CommandSpec::new("lmove", 5, WRITE | DENYOOM, Group::List, push_pop::lmove)
        .key_specs(MOVE_KEY_SPECS)
        .keys(1, 2, 1)
        .doc(
            "Pop an element from a list, push it to another list and return it",
            "6.2.0",
        ),
    CommandSpec::new(
        "rpoplpush",
        3,
        WRITE | DENYOOM,
        Group::List,
        push_pop::rpoplpush,
    )
    .key_specs(MOVE_KEY_SPECS)
    .keys(1, 2, 1)
    .doc(
        "Remove the last element in a list, prepend it to another list and return it",
        "1.2.0",
    ),
    CommandSpec::new("lmpop", -4, WRITE, Group::List, push_pop::lmpop)
        .key_specs(&[KeySpecDoc::keynum(&["RW", "access", "delete"], 1, 0, 1, 1)])
        .movable(push_pop::lmpop_keys)
        .doc("Pop elements from a list", "7.0.0"),
    CommandSpec::new("blpop", -3, WRITE | NOSCRIPT | BLOCKING, Group::List, blocking::blpop)
        .key_specs(&[KeySpecDoc::range(&["RW", "access", "delete"], 1, -2, 1, 0)])
        .keys(1, -2, 1)
        .doc(
            "Remove and get the first element in a list, or block until one is available",
            "2.0.0",
        ),
    CommandSpec::new("brpop", -3, WRITE | NOSCRIPT | BLOCKING, Group::List, blocking::brpop)
        .key_specs(&[KeySpecDoc::range(&["RW", "access", "delete"], 1, -2, 1, 0)])
        .keys(1, -2, 1)
        .doc(
            "Remove and get the last element in a list, or block until one is available",
            "2.0.0",
        ),
    CommandSpec::new(
        "blmove",
        6,
        WRITE | DENYOOM | NOSCRIPT | BLOCKING,
        Group::List,
        blocking::blmove,
    )
    .key_specs(MOVE_KEY_SPECS)
    .keys(1, 2, 1)
    .doc(
        "Pop an element from a list, push it to another list and return it; or block until one is available",
        "6.2.0",
    ),
    CommandSpec::new(
        "brpoplpush",
        4,
        WRITE | DENYOOM | NOSCRIPT | BLOCKING,
        Group::List,
        blocking::brpoplpush,
    )
    .key_specs(MOVE_KEY_SPECS)
    .keys(1, 2, 1)
    .doc(
        "Pop an element from a list, push it to another list and return it; or block until one is available",
        "2.2.0",
    ),
    CommandSpec::new("blmpop", -5, WRITE | BLOCKING, Group::List, blocking::blmpop)
        .key_specs(&[KeySpecDoc::keynum(&["RW", "access", "delete"], 2, 0, 1, 1)])
        .movable(blocking::blmpop_keys)
        .doc("Pop elements from a list, or block until one is available", "7.0.0"),
];

/// The list at `key` for reading (counts a keyspace hit or miss, as Redis's read
/// lookups do): `None` when missing, `WRONGTYPE` for other types.
fn read_list<'c>(ctx: &'c mut Ctx<'_>, key: &[u8]) -> OpResult<Option<&'c ListValue>> {
    let db = ctx.db();
    match ctx.ks.get(db, key)? {
        None => Ok(None),
        Some(v) => v.as_list().map(Some),
    }
}

/// The list at `key` for writing (no hit/miss count): `None` when missing,
/// `WRONGTYPE` for other types.
fn write_list<'c>(ctx: &'c mut Ctx<'_>, key: &[u8]) -> OpResult<Option<&'c mut ListValue>> {
    let db = ctx.db();
    match ctx.ks.get_mut(db, key)? {
        None => Ok(None),
        Some(v) => v.as_list_mut().map(Some),
    }
}

/// The list at `key`, created empty when missing; `WRONGTYPE` for other types (and
/// then nothing is created).
fn list_or_create<'c>(ctx: &'c mut Ctx<'_>, key: &[u8]) -> OpResult<&'c mut ListValue> {
    let db = ctx.db();
    ctx.ks
        .get_or_insert_with(db, key, || crate::value::Value::List(ListValue::new()))?
        .as_list_mut()
}

/// Parses `LEFT` or `RIGHT` (any case); anything else is a syntax error.
pub(crate) fn parse_end(arg: &[u8]) -> OpResult<End> {
    if is_kw(arg, "left") {
        Ok(End::Left)
    } else if is_kw(arg, "right") {
        Ok(End::Right)
    } else {
        Err(OpError::Syntax)
    }
}

/// Parses a count that must lie in `0..=i64::MAX`, failing with `error` for anything
/// else, non-integers included (Redis's `getRangeLongFromObjectOrReply`).
fn ranged_count(arg: &[u8], min: i64, error: &'static str) -> OpResult<usize> {
    match crate::util::num::parse_i64(arg) {
        Some(v) if v >= min => Ok(usize::try_from(v).unwrap_or(usize::MAX)),
        _ => Err(OpError::custom(error)),
    }
}
