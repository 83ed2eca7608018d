//! The `cjson` library scripts see: `cjson.encode`, `cjson.decode`, `cjson.null`,
//! `cjson.new` and the settings functions (`cjson_settings`), behaving as Redis's
//! bundled lua-cjson 2.1.0 does (its number format, its escaping of `/`, its
//! sparse-array rule, its `strtod` reading of numbers and its error texts).

use std::sync::Arc;

use mlua::{LightUserData, Lua, Table, Value};
use parking_lot::Mutex;

use super::api::raise_at;
use super::cjson_settings::{self, InvalidNumbers, Settings, Shared};
use crate::util::num::fmt_g;

/// The `cjson.null` sentinel: a light userdata holding NULL, as lua-cjson's.
pub fn null() -> Value {
    Value::LightUserData(LightUserData(std::ptr::null_mut()))
}

/// Builds the `cjson` table; failures raise their message at the caller's line, as
/// lua-cjson's `luaL_error` does.
pub fn open(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    let shared: Shared = Arc::new(Mutex::new(Settings::default()));
    cjson_settings::install(lua, &t, &shared)?;
    t.raw_set("_NAME", "cjson")?;
    t.raw_set("_VERSION", "2.1.0")?;
    t.raw_set("new", lua.create_function(|lua, ()| open(lua))?)?;
    let settings = Arc::clone(&shared);
    t.raw_set(
        "encode",
        lua.create_function(move |lua, v: Value| {
            let mut out = Vec::new();
            let settings = *settings.lock();
            match encode(&settings, &v, &mut out, 0) {
                Ok(()) => Ok(Value::String(lua.create_string(out)?)),
                Err(e) => Err(raise_at(lua, &e)),
            }
        })?,
    )?;
    t.raw_set(
        "decode",
        lua.create_function(move |lua, s: Value| {
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
                settings: *shared.lock(),
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

fn encode(cfg: &Settings, v: &Value, out: &mut Vec<u8>, depth: i64) -> Result<(), String> {
    match v {
        Value::Nil => out.extend_from_slice(b"null"),
        Value::LightUserData(p) if p.0.is_null() => out.extend_from_slice(b"null"),
        Value::Boolean(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Integer(i) => encode_number(cfg, *i as f64, out)?,
        Value::Number(n) => encode_number(cfg, *n, out)?,
        Value::String(s) => encode_string(&s.as_bytes(), out),
        Value::Table(t) => encode_table(cfg, t, out, depth + 1)?,
        other => {
            return Err(format!(
                "Cannot serialise {}: type not supported",
                other.type_name()
            ))
        }
    }
    Ok(())
}

/// A number in `%.<precision>g`; NaN and infinities as `encode_invalid_numbers` says.
fn encode_number(cfg: &Settings, n: f64, out: &mut Vec<u8>) -> Result<(), String> {
    if !n.is_finite() {
        match cfg.encode_invalid {
            InvalidNumbers::Off => {
                return Err("Cannot serialise number: must not be NaN or Inf".into())
            }
            InvalidNumbers::Null => {
                out.extend_from_slice(b"null");
                return Ok(());
            }
            InvalidNumbers::On => {}
        }
    }
    let text = if n.is_nan() {
        "nan".to_string()
    } else if n.is_infinite() {
        if n > 0.0 { "inf" } else { "-inf" }.to_string()
    } else {
        fmt_g(n, cfg.precision as usize)
    };
    out.extend_from_slice(text.as_bytes());
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

fn encode_table(cfg: &Settings, t: &Table, out: &mut Vec<u8>, depth: i64) -> Result<(), String> {
    if depth > cfg.encode_max_depth {
        return Err(format!("Cannot serialise, excessive nesting ({depth})"));
    }
    // The pairs are walked, never gathered: every string or table held from Rust
    // takes one of mlua's reference slots, of which there are about 8,000.
    // An array when every key is a positive integer; too sparse ones are refused.
    // The walk keeps each key on Lua's stack (`for_each`): a key passed back from
    // Rust may have been rounded by mlua's number conversion and not be found.
    // The first key that is not an array index ends the walk (an error is how
    // `for_each` stops; that one is not reported).
    let mut count = 0usize;
    let mut max = 0usize;
    let mut is_array = true;
    let walked = t.for_each::<Value, Value>(|key, _| {
        count += 1;
        match key {
            Value::Integer(i) if i >= 1 => max = max.max(i as usize),
            Value::Number(n) if n >= 1.0 && n.fract() == 0.0 => max = max.max(n as usize),
            _ => {
                is_array = false;
                return Err(mlua::Error::UserDataTypeMismatch);
            }
        }
        Ok(())
    });
    if is_array {
        walked.map_err(|e| e.to_string())?;
    }
    let sparse = cfg.sparse_ratio > 0
        && max as i64 > count as i64 * cfg.sparse_ratio
        && max as i64 > cfg.sparse_safe;
    if sparse && !cfg.sparse_convert {
        return Err("Cannot serialise table: excessively sparse array".into());
    }
    if is_array && count > 0 && !sparse {
        out.push(b'[');
        for i in 1..=max {
            if i > 1 {
                out.push(b',');
            }
            let v: Value = t.raw_get(i).map_err(|e| e.to_string())?;
            encode(cfg, &v, out, depth)?;
        }
        out.push(b']');
        return Ok(());
    }
    out.push(b'{');
    let mut n = 0usize;
    let mut failed = None;
    t.for_each::<Value, Value>(|k, v| {
        if failed.is_some() {
            return Ok(());
        }
        if n > 0 {
            out.push(b',');
        }
        n += 1;
        if let Err(e) = encode_pair(cfg, &k, &v, out, depth) {
            failed = Some(e);
        }
        Ok(())
    })
    .map_err(|e| e.to_string())?;
    if let Some(e) = failed {
        return Err(e);
    }
    out.push(b'}');
    Ok(())
}

/// One `"key":value` of an object.
fn encode_pair(
    cfg: &Settings,
    k: &Value,
    v: &Value,
    out: &mut Vec<u8>,
    depth: i64,
) -> Result<(), String> {
    match k {
        Value::String(s) => encode_string(&s.as_bytes(), out),
        Value::Integer(i) => {
            out.push(b'"');
            encode_number(cfg, *i as f64, out)?;
            out.push(b'"');
        }
        Value::Number(x) => {
            out.push(b'"');
            encode_number(cfg, *x, out)?;
            out.push(b'"');
        }
        _ => return Err("Cannot serialise table: table key must be a number or string".into()),
    }
    out.push(b':');
    encode(cfg, v, out, depth)
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
    settings: Settings,
    s: &'a [u8],
    pos: usize,
    depth: i64,
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
        if self.depth > self.settings.decode_max_depth {
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
            b'-' | b'0'..=b'9' => {
                if !self.settings.decode_invalid && self.beyond_json_number() {
                    return (Token::Error("invalid number"), at);
                }
                return (self.number(), at);
            }
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
                if self.settings.decode_invalid && self.beyond_json_number() {
                    return (self.number(), at);
                }
                return (Token::Error("invalid token"), at);
            }
        };
        self.pos += 1;
        (tok, at)
    }

    /// Whether a number starts here that JSON lacks but `strtod` reads: a leading
    /// `+`, hexadecimal, leading zeros, `inf` or `nan` (lua-cjson's test).
    fn beyond_json_number(&self) -> bool {
        let rest = &self.s[self.pos..];
        if rest.first() == Some(&b'+') {
            return true;
        }
        let rest = rest.strip_prefix(b"-").unwrap_or(rest);
        match rest {
            [b'0', next, ..] => (next | 0x20) == b'x' || next.is_ascii_digit(),
            [c, ..] if *c <= b'9' => false,
            _ => {
                let word = |w: &[u8]| rest.len() >= 3 && rest[..3].eq_ignore_ascii_case(w);
                word(b"inf") || word(b"nan")
            }
        }
    }

    /// The longest number `strtod` reads from here.
    fn number(&mut self) -> Token {
        match strtod(&self.s[self.pos..]) {
            Some((n, used)) => {
                self.pos += used;
                Token::Num(n)
            }
            None => Token::Error("invalid number"),
        }
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

/// What C's `strtod` reads at the start of `s`: the value and the bytes used (`None`
/// when no number starts there). Decimal, hexadecimal (with a `p` exponent),
/// `inf`/`infinity` and `nan`, each with an optional sign.
fn strtod(s: &[u8]) -> Option<(f64, usize)> {
    let (negative, i) = match s.first() {
        Some(b'-') => (true, 1),
        Some(b'+') => (false, 1),
        _ => (false, 0),
    };
    let sign = if negative { -1.0 } else { 1.0 };
    let starts =
        |i: usize, w: &[u8]| s.len() >= i + w.len() && s[i..i + w.len()].eq_ignore_ascii_case(w);
    if starts(i, b"inf") {
        let used = if starts(i, b"infinity") { i + 8 } else { i + 3 };
        return Some((sign * f64::INFINITY, used));
    }
    if starts(i, b"nan") {
        return Some((f64::NAN, i + 3));
    }
    let digits_from = |mut j: usize, radix: u32| {
        while s.get(j).is_some_and(|c| (*c as char).is_digit(radix)) {
            j += 1;
        }
        j
    };
    if starts(i, b"0x") {
        let int_end = digits_from(i + 2, 16);
        let (frac_start, frac_end) = if s.get(int_end) == Some(&b'.') {
            (int_end + 1, digits_from(int_end + 1, 16))
        } else {
            (int_end, int_end)
        };
        if int_end == i + 2 && frac_end == frac_start {
            // "0x" with no digits: strtod reads the "0".
            return Some((0.0, i + 1));
        }
        let mut value = 0.0f64;
        for &c in &s[i + 2..int_end] {
            value = value * 16.0 + f64::from((c as char).to_digit(16)?);
        }
        let mut scale = 1.0 / 16.0;
        for &c in &s[frac_start..frac_end] {
            value += f64::from((c as char).to_digit(16)?) * scale;
            scale /= 16.0;
        }
        let mut end = frac_end;
        if matches!(s.get(end), Some(b'p' | b'P')) {
            let (exp_negative, exp_start) = match s.get(end + 1) {
                Some(b'-') => (true, end + 2),
                Some(b'+') => (false, end + 2),
                _ => (false, end + 1),
            };
            let exp_end = digits_from(exp_start, 10);
            if exp_end > exp_start {
                let exp: i32 = std::str::from_utf8(&s[exp_start..exp_end])
                    .ok()?
                    .parse()
                    .unwrap_or(i32::MAX);
                value *= 2f64.powi(if exp_negative { -exp } else { exp });
                end = exp_end;
            }
        }
        return Some((sign * value, end));
    }
    let int_end = digits_from(i, 10);
    let mut end = int_end;
    if s.get(end) == Some(&b'.') {
        end = digits_from(end + 1, 10);
    }
    if end == i || (end == i + 1 && s.get(i) == Some(&b'.')) {
        return None;
    }
    if matches!(s.get(end), Some(b'e' | b'E')) {
        let exp_start = match s.get(end + 1) {
            Some(b'-' | b'+') => end + 2,
            _ => end + 1,
        };
        let exp_end = digits_from(exp_start, 10);
        if exp_end > exp_start {
            end = exp_end;
        }
    }
    let text = std::str::from_utf8(&s[i..end]).ok()?;
    let value: f64 = text.parse().ok()?;
    Some((sign * value, end))
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

    /// A key mlua rounds to 0 on its way to Rust must not be handed back to
    /// `lua_next` (it is not in the table, and Lua's error would unwind through Rust).
    #[test]
    fn tables_with_tiny_float_keys_encode_without_unwinding() {
        let lua = Lua::new();
        let json = run(
            &lua,
            "return cjson.encode({[1e-20] = 1, x = {[-1e-30] = 2}})",
        );
        assert!(json.contains("\"x\""), "{json}");
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

    #[test]
    fn reads_numbers_as_strtod_does() {
        let read = |t: &str| strtod(t.as_bytes());
        assert_eq!(read("0x10,"), Some((16.0, 4)));
        assert_eq!(read("-0x1.8p1"), Some((-3.0, 8)));
        assert_eq!(read("0x"), Some((0.0, 1)));
        assert_eq!(read("01"), Some((1.0, 2)));
        assert_eq!(read("+1.5e2x"), Some((150.0, 6)));
        assert_eq!(read("1e"), Some((1.0, 1)));
        assert_eq!(read("5."), Some((5.0, 2)));
        assert_eq!(read("-Infinity"), Some((f64::NEG_INFINITY, 9)));
        assert_eq!(read("inf]"), Some((f64::INFINITY, 3)));
        assert!(read("nan").is_some_and(|(n, used)| n.is_nan() && used == 3));
        assert_eq!(read("-"), None);
        assert_eq!(read("."), None);
        assert_eq!(read("x"), None);
    }

    #[test]
    fn settings_last_and_change_what_encode_and_decode_do() {
        let lua = Lua::new();
        install(&lua);
        let eval = |code: &str| lua.load(code).eval::<String>().expect("runs");
        assert_eq!(
            eval("cjson.encode_number_precision(3) return cjson.encode(3.14159)"),
            "3.14"
        );
        // Still in force for the next chunk; a new table has its own.
        assert_eq!(eval("return cjson.encode(2.71828)"), "2.72");
        assert_eq!(eval("return cjson.new().encode(2.71828)"), "2.71828");
        assert_eq!(
            eval("cjson.encode_sparse_array(true) return cjson.encode({[1]=1,[20]=2})"),
            r#"{"1":1,"20":2}"#
        );
        assert_eq!(
            eval("cjson.encode_invalid_numbers('null') return cjson.encode({1/0})"),
            "[null]"
        );
        let err = lua
            .load("cjson.decode_invalid_numbers(false) return cjson.decode('0x10')")
            .exec()
            .expect_err("hex refused");
        assert!(err
            .to_string()
            .contains("Expected value but found invalid number at character 1"));
        let err = lua
            .load("return cjson.encode_max_depth(0)")
            .exec()
            .expect_err("range");
        assert!(err.to_string().contains(
            "bad argument #1 to 'encode_max_depth' (expected integer between 1 and 2147483647)"
        ));
    }
}
