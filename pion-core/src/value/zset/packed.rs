//! The compact encoding of a small sorted set (Redis's `listpack`): entries in
//! (score, member) order, packed back to back in one buffer.
//!
//! Each entry is the score's eight bytes, the member's length as a LEB128 varint and
//! the member, so a member costs its bytes plus nine, where a score map and an order
//! index cost two heap blocks and about 70 bytes of headers per member. Every
//! operation walks the buffer, as Redis's listpack does; the owner keeps the set at
//! most `zset-max-listpack-entries` long. The entry count leads the buffer, as in
//! the hash's packed pairs, so the whole encoding is one `Vec`.

use std::cmp::Ordering;

use super::{ScoredMember, ZEntry};
use crate::value::packed::{
    buffer_count, put_varint, read_varint, reserve_counted, set_buffer_count, varint_len,
    COUNT_BYTES,
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

/// Reads the entry at `at`: the entry and the offset after it. Only called on offsets
/// where this module wrote an entry, so the bytes are there.
fn read_entry(buf: &[u8], at: usize) -> (ZEntry<'_>, usize) {
    let mut score = [0u8; 8];
    score.copy_from_slice(&buf[at..at + 8]);
    let (len, header) = read_varint(buf, at + 8);
    let start = at + 8 + header;
    let entry = ZEntry {
        score: f64::from_le_bytes(score),
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
        let mut at = COUNT_BYTES;
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
        let mut at = COUNT_BYTES;
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
        let at = self
            .entries()
            .find(|(_, e)| e.cmp_key(score, member) != Ordering::Less)
            .map_or(self.buf.len().max(COUNT_BYTES), |(at, _)| at);
        let mut encoded = Vec::with_capacity(8 + varint_len(member.len()) + member.len());
        encoded.extend_from_slice(&score.to_le_bytes());
        put_varint(&mut encoded, member.len());
        encoded.extend_from_slice(member);
        let count = self.len() + 1;
        reserve_counted(&mut self.buf, encoded.len());
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

    #[test]
    fn a_small_member_costs_its_bytes_plus_nine() {
        let mut p = PackedScores::new();
        for i in (0..5).rev() {
            p.insert(f64::from(i), format!("member{i}").as_bytes());
        }
        assert_eq!(p.heap_bytes(), COUNT_BYTES + 5 * (8 + 1 + 7));
        assert_eq!(std::mem::size_of::<PackedScores>(), 24);
        let order: Vec<_> = p.iter().map(|e| e.score).collect();
        assert_eq!(order, vec![0.0, 1.0, 2.0, 3.0, 4.0]);
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
