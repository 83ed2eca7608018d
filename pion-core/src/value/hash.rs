//! The hash type: an insertion-ordered `listpack` while small, a hash table once it
//! passes `hash-max-listpack-entries` or a field/value passes `hash-max-listpack-value`.

use std::collections::HashMap;

use super::{sampled_size, EncodingLimits};

/// A hash value.
#[derive(Debug, Clone, PartialEq)]
pub struct HashValue {
    repr: Repr,
}

#[derive(Debug, Clone, PartialEq)]
enum Repr {
    Listpack(Vec<(Vec<u8>, Vec<u8>)>),
    Table(HashMap<Vec<u8>, Vec<u8>, ahash::RandomState>),
}

impl Default for HashValue {
    fn default() -> Self {
        HashValue::new()
    }
}

impl HashValue {
    /// An empty hash in the compact encoding.
    pub fn new() -> HashValue {
        HashValue {
            repr: Repr::Listpack(Vec::new()),
        }
    }

    /// Number of fields.
    pub fn len(&self) -> usize {
        match &self.repr {
            Repr::Listpack(v) => v.len(),
            Repr::Table(m) => m.len(),
        }
    }

    /// Whether the hash has no fields.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The encoding name (`listpack` or `hashtable`).
    pub fn encoding(&self) -> &'static str {
        match &self.repr {
            Repr::Listpack(_) => "listpack",
            Repr::Table(_) => "hashtable",
        }
    }

    /// The value of a field.
    pub fn get(&self, field: &[u8]) -> Option<&[u8]> {
        match &self.repr {
            Repr::Listpack(v) => v
                .iter()
                .find(|(f, _)| f == field)
                .map(|(_, v)| v.as_slice()),
            Repr::Table(m) => m.get(field).map(Vec::as_slice),
        }
    }

    /// Mutable access to the value of a field.
    pub fn get_mut(&mut self, field: &[u8]) -> Option<&mut Vec<u8>> {
        match &mut self.repr {
            Repr::Listpack(v) => v.iter_mut().find(|(f, _)| f == field).map(|(_, v)| v),
            Repr::Table(m) => m.get_mut(field),
        }
    }

    /// Whether a field exists.
    pub fn contains(&self, field: &[u8]) -> bool {
        self.get(field).is_some()
    }

    /// Sets a field; returns true if the field is new. Converts to a hash table when
    /// the limits are passed.
    pub fn insert(&mut self, field: Vec<u8>, value: Vec<u8>, limits: &EncodingLimits) -> bool {
        if let Repr::Listpack(v) = &mut self.repr {
            if let Some(slot) = v.iter_mut().find(|(f, _)| *f == field) {
                slot.1 = value;
                self.maybe_convert(0, 0, limits);
                return false;
            }
            let (flen, vlen) = (field.len(), value.len());
            v.push((field, value));
            self.maybe_convert(flen, vlen, limits);
            return true;
        }
        match &mut self.repr {
            Repr::Table(m) => m.insert(field, value).is_none(),
            Repr::Listpack(_) => unreachable!("listpack case returned above"),
        }
    }

    fn maybe_convert(&mut self, flen: usize, vlen: usize, limits: &EncodingLimits) {
        if let Repr::Listpack(v) = &mut self.repr {
            let too_long = flen > limits.hash_max_listpack_value
                || vlen > limits.hash_max_listpack_value
                || v.iter()
                    .any(|(_, val)| val.len() > limits.hash_max_listpack_value);
            if v.len() > limits.hash_max_listpack_entries || too_long {
                let mut m = HashMap::with_capacity_and_hasher(v.len(), ahash::RandomState::new());
                m.extend(std::mem::take(v));
                self.repr = Repr::Table(m);
            }
        }
    }

    /// Removes a field; returns its value if it existed.
    pub fn remove(&mut self, field: &[u8]) -> Option<Vec<u8>> {
        match &mut self.repr {
            Repr::Listpack(v) => {
                let pos = v.iter().position(|(f, _)| f == field)?;
                Some(v.remove(pos).1)
            }
            Repr::Table(m) => m.remove(field),
        }
    }

    /// All field/value pairs (insertion order while compact).
    pub fn iter(&self) -> Box<dyn Iterator<Item = (&[u8], &[u8])> + '_> {
        match &self.repr {
            Repr::Listpack(v) => Box::new(v.iter().map(|(f, v)| (f.as_slice(), v.as_slice()))),
            Repr::Table(m) => Box::new(m.iter().map(|(f, v)| (f.as_slice(), v.as_slice()))),
        }
    }

    pub(crate) fn mem_usage(&self) -> usize {
        sampled_size(self.iter().map(|(f, v)| f.len() + v.len()), self.len(), 24)
    }
}
