//! `redis.call` and `redis.pcall` read their arguments as Redis does: a Lua number
//! becomes the text `%.17g` writes. mlua hands Rust a Lua 5.1 number within 2^-52 of
//! an integer as that integer, so `1e-20` would arrive as 0 and `-0` as `0`. A small C
//! function in front of each Rust function turns numbers into text while Lua still
//! holds them exactly. Being a C function, it keeps the calling script's frame (a Lua
//! wrapper would replace it in `return redis.call(…)`), so errors still name the
//! script's line.

use std::ffi::{c_int, CStr};

use mlua::{ffi, Function, Lua};

/// Registry slot of the Rust `redis.call` of the running script.
pub(crate) const CALL: &CStr = c"pion.redis_call";
/// Registry slot of the Rust `redis.pcall` of the running script.
pub(crate) const PCALL: &CStr = c"pion.redis_pcall";

/// The two C functions scripts see as `redis.call` and `redis.pcall`; each forwards
/// to the function in its registry slot.
pub(crate) fn shims(lua: &Lua) -> mlua::Result<(Function, Function)> {
    // SAFETY: `call_shim` and `pcall_shim` are C functions that only use the stack of
    // the state that calls them (see `forward`).
    unsafe {
        Ok((
            lua.create_c_function(call_shim)?,
            lua.create_c_function(pcall_shim)?,
        ))
    }
}

unsafe extern "C-unwind" fn call_shim(state: *mut ffi::lua_State) -> c_int {
    // SAFETY: called by Lua as a C function, with `state` the calling thread.
    unsafe { forward(state, CALL) }
}

unsafe extern "C-unwind" fn pcall_shim(state: *mut ffi::lua_State) -> c_int {
    // SAFETY: as for `call_shim`.
    unsafe { forward(state, PCALL) }
}

/// Replaces each number argument by its `%.17g` text, then calls the function in
/// registry slot `target` with the arguments and returns all it returns.
///
/// # Safety
/// Called by Lua as a C function on `state`. Lua may raise from the pushes (out of
/// memory) and the target raises the script's errors: no value that owns memory is
/// alive across those calls (the text is copied into a stack buffer first), so Lua's
/// unwinding skips nothing that needs dropping. A C function starts with at least
/// `LUA_MINSTACK` (20) free slots; this pushes one more than it received.
unsafe fn forward(state: *mut ffi::lua_State, target: &CStr) -> c_int {
    let n = unsafe { ffi::lua_gettop(state) };
    for i in 1..=n {
        if unsafe { ffi::lua_type(state, i) } != ffi::LUA_TNUMBER {
            continue;
        }
        let mut buf = [0u8; 40];
        let len = {
            let text = crate::util::num::fmt_g17(unsafe { ffi::lua_tonumber(state, i) });
            let len = text.len().min(buf.len());
            buf[..len].copy_from_slice(&text.as_bytes()[..len]);
            len
        };
        unsafe {
            ffi::lua_pushlstring(state, buf.as_ptr().cast(), len);
            ffi::lua_replace(state, i);
        }
    }
    unsafe {
        ffi::lua_getfield(state, ffi::LUA_REGISTRYINDEX, target.as_ptr());
        ffi::lua_insert(state, 1);
        ffi::lua_call(state, n, ffi::LUA_MULTRET);
        ffi::lua_gettop(state)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_reach_the_target_as_redis_formats_them() {
        let lua = Lua::new();
        let seen = lua
            .create_function(|_, args: mlua::MultiValue| {
                let texts: Vec<String> = args
                    .iter()
                    .map(|v| match v {
                        mlua::Value::String(s) => s.to_string_lossy().to_string(),
                        other => format!("<{}>", other.type_name()),
                    })
                    .collect();
                Ok(texts.join(","))
            })
            .expect("function");
        lua.set_named_registry_value(CALL.to_str().expect("utf-8"), seen)
            .expect("registry");
        let (call, _) = shims(&lua).expect("shims");
        lua.globals().set("call", call).expect("global");
        let got: String = lua
            .load("return call('set', 1e-20, -0.0, 0.1, 5, true)")
            .eval()
            .expect("runs");
        assert_eq!(
            got,
            "set,9.9999999999999995e-21,-0,0.10000000000000001,5,<boolean>"
        );
        // An error of the target reaches the caller as a Lua error.
        let failing = lua
            .create_function(|_, ()| Err::<(), _>(mlua::Error::runtime("boom")))
            .expect("function");
        lua.set_named_registry_value(CALL.to_str().expect("utf-8"), failing)
            .expect("registry");
        let err = lua.load("return call(1)").exec().expect_err("raises");
        assert!(err.to_string().contains("boom"), "{err}");
    }
}
