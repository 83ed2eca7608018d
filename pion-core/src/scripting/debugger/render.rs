//! How the debugger shows things: Lua values (`print`, `eval`, `redis.debug`) and the
//! replies of the commands a script calls (`<reply>` lines), in the forms Redis's
//! debugger prints them, so a session reads the same against either server.

use mlua::Value;

use crate::reply::Reply;

/// Nesting past which a table is not shown further (Redis stops at `LUA_MINSTACK / 2`).
const MAX_DEPTH: usize = 10;

/// Appends `bytes` quoted and escaped as Redis's `sdscatrepr` does.
pub fn repr(out: &mut String, bytes: &[u8]) {
    crate::pubsub::monitor::quote(out, bytes);
}

/// Appends a Lua value: strings quoted, numbers as `%g`, tables as `{a; b}` when they
/// are arrays and `{[k]=v; …}` otherwise, functions and other references as
/// `"function@0x…"`.
pub fn lua_value(out: &mut String, v: &Value) {
    value_at(out, v, 0);
}

fn value_at(out: &mut String, v: &Value, depth: usize) {
    if depth == MAX_DEPTH {
        out.push_str("<max recursion level reached! Nested table?>");
        return;
    }
    match v {
        Value::String(s) => repr(out, &s.as_bytes()),
        Value::Boolean(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Integer(i) => out.push_str(&crate::util::num::fmt_g(*i as f64, 6)),
        Value::Number(n) => out.push_str(&crate::util::num::fmt_g(*n, 6)),
        Value::Nil => out.push_str("nil"),
        Value::Table(t) => {
            // Both forms are built while walking, as the array test needs the whole
            // table; the one that fits is kept.
            let (mut as_array, mut as_map) = (Vec::new(), Vec::new());
            let mut is_array = true;
            let mut expected = 1.0;
            // `for_each` keeps each key on Lua's stack for the next step (a key
            // passed back from Rust may have been rounded and not be found).
            let _ = t.for_each::<Value, Value>(|k, val| {
                let index = match &k {
                    Value::Integer(i) => Some(*i as f64),
                    Value::Number(n) => Some(*n),
                    _ => None,
                };
                if index != Some(expected) {
                    is_array = false;
                }
                let mut item = String::new();
                value_at(&mut item, &val, depth + 1);
                let mut key = String::new();
                value_at(&mut key, &k, depth + 1);
                as_map.push(format!("[{key}]={item}"));
                as_array.push(item);
                expected += 1.0;
                Ok(())
            });
            out.push('{');
            out.push_str(&if is_array { as_array } else { as_map }.join("; "));
            out.push('}');
        }
        other => {
            let kind = match other {
                Value::Function(_) => "function",
                Value::UserData(_) => "userdata",
                Value::Thread(_) => "thread",
                Value::LightUserData(_) => "light-userdata",
                _ => "unknown",
            };
            out.push_str(&format!("\"{kind}@{:p}\"", other.to_pointer()));
        }
    }
}

/// Appends a command's reply as the script received it (in protocol `resp`), in
/// Redis's debugger notation: `"+OK"`, `"-ERR …"`, `5`, `"bulk"`, `NULL`, `[a,b]`,
/// and in RESP3 `~(a,b)`, `{k => v}`, `(null)`, `#true`, `(double) 1.5`.
pub fn reply(out: &mut String, r: &Reply, resp: u8) {
    let resp3 = resp >= 3;
    let list = |out: &mut String, open: &str, items: &mut dyn Iterator<Item = &Reply>, close| {
        out.push_str(open);
        for (i, item) in items.enumerate() {
            if i > 0 {
                out.push(',');
            }
            reply(out, item, resp);
        }
        out.push_str(close);
    };
    match r {
        Reply::Status(s) => repr(out, format!("+{s}").as_bytes()),
        Reply::Error(s) => repr(out, format!("-{s}").as_bytes()),
        Reply::Integer(i) => out.push_str(&i.to_string()),
        Reply::Bulk(b) => repr(out, b),
        Reply::Verbatim(_, b) => repr(out, b),
        Reply::BigNumber(n) if !resp3 => repr(out, n.as_bytes()),
        Reply::BigNumber(n) => out.push_str(n),
        Reply::Null | Reply::NullArray if resp3 => out.push_str("(null)"),
        Reply::Null | Reply::NullArray => out.push_str("NULL"),
        Reply::Array(items) | Reply::Push(items) | Reply::Several(items) => {
            list(out, "[", &mut items.iter(), "]")
        }
        Reply::Set(items) if resp3 => list(out, "~(", &mut items.iter(), ")"),
        Reply::Set(items) => list(out, "[", &mut items.iter(), "]"),
        Reply::Map(pairs) if resp3 => {
            out.push('{');
            for (i, (k, v)) in pairs.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                reply(out, k, resp);
                out.push_str(" => ");
                reply(out, v, resp);
            }
            out.push('}');
        }
        Reply::PairsMap(pairs) if !resp3 => {
            out.push('[');
            for (i, (k, v)) in pairs.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                list(out, "[", &mut [k, v].into_iter(), "]");
            }
            out.push(']');
        }
        Reply::PairsMap(pairs) => {
            out.push('{');
            for (i, (k, v)) in pairs.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                reply(out, k, resp);
                out.push_str(" => ");
                reply(out, v, resp);
            }
            out.push('}');
        }
        Reply::Pairs(pairs) if resp3 => {
            out.push('[');
            for (i, (k, v)) in pairs.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                list(out, "[", &mut [k, v].into_iter(), "]");
            }
            out.push(']');
        }
        Reply::Map(pairs) | Reply::Pairs(pairs) => {
            list(out, "[", &mut pairs.iter().flat_map(|(k, v)| [k, v]), "]")
        }
        Reply::Double(d) if resp3 => {
            out.push_str("(double) ");
            out.push_str(&crate::util::num::fmt_g17(*d));
        }
        Reply::Double(d) => repr(out, crate::util::num::fmt_g17(*d).as_bytes()),
        Reply::ShortDouble(d) if resp3 => {
            out.push_str("(double) ");
            out.push_str(&crate::util::num::fmt_shortest(*d));
        }
        Reply::ShortDouble(d) => repr(out, crate::util::num::fmt_shortest(*d).as_bytes()),
        Reply::HumanDouble(d) if resp3 => {
            out.push_str("(double) ");
            out.push_str(&crate::util::num::fmt_human(*d));
        }
        Reply::HumanDouble(d) => repr(out, crate::util::num::fmt_human(*d).as_bytes()),
        Reply::Bool(b) if resp3 => out.push_str(if *b { "#true" } else { "#false" }),
        Reply::Bool(b) => out.push_str(if *b { "1" } else { "0" }),
        Reply::Attributed(_, inner) => reply(out, inner, resp),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(r: &Reply, resp: u8) -> String {
        let mut s = String::new();
        reply(&mut s, r, resp);
        s
    }

    #[test]
    fn replies_read_as_in_redis_debugger() {
        assert_eq!(shown(&Reply::ok(), 2), "\"+OK\"");
        assert_eq!(shown(&Reply::error("ERR x"), 2), "\"-ERR x\"");
        assert_eq!(shown(&Reply::bulk("a\nb"), 2), "\"a\\nb\"");
        assert_eq!(shown(&Reply::Null, 2), "NULL");
        assert_eq!(shown(&Reply::Null, 3), "(null)");
        let arr = Reply::Array(vec![Reply::Integer(1), Reply::bulk("x")]);
        assert_eq!(shown(&arr, 2), "[1,\"x\"]");
        let map = Reply::Map(vec![(Reply::bulk("k"), Reply::Integer(2))]);
        assert_eq!(shown(&map, 3), "{\"k\" => 2}");
        assert_eq!(shown(&map, 2), "[\"k\",2]");
        assert_eq!(shown(&Reply::Bool(true), 3), "#true");
        assert_eq!(shown(&Reply::Double(1.5), 3), "(double) 1.5");
        let set = Reply::Set(vec![Reply::bulk("a")]);
        assert_eq!(shown(&set, 3), "~(\"a\")");
    }

    #[test]
    fn lua_values_read_as_in_redis_debugger() {
        let lua = mlua::Lua::new();
        let show = |code: &str| {
            let v: Value = lua.load(code).eval().expect("eval");
            let mut s = String::new();
            lua_value(&mut s, &v);
            s
        };
        assert_eq!(show("return 'a\"b'"), "\"a\\\"b\"");
        assert_eq!(show("return 1.5"), "1.5");
        assert_eq!(show("return 10"), "10");
        assert_eq!(show("return 1e20"), "1e+20");
        assert_eq!(show("return {1, 2, 'x'}"), "{1; 2; \"x\"}");
        assert_eq!(show("return {a = 1}"), "{[\"a\"]=1}");
        assert_eq!(show("return {}"), "{}");
        assert_eq!(show("return nil"), "nil");
        assert!(show("return print").starts_with("\"function@0x"));
        let deep = show("local t = {} ; t[1] = t ; return t");
        assert!(
            deep.contains("<max recursion level reached! Nested table?>"),
            "{deep}"
        );
    }
}
