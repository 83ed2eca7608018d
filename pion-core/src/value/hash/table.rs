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
//!
//! It is also small: an element is one heap block holding key and value, and a chain
//! is a boxed slice of exactly its length, so a 1,000-field hash of short fields costs
//! about 60 bytes a field (Redis's dict, 72) where vectors of `(Vec, Vec)` pairs, each
//! bucket grown to four slots, cost 160.

use std::fmt;

use rand::Rng;

use crate::value::packed::{debug_pairs, put_varint, read_varint, varint_len};
use crate::value::sampled_size;

/// Smallest number of buckets of a non-empty table.
const MIN_BUCKETS: usize = 4;

/// Random picks fall back to an O(n) walk after this many empty probes, so a
/// pathological chain layout can slow a pick down but never stall it.
const MAX_PROBES: usize = 256;

/// One element in one heap block: `len(key) key value`, the length a LEB128 varint.
/// (A pair of vectors cost 48 bytes of headers and two blocks.)
type Element = Box<[u8]>;

/// A bucket's chain, allocated to its exact length (an empty one allocates nothing).
type Chain = Box<[Element]>;

fn element(key: &[u8], value: &[u8]) -> Element {
    let mut e = Vec::with_capacity(varint_len(key.len()) + key.len() + value.len());
    put_varint(&mut e, key.len());
    e.extend_from_slice(key);
    e.extend_from_slice(value);
    e.into_boxed_slice()
}

/// An element's key and value.
fn split(e: &[u8]) -> (&[u8], &[u8]) {
    let (len, header) = read_varint(e, 0);
    e[header..].split_at(len)
}

fn key_of(e: &[u8]) -> &[u8] {
    split(e).0
}

/// Appends `e` to `chain`, growing it by exactly one slot.
fn push(chain: &mut Chain, e: Element) {
    let mut v = std::mem::take(chain).into_vec();
    v.reserve_exact(1);
    v.push(e);
    *chain = v.into_boxed_slice();
}

/// A hash table from byte-string keys to byte-string values (empty for a set's
/// members) with a scan cursor and fair random picks.
#[derive(Clone)]
pub struct ScanTable {
    /// A boxed slice, so the array is exactly its buckets (see `resize`).
    buckets: Box<[Chain]>,
    len: usize,
    /// Upper bound on the length of any chain (exact after a resize, grows on insert).
    longest: usize,
    hasher: ahash::RandomState,
}

impl Default for ScanTable {
    fn default() -> Self {
        ScanTable::new()
    }
}

impl fmt::Debug for ScanTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        debug_pairs(f, self.iter())
    }
}

impl PartialEq for ScanTable {
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len && self.iter().all(|(k, v)| other.get(k) == Some(v))
    }
}

impl ScanTable {
    /// An empty table.
    pub fn new() -> ScanTable {
        ScanTable::with_capacity(0)
    }

    /// An empty table with room for `n` elements before it grows.
    pub fn with_capacity(n: usize) -> ScanTable {
        let size = n.next_power_of_two().max(MIN_BUCKETS);
        ScanTable {
            buckets: (0..size).map(|_| Chain::default()).collect(),
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

    /// Where `key` sits: its bucket, and its position in the chain if present.
    fn find(&self, key: &[u8]) -> (usize, Option<usize>) {
        let b = self.bucket_of(key);
        (b, self.buckets[b].iter().position(|e| key_of(e) == key))
    }

    /// The value stored under `key`.
    pub fn get(&self, key: &[u8]) -> Option<&[u8]> {
        let (b, at) = self.find(key);
        at.map(|j| split(&self.buckets[b][j]).1)
    }

    /// Whether `key` is present.
    pub fn contains(&self, key: &[u8]) -> bool {
        self.find(key).1.is_some()
    }

    /// Stores `value` under `key`; true when the key is new (false: its value was
    /// replaced).
    pub fn insert(&mut self, key: &[u8], value: &[u8]) -> bool {
        let (b, at) = self.find(key);
        let e = element(key, value);
        if let Some(j) = at {
            self.buckets[b][j] = e;
            return false;
        }
        push(&mut self.buckets[b], e);
        self.longest = self.longest.max(self.buckets[b].len());
        self.len += 1;
        if self.len > self.buckets.len() {
            self.resize(self.buckets.len() * 2);
        }
        true
    }

    /// Removes `key`; returns its value if it was present.
    pub fn remove(&mut self, key: &[u8]) -> Option<Vec<u8>> {
        let (b, at) = self.find(key);
        let mut chain = std::mem::take(&mut self.buckets[b]).into_vec();
        let removed = at.map(|j| chain.swap_remove(j));
        self.buckets[b] = chain.into_boxed_slice();
        let value = split(&removed?).1.to_vec();
        self.len -= 1;
        if self.buckets.len() > MIN_BUCKETS && self.len * 10 < self.buckets.len() {
            self.resize(self.len.next_power_of_two().max(MIN_BUCKETS));
        }
        Some(value)
    }

    fn resize(&mut self, size: usize) {
        let old = std::mem::take(&mut self.buckets);
        let mask = size as u64 - 1;
        let mut chains: Vec<Vec<Element>> = (0..size).map(|_| Vec::new()).collect();
        for e in old.into_vec().into_iter().flat_map(|c| c.into_vec()) {
            let b = (self.hasher.hash_one(key_of(&e)) & mask) as usize;
            chains[b].push(e);
        }
        self.longest = chains.iter().map(Vec::len).max().unwrap_or(0);
        // A fresh array of exactly `size` chains. Collecting `chains` straight into
        // the new array would reuse its block (24-byte vectors, where a chain is 16
        // bytes) and keep half as much again as the buckets need: 6 KiB for a set of
        // 200 members instead of 4.
        let mut buckets = Vec::with_capacity(size);
        buckets.extend(chains.into_iter().map(Vec::into_boxed_slice));
        self.buckets = buckets.into_boxed_slice();
    }

    /// Every element, in bucket order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> + '_ {
        self.buckets.iter().flat_map(|c| c.iter()).map(|e| split(e))
    }

    /// Visits the bucket that `cursor` names and returns the next cursor, 0 when the
    /// whole table has been walked (see the module documentation for the guarantee).
    pub fn scan_step(&self, cursor: u64, mut visit: impl FnMut(&[u8], &[u8])) -> u64 {
        let mask = self.mask();
        for e in self.buckets[(cursor & mask) as usize].iter() {
            let (k, v) = split(e);
            visit(k, v);
        }
        // Set the bits above the mask so the increment carries into the next bucket of
        // the bit-reversed order.
        let c = cursor | !mask;
        c.reverse_bits().wrapping_add(1).reverse_bits()
    }

    /// A uniformly chosen element, or `None` when empty.
    pub fn random(&self, rng: &mut impl Rng) -> Option<(&[u8], &[u8])> {
        if self.len == 0 {
            return None;
        }
        for _ in 0..MAX_PROBES {
            let b = rng.gen_range(0..self.buckets.len());
            let j = rng.gen_range(0..self.longest.max(1));
            if let Some(e) = self.buckets[b].get(j) {
                return Some(split(e));
            }
        }
        self.iter().nth(rng.gen_range(0..self.len))
    }

    /// Heap bytes, the elements' extrapolated from the first `samples` of them (it is
    /// called on every write, so it never walks a large table).
    pub fn mem_usage(&self, samples: usize) -> usize {
        let slot = std::mem::size_of::<Element>();
        std::mem::size_of::<Chain>() * self.buckets.len()
            + sampled_size(
                self.buckets.iter().flat_map(|c| c.iter()).map(|e| e.len()),
                self.len,
                slot,
                samples,
            )
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

    fn val(i: u32) -> Vec<u8> {
        format!("value {i}").into_bytes()
    }

    #[test]
    fn grows_and_shrinks() {
        let mut t = ScanTable::new();
        for i in 0..1000 {
            assert!(t.insert(&key(i), &val(i)));
        }
        assert!(!t.insert(&key(7), &val(70)));
        assert_eq!(t.len(), 1000);
        assert!(t.buckets.len() >= 1000);
        for i in 0..995 {
            assert_eq!(t.remove(&key(i)), Some(val(if i == 7 { 70 } else { i })));
        }
        assert_eq!(t.len(), 5);
        assert!(t.buckets.len() <= 64);
        assert_eq!(t.get(&key(999)), Some(&val(999)[..]));
        assert_eq!(t.remove(b"missing"), None);
    }

    #[test]
    fn scan_survives_resizes() {
        let mut t = ScanTable::new();
        for i in 0..100 {
            t.insert(&key(i), b"");
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
                    t.insert(&key(i), b"");
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
            t.insert(&key(i), &[i as u8]);
        }
        let mut rng = rand::rngs::SmallRng::seed_from_u64(7);
        let mut hist = [0u32; 10];
        for _ in 0..100_000 {
            let (_, v) = t.random(&mut rng).expect("non-empty");
            hist[usize::from(v[0])] += 1;
        }
        for h in hist {
            assert!((9_000..11_000).contains(&h), "{hist:?}");
        }
        assert!(ScanTable::new().random(&mut rng).is_none());
    }

    proptest! {
        #[test]
        fn behaves_like_a_map(ops in proptest::collection::vec((any::<bool>(), 0u8..64, any::<u8>()), 0..400)) {
            let mut t = ScanTable::new();
            let mut model = HashMap::new();
            for (ins, k, v) in ops {
                let k = vec![k];
                // Values of every length, so elements span several varint widths.
                let v = vec![v; usize::from(v)];
                if ins {
                    prop_assert_eq!(t.insert(&k, &v), model.insert(k.clone(), v).is_none());
                } else {
                    prop_assert_eq!(t.remove(&k), model.remove(&k));
                }
                for (mk, mv) in &model {
                    prop_assert_eq!(t.get(mk), Some(&mv[..]));
                }
                prop_assert_eq!(t.len(), model.len());
            }
            let mut full = HashMap::new();
            let mut cursor = 0;
            loop {
                cursor = t.scan_step(cursor, |k, v| { full.insert(k.to_vec(), v.to_vec()); });
                if cursor == 0 { break; }
            }
            prop_assert_eq!(full, model);
        }
    }
}
