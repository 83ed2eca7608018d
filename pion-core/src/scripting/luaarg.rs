//! Argument checks for the Lua libraries written in Rust (`bit`, `cmsgpack`,
//! `struct`). They accept what lauxlib's `luaL_check*` family accepts (numeric strings
//! as numbers, numbers as strings) and fail with its texts, such as
//! `bad argument #2 to 'pack' (number expected, got nil)`. Argument numbers are
//! 1-based, as in those texts.

use mlua::{Function, Lua, MultiValue, Value};

use super::api::raise_at;
use super::convert::{lua_number, number_to_i64};
use crate::util::num::fmt_g;

/// A library function returning one string built from its arguments by `f`, whose
/// failures raise their text at the caller's line (as `luaL_error` does).
pub fn string_function(
    lua: &Lua,
    f: fn(&[Value]) -> Result<Vec<u8>, String>,
) -> mlua::Result<Function> {
    lua.create_function(move |lua, args: MultiValue| {
        let args: Vec<Value> = args.into_iter().collect();
        match f(&args) {
            Ok(bytes) => Ok(Value::String(lua.create_string(bytes)?)),
            Err(e) => Err(raise_at(lua, &e)),
        }
    })
}

/// lauxlib's argument error text: `bad argument #n to 'fname' (msg)`.
pub fn bad_argument(n: usize, fname: &str, msg: &str) -> String {
    format!("bad argument #{n} to '{fname}' ({msg})")
}

/// Argument `n` (1-based), or `None` when the caller passed fewer.
fn get(args: &[Value], n: usize) -> Option<&Value> {
    n.checked_sub(1).and_then(|i| args.get(i))
}

/// The type error for argument `n`: what was expected and what came.
fn type_error(args: &[Value], n: usize, fname: &str, expected: &str) -> String {
    let got = get(args, n).map_or("no value", Value::type_name);
    bad_argument(n, fname, &format!("{expected} expected, got {got}"))
}

/// `luaL_checknumber`: a number, or a string that reads as one.
pub fn check_number(args: &[Value], n: usize, fname: &str) -> Result<f64, String> {
    get(args, n)
        .and_then(lua_number)
        .ok_or_else(|| type_error(args, n, fname, "number"))
}

/// `luaL_checkinteger`: a number truncated to an integer as Lua 5.1's C cast does.
pub fn check_integer(args: &[Value], n: usize, fname: &str) -> Result<i64, String> {
    check_number(args, n, fname).map(number_to_i64)
}

/// `luaL_optinteger`: `default` when the argument is absent or nil.
pub fn opt_integer(args: &[Value], n: usize, fname: &str, default: i64) -> Result<i64, String> {
    match get(args, n) {
        None | Some(Value::Nil) => Ok(default),
        Some(_) => check_integer(args, n, fname),
    }
}

/// `luaL_checklstring`: a string's bytes, or a number as Lua prints it (`%.14g`).
pub fn check_bytes(args: &[Value], n: usize, fname: &str) -> Result<Vec<u8>, String> {
    match get(args, n) {
        Some(Value::String(s)) => Ok(s.as_bytes().to_vec()),
        Some(Value::Integer(i)) => Ok(i.to_string().into_bytes()),
        Some(Value::Number(x)) => Ok(fmt_g(*x, 14).into_bytes()),
        _ => Err(type_error(args, n, fname, "string")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_match_lauxlib() {
        let args = [Value::Boolean(true)];
        assert_eq!(
            check_number(&args, 1, "f").expect_err("a boolean"),
            "bad argument #1 to 'f' (number expected, got boolean)"
        );
        assert_eq!(
            check_bytes(&args, 2, "g").expect_err("absent"),
            "bad argument #2 to 'g' (string expected, got no value)"
        );
        assert_eq!(opt_integer(&[Value::Nil], 1, "h", 7), Ok(7));
        assert_eq!(check_integer(&[Value::Number(-2.9)], 1, "h"), Ok(-2));
        assert_eq!(
            check_bytes(&[Value::Number(0.5)], 1, "h"),
            Ok(b"0.5".to_vec())
        );
    }
}
