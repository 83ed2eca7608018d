//! Consumer-group management: `XGROUP CREATE | SETID | DESTROY | CREATECONSUMER |
//! DELCONSUMER | HELP`, `XACK` and `XPENDING`.

use super::parse::{interval_id, loose_id, strict_id};
use super::{read_stream, write_stream, STREAM};
use crate::command::ctx::{Ctx, Effect};
use crate::command::handlers::util::is_kw;
use crate::error::{OpError, OpResult, StreamError};
use crate::reply::Reply;
use crate::util::num::parse_i64;
use crate::value::stream::{ConsumerGroup, StreamId, INVALID_ENTRIES_READ};
use crate::value::{StreamValue, Value};
use smallvec::SmallVec;

/// What every `XGROUP` subcommand but HELP checks first: the options after the id
/// (`MKSTREAM`, `ENTRIESREAD`), the key's type, the key's and group's existence.
struct GroupArgs {
    mkstream: bool,
    entries_read: i64,
    exists: bool,
    has_group: bool,
}

fn group_args(ctx: &mut Ctx<'_>, argv: &[Vec<u8>], sub: &str) -> OpResult<GroupArgs> {
    let mut out = GroupArgs {
        mkstream: false,
        entries_read: INVALID_ENTRIES_READ,
        exists: false,
        has_group: false,
    };
    let create = sub == "create";
    let setid = sub == "setid";
    let mut i = 5;
    while i < argv.len() {
        if create && is_kw(&argv[i], "mkstream") {
            out.mkstream = true;
            i += 1;
        } else if (create || setid) && is_kw(&argv[i], "entriesread") && i + 1 < argv.len() {
            let n = parse_i64(&argv[i + 1]).ok_or(OpError::NotInteger)?;
            if n < 0 && n != INVALID_ENTRIES_READ {
                return Err(StreamError::EntriesReadNegative.into());
            }
            out.entries_read = n;
            i += 2;
        } else {
            return Err(OpError::subcommand_syntax(argv));
        }
    }
    if let Some(s) = read_stream(ctx, &argv[2])? {
        out.exists = true;
        out.has_group = s.groups.contains_key(&argv[3]);
    }
    if !out.mkstream {
        if !out.exists {
            return Err(StreamError::XgroupNeedsKey.into());
        }
        if !out.has_group && matches!(sub, "setid" | "createconsumer" | "delconsumer") {
            return Err(StreamError::NoGroup(argv[3].clone(), argv[2].clone()).into());
        }
    }
    Ok(out)
}

/// The group `argv[3]` of the stream `argv[2]`, checked by [`group_args`].
fn group_mut<'c>(ctx: &'c mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<&'c mut ConsumerGroup> {
    write_stream(ctx, &argv[2])?
        .and_then(|s| s.groups.get_mut(&argv[3]))
        .ok_or_else(|| StreamError::NoGroup(argv[3].clone(), argv[2].clone()).into())
}

/// `XGROUP CREATE key group id|$ [MKSTREAM] [ENTRIESREAD n]`.
pub(super) fn create(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    if argv.len() > 8 {
        return Err(OpError::subcommand_syntax(argv));
    }
    let args = group_args(ctx, argv, "create")?;
    let db = ctx.db();
    let id = if argv[4].as_slice() == b"$" {
        read_stream(ctx, &argv[2])?.map_or(StreamId::MIN, |s| s.last_id)
    } else {
        strict_id(&argv[4])?
    };
    if !args.exists {
        ctx.ks
            .set(db, &argv[2], Value::Stream(Box::new(StreamValue::new())))?;
    }
    let Some(s) = write_stream(ctx, &argv[2])? else {
        return Err(OpError::NoSuchKey);
    };
    if s.groups.contains_key(&argv[3]) {
        if !args.exists {
            return Ok(Reply::status("OK"));
        }
        ctx.effect = Effect::Nothing;
        return Err(StreamError::BusyGroup.into());
    }
    s.groups
        .insert(argv[3].clone(), ConsumerGroup::new(id, args.entries_read));
    ctx.notify(STREAM, "xgroup-create", &argv[2]);
    Ok(Reply::status("OK"))
}

/// `XGROUP SETID key group id|$ [ENTRIESREAD n]`.
pub(super) fn setid(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    if argv.len() != 5 && argv.len() != 7 {
        return Err(OpError::subcommand_syntax(argv));
    }
    let args = group_args(ctx, argv, "setid")?;
    let id = if argv[4].as_slice() == b"$" {
        read_stream(ctx, &argv[2])?.map_or(StreamId::MIN, |s| s.last_id)
    } else {
        loose_id(&argv[4], 0)?
    };
    let g = group_mut(ctx, argv)?;
    g.last_id = id;
    g.entries_read = args.entries_read;
    ctx.notify(STREAM, "xgroup-setid", &argv[2]);
    Ok(Reply::status("OK"))
}

/// `XGROUP DESTROY key group`.
pub(super) fn destroy(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    group_args(ctx, argv, "destroy")?;
    let removed = write_stream(ctx, &argv[2])?.is_some_and(|s| s.groups.remove(&argv[3]).is_some());
    if !removed {
        ctx.effect = Effect::Nothing;
        return Ok(Reply::Integer(0));
    }
    ctx.notify(STREAM, "xgroup-destroy", &argv[2]);
    Ok(Reply::Integer(1))
}

/// `XGROUP CREATECONSUMER key group consumer`.
pub(super) fn createconsumer(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    group_args(ctx, argv, "createconsumer")?;
    let now = ctx.now_ms();
    let created = group_mut(ctx, argv)?.create_consumer(&argv[4], now);
    if !created {
        ctx.effect = Effect::Nothing;
        return Ok(Reply::Integer(0));
    }
    ctx.notify(STREAM, "xgroup-createconsumer", &argv[2]);
    Ok(Reply::Integer(1))
}

/// `XGROUP DELCONSUMER key group consumer`.
pub(super) fn delconsumer(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    group_args(ctx, argv, "delconsumer")?;
    let Some(pending) = group_mut(ctx, argv)?.delete_consumer(&argv[4]) else {
        ctx.effect = Effect::Nothing;
        return Ok(Reply::Integer(0));
    };
    ctx.notify(STREAM, "xgroup-delconsumer", &argv[2]);
    Ok(Reply::Integer(pending as i64))
}

/// `XGROUP HELP`.
pub(super) fn help(_: &mut Ctx<'_>, _: &[Vec<u8>]) -> OpResult<Reply> {
    Ok(super::help_reply(&[
        "XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "CREATE <key> <groupname> <id|$> [option]",
        "    Create a new consumer group. Options are:",
        "    * MKSTREAM",
        "      Create the empty stream if it does not exist.",
        "    * ENTRIESREAD entries_read",
        "      Set the group's entries_read counter (internal use).",
        "CREATECONSUMER <key> <groupname> <consumer>",
        "    Create a new consumer in the specified group.",
        "DELCONSUMER <key> <groupname> <consumer>",
        "    Remove the specified consumer.",
        "DESTROY <key> <groupname>",
        "    Remove the specified group.",
        "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
        "    Set the current group ID and entries_read counter.",
    ]))
}

/// `XACK key group id [id …]`.
pub(super) fn xack(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    // One lookup, counted as a read: the key is only written when an id is acked.
    let db = ctx.db();
    let group = match ctx.ks.get_mut_counted(db, &argv[1])? {
        Some(v) => v.as_stream_mut()?.groups.get_mut(&argv[2]),
        None => None,
    };
    let Some(group) = group else {
        ctx.changed_nothing();
        return Ok(Reply::Integer(0));
    };
    // Every id is checked before any is acked: the command acks all or none.
    let ids = argv[3..]
        .iter()
        .map(|a| strict_id(a))
        .collect::<OpResult<SmallVec<[StreamId; 8]>>>()?;
    let acked = ids.into_iter().filter(|id| group.ack(*id)).count();
    if acked == 0 {
        ctx.changed_nothing();
    }
    Ok(Reply::Integer(acked as i64))
}

/// `XPENDING key group [[IDLE min-idle] start end count [consumer]]`.
pub(super) fn xpending(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let n = argv.len();
    if n != 3 && !(6..=9).contains(&n) {
        return Err(OpError::Syntax);
    }
    let mut range = None;
    let mut min_idle = 0i64;
    let mut consumer = None;
    if n >= 6 {
        let mut at = 3;
        if is_kw(&argv[3], "idle") {
            min_idle = parse_i64(&argv[4]).ok_or(OpError::NotInteger)?;
            if n < 8 {
                return Err(OpError::Syntax);
            }
            at += 2;
        }
        let count = parse_i64(argv.get(at + 2).ok_or(OpError::Syntax)?)
            .ok_or(OpError::NotInteger)?
            .max(0) as usize;
        let (mut start, start_ex) = interval_id(&argv[at], 0)?;
        if start_ex {
            start = start.next().ok_or(StreamError::InvalidStart)?;
        }
        let (mut end, end_ex) = interval_id(&argv[at + 1], u64::MAX)?;
        if end_ex {
            end = end.prev().ok_or(StreamError::InvalidEnd)?;
        }
        consumer = argv.get(at + 3);
        range = Some((start, end, count));
    }
    let now = ctx.now_ms();
    let Some(g) = read_stream(ctx, &argv[1])?.and_then(|s| s.groups.get(&argv[2])) else {
        return Err(StreamError::NoKeyOrGroup(argv[1].clone(), argv[2].clone()).into());
    };
    let Some((start, end, count)) = range else {
        if g.pel.is_empty() {
            return Ok(Reply::Array(vec![
                Reply::Integer(0),
                Reply::Null,
                Reply::Null,
                Reply::NullArray,
            ]));
        }
        let first = g.pel.keys().next().copied().unwrap_or_default();
        let last = g.pel.keys().next_back().copied().unwrap_or_default();
        let owners = g
            .consumers
            .iter()
            .filter(|(_, c)| !c.pel.is_empty())
            .map(|(name, c)| {
                Reply::Array(vec![
                    Reply::bulk(name),
                    Reply::bulk(c.pel.len().to_string()),
                ])
            })
            .collect();
        return Ok(Reply::Array(vec![
            Reply::Integer(g.pel.len() as i64),
            Reply::Bulk(first.to_bytes()),
            Reply::Bulk(last.to_bytes()),
            Reply::Array(owners),
        ]));
    };
    let ids: Vec<StreamId> = match consumer {
        Some(name) => match g.consumers.get(name) {
            Some(c) => c
                .pel
                .range(start..)
                .take_while(|id| **id <= end)
                .copied()
                .collect(),
            None => return Ok(Reply::Array(Vec::new())),
        },
        None => g
            .pel
            .range(start..)
            .take_while(|(id, _)| **id <= end)
            .map(|(id, _)| *id)
            .collect(),
    };
    let mut out = Vec::new();
    for id in ids {
        if out.len() >= count {
            break;
        }
        let Some(p) = g.pel.get(&id) else {
            continue;
        };
        let idle = now - p.delivery_time;
        if min_idle != 0 && idle < min_idle {
            continue;
        }
        out.push(Reply::Array(vec![
            Reply::Bulk(id.to_bytes()),
            Reply::bulk(&p.consumer),
            Reply::Integer(idle.max(0)),
            Reply::Integer(p.delivery_count as i64),
        ]));
    }
    Ok(Reply::Array(out))
}
