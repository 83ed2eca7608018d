//! `redis.call` and `redis.pcall`: the checks Redis makes before a script's command
//! runs (arguments, command, script flags, read-only mode, memory), the command run
//! through the nested path of the dispatcher, and its reply converted for Lua.

use std::cell::{Cell, RefCell};
use std::sync::Arc;

use mlua::{Lua, MultiValue, Value};

use crate::clients::ClientState;
use crate::command::flags;
use crate::engine::Engine;
use crate::error::OpError;
use crate::reply::Reply;
use crate::scripting::api::raise_table;
use crate::scripting::busy::Busy;
use crate::scripting::convert::{error_table, reply_to_lua};
use crate::scripting::sandbox::LuaState;
use crate::util::num::fmt_g17;

/// What one script run allows and what it did, shared with its `redis.call`s.
pub struct RunCtx {
    /// Writes are refused (`EVAL_RO`, `FCALL_RO`, `no-writes`).
    pub read_only: bool,
    /// The script declared `allow-oom`.
    pub allow_oom: bool,
    /// A write command succeeded (the script can no longer be killed).
    pub wrote: Cell<bool>,
    /// The engine's busy state, told about the first write.
    pub busy: Arc<Busy>,
    /// The run is a debugging session: its commands are shown to the debugger (and,
    /// in a forked session, saved to be rolled back). Off, `redis.call` never looks.
    pub debugging: bool,
}

/// Runs `body` with `redis.call` bound to this engine and client.
pub fn with_calls<R>(
    state: &LuaState,
    engine: &Engine,
    client: &mut ClientState,
    rc: &RunCtx,
    body: impl FnOnce() -> R,
) -> mlua::Result<R> {
    let client = RefCell::new(client);
    let redis: mlua::Table = state.rt.raw_get("redis")?;
    let run_call = |lua: &Lua, args: MultiValue| -> mlua::Result<(bool, Value)> {
        let Ok(mut c) = client.try_borrow_mut() else {
            let t = error_table(lua, "ERR nested script call")?;
            return Ok((false, Value::Table(t)));
        };
        let resp = state.resp();
        call(lua, engine, &mut c, rc, resp, args)
    };
    let r = state.lua.scope(|scope| {
        let call_fn =
            scope.create_function(|lua, args: MultiValue| match run_call(lua, args)? {
                (true, v) => Ok(v),
                (false, Value::Table(t)) => Err(raise_table(lua, t)),
                (false, v) => Ok(v),
            })?;
        let pcall_fn = scope.create_function(|lua, args: MultiValue| Ok(run_call(lua, args)?.1))?;
        let acl_check_fn = scope.create_function(|lua, args: MultiValue| {
            let Ok(c) = client.try_borrow() else {
                return Err(raise_table(
                    lua,
                    error_table(lua, "ERR nested script call")?,
                ));
            };
            acl_check_cmd(lua, engine, &c, args)
        })?;
        // Scripts call the C shims, which hand these the numbers as Redis's text.
        let lua = &state.lua;
        lua.set_named_registry_value(registry_key(crate::scripting::exact_args::CALL), call_fn)?;
        lua.set_named_registry_value(registry_key(crate::scripting::exact_args::PCALL), pcall_fn)?;
        let (call_shim, pcall_shim) = crate::scripting::exact_args::shims(lua)?;
        redis.raw_set("call", call_shim)?;
        redis.raw_set("pcall", pcall_shim)?;
        redis.raw_set("acl_check_cmd", acl_check_fn)?;
        Ok(body())
    });
    for bound in ["call", "pcall", "acl_check_cmd"] {
        redis.raw_set(bound, Value::Nil)?;
    }
    for slot in [
        crate::scripting::exact_args::CALL,
        crate::scripting::exact_args::PCALL,
    ] {
        state
            .lua
            .set_named_registry_value(registry_key(slot), Value::Nil)?;
    }
    r
}

/// A registry slot's name as mlua takes it (the slots are ASCII).
fn registry_key(slot: &std::ffi::CStr) -> &str {
    slot.to_str().unwrap_or_default()
}

/// A script's arguments for a command, as Redis converts them (strings, integers,
/// and numbers in `%.17g`).
fn lua_argv(args: MultiValue) -> Result<Vec<Vec<u8>>, &'static str> {
    if args.is_empty() {
        return Err("ERR Please specify at least one argument for this redis lib call");
    }
    let mut argv = Vec::with_capacity(args.len());
    for a in args {
        match a {
            Value::String(s) => argv.push(s.as_bytes().to_vec()),
            Value::Integer(i) => argv.push(i.to_string().into_bytes()),
            Value::Number(n) => argv.push(fmt_g17(n).into_bytes()),
            _ => return Err("ERR Lua redis lib command arguments must be strings or integers"),
        }
    }
    Ok(argv)
}

/// `redis.acl_check_cmd(command, args…)`: whether the script's caller may run it
/// (ACL rules only, nothing logged); an unknown command raises an error.
fn acl_check_cmd(
    lua: &Lua,
    engine: &Engine,
    client: &ClientState,
    args: MultiValue,
) -> mlua::Result<bool> {
    let raise =
        |text: &str| -> mlua::Result<bool> { Err(raise_table(lua, error_table(lua, text)?)) };
    let argv = match lua_argv(args) {
        Ok(argv) => argv,
        Err(text) => return raise(text),
    };
    match crate::command::resolve(&argv) {
        Ok(r) => Ok(crate::command::access::may_run(
            engine,
            client,
            r.spec,
            r.full_name,
            r.stat,
            &argv,
        )),
        Err(_) => raise("ERR Invalid command passed to redis.acl_check_cmd()"),
    }
}

fn fail(lua: &Lua, text: &str) -> mlua::Result<(bool, Value)> {
    Ok((false, Value::Table(error_table(lua, text)?)))
}

/// The debugger's line for a command refused before it ran: Redis logs the bare
/// message of its own refusals (`Unknown Redis command called from script`) and the
/// whole error line of a shared one (`-OOM …`).
fn log_refusal(lua: &Lua, text: &str) {
    match text.strip_prefix("ERR ") {
        Some(message) => crate::scripting::debugger::log_error(lua, message),
        None => crate::scripting::debugger::log_error(lua, &format!("-{text}")),
    }
}

/// An error of the command itself (its reply, or its refusal), which `INFO
/// errorstats` has already counted: the table carries Redis's flag saying so, and a
/// script that fails with it (or returns it) is not counted a second time.
fn fail_counted(lua: &Lua, text: &str) -> mlua::Result<(bool, Value)> {
    let t = error_table(lua, text)?;
    t.raw_set(crate::scripting::COUNTED_ERROR_FIELD, true)?;
    Ok((false, Value::Table(t)))
}

/// One `redis.call`: `(true, value)` or `(false, {err = …})`.
fn call(
    lua: &Lua,
    engine: &Engine,
    client: &mut ClientState,
    rc: &RunCtx,
    resp: u8,
    args: MultiValue,
) -> mlua::Result<(bool, Value)> {
    let debugging = rc.debugging;
    let argv = match lua_argv(args) {
        Ok(argv) => argv,
        Err(text) => {
            if debugging {
                log_refusal(lua, text);
            }
            return fail(lua, text);
        }
    };
    if debugging {
        crate::scripting::debugger::log_command(lua, &argv);
    }
    // Refusals from here on are error replies of the command, as Redis counts them
    // (INFO errorstats, and the command's rejected calls once it is known).
    let refuse = |text: &str, stat: Option<usize>| {
        engine.count_error(text);
        if let Some(slot) = stat {
            engine.command_stats().reject(slot);
        }
        if debugging {
            log_refusal(lua, text);
        }
        fail_counted(lua, text)
    };
    let resolved = match crate::command::resolve(&argv) {
        Ok(r) => r,
        Err(OpError::WrongArity(_)) => {
            // The command Redis's lookup finds: the subcommand when there is one.
            let table = crate::command::table();
            let top = table.lookup(&argv[0].to_ascii_lowercase());
            let sub = top.zip(argv.get(1)).and_then(|((container, _), name)| {
                table.lookup_sub(container, &name.to_ascii_lowercase())
            });
            let stat = sub.map(|(_, _, slot)| slot).or(top.map(|(_, slot)| slot));
            return refuse(
                "ERR Wrong number of args calling Redis command from script",
                stat,
            );
        }
        Err(OpError::UnknownCommand { .. } | OpError::UnknownSubcommand { .. }) => {
            return refuse("ERR Unknown Redis command called from script", None)
        }
        Err(e) => return refuse(&e.wire_text(), None),
    };
    let spec = resolved.spec;
    let stat = Some(resolved.stat);
    if spec.has(flags::NOSCRIPT) && !engine.scripts_deny_disabled() {
        return refuse("ERR This Redis command is not allowed from script", stat);
    }
    let write = spec.has(flags::WRITE);
    // As Redis does, a command that may replicate (PUBLISH …) counts as a write here,
    // which is what lets read-only scripts run during CLIENT PAUSE WRITE.
    if (write || spec.has(flags::MAY_REPLICATE)) && rc.read_only {
        return refuse(
            "ERR Write commands are not allowed from read-only scripts.",
            stat,
        );
    }
    if spec.has(flags::DENYOOM) && !rc.allow_oom && !rc.wrote.get() && super::over_maxmemory(engine)
    {
        return refuse(
            "OOM command not allowed when used memory > 'maxmemory'.",
            stat,
        );
    }
    if write && debugging {
        if let Err(text) = super::save_for_rollback(lua, engine, client.db, spec, &argv) {
            return refuse(text, stat);
        }
    }
    let saved_resp = client.resp;
    client.resp = resp;
    let reply = crate::command::run_nested(engine, client, &argv);
    client.resp = saved_resp;
    if let Reply::Error(text) = &reply {
        if debugging {
            // The error reply of the command itself: logged as such, then as its reply.
            crate::scripting::debugger::log_error(lua, &format!("-{text}"));
            crate::scripting::debugger::log_reply(lua, &reply, resp);
        }
        let t = error_table(lua, text)?;
        t.raw_set(crate::scripting::COUNTED_ERROR_FIELD, true)?;
        return Ok((false, Value::Table(t)));
    }
    if debugging {
        crate::scripting::debugger::log_reply(lua, &reply, resp);
    }
    if write && !rc.wrote.get() {
        rc.wrote.set(true);
        rc.busy.mark_wrote();
    }
    Ok((true, reply_to_lua(lua, &reply, resp)?))
}
