//! String commands: Redis's string family (`GET`, `SET` and their variants, counters,
//! ranges, `APPEND`, `LCS`) and the bitmap commands that work on string values
//! (`SETBIT`, `GETBIT`, `BITCOUNT`, `BITPOS`, `BITOP`, `BITFIELD`, `BITFIELD_RO`).
//!
//! The family is split by what the commands do: `get_set` reads and replaces whole
//! values (with expiry options), `counter` does integer and float arithmetic,
//! `range` edits or reads parts of a value, `lcs` compares two values, `bits` reads
//! and edits single bits and bit ranges, and `bitfield` reads and writes integers at
//! bit offsets. This module holds the command table and the helpers they share.

mod bitfield;
mod bits;
mod counter;
mod get_set;
mod lcs;
mod range;

pub use bitfield::bitfield_writes;
pub use bits::popcount;

use crate::command::ctx::Ctx;
use crate::command::flags::*;
use crate::command::handlers::util::int;
use crate::command::KeySpecDoc;
use crate::command::{CommandSpec, Group};
use crate::error::{OpError, OpResult};

/// This family's part of the command table.
pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("get", 2, READONLY | FAST, Group::String, get_set::get)
        .key_specs(&[KeySpecDoc::range(&["RO", "access"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc("Get the value of a key", "1.0.0"),
    CommandSpec::new("set", -3, WRITE | DENYOOM, Group::String, get_set::set)
        .key_specs(&[
            KeySpecDoc::range(&["RW", "access", "update", "variable_flags"], 1, 0, 1, 0)
                .with_notes("RW and ACCESS due to the optional `GET` argument"),
        ])
        .keys(1, 1, 1)
        .doc("Set the string value of a key", "1.0.0"),
    CommandSpec::new(
        "setnx",
        3,
        NOOP_ON_ZERO | WRITE | DENYOOM | FAST,
        Group::String,
        get_set::setnx,
    )
    .key_specs(&[KeySpecDoc::range(&["OW", "insert"], 1, 0, 1, 0)])
    .keys(1, 1, 1)
    .doc(
        "Set the value of a key, only if the key does not exist",
        "1.0.0",
    ),
    CommandSpec::new("setex", 4, WRITE | DENYOOM, Group::String, get_set::setex)
        .key_specs(&[KeySpecDoc::range(&["OW", "update"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc("Set the value and expiration of a key", "2.0.0"),
    CommandSpec::new("psetex", 4, WRITE | DENYOOM, Group::String, get_set::psetex)
        .key_specs(&[KeySpecDoc::range(&["OW", "update"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc(
            "Set the value and expiration in milliseconds of a key",
            "2.6.0",
        ),
    CommandSpec::new(
        "getset",
        3,
        WRITE | DENYOOM | FAST,
        Group::String,
        get_set::getset,
    )
    .key_specs(&[KeySpecDoc::range(&["RW", "access", "update"], 1, 0, 1, 0)])
    .keys(1, 1, 1)
    .doc(
        "Set the string value of a key and return its old value",
        "1.0.0",
    ),
    CommandSpec::new("getdel", 2, WRITE | FAST, Group::String, get_set::getdel)
        .key_specs(&[KeySpecDoc::range(&["RW", "access", "delete"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc("Get the value of a key and delete the key", "6.2.0"),
    CommandSpec::new("getex", -2, WRITE | FAST, Group::String, get_set::getex)
        .key_specs(&[KeySpecDoc::range(&["RW", "access", "update"], 1, 0, 1, 0)
            .with_notes("RW and UPDATE because it changes the TTL")])
        .keys(1, 1, 1)
        .doc(
            "Get the value of a key and optionally set its expiration",
            "6.2.0",
        ),
    CommandSpec::new("mget", -2, READONLY | FAST, Group::String, get_set::mget)
        .key_specs(&[KeySpecDoc::range(&["RO", "access"], 1, -1, 1, 0)])
        .tips(&["request_policy:multi_shard"])
        .keys(1, -1, 1)
        .doc("Get the values of all the given keys", "1.0.0"),
    CommandSpec::new("mset", -3, WRITE | DENYOOM, Group::String, get_set::mset)
        .key_specs(&[KeySpecDoc::range(&["OW", "update"], 1, -1, 2, 0)])
        .tips(&[
            "request_policy:multi_shard",
            "response_policy:all_succeeded",
        ])
        .keys(1, -1, 2)
        .doc("Set multiple keys to multiple values", "1.0.1"),
    CommandSpec::new(
        "msetnx",
        -3,
        NOOP_ON_ZERO | WRITE | DENYOOM,
        Group::String,
        get_set::msetnx,
    )
    .key_specs(&[KeySpecDoc::range(&["OW", "insert"], 1, -1, 2, 0)])
    .tips(&["request_policy:multi_shard", "response_policy:agg_min"])
    .keys(1, -1, 2)
    .doc(
        "Set multiple keys to multiple values, only if none of the keys exist",
        "1.0.1",
    ),
    CommandSpec::new(
        "append",
        3,
        WRITE | DENYOOM | FAST,
        Group::String,
        range::append,
    )
    .key_specs(&[KeySpecDoc::range(&["RW", "insert"], 1, 0, 1, 0)])
    .keys(1, 1, 1)
    .doc("Append a value to a key", "2.0.0"),
    CommandSpec::new("strlen", 2, READONLY | FAST, Group::String, range::strlen)
        .key_specs(&[KeySpecDoc::range(&["RO"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc("Get the length of the value stored in a key", "2.2.0"),
    CommandSpec::new("getrange", 4, READONLY, Group::String, range::getrange)
        .key_specs(&[KeySpecDoc::range(&["RO", "access"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc("Get a substring of the string stored at a key", "2.4.0"),
    CommandSpec::new("substr", 4, READONLY, Group::String, range::getrange)
        .key_specs(&[KeySpecDoc::range(&["RO", "access"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc("Get a substring of the string stored at a key", "1.0.0"),
    CommandSpec::new(
        "setrange",
        4,
        WRITE | DENYOOM,
        Group::String,
        range::setrange,
    )
    .key_specs(&[KeySpecDoc::range(&["RW", "update"], 1, 0, 1, 0)])
    .keys(1, 1, 1)
    .doc(
        "Overwrite part of a string at key starting at the specified offset",
        "2.2.0",
    ),
    CommandSpec::new(
        "incr",
        2,
        WRITE | DENYOOM | FAST,
        Group::String,
        counter::incr,
    )
    .key_specs(&[KeySpecDoc::range(&["RW", "access", "update"], 1, 0, 1, 0)])
    .keys(1, 1, 1)
    .doc("Increment the integer value of a key by one", "1.0.0"),
    CommandSpec::new(
        "decr",
        2,
        WRITE | DENYOOM | FAST,
        Group::String,
        counter::decr,
    )
    .key_specs(&[KeySpecDoc::range(&["RW", "access", "update"], 1, 0, 1, 0)])
    .keys(1, 1, 1)
    .doc("Decrement the integer value of a key by one", "1.0.0"),
    CommandSpec::new(
        "incrby",
        3,
        WRITE | DENYOOM | FAST,
        Group::String,
        counter::incrby,
    )
    .key_specs(&[KeySpecDoc::range(&["RW", "access", "update"], 1, 0, 1, 0)])
    .keys(1, 1, 1)
    .doc(
        "Increment the integer value of a key by the given amount",
        "1.0.0",
    ),
    CommandSpec::new(
        "decrby",
        3,
        WRITE | DENYOOM | FAST,
        Group::String,
        counter::decrby,
    )
    .key_specs(&[KeySpecDoc::range(&["RW", "access", "update"], 1, 0, 1, 0)])
    .keys(1, 1, 1)
    .doc(
        "Decrement the integer value of a key by the given number",
        "1.0.0",
    ),
    CommandSpec::new(
        "incrbyfloat",
        3,
        WRITE | DENYOOM | FAST,
        Group::String,
        counter::incrbyfloat,
    )
    .key_specs(&[KeySpecDoc::range(&["RW", "access", "update"], 1, 0, 1, 0)])
    .keys(1, 1, 1)
    .doc(
        "Increment the float value of a key by the given amount",
        "2.6.0",
    ),
    CommandSpec::new("lcs", -3, READONLY, Group::String, lcs::lcs)
        .key_specs(&[KeySpecDoc::range(&["RO", "access"], 1, 1, 1, 0)])
        .keys(1, 2, 1)
        .doc("Find longest common substring", "7.0.0"),
    // Bitmaps: string values, but Redis's `@bitmap` category and `bitmap` group.
    CommandSpec::new("setbit", 4, WRITE | DENYOOM, Group::Bitmap, bits::setbit)
        .key_specs(&[KeySpecDoc::range(&["RW", "access", "update"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc(
            "Sets or clears the bit at offset in the string value stored at key",
            "2.2.0",
        ),
    CommandSpec::new("getbit", 3, READONLY | FAST, Group::Bitmap, bits::getbit)
        .key_specs(&[KeySpecDoc::range(&["RO", "access"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc(
            "Returns the bit value at offset in the string value stored at key",
            "2.2.0",
        ),
    CommandSpec::new("bitcount", -2, READONLY, Group::Bitmap, bits::bitcount)
        .key_specs(&[KeySpecDoc::range(&["RO", "access"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc("Count set bits in a string", "2.6.0"),
    CommandSpec::new("bitpos", -3, READONLY, Group::Bitmap, bits::bitpos)
        .key_specs(&[KeySpecDoc::range(&["RO", "access"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc("Find first bit set or clear in a string", "2.8.7"),
    CommandSpec::new("bitop", -4, WRITE | DENYOOM, Group::Bitmap, bits::bitop)
        .key_specs(&[
            KeySpecDoc::range(&["OW", "update"], 2, 0, 1, 0),
            KeySpecDoc::range(&["RO", "access"], 3, -1, 1, 0),
        ])
        .keys(2, -1, 1)
        .doc("Perform bitwise operations between strings", "2.6.0"),
    CommandSpec::new(
        "bitfield",
        -2,
        WRITE | DENYOOM,
        Group::Bitmap,
        bitfield::bitfield,
    )
    .key_specs(&[
        KeySpecDoc::range(&["RW", "access", "update", "variable_flags"], 1, 0, 1, 0)
            .with_notes("This command allows both access and modification of the key"),
    ])
    .keys(1, 1, 1)
    .doc(
        "Perform arbitrary bitfield integer operations on strings",
        "3.2.0",
    ),
    CommandSpec::new(
        "bitfield_ro",
        -2,
        READONLY | FAST,
        Group::Bitmap,
        bitfield::bitfield_ro,
    )
    .key_specs(&[KeySpecDoc::range(&["RO", "access"], 1, 0, 1, 0)])
    .keys(1, 1, 1)
    .doc(
        "Perform arbitrary bitfield integer operations on strings. Read-only variant of BITFIELD",
        "6.0.0",
    ),
];

/// Reads a string key: `Ok(None)` when missing, `WRONGTYPE` for other types.
pub(crate) fn read_string(ctx: &mut Ctx<'_>, key: &[u8]) -> OpResult<Option<Vec<u8>>> {
    let db = ctx.db();
    match ctx.ks.get(db, key)? {
        None => Ok(None),
        Some(v) => Ok(Some(v.as_str()?.as_bytes().to_vec())),
    }
}

/// Whether a key exists, looked up as a write does in Redis: the access time is
/// touched but no keyspace hit or miss is counted.
fn exists_for_write(ctx: &mut Ctx<'_>, key: &[u8]) -> OpResult<bool> {
    let db = ctx.db();
    Ok(ctx.ks.entry(db, key)?.is_some())
}

/// Which expiry option a SET/GETEX-style command carried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ExpireUnit {
    /// Relative seconds (`EX`).
    Seconds,
    /// Relative milliseconds (`PX`).
    Millis,
    /// Absolute Unix seconds (`EXAT`).
    UnixSeconds,
    /// Absolute Unix milliseconds (`PXAT`).
    UnixMillis,
}

/// Converts an expiry argument into an absolute Unix-ms deadline, with Redis's checks
/// and its `invalid expire time in '<cmd>' command` error.
pub(crate) fn expire_deadline(
    arg: &[u8],
    unit: ExpireUnit,
    now_ms: i64,
    cmd: &str,
) -> OpResult<i64> {
    let v = int(arg)?;
    let invalid = || OpError::custom(format!("ERR invalid expire time in '{cmd}' command"));
    if v <= 0 {
        return Err(invalid());
    }
    let ms = match unit {
        ExpireUnit::Seconds | ExpireUnit::UnixSeconds => v.checked_mul(1000).ok_or_else(invalid)?,
        ExpireUnit::Millis | ExpireUnit::UnixMillis => v,
    };
    match unit {
        ExpireUnit::Seconds | ExpireUnit::Millis => ms.checked_add(now_ms).ok_or_else(invalid),
        ExpireUnit::UnixSeconds | ExpireUnit::UnixMillis => Ok(ms),
    }
}

/// The expiry unit an option keyword names (`EX`, `PX`, `EXAT`, `PXAT`), if any.
fn expire_keyword(opt: &[u8]) -> Option<ExpireUnit> {
    use crate::command::handlers::util::is_kw;
    if is_kw(opt, "ex") {
        Some(ExpireUnit::Seconds)
    } else if is_kw(opt, "px") {
        Some(ExpireUnit::Millis)
    } else if is_kw(opt, "exat") {
        Some(ExpireUnit::UnixSeconds)
    } else if is_kw(opt, "pxat") {
        Some(ExpireUnit::UnixMillis)
    } else {
        None
    }
}

/// The `proto-max-bulk-len` check that `APPEND` and `SETRANGE` make before growing a
/// string to `total` bytes.
fn check_string_length(ctx: &Ctx<'_>, total: u128) -> OpResult<()> {
    let max = ctx.config().with(|c| c.proto_max_bulk_len);
    if total > u128::from(max) {
        return Err(OpError::custom(
            "ERR string exceeds maximum allowed size (proto-max-bulk-len)",
        ));
    }
    Ok(())
}

/// A byte length or index as a reply integer (allocations never exceed `i64::MAX`
/// bytes, so the fallback is unreachable).
fn len_reply(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests;
