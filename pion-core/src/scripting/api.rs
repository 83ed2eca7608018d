//! The `redis` functions written in Rust, and how they raise errors the way Redis's C
//! functions do: a Redis error table (`{err = …}`) or a message prefixed with the
//! caller's position. They stay C functions on purpose: a script's `return
//! redis.call(…)` then keeps the script's frame, so the error can name its line.

use mlua::{Lua, MultiValue, Table, Value};

use super::convert::normalize_error;

/// The message of the Lua error that stands for a pending error table.
const MARKER: &str = "\u{1}redis error table";

/// Registry slot of the pending error table.
const PENDING: &str = "pion.pending_error";

/// An error that raises `table` (`{err = …}`) in the script.
pub fn raise_table(lua: &Lua, table: Table) -> mlua::Error {
    if let Err(e) = lua.set_named_registry_value(PENDING, table) {
        return e;
    }
    mlua::Error::runtime(MARKER)
}

/// An error raising `{err = "ERR " .. msg}`.
pub fn fail(lua: &Lua, msg: &str) -> mlua::Error {
    match lua.create_table().and_then(|t| {
        t.raw_set("err", format!("ERR {msg}"))?;
        Ok(t)
    }) {
        Ok(t) => raise_table(lua, t),
        Err(e) => e,
    }
}

/// An error with `msg` prefixed by the calling script's position
/// (`user_script:1: msg`), as `luaL_error` raises it.
pub fn raise_at(lua: &Lua, msg: &str) -> mlua::Error {
    let at = lua.inspect_stack(1).and_then(|frame| {
        let line = frame.curr_line();
        let src = frame.source();
        let short = src.short_src.as_deref().map(str::to_string);
        short.filter(|_| line > 0).map(|s| format!("{s}:{line}: "))
    });
    mlua::Error::runtime(format!("{}{msg}", at.unwrap_or_default()))
}

/// The innermost error of a callback error chain.
fn root(e: &mlua::Error) -> &mlua::Error {
    match e {
        mlua::Error::CallbackError { cause, .. } => root(cause),
        other => other,
    }
}

/// What a caught error is to the script: the pending table for a Redis error, the
/// message for other errors raised in Rust, anything else as it is.
pub fn unwrap_error(lua: &Lua, v: Value) -> mlua::Result<Value> {
    let Value::Error(e) = &v else {
        return Ok(v);
    };
    match root(e) {
        mlua::Error::RuntimeError(m) if m == MARKER => {
            let t: Value = lua.named_registry_value(PENDING)?;
            lua.set_named_registry_value(PENDING, Value::Nil)?;
            Ok(t)
        }
        mlua::Error::RuntimeError(m) => Ok(Value::String(lua.create_string(m)?)),
        mlua::Error::MemoryError(m) => Ok(Value::String(lua.create_string(m)?)),
        other => Ok(Value::String(lua.create_string(other.to_string())?)),
    }
}

fn arg_text(v: &Value) -> Option<Vec<u8>> {
    match v {
        Value::String(s) => Some(s.as_bytes().to_vec()),
        Value::Integer(i) => Some(i.to_string().into_bytes()),
        Value::Number(n) => Some(crate::util::num::fmt_g(*n, 14).into_bytes()),
        _ => None,
    }
}

/// The `redis` functions other than `call`/`pcall` (bound per run) and
/// `register_function` (written in Lua). `rt` is the sandbox's runtime table.
pub fn redis_api(lua: &Lua, rt: &Table) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set(
        "error_reply",
        lua.create_function(|lua, msg: Value| {
            let Value::String(msg) = msg else {
                return Err(fail(lua, "wrong number or type of arguments"));
            };
            let msg = String::from_utf8_lossy(&msg.as_bytes()).into_owned();
            let text = if msg.starts_with('-') {
                normalize_error(&msg)
            } else {
                normalize_error(&format!("-{msg}"))
            };
            let r = lua.create_table()?;
            r.raw_set("err", text)?;
            Ok(r)
        })?,
    )?;
    t.raw_set(
        "status_reply",
        lua.create_function(|lua, msg: Value| {
            let Value::String(msg) = msg else {
                return Err(fail(lua, "wrong number or type of arguments"));
            };
            let r = lua.create_table()?;
            r.raw_set("ok", msg)?;
            Ok(r)
        })?,
    )?;
    t.raw_set(
        "sha1hex",
        lua.create_function(|lua, args: MultiValue| {
            if args.len() != 1 {
                return Err(fail(lua, "wrong number of arguments"));
            }
            let bytes = args.front().and_then(arg_text).unwrap_or_default();
            Ok(sha1_smol::Sha1::from(&bytes).digest().to_string())
        })?,
    )?;
    t.raw_set("log", log_function(lua)?)?;
    let rt_resp = rt.clone();
    t.raw_set(
        "setresp",
        lua.create_function(move |lua, args: MultiValue| {
            let v = match (args.len(), args.front()) {
                (1, Some(Value::Integer(i))) => *i,
                (1, Some(Value::Number(n))) => *n as i64,
                (1, _) => 0,
                _ => return Err(fail(lua, "redis.setresp() requires one argument.")),
            };
            if v != 2 && v != 3 {
                return Err(fail(lua, "RESP version must be 2 or 3."));
            }
            rt_resp.raw_set("resp", v)?;
            Ok(())
        })?,
    )?;
    t.raw_set(
        "set_repl",
        lua.create_function(|lua, args: MultiValue| {
            if args.len() != 1 {
                return Err(fail(lua, "redis.set_repl() requires one argument."));
            }
            let v = match args.front() {
                Some(Value::Integer(i)) => *i,
                Some(Value::Number(n)) => *n as i64,
                _ => -1,
            };
            if !(0..=3).contains(&v) {
                return Err(fail(
                    lua,
                    "Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.",
                ));
            }
            Ok(())
        })?,
    )?;
    t.raw_set("replicate_commands", lua.create_function(|_, ()| Ok(true))?)?;
    // The debugger's hooks into a script: a stop at the next line, a log line.
    t.raw_set(
        "breakpoint",
        lua.create_function(|lua, ()| Ok(super::debugger::breakpoint(lua)))?,
    )?;
    t.raw_set(
        "debug",
        lua.create_function(|lua, args: MultiValue| {
            super::debugger::debug_log(lua, args);
            Ok(())
        })?,
    )?;
    Ok(t)
}

/// `redis.log(level, message, …)`: notices and warnings go to the server's standard
/// error, as its other log lines do.
pub fn log_function(lua: &Lua) -> mlua::Result<mlua::Function> {
    lua.create_function(|lua, args: MultiValue| {
        if args.len() < 2 {
            return Err(fail(lua, "redis.log() requires two arguments or more."));
        }
        let level = match args.front() {
            Some(Value::Integer(i)) => *i,
            Some(Value::Number(n)) => *n as i64,
            _ => -1,
        };
        if !(0..=3).contains(&level) {
            return Err(fail(lua, "Invalid debug level."));
        }
        let level = match level {
            0 => crate::util::log::Level::Debug,
            1 => crate::util::log::Level::Verbose,
            2 => crate::util::log::Level::Notice,
            _ => crate::util::log::Level::Warning,
        };
        if crate::util::log::enabled(level) {
            let parts: Vec<String> = args
                .iter()
                .skip(1)
                .filter_map(arg_text)
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .collect();
            crate::util::log::write(level, format_args!("{}", parts.join(" ")));
        }
        Ok(())
    })
}
