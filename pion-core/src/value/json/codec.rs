//! A JSON document's snapshot encoding: a tree of tagged nodes, floats as their
//! bits. Text would not do: documents are parsed as RedisJSON parses them (with
//! `serde_json`'s fast float reading, which is not always the nearest float), so
//! writing a float out and reading it back could change its last bit.
//!
//! | tag | node    | then                                        |
//! |-----|---------|---------------------------------------------|
//! | 0   | null    |                                             |
//! | 1   | false   |                                             |
//! | 2   | true    |                                             |
//! | 3   | integer | i64, little-endian                          |
//! | 4   | integer | u64 (above `i64::MAX`)                      |
//! | 5   | float   | f64 bits as u64                             |
//! | 6   | string  | u32 length, UTF-8 bytes                     |
//! | 7   | array   | u32 count, that many nodes                  |
//! | 8   | object  | u32 count, that many (u32 length, key, node)|

use serde_json::Value as Json;

use super::MAX_DEPTH;
use crate::util::codec::{put_bytes, put_i64, put_u32, put_u64, Malformed, Reader};

/// Appends `v`'s encoding.
pub fn encode(v: &Json, out: &mut Vec<u8>) {
    match v {
        Json::Null => out.push(0),
        Json::Bool(false) => out.push(1),
        Json::Bool(true) => out.push(2),
        Json::Number(n) => {
            if let Some(i) = n.as_i64() {
                out.push(3);
                put_i64(out, i);
            } else if let Some(u) = n.as_u64() {
                out.push(4);
                put_u64(out, u);
            } else {
                out.push(5);
                put_u64(out, n.as_f64().unwrap_or(0.0).to_bits());
            }
        }
        Json::String(s) => {
            out.push(6);
            put_bytes(out, s.as_bytes());
        }
        Json::Array(a) => {
            out.push(7);
            put_u32(out, a.len() as u32);
            a.iter().for_each(|c| encode(c, out));
        }
        Json::Object(m) => {
            out.push(8);
            put_u32(out, m.len() as u32);
            for (k, c) in m {
                put_bytes(out, k.as_bytes());
                encode(c, out);
            }
        }
    }
}

/// Reads one encoded node.
pub fn decode(r: &mut Reader<'_>) -> Result<Json, Malformed> {
    decode_at(r, 0)
}

fn text(r: &mut Reader<'_>) -> Result<String, Malformed> {
    let b = r.bytes()?;
    String::from_utf8(b.to_vec()).map_err(|_| Malformed("JSON string is not UTF-8"))
}

fn decode_at(r: &mut Reader<'_>, depth: usize) -> Result<Json, Malformed> {
    if depth > MAX_DEPTH {
        return Err(Malformed("JSON document nested too deeply"));
    }
    Ok(match r.u8()? {
        0 => Json::Null,
        1 => Json::Bool(false),
        2 => Json::Bool(true),
        3 => Json::from(r.i64()?),
        4 => Json::from(r.u64()?),
        5 => serde_json::Number::from_f64(f64::from_bits(r.u64()?))
            .map(Json::Number)
            .ok_or(Malformed("JSON number is not finite"))?,
        6 => Json::String(text(r)?),
        7 => {
            let n = r.count(1)?;
            let mut a = Vec::with_capacity(n);
            for _ in 0..n {
                a.push(decode_at(r, depth + 1)?);
            }
            Json::Array(a)
        }
        8 => {
            let n = r.count(5)?;
            let mut m = serde_json::Map::with_capacity(n);
            for _ in 0..n {
                let k = text(r)?;
                m.insert(k, decode_at(r, depth + 1)?);
            }
            Json::Object(m)
        }
        _ => return Err(Malformed("unknown JSON node")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_keeps_every_bit_and_order() {
        let v: Json = serde_json::from_str(
            r#"{"z":[1,-2,18446744073709551615,0.1,9.172242298944002e299,"é\n",null,true,{}],"a":{"b":false}}"#,
        )
        .expect("json");
        let mut out = Vec::new();
        encode(&v, &mut out);
        let back = decode(&mut Reader::new(&out)).expect("decodes");
        assert_eq!(back, v);
        assert_eq!(
            serde_json::to_string(&back).expect("text"),
            serde_json::to_string(&v).expect("text")
        );
    }

    #[test]
    fn damaged_encodings_are_errors() {
        let mut out = Vec::new();
        encode(&serde_json::json!([1, "x", {"k": 2.5}]), &mut out);
        for cut in 0..out.len() {
            assert!(decode(&mut Reader::new(&out[..cut])).is_err());
        }
        assert!(decode(&mut Reader::new(&[9])).is_err());
        let deep = [7u8, 1, 0, 0, 0].repeat(600);
        assert!(decode(&mut Reader::new(&deep)).is_err());
    }
}
