//! Lua scripting as Redis 7.0 offers it: `EVAL` scripts with their cache, function
//! libraries, the sandboxed Lua 5.1 states they run in, the conversions between
//! replies and Lua values, and the busy state that `SCRIPT KILL` acts on. A script's
//! run on the engine (`redis.call` through the dispatcher) is
//! [`command::scripts`](crate::command::scripts)'s, and the `EVAL`/`FUNCTION` commands
//! are `command::handlers::scripting`.

pub mod api;
pub mod bit;
pub mod busy;
pub mod cjson;
pub mod cjson_settings;
pub mod cmsgpack;
pub mod convert;
pub mod debugger;
pub mod eval;
pub(crate) mod exact_args;
pub mod functions;
pub mod luaarg;
pub mod sandbox;
pub mod struct_pack;

/// The field Redis sets on the error table of a command a script called: the error
/// was counted when the command failed, so the script's error reply built from it is
/// not counted again (scripts can see it, as in Redis).
pub const COUNTED_ERROR_FIELD: &str = "ignore_error_stats_update";

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::clients::ClientState;
use crate::error::{OpError, OpResult};
use crate::reply::Reply;
use busy::Busy;
use eval::EvalState;
pub use eval::Invocation;
use functions::FunctionState;
use sandbox::{HookState, LuaState};

/// Script and function flags (`#!lua flags=…`, `register_function{flags=…}`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScriptFlags {
    /// The script has a shebang line (its flags apply; without one, legacy rules).
    pub shebang: bool,
    /// `no-writes`.
    pub no_writes: bool,
    /// `allow-oom`.
    pub allow_oom: bool,
    /// `allow-stale`.
    pub allow_stale: bool,
    /// `no-cluster`.
    pub no_cluster: bool,
    /// `allow-cross-slot-keys`.
    pub allow_cross_slot_keys: bool,
}

impl ScriptFlags {
    /// Sets a flag by its name; false for an unknown name.
    pub fn set(&mut self, name: &str) -> bool {
        let slot = match name {
            "no-writes" => &mut self.no_writes,
            "allow-oom" => &mut self.allow_oom,
            "allow-stale" => &mut self.allow_stale,
            "no-cluster" => &mut self.no_cluster,
            "allow-cross-slot-keys" => &mut self.allow_cross_slot_keys,
            _ => return false,
        };
        *slot = true;
        true
    }

    /// The flags set, by name, in Redis's order.
    pub fn names(&self) -> Vec<&'static str> {
        [
            (self.no_writes, "no-writes"),
            (self.allow_oom, "allow-oom"),
            (self.allow_stale, "allow-stale"),
            (self.no_cluster, "no-cluster"),
            (self.allow_cross_slot_keys, "allow-cross-slot-keys"),
        ]
        .into_iter()
        .filter_map(|(on, n)| on.then_some(n))
        .collect()
    }
}

/// Counters `INFO` reads without taking the Lua states' locks.
#[derive(Default)]
struct Stats {
    scripts: AtomicUsize,
    script_bytes: AtomicUsize,
    eval_memory: AtomicUsize,
    functions_memory: AtomicUsize,
    libraries: AtomicUsize,
    functions: AtomicUsize,
    function_code_bytes: AtomicUsize,
}

/// The scripting state of one engine.
#[derive(Default)]
pub struct Scripting {
    busy: Arc<Busy>,
    eval: Mutex<Option<EvalState>>,
    functions: Mutex<Option<FunctionState>>,
    stats: Stats,
}

/// An error reply whose text is made safe for the wire (no CR/LF).
pub(crate) fn error_reply(text: String) -> Reply {
    Reply::Error(text.replace(['\r', '\n'], " ").into())
}

/// Runs a script or function for one invocation: the compiled `func` in its Lua
/// `state`, for `client`. The command layer supplies it (`command::scripts`): a run
/// binds `redis.call` to the dispatcher.
pub type Runner<'a> = dyn FnMut(
        &Scripting,
        &LuaState,
        &mlua::Function,
        &mut ClientState,
        &Invocation<'_>,
    ) -> OpResult<Reply>
    + 'a;

impl Scripting {
    /// The busy state (the running script, kill requests), shared: a run's
    /// `redis.call`s hold it.
    pub fn busy(&self) -> &Arc<Busy> {
        &self.busy
    }

    fn hook(&self) -> Arc<HookState> {
        Arc::new(HookState {
            busy: Arc::clone(&self.busy),
            ..HookState::default()
        })
    }

    fn with_eval<R>(&self, f: impl FnOnce(&mut EvalState) -> OpResult<R>) -> OpResult<R> {
        let mut guard = self.eval.lock();
        if guard.is_none() {
            *guard = Some(EvalState::new(self.hook())?);
        }
        let state = guard.as_mut().ok_or(OpError::custom("ERR no Lua state"))?;
        let r = f(state);
        self.stats
            .scripts
            .store(state.scripts.len(), Ordering::Relaxed);
        self.stats
            .script_bytes
            .store(state.bytes, Ordering::Relaxed);
        self.stats
            .eval_memory
            .store(state.state.used_memory(), Ordering::Relaxed);
        r
    }

    fn with_functions<R>(&self, f: impl FnOnce(&mut FunctionState) -> OpResult<R>) -> OpResult<R> {
        let mut guard = self.functions.lock();
        if guard.is_none() {
            *guard = Some(FunctionState::new(self.hook())?);
        }
        let state = guard.as_mut().ok_or(OpError::custom("ERR no Lua state"))?;
        let r = f(state);
        self.stats
            .libraries
            .store(state.libs.len(), Ordering::Relaxed);
        self.stats
            .functions
            .store(state.function_count(), Ordering::Relaxed);
        self.stats.function_code_bytes.store(
            state.libs.values().map(|l| l.code.len()).sum(),
            Ordering::Relaxed,
        );
        self.stats
            .functions_memory
            .store(state.state.used_memory(), Ordering::Relaxed);
        r
    }

    /// `EVAL`/`EVALSHA` (`by_sha`) and their `_RO` forms: finds or compiles the
    /// script and has `run` run it.
    pub fn eval(
        &self,
        client: &mut ClientState,
        argv: &[Vec<u8>],
        by_sha: bool,
        ro_command: bool,
        run: &mut Runner<'_>,
    ) -> OpResult<Reply> {
        if by_sha && client.script_debug != debugger::DebugMode::Off {
            if argv[1].len() != 40 {
                return Err(OpError::custom(
                    "NOSCRIPT No matching script. Please use EVAL.",
                ));
            }
            return Err(OpError::custom(
                "ERR Please use EVAL instead of EVALSHA for debugging",
            ));
        }
        let numkeys = eval::numkeys(argv, "ERR value is not an integer or out of range")?;
        self.with_eval(|st| {
            let sha = if by_sha {
                let sha = String::from_utf8_lossy(&argv[1]).to_ascii_lowercase();
                if !st.scripts.contains_key(&sha) {
                    return Err(OpError::custom(
                        "NOSCRIPT No matching script. Please use EVAL.",
                    ));
                }
                sha
            } else {
                st.load(&argv[1])?
            };
            let cached = st.scripts.get(&sha).ok_or(OpError::custom(
                "NOSCRIPT No matching script. Please use EVAL.",
            ))?;
            let inv = Invocation {
                argv,
                numkeys,
                ro_command,
                name: sha.clone(),
                flags: cached.flags,
                is_function: false,
            };
            run(self, &st.state, &cached.func, client, &inv)
        })
    }

    /// The flags the script or function `argv` runs (`EVAL`, `EVALSHA`, `FCALL` and
    /// their `_RO` forms) declared, when it declared any: they stand for the
    /// command's own (no `no-writes`: it writes), as Redis's command flags do for
    /// `CLIENT PAUSE`. `None`: another command, a script without a shebang, an unknown
    /// script or function, or the cache in use (a script runs), when the command's own
    /// flags apply.
    pub fn declared_flags(&self, argv: &[Vec<u8>]) -> Option<ScriptFlags> {
        let name = String::from_utf8_lossy(argv.first()?).to_ascii_lowercase();
        let target = argv.get(1)?;
        match name.as_str() {
            "eval" | "eval_ro" => eval::parse_shebang(target).ok().filter(|f| f.shebang),
            "evalsha" | "evalsha_ro" => {
                let sha = String::from_utf8_lossy(target).to_ascii_lowercase();
                let guard = self.eval.try_lock()?;
                let flags = guard.as_ref()?.scripts.get(&sha)?.flags;
                flags.shebang.then_some(flags)
            }
            "fcall" | "fcall_ro" => {
                let guard = self.functions.try_lock()?;
                let func = guard.as_ref()?.function(&String::from_utf8_lossy(target))?;
                Some(ScriptFlags {
                    shebang: true,
                    ..func.flags
                })
            }
            _ => None,
        }
    }

    /// `SCRIPT LOAD`: caches the script, returns its SHA1.
    pub fn script_load(&self, body: &[u8]) -> OpResult<String> {
        self.with_eval(|st| st.load(body))
    }

    /// `SCRIPT EXISTS`: which SHA1s are cached.
    pub fn script_exists(&self, shas: &[Vec<u8>]) -> Vec<bool> {
        let guard = self.eval.lock();
        shas.iter()
            .map(|s| {
                let s = String::from_utf8_lossy(s).to_ascii_lowercase();
                guard.as_ref().is_some_and(|st| st.scripts.contains_key(&s))
            })
            .collect()
    }

    /// `SCRIPT FLUSH`: drops the cache and the Lua state.
    pub fn script_flush(&self) {
        *self.eval.lock() = None;
        self.stats.scripts.store(0, Ordering::Relaxed);
        self.stats.script_bytes.store(0, Ordering::Relaxed);
        self.stats.eval_memory.store(0, Ordering::Relaxed);
    }

    /// `FCALL`/`FCALL_RO`: finds the function and has `run` run it.
    pub fn fcall(
        &self,
        client: &mut ClientState,
        argv: &[Vec<u8>],
        ro_command: bool,
        run: &mut Runner<'_>,
    ) -> OpResult<Reply> {
        let numkeys = eval::numkeys(argv, "ERR Bad number of keys provided")?;
        let name = String::from_utf8_lossy(&argv[1]).into_owned();
        self.with_functions(|st| {
            let func = st
                .function(&name)
                .ok_or(OpError::custom("ERR Function not found"))?;
            let inv = Invocation {
                argv,
                numkeys,
                ro_command,
                name: name.clone(),
                flags: ScriptFlags {
                    shebang: true,
                    ..func.flags
                },
                is_function: true,
            };
            run(self, &st.state, &func.callback, client, &inv)
        })
    }

    /// Runs `f` on the function libraries.
    pub fn functions<R>(&self, f: impl FnOnce(&mut FunctionState) -> OpResult<R>) -> OpResult<R> {
        self.with_functions(f)
    }

    /// `FUNCTION FLUSH`: drops every library (and their Lua state).
    pub fn functions_flush(&self) {
        *self.functions.lock() = None;
        for s in [
            &self.stats.libraries,
            &self.stats.functions,
            &self.stats.function_code_bytes,
            &self.stats.functions_memory,
        ] {
            s.store(0, Ordering::Relaxed);
        }
    }

    /// Number of libraries and of functions, without waiting for a running script.
    pub fn function_counts(&self) -> (usize, usize) {
        (
            self.stats.libraries.load(Ordering::Relaxed),
            self.stats.functions.load(Ordering::Relaxed),
        )
    }

    /// Bytes of the cached scripts' bodies and of the libraries' code (`MEMORY
    /// STATS`'s `lua.caches` and `functions.caches`).
    pub fn cache_bytes(&self) -> (u64, u64) {
        (
            self.stats.script_bytes.load(Ordering::Relaxed) as u64,
            self.stats.function_code_bytes.load(Ordering::Relaxed) as u64,
        )
    }

    /// The `INFO memory` fields Redis 7.0 reports for scripting.
    pub fn info_memory(&self) -> Vec<(&'static str, String)> {
        let s = &self.stats;
        let eval_vm = s.eval_memory.load(Ordering::Relaxed).max(EMPTY_LUA_BYTES);
        let fn_vm = s
            .functions_memory
            .load(Ordering::Relaxed)
            .max(EMPTY_LUA_BYTES);
        let scripts = s.script_bytes.load(Ordering::Relaxed);
        let functions = s.function_code_bytes.load(Ordering::Relaxed);
        let human = |n: usize| crate::util::num::human_bytes(n as u64);
        vec![
            ("used_memory_lua", eval_vm.to_string()),
            ("used_memory_vm_eval", eval_vm.to_string()),
            ("used_memory_lua_human", human(eval_vm)),
            ("used_memory_scripts_eval", scripts.to_string()),
            (
                "number_of_cached_scripts",
                s.scripts.load(Ordering::Relaxed).to_string(),
            ),
            (
                "number_of_functions",
                s.functions.load(Ordering::Relaxed).to_string(),
            ),
            (
                "number_of_libraries",
                s.libraries.load(Ordering::Relaxed).to_string(),
            ),
            ("used_memory_vm_functions", fn_vm.to_string()),
            ("used_memory_vm_total", (eval_vm + fn_vm).to_string()),
            ("used_memory_vm_total_human", human(eval_vm + fn_vm)),
            ("used_memory_functions", functions.to_string()),
            ("used_memory_scripts", (scripts + functions).to_string()),
            ("used_memory_scripts_human", human(scripts + functions)),
        ]
    }
}

/// What an empty Lua state uses, reported before any state exists (as Redis reports
/// its always-present states).
const EMPTY_LUA_BYTES: usize = 31 * 1024;
