//! How the values a JSONPath selects become a field's index input, with RediSearch's
//! rules and failure texts: a path that matches one array, or several values, gives
//! a multi-valued field (every string of a TEXT or TAG field, every number of a
//! NUMERIC field); `null` counts as missing; a value of the wrong JSON type makes the
//! whole document fail to index. A VECTOR field takes one array of numbers of the
//! field's dimension.

use serde_json::Value as Json;

use super::docs::{IndexingFailure, Numbers, Parsed};
use super::schema::{FieldKind, FieldSpec, IndexDef};
use super::text;
use super::vectors::MAX_VECTORS_PER_DOCUMENT;
use crate::value::json::select;

fn failure(text: impl Into<String>) -> IndexingFailure {
    IndexingFailure { text: text.into() }
}

/// The failure of a single value whose JSON type the field's kind cannot take.
fn wrong_type(v: &Json) -> IndexingFailure {
    failure(match v {
        Json::Number(_) => "Invalid JSON type: Numeric type can represent only NUMERIC field",
        Json::Bool(_) => "Invalid JSON type: Boolean type can be represent only TAG field",
        Json::Object(_) => "Invalid JSON type: Object type can represent only GEOMETRY fields",
        Json::String(_) => {
            "Invalid JSON type: String type can represent only TEXT, TAG, GEO or GEOMETRY field"
        }
        Json::Array(_) => "Invalid JSON type: Array type cannot represent this field",
        Json::Null => "Invalid JSON type: Null type cannot represent this field",
    })
}

const STRINGS_ONLY: &str = "TEXT/TAG fields can only contain strings or nulls";
const NUMBERS_ONLY: &str = "NUMERIC fields can only contain numeric or nulls";

/// What a field of an `ON JSON` index contributes to the document at `root`
/// (`None`: nothing, the field is missing).
pub(super) fn parse(
    def: &IndexDef,
    f: &FieldSpec,
    root: &Json,
) -> Result<Option<Parsed>, IndexingFailure> {
    let Some(path) = &f.json_path else {
        return Ok(None);
    };
    let ptrs = path.select(root);
    let matches: Vec<&Json> = ptrs.iter().filter_map(|p| select::get(root, p)).collect();
    if let FieldKind::Vector(v) = &f.kind {
        if f.holds_many_vectors() {
            // Every vector the path matches, nulls skipped.
            let vectors = matches
                .iter()
                .filter(|m| !m.is_null())
                .map(|m| vector_of(m, v.params.dim))
                .collect::<Result<Vec<_>, _>>()?;
            if vectors.len() > MAX_VECTORS_PER_DOCUMENT {
                return Err(failure(format!(
                    "Pion indexes at most {MAX_VECTORS_PER_DOCUMENT} vectors per JSON document and field"
                )));
            }
            return Ok((!vectors.is_empty()).then_some(Parsed::Vector(vectors)));
        }
        return match matches.as_slice() {
            [] | [Json::Null] => Ok(None),
            [one] => vector_of(one, v.params.dim).map(|v| Some(Parsed::Vector(vec![v]))),
            _ => Err(failure(MANY_VECTORS)),
        };
    }
    // One array, or several matches, make a multi-valued field.
    let (values, multi): (Vec<&Json>, bool) = match matches.as_slice() {
        [] | [Json::Null] => return Ok(None),
        [Json::Array(items)] => (items.iter().collect(), true),
        [_] => (matches, false),
        _ => (matches, true),
    };
    Ok(Some(match &f.kind {
        FieldKind::Text { .. } => {
            let mut tokens = Vec::new();
            for v in values {
                match v {
                    Json::String(s) => {
                        tokens.extend(text::tokenize(s.as_bytes(), def.stopwords.as_deref()))
                    }
                    Json::Null if multi => {}
                    _ if multi => return Err(failure(STRINGS_ONLY)),
                    other => return Err(wrong_type(other)),
                }
            }
            Parsed::Text(tokens)
        }
        FieldKind::Tag {
            separator,
            case_sensitive,
        } => {
            let mut tags = Vec::new();
            for v in values {
                match v {
                    Json::String(s) => {
                        tags.extend(text::tag_values(s.as_bytes(), *separator, *case_sensitive))
                    }
                    Json::Bool(b) if !multi => tags.push(if *b {
                        b"true".to_vec()
                    } else {
                        b"false".to_vec()
                    }),
                    Json::Null if multi => {}
                    _ if multi => return Err(failure(STRINGS_ONLY)),
                    other => return Err(wrong_type(other)),
                }
            }
            Parsed::Tag(tags)
        }
        FieldKind::Numeric => {
            let mut numbers = Vec::new();
            for v in values {
                match v {
                    Json::Number(n) => numbers.push(n.as_f64().unwrap_or(f64::NAN)),
                    Json::Null if multi => {}
                    _ if multi => return Err(failure(NUMBERS_ONLY)),
                    other => return Err(wrong_type(other)),
                }
            }
            match Numbers::from_vec(numbers) {
                Some(n) => Parsed::Numeric(n),
                None => return Ok(None),
            }
        }
        FieldKind::Geo => match values.as_slice() {
            [Json::String(s)] if !multi => {
                let (lon, lat) = super::docs::parse_geo(s.as_bytes())?;
                Parsed::Geo(lon, lat)
            }
            [other] if !multi => return Err(wrong_type(other)),
            _ => {
                return Err(failure(
                    "Pion indexes one point per JSON document and GEO field",
                ))
            }
        },
        FieldKind::Vector(_) => return Ok(None),
    }))
}

/// A definite path (`$.embedding`) holds one vector, as in RediSearch; a path that
/// may match several (`$.embeddings[*]`) indexes each.
const MANY_VECTORS: &str =
    "A definite JSON path holds one vector: index several with a path such as `$.vecs[*]`";

/// A JSON value as a vector of `dim` components, or why it is not one.
pub(super) fn vector_of(v: &Json, dim: usize) -> Result<Vec<f32>, IndexingFailure> {
    let Json::Array(items) = v else {
        return Err(wrong_type(v));
    };
    if items.is_empty() {
        return Err(failure("Empty array for vector field on JSON document"));
    }
    if items.iter().any(Json::is_array) {
        return Err(failure(MANY_VECTORS));
    }
    if items.len() != dim {
        return Err(failure(format!(
            "Invalid vector length. Expected {dim}, got {}",
            items.len()
        )));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, x)| {
            x.as_f64()
                .map(|x| x as f32)
                .ok_or_else(|| failure(format!("Invalid vector element at index {i}")))
        })
        .collect()
}
