//! String commands: GET, SET and the rest of Redis's string family.

use crate::command::flags::*;
use crate::command::{CommandSpec, Group};
use crate::commands::util::{int, is_kw};
use crate::error::{OpError, OpResult};
use crate::exec::Ctx;
use crate::reply::Reply;
use crate::value::Value;

/// This family's part of the command table.
pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("get", 2, READONLY | FAST, Group::String, get)
        .keys(1, 1, 1)
        .doc("Returns the string value of a key.", "1.0.0"),
    CommandSpec::new("set", -3, WRITE | DENYOOM, Group::String, set)
        .keys(1, 1, 1)
        .doc("Sets the string value of a key, ignoring its type. The key is created if it doesn't exist.", "1.0.0"),
];

/// Reads a string key: `Ok(None)` when missing, `WRONGTYPE` for other types.
pub(crate) fn read_string(ctx: &mut Ctx<'_>, key: &[u8]) -> OpResult<Option<Vec<u8>>> {
    let db = ctx.db();
    match ctx.ks.get(db, key)? {
        None => Ok(None),
        Some(v) => Ok(Some(v.as_str()?.as_bytes().to_vec())),
    }
}

fn get(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let db = ctx.db();
    match ctx.ks.get(db, &argv[1])? {
        None => Ok(Reply::Null),
        Some(v) => Ok(Reply::Bulk(v.as_str()?.as_bytes().to_vec())),
    }
}

/// Which expiry option a SET/GETEX-style command carried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ExpireUnit {
    /// Relative seconds (`EX`).
    Seconds,
    /// Relative milliseconds (`PX`).
    Millis,
    /// Absolute Unix seconds (`EXAT`).
    UnixSeconds,
    /// Absolute Unix milliseconds (`PXAT`).
    UnixMillis,
}

/// Converts an expiry argument into an absolute Unix-ms deadline, with Redis's checks
/// and its `invalid expire time in '<cmd>' command` error.
pub(crate) fn expire_deadline(
    arg: &[u8],
    unit: ExpireUnit,
    now_ms: i64,
    cmd: &str,
) -> OpResult<i64> {
    let v = int(arg)?;
    let invalid = || OpError::custom(format!("ERR invalid expire time in '{cmd}' command"));
    if v <= 0 {
        return Err(invalid());
    }
    let ms = match unit {
        ExpireUnit::Seconds | ExpireUnit::UnixSeconds => v.checked_mul(1000).ok_or_else(invalid)?,
        ExpireUnit::Millis | ExpireUnit::UnixMillis => v,
    };
    match unit {
        ExpireUnit::Seconds | ExpireUnit::Millis => ms.checked_add(now_ms).ok_or_else(invalid),
        ExpireUnit::UnixSeconds | ExpireUnit::UnixMillis => Ok(ms),
    }
}

fn set(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
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
        None => ctx.ks.exists(db, key)?,
    };
    if (nx && found) || (xx && !found) {
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
    if let Some(at) = deadline {
        ctx.ks.set_expire_at(db, key, Some(at))?;
    }
    Ok(match old {
        Some(v) => Reply::bulk_or_null(v),
        None => Reply::ok(),
    })
}

fn expire_keyword(opt: &[u8]) -> Option<ExpireUnit> {
    if is_kw(opt, "ex") {
        Some(ExpireUnit::Seconds)
    } else if is_kw(opt, "px") {
        Some(ExpireUnit::Millis)
    } else if is_kw(opt, "exat") {
        Some(ExpireUnit::UnixSeconds)
    } else if is_kw(opt, "pxat") {
        Some(ExpireUnit::UnixMillis)
    } else {
        None
    }
}
