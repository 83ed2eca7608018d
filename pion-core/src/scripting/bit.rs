//! The `bit` library scripts see (LuaBitOp, as Redis bundles it): 32-bit operations on
//! Lua numbers, which are first normalised to signed 32-bit integers the way LuaBitOp
//! does (rounded, taken modulo 2^32).

use mlua::{Lua, MultiValue, Table, Value};

use super::api::raise_at;
use super::luaarg::{check_number, string_function};

/// LuaBitOp's normalisation: the number, rounded to an integer, modulo 2^32, as a
/// signed 32-bit value.
pub fn tobit(x: f64) -> i32 {
    // Adding 2^52 + 2^51 puts the rounded integer in the low mantissa bits.
    (x + 6_755_399_441_055_744.0).to_bits() as u32 as i32
}

/// An argument as LuaBitOp's `luaL_checknumber` reads it (numbers and numeric
/// strings), or the error text for argument `n` (0-based) of `name`.
fn arg(args: &[Value], n: usize, name: &str) -> Result<i32, String> {
    check_number(args, n + 1, name).map(tobit)
}

type Op = fn(&[Value], &str) -> Result<Value, String>;

fn num(v: i32) -> Value {
    Value::Number(f64::from(v))
}

fn fold(args: &[Value], name: &str, f: fn(i32, i32) -> i32) -> Result<Value, String> {
    let mut acc = arg(args, 0, name)?;
    for i in 1..args.len() {
        acc = f(acc, arg(args, i, name)?);
    }
    Ok(num(acc))
}

fn shift(args: &[Value], name: &str, f: fn(i32, u32) -> i32) -> Result<Value, String> {
    let x = arg(args, 0, name)?;
    let n = arg(args, 1, name)? as u32 & 31;
    Ok(num(f(x, n)))
}

const OPS: &[(&str, Op)] = &[
    ("tobit", |a, n| arg(a, 0, n).map(num)),
    ("bnot", |a, n| arg(a, 0, n).map(|x| num(!x))),
    ("band", |a, n| fold(a, n, |x, y| x & y)),
    ("bor", |a, n| fold(a, n, |x, y| x | y)),
    ("bxor", |a, n| fold(a, n, |x, y| x ^ y)),
    ("lshift", |a, n| {
        shift(a, n, |x, s| ((x as u32) << s) as i32)
    }),
    ("rshift", |a, n| {
        shift(a, n, |x, s| ((x as u32) >> s) as i32)
    }),
    ("arshift", |a, n| shift(a, n, |x, s| x >> s)),
    ("rol", |a, n| {
        shift(a, n, |x, s| (x as u32).rotate_left(s) as i32)
    }),
    ("ror", |a, n| {
        shift(a, n, |x, s| (x as u32).rotate_right(s) as i32)
    }),
    ("bswap", |a, n| {
        arg(a, 0, n).map(|x| num((x as u32).swap_bytes() as i32))
    }),
];

fn tohex(args: &[Value]) -> Result<String, String> {
    let x = arg(args, 0, "tohex")? as u32;
    let n = if args.len() > 1 {
        arg(args, 1, "tohex")?
    } else {
        8
    };
    let upper = n < 0;
    let digits = n.unsigned_abs().min(8) as usize;
    let digits = if digits == 0 { 8 } else { digits };
    let full = if upper {
        format!("{x:08X}")
    } else {
        format!("{x:08x}")
    };
    Ok(full[8 - digits..].to_string())
}

/// Builds the `bit` table; failures raise at the caller's line.
pub fn open(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    for &(name, op) in OPS {
        t.raw_set(
            name,
            lua.create_function(move |lua, args: MultiValue| {
                let args: Vec<Value> = args.into_iter().collect();
                op(&args, name).map_err(|e| raise_at(lua, &e))
            })?,
        )?;
    }
    t.raw_set(
        "tohex",
        string_function(lua, |args| tohex(args).map(String::into_bytes))?,
    )?;
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, args: &[f64]) -> Value {
        let args: Vec<Value> = args.iter().map(|&x| Value::Number(x)).collect();
        let op = OPS
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, op)| *op)
            .expect("known op");
        op(&args, name).expect("valid")
    }

    #[test]
    fn matches_luabitop() {
        assert_eq!(call("tobit", &[4294967295.0]), num(-1));
        assert_eq!(call("bnot", &[0.0]), num(-1));
        assert_eq!(call("bor", &[1.0, 2.0, 4.0]), num(7));
        assert_eq!(call("lshift", &[1.0, 31.0]), num(i32::MIN));
        assert_eq!(call("rshift", &[-1.0, 28.0]), num(15));
        assert_eq!(call("arshift", &[-16.0, 2.0]), num(-4));
        assert_eq!(call("rol", &[1.0, 33.0]), num(2));
        assert_eq!(call("ror", &[1.0, 1.0]), num(i32::MIN));
        assert_eq!(call("bswap", &[305419896.0]), num(2018915346));
        assert_eq!(tohex(&[Value::Number(255.0)]).expect("hex"), "000000ff");
        assert_eq!(
            tohex(&[Value::Number(-1.0), Value::Number(-4.0)]).expect("hex"),
            "FFFF"
        );
    }
}
