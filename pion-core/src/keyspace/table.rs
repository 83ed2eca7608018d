//! One slot's table of keys: the keys and their entries packed densely in blocks of
//! fixed sizes (`pairs.rs`), found through a small index of positions.
//!
//! An open-addressing table that holds its 64-byte (key, entry) pairs in its buckets
//! pays for every empty bucket too: it doubles when seven eighths full, so between
//! growths a third of its memory on average is empty buckets. Here the index holds
//! positions (a tag byte in small slots, 2 bytes in all but huge ones:
//! `positions.rs`) and the pairs sit in chunks of two, so a key costs its pair plus
//! a few bytes.
//!
//! A lookup reads one more cache line (the position) than an inline table. Removal
//! moves the last pair into the hole, so the pairs stay dense and a slot's keys are
//! visited (by `SCAN`, `KEYS`, eviction sampling) in one walk.

use std::hash::BuildHasher;

use super::expiry::{DeadlineSummary, ExpiryBudget};
use super::key::StoredKey;
use super::pairs::PairStore;
use super::positions::Positions;
use super::shard::{Entry, SlotHasher};

/// A key and its entry.
pub(crate) type Pair = (StoredKey, Entry);

/// A slot's keys and entries.
#[derive(Debug, Default)]
pub(crate) struct SlotTable {
    /// The pairs, in no particular order, with no holes: one at every position
    /// below the index's length.
    pairs: PairStore,
    /// Positions of the pairs, hashed by their key; its length is the number of
    /// pairs.
    index: Positions,
    /// The keys' deadlines, summarised for active expiry.
    deadlines: DeadlineSummary,
}

#[inline]
fn hash_of(key: &[u8]) -> u64 {
    SlotHasher.hash_one(key)
}

impl SlotTable {
    /// Number of keys.
    #[inline]
    pub fn len(&self) -> usize {
        self.index.len()
    }

    /// Whether the table holds no key.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The pair at `position`.
    #[inline]
    fn pair(&self, position: usize) -> Option<&Pair> {
        self.pairs.get(self.len(), position)
    }

    /// The pair at `position`, for writing.
    #[inline]
    fn pair_mut(&mut self, position: usize) -> Option<&mut Pair> {
        let count = self.len();
        self.pairs.get_mut(count, position)
    }

    /// Where `key`'s pair is: a position [`SlotTable::at`] and [`SlotTable::at_mut`]
    /// take, valid until the table next changes.
    #[inline]
    pub fn position(&self, key: &[u8]) -> Option<usize> {
        // The pairs' first line is read right after the index: ask for it now, so that
        // its miss overlaps the index's instead of following it.
        self.pairs.prefetch();
        self.index.find(hash_of(key), |at| {
            self.pair(at).is_some_and(|(k, _)| k.is(key))
        })
    }

    /// The entry of `key`.
    #[cfg(test)]
    pub fn get(&self, key: &[u8]) -> Option<&Entry> {
        self.at(self.position(key)?)
    }

    /// The entry at a position [`SlotTable::position`] gave.
    #[inline]
    pub fn at(&self, position: usize) -> Option<&Entry> {
        self.pair(position).map(|(_, e)| e)
    }

    /// The key at a position [`SlotTable::position`] gave.
    #[inline]
    pub fn key_at(&self, position: usize) -> Option<&StoredKey> {
        self.pair(position).map(|(k, _)| k)
    }

    /// Sets (or clears) the deadline of the key at `position`; returns the old one.
    /// The key's bytes, and so its place in the index, stay as they are.
    pub fn set_deadline(&mut self, position: usize, at: Option<i64>) -> Option<i64> {
        let (key, _) = self.pair_mut(position)?;
        let old = key.deadline();
        if old != at {
            key.set_deadline(at);
            self.deadlines.changed(old, at);
        }
        old
    }

    /// How many keys have a deadline.
    #[inline]
    pub fn volatile(&self) -> usize {
        self.deadlines.volatile()
    }

    /// The entry at a position [`SlotTable::position`] gave, for writing.
    #[inline]
    pub fn at_mut(&mut self, position: usize) -> Option<&mut Entry> {
        self.pair_mut(position).map(|(_, e)| e)
    }

    /// The entry of `key`, for writing.
    #[inline]
    pub fn get_mut(&mut self, key: &[u8]) -> Option<&mut Entry> {
        let at = self.position(key)?;
        self.at_mut(at)
    }

    /// Stores `entry` under `key` (with the key's deadline); returns the pair it
    /// replaced.
    pub fn insert(&mut self, key: StoredKey, entry: Entry) -> Option<Pair> {
        let hash = hash_of(key.as_slice());
        let found = self.index.find(hash, |at| {
            self.pair(at).is_some_and(|(k, _)| k.is(key.as_slice()))
        });
        let deadline = key.deadline();
        if let Some(at) = found {
            let replaced = self
                .pair_mut(at)
                .map(|place| std::mem::replace(place, (key, entry)));
            let old = replaced.as_ref().and_then(|(k, _)| k.deadline());
            self.deadlines.changed(old, deadline);
            return replaced;
        }
        self.deadlines.changed(None, deadline);
        let at = self.len();
        let SlotTable { pairs, index, .. } = self;
        pairs.push(at, (key, entry));
        // The index grows with the pair in place: `at + 1` pairs.
        index.insert(hash, at, |p| rehash(pairs, at + 1, p));
        None
    }

    /// Removes `key`; returns its pair.
    pub fn remove(&mut self, key: &[u8]) -> Option<Pair> {
        let count = self.len();
        let SlotTable { pairs, index, .. } = self;
        let at = index.remove(hash_of(key), |at| {
            pairs.get(count, at).is_some_and(|(k, _)| k.is(key))
        })?;
        self.detach(at)
    }

    /// Removes the pair at `position`.
    fn remove_at(&mut self, position: usize) -> Option<Pair> {
        let count = self.len();
        let SlotTable { pairs, index, .. } = self;
        let at = index.remove(rehash(pairs, count, position), |at| at == position)?;
        self.detach(at)
    }

    /// Takes the pair at `at`, whose position has just left the index, out of the
    /// store: the last pair moves into its place.
    fn detach(&mut self, at: usize) -> Option<Pair> {
        let SlotTable { pairs, index, .. } = self;
        // The index holds one position fewer already: the last pair's.
        let last = index.len();
        if at != last {
            // The last pair moves into the hole: its position in the index follows.
            index.moved(|| rehash(pairs, last + 1, last), last, at);
        }
        let removed = pairs.swap_remove(last + 1, at);
        self.shrink_if_sparse();
        if let Some((key, _)) = &removed {
            self.deadlines.changed(key.deadline(), None);
        }
        removed
    }

    /// Whether a key may be due at `now_ms` (a walk with [`SlotTable::take_due`]
    /// finds out).
    #[inline]
    pub fn may_expire(&self, now_ms: i64) -> bool {
        self.deadlines.may_be_due(now_ms)
    }

    /// Moves the pairs whose deadline is at or before `now_ms` into `out`, looking at
    /// keys from the last one down while `budget` lasts. Returns whether it looked at
    /// every key (then the slot's bound is the earliest deadline left).
    pub fn take_due(
        &mut self,
        now_ms: i64,
        budget: &mut ExpiryBudget,
        out: &mut Vec<Pair>,
    ) -> bool {
        let mut earliest = i64::MAX;
        let mut at = self.len();
        while at > 0 {
            if budget.spent() {
                return false;
            }
            at -= 1;
            budget.look -= 1;
            match self.key_at(at).and_then(StoredKey::deadline) {
                Some(deadline) if deadline <= now_ms => {
                    // The last pair moves into `at`: it was looked at already.
                    if let Some(pair) = self.remove_at(at) {
                        out.push(pair);
                        budget.remove -= 1;
                    }
                }
                Some(deadline) => earliest = earliest.min(deadline),
                None => {}
            }
        }
        self.deadlines.walked(earliest);
        true
    }

    /// Gives memory back once deletes have left most of it unused.
    fn shrink_if_sparse(&mut self) {
        let len = self.len();
        if self.index.capacity() > 4 * len + 16 {
            let SlotTable { pairs, index, .. } = self;
            index.shrink_to(len, |p| rehash(pairs, len, p));
        }
    }

    /// Every key and entry, in the table's order.
    #[inline]
    pub fn iter(&self) -> Pairs<'_> {
        Pairs {
            pairs: &self.pairs,
            next: 0,
            len: self.len(),
        }
    }

    /// Every entry, in the table's order.
    #[inline]
    pub fn values(&self) -> impl Iterator<Item = &Entry> {
        self.iter().map(|(_, e)| e)
    }

    /// Bytes the table holds beyond its keys' and entries' own heap parts.
    #[cfg(test)]
    fn footprint(&self) -> usize {
        self.pairs.footprint() + self.index.bytes()
    }
}

/// The hash of the key at `position` of `count` pairs, as the index needs it when
/// it grows.
fn rehash(pairs: &PairStore, count: usize, position: usize) -> u64 {
    pairs
        .get(count, position)
        .map_or(0, |(k, _)| hash_of(k.as_slice()))
}

/// The iterator over a table's keys and entries.
pub(crate) struct Pairs<'a> {
    pairs: &'a PairStore,
    next: usize,
    len: usize,
}

impl<'a> Iterator for Pairs<'a> {
    type Item = (&'a StoredKey, &'a Entry);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        if self.next >= self.len {
            return None;
        }
        let pair = self.pairs.get(self.len, self.next)?;
        self.next += 1;
        Some((&pair.0, &pair.1))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = self.len.saturating_sub(self.next);
        (left, Some(left))
    }
}

impl ExactSizeIterator for Pairs<'_> {}

impl<'a> IntoIterator for &'a SlotTable {
    type Item = (&'a StoredKey, &'a Entry);
    type IntoIter = Pairs<'a>;

    fn into_iter(self) -> Pairs<'a> {
        self.iter()
    }
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
        assert_eq!(replaced.as_ref().and_then(|(_, e)| number(e)), Some(7));
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
        let at = t.position(b"key:9").expect("present");
        assert_eq!(t.set_deadline(at, Some(5)), None);
        assert_eq!(t.position(b"key:9"), Some(at));
        assert_eq!(t.key_at(at).and_then(StoredKey::deadline), Some(5));
        assert_eq!(t.get(b"key:9").and_then(number), Some(9));
        assert_eq!(t.set_deadline(at, None), Some(5));
        assert_eq!(t.key_at(at).and_then(StoredKey::deadline), None);
        let mut seen: Vec<usize> = t.iter().filter_map(|(_, e)| number(e)).collect();
        seen.sort_unstable();
        assert_eq!(seen.len(), 500);
    }

    #[test]
    fn a_slot_past_65536_keys_widens_its_positions() {
        let mut t = SlotTable::default();
        let n = 70_000;
        let key = |i: usize| format!("k{i}");
        for i in 0..n {
            t.insert(StoredKey::from(key(i).as_bytes()), entry(i));
            if i == 65_535 {
                assert!(matches!(t.index, Positions::Narrow(_)), "at {i}");
            }
        }
        assert!(matches!(t.index, Positions::Wide(_)));
        for i in (0..n).step_by(7) {
            assert_eq!(t.get(key(i).as_bytes()).and_then(number), Some(i), "{i}");
        }
        // Removing from the front moves pairs from past 65,536 into low positions.
        for i in 0..n / 2 {
            assert!(t.remove(key(i).as_bytes()).is_some(), "{i}");
        }
        assert_eq!(t.len(), n - n / 2);
        for i in 0..n {
            let want = (i >= n / 2).then_some(i);
            assert_eq!(t.get(key(i).as_bytes()).and_then(number), want, "{i}");
        }
    }

    #[test]
    fn a_pair_is_a_size_class_and_a_table_stays_small() {
        // One pair is 64 bytes, two 128: both size classes of their own.
        assert_eq!(std::mem::size_of::<Pair>(), 64);
        // Every slot that holds a key has a table: with 16,384 of them a byte here is
        // a byte a key at 16,384 keys, and 0.16 of one at 100,000.
        assert!(std::mem::size_of::<SlotTable>() <= 80);
    }

    #[test]
    fn the_blocks_stay_close_to_their_keys() {
        let mut t = SlotTable::default();
        let pair = std::mem::size_of::<Pair>();
        for i in 0..10_000 {
            t.insert(StoredKey::from(format!("k{i}").as_bytes()), entry(i));
            // No pair's room is empty: the pairs, their chunks' pointers (doubling)
            // and the index (doubling), or tags for the first 64.
            assert!(t.footprint() <= t.len() * (pair + 24) + 64, "{i}");
        }
        for i in 0..9_990 {
            t.remove(format!("k{i}").as_bytes());
            assert!(t.footprint() <= t.len() * (pair + 48) + 1024, "{i}");
        }
        assert_eq!(t.len(), 10);
        assert!(t.footprint() < 16 * pair, "{} bytes left", t.footprint());
        for i in 9_990..10_000 {
            assert_eq!(t.get(format!("k{i}").as_bytes()).and_then(number), Some(i));
        }
    }

    #[test]
    fn a_walk_takes_the_due_keys_and_tightens_the_bound() {
        let mut t = SlotTable::default();
        for i in 0..40 {
            t.insert(StoredKey::from(format!("k{i}").as_bytes()), entry(i));
            // Every third key has a deadline: 0, 30, 60, …
            if i % 3 == 0 {
                let at = t.position(format!("k{i}").as_bytes()).expect("just put");
                t.set_deadline(at, Some(i as i64 * 10));
            }
        }
        assert_eq!(t.volatile(), 14);
        assert!(t.may_expire(0) && !t.may_expire(-1));
        // A budget too small to look at every key stops early and keeps the bound.
        let mut out = Vec::new();
        let mut short = ExpiryBudget {
            look: 10,
            remove: 100,
        };
        assert!(!t.take_due(150, &mut short, &mut out));
        assert_eq!(short.look, 0);
        let mut budget = ExpiryBudget::removing(100);
        assert!(t.take_due(150, &mut budget, &mut out));
        let mut taken: Vec<usize> = out.iter().filter_map(|(_, e)| number(e)).collect();
        taken.sort_unstable();
        assert_eq!(taken, [0, 3, 6, 9, 12, 15]);
        assert_eq!(t.len(), 34);
        assert_eq!(t.volatile(), 8);
        // The bound is now the earliest deadline left, 180.
        assert!(!t.may_expire(179) && t.may_expire(180));
        for (k, e) in &t {
            assert_eq!(t.get(k.as_slice()).and_then(number), number(e), "{k:?}");
        }
        // The removal budget stops a walk too.
        out.clear();
        let mut two = ExpiryBudget {
            look: 1000,
            remove: 2,
        };
        assert!(!t.take_due(i64::MAX, &mut two, &mut out));
        assert_eq!(out.len(), 2);
        assert_eq!(t.volatile(), 6);
    }

    proptest! {
        /// Any sequence of inserts and removes leaves the table holding exactly what a
        /// map given the same sequence holds.
        #[test]
        fn matches_a_map(ops in proptest::collection::vec((any::<bool>(), 0u8..160, 0usize..1000), 1..800)) {
            let mut t = SlotTable::default();
            let mut model: HashMap<Vec<u8>, usize> = HashMap::new();
            for (insert, k, v) in ops {
                let key = format!("key-{k}").into_bytes();
                if insert {
                    let old = t.insert(StoredKey::from(key.as_slice()), entry(v));
                    prop_assert_eq!(old.as_ref().and_then(|(_, e)| number(e)), model.insert(key, v));
                } else {
                    let old = t.remove(&key);
                    prop_assert_eq!(old.as_ref().and_then(|(_, e)| number(e)), model.remove(&key));
                }
                prop_assert_eq!(t.len(), model.len());
                prop_assert_eq!(t.iter().count(), model.len());
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
