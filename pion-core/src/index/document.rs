//! The two kinds of document an index reads: a hash, whose fields hold the values
//! as bytes, and a JSON document, whose values a field's JSONPath selects. Indexing
//! ([`super::docs`]), replies (`FT.SEARCH RETURN`, `FT.AGGREGATE LOAD`) and the
//! exact re-rank of KNN results all read documents through [`Document`], so an
//! `ON JSON` index answers in the shapes RediSearch gives: a string as its text, a
//! number as JSON writes it, `true`/`false` as `1`/`0`, `null` as a nil, an array or
//! object as compact JSON, the whole document under `$`, and with `DIALECT 3` every
//! match of a path as one JSON array.

use serde_json::Value as Json;

use super::schema::{FieldSpec, KeyType, VectorSpec, VectorType};
use crate::value::json::{self, select, Path};
use crate::value::{HashValue, Value};
use crate::vector::ExactQuery;

/// A document an index covers.
#[derive(Clone, Copy)]
pub enum Document<'a> {
    /// A hash.
    Hash(&'a HashValue),
    /// A JSON document's root.
    Json(&'a Json),
}

/// A value read out of a document for a reply.
#[derive(Debug, Clone, PartialEq)]
pub enum Read {
    /// Bytes: a hash field's value, or a JSON value as RediSearch writes it.
    Bytes(Vec<u8>),
    /// JSON's `null` (a nil in the reply).
    Null,
}

impl Read {
    /// The bytes, or `None` for a null.
    pub fn into_bytes(self) -> Option<Vec<u8>> {
        match self {
            Read::Bytes(b) => Some(b),
            Read::Null => None,
        }
    }
}

impl<'a> Document<'a> {
    /// The document a stored value is for an index on `on` keys (`None`: a key of
    /// another type, which the index does not cover).
    pub fn of(value: &'a Value, on: KeyType) -> Option<Document<'a>> {
        match (value, on) {
            (Value::Hash(h), KeyType::Hash) => Some(Document::Hash(h)),
            (Value::Json(j), KeyType::Json) => Some(Document::Json(&j.root)),
            _ => None,
        }
    }

    /// A schema field's value as replies and sorting read it (the first match of a
    /// JSON field's path); `None` when the document has none.
    pub fn field(&self, f: &FieldSpec, every_match: bool) -> Option<Read> {
        match (self, &f.json_path) {
            (Document::Hash(h), _) => h.get(&f.path).map(|v| Read::Bytes(v.to_vec())),
            (Document::Json(root), Some(path)) => read_path(root, path, every_match),
            (Document::Json(_), None) => None,
        }
    }

    /// The value a field is sorted by: the hash field, or the first value of a JSON
    /// field (the first element when its path matched an array).
    pub fn sort_value(&self, f: &FieldSpec) -> Option<Vec<u8>> {
        match (self, &f.json_path) {
            (Document::Hash(h), _) => h.get(&f.path).map(<[u8]>::to_vec),
            (Document::Json(root), Some(path)) => {
                let ptrs = path.select(root);
                let first = select::get(root, ptrs.first()?)?;
                let first = match first {
                    Json::Array(items) => items.first()?,
                    other => other,
                };
                render(first).into_bytes()
            }
            (Document::Json(_), None) => None,
        }
    }

    /// The `SORTBY` field as a reply lists it: with `DIALECT 3` a JSON path that
    /// matched one scalar still gives the scalar (RediSearch takes it from the sort
    /// key), anything else every match.
    pub fn sorted_field(&self, f: &FieldSpec, every_match: bool) -> Option<Read> {
        if let (Document::Json(root), Some(path), true) = (self, &f.json_path, every_match) {
            let ptrs = path.select(root);
            if let [ptr] = ptrs.as_slice() {
                if let Some(v) = select::get(root, ptr).filter(|v| !v.is_array() && !v.is_object())
                {
                    return Some(render(v));
                }
            }
        }
        self.field(f, every_match)
    }

    /// What `RETURN`/`LOAD` of a name outside the schema reads: a hash field, or in a
    /// JSON document a JSONPath (other names read nothing, as in RediSearch).
    pub fn named(&self, name: &[u8], every_match: bool) -> Option<Read> {
        match self {
            Document::Hash(h) => h.get(name).map(|v| Read::Bytes(v.to_vec())),
            Document::Json(root) => {
                if !name.starts_with(b"$") {
                    return None;
                }
                let path = Path::parse(name).ok()?;
                read_path(root, &path, every_match)
            }
        }
    }

    /// The whole document as a reply without `RETURN` lists it: every hash field, or
    /// the JSON document under `$`.
    pub fn whole(&self, every_match: bool) -> Vec<(Vec<u8>, Read)> {
        match self {
            Document::Hash(h) => h
                .iter()
                .map(|(f, v)| (f.to_vec(), Read::Bytes(v.to_vec())))
                .collect(),
            Document::Json(root) => {
                let text = json::to_text(root);
                let text = if every_match {
                    let mut wrapped = Vec::with_capacity(text.len() + 2);
                    wrapped.push(b'[');
                    wrapped.extend_from_slice(&text);
                    wrapped.push(b']');
                    wrapped
                } else {
                    text
                };
                vec![(b"$".to_vec(), Read::Bytes(text))]
            }
        }
    }

    /// A vector field's vectors: one, or each a multi-value JSON path matches (none
    /// when missing or not vectors of the right size).
    pub fn vectors(&self, f: &FieldSpec, spec: &VectorSpec) -> Vec<Vec<f32>> {
        let dim = spec.params.dim;
        match (self, &f.json_path) {
            (Document::Hash(h), _) => h
                .get(&f.path)
                .and_then(|raw| spec.ty.decode(raw, dim))
                .into_iter()
                .collect(),
            (Document::Json(root), Some(path)) => {
                let ptrs = path.select(root);
                if !f.holds_many_vectors() && ptrs.len() != 1 {
                    return Vec::new();
                }
                ptrs.iter()
                    .filter_map(|p| select::get(root, p))
                    .filter_map(|v| super::json_fields::vector_of(v, dim).ok())
                    .collect()
            }
            (Document::Json(_), None) => Vec::new(),
        }
    }

    /// The exact distance from `query` to the nearest of a vector field's vectors;
    /// `None` when the document has none. A hash's FLOAT32 field is read where it
    /// lies, with no copy.
    pub fn nearest(&self, f: &FieldSpec, spec: &VectorSpec, query: &ExactQuery<'_>) -> Option<f32> {
        if let (Document::Hash(h), VectorType::Float32) = (self, spec.ty) {
            return query.distance_le(h.get(&f.path)?);
        }
        self.vectors(f, spec)
            .iter()
            .map(|v| query.distance(v))
            .min_by(f32::total_cmp)
    }
}

/// A path's value in a JSON document: the first match as RediSearch writes a value,
/// or with `every_match` all of them as a JSON array; `None` when nothing matches.
fn read_path(root: &Json, path: &Path, every_match: bool) -> Option<Read> {
    let ptrs = path.select(root);
    let mut values = ptrs.iter().filter_map(|p| select::get(root, p));
    if every_match {
        let all: Vec<Json> = values.cloned().collect();
        // Nothing, or only empty arrays, is not returned (RediSearch leaves it out).
        if all.iter().all(|v| v.as_array().is_some_and(Vec::is_empty)) {
            return None;
        }
        return Some(Read::Bytes(json::to_text(&Json::Array(all))));
    }
    Some(render(values.next()?))
}

/// One JSON value as `FT.SEARCH` and `FT.AGGREGATE` return it.
pub fn render(v: &Json) -> Read {
    match v {
        Json::Null => Read::Null,
        Json::String(s) => Read::Bytes(s.as_bytes().to_vec()),
        Json::Bool(b) => Read::Bytes(if *b { b"1".to_vec() } else { b"0".to_vec() }),
        other => Read::Bytes(json::to_text(other)),
    }
}
