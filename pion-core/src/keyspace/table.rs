//! One slot's table of keys: the keys and their entries packed densely in one array,
//! found through a small index of positions.
//!
//! An open-addressing table that holds its 80-byte (key, entry) pairs in its buckets
//! pays for every empty bucket too: it doubles when seven eighths full, so between
//! growths a third of its memory on average is empty buckets. Here the buckets hold
//! 4-byte positions and the pairs sit in an array that grows by a quarter, in steps
//! the allocator's size classes fill exactly, so a key costs its pair plus a few
//! bytes. A lookup reads one more cache line (the position) than an inline table.
//! Removal moves the last pair into the hole, so the array stays dense and a slot's
//! keys are visited (by `SCAN`, `KEYS`, eviction sampling) in one contiguous walk.

use std::hash::BuildHasher;

use hashbrown::HashTable;

use super::key::StoredKey;
use super::shard::{Entry, SlotHasher};

/// A slot's keys and entries.
#[derive(Debug, Default)]
pub(crate) struct SlotTable {
    /// The pairs, in no particular order, with no holes.
    pairs: Vec<(StoredKey, Entry)>,
    /// Positions in `pairs`, hashed by their key.
    index: HashTable<u32>,
}

/// The fewest pairs the array grows by.
const MIN_GROWTH: usize = 4;

#[inline]
fn hash_of(key: &[u8]) -> u64 {
    SlotHasher.hash_one(key)
}

impl SlotTable {
    /// Number of keys.
    #[inline]
    pub fn len(&self) -> usize {
        self.pairs.len()
    }

    /// Whether the table holds no key.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// Where `key`'s pair is: a position [`SlotTable::at`] and [`SlotTable::at_mut`]
    /// take, valid until the table next changes.
    #[inline]
    pub fn position(&self, key: &[u8]) -> Option<usize> {
        let pairs = &self.pairs;
        self.index
            .find(hash_of(key), |&at| {
                pairs.get(at as usize).is_some_and(|(k, _)| k.is(key))
            })
            .map(|&at| at as usize)
    }

    /// The entry of `key`.
    #[inline]
    pub fn get(&self, key: &[u8]) -> Option<&Entry> {
        let at = self.position(key)?;
        self.pairs.get(at).map(|(_, e)| e)
    }

    /// The entry at a position [`SlotTable::position`] gave.
    #[inline]
    pub fn at(&self, position: usize) -> Option<&Entry> {
        self.pairs.get(position).map(|(_, e)| e)
    }

    /// The entry at a position [`SlotTable::position`] gave, for writing.
    #[inline]
    pub fn at_mut(&mut self, position: usize) -> Option<&mut Entry> {
        self.pairs.get_mut(position).map(|(_, e)| e)
    }

    /// The entry of `key`, for writing.
    #[inline]
    pub fn get_mut(&mut self, key: &[u8]) -> Option<&mut Entry> {
        let at = self.position(key)?;
        self.pairs.get_mut(at).map(|(_, e)| e)
    }

    /// Stores `entry` under `key`; returns the entry it replaced.
    pub fn insert(&mut self, key: StoredKey, entry: Entry) -> Option<Entry> {
        let hash = hash_of(key.as_slice());
        let SlotTable { pairs, index } = self;
        let found = index.find(hash, |&at| {
            pairs
                .get(at as usize)
                .is_some_and(|(k, _)| k.is(key.as_slice()))
        });
        if let Some(&at) = found {
            // `at` came from the index, which only holds positions of pairs.
            return Some(std::mem::replace(&mut pairs[at as usize].1, entry));
        }
        if pairs.len() == pairs.capacity() {
            pairs.reserve_exact(growth(pairs.len()));
        }
        // A slot never holds 2^32 keys (the whole keyspace would be 300 GiB of keys).
        let at = u32::try_from(pairs.len()).unwrap_or(u32::MAX);
        pairs.push((key, entry));
        index.insert_unique(hash, at, |&p| {
            pairs
                .get(p as usize)
                .map_or(0, |(k, _)| hash_of(k.as_slice()))
        });
        None
    }

    /// Removes `key`; returns its entry.
    pub fn remove(&mut self, key: &[u8]) -> Option<Entry> {
        let SlotTable { pairs, index } = self;
        let found = index
            .find_entry(hash_of(key), |&at| {
                pairs.get(at as usize).is_some_and(|(k, _)| k.is(key))
            })
            .ok()?;
        let (at, _) = found.remove();
        let at = at as usize;
        let last = pairs.len() - 1;
        if at != last {
            // The last pair moves into the hole: its position in the index follows.
            let moved = hash_of(pairs[last].0.as_slice());
            if let Some(p) = index.find_mut(moved, |&p| p as usize == last) {
                *p = at as u32;
            }
        }
        let (_, entry) = pairs.swap_remove(at);
        self.shrink_if_sparse();
        Some(entry)
    }

    /// Gives memory back once deletes have left most of it unused.
    fn shrink_if_sparse(&mut self) {
        let len = self.pairs.len();
        if self.pairs.capacity() > 2 * len + MIN_GROWTH {
            self.pairs.shrink_to(len + growth(len) / 2);
        }
        if self.index.capacity() > 4 * len + 16 {
            let pairs = &self.pairs;
            self.index.shrink_to(len, |&p| {
                pairs
                    .get(p as usize)
                    .map_or(0, |(k, _)| hash_of(k.as_slice()))
            });
        }
    }

    /// Every key and entry, in the table's order.
    #[inline]
    pub fn iter(&self) -> Pairs<'_> {
        self.pairs.iter().map(split)
    }

    /// Every entry, in the table's order.
    #[inline]
    pub fn values(&self) -> impl Iterator<Item = &Entry> {
        self.pairs.iter().map(|(_, e)| e)
    }

    /// Bytes the table holds beyond its keys' and entries' own heap parts.
    #[cfg(test)]
    fn footprint(&self) -> usize {
        self.pairs.capacity() * std::mem::size_of::<(StoredKey, Entry)>()
            + self.index.capacity() * 5
    }
}

/// The iterator over a table's keys and entries.
pub(crate) type Pairs<'a> = std::iter::Map<
    std::slice::Iter<'a, (StoredKey, Entry)>,
    fn(&'a (StoredKey, Entry)) -> (&'a StoredKey, &'a Entry),
>;

fn split(pair: &(StoredKey, Entry)) -> (&StoredKey, &Entry) {
    (&pair.0, &pair.1)
}

impl<'a> IntoIterator for &'a SlotTable {
    type Item = (&'a StoredKey, &'a Entry);
    type IntoIter = Pairs<'a>;

    fn into_iter(self) -> Pairs<'a> {
        self.iter()
    }
}

/// How many pairs to add to a full array of `len`: a quarter more, at least
/// [`MIN_GROWTH`], rounded up to fill the allocator's size class.
fn growth(len: usize) -> usize {
    let pair = std::mem::size_of::<(StoredKey, Entry)>();
    let want = len + (len / 4).max(MIN_GROWTH);
    let fits = crate::util::alloc::good_size(want * pair) / pair;
    fits.max(want) - len
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Value;
    use proptest::prelude::*;
    use std::collections::HashMap;

    fn entry(n: usize) -> Entry {
        Entry::new(Value::string(n.to_string().into_bytes()), 0)
    }

    fn number(e: &Entry) -> Option<usize> {
        match &e.value {
            Value::Str(s) => std::str::from_utf8(s.as_bytes()).ok()?.parse().ok(),
            _ => None,
        }
    }

    #[test]
    fn keys_are_found_replaced_and_removed() {
        let mut t = SlotTable::default();
        for i in 0..1000 {
            let key = format!("key:{i}");
            assert!(t
                .insert(StoredKey::from(key.as_bytes()), entry(i))
                .is_none());
        }
        assert_eq!(t.len(), 1000);
        let replaced = t.insert(StoredKey::from(&b"key:7"[..]), entry(7000));
        assert_eq!(replaced.as_ref().and_then(number), Some(7));
        assert_eq!(t.get(b"key:7").and_then(number), Some(7000));
        assert_eq!(t.len(), 1000);
        for i in (0..1000).step_by(2) {
            let key = format!("key:{i}");
            assert!(t.remove(key.as_bytes()).is_some(), "{key}");
            assert!(t.remove(key.as_bytes()).is_none(), "{key} twice");
        }
        for i in 0..1000 {
            let key = format!("key:{i}");
            let want = match i {
                _ if i % 2 == 0 => None,
                7 => Some(7000),
                _ => Some(i),
            };
            assert_eq!(t.get(key.as_bytes()).and_then(number), want, "{key}");
        }
        if let Some(e) = t.get_mut(b"key:9") {
            e.set_deadline(Some(5));
        }
        assert_eq!(t.get(b"key:9").and_then(|e| e.expire_at()), Some(5));
        let mut seen: Vec<usize> = t.iter().filter_map(|(_, e)| number(e)).collect();
        seen.sort_unstable();
        assert_eq!(seen.len(), 500);
    }

    #[test]
    fn the_array_stays_close_to_its_keys() {
        let mut t = SlotTable::default();
        let pair = std::mem::size_of::<(StoredKey, Entry)>();
        for i in 0..10_000 {
            t.insert(StoredKey::from(format!("k{i}").as_bytes()), entry(i));
            if i > 100 {
                // A quarter's growth plus the allocator's rounding; the index's
                // doubling on top.
                assert!(t.pairs.capacity() * 4 <= (t.len() + 1) * 5 + 4 * MIN_GROWTH);
                assert!(t.footprint() <= t.len() * (pair * 5 / 4 + 12) + 1024);
            }
        }
        for i in 0..9_990 {
            t.remove(format!("k{i}").as_bytes());
        }
        assert_eq!(t.len(), 10);
        assert!(t.footprint() < 64 * pair, "{} bytes left", t.footprint());
    }

    proptest! {
        /// Any sequence of inserts and removes leaves the table holding exactly what a
        /// map given the same sequence holds.
        #[test]
        fn matches_a_map(ops in proptest::collection::vec((any::<bool>(), 0u8..64, 0usize..1000), 1..400)) {
            let mut t = SlotTable::default();
            let mut model: HashMap<Vec<u8>, usize> = HashMap::new();
            for (insert, k, v) in ops {
                let key = format!("key-{k}").into_bytes();
                if insert {
                    let old = t.insert(StoredKey::from(key.as_slice()), entry(v));
                    prop_assert_eq!(old.as_ref().and_then(number), model.insert(key, v));
                } else {
                    let old = t.remove(&key);
                    prop_assert_eq!(old.as_ref().and_then(number), model.remove(&key));
                }
                prop_assert_eq!(t.len(), model.len());
            }
            for (k, v) in &model {
                prop_assert_eq!(t.get(k).and_then(number), Some(*v));
            }
            let listed: HashMap<Vec<u8>, usize> = t
                .iter()
                .filter_map(|(k, e)| Some((k.as_slice().to_vec(), number(e)?)))
                .collect();
            prop_assert_eq!(listed, model);
        }
    }
}
