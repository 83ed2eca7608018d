//! A chained hash table keyed by byte strings, shared by the large encodings of hashes
//! and sets.
//!
//! It exists for two things `std::collections::HashMap` cannot give:
//!
//! * **A resumable scan cursor** (`HSCAN`, `SSCAN`). The table has a power-of-two
//!   number of buckets and an element lives in bucket `hash & mask`, with a hash seed
//!   fixed for the life of the table. The cursor walks buckets in *reverse-binary*
//!   order (increment the bit-reversed cursor), the order Redis's `dictScan` uses.
//!   Because growing or shrinking only splits bucket `b` into `b` and `b | high bit`
//!   (or merges them back), every bucket index not yet visited under the old size maps
//!   to indices not yet visited under the new one. So an element present for the whole
//!   scan is returned at least once however the table resizes between calls; elements
//!   added or removed during the scan may or may not be returned, and after a shrink
//!   an element may be returned twice.
//! * **Fair random picks** (`SRANDMEMBER`, `SPOP`, `HRANDFIELD`) in expected O(1):
//!   pick a bucket and a chain position uniformly, retry when that position is empty.
//!   Every element is then equally likely, with no bias towards short chains.

use std::fmt;

use rand::Rng;

/// Smallest number of buckets of a non-empty table.
const MIN_BUCKETS: usize = 4;

/// Random picks fall back to an O(n) walk after this many empty probes, so a
/// pathological chain layout can slow a pick down but never stall it.
const MAX_PROBES: usize = 256;

/// A hash table from byte-string keys to `V` with a scan cursor and fair random picks.
#[derive(Clone)]
pub struct ScanTable<V> {
    buckets: Vec<Vec<(Vec<u8>, V)>>,
    len: usize,
    /// Upper bound on the length of any chain (exact after a resize, grows on insert).
    longest: usize,
    hasher: ahash::RandomState,
}

impl<V> Default for ScanTable<V> {
    fn default() -> Self {
        ScanTable::new()
    }
}

impl<V: fmt::Debug> fmt::Debug for ScanTable<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.iter().map(|(k, v)| (String::from_utf8_lossy(k), v)))
            .finish()
    }
}

impl<V: PartialEq> PartialEq for ScanTable<V> {
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len && self.iter().all(|(k, v)| other.get(k) == Some(v))
    }
}

impl<V> ScanTable<V> {
    /// An empty table.
    pub fn new() -> ScanTable<V> {
        ScanTable::with_capacity(0)
    }

    /// An empty table with room for `n` elements before it grows.
    pub fn with_capacity(n: usize) -> ScanTable<V> {
        let size = n.next_power_of_two().max(MIN_BUCKETS);
        ScanTable {
            buckets: (0..size).map(|_| Vec::new()).collect(),
            len: 0,
            longest: 0,
            hasher: ahash::RandomState::new(),
        }
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the table is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn mask(&self) -> u64 {
        self.buckets.len() as u64 - 1
    }

    fn bucket_of(&self, key: &[u8]) -> usize {
        (self.hasher.hash_one(key) & self.mask()) as usize
    }

    /// The value stored under `key`.
    pub fn get(&self, key: &[u8]) -> Option<&V> {
        self.buckets[self.bucket_of(key)]
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
    }

    /// The value stored under `key`, mutably.
    pub fn get_mut(&mut self, key: &[u8]) -> Option<&mut V> {
        let b = self.bucket_of(key);
        self.buckets[b]
            .iter_mut()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v)
    }

    /// Whether `key` is present.
    pub fn contains(&self, key: &[u8]) -> bool {
        self.get(key).is_some()
    }

    /// Stores `value` under `key`; returns the old value if the key was present.
    pub fn insert(&mut self, key: Vec<u8>, value: V) -> Option<V> {
        let b = self.bucket_of(&key);
        if let Some(slot) = self.buckets[b].iter_mut().find(|(k, _)| *k == key) {
            return Some(std::mem::replace(&mut slot.1, value));
        }
        self.buckets[b].push((key, value));
        self.longest = self.longest.max(self.buckets[b].len());
        self.len += 1;
        if self.len > self.buckets.len() {
            self.resize(self.buckets.len() * 2);
        }
        None
    }

    /// Removes `key`; returns its value if it was present.
    pub fn remove(&mut self, key: &[u8]) -> Option<V> {
        let b = self.bucket_of(key);
        let pos = self.buckets[b].iter().position(|(k, _)| k == key)?;
        let (_, v) = self.buckets[b].swap_remove(pos);
        self.len -= 1;
        if self.buckets.len() > MIN_BUCKETS && self.len * 10 < self.buckets.len() {
            self.resize(self.len.next_power_of_two().max(MIN_BUCKETS));
        }
        Some(v)
    }

    fn resize(&mut self, size: usize) {
        let old = std::mem::take(&mut self.buckets);
        self.buckets = (0..size).map(|_| Vec::new()).collect();
        self.longest = 0;
        for (k, v) in old.into_iter().flatten() {
            let b = self.bucket_of(&k);
            self.buckets[b].push((k, v));
            self.longest = self.longest.max(self.buckets[b].len());
        }
    }

    /// Every element, in bucket order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &V)> + '_ {
        self.buckets
            .iter()
            .flatten()
            .map(|(k, v)| (k.as_slice(), v))
    }

    /// Visits the bucket that `cursor` names and returns the next cursor, 0 when the
    /// whole table has been walked (see the module documentation for the guarantee).
    pub fn scan_step(&self, cursor: u64, mut visit: impl FnMut(&[u8], &V)) -> u64 {
        let mask = self.mask();
        for (k, v) in &self.buckets[(cursor & mask) as usize] {
            visit(k, v);
        }
        // Set the bits above the mask so the increment carries into the next bucket of
        // the bit-reversed order.
        let c = cursor | !mask;
        c.reverse_bits().wrapping_add(1).reverse_bits()
    }

    /// A uniformly chosen element, or `None` when empty.
    pub fn random(&self, rng: &mut impl Rng) -> Option<(&[u8], &V)> {
        if self.len == 0 {
            return None;
        }
        for _ in 0..MAX_PROBES {
            let b = rng.gen_range(0..self.buckets.len());
            let j = rng.gen_range(0..self.longest.max(1));
            if let Some((k, v)) = self.buckets[b].get(j) {
                return Some((k.as_slice(), v));
            }
        }
        self.iter().nth(rng.gen_range(0..self.len))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rand::SeedableRng;
    use std::collections::{HashMap, HashSet};

    fn key(i: u32) -> Vec<u8> {
        format!("k{i}").into_bytes()
    }

    #[test]
    fn grows_and_shrinks() {
        let mut t = ScanTable::new();
        for i in 0..1000 {
            assert_eq!(t.insert(key(i), i), None);
        }
        assert_eq!(t.insert(key(7), 70), Some(7));
        assert_eq!(t.len(), 1000);
        assert!(t.buckets.len() >= 1000);
        for i in 0..995 {
            assert_eq!(t.remove(&key(i)), Some(if i == 7 { 70 } else { i }));
        }
        assert_eq!(t.len(), 5);
        assert!(t.buckets.len() <= 64);
        assert_eq!(t.get(&key(999)), Some(&999));
        assert_eq!(t.remove(b"missing"), None);
    }

    #[test]
    fn scan_survives_resizes() {
        let mut t = ScanTable::new();
        for i in 0..100 {
            t.insert(key(i), ());
        }
        let mut seen = HashSet::new();
        let mut cursor = 0;
        let mut step = 0u32;
        loop {
            cursor = t.scan_step(cursor, |k, _| {
                seen.insert(k.to_vec());
            });
            // Grow hard, then shrink hard, while the scan is under way; keys 0..50 stay.
            step += 1;
            if step == 10 {
                for i in 1000..5000 {
                    t.insert(key(i), ());
                }
            }
            if step == 40 {
                for i in (50..100).chain(1000..5000) {
                    t.remove(&key(i));
                }
            }
            if cursor == 0 {
                break;
            }
        }
        for i in 0..50 {
            assert!(seen.contains(&key(i)), "key {i} missed");
        }
    }

    #[test]
    fn random_is_fair() {
        let mut t = ScanTable::new();
        for i in 0..10 {
            t.insert(key(i), i);
        }
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        let mut hist = [0u32; 10];
        for _ in 0..100_000 {
            let (_, v) = t.random(&mut rng).expect("non-empty");
            hist[*v as usize] += 1;
        }
        for h in hist {
            assert!((9_000..11_000).contains(&h), "{hist:?}");
        }
        assert!(ScanTable::<u32>::new().random(&mut rng).is_none());
    }

    proptest! {
        #[test]
        fn behaves_like_a_map(ops in proptest::collection::vec((any::<bool>(), 0u8..64, any::<u8>()), 0..400)) {
            let mut t = ScanTable::new();
            let mut model = HashMap::new();
            for (ins, k, v) in ops {
                let k = vec![k];
                if ins {
                    prop_assert_eq!(t.insert(k.clone(), v), model.insert(k, v));
                } else {
                    prop_assert_eq!(t.remove(&k), model.remove(&k));
                }
                prop_assert_eq!(t.len(), model.len());
            }
            let mut full = HashMap::new();
            let mut cursor = 0;
            loop {
                cursor = t.scan_step(cursor, |k, v| { full.insert(k.to_vec(), *v); });
                if cursor == 0 { break; }
            }
            prop_assert_eq!(full, model);
        }
    }
}
