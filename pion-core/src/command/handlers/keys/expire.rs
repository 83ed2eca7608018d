//! Time to live: `EXPIRE`, `PEXPIRE`, `EXPIREAT`, `PEXPIREAT` (with `NX`/`XX`/`GT`/`LT`),
//! `TTL`, `PTTL`, `EXPIRETIME`, `PEXPIRETIME` and `PERSIST`.
//!
//! One handler serves each group; the command name in `argv[0]` selects the unit and
//! whether the time is relative, exactly as Redis shares one generic implementation.

use crate::command::ctx::Ctx;
use crate::command::handlers::util::{int, is_kw, text};
use crate::error::{OpError, OpResult};
use crate::pubsub::notify;
use crate::reply::Reply;

/// The conditions `EXPIRE … NX|XX|GT|LT` put on the key's current time to live.
#[derive(Debug, Default, Clone, Copy)]
struct Conditions {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
}

impl Conditions {
    /// Parses the options after the time; unknown ones fail at once, incompatible
    /// combinations once all are read (Redis's order of errors).
    fn parse(args: &[Vec<u8>]) -> OpResult<Conditions> {
        let mut c = Conditions::default();
        for arg in args {
            if is_kw(arg, "nx") {
                c.nx = true;
            } else if is_kw(arg, "xx") {
                c.xx = true;
            } else if is_kw(arg, "gt") {
                c.gt = true;
            } else if is_kw(arg, "lt") {
                c.lt = true;
            } else {
                return Err(OpError::custom(format!(
                    "ERR Unsupported option {}",
                    text(arg)
                )));
            }
        }
        if c.nx && (c.xx || c.gt || c.lt) {
            return Err(OpError::custom(
                "ERR NX and XX, GT or LT options at the same time are not compatible",
            ));
        }
        if c.gt && c.lt {
            return Err(OpError::custom(
                "ERR GT and LT options at the same time are not compatible",
            ));
        }
        Ok(c)
    }

    /// Whether a new deadline `when` may replace `current` (`None`: no time to live,
    /// which counts as infinite for `GT` and `LT`).
    fn allow(self, current: Option<i64>, when: i64) -> bool {
        match current {
            None => !(self.xx || self.gt),
            Some(cur) => !(self.nx || (self.gt && when <= cur) || (self.lt && when >= cur)),
        }
    }
}

/// `EXPIRE`, `PEXPIRE`, `EXPIREAT` and `PEXPIREAT`. A deadline at or before now deletes
/// the key, as Redis does.
pub(super) fn expire(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let name = argv[0].to_ascii_lowercase();
    let seconds = !name.starts_with(b"p");
    let absolute = name.ends_with(b"at");
    let cond = Conditions::parse(&argv[3..])?;
    let invalid = || {
        OpError::custom(format!(
            "ERR invalid expire time in '{}' command",
            String::from_utf8_lossy(&name)
        ))
    };
    let now = ctx.now_ms();
    let mut when = int(&argv[2])?;
    if seconds {
        when = when.checked_mul(1000).ok_or_else(invalid)?;
    }
    if !absolute {
        when = when.checked_add(now).ok_or_else(invalid)?;
    }
    let db = ctx.db();
    let key = &argv[1];
    // A write lookup: refreshes the access time, counts no hit or miss.
    let Some(current) = ctx.ks.touched_deadline(db, key)? else {
        return Ok(Reply::Integer(0));
    };
    if !cond.allow(current, when) {
        return Ok(Reply::Integer(0));
    }
    if when <= now {
        ctx.ks.remove(db, key)?;
        ctx.notify(notify::GENERIC, "del", key);
    } else {
        ctx.ks.set_expire_at(db, key, Some(when))?;
        ctx.notify(notify::GENERIC, "expire", key);
    }
    Ok(Reply::Integer(1))
}

/// `TTL`, `PTTL`, `EXPIRETIME` and `PEXPIRETIME`: -2 for a missing key, -1 for a key
/// without a time to live. Seconds are rounded to the nearest, as in Redis.
pub(super) fn ttl(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let name = argv[0].to_ascii_lowercase();
    let millis = name.starts_with(b"p");
    let absolute = name.ends_with(b"expiretime");
    let db = ctx.db();
    let now = ctx.now_ms();
    // A read lookup without touching the access time, counted as a hit or miss.
    let stats = ctx.ks.keyspace().stats();
    let found = ctx.ks.expire_at(db, &argv[1])?;
    stats.count_lookup(found.is_some());
    let Some(deadline) = found else {
        return Ok(Reply::Integer(-2));
    };
    let Some(at) = deadline else {
        return Ok(Reply::Integer(-1));
    };
    let ms = if absolute {
        at
    } else {
        at.saturating_sub(now).max(0)
    };
    Ok(Reply::Integer(if millis {
        ms
    } else {
        // Redis rounds in unsigned arithmetic, so a deadline near i64::MAX rounds up
        // instead of overflowing.
        ((ms.max(0) as u64 + 500) / 1000) as i64
    }))
}

/// `PERSIST`: 1 if a time to live was removed.
pub(super) fn persist(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let db = ctx.db();
    let key = &argv[1];
    let had_ttl = ctx.ks.touched_deadline(db, key)?.flatten().is_some();
    if had_ttl {
        ctx.ks.set_expire_at(db, key, None)?;
        ctx.notify(notify::GENERIC, "persist", key);
    }
    Ok(Reply::Integer(i64::from(had_ttl)))
}
