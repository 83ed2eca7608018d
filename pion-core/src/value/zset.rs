//! The sorted-set type: members with scores, ordered by (score, member).
//!
//! A member→score hash map answers `ZSCORE` in O(1); the order lives in an
//! order-statistic index ([`OrderIndex`]): a two-level chunked sorted vector whose
//! per-chunk counts sit in a Fenwick tree, so rank queries (`ZRANK`, `ZRANGE` by index,
//! `ZCOUNT`, `ZREMRANGEBYRANK`) cost O(log n) plus a short in-chunk move instead of a
//! walk over the whole set. The encoding name (`listpack` or `skiplist`) follows Redis's
//! conversion rules because `OBJECT ENCODING` shows it, even though both share one
//! representation here.

use std::cmp::Ordering;
use std::collections::HashMap;

use super::{sampled_size, EncodingLimits};

/// An entry of the score order: compares by score, then member bytes.
#[derive(Debug, Clone, PartialEq)]
pub struct ScoredMember {
    /// The score (never NaN).
    pub score: f64,
    /// The member.
    pub member: Vec<u8>,
}

impl Eq for ScoredMember {}

impl PartialOrd for ScoredMember {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ScoredMember {
    fn cmp(&self, other: &Self) -> Ordering {
        cmp_key(self, other.score, &other.member)
    }
}

/// Compares an entry with a (score, member) key. Scores are never NaN; -0 and 0
/// compare equal, as with C's `<`.
fn cmp_key(a: &ScoredMember, score: f64, member: &[u8]) -> Ordering {
    a.score
        .partial_cmp(&score)
        .unwrap_or(Ordering::Equal)
        .then_with(|| a.member.as_slice().cmp(member))
}

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

/// A sorted-set value.
#[derive(Debug, Clone, PartialEq)]
pub struct ZSetValue {
    scores: HashMap<Vec<u8>, f64, ahash::RandomState>,
    order: OrderIndex,
    listpack: bool,
}

impl Default for ZSetValue {
    fn default() -> Self {
        ZSetValue::new()
    }
}

impl ZSetValue {
    /// An empty sorted set (listpack encoding).
    pub fn new() -> ZSetValue {
        ZSetValue {
            scores: HashMap::with_hasher(ahash::RandomState::new()),
            order: OrderIndex::default(),
            listpack: true,
        }
    }

    /// An empty sorted set in the encoding Redis picks from a size hint (the number of
    /// elements about to be added) and the longest member about to be added: listpack
    /// only when both fit the thresholds.
    pub fn with_hint(size_hint: usize, value_len_hint: usize, limits: &EncodingLimits) -> Self {
        let mut z = ZSetValue::new();
        z.listpack = size_hint <= limits.zset_max_listpack_entries
            && value_len_hint <= limits.zset_max_listpack_value;
        z
    }

    /// A sorted set restored with the encoding its payload chose (`listpack` whatever
    /// its members' lengths, as Redis loads a listpack); `None` when a member repeats.
    /// A listpack stores a zero score as the integer 0, so -0 becomes 0 there.
    pub fn restored(members: Vec<(Vec<u8>, f64)>, listpack: bool) -> Option<ZSetValue> {
        let mut z = ZSetValue::new();
        z.listpack = listpack;
        for (member, score) in members {
            let score = if listpack && score == 0.0 { 0.0 } else { score };
            if z.scores.insert(member.clone(), score).is_some() {
                return None;
            }
            z.order.insert(ScoredMember { score, member });
        }
        Some(z)
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        self.scores.len()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.scores.is_empty()
    }

    /// The encoding name (`listpack` or `skiplist`).
    pub fn encoding(&self) -> &'static str {
        if self.listpack {
            "listpack"
        } else {
            "skiplist"
        }
    }

    /// Whether the encoding is `listpack` (`ZSCAN` shows its scores as stored there).
    pub fn is_listpack(&self) -> bool {
        self.listpack
    }

    /// Switches to the `skiplist` encoding (what `SORT` does to the set it sorts).
    pub fn convert_to_skiplist(&mut self) {
        self.listpack = false;
    }

    /// Switches a `skiplist` set back to `listpack` when it fits the thresholds, as
    /// Redis does for the destination of the `*STORE` commands.
    pub fn convert_to_listpack_if_fits(&mut self, limits: &EncodingLimits) {
        if !self.listpack
            && self.len() <= limits.zset_max_listpack_entries
            && self
                .scores
                .keys()
                .all(|m| m.len() <= limits.zset_max_listpack_value)
        {
            self.listpack = true;
            // A listpack stores a zero score as the integer 0: -0 reads back as 0.
            let negative_zeros: Vec<Vec<u8>> = self
                .scores
                .iter()
                .filter(|(_, s)| **s == 0.0 && s.is_sign_negative())
                .map(|(m, _)| m.clone())
                .collect();
            for m in negative_zeros {
                self.order.remove(-0.0, &m);
                self.scores.insert(m.clone(), 0.0);
                self.order.insert(ScoredMember {
                    score: 0.0,
                    member: m,
                });
            }
        }
    }

    /// The score of a member.
    pub fn score(&self, member: &[u8]) -> Option<f64> {
        self.scores.get(member).copied()
    }

    /// Sets a member's score; returns the previous score.
    pub fn insert(&mut self, member: &[u8], score: f64, limits: &EncodingLimits) -> Option<f64> {
        if self.listpack
            && !self.scores.contains_key(member)
            && (self.len() + 1 > limits.zset_max_listpack_entries
                || member.len() > limits.zset_max_listpack_value)
        {
            self.listpack = false;
        }
        // A listpack stores a zero score as the integer 0: -0 reads back as 0.
        let score = if self.listpack && score == 0.0 {
            0.0
        } else {
            score
        };
        let old = self.scores.insert(member.to_vec(), score);
        if let Some(old) = old {
            if old == score && old.is_sign_negative() == score.is_sign_negative() {
                return Some(old);
            }
            self.order.remove(old, member);
        }
        self.order.insert(ScoredMember {
            score,
            member: member.to_vec(),
        });
        old
    }

    /// Removes a member; returns its score.
    pub fn remove(&mut self, member: &[u8]) -> Option<f64> {
        let old = self.scores.remove(member)?;
        self.order.remove(old, member);
        Some(old)
    }

    /// Members in ascending (score, member) order.
    pub fn iter(&self) -> Range<'_> {
        self.order.range(0, self.order.len())
    }

    /// Members with ranks in `start..end` (clamped), ascending; reversible.
    pub fn range(&self, start: usize, end: usize) -> Range<'_> {
        self.order.range(start, end)
    }

    /// The member at a 0-based ascending rank.
    pub fn get_by_rank(&self, rank: usize) -> Option<&ScoredMember> {
        self.order.get(rank)
    }

    /// The 0-based rank of a member in ascending order.
    pub fn rank(&self, member: &[u8]) -> Option<usize> {
        let score = self.score(member)?;
        Some(
            self.order
                .partition_point(|e| cmp_key(e, score, member) == Ordering::Less),
        )
    }

    /// The rank of the first member for which `before` is false (see
    /// [`OrderIndex::partition_point`]); used for score and lex bounds.
    pub fn partition_point(&self, before: impl Fn(&ScoredMember) -> bool) -> usize {
        self.order.partition_point(before)
    }

    /// Removes the members with ranks in `start..end` (clamped); returns them in order.
    pub fn remove_range(&mut self, start: usize, end: usize) -> Vec<ScoredMember> {
        let removed = self.order.remove_range(start, end);
        for e in &removed {
            self.scores.remove(&e.member);
        }
        removed
    }

    pub(crate) fn mem_usage(&self, samples: usize) -> usize {
        sampled_size(self.iter().map(|m| m.member.len()), self.len(), 40, samples)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, Clone)]
    enum Op {
        Insert(u8, i8),
        Remove(u8),
        RemoveRange(u16, u16),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            6 => (any::<u8>(), any::<i8>()).prop_map(|(m, s)| Op::Insert(m, s)),
            3 => any::<u8>().prop_map(Op::Remove),
            1 => (any::<u16>(), 0u16..40).prop_map(|(a, n)| Op::RemoveRange(a, n)),
        ]
    }

    fn model_sorted(model: &[(f64, Vec<u8>)]) -> Vec<(f64, Vec<u8>)> {
        let mut v = model.to_vec();
        v.sort_by(|a, b| {
            a.0.partial_cmp(&b.0)
                .unwrap_or(Ordering::Equal)
                .then_with(|| a.1.cmp(&b.1))
        });
        v
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn matches_sorted_vec_model(ops in proptest::collection::vec(op(), 1..1500)) {
            let limits = EncodingLimits::default();
            let mut z = ZSetValue::new();
            let mut model: Vec<(f64, Vec<u8>)> = Vec::new();
            for op in ops {
                match op {
                    Op::Insert(m, s) => {
                        let member = vec![b'm', m];
                        let score = f64::from(s % 16);
                        let old = z.insert(&member, score, &limits);
                        let pos = model.iter().position(|(_, x)| *x == member);
                        prop_assert_eq!(old, pos.map(|p| model[p].0));
                        match pos {
                            Some(p) => model[p].0 = score,
                            None => model.push((score, member)),
                        }
                        model = model_sorted(&model);
                    }
                    Op::Remove(m) => {
                        let member = vec![b'm', m];
                        let pos = model.iter().position(|(_, x)| *x == member);
                        prop_assert_eq!(z.remove(&member), pos.map(|p| model[p].0));
                        if let Some(p) = pos {
                            model.remove(p);
                        }
                    }
                    Op::RemoveRange(a, n) => {
                        let start = usize::from(a) % (model.len() + 1);
                        let end = (start + usize::from(n)).min(model.len());
                        let got: Vec<_> = z
                            .remove_range(start, end)
                            .into_iter()
                            .map(|e| (e.score, e.member))
                            .collect();
                        let want: Vec<_> = model.drain(start..end).collect();
                        prop_assert_eq!(got, want);
                    }
                }
                prop_assert_eq!(z.len(), model.len());
            }
            let all: Vec<_> = z.iter().map(|e| (e.score, e.member.clone())).collect();
            prop_assert_eq!(&all, &model);
            let back: Vec<_> = z.iter().rev().map(|e| (e.score, e.member.clone())).collect();
            let mut rev_model = model.clone();
            rev_model.reverse();
            prop_assert_eq!(back, rev_model);
            for (i, (s, m)) in model.iter().enumerate() {
                prop_assert_eq!(z.rank(m), Some(i));
                let e = z.get_by_rank(i).map(|e| (e.score, e.member.clone()));
                prop_assert_eq!(e, Some((*s, m.clone())));
                let below = z.partition_point(|e| e.score < *s);
                prop_assert_eq!(below, model.iter().filter(|(x, _)| x < s).count());
            }
            prop_assert!(z.get_by_rank(model.len()).is_none());
            for start in (0..=model.len()).step_by(37) {
                for end in [start, start + 1, start + 300, model.len()] {
                    let got: Vec<_> = z.range(start, end).map(|e| e.member.clone()).collect();
                    let e = end.min(model.len()).max(start);
                    let want: Vec<_> = model[start..e].iter().map(|x| x.1.clone()).collect();
                    prop_assert_eq!(&got, &want);
                    let got_rev: Vec<_> = z.range(start, end).rev().map(|e| e.member.clone()).collect();
                    let want_rev: Vec<_> = want.iter().rev().cloned().collect();
                    prop_assert_eq!(got_rev, want_rev);
                }
            }
        }
    }

    #[test]
    fn encoding_follows_thresholds() {
        let limits = EncodingLimits {
            zset_max_listpack_entries: 2,
            zset_max_listpack_value: 4,
            ..EncodingLimits::default()
        };
        let mut z = ZSetValue::new();
        z.insert(b"a", 1.0, &limits);
        z.insert(b"b", 2.0, &limits);
        assert_eq!(z.encoding(), "listpack");
        z.insert(b"c", 3.0, &limits);
        assert_eq!(z.encoding(), "skiplist");
        z.remove(b"c");
        assert_eq!(z.encoding(), "skiplist");
        z.convert_to_listpack_if_fits(&limits);
        assert_eq!(z.encoding(), "listpack");
        z.insert(b"long!", 1.0, &limits);
        assert_eq!(z.encoding(), "skiplist");
        assert_eq!(ZSetValue::with_hint(3, 1, &limits).encoding(), "skiplist");
        assert_eq!(ZSetValue::with_hint(2, 5, &limits).encoding(), "skiplist");
        assert_eq!(ZSetValue::with_hint(2, 4, &limits).encoding(), "listpack");
    }

    #[test]
    fn large_set_ranks() {
        let limits = EncodingLimits::default();
        let mut z = ZSetValue::new();
        for i in (0..5000).rev() {
            z.insert(format!("{i:05}").as_bytes(), f64::from(i), &limits);
        }
        assert_eq!(z.rank(b"02500"), Some(2500));
        for i in 0..2500 {
            z.remove(format!("{:05}", i * 2).as_bytes());
        }
        assert_eq!(z.len(), 2500);
        assert_eq!(z.rank(b"00001"), Some(0));
        assert_eq!(z.rank(b"04999"), Some(2499));
        assert_eq!(z.get_by_rank(1).map(|e| e.score), Some(3.0));
    }
}
