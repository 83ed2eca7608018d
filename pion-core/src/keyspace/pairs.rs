//! A slot's pairs, densely: full chunks of two (128 bytes, one allocator size class
//! of its own), and the last pair in a 64-byte block of its own when the count is odd.
//!
//! The chunks are all one size on purpose. A per-slot array that grows by
//! reallocation moves every slot through the same run of size classes at about the
//! same time (keys hash evenly over the 16,384 slots), and the blocks each slot leaves
//! behind are scattered through pages that its neighbours still use: loading 400,000
//! small keys left RSS at 1.5 times what the arrays held. Blocks of a single size
//! class are reused by whichever slot next needs one, so RSS stays close to the data.
//!
//! A chunk that held a lone last pair was half empty in every slot with an odd count:
//! 32 bytes a slot on average, five bytes a key at 100,000 keys and 96 bytes a key
//! where a slot holds one key. The lone pair has a block of its own instead; the
//! price is that every second insert moves it into a new chunk (one 64-byte copy and
//! a free), and every second removal moves one back out.
//!
//! The store does not keep its count: its owner does (the index's length), and
//! passes it in. With `count` pairs, pair `i < 2 * (count / 2)` is in chunk `i / 2`
//! at `i % 2`, and pair `count - 1` is the lone one when `count` is odd.

use super::table::Pair;

/// Two pairs: 128 bytes.
pub(crate) type Chunk = [Pair; 2];

/// A slot's pairs.
#[derive(Debug, Default)]
pub(crate) struct PairStore {
    /// The full chunks first, then room: `chunks[..count / 2]` are `Some`. Its
    /// length is its capacity, doubled when full, so the store is 24 bytes with the
    /// lone pair's pointer. Each chunk is a block of its own (the point above).
    chunks: Box<[Option<Box<Chunk>>]>,
    /// The last pair, when the count is odd.
    lone: Option<Box<Pair>>,
}

impl PairStore {
    /// The pair at `position` of `count`.
    #[inline]
    pub fn get(&self, count: usize, position: usize) -> Option<&Pair> {
        if position >= count {
            return None;
        }
        if position < count & !1 {
            let chunk = self.chunks.get(position / 2)?.as_deref()?;
            return chunk.get(position % 2);
        }
        self.lone.as_deref()
    }

    /// The pair at `position` of `count`, for writing.
    #[inline]
    pub fn get_mut(&mut self, count: usize, position: usize) -> Option<&mut Pair> {
        if position >= count {
            return None;
        }
        if position < count & !1 {
            let chunk = self.chunks.get_mut(position / 2)?.as_deref_mut()?;
            return chunk.get_mut(position % 2);
        }
        self.lone.as_deref_mut()
    }

    /// Asks for the line a lookup reads first after the index: the chunks'
    /// pointers (in most slots one line holds them all), or the lone pair of a slot
    /// that has no chunk.
    #[inline]
    pub fn prefetch(&self) {
        match self.chunks.first() {
            Some(first) => kernels::prefetch_line(first),
            None => {
                if let Some(lone) = self.lone.as_deref() {
                    kernels::prefetch_line(lone);
                }
            }
        }
    }

    /// Appends `pair` as pair `count` (the store holds `count`).
    pub fn push(&mut self, count: usize, pair: Pair) {
        let Some(lone) = self.lone.take() else {
            self.lone = Some(Box::new(pair));
            return;
        };
        let at = count / 2;
        if at >= self.chunks.len() {
            self.resize((2 * self.chunks.len()).max(1));
        }
        if let Some(place) = self.chunks.get_mut(at) {
            *place = Some(Box::new([*lone, pair]));
        }
    }

    /// Takes out the last of `count` pairs (`count` ≥ 1).
    fn pop(&mut self, count: usize) -> Option<Pair> {
        if count % 2 == 1 {
            return self.lone.take().map(|p| *p);
        }
        let chunk = self.chunks.get_mut(count / 2 - 1)?.take()?;
        let [first, last] = *chunk;
        self.lone = Some(Box::new(first));
        Some(last)
    }

    /// Removes pair `position` of `count`; the last pair takes its place. Returns
    /// the removed pair.
    pub fn swap_remove(&mut self, count: usize, position: usize) -> Option<Pair> {
        if position >= count {
            return None;
        }
        let last = self.pop(count)?;
        let removed = match self.get_mut(count - 1, position) {
            Some(place) => std::mem::replace(place, last),
            None => last,
        };
        // Give back the room of a store that shrank to a quarter, or to no chunk.
        let full = (count - 1) / 2;
        if self.chunks.len() > 4 * full || (full == 0 && !self.chunks.is_empty()) {
            self.resize(2 * full);
        }
        Some(removed)
    }

    /// Moves the chunks into room for `capacity` of them (at least the full ones).
    fn resize(&mut self, capacity: usize) {
        let mut chunks: Vec<Option<Box<Chunk>>> = Vec::with_capacity(capacity);
        chunks.extend(self.chunks.iter_mut().filter_map(Option::take).map(Some));
        chunks.resize_with(capacity.max(chunks.len()), || None);
        self.chunks = chunks.into_boxed_slice();
    }

    /// Bytes the store's own blocks take (chunks, their pointers, the lone pair).
    #[cfg(test)]
    pub fn footprint(&self) -> usize {
        let full = self.chunks.iter().filter(|c| c.is_some()).count();
        full * std::mem::size_of::<Chunk>()
            + self.chunks.len() * std::mem::size_of::<Option<Box<Chunk>>>()
            + self
                .lone
                .as_ref()
                .map_or(0, |_| std::mem::size_of::<Pair>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keyspace::key::StoredKey;
    use crate::keyspace::Entry;
    use crate::value::Value;

    fn pair(n: usize) -> Pair {
        (
            StoredKey::from(format!("k{n}").as_bytes()),
            Entry::new(Value::string(n.to_string().into_bytes()), 0),
        )
    }

    fn key(p: Option<&Pair>) -> Option<Vec<u8>> {
        p.map(|(k, _)| k.as_slice().to_vec())
    }

    #[test]
    fn a_lone_last_pair_has_a_block_of_its_own() {
        assert_eq!(std::mem::size_of::<PairStore>(), 24);
        assert_eq!(std::mem::size_of::<Chunk>(), 128);
        let mut s = PairStore::default();
        let mut count = 0;
        for n in 0..9 {
            s.push(count, pair(n));
            count += 1;
            // Full chunks, pointers for a power of two of them, and the lone pair.
            let chunks = count / 2;
            let room = if chunks == 0 {
                0
            } else {
                chunks.next_power_of_two()
            };
            assert_eq!(s.footprint(), chunks * 128 + room * 8 + (count % 2) * 64);
        }
        for n in 0..9 {
            assert_eq!(key(s.get(count, n)), Some(format!("k{n}").into_bytes()));
        }
        assert!(s.get(count, 9).is_none());
        // Removing moves the last pair into the hole, from the lone block or a chunk.
        let removed = s.swap_remove(count, 2);
        count -= 1;
        assert_eq!(key(removed.as_ref()), Some(b"k2".to_vec()));
        assert_eq!(key(s.get(count, 2)), Some(b"k8".to_vec()));
        let removed = s.swap_remove(count, 0);
        count -= 1;
        assert_eq!(key(removed.as_ref()), Some(b"k0".to_vec()));
        assert_eq!(key(s.get(count, 0)), Some(b"k7".to_vec()));
        assert_eq!(key(s.get(count, 6)), Some(b"k6".to_vec()));
        while count > 0 {
            assert!(s.swap_remove(count, count - 1).is_some());
            count -= 1;
        }
        assert_eq!(s.footprint(), 0);
        assert!(s.swap_remove(0, 0).is_none());
    }
}
