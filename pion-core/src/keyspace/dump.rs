//! How one key is written into a snapshot section and read back: database, key,
//! deadline, type and value, with each collection's elements. The snapshot format
//! (durability) frames sections of these; the keyspace's cut writes them as it
//! captures a shard, and `DEBUG`'s digests reuse them.

use crate::util::codec::{put_bytes, put_i64, put_u32, put_u64, DecodeError, Malformed, Reader};
use crate::value::{EncodingLimits, HashValue, ListValue, SetValue, Value, ZSetValue};

use super::Entry;

const NO_DEADLINE: i64 = i64::MIN;

const TYPE_STRING: u8 = 0;
const TYPE_HASH: u8 = 1;
const TYPE_LIST: u8 = 2;
const TYPE_SET: u8 = 3;
const TYPE_ZSET: u8 = 4;
const TYPE_VSET: u8 = 5;
const TYPE_STREAM: u8 = 6;
const TYPE_JSON: u8 = 7;
const TYPE_SUGGESTIONS: u8 = 8;

/// Appends one key, with its deadline, to a section body.
pub fn encode_entry(
    db: usize,
    key: &[u8],
    entry: &Entry,
    deadline: Option<i64>,
    out: &mut Vec<u8>,
) {
    put_u32(out, db as u32);
    put_bytes(out, key);
    put_i64(out, deadline.unwrap_or(NO_DEADLINE));
    match &entry.value {
        Value::Str(s) => {
            out.push(TYPE_STRING);
            put_bytes(out, s.as_bytes());
        }
        Value::Hash(h) => {
            out.push(TYPE_HASH);
            put_u32(out, h.len() as u32);
            for (f, v) in h.iter() {
                put_bytes(out, f);
                put_bytes(out, v);
            }
        }
        Value::List(l) => {
            out.push(TYPE_LIST);
            put_u32(out, l.len() as u32);
            for item in l.iter() {
                put_bytes(out, item);
            }
        }
        Value::Set(s) => {
            out.push(TYPE_SET);
            put_u32(out, s.len() as u32);
            s.for_each(|m| put_bytes(out, m));
        }
        Value::ZSet(z) => {
            out.push(TYPE_ZSET);
            put_u32(out, z.len() as u32);
            for m in z.iter() {
                put_bytes(out, m.member);
                put_u64(out, m.score.to_bits());
            }
        }
        Value::VectorSet(v) => {
            out.push(TYPE_VSET);
            crate::value::vset::codec::encode(v, out);
        }
        Value::Stream(s) => {
            out.push(TYPE_STREAM);
            super::dump_stream::encode_stream(s, out);
        }
        Value::Json(j) => {
            out.push(TYPE_JSON);
            crate::value::json::codec::encode(&j.root, out);
        }
        Value::Suggestions(s) => {
            out.push(TYPE_SUGGESTIONS);
            crate::value::suggest::encode(s, out);
        }
    }
}

/// Encodes one value as a snapshot entry and decodes it again (tests of value types).
#[cfg(test)]
pub(crate) fn round_trip_for_tests(value: &Value) -> Value {
    let mut out = Vec::new();
    encode_entry(0, b"k", &Entry::new(value.clone(), 0), None, &mut out);
    let mut r = Reader::new(&out);
    decode_entry(&mut r, &EncodingLimits::default())
        .expect("decodes")
        .value
}

/// One key decoded from a snapshot.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedKey {
    /// Database index.
    pub db: usize,
    /// The key.
    pub key: Vec<u8>,
    /// Absolute deadline (Unix ms), if any.
    pub deadline: Option<i64>,
    /// The value, encoded as Redis would pick for its size.
    pub value: Value,
}

pub(crate) fn decode_entry(
    r: &mut Reader<'_>,
    limits: &EncodingLimits,
) -> Result<LoadedKey, Malformed> {
    let db = r.u32()? as usize;
    let key = r.bytes()?.to_vec();
    let deadline = match r.i64()? {
        NO_DEADLINE => None,
        at => Some(at),
    };
    let value = match r.u8()? {
        TYPE_STRING => Value::string(r.bytes()?.to_vec()),
        TYPE_HASH => {
            let n = r.count(8)?;
            let mut h = HashValue::new();
            for _ in 0..n {
                let f = r.bytes()?.to_vec();
                let v = r.bytes()?.to_vec();
                h.insert(f, v, limits);
            }
            Value::Hash(h)
        }
        TYPE_LIST => {
            let n = r.count(4)?;
            let mut l = ListValue::new();
            for _ in 0..n {
                l.push(crate::value::list::End::Right, r.bytes()?.to_vec());
            }
            Value::List(l)
        }
        TYPE_SET => {
            let n = r.count(4)?;
            let mut s: Option<SetValue> = None;
            for _ in 0..n {
                let m = r.bytes()?;
                s.get_or_insert_with(|| SetValue::for_first_member(m))
                    .insert(m, limits);
            }
            Value::Set(s.unwrap_or_default())
        }
        TYPE_ZSET => {
            let n = r.count(12)?;
            let mut z = ZSetValue::with_hint(n, 0, limits);
            for _ in 0..n {
                let m = r.bytes()?.to_vec();
                let score = f64::from_bits(r.u64()?);
                if score.is_nan() {
                    return Err(Malformed("NaN score"));
                }
                z.insert(&m, score, limits);
            }
            Value::ZSet(z)
        }
        TYPE_VSET => Value::VectorSet(Box::new(crate::value::vset::codec::decode(r)?)),
        TYPE_STREAM => Value::Stream(Box::new(super::dump_stream::decode_stream(r)?)),
        TYPE_JSON => {
            let root = crate::value::json::codec::decode(r)?;
            Value::Json(Box::new(crate::value::JsonValue::new(root)))
        }
        TYPE_SUGGESTIONS => Value::Suggestions(Box::new(crate::value::suggest::decode(r)?)),
        _ => return Err(Malformed("unknown value type")),
    };
    if value.is_empty_collection() {
        return Err(Malformed("empty collection"));
    }
    Ok(LoadedKey {
        db,
        key,
        deadline,
        value,
    })
}

/// Decodes a section body (keys until the bytes run out), for tests and fuzzing of
/// the value decoder behind a checksum that random input never passes.
pub fn decode_body(
    body: &[u8],
    limits: &EncodingLimits,
    mut each: impl FnMut(LoadedKey),
) -> Result<(), DecodeError> {
    let mut r = Reader::new(body);
    while r.remaining() > 0 {
        let at = r.position();
        each(decode_entry(&mut r, limits).map_err(|e| e.in_format("key").at(at))?);
    }
    Ok(())
}
