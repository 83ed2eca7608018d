//! How one key is written into a snapshot section and read back: database, key,
//! deadline, type and value, with each collection's elements. The snapshot format
//! (durability) frames sections of these; the keyspace's cut writes them as it
//! captures a shard, and `DEBUG`'s digests reuse them.

use crate::util::codec::{put_bytes, put_i64, put_u32, put_u64, DecodeError, Malformed, Reader};
use crate::value::vset::{Element, Stored, VQuant};
use crate::value::{
    EncodingLimits, HashValue, ListValue, SetValue, Value, VectorSetValue, ZSetValue,
};

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

/// Appends one key to a section body.
pub fn encode_entry(db: usize, key: &[u8], entry: &Entry, out: &mut Vec<u8>) {
    put_u32(out, db as u32);
    put_bytes(out, key);
    put_i64(out, entry.expire_at().unwrap_or(NO_DEADLINE));
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
            for item in l.items() {
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
                put_bytes(out, &m.member);
                put_u64(out, m.score.to_bits());
            }
        }
        Value::VectorSet(v) => {
            out.push(TYPE_VSET);
            encode_vset(v, out);
        }
        Value::Stream(s) => {
            out.push(TYPE_STREAM);
            super::dump_stream::encode_stream(s, out);
        }
        Value::Json(j) => {
            out.push(TYPE_JSON);
            crate::value::json::codec::encode(&j.root, out);
        }
    }
}

/// A vector set's parameters and elements, vectors as stored (codes stay codes).
fn encode_vset(v: &VectorSetValue, out: &mut Vec<u8>) {
    put_u32(out, v.dim() as u32);
    out.push(match v.quant() {
        VQuant::NoQuant => 0,
        VQuant::Q8 => 1,
        VQuant::Bin => 2,
    });
    put_u32(out, v.m() as u32);
    put_u32(out, v.projection().map_or(0, |p| p.input as u32));
    put_u32(out, v.len() as u32);
    for (label, e) in v.elements() {
        put_u64(out, label);
        put_bytes(out, &e.name);
        put_u32(out, e.norm.to_bits());
        match &e.attr {
            Some(a) => {
                out.push(1);
                put_bytes(out, a);
            }
            None => out.push(0),
        }
        match &e.vector {
            Stored::F32(x) => x.iter().for_each(|c| put_u32(out, c.to_bits())),
            Stored::Q8 { codes, range } => {
                put_u32(out, range.to_bits());
                let codes: Vec<u8> = codes.iter().map(|&c| c as u8).collect();
                put_bytes(out, &codes);
            }
            Stored::Bin(bits) => bits.iter().for_each(|w| put_u64(out, *w)),
        }
    }
    put_bytes(out, &v.graph_bytes());
}

fn decode_vset(r: &mut Reader<'_>) -> Result<Value, Malformed> {
    let dim = r.u32()? as usize;
    let quant = match r.u8()? {
        0 => VQuant::NoQuant,
        1 => VQuant::Q8,
        2 => VQuant::Bin,
        _ => return Err(Malformed("unknown vector quantization")),
    };
    let m = r.u32()? as usize;
    let input = r.u32()? as usize;
    if dim == 0
        || dim > 65536
        || input > 65536
        || input * dim > crate::value::vset::MAX_PROJECTION_CELLS
        || !(4..=4096).contains(&m)
    {
        return Err(Malformed("bad vector set parameters"));
    }
    let n = r.count(17)?;
    let mut v = VectorSetValue::restore(dim, quant, m, (input > 0).then_some(input));
    let f32_at = |r: &mut Reader<'_>| r.u32().map(f32::from_bits);
    for _ in 0..n {
        let label = r.u64()?;
        let name = r.bytes()?.to_vec();
        let norm = f32_at(r)?;
        let attr = match r.u8()? {
            0 => None,
            1 => Some(r.bytes()?.to_vec()),
            _ => return Err(Malformed("bad attribute flag")),
        };
        let vector = match quant {
            VQuant::NoQuant => Stored::F32((0..dim).map(|_| f32_at(r)).collect::<Result<_, _>>()?),
            VQuant::Q8 => {
                let range = f32_at(r)?;
                let codes = r.bytes()?.iter().map(|&c| c as i8).collect();
                Stored::Q8 { codes, range }
            }
            VQuant::Bin => Stored::Bin(
                (0..dim.div_ceil(64))
                    .map(|_| r.u64())
                    .collect::<Result<_, _>>()?,
            ),
        };
        let e = Element {
            name,
            vector,
            norm,
            attr,
        };
        if !v.restore_element_at(label, e) {
            return Err(Malformed("bad vector set element"));
        }
    }
    v.restore_graph(r.bytes()?);
    Ok(Value::VectorSet(Box::new(v)))
}

/// Encodes one value as a snapshot entry and decodes it again (tests of value types).
#[cfg(test)]
pub(crate) fn round_trip_for_tests(value: &Value) -> Value {
    let mut out = Vec::new();
    encode_entry(0, b"k", &Entry::new(value.clone(), 0), &mut out);
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
            Value::Hash(Box::new(h))
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
            Value::Set(Box::new(s.unwrap_or_default()))
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
            Value::ZSet(Box::new(z))
        }
        TYPE_VSET => decode_vset(r)?,
        TYPE_STREAM => Value::Stream(Box::new(super::dump_stream::decode_stream(r)?)),
        TYPE_JSON => {
            let root = crate::value::json::codec::decode(r)?;
            Value::Json(Box::new(crate::value::JsonValue::new(root)))
        }
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
