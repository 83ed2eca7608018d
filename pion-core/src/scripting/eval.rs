//! `EVAL` scripts: the script cache (compiled once, kept by SHA1 until `SCRIPT
//! FLUSH`), the `#!lua flags=…` shebang, and one run with `KEYS` and `ARGV`.

use std::collections::HashMap;
use std::sync::Arc;

use mlua::Function;

use super::sandbox::{HookState, LuaState};
use super::ScriptFlags;
use crate::error::{OpError, OpResult};

/// A cached script.
pub struct Cached {
    /// The compiled chunk.
    pub func: Function,
    /// The source, as sent.
    pub body: Vec<u8>,
    /// Its shebang flags.
    pub flags: ScriptFlags,
}

/// The Lua state scripts run in, and the script cache.
pub struct EvalState {
    /// The sandboxed state.
    pub state: LuaState,
    /// Scripts by lower-case SHA1 hex.
    pub scripts: HashMap<String, Cached>,
    /// Bytes of script source held.
    pub bytes: usize,
}

/// The SHA1 of a script, lower-case hex.
pub fn sha1_hex(body: &[u8]) -> String {
    sha1_smol::Sha1::from(body).digest().to_string()
}

/// Parses an `EVAL` shebang line (`#!lua flags=no-writes,allow-oom`).
pub fn parse_shebang(body: &[u8]) -> OpResult<ScriptFlags> {
    if !body.starts_with(b"#!") {
        return Ok(ScriptFlags::default());
    }
    let line_end = body.iter().position(|&b| b == b'\n').unwrap_or(body.len());
    let line = String::from_utf8_lossy(&body[..line_end]).into_owned();
    let mut parts = line.split(' ').filter(|p| !p.is_empty());
    let engine = parts.next().unwrap_or("");
    if engine != "#!lua" {
        return Err(OpError::custom(format!(
            "ERR Unexpected engine in script shebang: {engine}"
        )));
    }
    let mut flags = ScriptFlags {
        shebang: true,
        ..ScriptFlags::default()
    };
    for part in parts {
        let Some(list) = part.strip_prefix("flags=") else {
            return Err(OpError::custom(format!(
                "ERR Unknown lua shebang option: {part}"
            )));
        };
        for flag in list.split(',').filter(|f| !f.is_empty()) {
            if !flags.set(flag) {
                return Err(OpError::custom(format!(
                    "ERR Unexpected flag in script shebang: {flag}"
                )));
            }
        }
    }
    Ok(flags)
}

impl EvalState {
    /// A fresh state and an empty cache.
    pub fn new(hook: Arc<HookState>) -> OpResult<EvalState> {
        let state = LuaState::new(hook)
            .map_err(|e| OpError::custom(format!("ERR could not create the Lua state: {e}")))?;
        Ok(EvalState {
            state,
            scripts: HashMap::new(),
            bytes: 0,
        })
    }

    /// Compiles and caches `body` (or finds it cached); returns its SHA1.
    pub fn load(&mut self, body: &[u8]) -> OpResult<String> {
        let sha = sha1_hex(body);
        if self.scripts.contains_key(&sha) {
            return Ok(sha);
        }
        let flags = parse_shebang(body)?;
        let func = self.state.compile("@user_script", body).map_err(|m| {
            OpError::custom(format!("ERR Error compiling script (new function): {m}"))
        })?;
        self.bytes += body.len();
        self.scripts.insert(
            sha.clone(),
            Cached {
                func,
                body: body.to_vec(),
                flags,
            },
        );
        Ok(sha)
    }
}

/// Parses a `numkeys` argument; `not_integer` is the error for a non-number.
pub fn numkeys(argv: &[Vec<u8>], not_integer: &'static str) -> OpResult<usize> {
    let n = crate::util::num::parse_i64(&argv[2]).ok_or(OpError::custom(not_integer))?;
    if n < 0 {
        return Err(OpError::custom("ERR Number of keys can't be negative"));
    }
    if n as usize > argv.len() - 3 {
        return Err(OpError::custom(
            "ERR Number of keys can't be greater than number of args",
        ));
    }
    Ok(n as usize)
}

/// How a script is named and checked for one run.
pub struct Invocation<'a> {
    /// The whole command.
    pub argv: &'a [Vec<u8>],
    /// Number of keys after the script/function argument.
    pub numkeys: usize,
    /// `*_RO` command.
    pub ro_command: bool,
    /// The name errors report (`script: <name>`).
    pub name: String,
    /// Script flags.
    pub flags: ScriptFlags,
    /// A function rather than an `EVAL` script.
    pub is_function: bool,
}
