//! The local variables of the running script's frames (`print`), which Lua exposes
//! only through its C debug API.

use std::ffi::CStr;

use mlua::{ffi, Lua, MultiValue, Value};

/// Which frames to read.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Frames {
    /// The innermost Lua frame (the line the script stopped at).
    Current,
    /// Every Lua frame, innermost first.
    All,
}

/// The local variables of `frames`, as (name, value) in Lua's order (a name may
/// repeat across frames; the innermost comes first). Called from the line hook, where
/// the script's frames are on the stack.
pub fn locals(lua: &Lua, frames: Frames) -> Vec<(Vec<u8>, Value)> {
    // SAFETY: the closure runs inside mlua's protected call on the state's own
    // thread, with the stack guarded by mlua (whatever it leaves is returned and
    // popped). `lua_getstack` fills `ar` only for existing levels, `lua_getinfo` and
    // `lua_getlocal` read that record, and every string pointer they return is
    // checked for null before use and copied (by `lua_pushstring`) while the frame
    // still exists. The stack is grown before each push.
    let found: mlua::Result<MultiValue> = unsafe {
        lua.exec_raw((), |state| {
            let mut ar: ffi::lua_Debug = std::mem::zeroed();
            let mut level = 0;
            while ffi::lua_getstack(state, level, &mut ar) != 0 {
                level += 1;
                ffi::lua_getinfo(state, c"S".as_ptr(), &mut ar);
                let is_c = !ar.what.is_null() && CStr::from_ptr(ar.what) == c"C";
                if is_c {
                    continue;
                }
                let mut i = 1;
                loop {
                    if ffi::lua_checkstack(state, 2) == 0 {
                        return;
                    }
                    let name = ffi::lua_getlocal(state, &ar, i);
                    if name.is_null() {
                        break;
                    }
                    ffi::lua_pushstring(state, name);
                    ffi::lua_insert(state, -2);
                    i += 1;
                }
                if frames == Frames::Current {
                    return;
                }
            }
        })
    };
    let Ok(values) = found else {
        return Vec::new();
    };
    let values: Vec<Value> = values.into_iter().collect();
    values
        .chunks(2)
        .filter_map(|pair| match pair {
            [Value::String(name), v] => Some((name.as_bytes().to_vec(), v.clone())),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use mlua::{HookTriggers, VmState};
    use parking_lot::Mutex;

    use super::*;

    type Seen = Option<(Vec<(Vec<u8>, Value)>, Vec<(Vec<u8>, Value)>)>;

    /// The named locals (Lua also lists its temporaries, which `print` leaves out).
    fn names(vars: &[(Vec<u8>, Value)]) -> Vec<String> {
        vars.iter()
            .map(|(n, _)| String::from_utf8_lossy(n).into_owned())
            .filter(|n| n != "(*temporary)")
            .collect()
    }

    #[test]
    fn reads_the_locals_of_the_stopped_frame_and_those_around_it() {
        let lua = Lua::new();
        let seen: Arc<Mutex<Seen>> = Arc::default();
        let record = Arc::clone(&seen);
        lua.set_hook(HookTriggers::new().every_line(), move |lua, debug| {
            if debug.curr_line() == 4 && record.lock().is_none() {
                *record.lock() = Some((locals(lua, Frames::Current), locals(lua, Frames::All)));
            }
            Ok(VmState::Continue)
        });
        let script = "local a = 'outer'\nlocal function f(x)\n  local y = x + 1\n  return y\nend\nlocal b = f(2)\nreturn b";
        let got: i64 = lua
            .load(script)
            .set_name("@user_script")
            .eval()
            .expect("runs");
        assert_eq!(got, 3);
        let (current, all) = seen.lock().take().expect("the hook saw line 4");
        assert_eq!(names(&current), ["x", "y"]);
        assert!(
            matches!(current[1].1, Value::Integer(3))
                || matches!(current[1].1, Value::Number(n) if n == 3.0)
        );
        assert_eq!(names(&all), ["x", "y", "a", "f"]);
        let a = all.iter().find(|(n, _)| n == b"a").expect("a");
        assert!(matches!(&a.1, Value::String(s) if s.as_bytes() == &b"outer"[..]));
        // Outside any hook there is no Lua frame, and nothing to read.
        assert!(locals(&lua, Frames::All).is_empty());
    }
}
