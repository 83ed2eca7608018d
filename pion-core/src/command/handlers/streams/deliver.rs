//! Serving one stream of an `XREADGROUP`: new entries for the group (`>`), which
//! move its last id and read counter and enter the pending lists, or the consumer's
//! own history (any other id), which re-delivers what it already owns.

use super::read::advance_read_counter;
use super::{entry_reply, log_xclaim, write_stream, Delivery, Target, STREAM};
use crate::command::ctx::Ctx;
use crate::error::OpResult;
use crate::reply::Reply;
use crate::value::stream::StreamId;

/// Serves the target's key for its group and consumer: `None` for `>` (entries
/// after the group's last id), otherwise the consumer's pending entries after
/// the id. `None` when
/// there is nothing new to serve (the read may block). Appends what it changed to
/// `logged`.
pub(super) fn serve_group(
    ctx: &mut Ctx<'_>,
    t: Target<'_>,
    want: Option<StreamId>,
    count: usize,
    noack: bool,
    logged: &mut Vec<Vec<Vec<u8>>>,
) -> OpResult<Option<Reply>> {
    let Target {
        key,
        group,
        consumer,
    } = t;
    let (new, after) = (want.is_none(), want.unwrap_or(StreamId::MAX));
    let now = ctx.now_ms();
    let Some(s) = write_stream(ctx, key)? else {
        return Ok(None);
    };
    let limit = if count == 0 { usize::MAX } else { count };
    let Some(g) = s.groups.get(group) else {
        return Ok(None);
    };
    let last_delivered = g.last_id;
    if new {
        let top = s.last_entry().map(|(id, _)| id);
        if top.is_none_or(|top| top <= last_delivered) {
            return Ok(None);
        }
    }
    // The consumer is looked up (its seen time refreshed) or created.
    let created = {
        let Some(g) = s.groups.get_mut(group) else {
            return Ok(None);
        };
        match g.consumers.get_mut(consumer) {
            Some(c) => {
                c.seen_time = now;
                false
            }
            None => g.create_consumer(consumer, now),
        }
    };
    if created {
        logged.push(vec![
            b"XGROUP".to_vec(),
            b"CREATECONSUMER".to_vec(),
            key.to_vec(),
            group.to_vec(),
            consumer.to_vec(),
        ]);
    }
    if !new {
        let reply = history(s, t, after, limit, now, logged);
        if created {
            ctx.notify(STREAM, "xgroup-createconsumer", key);
        }
        return Ok(Some(reply));
    }
    let start = last_delivered.next().unwrap_or(StreamId::MAX);
    let mut items = Vec::new();
    let mut ids = Vec::new();
    for (id, fields) in s.range(start, StreamId::MAX, false).take(limit) {
        items.push(entry_reply(id, fields));
        ids.push(id);
    }
    let mut read = s.groups.get(group).map_or(0, |g| g.entries_read);
    let mut counters = Vec::with_capacity(ids.len());
    for &id in &ids {
        read = advance_read_counter(s, read, id);
        counters.push(read);
    }
    let Some(g) = s.groups.get_mut(group) else {
        return Ok(None);
    };
    for &id in &ids {
        g.last_id = id;
        if !noack {
            g.deliver(id, consumer, now);
            log_xclaim(
                logged,
                t,
                Delivery {
                    id,
                    time: now,
                    count: 1,
                },
                true,
                Some(id),
            );
        }
    }
    if let Some(&last) = counters.last() {
        g.entries_read = last;
        logged.push(vec![
            b"XGROUP".to_vec(),
            b"SETID".to_vec(),
            key.to_vec(),
            group.to_vec(),
            g.last_id.to_bytes(),
            b"ENTRIESREAD".to_vec(),
            g.entries_read.to_string().into_bytes(),
        ]);
    }
    if created {
        ctx.notify(STREAM, "xgroup-createconsumer", key);
    }
    Ok(Some(Reply::Array(items)))
}

/// The consumer's pending entries after `after`, re-delivered (time and count
/// updated); a deleted entry is its id with a nil body.
fn history(
    s: &mut crate::value::StreamValue,
    t: Target<'_>,
    after: StreamId,
    limit: usize,
    now: i64,
    logged: &mut Vec<Vec<Vec<u8>>>,
) -> Reply {
    let (group, consumer) = (t.group, t.consumer);
    let Some(start) = after.next() else {
        return Reply::Array(Vec::new());
    };
    let ids: Vec<StreamId> = s
        .groups
        .get(group)
        .and_then(|g| g.consumers.get(consumer))
        .map(|c| c.pel.range(start..).take(limit).copied().collect())
        .unwrap_or_default();
    let mut items = Vec::with_capacity(ids.len());
    let mut redelivered = Vec::new();
    for id in ids {
        match s.get(id) {
            Some(fields) => {
                items.push(entry_reply(id, fields));
                redelivered.push(id);
            }
            None => items.push(Reply::Array(vec![
                Reply::Bulk(id.to_bytes()),
                Reply::NullArray,
            ])),
        }
    }
    if let Some(g) = s.groups.get_mut(group) {
        for id in redelivered {
            if let Some(p) = g.pel.get_mut(&id) {
                p.delivery_time = now;
                p.delivery_count += 1;
                log_xclaim(
                    logged,
                    t,
                    Delivery {
                        id,
                        time: now,
                        count: p.delivery_count,
                    },
                    false,
                    None,
                );
            }
        }
    }
    Reply::Array(items)
}
