//! Redis's conversion rules between command replies and Lua values, both ways, in the
//! script's protocol (`redis.setresp(2|3)`): what `redis.call` returns to the script,
//! and what a script's return value becomes on the wire.

use mlua::{Lua, Table, Value};

use crate::reply::Reply;
use crate::util::num::{fmt_g17, fmt_shortest};

/// How deep nested tables may go before conversion gives up (Redis checks the C stack
/// the same way).
const MAX_DEPTH: usize = 1000;

/// Turns a command's reply into the Lua value `redis.call` returns, under protocol
/// `resp` (2 or 3).
pub fn reply_to_lua(lua: &Lua, reply: &Reply, resp: u8) -> mlua::Result<Value> {
    let resp3 = resp == 3;
    Ok(match reply {
        Reply::Integer(i) => Value::Number(*i as f64),
        Reply::Bulk(b) => Value::String(lua.create_string(b)?),
        Reply::Null | Reply::NullArray => {
            if resp3 {
                Value::Nil
            } else {
                Value::Boolean(false)
            }
        }
        Reply::Status(s) => {
            let t = lua.create_table()?;
            t.raw_set("ok", lua.create_string(s.as_bytes())?)?;
            Value::Table(t)
        }
        Reply::Error(e) => Value::Table(error_table(lua, e)?),
        Reply::Array(items) | Reply::Push(items) | Reply::Several(items) => {
            array(lua, items.iter(), resp)?
        }
        Reply::Set(items) => {
            if resp3 {
                let inner = lua.create_table()?;
                for item in items {
                    inner.raw_set(reply_to_lua(lua, item, resp)?, true)?;
                }
                let t = lua.create_table()?;
                t.raw_set("set", inner)?;
                Value::Table(t)
            } else {
                array(lua, items.iter(), resp)?
            }
        }
        Reply::Map(pairs) => {
            if resp3 {
                let inner = lua.create_table()?;
                for (k, v) in pairs {
                    inner.raw_set(reply_to_lua(lua, k, resp)?, reply_to_lua(lua, v, resp)?)?;
                }
                let t = lua.create_table()?;
                t.raw_set("map", inner)?;
                Value::Table(t)
            } else {
                array(lua, pairs.iter().flat_map(|(k, v)| [k, v]), resp)?
            }
        }
        Reply::PairsMap(pairs) => {
            if resp3 {
                let inner = lua.create_table()?;
                for (k, v) in pairs {
                    inner.raw_set(reply_to_lua(lua, k, resp)?, reply_to_lua(lua, v, resp)?)?;
                }
                let t = lua.create_table()?;
                t.raw_set("map", inner)?;
                Value::Table(t)
            } else {
                let t = lua.create_table()?;
                for (i, (k, v)) in pairs.iter().enumerate() {
                    let pair = lua.create_table()?;
                    pair.raw_set(1, reply_to_lua(lua, k, resp)?)?;
                    pair.raw_set(2, reply_to_lua(lua, v, resp)?)?;
                    t.raw_set(i + 1, pair)?;
                }
                Value::Table(t)
            }
        }
        Reply::Pairs(pairs) => {
            if resp3 {
                let t = lua.create_table()?;
                for (i, (k, v)) in pairs.iter().enumerate() {
                    let pair = lua.create_table()?;
                    pair.raw_set(1, reply_to_lua(lua, k, resp)?)?;
                    pair.raw_set(2, reply_to_lua(lua, v, resp)?)?;
                    t.raw_set(i + 1, pair)?;
                }
                Value::Table(t)
            } else {
                array(lua, pairs.iter().flat_map(|(k, v)| [k, v]), resp)?
            }
        }
        Reply::Double(d) | Reply::ShortDouble(d) | Reply::HumanDouble(d) => {
            if resp3 {
                let t = lua.create_table()?;
                t.raw_set("double", *d)?;
                Value::Table(t)
            } else {
                let text = match reply {
                    Reply::Double(_) => fmt_g17(*d),
                    Reply::HumanDouble(_) => crate::util::num::fmt_human(*d),
                    _ => fmt_shortest(*d),
                };
                Value::String(lua.create_string(text)?)
            }
        }
        Reply::Bool(b) => {
            if resp3 {
                Value::Boolean(*b)
            } else {
                Value::Number(if *b { 1.0 } else { 0.0 })
            }
        }
        Reply::BigNumber(digits) => {
            if resp3 {
                let t = lua.create_table()?;
                t.raw_set("big_number", lua.create_string(digits)?)?;
                Value::Table(t)
            } else {
                Value::String(lua.create_string(digits)?)
            }
        }
        // Attributes are not shown to scripts (as in Redis): only the reply.
        Reply::Attributed(_, inner) => reply_to_lua(lua, inner, resp)?,
        Reply::Verbatim(format, text) => {
            if resp3 {
                let inner = lua.create_table()?;
                inner.raw_set("format", *format)?;
                inner.raw_set("string", lua.create_string(text)?)?;
                let t = lua.create_table()?;
                t.raw_set("verbatim_string", inner)?;
                Value::Table(t)
            } else {
                Value::String(lua.create_string(text)?)
            }
        }
    })
}

fn array<'r>(lua: &Lua, items: impl Iterator<Item = &'r Reply>, resp: u8) -> mlua::Result<Value> {
    let t = lua.create_table()?;
    for (i, item) in items.enumerate() {
        t.raw_set(i + 1, reply_to_lua(lua, item, resp)?)?;
    }
    Ok(Value::Table(t))
}

/// The `{err = …}` table a failed command's error text (`CODE message`) becomes.
pub fn error_table(lua: &Lua, text: &str) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set("err", normalize_error(&format!("-{text}")))?;
    Ok(t)
}

/// Redis's rule for error texts given to scripts (`redis.error_reply`, failed calls):
/// `-CODE msg` keeps its code, anything else is prefixed with `ERR`.
pub fn normalize_error(text: &str) -> String {
    let (code, msg) = match text.strip_prefix('-') {
        Some(rest) => match rest.split_once(' ') {
            Some((code, msg)) => (code, msg),
            None => ("ERR", rest),
        },
        None => ("ERR", text),
    };
    format!("{code} {}", msg.trim_matches(['\r', '\n']))
}

/// Turns a script's return value into the reply, under protocol `resp` (2 or 3).
pub fn lua_to_reply(value: &Value, resp: u8) -> Reply {
    to_reply(value, resp, 0)
}

fn to_reply(value: &Value, resp: u8, depth: usize) -> Reply {
    if depth > MAX_DEPTH {
        return Reply::error("ERR reached lua stack limit");
    }
    match value {
        Value::Nil => Reply::Null,
        Value::Boolean(b) => {
            if resp == 3 {
                Reply::Bool(*b)
            } else if *b {
                Reply::Integer(1)
            } else {
                Reply::Null
            }
        }
        Value::Integer(i) => Reply::Integer(*i),
        Value::Number(n) => Reply::Integer(number_to_i64(*n)),
        Value::String(s) => Reply::Bulk(s.as_bytes().to_vec()),
        Value::Table(t) => table_to_reply(t, resp, depth),
        _ => Reply::Null,
    }
}

/// A number argument as Lua 5.1's `luaL_checknumber` reads it: a number, or a string
/// that reads as one (surrounding spaces allowed); `None` otherwise.
pub fn lua_number(v: &Value) -> Option<f64> {
    match v {
        Value::Integer(i) => Some(*i as f64),
        Value::Number(x) => Some(*x),
        Value::String(s) => number_text(&s.as_bytes()),
        _ => None,
    }
}

/// A string's bytes read as a Lua number, if they are one.
pub fn number_text(bytes: &[u8]) -> Option<f64> {
    std::str::from_utf8(bytes)
        .ok()
        .and_then(|t| t.trim().parse::<f64>().ok())
}

/// A Lua number as Redis converts it to an integer reply: a C cast, truncated, with
/// what does not fit (NaN, infinities, beyond the range) as the smallest integer, which
/// is what the cast gives on the machines Redis runs on.
pub fn number_to_i64(n: f64) -> i64 {
    // 2^63 is the first value past the range, -2^63 itself fits; NaN is in no range.
    const TWO_POW_63: f64 = 9_223_372_036_854_775_808.0;
    if !(-TWO_POW_63..TWO_POW_63).contains(&n) {
        i64::MIN
    } else {
        n as i64
    }
}

fn table_to_reply(t: &Table, resp: u8, depth: usize) -> Reply {
    if let Ok(Value::String(e)) = t.raw_get::<Value>("err") {
        let text = String::from_utf8_lossy(&e.as_bytes()).replace(['\r', '\n'], " ");
        return Reply::Error(text.into());
    }
    if let Ok(Value::String(s)) = t.raw_get::<Value>("ok") {
        let text = String::from_utf8_lossy(&s.as_bytes()).replace(['\r', '\n'], " ");
        return Reply::status_owned(text);
    }
    if let Ok(Value::Number(d)) = t.raw_get::<Value>("double") {
        return Reply::Double(d);
    }
    if let Ok(Value::Integer(d)) = t.raw_get::<Value>("double") {
        return Reply::Double(d as f64);
    }
    if let Ok(Value::String(s)) = t.raw_get::<Value>("big_number") {
        // Line breaks become spaces, so the reply cannot break the protocol.
        let digits = String::from_utf8_lossy(&s.as_bytes()).replace(['\r', '\n'], " ");
        return Reply::BigNumber(digits);
    }
    if let Ok(Value::Table(m)) = t.raw_get::<Value>("map") {
        // `for_each` keeps each key on Lua's stack: a key passed back from Rust may
        // have been rounded by mlua's number conversion and not be found.
        let mut out = Vec::new();
        let _ = m.for_each::<Value, Value>(|k, v| {
            out.push((to_reply(&k, resp, depth + 1), to_reply(&v, resp, depth + 1)));
            Ok(())
        });
        return Reply::Map(out);
    }
    if let Ok(Value::Table(s)) = t.raw_get::<Value>("set") {
        let mut out = Vec::new();
        let _ = s.for_each::<Value, Value>(|k, _| {
            out.push(to_reply(&k, resp, depth + 1));
            Ok(())
        });
        return Reply::Set(out);
    }
    if let Ok(Value::Table(v)) = t.raw_get::<Value>("verbatim_string") {
        let format = v.raw_get::<mlua::String>("format");
        let text = v.raw_get::<mlua::String>("string");
        if let (Ok(format), Ok(text)) = (format, text) {
            let format: &'static str = match &*format.as_bytes() {
                b"mkd" => "mkd",
                _ => "txt",
            };
            return Reply::Verbatim(format, text.as_bytes().to_vec());
        }
    }
    let mut out = Vec::new();
    let mut i = 1;
    loop {
        match t.raw_get::<Value>(i) {
            Ok(Value::Nil) | Err(_) => break,
            Ok(v) => out.push(to_reply(&v, resp, depth + 1)),
        }
        i += 1;
    }
    Reply::Array(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_are_normalised_as_redis_does() {
        assert_eq!(normalize_error("bad"), "ERR bad");
        assert_eq!(normalize_error("-bad x"), "bad x");
        assert_eq!(normalize_error("-bad"), "ERR bad");
        assert_eq!(
            normalize_error("WRONGTYPE Operation"),
            "ERR WRONGTYPE Operation"
        );
        assert_eq!(
            normalize_error("-WRONGTYPE Operation\r\n"),
            "WRONGTYPE Operation"
        );
    }

    #[test]
    fn replies_become_lua_values_and_back() {
        let lua = Lua::new();
        let r = Reply::Array(vec![
            Reply::Integer(3),
            Reply::bulk("x"),
            Reply::Null,
            Reply::Integer(4),
        ]);
        let v = reply_to_lua(&lua, &r, 2).expect("converts");
        // A nil bulk is `false` in RESP2: the array keeps all four items.
        assert_eq!(
            lua_to_reply(&v, 2),
            Reply::Array(vec![
                Reply::Integer(3),
                Reply::bulk("x"),
                Reply::Null,
                Reply::Integer(4)
            ])
        );
        let status = reply_to_lua(&lua, &Reply::ok(), 2).expect("converts");
        assert_eq!(lua_to_reply(&status, 2), Reply::ok());
        let err = reply_to_lua(&lua, &Reply::error("WRONGTYPE bad"), 2).expect("converts");
        assert_eq!(lua_to_reply(&err, 2), Reply::error("WRONGTYPE bad"));
        assert_eq!(lua_to_reply(&Value::Number(3.99), 2), Reply::Integer(3));
        assert_eq!(lua_to_reply(&Value::Number(-3.99), 2), Reply::Integer(-3));
        assert_eq!(lua_to_reply(&Value::Boolean(true), 2), Reply::Integer(1));
        assert_eq!(lua_to_reply(&Value::Boolean(false), 2), Reply::Null);
        assert_eq!(lua_to_reply(&Value::Boolean(false), 3), Reply::Bool(false));
    }

    #[test]
    fn resp3_types_round_trip() {
        let lua = Lua::new();
        let map = Reply::Map(vec![(Reply::bulk("a"), Reply::Integer(1))]);
        let v = reply_to_lua(&lua, &map, 3).expect("converts");
        assert_eq!(lua_to_reply(&v, 3), map);
        let d = reply_to_lua(&lua, &Reply::Double(2.5), 3).expect("converts");
        assert_eq!(lua_to_reply(&d, 3), Reply::Double(2.5));
        let d2 = reply_to_lua(&lua, &Reply::Double(2.5), 2).expect("converts");
        assert_eq!(lua_to_reply(&d2, 2), Reply::bulk("2.5"));
        let null = reply_to_lua(&lua, &Reply::Null, 3).expect("converts");
        assert_eq!(null, Value::Nil);
    }
}
