//! Generic key commands: the ones that work on a key whatever its type (`DEL`,
//! `EXISTS`, `TYPE`, `RENAME`, `COPY`, `MOVE`, …), plus the families that need more room
//! and live in submodules: time to live ([`expire`]), keyspace walks ([`walk`]),
//! `OBJECT` ([`object`]) and `SORT` ([`sort`]).
//!
//! Redis distinguishes three ways of looking a key up, and clients can observe the
//! difference through `OBJECT IDLETIME` and the `keyspace_hits`/`keyspace_misses`
//! counters of `INFO stats`. This module keeps them apart:
//! [`peek_counted`] (counts, does not touch: `EXISTS`, `TYPE`, `TTL`, `OBJECT`),
//! `Locked::entry` (touches, does not count: `EXPIRE`, `PERSIST`, `MOVE`) and
//! `Locked::get` (both: `TOUCH`, `COPY`'s source, `SORT`).

mod expire;
mod object;
mod sort;
mod walk;

use crate::pubsub::notify;

use crate::command::ctx::Ctx;
use crate::command::flags::*;
use crate::command::handlers::server::db_index;
use crate::command::handlers::util::is_kw;
use crate::command::{BeginSearch, FindKeys, KeySpecDoc};
use crate::command::{CommandSpec, Group};
use crate::error::{OpError, OpResult};
use crate::keyspace::Entry;
use crate::reply::Reply;

/// This family's part of the command table.
pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("del", -2, NOOP_ON_ZERO | WRITE, Group::Keyspace, del)
        .key_specs(&[KeySpecDoc::range(&["RM", "delete"], 1, -1, 1, 0)])
        .tips(&["request_policy:multi_shard", "response_policy:agg_sum"])
        .keys(1, -1, 1)
        .doc("Delete a key", "1.0.0"),
    CommandSpec::new("unlink", -2, NOOP_ON_ZERO | WRITE | FAST, Group::Keyspace, del)
        .key_specs(&[KeySpecDoc::range(&["RM", "delete"], 1, -1, 1, 0)])
        .tips(&["request_policy:multi_shard", "response_policy:agg_sum"])
        .keys(1, -1, 1)
        .doc(
            "Deletes one or more keys (Pion frees them at once, like DEL).",
            "4.0.0",
        ),
    CommandSpec::new("exists", -2, READONLY | FAST, Group::Keyspace, exists)
        .key_specs(&[KeySpecDoc::range(&["RO"], 1, -1, 1, 0)])
        .tips(&["request_policy:multi_shard", "response_policy:agg_sum"])
        .keys(1, -1, 1)
        .doc("Determine if a key exists", "1.0.0"),
    CommandSpec::new("touch", -2, READONLY | FAST, Group::Keyspace, touch)
        .key_specs(&[KeySpecDoc::range(&["RO"], 1, -1, 1, 0)])
        .tips(&["request_policy:multi_shard", "response_policy:agg_sum"])
        .keys(1, -1, 1)
        .doc(
            "Alters the last access time of a key(s). Returns the number of existing keys specified.",
            "3.2.1",
        ),
    CommandSpec::new("type", 2, READONLY | FAST, Group::Keyspace, type_cmd)
        .key_specs(&[KeySpecDoc::range(&["RO"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc("Determine the type stored at key", "1.0.0"),
    CommandSpec::new("expire", -3, NOOP_ON_ZERO | WRITE | FAST, Group::Keyspace, expire::expire)
        .key_specs(&[KeySpecDoc::range(&["RW", "update"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc("Set a key's time to live in seconds", "1.0.0"),
    CommandSpec::new("pexpire", -3, NOOP_ON_ZERO | WRITE | FAST, Group::Keyspace, expire::expire)
        .key_specs(&[KeySpecDoc::range(&["RW", "update"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc("Set a key's time to live in milliseconds", "2.6.0"),
    CommandSpec::new("expireat", -3, NOOP_ON_ZERO | WRITE | FAST, Group::Keyspace, expire::expire)
        .key_specs(&[KeySpecDoc::range(&["RW", "update"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc("Set the expiration for a key as a UNIX timestamp", "1.2.0"),
    CommandSpec::new("pexpireat", -3, NOOP_ON_ZERO | WRITE | FAST, Group::Keyspace, expire::expire)
        .key_specs(&[KeySpecDoc::range(&["RW", "update"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc(
            "Set the expiration for a key as a UNIX timestamp specified in milliseconds",
            "2.6.0",
        ),
    CommandSpec::new("expiretime", 2, READONLY | FAST, Group::Keyspace, expire::ttl)
        .key_specs(&[KeySpecDoc::range(&["RO", "access"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc("Get the expiration Unix timestamp for a key", "7.0.0"),
    CommandSpec::new("pexpiretime", 2, READONLY | FAST, Group::Keyspace, expire::ttl)
        .key_specs(&[KeySpecDoc::range(&["RO", "access"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc(
            "Get the expiration Unix timestamp for a key in milliseconds",
            "7.0.0",
        ),
    CommandSpec::new("ttl", 2, READONLY | FAST, Group::Keyspace, expire::ttl)
        .key_specs(&[KeySpecDoc::range(&["RO", "access"], 1, 0, 1, 0)])
        .tips(&["nondeterministic_output"])
        .keys(1, 1, 1)
        .doc("Get the time to live for a key in seconds", "1.0.0"),
    CommandSpec::new("pttl", 2, READONLY | FAST, Group::Keyspace, expire::ttl)
        .key_specs(&[KeySpecDoc::range(&["RO", "access"], 1, 0, 1, 0)])
        .tips(&["nondeterministic_output"])
        .keys(1, 1, 1)
        .doc("Get the time to live for a key in milliseconds", "2.6.0"),
    CommandSpec::new("persist", 2, NOOP_ON_ZERO | WRITE | FAST, Group::Keyspace, expire::persist)
        .key_specs(&[KeySpecDoc::range(&["RW", "update"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc("Remove the expiration from a key", "2.2.0"),
    CommandSpec::new("rename", 3, WRITE, Group::Keyspace, rename)
        .key_specs(&[KeySpecDoc::range(&["RW", "access", "delete"], 1, 0, 1, 0), KeySpecDoc::range(&["OW", "update"], 2, 0, 1, 0)])
        .keys(1, 2, 1)
        .doc("Rename a key", "1.0.0"),
    CommandSpec::new("renamenx", 3, NOOP_ON_ZERO | WRITE | FAST, Group::Keyspace, rename)
        .key_specs(&[KeySpecDoc::range(&["RW", "access", "delete"], 1, 0, 1, 0), KeySpecDoc::range(&["OW", "insert"], 2, 0, 1, 0)])
        .keys(1, 2, 1)
        .doc("Rename a key, only if the new key does not exist", "1.0.0"),
    CommandSpec::new("copy", -3, NOOP_ON_ZERO | WRITE | DENYOOM, Group::Keyspace, copy)
        .key_specs(&[KeySpecDoc::range(&["RO", "access"], 1, 0, 1, 0), KeySpecDoc::range(&["OW", "update"], 2, 0, 1, 0)])
        .keys(1, 2, 1)
        .doc("Copy a key", "6.2.0"),
    CommandSpec::new("move", 3, NOOP_ON_ZERO | WRITE | FAST, Group::Keyspace, move_cmd)
        .key_specs(&[KeySpecDoc::range(&["RW", "access", "update"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc("Move a key to another database", "1.0.0"),
    CommandSpec::new("keys", 2, READONLY | DANGEROUS, Group::Keyspace, walk::keys).tips(&["request_policy:all_shards", "nondeterministic_output_order"])
        .whole_keyspace()
        .doc("Find all keys matching the given pattern", "1.0.0"),
    // SCAN declares no keys and no whole-keyspace lock: the walk locks one shard at a
    // time itself, so a long SCAN never stalls other clients.
    CommandSpec::new("scan", -2, READONLY, Group::Keyspace, walk::scan).tips(&["nondeterministic_output", "request_policy:special"])
        .doc("Incrementally iterate the keys space", "2.8.0"),
    CommandSpec::new("randomkey", 1, READONLY, Group::Keyspace, walk::randomkey).tips(&["request_policy:all_shards", "nondeterministic_output"])
        .whole_keyspace()
        .doc("Return a random key from the keyspace", "1.0.0"),
    CommandSpec::container("object", Group::Keyspace, object::SUBCOMMANDS)
        .doc("A container for object introspection commands", "2.2.3"),
    CommandSpec::new("sort", -2, WRITE | DENYOOM | DANGEROUS, Group::List, sort::sort)
        .key_specs(&[KeySpecDoc::range(&["RO", "access"], 1, 0, 1, 0), KeySpecDoc { notes: "", flags: &["RO", "access"], begin: BeginSearch::Unknown, find: FindKeys::Unknown }.with_notes("For the optional BY/GET keyword. It is marked 'unknown' because the key names derive from the content of the key we sort"), KeySpecDoc { notes: "", flags: &["OW", "update"], begin: BeginSearch::Unknown, find: FindKeys::Unknown }.with_notes("For the optional STORE keyword. It is marked 'unknown' because the keyword can appear anywhere in the argument array")])
        .categories(&["set", "sortedset", "list"])
        .keys(1, 1, 1)
        .movable(sort::sort_keys)
        .whole_keyspace()
        .doc("Sort the elements in a list, set or sorted set", "1.0.0"),
    CommandSpec::new("sort_ro", -2, READONLY | DANGEROUS, Group::List, sort::sort)
        .key_specs(&[KeySpecDoc::range(&["RO", "access"], 1, 0, 1, 0), KeySpecDoc { notes: "", flags: &["RO", "access"], begin: BeginSearch::Unknown, find: FindKeys::Unknown }.with_notes("For the optional BY/GET keyword. It is marked 'unknown' because the key names derive from the content of the key we sort")])
        .categories(&["set", "sortedset", "list"])
        .keys(1, 1, 1)
        .movable(sort::sort_ro_keys)
        .whole_keyspace()
        .doc(
            "Sort the elements in a list, set or sorted set. Read-only variant of SORT.",
            "7.0.0",
        ),
];

/// Looks a key up the way Redis's read commands with `LOOKUP_NOTOUCH` do: the access
/// time stays as it was, but the lookup counts as a keyspace hit or miss.
pub(crate) fn peek_counted<'c>(
    ctx: &'c mut Ctx<'_>,
    db: usize,
    key: &[u8],
) -> OpResult<Option<&'c Entry>> {
    let stats = ctx.ks.keyspace().stats();
    let found = ctx.ks.peek(db, key)?;
    stats.count_lookup(found.is_some());
    Ok(found)
}

/// `DEL` and `UNLINK` (Pion frees values in place either way).
fn del(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let db = ctx.db();
    let mut removed = 0;
    for key in &argv[1..] {
        if ctx.ks.remove(db, key)?.is_some() {
            ctx.notify(notify::GENERIC, "del", key);
            removed += 1;
        }
    }
    Ok(Reply::Integer(removed))
}

/// `EXISTS`: counts every argument that names a live key, repeats included.
fn exists(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let db = ctx.db();
    let mut found = 0;
    for key in &argv[1..] {
        if peek_counted(ctx, db, key)?.is_some() {
            found += 1;
        }
    }
    Ok(Reply::Integer(found))
}

/// `TOUCH`: a read lookup of each key, which refreshes its access time.
fn touch(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let db = ctx.db();
    let mut found = 0;
    for key in &argv[1..] {
        if ctx.ks.get(db, key)?.is_some() {
            found += 1;
        }
    }
    Ok(Reply::Integer(found))
}

fn type_cmd(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let db = ctx.db();
    let name = peek_counted(ctx, db, &argv[1])?.map_or("none", |e| e.value.type_name());
    Ok(Reply::status(name))
}

/// `RENAME` and `RENAMENX`: the value moves with its time to live.
fn rename(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let nx = is_kw(&argv[0], "renamenx");
    let (src, dst) = (&argv[1], &argv[2]);
    let db = ctx.db();
    if ctx.ks.entry(db, src)?.is_none() {
        return Err(OpError::NoSuchKey);
    }
    let done = if nx { Reply::Integer(1) } else { Reply::ok() };
    if src == dst {
        return Ok(if nx { Reply::Integer(0) } else { done });
    }
    if nx && ctx.ks.exists(db, dst)? {
        return Ok(Reply::Integer(0));
    }
    if let Some(entry) = ctx.ks.take_entry(db, src)? {
        ctx.ks.put_entry(db, dst, entry)?;
        ctx.notify(notify::GENERIC, "rename_from", src);
        ctx.notify(notify::GENERIC, "rename_to", dst);
    }
    Ok(done)
}

/// `COPY source destination [DB n] [REPLACE]`.
fn copy(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let src_db = ctx.db();
    let mut dst_db = src_db;
    let mut replace = false;
    let mut j = 3;
    while j < argv.len() {
        if is_kw(&argv[j], "replace") {
            replace = true;
        } else if is_kw(&argv[j], "db") && j + 1 < argv.len() {
            dst_db = db_index(ctx, &argv[j + 1])?;
            j += 1;
        } else {
            return Err(OpError::Syntax);
        }
        j += 1;
    }
    let (src, dst) = (&argv[1], &argv[2]);
    if src == dst && src_db == dst_db {
        return Err(OpError::SameObject);
    }
    let Some(value) = ctx.ks.get(src_db, src)?.cloned() else {
        return Ok(Reply::Integer(0));
    };
    let deadline = ctx.ks.expire_at(src_db, src)?.flatten();
    if ctx.ks.exists(dst_db, dst)? && !replace {
        return Ok(Reply::Integer(0));
    }
    ctx.ks.set(dst_db, dst, value)?;
    ctx.ks.set_expire_at(dst_db, dst, deadline)?;
    ctx.notify_db(notify::GENERIC, "copy_to", dst, dst_db);
    Ok(Reply::Integer(1))
}

/// `MOVE key db`: the same key name in another database lives in the same shard, so
/// the declared key covers both ends.
fn move_cmd(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let src_db = ctx.db();
    let dst_db = db_index(ctx, &argv[2])?;
    if dst_db == src_db {
        return Err(OpError::SameObject);
    }
    let key = &argv[1];
    if ctx.ks.entry(src_db, key)?.is_none() || ctx.ks.exists(dst_db, key)? {
        return Ok(Reply::Integer(0));
    }
    if let Some(entry) = ctx.ks.take_entry(src_db, key)? {
        ctx.ks.put_entry(dst_db, key, entry)?;
        ctx.notify_db(notify::GENERIC, "move_from", key, src_db);
        ctx.notify_db(notify::GENERIC, "move_to", key, dst_db);
    }
    Ok(Reply::Integer(1))
}

#[cfg(test)]
mod tests;
