//! Module values (`RDB_TYPE_MODULE_2`): the module type's 64-bit id, then what the
//! module saved as a sequence of opcode-tagged fields, then the end opcode.
//!
//! The id packs the type's nine-character name (six bits a character, from
//! `A–Z a–z 0–9 - _`) above a 10-bit encoding version. Two types travel this way:
//!
//! | type | name, version | fields |
//! |---|---|---|
//! | JSON document | `ReJSON-RL` 3 (RedisJSON 2.x; version 2 is read too) | one string: the document's compact JSON text |
//! | vector set | `pion-vset` 0 (Pion's own) | one string: the set as Pion's snapshots store it |
//! | suggestion dictionary | `trietype0` 1 (RediSearch's; version 0, without payloads, is read too) | the count (unsigned), then per suggestion its text and payload as NUL-terminated strings around its score (double) |
//!
//! JSON documents and suggestion dictionaries therefore move between Pion and a Redis
//! with RedisJSON and RediSearch in both directions. Redis 8's own vector sets save their HNSW graph in a layout of their
//! own, which Pion does not write: a Pion vector set's payload names a type no Redis
//! has, so Redis refuses it with `Bad data format`, and Pion refuses Redis 8's
//! `vectorset` payloads the same way.

use super::wire::{Reader, Writer};
use super::{types, RdbError};
use crate::value::suggest::StoredSuggestion;
use crate::value::{JsonValue, SuggestionsValue, Value, VectorSetValue};

const CHARSET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// End of a module value's fields.
const OPCODE_EOF: u64 = 0;
/// An unsigned integer field.
const OPCODE_UINT: u64 = 2;
/// A double field (eight bytes, little-endian).
const OPCODE_DOUBLE: u64 = 4;
/// A string field.
const OPCODE_STRING: u64 = 5;

/// RedisJSON's type name and the version Pion writes.
const JSON_TYPE: &[u8; 9] = b"ReJSON-RL";
const JSON_VERSION: u16 = 3;
/// Pion's vector-set type name and version.
const VSET_TYPE: &[u8; 9] = b"pion-vset";
const VSET_VERSION: u16 = 0;
/// RediSearch's suggestion-dictionary type and the version Pion writes (with payloads).
const TRIE_TYPE: &[u8; 9] = b"trietype0";
const TRIE_VERSION: u16 = 1;

/// The 64-bit id of a module type (`name` from the module charset).
pub fn type_id(name: &[u8; 9], version: u16) -> u64 {
    let mut id = 0u64;
    for c in name {
        let digit = CHARSET.iter().position(|x| x == c).unwrap_or(0) as u64;
        id = (id << 6) | digit;
    }
    (id << 10) | u64::from(version & 0x3ff)
}

/// The name and version an id packs.
pub fn type_name(id: u64) -> ([u8; 9], u16) {
    let mut name = [0u8; 9];
    let mut bits = id >> 10;
    for c in name.iter_mut().rev() {
        *c = CHARSET[(bits & 63) as usize];
        bits >>= 6;
    }
    (name, (id & 0x3ff) as u16)
}

fn one_string_field(w: &mut Writer, id: u64, data: &[u8]) {
    w.byte(types::MODULE_2);
    w.len(id);
    w.len(OPCODE_STRING);
    w.string(data);
    w.len(OPCODE_EOF);
}

/// A JSON document as RedisJSON saves it.
pub(super) fn encode_json(j: &JsonValue, w: &mut Writer) {
    one_string_field(w, type_id(JSON_TYPE, JSON_VERSION), &j.to_text());
}

/// A vector set in Pion's own module payload.
pub(super) fn encode_vset(v: &VectorSetValue, w: &mut Writer) {
    let mut blob = Vec::new();
    crate::value::vset::codec::encode(v, &mut blob);
    one_string_field(w, type_id(VSET_TYPE, VSET_VERSION), &blob);
}

/// A suggestion dictionary as RediSearch saves it: strings carry a trailing NUL.
pub(super) fn encode_suggestions(v: &SuggestionsValue, w: &mut Writer) {
    let entries = v.entries();
    w.byte(types::MODULE_2);
    w.len(type_id(TRIE_TYPE, TRIE_VERSION));
    w.len(OPCODE_UINT);
    w.len(entries.len() as u64);
    for e in entries {
        let mut text = e.text;
        text.push(0);
        w.len(OPCODE_STRING);
        w.string(&text);
        w.len(OPCODE_DOUBLE);
        w.binary_double(f64::from(e.score));
        let mut payload = e.payload;
        payload.push(0);
        w.len(OPCODE_STRING);
        w.string(&payload);
    }
    w.len(OPCODE_EOF);
}

fn expect_opcode(r: &mut Reader<'_>, opcode: u64) -> Result<(), RdbError> {
    if r.len()? != opcode {
        return Err(RdbError::bad("unexpected module field"));
    }
    Ok(())
}

/// A NUL-terminated string field, without its NUL.
fn read_c_string(r: &mut Reader<'_>) -> Result<Vec<u8>, RdbError> {
    expect_opcode(r, OPCODE_STRING)?;
    let mut s = r.string()?.into_owned();
    if s.pop() != Some(0) {
        return Err(RdbError::bad("module string without its NUL"));
    }
    Ok(s)
}

fn decode_suggestions(r: &mut Reader<'_>, with_payloads: bool) -> Result<Value, RdbError> {
    expect_opcode(r, OPCODE_UINT)?;
    // Each suggestion takes at least a string and a double field.
    let n = r.count(12)?;
    let mut entries = Vec::with_capacity(n);
    for _ in 0..n {
        let text = read_c_string(r)?;
        expect_opcode(r, OPCODE_DOUBLE)?;
        let score = r.binary_double()? as f32;
        let payload = if with_payloads {
            read_c_string(r)?
        } else {
            Vec::new()
        };
        entries.push(StoredSuggestion {
            text,
            score,
            payload,
        });
    }
    expect_opcode(r, OPCODE_EOF)?;
    let v = SuggestionsValue::from_entries(entries);
    Ok(Value::Suggestions(Box::new(v)))
}

/// The single string field of a module value and the end opcode after it.
fn read_one_string(r: &mut Reader<'_>) -> Result<Vec<u8>, RdbError> {
    if r.len()? != OPCODE_STRING {
        return Err(RdbError::bad("unexpected module field"));
    }
    let data = r.string()?.into_owned();
    if r.len()? != OPCODE_EOF {
        return Err(RdbError::bad("module value without its end"));
    }
    Ok(data)
}

/// Reads a module value of a type Pion knows.
pub(super) fn decode(r: &mut Reader<'_>) -> Result<Value, RdbError> {
    let (name, version) = type_name(r.len()?);
    if &name == JSON_TYPE && matches!(version, 2 | 3) {
        let text = read_one_string(r)?;
        let root =
            crate::value::json::parse(&text).map_err(|_| RdbError::bad("invalid JSON document"))?;
        if crate::value::json::depth_of(&root) > crate::value::json::MAX_DEPTH {
            return Err(RdbError::bad("JSON document nested too deeply"));
        }
        return Ok(Value::Json(Box::new(JsonValue::new(root))));
    }
    if &name == VSET_TYPE && version == VSET_VERSION {
        let blob = read_one_string(r)?;
        let mut cursor = crate::util::codec::Reader::new(&blob);
        let v = crate::value::vset::codec::decode(&mut cursor)
            .map_err(|_| RdbError::bad("invalid vector set"))?;
        if cursor.remaining() != 0 {
            return Err(RdbError::bad("invalid vector set"));
        }
        return Ok(Value::VectorSet(Box::new(v)));
    }
    if &name == TRIE_TYPE && version <= TRIE_VERSION {
        return decode_suggestions(r, version > 0);
    }
    Err(RdbError::bad("a module type Pion does not know"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_pack_names_as_redis_does() {
        // RedisJSON's id as redis-server with rejson.so writes it in a DUMP payload.
        assert_eq!(type_id(JSON_TYPE, 3), 0x45e2_5238_df91_2c03);
        assert_eq!(type_name(0x45e2_5238_df91_2c03), (*JSON_TYPE, 3));
        assert_eq!(type_name(type_id(VSET_TYPE, 0)), (*VSET_TYPE, 0));
        // Redis 8's built-in vector sets.
        assert_eq!(&type_name(0xbde7_2da2_bb1e_b400).0, b"vectorset");
        // RediSearch's suggestion dictionaries, as the oracle's DUMP names them.
        assert_eq!(type_id(TRIE_TYPE, TRIE_VERSION), 0xb6b8_9eb7_2a5e_d001);
    }
}
