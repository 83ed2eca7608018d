//! The stream writes that touch entries: `XADD`, `XTRIM`, `XDEL` and `XSETID`.
//!
//! An `XADD` with `*` or `<ms>-*` is logged with the id it generated, and a `~` trim
//! is logged as the exact trim it amounted to (`MAXLEN = <length left>` or `MINID =
//! <first id left>`), as Redis propagates them, so a replay rebuilds the same stream
//! whatever the clock or the node limits are then.

use super::parse::{add_trim_args, strict_id};
use super::{write_stream, STREAM};
use crate::command::ctx::Ctx;
use crate::command::handlers::util::is_kw;
use crate::error::{OpError, OpResult, StreamError};
use crate::reply::Reply;
use crate::util::num::parse_i64;
use crate::value::stream::{Fields, StreamId, Trim, TrimStrategy};
use crate::value::{StreamValue, Value};

/// The most bytes of fields one entry may carry (a listpack's limit in Redis).
const MAX_ENTRY_BYTES: usize = 1 << 30;

/// The argument that replaces a `~` trim's threshold in the log.
fn exact_threshold(s: &StreamValue, trim: &Trim) -> Vec<u8> {
    match trim.strategy {
        TrimStrategy::MaxLen(_) => s.len().to_string().into_bytes(),
        TrimStrategy::MinId(_) => s
            .first_entry()
            .map_or(StreamId::MAX, |(id, _)| id)
            .to_bytes(),
    }
}

/// `XADD key [NOMKSTREAM] [MAXLEN|MINID [=|~] threshold [LIMIT count]] *|id field value …`.
pub(super) fn xadd(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let limits = ctx.limits();
    let args = add_trim_args(
        argv,
        true,
        limits.stream_node_max_entries,
        ctx.client.replaying,
    )?;
    let field_at = args.id_at + 1;
    if argv.len() < field_at + 2 || (argv.len() - field_at) % 2 == 1 {
        return Err(OpError::WrongArity("xadd".into()));
    }
    if let Some((id, true)) = args.id {
        if id.is_zero() {
            return Err(StreamError::IdZero.into());
        }
    }
    let key = &argv[1];
    let now = ctx.now_ms();
    let db = ctx.db();
    match ctx.ks.get(db, key)? {
        None if args.no_mkstream => {
            ctx.effect = crate::command::ctx::Effect::Nothing;
            return Ok(Reply::Null);
        }
        None => {}
        Some(v) => {
            v.as_stream()?;
        }
    }
    let total: usize = argv[field_at..].iter().map(Vec::len).sum();
    let kept = ctx.effect_is_kept();
    let s = ctx
        .ks
        .get_or_insert_with(db, key, || Value::Stream(Box::default()))?
        .as_stream_mut()?;
    if s.last_id == StreamId::MAX {
        return Err(StreamError::Exhausted.into());
    }
    let id = match args.id {
        Some((id, true)) => id,
        Some((given, false)) => {
            if s.last_id.ms == given.ms {
                match s.last_id.next() {
                    Some(next) if next.ms == given.ms => next,
                    _ => return Err(StreamError::IdTooSmall.into()),
                }
            } else {
                given
            }
        }
        None => {
            let ms = now.max(0) as u64;
            if ms > s.last_id.ms {
                StreamId::new(ms, 0)
            } else {
                // Never wraps: the last id is not the largest (checked above).
                s.last_id.next().unwrap_or(StreamId::MAX)
            }
        }
    };
    if id <= s.last_id {
        return Err(StreamError::IdTooSmall.into());
    }
    if total > MAX_ENTRY_BYTES {
        return Err(StreamError::TooLarge.into());
    }
    let fields: Fields = argv[field_at..].to_vec().into_boxed_slice();
    s.append(id, fields, limits.stream_nodes());
    let mut trimmed = false;
    let mut exact_trim = None;
    if let Some(trim) = args.trim {
        trimmed = s.trim(trim) > 0;
        if trim.approx && kept {
            exact_trim = Some(exact_threshold(s, &trim));
        }
    }
    ctx.notify(STREAM, "xadd", key);
    if trimmed {
        ctx.notify(STREAM, "xtrim", key);
    }
    let id_bytes = id.to_bytes();
    // Logged with the id it got and the exact trim it made, as a replica is sent it.
    if kept {
        let mut logged = argv.to_vec();
        if let Some(threshold) = exact_trim {
            logged[args.trim_arg - 1] = b"=".to_vec();
            logged[args.trim_arg] = threshold;
        }
        logged[args.id_at] = id_bytes.clone();
        ctx.log_as(vec![logged]);
    }
    Ok(Reply::Bulk(id_bytes))
}

/// `XTRIM key MAXLEN|MINID [=|~] threshold [LIMIT count]`.
pub(super) fn xtrim(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let limits = ctx.limits();
    let args = add_trim_args(
        argv,
        false,
        limits.stream_node_max_entries,
        ctx.client.replaying,
    )?;
    let Some(trim) = args.trim else {
        return Err(StreamError::XtrimWithoutStrategy.into());
    };
    let key = &argv[1];
    let Some(s) = write_stream(ctx, key)? else {
        ctx.effect = crate::command::ctx::Effect::Nothing;
        return Ok(Reply::Integer(0));
    };
    let deleted = s.trim(trim);
    if deleted == 0 {
        ctx.effect = crate::command::ctx::Effect::Nothing;
        return Ok(Reply::Integer(0));
    }
    let mut logged = argv.to_vec();
    if trim.approx {
        logged[args.trim_arg - 1] = b"=".to_vec();
        logged[args.trim_arg] = exact_threshold(s, &trim);
    }
    ctx.notify(STREAM, "xtrim", key);
    ctx.log_as(vec![logged]);
    Ok(Reply::Integer(deleted as i64))
}

/// `XDEL key id [id …]`.
pub(super) fn xdel(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let key = &argv[1];
    let db = ctx.db();
    match ctx.ks.get(db, key)? {
        None => {
            ctx.effect = crate::command::ctx::Effect::Nothing;
            return Ok(Reply::Integer(0));
        }
        Some(v) => {
            v.as_stream()?;
        }
    }
    let ids = argv[2..]
        .iter()
        .map(|a| strict_id(a))
        .collect::<OpResult<Vec<_>>>()?;
    let Some(s) = write_stream(ctx, key)? else {
        return Ok(Reply::Integer(0));
    };
    let deleted = ids.into_iter().filter(|id| s.delete(*id)).count();
    if deleted == 0 {
        ctx.effect = crate::command::ctx::Effect::Nothing;
    } else {
        ctx.notify(STREAM, "xdel", key);
    }
    Ok(Reply::Integer(deleted as i64))
}

/// `XSETID key last-id [ENTRIESADDED entries-added] [MAXDELETEDID max-deleted-id]`.
pub(super) fn xsetid(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let id = strict_id(&argv[2])?;
    let mut entries_added: i64 = -1;
    let mut max_deleted = StreamId::MIN;
    let mut i = 3;
    while i < argv.len() {
        let more = argv.len() - 1 - i;
        if is_kw(&argv[i], "entriesadded") && more > 0 {
            entries_added = parse_i64(&argv[i + 1]).ok_or(OpError::NotInteger)?;
            if entries_added < 0 {
                return Err(StreamError::EntriesAddedNegative.into());
            }
        } else if is_kw(&argv[i], "maxdeletedid") && more > 0 {
            max_deleted = strict_id(&argv[i + 1])?;
            if id < max_deleted {
                return Err(StreamError::SetidBelowMaxDeleted.into());
            }
        } else {
            return Err(OpError::Syntax);
        }
        i += 2;
    }
    let key = &argv[1];
    let Some(s) = write_stream(ctx, key)? else {
        return Err(OpError::NoSuchKey);
    };
    if !s.is_empty() {
        let top = s.last_entry().map_or(StreamId::MIN, |(id, _)| id);
        if id < top {
            return Err(StreamError::SetidBelowTop.into());
        }
        if entries_added != -1 && s.len() > entries_added as u64 {
            return Err(StreamError::EntriesAddedBelowLength.into());
        }
    }
    s.last_id = id;
    if entries_added != -1 {
        s.entries_added = entries_added as u64;
    }
    if !max_deleted.is_zero() {
        s.max_deleted = max_deleted;
    }
    ctx.notify(STREAM, "xsetid", key);
    Ok(Reply::status("OK"))
}
