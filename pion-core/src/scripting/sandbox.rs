//! One sandboxed Lua 5.1 state as Redis 7 prepares it: the allowed libraries only
//! (`string`, `table`, `math`, `cjson`, `cmsgpack`, `struct`, `bit`, the safe base
//! functions), read-only library tables and globals, the `redis` API, Redis's error handler (which records
//! where a script failed), an instruction hook that honours kill requests and
//! deadlines, and a memory limit.

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use mlua::{Function, HookTriggers, Lua, LuaOptions, StdLib, Table, Value, VmState};
use parking_lot::Mutex;

use super::busy::Busy;
use super::{api, bit, cjson, cmsgpack, struct_pack};

/// The most memory one Lua state may use; past it the running script fails with an
/// out-of-memory error and nothing else is affected.
pub const MEMORY_LIMIT: usize = 1 << 30;

/// Instructions between two checks for a kill request or a deadline.
pub(crate) const HOOK_EVERY: u32 = 100_000;

/// What the instruction hook consults and records.
#[derive(Default)]
pub struct HookState {
    /// The engine's busy state (its kill request).
    pub busy: Arc<Busy>,
    /// A deadline for the code that runs now (library loading).
    pub deadline: Mutex<Option<Instant>>,
    /// Set when the hook stopped a script because of a kill request.
    pub killed: AtomicBool,
    /// Set when the hook stopped code because its deadline passed.
    pub timed_out: AtomicBool,
    /// The line the script was at when the hook stopped it.
    pub line: AtomicI64,
}

/// A Lua state with the sandbox installed.
pub struct LuaState {
    /// The state.
    pub lua: Lua,
    /// The runtime table shared with the sandbox code (`rt`).
    pub rt: Table,
    handler: Function,
    hook: Arc<HookState>,
}

/// How a run ended.
pub enum Outcome {
    /// The script returned this value.
    Value(Value),
    /// It raised an error: the message and, when known, where (`@user_script`, line).
    Error {
        /// The error text (code included).
        message: String,
        /// The chunk name and line of the failing frame.
        at: Option<(String, i64)>,
        /// The error is that of a command the script called, already counted.
        counted: bool,
    },
    /// It failed outside the error handler (out of memory), with this text.
    Fatal(String),
}

/// The version number scripts see as `redis.REDIS_VERSION_NUM` (0x00MMmmpp).
fn version_num() -> i64 {
    let mut parts = crate::REDIS_VERSION
        .split('.')
        .map(|p| p.parse::<i64>().unwrap_or(0));
    let (a, b, c) = (
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
        parts.next().unwrap_or(0),
    );
    (a << 16) | (b << 8) | c
}

/// Whether an error table is that of a command the script called (already counted).
pub fn is_counted_error(t: &Table) -> bool {
    matches!(
        t.raw_get::<Value>(super::COUNTED_ERROR_FIELD),
        Ok(Value::Boolean(true))
    )
}

/// The text a Lua error value reads as (`tostring`).
fn error_value_text(v: &Value) -> String {
    match v {
        Value::String(s) => String::from_utf8_lossy(&s.as_bytes()).into_owned(),
        Value::Nil => "nil".into(),
        Value::Boolean(b) => b.to_string(),
        Value::Integer(i) => i.to_string(),
        Value::Number(n) => crate::util::num::fmt_g(*n, 14),
        Value::Error(e) => match e.as_ref() {
            mlua::Error::RuntimeError(m) => m.clone(),
            mlua::Error::CallbackError { cause, .. } => cause.to_string(),
            other => other.to_string(),
        },
        other => other.type_name().to_string(),
    }
}

/// Stops the running code when a kill was requested or its deadline passed (at
/// `line`), and serves this thread's other clients while a script is busy: what the
/// instruction hook does every [`HOOK_EVERY`] instructions.
pub(crate) fn check_interrupts(h: &HookState, line: i32) -> mlua::Result<()> {
    if h.busy.kill_requested() {
        h.killed.store(true, Ordering::SeqCst);
        h.line.store(i64::from(line), Ordering::SeqCst);
        return Err(mlua::Error::runtime(
            "Script killed by user with SCRIPT KILL...",
        ));
    }
    let deadline = *h.deadline.lock();
    if deadline.is_some_and(|d| Instant::now() > d) {
        h.timed_out.store(true, Ordering::SeqCst);
        return Err(mlua::Error::runtime("FUNCTION LOAD timeout"));
    }
    // Past the busy threshold, this thread's other clients are served (their SCRIPT
    // KILL included) between two stretches of the script.
    crate::server::gate::pump_while_busy();
    Ok(())
}

/// Installs the state's instruction hook (see [`check_interrupts`]); the debugger
/// replaces it for a session and puts it back after.
pub(crate) fn install_hook(lua: &Lua, hook: Arc<HookState>) {
    lua.set_hook(
        HookTriggers::new().every_nth_instruction(HOOK_EVERY),
        move |_, debug| {
            check_interrupts(&hook, debug.curr_line())?;
            Ok(VmState::Continue)
        },
    );
}

impl LuaState {
    /// The protocol `redis.setresp` chose for this run (2 unless changed).
    pub fn resp(&self) -> u8 {
        self.rt
            .raw_get::<Option<u8>>("resp")
            .ok()
            .flatten()
            .unwrap_or(2)
    }

    /// What the state's instruction hook consults.
    pub(crate) fn hook(&self) -> &Arc<HookState> {
        &self.hook
    }

    /// A fresh sandboxed state whose hook reads `hook`.
    pub fn new(hook: Arc<HookState>) -> mlua::Result<LuaState> {
        let lua = Lua::new_with(
            StdLib::STRING | StdLib::TABLE | StdLib::MATH,
            LuaOptions::default(),
        )?;
        let rt = lua.create_table()?;
        rt.raw_set("cjson", cjson::open(&lua)?)?;
        rt.raw_set("bit", bit::open(&lua)?)?;
        rt.raw_set("cmsgpack", cmsgpack::open(&lua)?)?;
        rt.raw_set("struct", struct_pack::open(&lua)?)?;
        rt.raw_set("version", crate::REDIS_VERSION)?;
        rt.raw_set("version_num", version_num())?;
        rt.raw_set("redis_api", api::redis_api(&lua, &rt)?)?;
        rt.raw_set(
            "unwrap_error",
            lua.create_function(|lua, v: Value| api::unwrap_error(lua, v))?,
        )?;
        // Whether the hook stopped the running script (`pcall` must not swallow it).
        let stopped = Arc::clone(&hook);
        rt.raw_set(
            "killed",
            lua.create_function(move |_, ()| {
                Ok(stopped.killed.load(Ordering::SeqCst)
                    || stopped.timed_out.load(Ordering::SeqCst))
            })?,
        )?;
        lua.load(include_str!("bootstrap.lua"))
            .set_name("=sandbox")
            .call::<()>(rt.clone())?;
        let handler = lua.create_function(|lua, err: Value| {
            let table = match api::unwrap_error(lua, err)? {
                Value::Table(t) => t,
                other => {
                    let t = lua.create_table()?;
                    t.raw_set("err", format!("ERR {}", error_value_text(&other)))?;
                    t
                }
            };
            for level in 1..200 {
                let Some(frame) = lua.inspect_stack(level) else {
                    break;
                };
                let src = frame.source();
                let user =
                    src.what != "C" && src.source.as_deref().is_some_and(|s| s.starts_with('@'));
                if user {
                    table.raw_set("source", src.source.as_deref().unwrap_or(""))?;
                    table.raw_set("line", frame.curr_line())?;
                    break;
                }
            }
            Ok(table)
        })?;
        install_hook(&lua, Arc::clone(&hook));
        lua.set_memory_limit(MEMORY_LIMIT)?;
        Ok(LuaState {
            lua,
            rt,
            handler,
            hook,
        })
    }

    /// Compiles `body` as a chunk named `name` (`@user_script`). A first line that
    /// starts with `#!` becomes a comment, so line numbers stay those of the text.
    pub fn compile(&self, name: &str, body: &[u8]) -> Result<Function, String> {
        let mut code = Vec::with_capacity(body.len() + 2);
        if body.starts_with(b"#!") {
            code.extend_from_slice(b"--");
        }
        code.extend_from_slice(body);
        self.lua
            .load(code)
            .set_name(name)
            .set_mode(mlua::ChunkMode::Text)
            .into_function()
            .map_err(|e| match e {
                mlua::Error::SyntaxError { message, .. } => message,
                mlua::Error::MemoryError(_) => "not enough memory".into(),
                other => other.to_string(),
            })
    }

    /// Runs `f` (with `keys` and `args` as its two arguments for a function) under
    /// the error handler.
    pub fn run(&self, f: &Function, call_args: Option<(Table, Table)>) -> Outcome {
        self.hook.killed.store(false, Ordering::SeqCst);
        self.hook.timed_out.store(false, Ordering::SeqCst);
        let run: Function = match self.rt.raw_get("run") {
            Ok(r) => r,
            Err(e) => return Outcome::Fatal(e.to_string()),
        };
        let result = match call_args {
            Some((k, a)) => run.call::<(bool, Value)>((f.clone(), self.handler.clone(), k, a)),
            None => run.call::<(bool, Value)>((f.clone(), self.handler.clone())),
        };
        let outcome = match result {
            Ok((true, v)) => Outcome::Value(v),
            Ok((false, Value::Table(t))) => {
                let message = t
                    .raw_get::<Value>("err")
                    .map(|v| match v {
                        Value::Nil => "ERR unknown error".to_string(),
                        other => error_value_text(&other),
                    })
                    .unwrap_or_default();
                let source = t.raw_get::<Option<String>>("source").ok().flatten();
                let line = t.raw_get::<Option<i64>>("line").ok().flatten();
                Outcome::Error {
                    message,
                    at: source.zip(line),
                    counted: is_counted_error(&t),
                }
            }
            Ok((false, other)) => Outcome::Fatal(error_value_text(&other)),
            Err(mlua::Error::MemoryError(_)) => Outcome::Fatal("not enough memory".into()),
            Err(e) => Outcome::Fatal(e.to_string()),
        };
        if self.hook.killed.load(Ordering::SeqCst) {
            let at = match outcome {
                Outcome::Error { at: Some(at), .. } => at,
                _ => ("@user_script".into(), self.hook.line.load(Ordering::SeqCst)),
            };
            return Outcome::Error {
                message: "ERR Script killed by user with SCRIPT KILL...".into(),
                at: Some(at),
                counted: false,
            };
        }
        outcome
    }

    /// Sets (or clears) a deadline for the code run next.
    pub fn set_deadline(&self, deadline: Option<Instant>) {
        *self.hook.deadline.lock() = deadline;
    }

    /// Whether the last run was stopped by its deadline.
    pub fn timed_out(&self) -> bool {
        self.hook.timed_out.load(Ordering::SeqCst)
    }

    /// Memory the state uses, in bytes.
    pub fn used_memory(&self) -> usize {
        self.lua.used_memory()
    }
}
