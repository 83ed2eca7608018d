//! Moving pending entries between consumers: `XCLAIM` and `XAUTOCLAIM`. Each claim
//! (and each pending entry dropped because its entry was deleted) is logged as
//! the idempotent `XCLAIM … TIME … RETRYCOUNT … FORCE JUSTID LASTID …` Redis
//! propagates, so a replay lands on the same pending lists.

use super::parse::{interval_id, strict_id};
use super::{entry_reply, log_xclaim, read_stream, write_stream, Delivery, Target};
use crate::command::ctx::Ctx;
use crate::command::handlers::util::is_kw;
use crate::error::{OpError, OpResult, StreamError};
use crate::reply::Reply;
use crate::util::num::parse_i64;
use crate::value::stream::{ConsumerGroup, Pending, StreamId};
use crate::value::StreamValue;

/// An integer argument with a command-specific error text.
fn int_arg(arg: &[u8], text: &'static str) -> OpResult<i64> {
    parse_i64(arg).ok_or_else(|| StreamError::BadArgument(text).into())
}

/// The key's group, or `NOGROUP` (key and group as given).
fn check_group(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<()> {
    let found = read_stream(ctx, &argv[1])?.is_some_and(|s| s.groups.contains_key(&argv[2]));
    if found {
        Ok(())
    } else {
        Err(StreamError::NoKeyOrGroup(argv[1].clone(), argv[2].clone()).into())
    }
}

/// Looks the consumer up (refreshing its seen time) or creates it; returns
/// whether it was created.
fn touch_consumer(g: &mut ConsumerGroup, name: &[u8], now: i64) -> bool {
    match g.consumers.get_mut(name) {
        Some(c) => {
            c.seen_time = now;
            false
        }
        None => g.create_consumer(name, now),
    }
}

/// `XCLAIM key group consumer min-idle-time id [id …] [IDLE ms] [TIME unix-ms]
/// [RETRYCOUNT count] [FORCE] [JUSTID] [LASTID id]`.
pub(super) fn xclaim(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    check_group(ctx, argv)?;
    let min_idle = int_arg(&argv[4], "Invalid min-idle-time argument for XCLAIM")?.max(0);
    let mut ids = Vec::new();
    let mut j = 5;
    while j < argv.len() {
        match strict_id(&argv[j]) {
            Ok(id) => ids.push(id),
            Err(_) => break,
        }
        j += 1;
    }
    let now = ctx.now_ms();
    let (mut force, mut justid) = (false, false);
    let mut delivery_time: Option<i64> = None;
    let mut retry_count: Option<i64> = None;
    let mut last_id = StreamId::MIN;
    while j < argv.len() {
        let more = argv.len() - 1 - j;
        let opt = &argv[j];
        if is_kw(opt, "force") {
            force = true;
        } else if is_kw(opt, "justid") {
            justid = true;
        } else if is_kw(opt, "idle") && more > 0 {
            j += 1;
            let idle = int_arg(&argv[j], "Invalid IDLE option argument for XCLAIM")?;
            delivery_time = Some(now.saturating_sub(idle));
        } else if is_kw(opt, "time") && more > 0 {
            j += 1;
            delivery_time = Some(int_arg(
                &argv[j],
                "Invalid TIME option argument for XCLAIM",
            )?);
        } else if is_kw(opt, "retrycount") && more > 0 {
            j += 1;
            retry_count = Some(int_arg(
                &argv[j],
                "Invalid RETRYCOUNT option argument for XCLAIM",
            )?);
        } else if is_kw(opt, "lastid") && more > 0 {
            j += 1;
            last_id = strict_id(&argv[j])?;
        } else {
            return Err(StreamError::UnknownXclaimOption(opt.clone()).into());
        }
        j += 1;
    }
    let delivery_time = match delivery_time {
        Some(t) if (0..=now).contains(&t) => t,
        _ => now,
    };
    let (key, group, name) = (&argv[1], &argv[2], &argv[3]);
    let t = Target {
        key,
        group,
        consumer: name,
    };
    let Some(s) = write_stream(ctx, key)? else {
        return Ok(Reply::Array(Vec::new()));
    };
    let mut logged = Vec::new();
    let mut out = Vec::new();
    let mut propagate_last_id = false;
    let mut created = false;
    {
        let Some(g) = s.groups.get_mut(group.as_slice()) else {
            return Ok(Reply::Array(Vec::new()));
        };
        if last_id > g.last_id {
            g.last_id = last_id;
            propagate_last_id = true;
        }
    }
    for id in ids {
        let exists = s.get(id).is_some();
        let reply = if exists && !justid {
            s.get(id).map(|f| entry_reply(id, f))
        } else {
            None
        };
        let Some(g) = s.groups.get_mut(group.as_slice()) else {
            break;
        };
        if !exists {
            if g.ack(id) {
                log_xclaim(
                    &mut logged,
                    t,
                    Delivery {
                        id,
                        time: now,
                        count: 0,
                    },
                    true,
                    Some(g.last_id),
                );
                propagate_last_id = false;
            }
            continue;
        }
        let fresh = force && !g.pel.contains_key(&id);
        if fresh {
            g.pel.insert(
                id,
                Pending {
                    consumer: Vec::new(),
                    delivery_time: now,
                    delivery_count: 1,
                },
            );
        }
        let Some(p) = g.pel.get(&id) else {
            continue;
        };
        if !fresh && min_idle > 0 && now - p.delivery_time < min_idle {
            continue;
        }
        created |= touch_consumer(g, name, now);
        g.reassign(id, name);
        let Some(p) = g.pel.get_mut(&id) else {
            continue;
        };
        p.delivery_time = delivery_time;
        match retry_count {
            Some(n) if n >= 0 => p.delivery_count = n as u64,
            _ if !justid => p.delivery_count += 1,
            _ => {}
        }
        let count = p.delivery_count;
        out.push(reply.unwrap_or_else(|| Reply::Bulk(id.to_bytes())));
        log_xclaim(
            &mut logged,
            t,
            Delivery {
                id,
                time: delivery_time,
                count,
            },
            true,
            Some(g.last_id),
        );
        propagate_last_id = false;
    }
    if propagate_last_id {
        if let Some(g) = s.groups.get(group.as_slice()) {
            logged.push(super::setid_command(key, group, g));
        }
    }
    if created {
        ctx.notify(super::STREAM, "xgroup-createconsumer", key);
    }
    ctx.log_as(logged);
    Ok(Reply::Array(out))
}

/// `XAUTOCLAIM key group consumer min-idle-time start [COUNT count] [JUSTID]`.
pub(super) fn xautoclaim(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let min_idle = int_arg(&argv[4], "Invalid min-idle-time argument for XAUTOCLAIM")?.max(0);
    let (mut start, ex) = interval_id(&argv[5], 0)?;
    if ex {
        start = start.next().ok_or(StreamError::InvalidStart)?;
    }
    let mut count: i64 = 100;
    let mut justid = false;
    let mut j = 6;
    while j < argv.len() {
        let more = argv.len() - 1 - j;
        if is_kw(&argv[j], "count") && more > 0 {
            let max = i64::MAX / 16;
            count = match parse_i64(&argv[j + 1]) {
                Some(n) if (1..=max).contains(&n) => n,
                _ => return Err(StreamError::BadArgument("COUNT must be > 0").into()),
            };
            j += 1;
        } else if is_kw(&argv[j], "justid") {
            justid = true;
        } else {
            return Err(OpError::Syntax);
        }
        j += 1;
    }
    check_group(ctx, argv)?;
    let now = ctx.now_ms();
    let (key, group, name) = (&argv[1], &argv[2], &argv[3]);
    let Some(s) = write_stream(ctx, key)? else {
        return Ok(Reply::Array(Vec::new()));
    };
    let mut logged = Vec::new();
    let t = Target {
        key,
        group,
        consumer: name,
    };
    let walk = AutoClaim {
        min_idle,
        start,
        count,
        justid,
    };
    let (claimed, deleted, end, created) = auto_claim(s, t, walk, now, &mut logged);
    if created {
        ctx.notify(super::STREAM, "xgroup-createconsumer", key);
    }
    ctx.log_as(logged);
    Ok(Reply::Array(vec![
        Reply::Bulk(end.to_bytes()),
        Reply::Array(claimed),
        Reply::Array(
            deleted
                .into_iter()
                .map(|id| Reply::Bulk(id.to_bytes()))
                .collect(),
        ),
    ]))
}

/// `XAUTOCLAIM`'s walk: the least idle time, where it starts, how many entries
/// it may claim, and whether it replies ids only.
#[derive(Clone, Copy)]
struct AutoClaim {
    min_idle: i64,
    start: StreamId,
    count: i64,
    justid: bool,
}

/// Walks the group's PEL from `start` as Redis's `xautoclaimCommand` does: claims,
/// the ids dropped for deleted entries, the id to continue from (0-0: done), and
/// whether the consumer was created.
fn auto_claim(
    s: &mut StreamValue,
    t: Target<'_>,
    walk: AutoClaim,
    now: i64,
    logged: &mut Vec<Vec<Vec<u8>>>,
) -> (Vec<Reply>, Vec<StreamId>, StreamId, bool) {
    let (group, name) = (t.group, t.consumer);
    let AutoClaim {
        min_idle,
        start,
        mut count,
        justid,
    } = walk;
    let mut created = false;
    let mut attempts = count.saturating_mul(10);
    let mut claimed = Vec::new();
    let mut deleted = Vec::new();
    let mut cursor = Some(start);
    let end = loop {
        let Some(at) = cursor else {
            break StreamId::MIN;
        };
        let next = s
            .groups
            .get(group)
            .and_then(|g| g.pel.range(at..).next().map(|(id, _)| *id));
        let Some(id) = next else {
            break StreamId::MIN;
        };
        if attempts == 0 || count == 0 {
            break id;
        }
        attempts -= 1;
        cursor = id.next();
        let body = if justid {
            None
        } else {
            s.get(id).map(|f| entry_reply(id, f))
        };
        let exists = s.get(id).is_some();
        let Some(g) = s.groups.get_mut(group) else {
            break StreamId::MIN;
        };
        if !exists {
            g.ack(id);
            log_xclaim(
                logged,
                t,
                Delivery {
                    id,
                    time: now,
                    count: 0,
                },
                true,
                Some(g.last_id),
            );
            deleted.push(id);
            count -= 1;
            continue;
        }
        let idle_ok = g
            .pel
            .get(&id)
            .is_some_and(|p| min_idle == 0 || now - p.delivery_time >= min_idle);
        if !idle_ok {
            continue;
        }
        created |= touch_consumer(g, name, now);
        g.reassign(id, name);
        let Some(p) = g.pel.get_mut(&id) else {
            continue;
        };
        p.delivery_time = now;
        if !justid {
            p.delivery_count += 1;
        }
        let n = p.delivery_count;
        claimed.push(body.unwrap_or_else(|| Reply::Bulk(id.to_bytes())));
        count -= 1;
        log_xclaim(
            logged,
            t,
            Delivery {
                id,
                time: now,
                count: n,
            },
            true,
            Some(g.last_id),
        );
    };
    (claimed, deleted, end, created)
}
