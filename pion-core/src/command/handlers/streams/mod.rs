//! Stream commands (`XADD`, `XRANGE`, `XREAD`, consumer groups and the rest of
//! Redis's `X*` family) over [`crate::value::StreamValue`].
//!
//! The family is split by concern: `parse` reads ids and trim options, `write` the
//! entry writes (`XADD`, `XTRIM`, `XDEL`, `XSETID`), `read` the range and blocking
//! reads, `deliver` what `XREADGROUP` does to a group, `groups` the group commands,
//! `XACK` and `XPENDING`, `claim` `XCLAIM`/`XAUTOCLAIM`, and `info` `XINFO`. This
//! module holds the command table and the helpers they share.

mod claim;
mod deliver;
mod groups;
mod info;
pub mod parse;
mod read;
mod write;

use crate::command::ctx::Ctx;
use crate::command::flags::*;
use crate::command::{BeginSearch, CommandSpec, FindKeys, Group, KeySpecDoc};
use crate::error::OpResult;
use crate::reply::Reply;
use crate::value::stream::{ConsumerGroup, StreamId};
use crate::value::StreamValue;

pub(crate) use crate::config::keyspace_events::STREAM;

const X: Group = Group::Stream;

/// `XREAD`/`XREADGROUP`'s key spec: the keys after `STREAMS`, half of what follows.
const fn after_streams(startfrom: i32) -> KeySpecDoc {
    KeySpecDoc {
        notes: "",
        flags: &["RO", "access"],
        begin: BeginSearch::Keyword("STREAMS", startfrom),
        find: FindKeys::Range {
            lastkey: -1,
            keystep: 1,
            limit: 2,
        },
    }
}

/// `XGROUP`'s subcommands.
static XGROUP: &[CommandSpec] = &[
    CommandSpec::new("create", -5, WRITE | DENYOOM, X, groups::create)
        .key_specs(&[KeySpecDoc::range(&["RW", "insert"], 2, 0, 1, 0)])
        .keys(2, 2, 1)
        .doc("Create a consumer group.", "5.0.0"),
    CommandSpec::new(
        "createconsumer",
        5,
        WRITE | DENYOOM,
        X,
        groups::createconsumer,
    )
    .key_specs(&[KeySpecDoc::range(&["RW", "insert"], 2, 0, 1, 0)])
    .keys(2, 2, 1)
    .doc("Create a consumer in a consumer group.", "6.2.0"),
    CommandSpec::new("delconsumer", 5, WRITE, X, groups::delconsumer)
        .key_specs(&[KeySpecDoc::range(&["RW", "delete"], 2, 0, 1, 0)])
        .keys(2, 2, 1)
        .doc("Delete a consumer from a consumer group.", "5.0.0"),
    CommandSpec::new("destroy", 4, WRITE, X, groups::destroy)
        .key_specs(&[KeySpecDoc::range(&["RW", "delete"], 2, 0, 1, 0)])
        .keys(2, 2, 1)
        .doc("Destroy a consumer group.", "5.0.0"),
    CommandSpec::new("help", 2, LOADING | STALE, X, groups::help)
        .doc("Show helpful text about the different subcommands", "5.0.0"),
    CommandSpec::new("setid", -5, WRITE, X, groups::setid)
        .key_specs(&[KeySpecDoc::range(&["RW", "update"], 2, 0, 1, 0)])
        .keys(2, 2, 1)
        .doc(
            "Set a consumer group to an arbitrary last delivered ID value.",
            "5.0.0",
        ),
];

/// `XINFO`'s subcommands.
static XINFO: &[CommandSpec] = &[
    CommandSpec::new("consumers", 4, READONLY, X, info::consumers)
        .key_specs(&[KeySpecDoc::range(&["RO", "access"], 2, 0, 1, 0)])
        .tips(&["nondeterministic_output"])
        .keys(2, 2, 1)
        .doc("List the consumers in a consumer group", "5.0.0"),
    CommandSpec::new("groups", 3, READONLY, X, info::groups)
        .key_specs(&[KeySpecDoc::range(&["RO", "access"], 2, 0, 1, 0)])
        .keys(2, 2, 1)
        .doc("List the consumer groups of a stream", "5.0.0"),
    CommandSpec::new("help", 2, LOADING | STALE, X, info::help)
        .doc("Show helpful text about the different subcommands", "5.0.0"),
    CommandSpec::new("stream", -3, READONLY, X, info::stream_info)
        .key_specs(&[KeySpecDoc::range(&["RO", "access"], 2, 0, 1, 0)])
        .keys(2, 2, 1)
        .doc("Get information about a stream", "5.0.0"),
];

/// This family's part of the command table.
pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("xack", -4, WRITE | FAST, X, groups::xack)
        .key_specs(&[KeySpecDoc::range(&["RW", "update"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc("Marks a pending message as correctly processed, effectively removing it from the pending entries list of the consumer group. Return value of the command is the number of messages successfully acknowledged, that is, the IDs we were actually able to resolve in the PEL.", "5.0.0"),
    CommandSpec::new("xadd", -5, WRITE | DENYOOM | FAST, X, write::xadd)
        .key_specs(&[KeySpecDoc::range(&["RW", "update"], 1, 0, 1, 0)
            .with_notes("UPDATE instead of INSERT because of the optional trimming feature")])
        .tips(&["nondeterministic_output"])
        .keys(1, 1, 1)
        .doc("Appends a new entry to a stream", "5.0.0"),
    CommandSpec::new("xautoclaim", -6, WRITE | FAST, X, claim::xautoclaim)
        .key_specs(&[KeySpecDoc::range(&["RW", "delete"], 1, 0, 1, 0)])
        .tips(&["nondeterministic_output"])
        .keys(1, 1, 1)
        .doc("Changes (or acquires) ownership of messages in a consumer group, as if the messages were delivered to the specified consumer.", "6.2.0"),
    CommandSpec::new("xclaim", -6, WRITE | FAST, X, claim::xclaim)
        .key_specs(&[KeySpecDoc::range(&["RW", "update"], 1, 0, 1, 0)])
        .tips(&["nondeterministic_output"])
        .keys(1, 1, 1)
        .doc("Changes (or acquires) ownership of a message in a consumer group, as if the message was delivered to the specified consumer.", "5.0.0"),
    CommandSpec::new("xdel", -3, WRITE | FAST, X, write::xdel)
        .key_specs(&[KeySpecDoc::range(&["RW", "delete"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc("Removes the specified entries from the stream. Returns the number of items actually deleted, that may be different from the number of IDs passed in case certain IDs do not exist.", "5.0.0"),
    CommandSpec::container("xgroup", X, XGROUP)
        .doc("A container for consumer groups commands", "5.0.0"),
    CommandSpec::container("xinfo", X, XINFO)
        .doc("A container for stream introspection commands", "5.0.0"),
    CommandSpec::new("xlen", 2, READONLY | FAST, X, read::xlen)
        .key_specs(&[KeySpecDoc::range(&["RO"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc("Return the number of entries in a stream", "5.0.0"),
    CommandSpec::new("xpending", -3, READONLY, X, groups::xpending)
        .key_specs(&[KeySpecDoc::range(&["RO", "access"], 1, 0, 1, 0)])
        .tips(&["nondeterministic_output"])
        .keys(1, 1, 1)
        .doc("Return information and entries from a stream consumer group pending entries list, that are messages fetched but never acknowledged.", "5.0.0"),
    CommandSpec::new("xrange", -4, READONLY, X, read::xrange)
        .key_specs(&[KeySpecDoc::range(&["RO", "access"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc("Return a range of elements in a stream, with IDs matching the specified IDs interval", "5.0.0"),
    CommandSpec::new("xread", -4, BLOCKING | READONLY, X, read::xread)
        .key_specs(&[after_streams(1)])
        .movable(read::xread_keys)
        .doc("Return never seen elements in multiple streams, with IDs greater than the ones reported by the caller for each stream. Can block.", "5.0.0"),
    CommandSpec::new("xreadgroup", -7, BLOCKING | WRITE, X, read::xreadgroup)
        .key_specs(&[after_streams(4)])
        .movable(read::xread_keys)
        .doc("Return new entries from a stream using a consumer group, or access the history of the pending entries for a given consumer. Can block.", "5.0.0"),
    CommandSpec::new("xrevrange", -4, READONLY, X, read::xrevrange)
        .key_specs(&[KeySpecDoc::range(&["RO", "access"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc("Return a range of elements in a stream, with IDs matching the specified IDs interval, in reverse order (from greater to smaller IDs) compared to XRANGE", "5.0.0"),
    CommandSpec::new("xsetid", -3, WRITE | DENYOOM | FAST, X, write::xsetid)
        .key_specs(&[KeySpecDoc::range(&["RW", "update"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc("An internal command for replicating stream values", "5.0.0"),
    CommandSpec::new("xtrim", -4, WRITE, X, write::xtrim)
        .key_specs(&[KeySpecDoc::range(&["RW", "delete"], 1, 0, 1, 0)])
        .tips(&["nondeterministic_output"])
        .keys(1, 1, 1)
        .doc("Trims the stream to (approximately if '~' is passed) a certain size", "5.0.0"),
];

/// The stream at `key` for reading: `Ok(None)` when missing, `WRONGTYPE` for other
/// types.
pub(crate) fn read_stream<'c>(
    ctx: &'c mut Ctx<'_>,
    key: &[u8],
) -> OpResult<Option<&'c StreamValue>> {
    let db = ctx.db();
    match ctx.ks.get(db, key)? {
        None => Ok(None),
        Some(v) => Ok(Some(v.as_stream()?)),
    }
}

/// The stream at `key` for writing: `Ok(None)` when missing, `WRONGTYPE` for other
/// types.
pub(crate) fn write_stream<'c>(
    ctx: &'c mut Ctx<'_>,
    key: &[u8],
) -> OpResult<Option<&'c mut StreamValue>> {
    let db = ctx.db();
    match ctx.ks.get_mut(db, key)? {
        None => Ok(None),
        Some(v) => Ok(Some(v.as_stream_mut()?)),
    }
}

/// An entry as replies carry it: `[id, [field, value, …]]`.
pub(crate) fn entry_reply(id: StreamId, fields: &[Vec<u8>]) -> Reply {
    Reply::Array(vec![
        Reply::Bulk(id.to_bytes()),
        Reply::Array(fields.iter().map(Reply::bulk).collect()),
    ])
}

/// A `HELP` reply: the lines, then Redis's closing two.
fn help_reply(lines: &[&'static str]) -> Reply {
    let mut out: Vec<Reply> = lines.iter().map(|l| Reply::status(l)).collect();
    out.push(Reply::status("HELP"));
    out.push(Reply::status("    Prints this help."));
    Reply::Array(out)
}

/// The pending list a command works on: a stream's key, a group and a consumer.
#[derive(Clone, Copy)]
struct Target<'a> {
    key: &'a [u8],
    group: &'a [u8],
    consumer: &'a [u8],
}

/// A pending entry's state for the `XCLAIM` that restores it.
#[derive(Clone, Copy)]
struct Delivery {
    id: StreamId,
    time: i64,
    count: u64,
}

/// Appends the `XCLAIM` that sets a pending entry's state on replay (Redis's
/// `streamPropagateXCLAIM`, `FORCE` and `LASTID` optional).
fn log_xclaim(
    logged: &mut Vec<Vec<Vec<u8>>>,
    t: Target<'_>,
    d: Delivery,
    force: bool,
    last_id: Option<StreamId>,
) {
    let Delivery { id, time, count } = d;
    let mut cmd = vec![
        b"XCLAIM".to_vec(),
        t.key.to_vec(),
        t.group.to_vec(),
        t.consumer.to_vec(),
        b"0".to_vec(),
        id.to_bytes(),
        b"TIME".to_vec(),
        time.to_string().into_bytes(),
        b"RETRYCOUNT".to_vec(),
        count.to_string().into_bytes(),
    ];
    if force {
        cmd.push(b"FORCE".to_vec());
    }
    cmd.push(b"JUSTID".to_vec());
    if let Some(last) = last_id {
        cmd.push(b"LASTID".to_vec());
        cmd.push(last.to_bytes());
    }
    logged.push(cmd);
}

/// `XGROUP SETID key group last-id ENTRIESREAD n`: a group's position, for the log.
fn setid_command(key: &[u8], group: &[u8], g: &ConsumerGroup) -> Vec<Vec<u8>> {
    vec![
        b"XGROUP".to_vec(),
        b"SETID".to_vec(),
        key.to_vec(),
        group.to_vec(),
        g.last_id.to_bytes(),
        b"ENTRIESREAD".to_vec(),
        g.entries_read.to_string().into_bytes(),
    ]
}

#[cfg(test)]
mod tests;
