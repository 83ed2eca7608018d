//! The order-statistic index of a large sorted set (the `skiplist` encoding): a
//! two-level chunked sorted vector whose per-chunk counts sit in a Fenwick tree, so
//! rank queries (`ZRANK`, `ZRANGE` by index, `ZCOUNT`, `ZREMRANGEBYRANK`) cost
//! O(log n) plus a short in-chunk move instead of a walk over the whole set.

use std::cmp::Ordering;

use super::{cmp_key, ScoredMember};

/// A chunk splits in two when it grows past this many entries (tiny under test, so
/// the property tests exercise splits and merges).
const CHUNK_MAX: usize = if cfg!(test) { 8 } else { 256 };
/// A chunk this small merges with a neighbour when the two fit in one chunk.
const CHUNK_MIN: usize = CHUNK_MAX / 8;

/// The order-statistic index: sorted entries in non-empty chunks of at most
/// [`CHUNK_MAX`], with a Fenwick tree over the chunk lengths for rank arithmetic.
#[derive(Debug, Clone, Default)]
pub struct OrderIndex {
    chunks: Vec<Vec<ScoredMember>>,
    /// 1-based Fenwick tree over `chunks[i].len()`; `fenwick.len() == chunks.len() + 1`.
    fenwick: Vec<usize>,
    len: usize,
}

impl PartialEq for OrderIndex {
    fn eq(&self, other: &Self) -> bool {
        // Chunk boundaries are an implementation detail: compare the sequences.
        self.len == other.len && self.range(0, self.len).eq(other.range(0, other.len))
    }
}

impl OrderIndex {
    /// Number of entries.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the index is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn rebuild(&mut self) {
        let n = self.chunks.len();
        self.fenwick.clear();
        self.fenwick.resize(n + 1, 0);
        for i in 1..=n {
            self.fenwick[i] += self.chunks[i - 1].len();
            let parent = i + (i & i.wrapping_neg());
            if parent <= n {
                self.fenwick[parent] += self.fenwick[i];
            }
        }
    }

    fn fenwick_add(&mut self, chunk: usize, delta: usize) {
        let mut i = chunk + 1;
        while i < self.fenwick.len() {
            self.fenwick[i] += delta;
            i += i & i.wrapping_neg();
        }
    }

    fn fenwick_sub(&mut self, chunk: usize, delta: usize) {
        let mut i = chunk + 1;
        while i < self.fenwick.len() {
            self.fenwick[i] = self.fenwick[i].saturating_sub(delta);
            i += i & i.wrapping_neg();
        }
    }

    /// Number of entries in `chunks[..chunk]`.
    fn prefix(&self, chunk: usize) -> usize {
        let mut i = chunk.min(self.chunks.len());
        let mut sum = 0;
        while i > 0 {
            sum += self.fenwick[i];
            i &= i - 1;
        }
        sum
    }

    /// The (chunk, offset) position of rank `rank`; `(chunks.len(), 0)` past the end.
    fn locate(&self, rank: usize) -> (usize, usize) {
        if rank >= self.len {
            return (self.chunks.len(), 0);
        }
        let n = self.chunks.len();
        let mut pos = 0;
        let mut rem = rank;
        let mut step = n.next_power_of_two();
        while step > 0 {
            let next = pos + step;
            if next <= n && self.fenwick[next] <= rem {
                pos = next;
                rem -= self.fenwick[next];
            }
            step /= 2;
        }
        (pos, rem)
    }

    /// The rank of the first entry for which `before` is false; `before` must hold for a
    /// prefix of the order and fail for the rest.
    pub fn partition_point(&self, before: impl Fn(&ScoredMember) -> bool) -> usize {
        let ci = self
            .chunks
            .partition_point(|c| c.last().is_some_and(&before));
        match self.chunks.get(ci) {
            None => self.len,
            Some(chunk) => self.prefix(ci) + chunk.partition_point(before),
        }
    }

    /// The entry at a 0-based rank.
    pub fn get(&self, rank: usize) -> Option<&ScoredMember> {
        let (ci, off) = self.locate(rank);
        self.chunks.get(ci)?.get(off)
    }

    /// Entries with ranks in `start..end` (clamped to the length), in order; the
    /// iterator runs from both ends.
    pub fn range(&self, start: usize, end: usize) -> Range<'_> {
        let end = end.min(self.len);
        let start = start.min(end);
        Range {
            chunks: &self.chunks,
            front: self.locate(start),
            back: self.locate(end),
            remaining: end - start,
        }
    }

    /// Inserts an entry (the caller guarantees its member is not present).
    pub fn insert(&mut self, item: ScoredMember) {
        if self.chunks.is_empty() {
            self.chunks.push(vec![item]);
            self.len = 1;
            self.rebuild();
            return;
        }
        let last = self.chunks.len() - 1;
        let ci = self
            .chunks
            .partition_point(|c| c.last().is_some_and(|l| *l < item))
            .min(last);
        let chunk = &mut self.chunks[ci];
        let off = chunk.partition_point(|e| *e < item);
        chunk.insert(off, item);
        self.len += 1;
        if chunk.len() > CHUNK_MAX {
            let tail = chunk.split_off(chunk.len() / 2);
            self.chunks.insert(ci + 1, tail);
            self.rebuild();
        } else {
            self.fenwick_add(ci, 1);
        }
    }

    /// Removes the entry with this score and member; returns whether it was there.
    pub fn remove(&mut self, score: f64, member: &[u8]) -> bool {
        let before = |e: &ScoredMember| cmp_key(e, score, member) == Ordering::Less;
        let ci = self
            .chunks
            .partition_point(|c| c.last().is_some_and(before));
        let Some(chunk) = self.chunks.get_mut(ci) else {
            return false;
        };
        let off = chunk.partition_point(before);
        if chunk
            .get(off)
            .is_none_or(|e| cmp_key(e, score, member) != Ordering::Equal)
        {
            return false;
        }
        chunk.remove(off);
        self.len -= 1;
        let small = chunk.len();
        if small == 0 {
            self.chunks.remove(ci);
            self.rebuild();
        } else if small < CHUNK_MIN && self.chunks.len() > 1 {
            // Merge with the next chunk (or the previous one for the last chunk).
            let (a, b) = if ci + 1 < self.chunks.len() {
                (ci, ci + 1)
            } else {
                (ci - 1, ci)
            };
            if self.chunks[a].len() + self.chunks[b].len() <= CHUNK_MAX {
                let moved = self.chunks.remove(b);
                self.chunks[a].extend(moved);
                self.rebuild();
            } else {
                self.fenwick_sub(ci, 1);
            }
        } else {
            self.fenwick_sub(ci, 1);
        }
        true
    }

    /// Removes and returns the entries with ranks in `start..end` (clamped).
    pub fn remove_range(&mut self, start: usize, end: usize) -> Vec<ScoredMember> {
        let end = end.min(self.len);
        if start >= end {
            return Vec::new();
        }
        let mut count = end - start;
        let mut out = Vec::with_capacity(count);
        let (mut ci, mut off) = self.locate(start);
        let mut touched = Vec::new();
        let mut dropped_chunk = false;
        while count > 0 && ci < self.chunks.len() {
            let chunk = &mut self.chunks[ci];
            let n = count.min(chunk.len() - off);
            out.extend(chunk.drain(off..off + n));
            count -= n;
            if chunk.is_empty() {
                self.chunks.remove(ci);
                dropped_chunk = true;
            } else {
                touched.push((ci, n));
                ci += 1;
            }
            off = 0;
        }
        self.len -= out.len();
        if dropped_chunk {
            self.rebuild();
        } else {
            for (ci, n) in touched {
                self.fenwick_sub(ci, n);
            }
        }
        out
    }
}

/// Entries of an [`OrderIndex`] between two ranks, from either end.
#[derive(Debug, Clone)]
pub struct Range<'a> {
    chunks: &'a [Vec<ScoredMember>],
    /// Position of the next entry from the front.
    front: (usize, usize),
    /// Position just past the next entry from the back.
    back: (usize, usize),
    remaining: usize,
}

impl<'a> Iterator for Range<'a> {
    type Item = &'a ScoredMember;

    fn next(&mut self) -> Option<&'a ScoredMember> {
        if self.remaining == 0 {
            return None;
        }
        let chunk = self.chunks.get(self.front.0)?;
        let item = chunk.get(self.front.1)?;
        self.front.1 += 1;
        if self.front.1 == chunk.len() {
            self.front = (self.front.0 + 1, 0);
        }
        self.remaining -= 1;
        Some(item)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.remaining, Some(self.remaining))
    }
}

impl DoubleEndedIterator for Range<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.remaining == 0 {
            return None;
        }
        if self.back.1 == 0 {
            let prev = self.back.0.checked_sub(1)?;
            self.back = (prev, self.chunks.get(prev)?.len());
        }
        self.back.1 -= 1;
        let item = self.chunks.get(self.back.0)?.get(self.back.1)?;
        self.remaining -= 1;
        Some(item)
    }
}

impl ExactSizeIterator for Range<'_> {}
