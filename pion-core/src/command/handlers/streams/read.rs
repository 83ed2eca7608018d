//! The stream reads: `XRANGE`, `XREVRANGE`, `XLEN`, `XREAD` and `XREADGROUP`.
//!
//! `XREADGROUP` is a write: delivering entries moves the group's last id and read
//! counter and adds to the pending lists. It logs what it changed as Redis
//! propagates it (one `XCLAIM … FORCE JUSTID LASTID` per delivered entry, the
//! consumer's creation), plus an `XGROUP SETID … ENTRIESREAD` so the read counter
//! survives a restart too, and an `XCLAIM … JUSTID` per history entry re-delivered.
//!
//! A blocking read that finds nothing waits with `$` resolved to the stream's last
//! id at that moment and `COUNT` defaulted to 1000, as Redis remembers them; it is
//! run again when a key it waits on is written.

use std::time::Duration;

use super::parse::{interval_id, strict_id};
use super::{entry_reply, read_stream};
use crate::command::ctx::Ctx;
use crate::command::handlers::util::is_kw;
use crate::error::{OpError, OpResult, StreamError};
use crate::reply::Reply;
use crate::util::num::parse_i64;
use crate::value::stream::{StreamId, INVALID_ENTRIES_READ};
use crate::value::Value;

/// `XRANGE`/`XREVRANGE`'s arguments and reply.
fn range(ctx: &mut Ctx<'_>, argv: &[Vec<u8>], rev: bool) -> OpResult<Reply> {
    let (start_arg, end_arg) = if rev {
        (&argv[3], &argv[2])
    } else {
        (&argv[2], &argv[3])
    };
    let (mut start, start_ex) = interval_id(start_arg, 0)?;
    if start_ex {
        start = start.next().ok_or(StreamError::InvalidStart)?;
    }
    let (mut end, end_ex) = interval_id(end_arg, u64::MAX)?;
    if end_ex {
        end = end.prev().ok_or(StreamError::InvalidEnd)?;
    }
    let mut count: Option<usize> = None;
    let mut j = 4;
    while j < argv.len() {
        if is_kw(&argv[j], "count") && j + 1 < argv.len() {
            let n = parse_i64(&argv[j + 1]).ok_or(OpError::NotInteger)?;
            count = Some(n.max(0) as usize);
            j += 2;
        } else {
            return Err(OpError::Syntax);
        }
    }
    let Some(s) = read_stream(ctx, &argv[1])? else {
        return Ok(Reply::Array(Vec::new()));
    };
    if count == Some(0) {
        return Ok(Reply::NullArray);
    }
    let items = s
        .range(start, end, rev)
        .take(count.unwrap_or(usize::MAX))
        .map(|(id, f)| entry_reply(id, f))
        .collect();
    Ok(Reply::Array(items))
}

/// `XRANGE key start end [COUNT count]`.
pub(super) fn xrange(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    range(ctx, argv, false)
}

/// `XREVRANGE key end start [COUNT count]`.
pub(super) fn xrevrange(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    range(ctx, argv, true)
}

/// `XLEN key`.
pub(super) fn xlen(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    Ok(Reply::Integer(
        read_stream(ctx, &argv[1])?.map_or(0, |s| s.len() as i64),
    ))
}

/// Where `XREAD`'s keys are: after the first `STREAMS` among its options.
pub(super) fn xread_keys(argv: &[Vec<u8>]) -> OpResult<Vec<usize>> {
    let mut i = 1;
    while i < argv.len() {
        let a = &argv[i];
        if is_kw(a, "block") || is_kw(a, "count") {
            i += 2;
        } else if is_kw(a, "group") {
            i += 3;
        } else if is_kw(a, "noack") {
            i += 1;
        } else if is_kw(a, "streams") {
            let num = argv.len() - i - 1;
            if num == 0 || !num.is_multiple_of(2) {
                return Ok(Vec::new());
            }
            return Ok((i + 1..i + 1 + num / 2).collect());
        } else {
            break;
        }
    }
    Ok(Vec::new())
}

/// `XREAD`/`XREADGROUP`'s options.
struct ReadArgs {
    /// `BLOCK`'s timeout (`Some(None)`: forever), or `None` without `BLOCK`.
    block: Option<Option<Duration>>,
    /// The index of `BLOCK`'s argument.
    block_at: usize,
    count: usize,
    noack: bool,
    group: Option<(Vec<u8>, Vec<u8>)>,
    streams_at: usize,
    n: usize,
}

/// A `BLOCK` timeout in milliseconds (Redis's `getTimeoutFromObjectOrReply`).
fn parse_block(arg: &[u8]) -> OpResult<Option<Duration>> {
    let ms = parse_i64(arg)
        .ok_or_else(|| OpError::custom("ERR timeout is not an integer or out of range"))?;
    if ms < 0 {
        return Err(OpError::custom("ERR timeout is negative"));
    }
    Ok((ms > 0).then(|| Duration::from_millis(ms as u64)))
}

fn parse_read(ctx: &Ctx<'_>, argv: &[Vec<u8>], xreadgroup: bool) -> OpResult<ReadArgs> {
    let mut args = ReadArgs {
        block: None,
        block_at: 0,
        count: 0,
        noack: false,
        group: None,
        streams_at: 0,
        n: 0,
    };
    let mut i = 1;
    while i < argv.len() {
        let more = argv.len() - i - 1;
        let o = &argv[i];
        if is_kw(o, "block") && more > 0 {
            if ctx.client.nested.as_ref().is_some_and(|n| n.in_script) {
                return Err(StreamError::BlockInScript(argv[0].clone()).into());
            }
            i += 1;
            args.block = Some(parse_block(&argv[i])?);
            args.block_at = i;
        } else if is_kw(o, "count") && more > 0 {
            i += 1;
            let n = parse_i64(&argv[i]).ok_or(OpError::NotInteger)?;
            args.count = n.max(0) as usize;
        } else if is_kw(o, "streams") && more > 0 {
            args.streams_at = i + 1;
            let rest = argv.len() - args.streams_at;
            if !rest.is_multiple_of(2) {
                return Err(StreamError::Unbalanced.into());
            }
            args.n = rest / 2;
            break;
        } else if is_kw(o, "group") && more >= 2 {
            if !xreadgroup {
                return Err(StreamError::GroupInXread.into());
            }
            args.group = Some((argv[i + 1].clone(), argv[i + 2].clone()));
            i += 2;
        } else if is_kw(o, "noack") {
            if !xreadgroup {
                return Err(StreamError::NoackInXread.into());
            }
            args.noack = true;
        } else {
            return Err(OpError::Syntax);
        }
        i += 1;
    }
    if args.streams_at == 0 {
        return Err(OpError::Syntax);
    }
    if xreadgroup && args.group.is_none() {
        return Err(StreamError::MissingGroup.into());
    }
    Ok(args)
}

/// What a read id asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Want {
    /// Entries after this id.
    After(StreamId),
    /// New entries for the group (`>`).
    New,
}

/// `XREAD [COUNT count] [BLOCK ms] STREAMS key … id …`.
pub(super) fn xread(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    read(ctx, argv, false)
}

/// `XREADGROUP GROUP group consumer [COUNT count] [BLOCK ms] [NOACK] STREAMS key … id …`.
pub(super) fn xreadgroup(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    read(ctx, argv, true)
}

fn read(ctx: &mut Ctx<'_>, argv: &[Vec<u8>], xreadgroup: bool) -> OpResult<Reply> {
    let args = parse_read(ctx, argv, xreadgroup)?;
    let retrying = ctx.client.retrying_block;
    let db = ctx.db();
    let keys = &argv[args.streams_at..args.streams_at + args.n];
    let id_args = &argv[args.streams_at + args.n..];
    let mut wants = Vec::with_capacity(args.n);
    for (key, id_arg) in keys.iter().zip(id_args) {
        let value = ctx.ks.get(db, key)?;
        let stream = match value {
            Some(Value::Stream(s)) => Some(&**s),
            Some(_) if retrying && xreadgroup => return Err(StreamError::KeyGone.into()),
            Some(_) => return Err(OpError::WrongType),
            None => None,
        };
        if let Some((group, _)) = &args.group {
            if stream.is_none_or(|s| !s.groups.contains_key(group)) {
                if retrying {
                    return Err(match stream {
                        None => StreamError::KeyGone,
                        Some(_) => StreamError::GroupGone,
                    }
                    .into());
                }
                return Err(StreamError::NoGroupRead(key.clone(), group.clone()).into());
            }
        }
        let want = match id_arg.as_slice() {
            b"$" if xreadgroup => return Err(StreamError::DollarInXreadgroup.into()),
            b"$" => Want::After(stream.map_or(StreamId::MIN, |s| s.last_id)),
            b">" if !xreadgroup => return Err(StreamError::GreaterInXread.into()),
            b">" => Want::New,
            other => Want::After(strict_id(other)?),
        };
        wants.push(want);
    }
    let mut served: Vec<(Reply, Reply)> = Vec::new();
    let mut logged: Vec<Vec<Vec<u8>>> = Vec::new();
    for (key, want) in keys.iter().zip(&wants) {
        let reply = match &args.group {
            Some((group, consumer)) => super::deliver::serve_group(
                ctx,
                super::Target {
                    key,
                    group,
                    consumer,
                },
                match want {
                    Want::After(id) => Some(*id),
                    Want::New => None,
                },
                args.count,
                args.noack,
                &mut logged,
            )?,
            None => {
                let Want::After(after) = want else {
                    continue;
                };
                match read_stream(ctx, key)? {
                    Some(s) if s.last_entry().is_some_and(|(id, _)| id > *after) => {
                        let start = after.next().unwrap_or(StreamId::MAX);
                        Some(Reply::Array(
                            s.range(start, StreamId::MAX, false)
                                .take(if args.count == 0 {
                                    usize::MAX
                                } else {
                                    args.count
                                })
                                .map(|(id, f)| entry_reply(id, f))
                                .collect(),
                        ))
                    }
                    _ => None,
                }
            }
        };
        if let Some(r) = reply {
            served.push((Reply::bulk(key), r));
        }
    }
    if xreadgroup {
        ctx.log_as(logged);
    }
    if !served.is_empty() {
        return Ok(Reply::PairsMap(served));
    }
    let Some(timeout) = args.block else {
        return Ok(Reply::NullArray);
    };
    // Wait with `$` resolved and the count Redis gives a blocked read.
    let mut again: Vec<Vec<u8>> = argv[..args.streams_at].to_vec();
    if args.count == 0 {
        again.splice(1..1, [b"COUNT".to_vec(), b"1000".to_vec()]);
    }
    again.extend(keys.iter().cloned());
    for (want, id_arg) in wants.iter().zip(id_args) {
        again.push(match want {
            Want::After(id) => id.to_bytes(),
            Want::New => id_arg.clone(),
        });
    }
    let _ = args.block_at;
    let keys = keys.to_vec();
    ctx.wait_for_keys_as(&keys, timeout, Reply::NullArray, again)
}

/// The group read counter after delivering `id` (Redis's `streamReplyWithRange`).
pub(super) fn advance_read_counter(
    s: &crate::value::StreamValue,
    entries_read: i64,
    id: StreamId,
) -> i64 {
    if entries_read != INVALID_ENTRIES_READ && !s.range_has_tombstones(id, None) {
        entries_read + 1
    } else if s.entries_added > 0 {
        s.estimate_distance(id)
    } else {
        entries_read
    }
}
