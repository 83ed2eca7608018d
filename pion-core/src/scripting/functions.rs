//! Function libraries (`FUNCTION LOAD`, `FCALL`): the `#!lua name=…` header, loading
//! a library in its own sandboxed state with only `redis.register_function` (and
//! `redis.log`) visible, the registry of functions by name, and `FUNCTION DUMP` /
//! `RESTORE` payloads.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use mlua::{Function, Table, Value};

use super::sandbox::{HookState, LuaState, Outcome};
use super::ScriptFlags;
use crate::error::{OpError, OpResult};

/// How long a library's top-level code may run while it loads.
const LOAD_TIMEOUT: Duration = Duration::from_millis(500);

/// Start of a `FUNCTION DUMP` payload.
const DUMP_MAGIC: &[u8] = b"PIONFN\x01";

/// One registered function.
pub struct Func {
    /// The Lua callback.
    pub callback: Function,
    /// Its flags.
    pub flags: ScriptFlags,
    /// Its description, if given.
    pub description: Option<String>,
}

/// One library.
pub struct Library {
    /// The code as loaded.
    pub code: Vec<u8>,
    /// Its functions by name.
    pub funcs: BTreeMap<String, Func>,
}

/// The functions' Lua state and libraries.
pub struct FunctionState {
    /// The sandboxed state the libraries live in.
    pub state: LuaState,
    /// Libraries by name.
    pub libs: BTreeMap<String, Library>,
    /// The library of each function, by lower-cased name: function names are
    /// case-insensitive, as in Redis (library names are not).
    pub index: HashMap<String, String>,
}

fn err(text: impl Into<String>) -> OpError {
    OpError::custom(text.into())
}

fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// Reads the library name from the `#!lua name=…` first line, as Redis does: the line
/// split like a config line (quotes allowed), the engine after `#!`, `name=` in any
/// case and once only, and the checks in Redis's order (metadata, name, engine).
pub fn parse_header(code: &[u8]) -> OpResult<String> {
    if !code.starts_with(b"#!") {
        return Err(err("ERR Missing library metadata"));
    }
    let invalid = || err("ERR Invalid library metadata");
    let end = code.iter().position(|&b| b == b'\n').ok_or_else(invalid)?;
    let line = String::from_utf8_lossy(&code[..end]);
    let parts = crate::config::file::split_args(&line)
        .filter(|p| !p.is_empty())
        .ok_or_else(invalid)?;
    let engine = parts[0].get(2..).unwrap_or("");
    let mut name: Option<&str> = None;
    for part in &parts[1..] {
        let is_name = part
            .get(..5)
            .is_some_and(|p| p.eq_ignore_ascii_case("name="));
        if !is_name {
            return Err(err(format!("ERR Invalid metadata value given: {part}")));
        }
        if name.is_some() {
            return Err(err(
                "ERR Invalid metadata value, name argument was given multiple times",
            ));
        }
        name = Some(&part[5..]);
    }
    let name = name.ok_or_else(|| err("ERR Library name was not given"))?;
    if !valid_name(name) {
        return Err(err("ERR Library names can only contain letters, numbers, or underscores(_) and must be at least one character long"));
    }
    if !engine.eq_ignore_ascii_case("lua") {
        return Err(err(format!("ERR Engine '{engine}' not found")));
    }
    Ok(name.to_string())
}

impl FunctionState {
    /// A fresh state with no libraries.
    pub fn new(hook: Arc<HookState>) -> OpResult<FunctionState> {
        let state = LuaState::new(hook)
            .map_err(|e| err(format!("ERR could not create the Lua state: {e}")))?;
        Ok(FunctionState {
            state,
            libs: BTreeMap::new(),
            index: HashMap::new(),
        })
    }

    /// Number of functions in all libraries.
    pub fn function_count(&self) -> usize {
        self.index.len()
    }

    /// Loads a library (`FUNCTION LOAD [REPLACE]`); returns its name.
    pub fn load(&mut self, code: &[u8], replace: bool) -> OpResult<String> {
        let name = parse_header(code)?;
        if !replace && self.libs.contains_key(&name) {
            return Err(err(format!("ERR Library '{name}' already exists")));
        }
        let chunk = self
            .state
            .compile("@user_function", code)
            .map_err(|m| err(format!("ERR Error compiling function: {m}")))?;
        let funcs = self.register(&chunk)?;
        if funcs.is_empty() {
            return Err(err("ERR No functions registered"));
        }
        for f in funcs.keys() {
            if let Some(owner) = self.index.get(&f.to_ascii_lowercase()) {
                if *owner != name {
                    return Err(err(format!("ERR Function {f} already exists")));
                }
            }
        }
        self.remove(&name);
        for f in funcs.keys() {
            self.index.insert(f.to_ascii_lowercase(), name.clone());
        }
        self.libs.insert(
            name.clone(),
            Library {
                code: code.to_vec(),
                funcs,
            },
        );
        Ok(name)
    }

    /// Runs a library's top-level code in loading mode and collects what it
    /// registered.
    fn register(&mut self, chunk: &Function) -> OpResult<BTreeMap<String, Func>> {
        let lua_err = |e: mlua::Error| err(format!("ERR {e}"));
        let rt = &self.state.rt;
        let registered = self.state.lua.create_table().map_err(lua_err)?;
        rt.raw_set("registered", registered.clone())
            .map_err(lua_err)?;
        rt.raw_set("loading", true).map_err(lua_err)?;
        self.state.set_deadline(Some(Instant::now() + LOAD_TIMEOUT));
        let outcome = self.state.run(chunk, None);
        self.state.set_deadline(None);
        let _ = rt.raw_set("loading", false);
        let _ = rt.raw_set("registered", Value::Nil);
        match outcome {
            Outcome::Value(_) => {}
            _ if self.state.timed_out() => {
                return Err(err(
                    "ERR Error registering functions: FUNCTION LOAD timeout",
                ))
            }
            Outcome::Error { message, .. } | Outcome::Fatal(message) => {
                return Err(err(format!("ERR Error registering functions: {message}")))
            }
        }
        let mut funcs = BTreeMap::new();
        let n = registered.raw_len();
        for i in 1..=n {
            let name: String = registered.raw_get(i).map_err(lua_err)?;
            let entry: Table = registered.raw_get(name.as_str()).map_err(lua_err)?;
            let callback: Function = entry.raw_get(1).map_err(lua_err)?;
            let flag_list: Table = entry.raw_get(2).map_err(lua_err)?;
            let description: Option<String> = entry.raw_get(3).map_err(lua_err)?;
            let mut flags = ScriptFlags::default();
            for f in flag_list.sequence_values::<String>() {
                flags.set(&f.map_err(lua_err)?);
            }
            funcs.insert(
                name,
                Func {
                    callback,
                    flags,
                    description,
                },
            );
        }
        Ok(funcs)
    }

    /// Removes a library and its functions; whether it existed.
    pub fn remove(&mut self, name: &str) -> bool {
        match self.libs.remove(name) {
            Some(lib) => {
                for f in lib.funcs.keys() {
                    self.index.remove(&f.to_ascii_lowercase());
                }
                true
            }
            None => false,
        }
    }

    /// The function called `name`.
    pub fn function(&self, name: &str) -> Option<&Func> {
        let lib = self.index.get(&name.to_ascii_lowercase())?;
        let funcs = &self.libs.get(lib)?.funcs;
        funcs.get(name).or_else(|| {
            funcs
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, f)| f)
        })
    }

    /// A `FUNCTION DUMP` payload: every library's code, with a checksum.
    pub fn dump(&self) -> Vec<u8> {
        let mut out = DUMP_MAGIC.to_vec();
        out.extend_from_slice(&(self.libs.len() as u32).to_le_bytes());
        for lib in self.libs.values() {
            out.extend_from_slice(&(lib.code.len() as u32).to_le_bytes());
            out.extend_from_slice(&lib.code);
        }
        let crc = crc32c::crc32c(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }
}

/// The library codes in a `FUNCTION DUMP` payload.
pub fn parse_dump(payload: &[u8]) -> OpResult<Vec<Vec<u8>>> {
    let bad = || err("ERR DUMP payload version or checksum are wrong");
    if payload.len() < DUMP_MAGIC.len() + 8 || !payload.starts_with(DUMP_MAGIC) {
        return Err(bad());
    }
    let (body, crc) = payload.split_at(payload.len() - 4);
    let crc = u32::from_le_bytes(crc.try_into().map_err(|_| bad())?);
    if crc32c::crc32c(body) != crc {
        return Err(bad());
    }
    let mut at = DUMP_MAGIC.len();
    let read_u32 = |at: &mut usize| -> OpResult<usize> {
        let b = body.get(*at..*at + 4).ok_or_else(bad)?;
        *at += 4;
        Ok(u32::from_le_bytes(b.try_into().map_err(|_| bad())?) as usize)
    };
    let n = read_u32(&mut at)?;
    let mut libs = Vec::new();
    for _ in 0..n {
        let len = read_u32(&mut at)?;
        let code = body.get(at..at + len).ok_or_else(bad)?;
        at += len;
        libs.push(code.to_vec());
    }
    if at != body.len() {
        return Err(bad());
    }
    Ok(libs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_are_checked_as_redis_does() {
        assert_eq!(
            parse_header(b"#!lua name=mylib\nx").expect("valid"),
            "mylib"
        );
        let e = |c: &[u8]| {
            parse_header(c)
                .expect_err("invalid")
                .wire_text()
                .into_owned()
        };
        assert_eq!(e(b"return 1"), "ERR Missing library metadata");
        assert_eq!(e(b"#!lua\nreturn 1"), "ERR Library name was not given");
        assert_eq!(e(b"#!js name=x\n"), "ERR Engine 'js' not found");
        assert_eq!(
            e(b"#!lua name=x foo=y\n"),
            "ERR Invalid metadata value given: foo=y"
        );
        assert_eq!(e(b"#! name=x\n"), "ERR Engine '' not found");
        assert_eq!(
            e(b"#!lua name=a NAME=b\n"),
            "ERR Invalid metadata value, name argument was given multiple times"
        );
        assert_eq!(e(b"#!lua name=x"), "ERR Invalid library metadata");
        assert_eq!(e(b"#!lua name=\"x\n"), "ERR Invalid library metadata");
        assert_eq!(
            parse_header(b"#!LUA Name=\"quoted\"\n").ok(),
            Some("quoted".into())
        );
    }

    #[test]
    fn dump_payloads_round_trip_and_reject_damage() {
        let state = FunctionState::new(Arc::default()).expect("state");
        let payload = state.dump();
        assert!(parse_dump(&payload).expect("valid").is_empty());
        let mut damaged = payload.clone();
        damaged[8] ^= 1;
        assert!(parse_dump(&damaged).is_err());
    }
}
