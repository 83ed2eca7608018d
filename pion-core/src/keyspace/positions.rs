//! A slot table's index: the positions of its pairs, hashed by their keys.
//!
//! A slot of up to [`TAGS_MAX`] keys (every slot until the keyspace passes about a
//! million keys) needs no hash table: it keeps one byte of each key's hash, in the
//! pairs' own order, and a lookup compares the bytes eight at a time and the keys
//! whose byte matches (a wrong match is one in 256). That is one byte a key where a
//! hash table costs three to seven with its empty buckets, and no table block
//! (40–112 bytes a slot): at 100,000 keys, six a slot, about six bytes a key. Up to
//! [`INLINE_TAGS`] tags sit in the index itself, in the room a hash table's header
//! takes, so a small slot's index has no block at all. Removal mirrors the pairs'
//! own (the last moves into the hole). A slot that grows past [`TAGS_MAX`] keys
//! moves to a hash table, and back to tags in place once it shrinks to 19.
//!
//! Nearly every slot holds far fewer than 65,536 keys (a billion keys spread over
//! the 16,384 slots is 61,000 a slot), so positions are kept as `u16`: a bucket is
//! then three bytes (the position and hashbrown's control byte) instead of five,
//! which is about three bytes a key at the index's usual load. A slot that grows past
//! `u16` positions moves to `u32` ones, once, and stays there.

use hashbrown::HashTable;

/// Positions of a table's pairs, hashed by their keys. The caller supplies each
/// position's hash (`rehash`) when the index grows, and the test of a position's key
/// (`is_key`) when it looks one up.
#[derive(Debug)]
pub(crate) enum Positions {
    /// At most [`INLINE_TAGS`] positions, their tags held in place: a lookup in a
    /// small slot reads no block for its index at all.
    Inline {
        /// Number of positions.
        len: u8,
        /// The tag of position `i`'s key at `i`, for `i < len`.
        tags: [u8; INLINE_TAGS],
    },
    /// At most [`TAGS_MAX`] positions: the tag of position `i`'s key at `i`.
    Tags(Vec<u8>),
    /// Every position is below 65,536.
    Narrow(HashTable<u16>),
    /// Some position was not.
    Wide(HashTable<u32>),
}

/// Most keys a slot indexes by tags alone. At 64 a lookup reads eight words of tags
/// and, for a missing key, finds a wrong match one time in four.
pub(crate) const TAGS_MAX: usize = 64;

/// Most tags held in place: as many as fit beside the count in the room the hash
/// tables need anyway (the index stays 40 bytes).
pub(crate) const INLINE_TAGS: usize = 38;

impl Default for Positions {
    fn default() -> Self {
        Positions::Inline {
            len: 0,
            tags: [0; INLINE_TAGS],
        }
    }
}

/// Tags held in place for the first `len` positions (`len` ≤ [`INLINE_TAGS`]).
fn inline_tags(tags: &[u8]) -> Positions {
    let mut inline = [0; INLINE_TAGS];
    let len = tags.len().min(INLINE_TAGS);
    inline[..len].copy_from_slice(&tags[..len]);
    Positions::Inline {
        len: len as u8,
        tags: inline,
    }
}

/// The byte of a key's hash kept as its tag (the top byte: hashbrown uses the low
/// bits for the bucket, so the two stay independent after a move to a table).
#[inline]
fn tag_of(hash: u64) -> u8 {
    (hash >> 56) as u8
}

/// Calls `found` with each position whose tag is `tag`, lowest first, until it
/// returns true; returns that position.
#[inline]
fn find_tag(tags: &[u8], tag: u8, found: impl Fn(usize) -> bool) -> Option<usize> {
    let pattern = u64::from(tag) * 0x0101_0101_0101_0101;
    let words = tags.chunks_exact(8);
    let tail = words.remainder();
    for (word_at, bytes) in words.enumerate() {
        let mut word = [0u8; 8];
        word.copy_from_slice(bytes);
        let mut hits = zero_bytes(u64::from_le_bytes(word) ^ pattern);
        while hits != 0 {
            let at = word_at * 8 + (hits.trailing_zeros() / 8) as usize;
            if found(at) {
                return Some(at);
            }
            hits &= hits - 1;
        }
    }
    let base = tags.len() - tail.len();
    for (i, &t) in tail.iter().enumerate() {
        if t == tag && found(base + i) {
            return Some(base + i);
        }
    }
    None
}

/// The top bit of each byte of `x` that is zero, exactly: no carry crosses a byte,
/// since (x & 0x7f) + 0x7f ≤ 0xfe.
#[inline]
fn zero_bytes(x: u64) -> u64 {
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    !(((x & LOW7).wrapping_add(LOW7)) | x | LOW7)
}

impl Positions {
    /// The position whose key has `hash` and passes `is_key`.
    #[inline]
    pub fn find(&self, hash: u64, is_key: impl Fn(usize) -> bool) -> Option<usize> {
        match self {
            Positions::Inline { len, tags } => {
                find_tag(&tags[..usize::from(*len)], tag_of(hash), is_key)
            }
            Positions::Tags(tags) => find_tag(tags, tag_of(hash), is_key),
            Positions::Narrow(t) => t
                .find(hash, |&p| is_key(usize::from(p)))
                .map(|&p| usize::from(p)),
            Positions::Wide(t) => t.find(hash, |&p| is_key(p as usize)).map(|&p| p as usize),
        }
    }

    /// Adds `position` (not present) for a key with `hash`. Positions are added in
    /// order: `position` is the number already held.
    pub fn insert(&mut self, hash: u64, position: usize, rehash: impl Fn(usize) -> u64) {
        if let Positions::Inline { len, tags } = self {
            let n = usize::from(*len);
            debug_assert_eq!(position, n, "positions arrive in order");
            if n < INLINE_TAGS {
                tags[n] = tag_of(hash);
                *len += 1;
                return;
            }
            // Room for every tag up to a table, in one block.
            let mut heap = Vec::with_capacity(TAGS_MAX);
            heap.extend_from_slice(&tags[..n]);
            *self = Positions::Tags(heap);
        }
        if let Positions::Tags(tags) = self {
            debug_assert_eq!(position, tags.len(), "positions arrive in order");
            if tags.len() < TAGS_MAX {
                tags.push(tag_of(hash));
                return;
            }
            let mut table = HashTable::with_capacity(2 * TAGS_MAX);
            for p in 0..tags.len() {
                // Below TAGS_MAX: fits a u16.
                table.insert_unique(rehash(p), p as u16, |&q| rehash(usize::from(q)));
            }
            *self = Positions::Narrow(table);
        }
        if let Positions::Narrow(t) = self {
            match u16::try_from(position) {
                Ok(p) => {
                    t.insert_unique(hash, p, |&p| rehash(usize::from(p)));
                    return;
                }
                Err(_) => self.widen(&rehash),
            }
        }
        if let Positions::Wide(t) = self {
            // A slot never holds 2^32 keys (the whole keyspace would be 300 GiB of keys).
            let p = u32::try_from(position).unwrap_or(u32::MAX);
            t.insert_unique(hash, p, |&p| rehash(p as usize));
        }
    }

    /// Moves every position to a `u32` index.
    fn widen(&mut self, rehash: &impl Fn(usize) -> u64) {
        if let Positions::Narrow(narrow) = self {
            let mut wide = HashTable::with_capacity(narrow.len() * 2);
            for &p in narrow.iter() {
                let p = usize::from(p);
                // Below 65,536: fits a u32.
                wide.insert_unique(rehash(p), p as u32, |&q| rehash(q as usize));
            }
            *self = Positions::Wide(wide);
        }
    }

    /// Removes the position whose key has `hash` and passes `is_key`; returns it.
    /// Under tags, the last position takes the removed one's place, as the pairs do
    /// (so the [`Positions::moved`] that follows finds it there already).
    pub fn remove(&mut self, hash: u64, is_key: impl Fn(usize) -> bool) -> Option<usize> {
        match self {
            Positions::Inline { len, tags } => {
                let n = usize::from(*len);
                let at = find_tag(&tags[..n], tag_of(hash), is_key)?;
                tags[at] = tags[n - 1];
                *len -= 1;
                Some(at)
            }
            Positions::Tags(tags) => {
                let at = find_tag(tags, tag_of(hash), is_key)?;
                tags.swap_remove(at);
                Some(at)
            }
            Positions::Narrow(t) => {
                let found = t.find_entry(hash, |&p| is_key(usize::from(p))).ok()?;
                Some(usize::from(found.remove().0))
            }
            Positions::Wide(t) => {
                let found = t.find_entry(hash, |&p| is_key(p as usize)).ok()?;
                Some(found.remove().0 as usize)
            }
        }
    }

    /// Records that the pair at `from` (whose key's hash `hash` gives) moved to `to`,
    /// a lower position. Tags need nothing (`remove` moved the tag with the pair), so
    /// only a table hashes the moved key again: most slots are tags, and every removal
    /// but the last pair's moves one.
    pub fn moved(&mut self, hash: impl FnOnce() -> u64, from: usize, to: usize) {
        match self {
            Positions::Inline { len, tags } => {
                debug_assert!(
                    to < usize::from(*len) && tags[to] == tag_of(hash()),
                    "{from} → {to}"
                );
            }
            Positions::Tags(tags) => {
                debug_assert_eq!(tags.get(to), Some(&tag_of(hash())), "{from} → {to}");
            }
            Positions::Narrow(t) => {
                if let (Some(p), Ok(to)) = (
                    t.find_mut(hash(), |&p| usize::from(p) == from),
                    u16::try_from(to),
                ) {
                    *p = to;
                }
            }
            Positions::Wide(t) => {
                if let (Some(p), Ok(to)) = (
                    t.find_mut(hash(), |&p| p as usize == from),
                    u32::try_from(to),
                ) {
                    *p = to;
                }
            }
        }
    }

    /// Number of positions held.
    #[inline]
    pub fn len(&self) -> usize {
        match self {
            Positions::Inline { len, .. } => usize::from(*len),
            Positions::Tags(tags) => tags.len(),
            Positions::Narrow(t) => t.len(),
            Positions::Wide(t) => t.len(),
        }
    }

    /// Number of buckets.
    pub fn capacity(&self) -> usize {
        match self {
            Positions::Inline { .. } => INLINE_TAGS,
            Positions::Tags(tags) => tags.capacity(),
            Positions::Narrow(t) => t.capacity(),
            Positions::Wide(t) => t.capacity(),
        }
    }

    /// Shrinks the buckets to what `len` positions (`0..len`) need: back to tags in
    /// place once they fit with room to spare (half of [`INLINE_TAGS`]).
    pub fn shrink_to(&mut self, len: usize, rehash: impl Fn(usize) -> u64) {
        match self {
            Positions::Inline { .. } => {}
            Positions::Tags(tags) if len <= INLINE_TAGS / 2 => *self = inline_tags(tags),
            Positions::Tags(tags) => tags.shrink_to(len),
            _ if len <= INLINE_TAGS / 2 => {
                let tags: Vec<u8> = (0..len).map(|p| tag_of(rehash(p))).collect();
                *self = inline_tags(&tags);
            }
            Positions::Narrow(t) => t.shrink_to(len, |&p| rehash(usize::from(p))),
            Positions::Wide(t) => t.shrink_to(len, |&p| rehash(p as usize)),
        }
    }

    /// Bytes the buckets take (a position and a control byte each).
    #[cfg(test)]
    pub fn bytes(&self) -> usize {
        match self {
            Positions::Inline { .. } => 0,
            Positions::Tags(tags) => tags.capacity(),
            Positions::Narrow(t) => t.capacity() * 3,
            Positions::Wide(t) => t.capacity() * 5,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The word-at-a-time search finds what a byte-by-byte one finds, first
        /// match first, whatever the bytes around it.
        #[test]
        fn tag_search_matches_a_plain_one(
            // Few distinct bytes, the edges of the bit trick among them, so that
            // matches are common and sit next to near misses.
            tags in proptest::collection::vec(prop::sample::select(vec![0u8, 1, 0x7f, 0x80, 0x81, 0xfe, 0xff]), 0..80),
            tag in prop::sample::select(vec![0u8, 1, 0x7f, 0x80, 0xff]),
            skip in 0usize..4,
        ) {
            let seen = std::cell::Cell::new(0);
            // Accept the `skip`-th match, to see every match visited in order.
            let found = find_tag(&tags, tag, |_| {
                seen.set(seen.get() + 1);
                seen.get() > skip
            });
            let want = tags.iter().enumerate().filter(|(_, t)| **t == tag).nth(skip).map(|(i, _)| i);
            prop_assert_eq!(found, want);
        }
    }

    #[test]
    fn a_slot_moves_from_tags_in_place_to_a_table_and_back() {
        assert_eq!(std::mem::size_of::<Positions>(), 40);
        let hash = |p: usize| (p as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let mut index = Positions::default();
        for p in 0..=TAGS_MAX {
            let want_inline = p <= INLINE_TAGS;
            assert_eq!(
                matches!(index, Positions::Inline { .. }),
                want_inline,
                "at {p}"
            );
            assert_eq!(matches!(index, Positions::Tags(_)), !want_inline, "at {p}");
            index.insert(hash(p), p, hash);
            assert_eq!(index.len(), p + 1);
        }
        assert!(matches!(index, Positions::Narrow(_)));
        for p in 0..=TAGS_MAX {
            assert_eq!(index.find(hash(p), |at| at == p), Some(p));
        }
        // (A table shrinks to what its positions below `len` need.)
        index.shrink_to(INLINE_TAGS / 2 + 1, hash);
        assert!(matches!(index, Positions::Narrow(_)));
        index.shrink_to(INLINE_TAGS / 2, hash);
        assert!(matches!(index, Positions::Inline { len: 19, .. }));
        for p in 0..INLINE_TAGS / 2 {
            assert_eq!(index.find(hash(p), |at| at == p), Some(p));
        }
        // Removing under tags moves the last into the hole, as the pairs move.
        let last = INLINE_TAGS / 2 - 1;
        assert_eq!(index.remove(hash(3), |at| at == 3), Some(3));
        index.moved(|| hash(last), last, 3);
        assert_eq!(index.find(hash(last), |at| at == 3), Some(3));
        assert_eq!(index.len(), last);
        // Tags on the heap come back in place once they fit with room to spare.
        let mut heap = Positions::Tags((0..20).map(|p| tag_of(hash(p))).collect());
        heap.shrink_to(20, hash);
        assert!(matches!(heap, Positions::Tags(_)));
        heap.remove(hash(19), |at| at == 19);
        heap.shrink_to(19, hash);
        assert!(matches!(heap, Positions::Inline { len: 19, .. }));
        assert_eq!(heap.find(hash(7), |at| at == 7), Some(7));
    }
}
