//! Whole-value reads and writes: `GET`, `SET` and its variants (`SETNX`, `SETEX`,
//! `PSETEX`, `GETSET`, `GETDEL`, `GETEX`) and the multi-key `MGET`, `MSET`, `MSETNX`.

use super::{exists_for_write, expire_deadline, expire_keyword, read_string, ExpireUnit};
use crate::command::ctx::Ctx;
use crate::command::handlers::util::is_kw;
use crate::error::{OpError, OpResult};
use crate::pubsub::notify;
use crate::reply::Reply;
use crate::value::Value;

/// `GET key`.
pub(super) fn get(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    Ok(Reply::bulk_or_null(read_string(ctx, &argv[1])?))
}

/// `SET key value [NX|XX] [GET] [EX s|PX ms|EXAT ts|PXAT ms-ts|KEEPTTL]`.
pub(super) fn set(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let (mut nx, mut xx, mut want_get, mut keep_ttl) = (false, false, false, false);
    let mut expire: Option<(ExpireUnit, &[u8])> = None;
    let mut j = 3;
    while j < argv.len() {
        let opt = &argv[j];
        let next = argv.get(j + 1);
        let has_expire = expire.is_some();
        let other_unit = |u: ExpireUnit| expire.is_some_and(|(cur, _)| cur != u);
        if is_kw(opt, "nx") && !xx {
            nx = true;
        } else if is_kw(opt, "xx") && !nx {
            xx = true;
        } else if is_kw(opt, "get") {
            want_get = true;
        } else if is_kw(opt, "keepttl") && !has_expire {
            keep_ttl = true;
        } else if let (Some(unit), Some(next)) = (expire_keyword(opt), next) {
            if keep_ttl || other_unit(unit) {
                return Err(OpError::Syntax);
            }
            expire = Some((unit, next));
            j += 1;
        } else {
            return Err(OpError::Syntax);
        }
        j += 1;
    }
    let deadline = match expire {
        Some((unit, arg)) => Some(expire_deadline(arg, unit, ctx.now_ms(), "set")?),
        None => None,
    };
    let db = ctx.db();
    let key = &argv[1];
    let old = if want_get {
        Some(read_string(ctx, key)?)
    } else {
        None
    };
    let found = match &old {
        Some(v) => v.is_some(),
        None => exists_for_write(ctx, key)?,
    };
    if (nx && found) || (xx && !found) {
        // Not performed: nothing to log, no watcher or cache to tell.
        ctx.effect = crate::command::ctx::Effect::Nothing;
        return Ok(match old {
            Some(v) => Reply::bulk_or_null(v),
            None => Reply::Null,
        });
    }
    let value = Value::string(argv[2].clone());
    if keep_ttl {
        ctx.ks.set_keep_ttl(db, key, value)?;
    } else {
        ctx.ks.set(db, key, value)?;
    }
    ctx.notify(notify::STRING, "set", key);
    if let Some(at) = deadline {
        ctx.ks.set_expire_at(db, key, Some(at))?;
        ctx.notify(notify::GENERIC, "expire", key);
    }
    Ok(match old {
        Some(v) => Reply::bulk_or_null(v),
        None => Reply::ok(),
    })
}

/// `SETNX key value`: 1 if the key was created, 0 if it existed (with any type).
pub(super) fn setnx(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    if exists_for_write(ctx, &argv[1])? {
        return Ok(Reply::Integer(0));
    }
    let db = ctx.db();
    ctx.ks.set(db, &argv[1], Value::string(argv[2].clone()))?;
    ctx.notify(notify::STRING, "set", &argv[1]);
    Ok(Reply::Integer(1))
}

/// Stores `value` under `key` with a fresh deadline (`SETEX`, `PSETEX`).
fn set_with_expire(
    ctx: &mut Ctx<'_>,
    argv: &[Vec<u8>],
    unit: ExpireUnit,
    cmd: &str,
) -> OpResult<Reply> {
    let at = expire_deadline(&argv[2], unit, ctx.now_ms(), cmd)?;
    let db = ctx.db();
    ctx.ks.set(db, &argv[1], Value::string(argv[3].clone()))?;
    ctx.notify(notify::STRING, "set", &argv[1]);
    ctx.ks.set_expire_at(db, &argv[1], Some(at))?;
    ctx.notify(notify::GENERIC, "expire", &argv[1]);
    Ok(Reply::ok())
}

/// `SETEX key seconds value`.
pub(super) fn setex(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    set_with_expire(ctx, argv, ExpireUnit::Seconds, "setex")
}

/// `PSETEX key milliseconds value`.
pub(super) fn psetex(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    set_with_expire(ctx, argv, ExpireUnit::Millis, "psetex")
}

/// `GETSET key value`: the old string (or nil); the new value has no time to live.
pub(super) fn getset(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let old = read_string(ctx, &argv[1])?;
    let db = ctx.db();
    ctx.ks.set(db, &argv[1], Value::string(argv[2].clone()))?;
    ctx.notify(notify::STRING, "set", &argv[1]);
    Ok(Reply::bulk_or_null(old))
}

/// `GETDEL key`: the string, then the key is gone.
pub(super) fn getdel(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let old = read_string(ctx, &argv[1])?;
    if old.is_some() {
        let db = ctx.db();
        ctx.ks.remove(db, &argv[1])?;
        ctx.notify(notify::GENERIC, "del", &argv[1]);
    }
    Ok(Reply::bulk_or_null(old))
}

/// What `GETEX` does to the key's time to live.
enum GetexOp<'a> {
    /// Nothing (no option).
    Keep,
    /// `PERSIST`: clear it.
    Persist,
    /// `EX`/`PX`/`EXAT`/`PXAT` with its unparsed argument.
    Expire(ExpireUnit, &'a [u8]),
}

/// Parses GETEX's options; only syntax is checked here, numbers later (Redis checks
/// the key before the number).
fn parse_getex(argv: &[Vec<u8>]) -> OpResult<GetexOp<'_>> {
    let mut op = GetexOp::Keep;
    let mut j = 2;
    while j < argv.len() {
        let opt = &argv[j];
        if is_kw(opt, "persist") && matches!(op, GetexOp::Keep | GetexOp::Persist) {
            op = GetexOp::Persist;
        } else if let (Some(unit), Some(next)) = (expire_keyword(opt), argv.get(j + 1)) {
            match op {
                GetexOp::Persist => return Err(OpError::Syntax),
                GetexOp::Expire(cur, _) if cur != unit => return Err(OpError::Syntax),
                _ => {}
            }
            op = GetexOp::Expire(unit, next);
            j += 1;
        } else {
            return Err(OpError::Syntax);
        }
        j += 1;
    }
    Ok(op)
}

/// `GETEX key [EX s|PX ms|EXAT ts|PXAT ms-ts|PERSIST]`: the string, and the key's time
/// to live changed. A deadline already past deletes the key, as Redis does.
pub(super) fn getex(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let op = parse_getex(argv)?;
    let key = &argv[1];
    let Some(value) = read_string(ctx, key)? else {
        return Ok(Reply::Null);
    };
    let db = ctx.db();
    match op {
        GetexOp::Keep => {}
        GetexOp::Persist => {
            let had_ttl = matches!(ctx.ks.expire_at(db, key)?, Some(Some(_)));
            if had_ttl && ctx.ks.set_expire_at(db, key, None)? {
                ctx.notify(notify::GENERIC, "persist", key);
            }
        }
        GetexOp::Expire(unit, arg) => {
            let at = expire_deadline(arg, unit, ctx.now_ms(), "getex")?;
            if at <= ctx.now_ms() {
                ctx.ks.remove(db, key)?;
                ctx.notify(notify::GENERIC, "del", key);
            } else {
                ctx.ks.set_expire_at(db, key, Some(at))?;
                ctx.notify(notify::GENERIC, "expire", key);
            }
        }
    }
    Ok(Reply::Bulk(value))
}

/// `MGET key [key ...]`: each string, nil for missing keys and other types.
pub(super) fn mget(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let db = ctx.db();
    let mut out = Vec::with_capacity(argv.len() - 1);
    for key in &argv[1..] {
        out.push(match ctx.ks.get(db, key)? {
            Some(Value::Str(s)) => Reply::bulk(s.as_bytes()),
            _ => Reply::Null,
        });
    }
    Ok(Reply::Array(out))
}

/// The key/value pairs of `MSET`/`MSETNX`, or Redis's arity error when one is odd.
fn pairs<'a>(argv: &'a [Vec<u8>], cmd: &str) -> OpResult<std::slice::Chunks<'a, Vec<u8>>> {
    if argv.len().is_multiple_of(2) {
        return Err(OpError::WrongArity(cmd.to_string()));
    }
    Ok(argv[1..].chunks(2))
}

/// `MSET key value [key value ...]`: later pairs win when a key repeats.
pub(super) fn mset(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let db = ctx.db();
    for pair in pairs(argv, "mset")? {
        ctx.ks.set(db, &pair[0], Value::string(pair[1].clone()))?;
        ctx.notify(notify::STRING, "set", &pair[0]);
    }
    Ok(Reply::ok())
}

/// `MSETNX key value [key value ...]`: sets all pairs only if no key exists (of any
/// type); 1 if it did, 0 otherwise.
pub(super) fn msetnx(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    for pair in pairs(argv, "msetnx")? {
        if exists_for_write(ctx, &pair[0])? {
            return Ok(Reply::Integer(0));
        }
    }
    let db = ctx.db();
    for pair in pairs(argv, "msetnx")? {
        ctx.ks.set(db, &pair[0], Value::string(pair[1].clone()))?;
        ctx.notify(notify::STRING, "set", &pair[0]);
    }
    Ok(Reply::Integer(1))
}
