//! An RDB object back into a value, with the encoding Redis 7.0 gives what it loads:
//! compact while within the thresholds (a listpack payload stays a listpack until it
//! has more entries than allowed, whatever its elements' sizes, as in Redis; an
//! element-by-element one converts as soon as an element is too long).

use std::collections::HashSet;

use super::listpack::{self, Item};
use super::wire::Reader;
use super::{intset, module, stream, types, ziplist, zipmap, LoadOptions, RdbError};
use crate::value::list::End;
use crate::value::{EncodingLimits, HashValue, ListValue, SetValue, Value, ZSetValue};

/// Reads the type byte and the value after it.
pub(super) fn value(r: &mut Reader<'_>, opts: &LoadOptions) -> Result<Value, RdbError> {
    let limits = &opts.limits;
    Ok(match r.byte()? {
        types::STRING => Value::string(r.string()?.into_owned()),
        types::LIST => {
            let n = r.count(1)?;
            let mut l = ListValue::new();
            for _ in 0..n {
                l.push(End::Right, r.string()?.into_owned());
            }
            Value::List(l)
        }
        types::LIST_ZIPLIST => {
            let blob = r.string()?;
            Value::List(
                ziplist::parse(&blob)?
                    .into_iter()
                    .map(Item::to_bytes)
                    .collect(),
            )
        }
        t @ (types::LIST_QUICKLIST | types::LIST_QUICKLIST_2) => {
            quicklist(r, t == types::LIST_QUICKLIST_2)?
        }
        types::SET => {
            let n = r.count(1)?;
            let mut s: Option<SetValue> = None;
            for _ in 0..n {
                let m = r.string()?;
                let set = s.get_or_insert_with(|| first_set(n, limits, &m));
                if !set.insert(&m, limits) {
                    return Err(RdbError::bad("duplicate set member"));
                }
            }
            Value::Set(s.unwrap_or_default())
        }
        types::SET_INTSET => {
            let members = intset::parse(&r.string()?)?;
            let mut s = SetValue::new();
            for m in members {
                s.insert(m.to_string().as_bytes(), limits);
            }
            Value::Set(s)
        }
        types::SET_LISTPACK => {
            let blob = r.string()?;
            let items = listpack::parse(&blob)?;
            let mut s: Option<SetValue> = None;
            for item in items {
                let m = item.to_bytes();
                let set = s.get_or_insert_with(|| first_set(0, limits, &m));
                if !set.insert(&m, limits) {
                    return Err(RdbError::bad("duplicate set member"));
                }
            }
            Value::Set(s.unwrap_or_default())
        }
        t @ (types::ZSET | types::ZSET_2) => {
            let n = r.count(2)?;
            let mut members = Vec::with_capacity(n);
            for _ in 0..n {
                let m = r.string()?.into_owned();
                let score = if t == types::ZSET_2 {
                    r.binary_double()?
                } else {
                    r.text_double()?
                };
                members.push((m, score));
            }
            zset_from_elements(members, limits)?
        }
        t @ (types::ZSET_ZIPLIST | types::ZSET_LISTPACK) => {
            let blob = r.string()?;
            zset_from_pairs(&compact(&blob, t == types::ZSET_LISTPACK)?, limits)?
        }
        types::HASH => {
            let n = r.count(2)?;
            let mut h = HashValue::new();
            for _ in 0..n {
                let f = r.string()?.into_owned();
                let v = r.string()?.into_owned();
                if !h.insert(f, v, limits) {
                    return Err(RdbError::bad("duplicate hash field"));
                }
            }
            Value::Hash(h)
        }
        types::HASH_ZIPMAP => {
            let blob = r.string()?;
            let pairs = zipmap::parse(&blob)?;
            // Redis converts a zipmap element by element, as it would a hash table.
            let mut h = HashValue::new();
            for (f, v) in pairs {
                if !h.insert(f.to_vec(), v.to_vec(), limits) {
                    return Err(RdbError::bad("duplicate hash field"));
                }
            }
            Value::Hash(h)
        }
        t @ (types::HASH_ZIPLIST | types::HASH_LISTPACK) => {
            let blob = r.string()?;
            hash_from_pairs(&compact(&blob, t == types::HASH_LISTPACK)?, limits)?
        }
        t @ (types::STREAM_LISTPACKS | types::STREAM_LISTPACKS_2 | types::STREAM_LISTPACKS_3) => {
            Value::Stream(Box::new(stream::decode(r, t)?))
        }
        types::MODULE_2 => module::decode(r)?,
        _ => return Err(RdbError::bad("unknown object type")),
    })
}

/// The elements of a listpack, or of a ziplist (the encoding before Redis 7.0).
fn compact(blob: &[u8], is_listpack: bool) -> Result<Vec<Item<'_>>, RdbError> {
    if is_listpack {
        listpack::parse(blob)
    } else {
        ziplist::parse(blob)
    }
}

/// The empty set Redis starts from: an intset for a small set whose first member is
/// an integer.
fn first_set(n: usize, limits: &EncodingLimits, first: &[u8]) -> SetValue {
    if n > limits.set_max_intset_entries {
        SetValue::new_table()
    } else {
        SetValue::for_first_member(first)
    }
}

fn quicklist(r: &mut Reader<'_>, v2: bool) -> Result<Value, RdbError> {
    let nodes = r.count(1)?;
    let mut l = ListValue::new();
    for _ in 0..nodes {
        let container = if v2 { r.len()? } else { 2 };
        let blob = r.string()?;
        match container {
            // A plain node: one element as it is.
            1 => l.push(End::Right, blob.into_owned()),
            2 => {
                // Empty nodes are skipped, as Redis skips them.
                for item in compact(&blob, v2)? {
                    l.push(End::Right, item.to_bytes());
                }
            }
            _ => return Err(RdbError::bad("unknown quicklist container")),
        }
    }
    Ok(Value::List(l))
}

/// A score stored in a listpack or ziplist.
fn score_of(item: Item<'_>) -> Result<f64, RdbError> {
    let score = match item {
        Item::Int(v) => v as f64,
        Item::Str(s) => {
            crate::util::num::parse_f64(s).ok_or(RdbError::bad("invalid sorted set score"))?
        }
    };
    if score.is_nan() {
        return Err(RdbError::bad("NaN score"));
    }
    Ok(score)
}

/// A sorted set from a compact payload (member, score, member, score …): it stays a
/// listpack unless it has more members than `zset-max-listpack-entries`.
fn zset_from_pairs(items: &[Item<'_>], limits: &EncodingLimits) -> Result<Value, RdbError> {
    if !items.len().is_multiple_of(2) {
        return Err(RdbError::bad("odd sorted set listpack"));
    }
    let mut members = Vec::with_capacity(items.len() / 2);
    for pair in items.chunks_exact(2) {
        members.push((pair[0].to_bytes(), score_of(pair[1])?));
    }
    let listpack = members.len() <= limits.zset_max_listpack_entries;
    ZSetValue::restored(members, listpack)
        .map(Value::ZSet)
        .ok_or(RdbError::bad("duplicate sorted set member"))
}

/// A sorted set from a payload of elements: a listpack when it has few enough
/// members, none too long (Redis converts after loading, since these come unsorted).
fn zset_from_elements(
    members: Vec<(Vec<u8>, f64)>,
    limits: &EncodingLimits,
) -> Result<Value, RdbError> {
    if members.iter().any(|(_, s)| s.is_nan()) {
        return Err(RdbError::bad("NaN score"));
    }
    let longest = members.iter().map(|(m, _)| m.len()).max().unwrap_or(0);
    let listpack = members.len() <= limits.zset_max_listpack_entries
        && longest <= limits.zset_max_listpack_value;
    ZSetValue::restored(members, listpack)
        .map(Value::ZSet)
        .ok_or(RdbError::bad("duplicate sorted set member"))
}

/// A hash from a compact payload (field, value, field, value …): it stays a listpack
/// unless it has more fields than `hash-max-listpack-entries`.
fn hash_from_pairs(items: &[Item<'_>], limits: &EncodingLimits) -> Result<Value, RdbError> {
    if !items.len().is_multiple_of(2) {
        return Err(RdbError::bad("odd hash listpack"));
    }
    let mut seen = HashSet::with_capacity(items.len() / 2);
    let mut pairs = Vec::with_capacity(items.len() / 2);
    for pair in items.chunks_exact(2) {
        let f = pair[0].to_bytes();
        if !seen.insert(f.clone()) {
            return Err(RdbError::bad("duplicate hash field"));
        }
        pairs.push((f, pair[1].to_bytes()));
    }
    let listpack = pairs.len() <= limits.hash_max_listpack_entries;
    Ok(Value::Hash(HashValue::restored(pairs, listpack)))
}
