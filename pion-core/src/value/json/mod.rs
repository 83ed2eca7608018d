//! JSON documents: RedisJSON's `ReJSON-RL` type, the value behind `JSON.*`.
//!
//! Documents are `serde_json` values. `serde_json` is already the workspace's JSON
//! crate, and with its `preserve_order` feature objects keep their members in
//! insertion order as RedisJSON does; it keeps integers (`i64`/`u64`) apart from
//! floats and reads integers beyond `u64` as floats — the same choices RedisJSON
//! makes, since it parses with the same crate — and its parse errors are
//! RedisJSON's texts too. Floats are written with `ryu` (`1.0`, `1e20`,
//! `1.2345678901234567e23`), the formatter RedisJSON's writer uses. Parsing uses serde_json's default
//! float reader, which (like RedisJSON's) may read a long decimal one ulp off; the
//! differential corpus holds Pion to the same digits. Snapshots store numbers in
//! binary, so a document reads back bit for bit. The path language ([`path`]) and its
//! evaluation ([`select`]) are our own; the module docs there say why.

pub mod codec;
pub mod path;
pub mod select;

use serde_json::Value as Json;

pub use path::Path;
pub use select::{Pointer, Step};

/// The deepest nesting a parsed value may have (RedisJSON's parser limit).
pub const MAX_NESTING: usize = 128;

/// The deepest nesting a document may reach through edits (values set below
/// other values): deeper writes are refused, so the recursive walks over a
/// document (writing, dropping, snapshots) stay within their stack.
pub const MAX_DEPTH: usize = 512;

/// How deeply `v` nests (a scalar 0, `[]` 1, `[[1]]` 2).
pub fn depth_of(v: &Json) -> usize {
    depth(v, 0)
}

/// A JSON document stored under a key.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonValue {
    /// The document's root.
    pub root: Json,
}

/// How `JSON.GET` lays a document out (`INDENT`, `NEWLINE`, `SPACE`).
#[derive(Debug, Clone, Copy, Default)]
pub struct Layout<'a> {
    /// Written once per nesting level before each member or element.
    pub indent: &'a [u8],
    /// Written before each member or element and before a closing bracket.
    pub newline: &'a [u8],
    /// Written after each `:`.
    pub space: &'a [u8],
}

impl JsonValue {
    /// A document with this root.
    pub fn new(root: Json) -> JsonValue {
        JsonValue { root }
    }

    /// Estimated heap bytes of the document (what `MEMORY USAGE` counts).
    pub fn mem_usage(&self) -> usize {
        node_size(&self.root)
    }

    /// The document as compact JSON text (`DEBUG` digests).
    pub fn to_text(&self) -> Vec<u8> {
        let mut out = Vec::new();
        write(&self.root, &Layout::default(), 0, &mut out);
        out
    }
}

/// Parses JSON text as RedisJSON accepts a document: the first value, any type at
/// the root, whatever follows it ignored (`1 2` reads as `1`), with the parser's
/// own message when it is not JSON.
pub fn parse(text: &[u8]) -> Result<Json, String> {
    use serde::Deserialize;
    let mut de = serde_json::Deserializer::from_slice(text);
    let v = Json::deserialize(&mut de).map_err(|e| e.to_string())?;
    limit_depth(v)
}

/// Parses JSON text that must be one value and nothing else (the operands of
/// `JSON.NUMINCRBY` and `JSON.STRAPPEND`).
pub fn parse_strict(text: &[u8]) -> Result<Json, String> {
    let v: Json = serde_json::from_slice(text).map_err(|e| e.to_string())?;
    limit_depth(v)
}

fn limit_depth(v: Json) -> Result<Json, String> {
    if depth(&v, 0) > MAX_NESTING {
        return Err("recursion limit exceeded".to_string());
    }
    Ok(v)
}

fn depth(v: &Json, at: usize) -> usize {
    match v {
        Json::Array(a) => a.iter().map(|c| depth(c, at + 1)).max().unwrap_or(at + 1),
        Json::Object(m) => m.values().map(|c| depth(c, at + 1)).max().unwrap_or(at + 1),
        _ => at,
    }
}

/// The name `JSON.TYPE` gives a value.
pub fn type_name(v: &Json) -> &'static str {
    match v {
        Json::Null => "null",
        Json::Bool(_) => "boolean",
        Json::Number(n) if n.is_f64() => "number",
        Json::Number(_) => "integer",
        Json::String(_) => "string",
        Json::Array(_) => "array",
        Json::Object(_) => "object",
    }
}

/// Estimated bytes of one node and what it holds, modelled on RedisJSON's own
/// accounting (`JSON.DEBUG MEMORY`): 8 bytes per scalar, strings add their bytes,
/// containers a header and their capacity.
pub fn node_size(v: &Json) -> usize {
    match v {
        Json::Null | Json::Bool(_) | Json::Number(_) => 8,
        Json::String(s) => 8 + s.len(),
        Json::Array(a) => {
            24 + 8 * a.len().max(4)
                + a.iter().map(|c| node_size(c) - 8).sum::<usize>()
                + 8 * a.len()
        }
        Json::Object(m) => {
            24 + 24 * m.len().max(4)
                + m.iter()
                    .map(|(k, c)| 8 + k.len() + node_size(c))
                    .sum::<usize>()
        }
    }
}

/// Writes `v` as JSON text laid out as `layout` asks, at nesting `level`.
pub fn write(v: &Json, layout: &Layout<'_>, level: usize, out: &mut Vec<u8>) {
    let line = |out: &mut Vec<u8>, level: usize| {
        out.extend_from_slice(layout.newline);
        for _ in 0..level {
            out.extend_from_slice(layout.indent);
        }
    };
    match v {
        Json::Null => out.extend_from_slice(b"null"),
        Json::Bool(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Json::Number(n) => write_number(n, out),
        Json::String(s) => write_str(s, out),
        Json::Array(a) => {
            out.push(b'[');
            for (i, c) in a.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                line(out, level + 1);
                write(c, layout, level + 1, out);
            }
            if !a.is_empty() {
                line(out, level);
            }
            out.push(b']');
        }
        Json::Object(m) => {
            out.push(b'{');
            for (i, (k, c)) in m.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                line(out, level + 1);
                write_str(k, out);
                out.push(b':');
                out.extend_from_slice(layout.space);
                write(c, layout, level + 1, out);
            }
            if !m.is_empty() {
                line(out, level);
            }
            out.push(b'}');
        }
    }
}

/// A number as RedisJSON writes it: integers in decimal, floats in `ryu`'s shortest
/// form (`1e20`, `2.0`). Recent `serde_json` writes floats through another formatter
/// (`1e+20`), so floats go to `ryu` directly.
fn write_number(n: &serde_json::Number, out: &mut Vec<u8>) {
    if let Some(i) = n.as_i64() {
        out.extend_from_slice(i.to_string().as_bytes());
    } else if let Some(u) = n.as_u64() {
        out.extend_from_slice(u.to_string().as_bytes());
    } else if let Some(f) = n.as_f64() {
        let mut buf = ryu::Buffer::new();
        out.extend_from_slice(buf.format(f).as_bytes());
    }
}

/// A JSON string literal, escaped as `serde_json` escapes it.
fn write_str(s: &str, out: &mut Vec<u8>) {
    // Writing a `str` into a `Vec` cannot fail: serde_json only fails on I/O errors
    // and on map keys that are not strings, neither of which can happen here.
    let _ = serde_json::to_writer(&mut *out, s);
}

/// Compact JSON text of a value.
pub fn to_text(v: &Json) -> Vec<u8> {
    let mut out = Vec::new();
    write(v, &Layout::default(), 0, &mut out);
    out
}

/// `a + b` or `a * b` with RedisJSON's number rules: integers stay integers (with
/// two's-complement wrap-around, as RedisJSON's `i64` arithmetic), anything with a
/// float becomes a float; a result that is not finite is refused.
pub fn arith(a: &serde_json::Number, b: &serde_json::Number, mul: bool) -> Option<Json> {
    if let (Some(x), Some(y)) = (a.as_i64(), b.as_i64()) {
        let r = if mul {
            x.wrapping_mul(y)
        } else {
            x.wrapping_add(y)
        };
        return Some(Json::from(r));
    }
    let (x, y) = (a.as_f64()?, b.as_f64()?);
    let r = if mul { x * y } else { x + y };
    if !r.is_finite() {
        return None;
    }
    serde_json::Number::from_f64(r).map(Json::Number)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn doc(s: &str) -> Json {
        parse(s.as_bytes()).expect("json")
    }

    #[test]
    fn numbers_keep_integer_and_float_apart() {
        assert_eq!(
            to_text(&doc("[1,2.0,1e20,12345678901234567890]")),
            b"[1,2.0,1e20,12345678901234567890]"
        );
        assert_eq!(
            to_text(&doc("123456789012345678901234")),
            b"1.2345678901234567e23"
        );
        let n = |s: &str| match doc(s) {
            Json::Number(n) => n,
            _ => panic!("not a number"),
        };
        assert_eq!(
            to_text(&arith(&n("4"), &n("2.5"), true).expect("finite")),
            b"10.0"
        );
        assert_eq!(
            to_text(&arith(&n("1"), &n("2"), false).expect("finite")),
            b"3"
        );
        assert_eq!(
            to_text(&arith(&n("9223372036854775807"), &n("1"), false).expect("finite")),
            b"-9223372036854775808"
        );
        assert!(arith(&n("1.5e308"), &n("1.5e308"), false).is_none());
    }

    #[test]
    fn objects_keep_insertion_order_and_layouts_apply() {
        let d = doc(r#"{"z":1,"a":[1,{"c":2}],"m":{}}"#);
        assert_eq!(to_text(&d), br#"{"z":1,"a":[1,{"c":2}],"m":{}}"#);
        let mut out = Vec::new();
        let l = Layout {
            indent: b"  ",
            newline: b"\n",
            space: b" ",
        };
        write(&doc(r#"{"a":[1],"b":{}}"#), &l, 0, &mut out);
        assert_eq!(out, b"{\n  \"a\": [\n    1\n  ],\n  \"b\": {}\n}");
    }

    #[test]
    fn nesting_is_limited() {
        assert!(parse("[".repeat(200).as_bytes()).is_err());
        let deep = format!("{}{}", "[".repeat(129), "]".repeat(129));
        assert!(parse(deep.as_bytes()).is_err());
        let ok = format!("{}{}", "[".repeat(100), "]".repeat(100));
        assert!(parse(ok.as_bytes()).is_ok());
    }

    fn arb_json() -> impl Strategy<Value = Json> {
        let leaf = prop_oneof![
            Just(Json::Null),
            any::<bool>().prop_map(Json::Bool),
            any::<i64>().prop_map(Json::from),
            any::<u64>().prop_map(Json::from),
            (-1e300f64..1e300).prop_map(Json::from),
            (-1_000_000i64..1_000_000).prop_map(|n| Json::from(n as f64 / 64.0)),
            "[a-z\\u{e9}\"\\\\\\n]{0,6}".prop_map(Json::String),
        ];
        leaf.prop_recursive(4, 32, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Json::Array),
                prop::collection::vec(("[a-z]{1,3}", inner), 0..6)
                    .prop_map(|kv| Json::Object(kv.into_iter().collect())),
            ]
        })
    }

    /// Drops the floats RedisJSON's parser (`serde_json`'s fast float reading) does
    /// not read back exactly; the snapshot codec keeps those, text cannot.
    fn text_exact(v: &Json) -> bool {
        match v {
            Json::Number(n) if n.is_f64() => {
                let f = n.as_f64().unwrap_or(0.0);
                serde_json::from_str::<f64>(ryu::Buffer::new().format(f)).ok() == Some(f)
            }
            Json::Array(a) => a.iter().all(text_exact),
            Json::Object(m) => m.values().all(text_exact),
            _ => true,
        }
    }

    proptest! {
        #[test]
        fn snapshot_codec_round_trips(v in arb_json()) {
            let mut out = Vec::new();
            codec::encode(&v, &mut out);
            let back = codec::decode(&mut crate::util::codec::Reader::new(&out)).expect("decodes");
            prop_assert_eq!(back, v);
        }

        #[test]
        fn serialise_then_parse_is_identity(v in arb_json().prop_filter("exact floats", text_exact)) {
            let text = to_text(&v);
            prop_assert_eq!(parse(&text).expect("parses"), v.clone());
            let mut pretty = Vec::new();
            write(&v, &Layout { indent: b"\t", newline: b"\n", space: b" " }, 0, &mut pretty);
            prop_assert_eq!(parse(&pretty).expect("parses"), v);
        }
    }
}
