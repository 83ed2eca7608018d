//! The compact encoding of a small sorted set (Redis's `listpack`): entries in
//! (score, member) order, packed back to back in one buffer.
//!
//! Each entry is the score, the member's length as a LEB128 varint and the member. A
//! score that is a whole number below 2^53 in magnitude (ranks, counts, timestamps:
//! most scores) is one varint, its zigzag form shifted left with the low bit set,
//! one byte for -32..=31; any other score is a zero byte and the `f64`'s eight bytes,
//! as Redis's listpack stores integral scores as integers. So a member with a small
//! score costs its bytes plus two, where a score map and an order index cost two heap
//! blocks and about 70 bytes of headers per member. Every
//! operation walks the buffer, as Redis's listpack does; the owner keeps the set at
//! most `zset-max-listpack-entries` long. The entry count leads the buffer, as in
//! the hash's packed pairs, so the whole encoding is one `Vec`.

use std::cmp::Ordering;

use super::{ScoredMember, ZEntry};
use crate::value::packed::{
    buffer_count, items_start, put_varint, read_varint, reserve_counted, set_buffer_count,
    varint_len,
};

/// Sorted (score, member) entries packed into one buffer.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PackedScores {
    /// The count header, then the entries; empty when there are none.
    buf: Vec<u8>,
}

/// A member found in a [`PackedScores`]: its rank, score and bytes' extent.
#[derive(Debug, Clone, Copy)]
pub struct Found {
    /// 0-based rank.
    pub rank: usize,
    /// The score.
    pub score: f64,
    start: usize,
    end: usize,
}

/// Whole scores below this magnitude are stored as integers (every integer up to it
/// is an exact `f64`).
const EXACT_INTEGERS: f64 = 9_007_199_254_740_992.0; // 2^53

/// The first byte of a score stored as an `f64` (an integer's varint is odd, so its
/// first byte never is zero).
const FLOAT_SCORE: u8 = 0;

/// Appends `score`'s encoding.
fn put_score(out: &mut Vec<u8>, score: f64) {
    let whole = score.fract() == 0.0 && score.abs() < EXACT_INTEGERS;
    // -0.0 keeps its sign as a float (it is whole, but no integer is it).
    if whole && !(score == 0.0 && score.is_sign_negative()) {
        // |score| < 2^53: the cast is exact and the zigzag form below 2^54.
        let n = score as i64;
        let zigzag = ((n << 1) ^ (n >> 63)) as u64;
        let mut v = (zigzag << 1) | 1;
        while v >= 0x80 {
            out.push((v as u8 & 0x7f) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    } else {
        out.push(FLOAT_SCORE);
        out.extend_from_slice(&score.to_le_bytes());
    }
}

/// The most bytes a score takes (a float's marker and eight bytes).
const MAX_SCORE_BYTES: usize = 9;

/// Reads the score at `at`: (score, bytes it took). Only called on offsets where this
/// module wrote a score.
fn read_score(buf: &[u8], at: usize) -> (f64, usize) {
    if buf[at] == FLOAT_SCORE {
        let mut bytes = [0u8; 8];
        bytes.copy_from_slice(&buf[at + 1..at + 9]);
        return (f64::from_le_bytes(bytes), 9);
    }
    let (mut v, mut shift, mut i) = (0u64, 0, at);
    loop {
        let b = buf[i];
        v |= u64::from(b & 0x7f) << shift;
        i += 1;
        if b & 0x80 == 0 {
            break;
        }
        shift += 7;
    }
    let zigzag = v >> 1;
    let n = (zigzag >> 1) as i64 ^ -((zigzag & 1) as i64);
    (n as f64, i - at)
}

/// Reads the entry at `at`: the entry and the offset after it. Only called on offsets
/// where this module wrote an entry, so the bytes are there.
fn read_entry(buf: &[u8], at: usize) -> (ZEntry<'_>, usize) {
    let (score, score_bytes) = read_score(buf, at);
    let (len, header) = read_varint(buf, at + score_bytes);
    let start = at + score_bytes + header;
    let entry = ZEntry {
        score,
        member: &buf[start..start + len],
    };
    (entry, start + len)
}

impl PackedScores {
    /// No entries.
    pub fn new() -> PackedScores {
        PackedScores::default()
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        buffer_count(&self.buf)
    }

    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// Bytes held on the heap (the buffer's capacity).
    pub fn heap_bytes(&self) -> usize {
        self.buf.capacity()
    }

    /// Entries in ascending order, each with the offset it starts at.
    fn entries(&self) -> impl Iterator<Item = (usize, ZEntry<'_>)> + '_ {
        let mut at = items_start(&self.buf);
        std::iter::from_fn(move || {
            if at >= self.buf.len() {
                return None;
            }
            let start = at;
            let (entry, next) = read_entry(&self.buf, at);
            at = next;
            Some((start, entry))
        })
    }

    /// Entries in ascending order.
    pub fn iter(&self) -> impl Iterator<Item = ZEntry<'_>> + '_ {
        self.entries().map(|(_, e)| e)
    }

    /// The entry of `member`.
    pub fn find(&self, member: &[u8]) -> Option<Found> {
        let mut at = items_start(&self.buf);
        let mut rank = 0;
        while at < self.buf.len() {
            let (entry, end) = read_entry(&self.buf, at);
            if entry.member == member {
                return Some(Found {
                    rank,
                    score: entry.score,
                    start: at,
                    end,
                });
            }
            at = end;
            rank += 1;
        }
        None
    }

    /// Inserts an entry at its place in the order (the caller has checked that
    /// `member` is not present).
    pub fn insert(&mut self, score: f64, member: &[u8]) {
        let mut encoded =
            Vec::with_capacity(MAX_SCORE_BYTES + varint_len(member.len()) + member.len());
        put_score(&mut encoded, score);
        put_varint(&mut encoded, member.len());
        encoded.extend_from_slice(member);
        let count = self.len() + 1;
        // An empty buffer gets its count first, so the place is found after.
        reserve_counted(&mut self.buf, encoded.len());
        let at = self
            .entries()
            .find(|(_, e)| e.cmp_key(score, member) != Ordering::Less)
            .map_or(self.buf.len(), |(at, _)| at);
        self.buf.splice(at..at, encoded);
        set_buffer_count(&mut self.buf, count);
    }

    /// Removes the entry found by [`find`](Self::find).
    pub fn remove(&mut self, found: Found) {
        let count = self.len() - 1;
        self.buf.drain(found.start..found.end);
        set_buffer_count(&mut self.buf, count);
        self.shrink_if_sparse();
    }

    /// The offset of the entry at `rank` (the buffer's end past the last).
    fn offset_of(&self, rank: usize) -> usize {
        self.entries()
            .nth(rank)
            .map_or(self.buf.len(), |(at, _)| at)
    }

    /// Removes the entries with ranks in `start..end` (clamped); returns them in order.
    pub fn remove_range(&mut self, start: usize, end: usize) -> Vec<ScoredMember> {
        let end = end.min(self.len());
        if start >= end {
            return Vec::new();
        }
        let from = self.offset_of(start);
        let to = self.offset_of(end);
        let removed: Vec<ScoredMember> = self
            .iter()
            .skip(start)
            .take(end - start)
            .map(ZEntry::to_owned)
            .collect();
        let count = self.len() - removed.len();
        self.buf.drain(from..to);
        set_buffer_count(&mut self.buf, count);
        self.shrink_if_sparse();
        removed
    }

    /// Gives back capacity once at least half the buffer is unused.
    fn shrink_if_sparse(&mut self) {
        if self.buf.capacity() >= 2 * self.buf.len() + 16 {
            self.buf.shrink_to_fit();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn score_len(score: f64) -> usize {
        let mut out = Vec::new();
        put_score(&mut out, score);
        out.len()
    }

    #[test]
    fn every_score_reads_back_exactly() {
        let edge = EXACT_INTEGERS;
        let scores = [
            0.0,
            -0.0,
            1.0,
            -1.0,
            31.0,
            -32.0,
            32.0,
            1.5,
            -2.25,
            1e300,
            f64::MIN_POSITIVE,
            f64::INFINITY,
            f64::NEG_INFINITY,
            edge - 1.0,
            -(edge - 1.0),
            edge,
            -edge,
            1_733_500_000_000.0,
            i64::MAX as f64,
        ];
        for score in scores {
            let mut buf = vec![0xAA];
            put_score(&mut buf, score);
            assert!(buf.len() - 1 <= MAX_SCORE_BYTES, "{score}");
            let (back, len) = read_score(&buf, 1);
            assert_eq!(
                (back.to_bits(), len),
                (score.to_bits(), buf.len() - 1),
                "{score}"
            );
        }
        assert_eq!(score_len(0.0), 1);
        assert_eq!(score_len(-32.0), 1);
        assert_eq!(score_len(1.5), 9);
        assert_eq!(score_len(-0.0), 9);
    }

    #[test]
    fn a_member_with_a_small_score_costs_its_bytes_plus_two() {
        let mut p = PackedScores::new();
        for i in (0..5).rev() {
            p.insert(f64::from(i), format!("member{i}").as_bytes());
        }
        assert_eq!(p.heap_bytes(), 1 + 5 * (1 + 1 + 7));
        assert_eq!(std::mem::size_of::<PackedScores>(), 24);
        let order: Vec<_> = p.iter().map(|e| e.score).collect();
        assert_eq!(order, vec![0.0, 1.0, 2.0, 3.0, 4.0]);
    }

    use proptest::prelude::*;

    proptest! {
        /// Whole and fractional scores of every magnitude come back in order and
        /// exact, whichever way each was stored, past 128 members (where the count
        /// takes a second byte) and back.
        #[test]
        fn mixed_scores_keep_their_order_and_bits(scores in proptest::collection::vec(
            prop_oneof![
                (-100i64..100).prop_map(|n| n as f64),
                proptest::num::i64::ANY.prop_map(|n| n as f64),
                proptest::num::f64::NORMAL | proptest::num::f64::ZERO | proptest::num::f64::INFINITE,
            ],
            0..200,
        )) {
            let mut p = PackedScores::new();
            let mut model: Vec<(f64, Vec<u8>)> = Vec::new();
            for (i, score) in scores.into_iter().enumerate() {
                let member = format!("m{i}").into_bytes();
                p.insert(score, &member);
                model.push((score, member));
            }
            model.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
            let got: Vec<(u64, Vec<u8>)> = p.iter().map(|e| (e.score.to_bits(), e.member.to_vec())).collect();
            let want: Vec<(u64, Vec<u8>)> = model.iter().map(|(s, m)| (s.to_bits(), m.clone())).collect();
            prop_assert_eq!(p.len(), want.len());
            // Equal scores (0.0 and -0.0 among them) may order either way by sign;
            // compare as sets of (score, member) within the same score order.
            let scores_of = |v: &[(u64, Vec<u8>)]| v.iter().map(|(b, _)| f64::from_bits(*b)).collect::<Vec<_>>();
            prop_assert!(scores_of(&got).windows(2).all(|w| w[0] <= w[1]));
            let mut g = got.clone();
            let mut w = want.clone();
            g.sort();
            w.sort();
            prop_assert_eq!(g, w);
            // Removing all but the first 100 (from the top) leaves them whole.
            let removed = p.remove_range(100, usize::MAX);
            prop_assert_eq!(removed.len(), got.len().saturating_sub(100));
            prop_assert_eq!(p.len(), got.len().min(100));
            let left: Vec<(u64, Vec<u8>)> = p.iter().map(|e| (e.score.to_bits(), e.member.to_vec())).collect();
            prop_assert_eq!(&left[..], &got[..got.len().min(100)]);
        }
    }

    #[test]
    fn ties_order_by_member_and_ranges_come_out_whole() {
        let mut p = PackedScores::new();
        for m in [&b"c"[..], b"a", b"b", &[b'z'; 200]] {
            p.insert(1.0, m);
        }
        p.insert(-1.0, b"first");
        let members: Vec<_> = p.iter().map(|e| e.member.to_vec()).collect();
        assert_eq!(
            members,
            vec![
                b"first".to_vec(),
                b"a".to_vec(),
                b"b".to_vec(),
                b"c".to_vec(),
                vec![b'z'; 200]
            ]
        );
        let found = p.find(b"c").expect("present");
        assert_eq!((found.rank, found.score), (3, 1.0));
        let removed = p.remove_range(1, 3);
        assert_eq!(removed.len(), 2);
        assert_eq!(removed[1].member, b"b");
        assert_eq!(p.len(), 3);
        p.remove(p.find(&[b'z'; 200]).expect("present"));
        assert_eq!(
            p.iter().map(|e| e.member).collect::<Vec<_>>(),
            vec![&b"first"[..], b"c"]
        );
        assert!(p.remove_range(2, 9).is_empty());
        assert_eq!(p.remove_range(0, 2).len(), 2);
        assert!(p.is_empty() && p.heap_bytes() == 0);
        p.insert(2.0, b"again");
        assert_eq!((p.len(), p.find(b"again").map(|f| f.rank)), (1, Some(0)));
    }
}
