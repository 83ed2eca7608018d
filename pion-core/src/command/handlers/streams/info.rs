//! `XINFO STREAM [FULL [COUNT n]] | GROUPS | CONSUMERS | HELP`: a stream's
//! bookkeeping, its groups with their lag and read counters, and their consumers.

use super::{entry_reply, read_stream};
use crate::command::ctx::Ctx;
use crate::command::handlers::util::is_kw;
use crate::error::{OpError, OpResult, StreamError};
use crate::reply::Reply;
use crate::util::num::parse_i64;
use crate::value::stream::{ConsumerGroup, StreamId, INVALID_ENTRIES_READ};
use crate::value::StreamValue;

fn field(name: &'static str, value: Reply) -> (Reply, Reply) {
    (Reply::bulk(name), value)
}

fn id(id: StreamId) -> Reply {
    Reply::Bulk(id.to_bytes())
}

fn entries_read(g: &ConsumerGroup) -> Reply {
    if g.entries_read == INVALID_ENTRIES_READ {
        Reply::Null
    } else {
        Reply::Integer(g.entries_read)
    }
}

fn lag(s: &StreamValue, g: &ConsumerGroup) -> Reply {
    s.lag(g).map_or(Reply::Null, Reply::Integer)
}

/// The stream's key, required: `ERR no such key` when missing.
fn stream<'c>(ctx: &'c mut Ctx<'_>, key: &[u8]) -> OpResult<&'c StreamValue> {
    read_stream(ctx, key)?.ok_or(OpError::NoSuchKey)
}

/// `XINFO STREAM key [FULL [COUNT count]]`.
pub(super) fn stream_info(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let s = stream(ctx, &argv[2])?;
    let opts = &argv[3..];
    let mut count: usize = 10;
    let full = !opts.is_empty();
    if full {
        if (opts.len() != 1 && opts.len() != 3) || !is_kw(&opts[0], "full") {
            return Err(OpError::subcommand_syntax(argv));
        }
        if opts.len() == 3 {
            if !is_kw(&opts[1], "count") {
                return Err(OpError::subcommand_syntax(argv));
            }
            let n = parse_i64(&opts[2]).ok_or(OpError::NotInteger)?;
            count = if n < 0 { 10 } else { n as usize };
        }
    }
    let limit = if count == 0 { usize::MAX } else { count };
    let mut out = vec![
        field("length", Reply::Integer(s.len() as i64)),
        field("radix-tree-keys", Reply::Integer(s.node_count() as i64)),
        field(
            "radix-tree-nodes",
            Reply::Integer(s.node_count() as i64 + 1),
        ),
        field("last-generated-id", id(s.last_id)),
        field("max-deleted-entry-id", id(s.max_deleted)),
        field("entries-added", Reply::Integer(s.entries_added as i64)),
        field("recorded-first-entry-id", id(s.first_id)),
    ];
    if !full {
        out.push(field("groups", Reply::Integer(s.groups.len() as i64)));
        let first = s
            .first_entry()
            .map_or(Reply::Null, |(i, f)| entry_reply(i, f));
        let last = s
            .last_entry()
            .map_or(Reply::Null, |(i, f)| entry_reply(i, f));
        out.push(field("first-entry", first));
        out.push(field("last-entry", last));
        return Ok(Reply::Map(out));
    }
    let entries = s
        .range(StreamId::MIN, StreamId::MAX, false)
        .take(limit)
        .map(|(i, f)| entry_reply(i, f))
        .collect();
    out.push(field("entries", Reply::Array(entries)));
    let groups = s
        .groups
        .iter()
        .map(|(name, g)| {
            let pending = g
                .pel
                .iter()
                .take(limit)
                .map(|(i, p)| {
                    Reply::Array(vec![
                        id(*i),
                        Reply::bulk(&p.consumer),
                        Reply::Integer(p.delivery_time),
                        Reply::Integer(p.delivery_count as i64),
                    ])
                })
                .collect();
            let consumers = g
                .consumers
                .iter()
                .map(|(cname, c)| {
                    let pel = c
                        .pel
                        .iter()
                        .take(limit)
                        .filter_map(|i| g.pel.get(i).map(|p| (i, p)))
                        .map(|(i, p)| {
                            Reply::Array(vec![
                                id(*i),
                                Reply::Integer(p.delivery_time),
                                Reply::Integer(p.delivery_count as i64),
                            ])
                        })
                        .collect();
                    Reply::Map(vec![
                        field("name", Reply::bulk(cname)),
                        field("seen-time", Reply::Integer(c.seen_time)),
                        field("pel-count", Reply::Integer(c.pel.len() as i64)),
                        field("pending", Reply::Array(pel)),
                    ])
                })
                .collect();
            Reply::Map(vec![
                field("name", Reply::bulk(name)),
                field("last-delivered-id", id(g.last_id)),
                field("entries-read", entries_read(g)),
                field("lag", lag(s, g)),
                field("pel-count", Reply::Integer(g.pel.len() as i64)),
                field("pending", Reply::Array(pending)),
                field("consumers", Reply::Array(consumers)),
            ])
        })
        .collect();
    out.push(field("groups", Reply::Array(groups)));
    Ok(Reply::Map(out))
}

/// `XINFO GROUPS key`.
pub(super) fn groups(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let s = stream(ctx, &argv[2])?;
    Ok(Reply::Array(
        s.groups
            .iter()
            .map(|(name, g)| {
                Reply::Map(vec![
                    field("name", Reply::bulk(name)),
                    field("consumers", Reply::Integer(g.consumers.len() as i64)),
                    field("pending", Reply::Integer(g.pel.len() as i64)),
                    field("last-delivered-id", id(g.last_id)),
                    field("entries-read", entries_read(g)),
                    field("lag", lag(s, g)),
                ])
            })
            .collect(),
    ))
}

/// `XINFO CONSUMERS key group`.
pub(super) fn consumers(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let now = ctx.now_ms();
    let s = stream(ctx, &argv[2])?;
    let Some(g) = s.groups.get(&argv[3]) else {
        return Err(StreamError::NoGroup(argv[3].clone(), argv[2].clone()).into());
    };
    Ok(Reply::Array(
        g.consumers
            .iter()
            .map(|(name, c)| {
                Reply::Map(vec![
                    field("name", Reply::bulk(name)),
                    field("pending", Reply::Integer(c.pel.len() as i64)),
                    field("idle", Reply::Integer((now - c.seen_time).max(0))),
                ])
            })
            .collect(),
    ))
}

/// `XINFO HELP`.
pub(super) fn help(_: &mut Ctx<'_>, _: &[Vec<u8>]) -> OpResult<Reply> {
    Ok(super::help_reply(&[
        "XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CONSUMERS <key> <groupname>",
        "    Show consumers of <groupname>.",
        "GROUPS <key>",
        "    Show the stream consumer groups.",
        "STREAM <key> [FULL [COUNT <count>]",
        "    Show information about the stream.",
    ]))
}
