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
//!
//! A JSON document therefore moves between Pion and a Redis with RedisJSON in both
//! directions. Redis 8's own vector sets save their HNSW graph in a layout of their
//! own, which Pion does not write: a Pion vector set's payload names a type no Redis
//! has, so Redis refuses it with `Bad data format`, and Pion refuses Redis 8's
//! `vectorset` payloads the same way.

use super::wire::{Reader, Writer};
use super::{types, RdbError};
use crate::value::{JsonValue, Value, VectorSetValue};

const CHARSET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// End of a module value's fields.
const OPCODE_EOF: u64 = 0;
/// A string field.
const OPCODE_STRING: u64 = 5;

/// RedisJSON's type name and the version Pion writes.
const JSON_TYPE: &[u8; 9] = b"ReJSON-RL";
const JSON_VERSION: u16 = 3;
/// Pion's vector-set type name and version.
const VSET_TYPE: &[u8; 9] = b"pion-vset";
const VSET_VERSION: u16 = 0;

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
    }
}
