//! The sorted-set type: members with scores, ordered by (score, member).
//!
//! Two representations, one per encoding `OBJECT ENCODING` names, switched at Redis's
//! thresholds (`zset-max-listpack-entries`, `zset-max-listpack-value`):
//!
//! * `listpack`: the entries packed in order into one buffer ([`packed`]), walked by
//!   every operation, as Redis's listpack is; a few bytes per member.
//! * `skiplist`: a member→score hash map that answers `ZSCORE` in O(1), and an
//!   order-statistic index ([`order::OrderIndex`]) for ranks and ranges in O(log n).

pub mod order;
pub mod packed;

use std::cmp::Ordering;
use std::collections::HashMap;

use super::{sampled_size, EncodingLimits};
use order::OrderIndex;
use packed::PackedScores;

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

impl ScoredMember {
    /// A borrowed view of this entry.
    pub fn view(&self) -> ZEntry<'_> {
        ZEntry {
            score: self.score,
            member: &self.member,
        }
    }
}

/// A borrowed entry of a sorted set, as its reads return it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ZEntry<'a> {
    /// The score (never NaN).
    pub score: f64,
    /// The member.
    pub member: &'a [u8],
}

impl ZEntry<'_> {
    /// An owned copy.
    pub fn to_owned(self) -> ScoredMember {
        ScoredMember {
            score: self.score,
            member: self.member.to_vec(),
        }
    }

    /// Compares this entry with a (score, member) key (see [`cmp_key`]).
    fn cmp_key(&self, score: f64, member: &[u8]) -> Ordering {
        self.score
            .partial_cmp(&score)
            .unwrap_or(Ordering::Equal)
            .then_with(|| self.member.cmp(member))
    }
}

/// Compares an entry with a (score, member) key. Scores are never NaN; -0 and 0
/// compare equal, as with C's `<`.
fn cmp_key(a: &ScoredMember, score: f64, member: &[u8]) -> Ordering {
    a.view().cmp_key(score, member)
}

/// A sorted-set value.
#[derive(Debug, Clone, PartialEq)]
pub struct ZSetValue {
    repr: Repr,
}

#[derive(Debug, Clone, PartialEq)]
enum Repr {
    Listpack(PackedScores),
    /// Boxed, so a small set's value stays the size of its packed buffer's header.
    Skiplist(Box<Sorted>),
}

/// The `skiplist` encoding: scores by member, and the order.
#[derive(Debug, Clone, PartialEq, Default)]
struct Sorted {
    /// Members are boxed slices, not vectors: 24-byte buckets instead of 32, so a
    /// 200-member set's map is a 7 KiB block rather than a 10 KiB one (256 buckets
    /// and their control bytes just pass 8 KiB at 32).
    scores: HashMap<Box<[u8]>, f64, ahash::RandomState>,
    order: OrderIndex,
}

impl Sorted {
    fn insert(&mut self, member: &[u8], score: f64) -> Option<f64> {
        let old = self.scores.insert(member.into(), score);
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
}

/// Members of a sorted set between two ranks, in order, from either end.
pub struct Range<'a> {
    inner: RangeInner<'a>,
}

enum RangeInner<'a> {
    Order(order::Range<'a>),
    /// A listpack's slice of entries, decoded once (at most
    /// `zset-max-listpack-entries` of them).
    Packed(std::vec::IntoIter<ZEntry<'a>>),
}

impl<'a> Iterator for Range<'a> {
    type Item = ZEntry<'a>;

    fn next(&mut self) -> Option<ZEntry<'a>> {
        match &mut self.inner {
            RangeInner::Order(r) => r.next().map(ScoredMember::view),
            RangeInner::Packed(r) => r.next(),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match &self.inner {
            RangeInner::Order(r) => r.size_hint(),
            RangeInner::Packed(r) => r.size_hint(),
        }
    }
}

impl DoubleEndedIterator for Range<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        match &mut self.inner {
            RangeInner::Order(r) => r.next_back().map(ScoredMember::view),
            RangeInner::Packed(r) => r.next_back(),
        }
    }
}

impl ExactSizeIterator for Range<'_> {}

impl Default for ZSetValue {
    fn default() -> Self {
        ZSetValue::new()
    }
}

impl ZSetValue {
    /// An empty sorted set (listpack encoding).
    pub fn new() -> ZSetValue {
        ZSetValue {
            repr: Repr::Listpack(PackedScores::new()),
        }
    }

    fn new_skiplist() -> ZSetValue {
        ZSetValue {
            repr: Repr::Skiplist(Box::default()),
        }
    }

    /// An empty sorted set in the encoding Redis picks from a size hint (the number of
    /// elements about to be added) and the longest member about to be added: listpack
    /// only when both fit the thresholds.
    pub fn with_hint(size_hint: usize, value_len_hint: usize, limits: &EncodingLimits) -> Self {
        if size_hint <= limits.zset_max_listpack_entries
            && value_len_hint <= limits.zset_max_listpack_value
        {
            ZSetValue::new()
        } else {
            ZSetValue::new_skiplist()
        }
    }

    /// A sorted set restored with the encoding its payload chose (`listpack` whatever
    /// its members' lengths, as Redis loads a listpack); `None` when a member repeats.
    /// A listpack stores a zero score as the integer 0, so -0 becomes 0 there.
    pub fn restored(members: Vec<(Vec<u8>, f64)>, listpack: bool) -> Option<ZSetValue> {
        if !listpack {
            let mut sorted = Sorted::default();
            for (member, score) in members {
                if sorted
                    .scores
                    .insert(member.as_slice().into(), score)
                    .is_some()
                {
                    return None;
                }
                sorted.order.insert(ScoredMember { score, member });
            }
            return Some(ZSetValue {
                repr: Repr::Skiplist(Box::new(sorted)),
            });
        }
        let mut distinct: Vec<&[u8]> = members.iter().map(|(m, _)| m.as_slice()).collect();
        distinct.sort_unstable();
        if distinct.windows(2).any(|w| w[0] == w[1]) {
            return None;
        }
        let mut entries: Vec<ScoredMember> = members
            .into_iter()
            .map(|(member, score)| ScoredMember {
                score: if score == 0.0 { 0.0 } else { score },
                member,
            })
            .collect();
        entries.sort_unstable();
        let mut packed = PackedScores::new();
        for e in entries.iter().rev() {
            packed.insert(e.score, &e.member);
        }
        Some(ZSetValue {
            repr: Repr::Listpack(packed),
        })
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        match &self.repr {
            Repr::Listpack(p) => p.len(),
            Repr::Skiplist(s) => s.scores.len(),
        }
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The encoding name (`listpack` or `skiplist`).
    pub fn encoding(&self) -> &'static str {
        match &self.repr {
            Repr::Listpack(_) => "listpack",
            Repr::Skiplist(_) => "skiplist",
        }
    }

    /// Whether the encoding is `listpack` (`ZSCAN` shows its scores as stored there).
    pub fn is_listpack(&self) -> bool {
        matches!(self.repr, Repr::Listpack(_))
    }

    /// Switches to the `skiplist` encoding (what `SORT` does to the set it sorts).
    pub fn convert_to_skiplist(&mut self) {
        if let Repr::Listpack(p) = &self.repr {
            let mut sorted = Sorted::default();
            for e in p.iter() {
                sorted.scores.insert(e.member.into(), e.score);
                sorted.order.insert(e.to_owned());
            }
            self.repr = Repr::Skiplist(Box::new(sorted));
        }
    }

    /// Switches a `skiplist` set back to `listpack` when it fits the thresholds, as
    /// Redis does for the destination of the `*STORE` commands. A listpack stores a
    /// zero score as the integer 0: -0 reads back as 0.
    pub fn convert_to_listpack_if_fits(&mut self, limits: &EncodingLimits) {
        let Repr::Skiplist(s) = &self.repr else {
            return;
        };
        if self.len() > limits.zset_max_listpack_entries
            || s.scores
                .keys()
                .any(|m| m.len() > limits.zset_max_listpack_value)
        {
            return;
        }
        let mut packed = PackedScores::new();
        // Inserting from the top keeps each insert at the buffer's front.
        for e in s.order.range(0, s.order.len()).rev() {
            let score = if e.score == 0.0 { 0.0 } else { e.score };
            packed.insert(score, &e.member);
        }
        self.repr = Repr::Listpack(packed);
    }

    /// The score of a member.
    pub fn score(&self, member: &[u8]) -> Option<f64> {
        match &self.repr {
            Repr::Listpack(p) => p.find(member).map(|f| f.score),
            Repr::Skiplist(s) => s.scores.get(member).copied(),
        }
    }

    /// Sets a member's score; returns the previous score.
    pub fn insert(&mut self, member: &[u8], score: f64, limits: &EncodingLimits) -> Option<f64> {
        let p = match &mut self.repr {
            Repr::Skiplist(s) => return s.insert(member, score),
            Repr::Listpack(p) => p,
        };
        let found = p.find(member);
        if found.is_none()
            && (p.len() + 1 > limits.zset_max_listpack_entries
                || member.len() > limits.zset_max_listpack_value)
        {
            self.convert_to_skiplist();
            return self.insert(member, score, limits);
        }
        // A listpack stores a zero score as the integer 0: -0 reads back as 0.
        let score = if score == 0.0 { 0.0 } else { score };
        let old = found.map(|f| f.score);
        if let Some(f) = found {
            if f.score == score {
                return old;
            }
            p.remove(f);
        }
        p.insert(score, member);
        old
    }

    /// Removes a member; returns its score.
    pub fn remove(&mut self, member: &[u8]) -> Option<f64> {
        match &mut self.repr {
            Repr::Listpack(p) => {
                let found = p.find(member)?;
                p.remove(found);
                Some(found.score)
            }
            Repr::Skiplist(s) => {
                let old = s.scores.remove(member)?;
                s.order.remove(old, member);
                Some(old)
            }
        }
    }

    /// Members in ascending (score, member) order.
    pub fn iter(&self) -> Range<'_> {
        self.range(0, self.len())
    }

    /// Members with ranks in `start..end` (clamped), ascending; reversible.
    pub fn range(&self, start: usize, end: usize) -> Range<'_> {
        let inner = match &self.repr {
            Repr::Skiplist(s) => RangeInner::Order(s.order.range(start, end)),
            Repr::Listpack(p) => {
                let end = end.min(p.len());
                let start = start.min(end);
                let slice: Vec<ZEntry<'_>> = p.iter().skip(start).take(end - start).collect();
                RangeInner::Packed(slice.into_iter())
            }
        };
        Range { inner }
    }

    /// The member at a 0-based ascending rank.
    pub fn get_by_rank(&self, rank: usize) -> Option<ZEntry<'_>> {
        match &self.repr {
            Repr::Listpack(p) => p.iter().nth(rank),
            Repr::Skiplist(s) => s.order.get(rank).map(ScoredMember::view),
        }
    }

    /// The 0-based rank of a member in ascending order.
    pub fn rank(&self, member: &[u8]) -> Option<usize> {
        match &self.repr {
            Repr::Listpack(p) => p.find(member).map(|f| f.rank),
            Repr::Skiplist(s) => {
                let score = *s.scores.get(member)?;
                Some(
                    s.order
                        .partition_point(|e| cmp_key(e, score, member) == Ordering::Less),
                )
            }
        }
    }

    /// The rank of the first member for which `before` is false; `before` must hold
    /// for a prefix of the order and fail for the rest. Used for score and lex bounds.
    pub fn partition_point(&self, before: impl Fn(&ZEntry<'_>) -> bool) -> usize {
        match &self.repr {
            Repr::Listpack(p) => p.iter().position(|e| !before(&e)).unwrap_or(p.len()),
            Repr::Skiplist(s) => s.order.partition_point(|e| before(&e.view())),
        }
    }

    /// Removes the members with ranks in `start..end` (clamped); returns them in order.
    pub fn remove_range(&mut self, start: usize, end: usize) -> Vec<ScoredMember> {
        match &mut self.repr {
            Repr::Listpack(p) => p.remove_range(start, end),
            Repr::Skiplist(s) => {
                let removed = s.order.remove_range(start, end);
                for e in &removed {
                    s.scores.remove(e.member.as_slice());
                }
                removed
            }
        }
    }

    pub(crate) fn mem_usage(&self, samples: usize) -> usize {
        match &self.repr {
            Repr::Listpack(p) => p.heap_bytes(),
            Repr::Skiplist(_) => {
                sampled_size(self.iter().map(|m| m.member.len()), self.len(), 40, samples)
            }
        }
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
            let all: Vec<_> = z.iter().map(|e| (e.score, e.member.to_vec())).collect();
            prop_assert_eq!(&all, &model);
            let back: Vec<_> = z.iter().rev().map(|e| (e.score, e.member.to_vec())).collect();
            let mut rev_model = model.clone();
            rev_model.reverse();
            prop_assert_eq!(back, rev_model);
            for (i, (s, m)) in model.iter().enumerate() {
                prop_assert_eq!(z.rank(m), Some(i));
                let e = z.get_by_rank(i).map(|e| (e.score, e.member.to_vec()));
                prop_assert_eq!(e, Some((*s, m.clone())));
                let below = z.partition_point(|e| e.score < *s);
                prop_assert_eq!(below, model.iter().filter(|(x, _)| x < s).count());
            }
            prop_assert!(z.get_by_rank(model.len()).is_none());
            for start in (0..=model.len()).step_by(37) {
                for end in [start, start + 1, start + 300, model.len()] {
                    let got: Vec<_> = z.range(start, end).map(|e| e.member.to_vec()).collect();
                    let e = end.min(model.len()).max(start);
                    let want: Vec<_> = model[start..e].iter().map(|x| x.1.clone()).collect();
                    prop_assert_eq!(&got, &want);
                    let got_rev: Vec<_> = z.range(start, end).rev().map(|e| e.member.to_vec()).collect();
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
