//! One run of a script or function on the engine: its flags checked against the
//! command and memory, `KEYS` and `ARGV` set, `redis.call` bound to the dispatcher
//! for the run (or a debugging session driving it), the busy state kept, and the
//! outcome turned into the reply.

use std::cell::Cell;
use std::sync::Arc;

use mlua::Function;

use super::call::{with_calls, RunCtx};
use super::{over_maxmemory, rollback_forked};
use crate::clients::ClientState;
use crate::engine::Engine;
use crate::error::{OpError, OpResult};
use crate::reply::Reply;
use crate::scripting::busy::Running;
use crate::scripting::convert::lua_to_reply;
use crate::scripting::debugger::{self, DebugMode};
use crate::scripting::eval::Invocation;
use crate::scripting::sandbox::{is_counted_error, LuaState, Outcome};
use crate::scripting::{error_reply, Scripting};

/// Checks a script's flags against the command and memory before it runs.
fn precheck(engine: &Engine, inv: &Invocation<'_>) -> OpResult<()> {
    let f = inv.flags;
    if inv.ro_command && (f.shebang || inv.is_function) && !f.no_writes {
        return Err(OpError::custom(
            "ERR Can not execute a script with write flag using *_ro command.",
        ));
    }
    if (f.shebang || inv.is_function) && !f.no_writes && !f.allow_oom && over_maxmemory(engine) {
        return Err(OpError::custom(
            "OOM command not allowed when used memory > 'maxmemory'.",
        ));
    }
    Ok(())
}

/// Runs `func` for `inv` in `state` and turns the outcome into the reply.
pub fn run(
    scripting: &Scripting,
    state: &LuaState,
    func: &Function,
    engine: &Engine,
    client: &mut ClientState,
    inv: &Invocation<'_>,
) -> OpResult<Reply> {
    precheck(engine, inv)?;
    // A client that asked for `SCRIPT DEBUG` runs its `EVAL` as a debugging session.
    let console = match (&client.debug_console, client.script_debug) {
        (Some(open), DebugMode::Forked | DebugMode::Sync) if !inv.is_function => {
            Some(open().map_err(|e| {
                OpError::custom(format!("ERR cannot start the debugging session: {e}"))
            })?)
        }
        _ => None,
    };
    let lua = &state.lua;
    let lua_err = |e: mlua::Error| OpError::custom(format!("ERR {e}"));
    let keys = lua.create_table().map_err(lua_err)?;
    let args = lua.create_table().map_err(lua_err)?;
    for (i, k) in inv.argv[3..3 + inv.numkeys].iter().enumerate() {
        keys.raw_set(i + 1, lua.create_string(k).map_err(lua_err)?)
            .map_err(lua_err)?;
    }
    for (i, a) in inv.argv[3 + inv.numkeys..].iter().enumerate() {
        args.raw_set(i + 1, lua.create_string(a).map_err(lua_err)?)
            .map_err(lua_err)?;
    }
    let call_args = if inv.is_function {
        Some((keys, args))
    } else {
        let g = lua.globals();
        g.raw_set("KEYS", keys).map_err(lua_err)?;
        g.raw_set("ARGV", args).map_err(lua_err)?;
        None
    };
    state.rt.raw_set("resp", 2).map_err(lua_err)?;
    let rc = RunCtx {
        read_only: inv.ro_command || inv.flags.no_writes,
        allow_oom: inv.flags.allow_oom,
        wrote: Cell::new(false),
        busy: Arc::clone(scripting.busy()),
        debugging: console.is_some(),
    };
    let saved_db = client.db;
    scripting.busy().begin_script(Running {
        started: std::time::Instant::now(),
        is_function: inv.is_function,
        name: inv.name.clone(),
        command: inv.argv.to_vec(),
        wrote: false,
    });
    // Other clients are answered -BUSY once this runs past the threshold.
    engine.gate().busy().begin_script(inv.is_function);
    let debugging = console.is_some();
    let forked = client.script_debug == DebugMode::Forked;
    let mut rollback = None;
    let outcome = with_calls(state, engine, client, &rc, || match console {
        Some(console) => {
            let (outcome, undo) = debugger::run_session(
                lua,
                state.hook(),
                console,
                &inv.argv[1],
                engine.busy_threshold_ms(),
                forked,
                || state.run(func, call_args),
            );
            rollback = undo;
            outcome
        }
        None => state.run(func, call_args),
    });
    if debugging {
        // As in Redis, the session ends with the script's reply and the connection.
        client.close_after_reply = true;
        client.script_debug = DebugMode::Off;
    }
    if let Some(undo) = rollback {
        // A forked session leaves the dataset as it found it, and logs nothing.
        rollback_forked(engine, undo);
        if let Some(nested) = client.nested.as_mut() {
            nested.effects.clear();
        }
    }
    if scripting.busy().killed_for_shutdown() {
        // As in Redis, where the server exits with the script's effects unpropagated:
        // what it wrote never reaches the log.
        if let Some(nested) = client.nested.as_mut() {
            if !nested.effects.is_empty() {
                crate::log_warning!(
                    "SHUTDOWN NOSAVE stopped a script: its {} writes are not logged",
                    nested.effects.len()
                );
            }
            nested.effects.clear();
        }
        // The server is going away: the caller sees its connection close, no reply.
        client.suppress_reply = true;
        client.close_after_reply = true;
    }
    engine.gate().busy().end_script();
    scripting.busy().end_script();
    if client.db != saved_db {
        client.select(saved_db);
    }
    let resp = state.resp();
    let _ = state.rt.raw_set("resp", 2);
    if !inv.is_function {
        let g = lua.globals();
        let _ = g.raw_set("KEYS", mlua::Value::Nil);
        let _ = g.raw_set("ARGV", mlua::Value::Nil);
    }
    let outcome = outcome.map_err(lua_err)?;
    // Collect now and then so that dropped tables do not pile up between scripts.
    let _ = lua.gc_step();
    Ok(match outcome {
        Outcome::Value(v) => {
            // A returned error table of a command the script called (`return
            // redis.pcall(…)`) was counted when the command failed.
            if let mlua::Value::Table(t) = &v {
                client.error_already_counted = is_counted_error(t);
            }
            lua_to_reply(&v, resp)
        }
        Outcome::Error {
            message,
            at,
            counted,
        } => {
            client.error_already_counted = counted;
            match at {
                Some((source, line)) => error_reply(format!(
                    "{message} script: {}, on {source}:{line}.",
                    inv.name
                )),
                None => error_reply(message),
            }
        }
        Outcome::Fatal(text) => {
            let _ = lua.gc_collect();
            let prefix = if inv.is_function { "" } else { "f_" };
            error_reply(format!(
                "ERR Error running script (call to {prefix}{}): @user_script: {text}",
                inv.name
            ))
        }
    })
}
