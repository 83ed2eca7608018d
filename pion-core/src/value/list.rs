//! The list type: a double-ended queue of byte strings (`quicklist` in Redis 7.0).
//!
//! Besides storage, this module owns Redis's index arithmetic for lists — negative
//! indices counting from the tail, `LRANGE`/`LTRIM` clamping, `LREM`'s signed count and
//! `LPOS`'s rank — so every command (and the property test below) shares one
//! definition of it.

use std::collections::VecDeque;

use super::sampled_size;

/// One end of a list (`LEFT`/`RIGHT` in `LMOVE` and `LMPOP`; head and tail in Redis).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// The head (index 0).
    Left,
    /// The tail (index -1).
    Right,
}

/// A list value.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ListValue {
    items: VecDeque<Vec<u8>>,
}

impl ListValue {
    /// An empty list.
    pub fn new() -> ListValue {
        ListValue::default()
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The elements, for reading.
    pub fn items(&self) -> &VecDeque<Vec<u8>> {
        &self.items
    }

    /// The elements, for editing.
    pub fn items_mut(&mut self) -> &mut VecDeque<Vec<u8>> {
        &mut self.items
    }

    /// Adds an element at one end.
    pub fn push(&mut self, end: End, value: Vec<u8>) {
        match end {
            End::Left => self.items.push_front(value),
            End::Right => self.items.push_back(value),
        }
    }

    /// Removes and returns the element at one end.
    pub fn pop(&mut self, end: End) -> Option<Vec<u8>> {
        match end {
            End::Left => self.items.pop_front(),
            End::Right => self.items.pop_back(),
        }
    }

    /// Removes up to `count` elements from one end, in the order they were popped.
    pub fn pop_many(&mut self, end: End, count: usize) -> Vec<Vec<u8>> {
        let n = count.min(self.len());
        match end {
            End::Left => self.items.drain(..n).collect(),
            End::Right => {
                let start = self.len() - n;
                self.items.drain(start..).rev().collect()
            }
        }
    }

    /// Position of a Redis index (negative counts from the tail), if it is inside.
    fn position(&self, index: i64) -> Option<usize> {
        let len = self.len() as i64;
        let i = if index < 0 { len + index } else { index };
        (0..len).contains(&i).then_some(i as usize)
    }

    /// The element at a Redis index (`LINDEX`).
    pub fn get(&self, index: i64) -> Option<&[u8]> {
        self.position(index).map(|i| self.items[i].as_slice())
    }

    /// Replaces the element at a Redis index (`LSET`); false when out of range.
    pub fn set(&mut self, index: i64, value: Vec<u8>) -> bool {
        match self.position(index) {
            Some(i) => {
                self.items[i] = value;
                true
            }
            None => false,
        }
    }

    /// The elements between two Redis indices, both inclusive, clamped as `LRANGE` does.
    pub fn range(&self, start: i64, stop: i64) -> impl Iterator<Item = &Vec<u8>> {
        let (from, to) = clamp_range(start, stop, self.len()).unwrap_or((0, 0));
        self.items.range(from..to)
    }

    /// Keeps only the elements between two Redis indices, clamped as `LTRIM` does
    /// (an empty range empties the list).
    pub fn trim(&mut self, start: i64, stop: i64) {
        match clamp_range(start, stop, self.len()) {
            Some((from, to)) => {
                self.items.truncate(to);
                self.items.drain(..from);
            }
            None => self.items.clear(),
        }
    }

    /// Inserts `value` before or after the first element equal to `pivot` (`LINSERT`);
    /// the new length, or `None` when the pivot is absent.
    pub fn insert(&mut self, pivot: &[u8], before: bool, value: Vec<u8>) -> Option<usize> {
        let at = self.items.iter().position(|e| e == pivot)?;
        self.items.insert(if before { at } else { at + 1 }, value);
        Some(self.len())
    }

    /// Removes elements equal to `elem` (`LREM`): the first `count` from the head when
    /// positive, the last `|count|` from the tail when negative, all when zero. Returns
    /// how many were removed.
    pub fn remove(&mut self, count: i64, elem: &[u8]) -> usize {
        let limit = usize::try_from(count.unsigned_abs()).unwrap_or(usize::MAX);
        let total = self.items.iter().filter(|e| *e == elem).count();
        let removing = if count == 0 { total } else { total.min(limit) };
        // Matches are numbered from the head; keep those outside the removed window.
        let first_removed = if count < 0 { total - removing } else { 0 };
        let mut seen = 0usize;
        self.items.retain(|e| {
            if e != elem {
                return true;
            }
            let n = seen;
            seen += 1;
            !(first_removed..first_removed + removing).contains(&n)
        });
        removing
    }

    /// Indices of elements equal to `elem` (`LPOS`), scanning from the head for a
    /// positive `rank` and from the tail for a negative one, skipping the first
    /// `|rank| - 1` matches, returning at most `max` (0 = all) and looking at no more
    /// than `maxlen` elements (0 = all). `rank` must not be zero.
    ///
    /// Redis negates the rank in a C `long`, so `i64::MIN` stays negative and skips no
    /// match at all: it behaves like rank -1. This reproduces that.
    pub fn positions(&self, elem: &[u8], rank: i64, max: usize, maxlen: usize) -> Vec<usize> {
        let skip = if rank == i64::MIN {
            0
        } else {
            rank.unsigned_abs().saturating_sub(1)
        };
        let len = self.len();
        let scan = if maxlen == 0 { len } else { maxlen.min(len) };
        let from_tail = rank < 0;
        let mut out = Vec::new();
        let mut matches = 0u64;
        for step in 0..scan {
            let i = if from_tail { len - 1 - step } else { step };
            if self.items[i] != elem {
                continue;
            }
            matches += 1;
            if matches > skip {
                out.push(i);
                if out.len() == max {
                    break;
                }
            }
        }
        out
    }

    pub(crate) fn mem_usage(&self, samples: usize) -> usize {
        sampled_size(self.items.iter().map(Vec::len), self.len(), 16, samples)
    }
}

impl FromIterator<Vec<u8>> for ListValue {
    fn from_iter<I: IntoIterator<Item = Vec<u8>>>(iter: I) -> Self {
        ListValue {
            items: iter.into_iter().collect(),
        }
    }
}

/// Clamps Redis's inclusive `start..=stop` (negative = from the tail) to a half-open
/// range of positions, or `None` when it selects nothing.
fn clamp_range(start: i64, stop: i64, len: usize) -> Option<(usize, usize)> {
    let len = len as i64;
    // `len + x` cannot overflow: len is non-negative and x negative.
    let start = if start < 0 { len + start } else { start }.max(0);
    let stop = if stop < 0 { len + stop } else { stop };
    if start > stop || start >= len {
        return None;
    }
    let stop = stop.min(len - 1);
    Some((start as usize, stop as usize + 1))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn list(items: &[&str]) -> ListValue {
        items.iter().map(|s| s.as_bytes().to_vec()).collect()
    }

    fn strs(l: &ListValue) -> Vec<String> {
        l.items()
            .iter()
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .collect()
    }

    #[test]
    fn range_clamps_like_redis() {
        let l = list(&["a", "b", "c", "d", "e"]);
        let r = |s, e| l.range(s, e).cloned().collect::<Vec<_>>().len();
        assert_eq!(r(0, -1), 5);
        assert_eq!(r(-100, 100), 5);
        assert_eq!(r(3, 1), 0);
        assert_eq!(r(5, 10), 0);
        assert_eq!(r(0, -6), 0);
        assert_eq!(r(0, -5), 1);
        assert_eq!(r(i64::MIN, i64::MAX), 5);
    }

    #[test]
    fn remove_counts_from_either_end() {
        let mut l = list(&["a", "b", "a", "b", "a", "b"]);
        assert_eq!(l.remove(2, b"a"), 2);
        assert_eq!(strs(&l), ["b", "b", "a", "b"]);
        assert_eq!(l.remove(-1, b"b"), 1);
        assert_eq!(strs(&l), ["b", "b", "a"]);
        assert_eq!(l.remove(i64::MIN, b"b"), 2);
        assert_eq!(strs(&l), ["a"]);
        assert_eq!(l.remove(0, b"z"), 0);
    }

    #[test]
    fn positions_follow_rank_count_and_maxlen() {
        let l = list(&["a", "b", "c", "a", "b", "c", "a"]);
        assert_eq!(l.positions(b"a", 1, 1, 0), [0]);
        assert_eq!(l.positions(b"a", 2, 1, 0), [3]);
        assert_eq!(l.positions(b"a", -2, 1, 0), [3]);
        assert_eq!(l.positions(b"a", -1, 0, 3), [6]);
        assert_eq!(l.positions(b"a", 2, 1, 3), Vec::<usize>::new());
        assert_eq!(l.positions(b"a", i64::MIN, 0, 0), [6, 3, 0]);
        assert_eq!(l.positions(b"a", -i64::MAX, 0, 0), Vec::<usize>::new());
        assert_eq!(l.positions(b"a", 1, 2, 0), [0, 3]);
    }

    #[test]
    fn redis_7_0_reports_quicklist() {
        assert_eq!(
            super::super::Value::List(list(&["a"])).encoding(),
            "quicklist"
        );
    }

    #[test]
    fn pop_many_keeps_pop_order() {
        let mut l = list(&["a", "b", "c", "d"]);
        assert_eq!(l.pop_many(End::Right, 2), [b"d".to_vec(), b"c".to_vec()]);
        assert_eq!(l.pop_many(End::Left, 10), [b"a".to_vec(), b"b".to_vec()]);
        assert!(l.is_empty());
    }

    /// One list operation, with arbitrary (often out-of-range) indices.
    #[derive(Debug, Clone)]
    enum Op {
        Push(bool, u8),
        Pop(bool, usize),
        Set(i64, u8),
        Insert(u8, bool, u8),
        Trim(i64, i64),
        Rem(i64, u8),
    }

    fn op() -> impl Strategy<Value = Op> {
        let idx = -12i64..12;
        prop_oneof![
            (any::<bool>(), 0u8..4).prop_map(|(l, v)| Op::Push(l, v)),
            (any::<bool>(), 0usize..4).prop_map(|(l, n)| Op::Pop(l, n)),
            (idx.clone(), 0u8..4).prop_map(|(i, v)| Op::Set(i, v)),
            (0u8..4, any::<bool>(), 0u8..4).prop_map(|(p, b, v)| Op::Insert(p, b, v)),
            (idx.clone(), idx.clone()).prop_map(|(s, e)| Op::Trim(s, e)),
            (-3i64..3, 0u8..4).prop_map(|(c, v)| Op::Rem(c, v)),
        ]
    }

    /// The model's view of a Redis index: the position it names, if inside.
    fn model_pos(len: usize, i: i64) -> Option<usize> {
        let len = len as i64;
        let p = if i < 0 { len + i } else { i };
        (p >= 0 && p < len).then_some(p as usize)
    }

    /// The model's inclusive range, computed element by element.
    fn model_range(m: &VecDeque<Vec<u8>>, s: i64, e: i64) -> Vec<Vec<u8>> {
        let len = m.len() as i64;
        let s = if s < 0 { (len + s).max(0) } else { s };
        let e = if e < 0 { len + e } else { e };
        (0..len)
            .filter(|&i| i >= s && i <= e)
            .map(|i| m[i as usize].clone())
            .collect()
    }

    proptest! {
        #[test]
        fn list_matches_vecdeque_model(
            ops in proptest::collection::vec(op(), 0..60),
            probes in proptest::collection::vec((-12i64..12, -12i64..12), 4),
        ) {
            let mut l = ListValue::new();
            let mut m: VecDeque<Vec<u8>> = VecDeque::new();
            for op in ops {
                match op {
                    Op::Push(left, v) => {
                        let end = if left { End::Left } else { End::Right };
                        l.push(end, vec![v]);
                        if left { m.push_front(vec![v]) } else { m.push_back(vec![v]) }
                    }
                    Op::Pop(left, n) => {
                        let end = if left { End::Left } else { End::Right };
                        let got = l.pop_many(end, n);
                        let mut want = Vec::new();
                        for _ in 0..n {
                            let x = if left { m.pop_front() } else { m.pop_back() };
                            want.extend(x);
                        }
                        prop_assert_eq!(got, want);
                    }
                    Op::Set(i, v) => {
                        let ok = l.set(i, vec![v]);
                        let p = model_pos(m.len(), i);
                        if let Some(p) = p { m[p] = vec![v]; }
                        prop_assert_eq!(ok, p.is_some());
                    }
                    Op::Insert(p, before, v) => {
                        let got = l.insert(&[p], before, vec![v]);
                        let at = m.iter().position(|e| e[..] == [p]);
                        if let Some(at) = at {
                            m.insert(if before { at } else { at + 1 }, vec![v]);
                        }
                        prop_assert_eq!(got, at.map(|_| m.len()));
                    }
                    Op::Trim(s, e) => {
                        l.trim(s, e);
                        m = model_range(&m, s, e).into();
                    }
                    Op::Rem(c, v) => {
                        let n = l.remove(c, &[v]);
                        // Remove one matching element at a time from the chosen end.
                        let mut removed = 0;
                        let limit = if c == 0 { usize::MAX } else { c.unsigned_abs() as usize };
                        while removed < limit {
                            let found = if c < 0 {
                                m.iter().rposition(|e| e[..] == [v])
                            } else {
                                m.iter().position(|e| e[..] == [v])
                            };
                            let Some(at) = found else { break };
                            m.remove(at);
                            removed += 1;
                        }
                        prop_assert_eq!(n, removed);
                    }
                }
                prop_assert_eq!(l.items(), &m);
                for &(s, e) in &probes {
                    let got: Vec<Vec<u8>> = l.range(s, e).cloned().collect();
                    prop_assert_eq!(got, model_range(&m, s, e));
                    prop_assert_eq!(l.get(s), model_pos(m.len(), s).map(|p| &m[p][..]));
                }
                for v in 0u8..4 {
                    let all: Vec<usize> =
                        (0..m.len()).filter(|&i| m[i][..] == [v]).collect();
                    prop_assert_eq!(l.positions(&[v], 1, 0, 0), all.clone());
                    let rev: Vec<usize> = all.iter().rev().copied().collect();
                    prop_assert_eq!(l.positions(&[v], -1, 0, 0), rev.clone());
                    prop_assert_eq!(l.positions(&[v], -2, 1, 0), rev.get(1).copied().into_iter().collect::<Vec<_>>());
                }
            }
        }
    }
}
