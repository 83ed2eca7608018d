//! The hash type: an insertion-ordered `listpack` while small, a hash table once it
//! passes `hash-max-listpack-entries` or a field/value passes `hash-max-listpack-value`.
//!
//! Clients observe the encoding: `HGETALL` of a listpack hash lists fields in insertion
//! order and `HSCAN` returns it whole with cursor 0, while the hash table answers in
//! hash order and scans with a resumable cursor ([`table::ScanTable`]). Like Redis, a
//! hash never converts back to a listpack.

pub mod table;

use rand::Rng;

use super::packed::PackedPairs;
use super::EncodingLimits;
use table::ScanTable;

/// A hash value.
#[derive(Debug, Clone, PartialEq)]
pub struct HashValue {
    repr: Repr,
}

#[derive(Debug, Clone, PartialEq)]
enum Repr {
    Listpack(PackedPairs),
    /// Boxed, so a small hash's value stays the size of its packed buffer's header.
    Table(Box<ScanTable>),
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
            repr: Repr::Listpack(PackedPairs::new()),
        }
    }

    /// A hash restored with the encoding its payload chose: `listpack` keeps the
    /// pairs in their order, whatever their sizes (as Redis loads a listpack). The
    /// caller has checked that the fields are distinct.
    pub fn restored(pairs: Vec<(Vec<u8>, Vec<u8>)>, listpack: bool) -> HashValue {
        if listpack {
            let mut packed = PackedPairs::new();
            for (f, v) in &pairs {
                packed.push(f, v);
            }
            return HashValue {
                repr: Repr::Listpack(packed),
            };
        }
        let mut m = ScanTable::with_capacity(pairs.len());
        for (f, v) in &pairs {
            m.insert(f, v);
        }
        HashValue {
            repr: Repr::Table(Box::new(m)),
        }
    }

    /// Number of fields.
    pub fn len(&self) -> usize {
        match &self.repr {
            Repr::Listpack(p) => p.len(),
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

    /// Whether the hash still has the compact listpack encoding.
    pub fn is_compact(&self) -> bool {
        matches!(self.repr, Repr::Listpack(_))
    }

    /// The value of a field.
    pub fn get(&self, field: &[u8]) -> Option<&[u8]> {
        match &self.repr {
            Repr::Listpack(p) => p.find(field).map(|at| p.value_at(at)),
            Repr::Table(m) => m.get(field),
        }
    }

    /// Whether a field exists.
    pub fn contains(&self, field: &[u8]) -> bool {
        self.get(field).is_some()
    }

    /// Sets a field; returns true if the field is new. Converts to a hash table when
    /// the field or value is longer than `hash-max-listpack-value` or the hash gets
    /// more than `hash-max-listpack-entries` fields, as Redis does.
    pub fn insert(&mut self, field: Vec<u8>, value: Vec<u8>, limits: &EncodingLimits) -> bool {
        let max_value = limits.hash_max_listpack_value;
        if field.len() > max_value || value.len() > max_value {
            self.convert();
        }
        match &mut self.repr {
            Repr::Listpack(p) => {
                if let Some(at) = p.find(&field) {
                    p.set_value(at, &value);
                    return false;
                }
                p.push(&field, &value);
                if p.len() > limits.hash_max_listpack_entries {
                    self.convert();
                }
                true
            }
            Repr::Table(m) => m.insert(&field, &value),
        }
    }

    /// Switches a listpack to the hash-table encoding (no-op for a table).
    fn convert(&mut self) {
        if let Repr::Listpack(p) = &self.repr {
            let mut m = ScanTable::with_capacity(p.len());
            for (f, val) in p.iter() {
                m.insert(f, val);
            }
            self.repr = Repr::Table(Box::new(m));
        }
    }

    /// Removes a field; returns its value if it existed.
    pub fn remove(&mut self, field: &[u8]) -> Option<Vec<u8>> {
        match &mut self.repr {
            Repr::Listpack(p) => {
                let at = p.find(field)?;
                let value = p.value_at(at).to_vec();
                p.remove(at);
                Some(value)
            }
            Repr::Table(m) => m.remove(field),
        }
    }

    /// All field/value pairs (insertion order while compact).
    pub fn iter(&self) -> Box<dyn Iterator<Item = (&[u8], &[u8])> + '_> {
        match &self.repr {
            Repr::Listpack(p) => Box::new(p.iter()),
            Repr::Table(m) => Box::new(m.iter()),
        }
    }

    /// A uniformly chosen field and its value, or `None` when empty.
    pub fn random(&self, rng: &mut impl Rng) -> Option<(&[u8], &[u8])> {
        match &self.repr {
            Repr::Listpack(p) if p.is_empty() => None,
            Repr::Listpack(p) => p.nth(rng.gen_range(0..p.len())),
            Repr::Table(m) => m.random(rng),
        }
    }

    /// `count` uniformly chosen fields with their values, repeats allowed
    /// (`HRANDFIELD` with a negative count). A listpack is walked once, not once per
    /// pick.
    pub fn random_with_repeats(&self, count: usize, rng: &mut impl Rng) -> Vec<(&[u8], &[u8])> {
        match &self.repr {
            Repr::Listpack(p) if p.is_empty() => Vec::new(),
            Repr::Listpack(p) => {
                let pairs: Vec<_> = p.iter().collect();
                (0..count)
                    .map(|_| pairs[rng.gen_range(0..pairs.len())])
                    .collect()
            }
            Repr::Table(_) => (0..count).filter_map(|_| self.random(rng)).collect(),
        }
    }

    /// One step of `HSCAN`: visits some fields and returns the next cursor (0 when
    /// done). A listpack is visited whole and answers cursor 0, as in Redis; a hash
    /// table visits one bucket per step in reverse-binary cursor order, so every field
    /// present for the whole scan is seen even if the table resizes in between.
    pub fn scan_step(&self, cursor: u64, mut visit: impl FnMut(&[u8], &[u8])) -> u64 {
        match &self.repr {
            Repr::Listpack(p) => {
                for (f, val) in p.iter() {
                    visit(f, val);
                }
                0
            }
            Repr::Table(m) => m.scan_step(cursor, |f, v| visit(f, v)),
        }
    }

    pub(crate) fn mem_usage(&self, samples: usize) -> usize {
        match &self.repr {
            Repr::Listpack(p) => p.heap_bytes(),
            Repr::Table(m) => m.mem_usage(samples) + std::mem::size_of::<ScanTable>(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn limits() -> EncodingLimits {
        EncodingLimits::default()
    }

    #[test]
    fn listpack_keeps_insertion_order_and_converts() {
        let mut h = HashValue::new();
        assert!(h.insert(b"b".to_vec(), b"1".to_vec(), &limits()));
        assert!(h.insert(b"a".to_vec(), b"2".to_vec(), &limits()));
        assert!(!h.insert(b"b".to_vec(), b"3".to_vec(), &limits()));
        let pairs: Vec<_> = h.iter().collect();
        assert_eq!(pairs, vec![(&b"b"[..], &b"3"[..]), (&b"a"[..], &b"2"[..])]);
        assert_eq!(h.encoding(), "listpack");
        h.insert(b"c".to_vec(), vec![b'x'; 65], &limits());
        assert_eq!(h.encoding(), "hashtable");
        assert_eq!(h.get(b"a"), Some(&b"2"[..]));
        assert_eq!(h.len(), 3);
    }

    #[test]
    fn converts_past_entry_limit() {
        let mut h = HashValue::new();
        let l = limits();
        for i in 0..l.hash_max_listpack_entries {
            h.insert(i.to_string().into_bytes(), b"v".to_vec(), &l);
        }
        assert_eq!(h.encoding(), "listpack");
        h.insert(b"one more".to_vec(), b"v".to_vec(), &l);
        assert_eq!(h.encoding(), "hashtable");
        assert_eq!(h.len(), l.hash_max_listpack_entries + 1);
    }

    proptest! {
        #[test]
        fn matches_a_map_model(ops in proptest::collection::vec((0u8..3, 0u8..40, 0usize..80), 0..300)) {
            let mut h = HashValue::new();
            let mut model = std::collections::HashMap::new();
            for (op, f, vlen) in ops {
                let f = vec![f];
                let v = vec![b'v'; vlen];
                match op {
                    0 => { prop_assert_eq!(h.insert(f.clone(), v.clone(), &limits()), model.insert(f, v).is_none()); }
                    1 => { prop_assert_eq!(h.remove(&f), model.remove(&f)); }
                    _ => { prop_assert_eq!(h.get(&f), model.get(&f).map(Vec::as_slice)); }
                }
                prop_assert_eq!(h.len(), model.len());
            }
            let mut seen = std::collections::HashMap::new();
            let mut cursor = 0;
            loop {
                cursor = h.scan_step(cursor, |f, v| { seen.insert(f.to_vec(), v.to_vec()); });
                if cursor == 0 { break; }
            }
            prop_assert_eq!(seen, model);
        }
    }
}
