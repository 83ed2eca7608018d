//! JSON commands (`JSON.SET`, `JSON.GET` and the rest of RedisJSON 2.x).
//!
//! RedisJSON is a module in Redis 8.2, and the table shows it as the oracle does:
//! arity -1 with each handler counting its own arguments (the error names the
//! command in lower case), the `module` flag, no ACL category. Every command takes a
//! path in one of two languages ([`Path`]): JSONPath (`$…`) answers with one result
//! per match, a legacy path (`.a`, `a`) with the first match alone and an error when
//! nothing matches; RESP3 changes a few shapes. Readers are in [`read`], writers of
//! whole values in [`write`], the typed edits (numbers, strings, booleans, arrays) in
//! [`edit`] and [`arrays`].

mod arrays;
mod edit;
mod read;
mod write;

#[cfg(test)]
mod tests;

use serde_json::Value as Json;

use crate::command::ctx::Ctx;
use crate::command::flags::*;
use crate::command::{CommandSpec, Group, KeyFinder, KeySpecDoc};
use crate::error::{JsonError, OpError, OpResult};
use crate::pubsub::notify;
use crate::value::json::{self, Path};
use crate::value::{JsonValue, Value};

const KEY: &[KeySpecDoc] = &[KeySpecDoc::range(&["RW", "access", "update"], 1, 0, 1, 0)];
const DEBUG_KEY: &[KeySpecDoc] = &[KeySpecDoc::range(&["RW", "access", "update"], 2, 0, 1, 0)];
const MSET_KEYS: &[KeySpecDoc] = &[KeySpecDoc::range(&["RW", "access", "update"], 1, -1, 3, 0)];

const fn jcmd(
    name: &'static str,
    flags: u64,
    handler: crate::command::Handler,
    summary: &'static str,
) -> CommandSpec {
    CommandSpec::new(name, -1, flags | MODULE, Group::Json, handler)
        .key_specs(KEY)
        .keys(1, 1, 1)
        .doc(summary, "2.0.0")
}

/// Locks every key of `JSON.MGET` while `COMMAND INFO` reports RedisJSON's own
/// (first key only) range and no `movablekeys` flag, as the module registers it.
const fn quietly_movable(mut spec: CommandSpec, find: KeyFinder) -> CommandSpec {
    spec.keys.find = Some(find);
    spec
}

fn mget_keys(argv: &[Vec<u8>]) -> OpResult<Vec<usize>> {
    Ok((1..argv.len().saturating_sub(1)).collect())
}

/// This family's part of the command table.
pub static COMMANDS: &[CommandSpec] = &[
    jcmd("json.set", WRITE | DENYOOM, write::set, "Sets or updates the JSON value at a path"),
    jcmd("json.get", READONLY, read::get, "Gets the value at one or more paths in JSON serialized form"),
    quietly_movable(
        jcmd("json.mget", READONLY, read::mget, "Returns the values at a path from one or more keys"),
        mget_keys,
    ),
    jcmd("json.mset", WRITE | DENYOOM, write::mset, "Sets or updates the JSON value of one or more keys")
        .key_specs(MSET_KEYS)
        .keys(1, -1, 3),
    jcmd("json.merge", WRITE | DENYOOM, write::merge, "Merges a given JSON value into matching paths"),
    jcmd("json.del", WRITE, write::del, "Deletes a value"),
    jcmd("json.forget", WRITE, write::del, "Deletes a value"),
    jcmd("json.type", READONLY, read::type_, "Returns the type of the JSON value at path"),
    jcmd("json.strlen", READONLY, read::strlen, "Returns the length of the JSON String at path in key"),
    jcmd("json.strappend", WRITE | DENYOOM, edit::strappend, "Appends a string to a JSON string value at path"),
    jcmd("json.numincrby", WRITE, edit::numincrby, "Increments the numeric value at path by a value"),
    jcmd("json.nummultby", WRITE, edit::nummultby, "Multiplies the numeric value at path by a value"),
    jcmd("json.toggle", WRITE | DENYOOM, edit::toggle, "Toggles a boolean value"),
    jcmd("json.clear", WRITE, edit::clear, "Clears all values from an array or an object and sets numeric values to `0`"),
    jcmd("json.arrappend", WRITE | DENYOOM, arrays::arrappend, "Append one or more json values into the array at path after the last element in it."),
    jcmd("json.arrindex", READONLY, arrays::arrindex, "Returns the index of the first occurrence of a JSON scalar value in the array at path"),
    jcmd("json.arrinsert", WRITE | DENYOOM, arrays::arrinsert, "Inserts the JSON scalar(s) value at the specified index in the array at path"),
    jcmd("json.arrlen", READONLY, read::arrlen, "Returns the length of the array at path"),
    jcmd("json.arrpop", WRITE, arrays::arrpop, "Removes and returns the element at the specified index in the array at path"),
    jcmd("json.arrtrim", WRITE, arrays::arrtrim, "Trims the array at path to contain only the specified inclusive range of indices from start to stop"),
    jcmd("json.objkeys", READONLY, read::objkeys, "Returns the JSON keys of the object at path"),
    jcmd("json.objlen", READONLY, read::objlen, "Returns the number of keys of the object at path"),
    jcmd("json.resp", READONLY, read::resp, "Returns the JSON value at path in Redis Serialization Protocol (RESP)"),
    jcmd("json.debug", READONLY, read::debug, "Debugging container command")
        .key_specs(DEBUG_KEY)
        .keys(2, 2, 1),
];

/// RedisJSON's arity error: names the command in lower case.
pub(crate) fn arity(argv: &[Vec<u8>]) -> OpError {
    OpError::custom(format!(
        "ERR wrong number of arguments for '{}' command",
        String::from_utf8_lossy(&argv[0]).to_ascii_lowercase()
    ))
}

/// Parses a path argument.
pub(crate) fn path(arg: &[u8]) -> OpResult<Path> {
    Path::parse(arg).map_err(|m| JsonError::PathSyntax(m).into())
}

/// The path argument at `i`, or the legacy root when there is none.
pub(crate) fn path_or_root(argv: &[Vec<u8>], i: usize) -> OpResult<Path> {
    match argv.get(i) {
        Some(a) => path(a),
        None => Ok(Path::root()),
    }
}

/// Parses a JSON argument. Documents (`err_prefix` false) are read as RedisJSON
/// reads them, first value only; operands (`err_prefix` true: the commands that
/// word parse errors with `ERR`) must be one value.
pub(crate) fn value(arg: &[u8], err_prefix: bool) -> OpResult<Json> {
    let parsed = if err_prefix {
        json::parse_strict(arg)
    } else {
        json::parse(arg)
    };
    parsed.map_err(|message| {
        JsonError::Parse {
            message,
            err_prefix,
        }
        .into()
    })
}

/// Refuses a value placed `at` levels down that would nest the document deeper
/// than [`json::MAX_DEPTH`].
pub(crate) fn fits(at: usize, v: &Json) -> OpResult<()> {
    if at + json::depth_of(v) > json::MAX_DEPTH {
        return Err(JsonError::TooDeep.into());
    }
    Ok(())
}

/// Reads a JSON key: `None` when missing, RedisJSON's error for other types.
pub(crate) fn doc<'c>(ctx: &'c mut Ctx<'_>, key: &[u8]) -> OpResult<Option<&'c JsonValue>> {
    let db = ctx.db();
    match ctx.ks.get(db, key)? {
        None => Ok(None),
        Some(v) => v.as_json().map(Some).ok_or(JsonError::WrongKeyType.into()),
    }
}

/// A JSON key for writing: `None` when missing, RedisJSON's error for other types.
pub(crate) fn doc_mut<'c>(ctx: &'c mut Ctx<'_>, key: &[u8]) -> OpResult<Option<&'c mut JsonValue>> {
    let db = ctx.db();
    match ctx.ks.get_mut(db, key)? {
        None => Ok(None),
        Some(v) => v
            .as_json_mut()
            .map(Some)
            .ok_or(JsonError::WrongKeyType.into()),
    }
}

/// A JSON key that must exist (`NoKey` otherwise).
pub(crate) fn existing_mut<'c>(ctx: &'c mut Ctx<'_>, key: &[u8]) -> OpResult<&'c mut JsonValue> {
    doc_mut(ctx, key)?.ok_or(JsonError::NoKey.into())
}

/// Stores a new document under `key` (replacing any value and its time to live).
pub(crate) fn store(ctx: &mut Ctx<'_>, key: &[u8], root: Json) -> OpResult<()> {
    let db = ctx.db();
    ctx.ks
        .set(db, key, Value::Json(Box::new(JsonValue::new(root))))
}

/// After a write: the keyspace event RedisJSON emits, or, when nothing changed, no
/// log record.
pub(crate) fn changed(ctx: &mut Ctx<'_>, modified: bool, event: &str, key: &[u8]) {
    if modified {
        ctx.notify(notify::MODULE, event, key);
    } else {
        ctx.log_as(Vec::new());
    }
}

/// Whether replies use RESP3's shapes.
pub(crate) fn resp3(ctx: &Ctx<'_>) -> bool {
    ctx.client.resp >= 3
}
