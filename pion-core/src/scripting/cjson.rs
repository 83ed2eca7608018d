//! The `cjson` library scripts see: `cjson.encode`, `cjson.decode` and `cjson.null`,
//! behaving as Redis's bundled lua-cjson does on common inputs (its number format,
//! its escaping of `/`, its sparse-array rule and its error texts).

use mlua::{LightUserData, Lua, Table, Value};

use super::api::raise_at;
use crate::num::fmt_g;

/// Deepest nesting encode and decode accept.
const MAX_DEPTH: usize = 1000;

/// The `cjson.null` sentinel: a light userdata holding NULL, as lua-cjson's.
pub fn null() -> Value {
    Value::LightUserData(LightUserData(std::ptr::null_mut()))
}

/// Builds the `cjson` table; failures raise their message at the caller's line, as
/// lua-cjson's `luaL_error` does.
pub fn open(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.raw_set(
        "encode",
        lua.create_function(|lua, v: Value| {
            let mut out = Vec::new();
            match encode(&v, &mut out, 0) {
                Ok(()) => Ok(Value::String(lua.create_string(out)?)),
                Err(e) => Err(raise_at(lua, &e)),
            }
        })?,
    )?;
    t.raw_set(
        "decode",
        lua.create_function(|lua, s: Value| {
            let Value::String(s) = s else {
                let msg = format!(
                    "bad argument #1 to 'decode' (string expected, got {})",
                    if s.is_nil() {
                        "no value"
                    } else {
                        s.type_name()
                    }
                );
                return Err(raise_at(lua, &msg));
            };
            let bytes = s.as_bytes();
            let mut d = Decoder {
                lua,
                s: &bytes,
                pos: 0,
                depth: 0,
            };
            d.decode().map_err(|e| raise_at(lua, &e))
        })?,
    )?;
    t.raw_set("null", null())?;
    Ok(t)
}

fn encode(v: &Value, out: &mut Vec<u8>, depth: usize) -> Result<(), String> {
    match v {
        Value::Nil => out.extend_from_slice(b"null"),
        Value::LightUserData(p) if p.0.is_null() => out.extend_from_slice(b"null"),
        Value::Boolean(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Integer(i) => out.extend_from_slice(fmt_g(*i as f64, 14).as_bytes()),
        Value::Number(n) => {
            if !n.is_finite() {
                return Err("Cannot serialise number: must not be NaN or Inf".into());
            }
            out.extend_from_slice(fmt_g(*n, 14).as_bytes());
        }
        Value::String(s) => encode_string(&s.as_bytes(), out),
        Value::Table(t) => encode_table(t, out, depth + 1)?,
        other => {
            return Err(format!(
                "Cannot serialise {}: type not supported",
                other.type_name()
            ))
        }
    }
    Ok(())
}

fn encode_string(s: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    for &b in s {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'/' => out.extend_from_slice(b"\\/"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            c if c < 0x20 || c == 0x7f => {
                out.extend_from_slice(format!("\\u{c:04x}").as_bytes());
            }
            c => out.push(c),
        }
    }
    out.push(b'"');
}

fn encode_table(t: &Table, out: &mut Vec<u8>, depth: usize) -> Result<(), String> {
    if depth > MAX_DEPTH {
        return Err(format!("Cannot serialise, excessive nesting ({depth})"));
    }
    let mut entries: Vec<(Value, Value)> = Vec::new();
    for pair in t.clone().pairs::<Value, Value>() {
        entries.push(pair.map_err(|e| e.to_string())?);
    }
    // An array when every key is a positive integer; too sparse ones are refused.
    let mut max = 0usize;
    let mut is_array = true;
    for (k, _) in &entries {
        match k {
            Value::Integer(i) if *i >= 1 => max = max.max(*i as usize),
            Value::Number(n) if *n >= 1.0 && n.fract() == 0.0 => max = max.max(*n as usize),
            _ => {
                is_array = false;
                break;
            }
        }
    }
    if is_array && !entries.is_empty() {
        if max > entries.len() * 2 && max > 10 {
            return Err("Cannot serialise table: excessively sparse array".into());
        }
        out.push(b'[');
        for i in 1..=max {
            if i > 1 {
                out.push(b',');
            }
            let v: Value = t.raw_get(i).map_err(|e| e.to_string())?;
            encode(&v, out, depth)?;
        }
        out.push(b']');
        return Ok(());
    }
    out.push(b'{');
    for (n, (k, v)) in entries.iter().enumerate() {
        if n > 0 {
            out.push(b',');
        }
        match k {
            Value::String(s) => encode_string(&s.as_bytes(), out),
            Value::Integer(i) => encode_string(fmt_g(*i as f64, 14).as_bytes(), out),
            Value::Number(x) => encode_string(fmt_g(*x, 14).as_bytes(), out),
            _ => return Err("Cannot serialise table: table key must be a number or string".into()),
        }
        out.push(b':');
        encode(v, out, depth)?;
    }
    out.push(b'}');
    Ok(())
}

/// A token of the JSON text, named as lua-cjson names them in errors.
#[derive(Debug, Clone, PartialEq)]
enum Token {
    ObjBegin,
    ObjEnd,
    ArrBegin,
    ArrEnd,
    Str(Vec<u8>),
    Num(f64),
    Bool(bool),
    Null,
    Colon,
    Comma,
    End,
    Error(&'static str),
}

impl Token {
    fn name(&self) -> &'static str {
        match self {
            Token::ObjBegin => "T_OBJ_BEGIN",
            Token::ObjEnd => "T_OBJ_END",
            Token::ArrBegin => "T_ARR_BEGIN",
            Token::ArrEnd => "T_ARR_END",
            Token::Str(_) => "T_STRING",
            Token::Num(_) => "T_NUMBER",
            Token::Bool(_) => "T_BOOLEAN",
            Token::Null => "T_NULL",
            Token::Colon => "T_COLON",
            Token::Comma => "T_COMMA",
            Token::End => "T_END",
            Token::Error(e) => e,
        }
    }
}

struct Decoder<'a> {
    lua: &'a Lua,
    s: &'a [u8],
    pos: usize,
    depth: usize,
}

impl Decoder<'_> {
    fn decode(&mut self) -> Result<Value, String> {
        let (tok, at) = self.next_token();
        let v = self.value(tok, at)?;
        let (tok, at) = self.next_token();
        if tok != Token::End {
            return Err(expected("the end", &tok, at));
        }
        Ok(v)
    }

    fn value(&mut self, tok: Token, at: usize) -> Result<Value, String> {
        let lua_err = |e: mlua::Error| e.to_string();
        Ok(match tok {
            Token::Str(s) => Value::String(self.lua.create_string(s).map_err(lua_err)?),
            Token::Num(n) => Value::Number(n),
            Token::Bool(b) => Value::Boolean(b),
            Token::Null => null(),
            Token::ObjBegin => self.object(at)?,
            Token::ArrBegin => self.array(at)?,
            other => return Err(expected("value", &other, at)),
        })
    }

    fn enter(&mut self, at: usize) -> Result<(), String> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(format!(
                "Found too many nested data structures ({}) at character {}",
                self.depth,
                at + 1
            ));
        }
        Ok(())
    }

    fn object(&mut self, at: usize) -> Result<Value, String> {
        self.enter(at)?;
        let t = self.lua.create_table().map_err(|e| e.to_string())?;
        let (mut tok, mut at) = self.next_token();
        if tok == Token::ObjEnd {
            self.depth -= 1;
            return Ok(Value::Table(t));
        }
        loop {
            let Token::Str(key) = tok else {
                return Err(expected("object key string", &tok, at));
            };
            let (colon, cat) = self.next_token();
            if colon != Token::Colon {
                return Err(expected("colon", &colon, cat));
            }
            let (vt, vat) = self.next_token();
            let v = self.value(vt, vat)?;
            let key = self.lua.create_string(key).map_err(|e| e.to_string())?;
            t.raw_set(key, v).map_err(|e| e.to_string())?;
            let (sep, sat) = self.next_token();
            match sep {
                Token::ObjEnd => break,
                Token::Comma => (tok, at) = self.next_token(),
                other => return Err(expected("comma or object end", &other, sat)),
            }
        }
        self.depth -= 1;
        Ok(Value::Table(t))
    }

    fn array(&mut self, at: usize) -> Result<Value, String> {
        self.enter(at)?;
        let t = self.lua.create_table().map_err(|e| e.to_string())?;
        let (mut tok, mut at) = self.next_token();
        if tok == Token::ArrEnd {
            self.depth -= 1;
            return Ok(Value::Table(t));
        }
        let mut i = 1;
        loop {
            let v = self.value(tok, at)?;
            t.raw_set(i, v).map_err(|e| e.to_string())?;
            i += 1;
            let (sep, sat) = self.next_token();
            match sep {
                Token::ArrEnd => break,
                Token::Comma => (tok, at) = self.next_token(),
                other => return Err(expected("comma or array end", &other, sat)),
            }
        }
        self.depth -= 1;
        Ok(Value::Table(t))
    }

    fn next_token(&mut self) -> (Token, usize) {
        while self.pos < self.s.len() && matches!(self.s[self.pos], b' ' | b'\t' | b'\n' | b'\r') {
            self.pos += 1;
        }
        let at = self.pos;
        let Some(&c) = self.s.get(self.pos) else {
            return (Token::End, at);
        };
        let single = |t: Token| t;
        let tok = match c {
            b'{' => single(Token::ObjBegin),
            b'}' => single(Token::ObjEnd),
            b'[' => single(Token::ArrBegin),
            b']' => single(Token::ArrEnd),
            b':' => single(Token::Colon),
            b',' => single(Token::Comma),
            b'"' => return (self.string(), at),
            b'-' | b'0'..=b'9' => return (self.number(), at),
            _ => {
                for (word, tok) in [
                    (&b"true"[..], Token::Bool(true)),
                    (b"false", Token::Bool(false)),
                    (b"null", Token::Null),
                ] {
                    if self.s[self.pos..].starts_with(word) {
                        self.pos += word.len();
                        return (tok, at);
                    }
                }
                return (Token::Error("invalid token"), at);
            }
        };
        self.pos += 1;
        (tok, at)
    }

    fn number(&mut self) -> Token {
        let start = self.pos;
        while self.pos < self.s.len()
            && matches!(
                self.s[self.pos],
                b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'
            )
        {
            self.pos += 1;
        }
        std::str::from_utf8(&self.s[start..self.pos])
            .ok()
            .and_then(|t| t.parse::<f64>().ok())
            .map_or(Token::Error("invalid number"), Token::Num)
    }

    fn string(&mut self) -> Token {
        self.pos += 1;
        let mut out = Vec::new();
        loop {
            let Some(&c) = self.s.get(self.pos) else {
                return Token::Error("unexpected end of string");
            };
            self.pos += 1;
            match c {
                b'"' => return Token::Str(out),
                b'\\' => {
                    let Some(&e) = self.s.get(self.pos) else {
                        return Token::Error("unexpected end of string");
                    };
                    self.pos += 1;
                    match e {
                        b'"' | b'\\' | b'/' => out.push(e),
                        b'b' => out.push(0x08),
                        b'f' => out.push(0x0c),
                        b'n' => out.push(b'\n'),
                        b'r' => out.push(b'\r'),
                        b't' => out.push(b'\t'),
                        b'u' => match self.unicode_escape() {
                            Some(ch) => {
                                let mut buf = [0u8; 4];
                                out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                            }
                            None => return Token::Error("invalid unicode escape code"),
                        },
                        _ => return Token::Error("invalid escape code"),
                    }
                }
                c => out.push(c),
            }
        }
    }

    fn hex4(&mut self) -> Option<u32> {
        let digits = self.s.get(self.pos..self.pos + 4)?;
        let v = u32::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok()?;
        self.pos += 4;
        Some(v)
    }

    fn unicode_escape(&mut self) -> Option<char> {
        let hi = self.hex4()?;
        if (0xD800..0xDC00).contains(&hi) {
            if self.s.get(self.pos..self.pos + 2) != Some(b"\\u") {
                return None;
            }
            self.pos += 2;
            let lo = self.hex4()?;
            if !(0xDC00..0xE000).contains(&lo) {
                return None;
            }
            return char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00));
        }
        char::from_u32(hi)
    }
}

fn expected(what: &str, found: &Token, at: usize) -> String {
    format!(
        "Expected {what} but found {} at character {}",
        found.name(),
        at + 1
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn install(lua: &Lua) {
        lua.globals()
            .set("cjson", open(lua).expect("cjson"))
            .expect("set");
    }

    fn run(lua: &Lua, code: &str) -> String {
        install(lua);
        lua.load(code).eval::<String>().expect("runs")
    }

    #[test]
    fn encodes_as_lua_cjson() {
        let lua = Lua::new();
        assert_eq!(
            run(&lua, "return cjson.encode({1,2,'a',{b=1}})"),
            r#"[1,2,"a",{"b":1}]"#
        );
        assert_eq!(run(&lua, "return cjson.encode(0.1)"), "0.1");
        assert_eq!(run(&lua, "return cjson.encode(1e100)"), "1e+100");
        assert_eq!(run(&lua, "return cjson.encode({})"), "{}");
        assert_eq!(run(&lua, "return cjson.encode('a/b\\n')"), r#""a\/b\n""#);
        assert_eq!(
            run(&lua, "return cjson.encode({[1]=1,[3]=3})"),
            "[1,null,3]"
        );
        assert_eq!(run(&lua, "return cjson.encode(cjson.null)"), "null");
    }

    #[test]
    fn decodes_and_reports_errors_as_lua_cjson() {
        let lua = Lua::new();
        install(&lua);
        assert_eq!(
            run(
                &lua,
                "local t = cjson.decode('[1,2.5,\"x\",null,{\"a\":[]}]') \
                 return t[3] .. #t .. type(t[5].a) .. tostring(t[4] == cjson.null)"
            ),
            "x5tabletrue"
        );
        let err = lua
            .load("return cjson.decode('{\"a\":1')")
            .exec()
            .expect_err("truncated");
        assert!(err
            .to_string()
            .contains("Expected comma or object end but found T_END at character 7"));
        let err = lua
            .load("return cjson.decode('[1,2]x')")
            .exec()
            .expect_err("trailing");
        assert!(err
            .to_string()
            .contains("Expected the end but found invalid token at character 6"));
    }
}
