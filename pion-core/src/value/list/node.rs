//! One node of a list: its elements packed back to back in one buffer (a node of
//! Redis's quicklist, a listpack).
//!
//! Held one heap block per element, a list pays a 24-byte header and an allocation
//! for each, about 56 bytes for a 6-byte element where Redis's listpack pays 8. Here an
//! element is `len data len'`: its length as a LEB128 varint, its bytes, and the
//! length again with the varint's bytes reversed, so the node can be walked from
//! either end (popping the tail never scans the node). The buffer grows by exactly
//! what a write needs; the owning list keeps each node small, so edits that shift
//! bytes move at most a few kilobytes.

use std::ops::Range;

use super::End;
use crate::value::packed::{put_varint, read_varint, varint_len};

/// A run of list elements packed into one buffer.
///
/// A node that holds elements starts with a header of two little-endian `u32`s:
/// `head`, the offset of the first element, and the element count (in the buffer,
/// so a node is one `Vec`, 24 bytes, and a small list stays inside its value). The
/// elements are `buf[head..]`. The bytes between the header and `head` are a gap that
/// pushes at the front fill and pops from the front leave, so neither moves the
/// node's bytes each time (a gap is opened an eighth of the node wide, and closed
/// once it is larger than the elements). An empty node has an empty buffer.
#[derive(Clone, Default)]
pub(super) struct Node {
    buf: Vec<u8>,
}

/// Bytes of the header: `head`, then the count.
pub(super) const HEADER: usize = 8;

/// Spare capacity a node keeps after shrinking edits before it gives it back.
const SLACK_BYTES: usize = 64;

/// The encoded size of an element of `len` bytes.
pub(super) fn entry_len(len: usize) -> usize {
    2 * varint_len(len) + len
}

/// Appends the encoding of `data` to `out`.
fn put_entry(out: &mut Vec<u8>, data: &[u8]) {
    put_varint(out, data.len());
    out.extend_from_slice(data);
    let back = out.len();
    put_varint(out, data.len());
    out[back..].reverse();
}

/// The encoding of `data`.
fn encoded(data: &[u8]) -> Vec<u8> {
    let mut entry = Vec::with_capacity(entry_len(data.len()));
    put_entry(&mut entry, data);
    entry
}

/// Reads the reversed varint that ends just before `end`: (value, bytes it took).
/// Only called on offsets where this module ended an element.
fn read_back_varint(buf: &[u8], end: usize) -> (usize, usize) {
    let mut n = 0usize;
    let mut shift = 0;
    let mut i = end;
    loop {
        i -= 1;
        let b = buf[i];
        n |= usize::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return (n, end - i);
        }
        shift += 7;
    }
}

impl Node {
    /// A node holding one element.
    pub(super) fn with(data: &[u8]) -> Node {
        let mut buf = Vec::with_capacity(HEADER + entry_len(data.len()));
        buf.extend_from_slice(&[0; HEADER]);
        put_entry(&mut buf, data);
        let mut node = Node { buf };
        node.set_fields(HEADER, 1);
        node
    }

    /// A node of `count` elements already encoded in `elements`.
    fn from_encoded(elements: &[u8], count: usize) -> Node {
        if count == 0 {
            return Node::default();
        }
        let mut buf = Vec::with_capacity(HEADER + elements.len());
        buf.extend_from_slice(&[0; HEADER]);
        buf.extend_from_slice(elements);
        let mut node = Node { buf };
        node.set_fields(HEADER, count);
        node
    }

    /// The header field at `at` (0: head, 4: count) of a non-empty buffer.
    #[inline]
    fn field(&self, at: usize) -> Option<usize> {
        let bytes = self.buf.get(at..at + 4)?;
        Some(u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) as usize)
    }

    /// Writes the header (the buffer holds one). Both fit a `u32`: `head` is kept
    /// below `u32::MAX` by closing the gap, and a node's count by its byte size.
    fn set_fields(&mut self, head: usize, count: usize) {
        if let Some(header) = self.buf.first_chunk_mut::<HEADER>() {
            header[..4].copy_from_slice(&(head as u32).to_le_bytes());
            header[4..].copy_from_slice(&(count as u32).to_le_bytes());
        }
    }

    /// Writes a header into an empty buffer, before elements are added.
    fn open(&mut self) {
        if self.buf.is_empty() {
            self.buf.extend_from_slice(&[0; HEADER]);
            self.set_fields(HEADER, 0);
        }
    }

    fn set_count(&mut self, count: usize) {
        self.set_fields(self.head(), count);
    }

    /// Number of elements.
    pub(super) fn count(&self) -> usize {
        self.field(4).unwrap_or(0)
    }

    /// Offset of the first element.
    fn head(&self) -> usize {
        self.field(0).unwrap_or(HEADER)
    }

    /// Bytes of the gap before the first element.
    fn gap(&self) -> usize {
        self.head() - HEADER
    }

    /// Bytes the elements take, encoded.
    pub(super) fn bytes(&self) -> usize {
        self.buf.len().saturating_sub(self.head())
    }

    /// Heap bytes this node holds.
    pub(super) fn heap_bytes(&self) -> usize {
        self.buf.capacity()
    }

    /// Moves the first element to `at` (its own offset, after an edit that shrank the
    /// elements), closing the gap once it is wider than the elements (or than `head`
    /// can say), so the gap never costs more than the elements it fronts.
    fn set_head(&mut self, at: usize) {
        let count = self.count();
        if count == 0 {
            self.buf.clear();
        } else if at - HEADER > self.buf.len() - at || at > u32::MAX as usize {
            self.buf.drain(HEADER..at);
            self.set_fields(HEADER, count);
        } else {
            self.set_fields(at, count);
        }
        // Give back what pops and edits freed once it is most of the buffer (a node
        // drained by RPOP kept its peak size).
        if self.buf.capacity() > 2 * self.buf.len() + SLACK_BYTES {
            self.buf.shrink_to_fit();
        }
    }

    /// The element starting at `at`: its bytes' range and the offset after it (the
    /// trailing length takes as many bytes as the leading one).
    #[inline]
    fn entry_at(&self, at: usize) -> (Range<usize>, usize) {
        // Most elements are shorter than 128 bytes: a one-byte length.
        let first = self.buf[at];
        if first < 0x80 {
            let start = at + 1;
            let end = start + usize::from(first);
            return (start..end, end + 1);
        }
        let (len, header) = read_varint(&self.buf, at);
        let start = at + header;
        (start..start + len, start + len + header)
    }

    /// The element ending at `end`: its first byte's offset (its header's).
    fn entry_before(&self, end: usize) -> usize {
        let (len, trailer) = read_back_varint(&self.buf, end);
        end - 2 * trailer - len
    }

    /// Byte offset of element `idx` (`idx == count` is the end), walking from the
    /// nearer end.
    fn offset_of(&self, idx: usize) -> usize {
        let count = self.count();
        if idx <= count / 2 {
            (0..idx).fold(self.head(), |at, _| self.entry_at(at).1)
        } else {
            (idx..count).fold(self.buf.len(), |end, _| self.entry_before(end))
        }
    }

    /// The element at `idx` (< count).
    pub(super) fn get(&self, idx: usize) -> &[u8] {
        let (range, _) = self.entry_at(self.offset_of(idx));
        &self.buf[range]
    }

    /// Inserts `data` so it becomes element `idx` (`idx <= count`).
    pub(super) fn insert(&mut self, idx: usize, data: &[u8]) {
        if idx == 0 {
            return self.push_front(data);
        }
        let at = self.offset_of(idx);
        let entry = encoded(data);
        self.buf.reserve_exact(entry.len());
        self.buf.splice(at..at, entry);
        self.set_count(self.count() + 1);
    }

    /// Inserts `data` as the first element, into the gap (opened first if too small).
    fn push_front(&mut self, data: &[u8]) {
        let entry = encoded(data);
        if self.buf.is_empty() {
            self.buf.reserve_exact(HEADER + entry.len());
            self.open();
        }
        if self.gap() < entry.len() {
            let gap = entry.len() + self.bytes() / 8;
            let add = gap - self.gap();
            self.buf.reserve_exact(add);
            self.buf.splice(HEADER..HEADER, std::iter::repeat_n(0, add));
            // `gap` is at most an eighth of a bounded node past one element, and a
            // node taking a push at its front is bounded (the list checks).
            self.set_fields(HEADER + gap, self.count());
        }
        let head = self.head();
        let at = head - entry.len();
        self.buf[at..head].copy_from_slice(&entry);
        self.set_fields(at, self.count() + 1);
    }

    /// Adds `data` at one end.
    pub(super) fn push(&mut self, end: End, data: &[u8]) {
        match end {
            End::Left => self.push_front(data),
            End::Right => self.push_back(data),
        }
    }

    /// Removes and returns the element at one end (the node is not empty).
    pub(super) fn pop(&mut self, end: End) -> Vec<u8> {
        match end {
            End::Left => self.remove(0),
            End::Right => self.pop_back(),
        }
    }

    /// Drops `n` elements (`n <= count`) from one end.
    pub(super) fn shed(&mut self, end: End, n: usize) {
        match end {
            End::Left => self.drop_front(n),
            End::Right => self.truncate(self.count() - n),
        }
    }

    /// Appends `data` as the last element.
    pub(super) fn push_back(&mut self, data: &[u8]) {
        let extra = entry_len(data.len());
        if self.buf.is_empty() {
            self.buf.reserve_exact(HEADER + extra);
            self.open();
        } else {
            self.buf.reserve_exact(extra);
        }
        put_entry(&mut self.buf, data);
        self.set_count(self.count() + 1);
    }

    /// Removes element `idx` (< count) and returns it.
    pub(super) fn remove(&mut self, idx: usize) -> Vec<u8> {
        let at = self.offset_of(idx);
        let (range, end) = self.entry_at(at);
        let data = self.buf[range].to_vec();
        self.set_count(self.count() - 1);
        if idx == 0 {
            self.set_head(end);
        } else {
            self.buf.drain(at..end);
            self.set_head(self.head());
        }
        data
    }

    /// Removes and returns the last element (the node is not empty).
    pub(super) fn pop_back(&mut self) -> Vec<u8> {
        let at = self.entry_before(self.buf.len());
        let (range, _) = self.entry_at(at);
        let data = self.buf[range].to_vec();
        self.buf.truncate(at);
        self.set_count(self.count() - 1);
        self.set_head(self.head());
        data
    }

    /// Replaces element `idx` (< count) with `data`.
    pub(super) fn replace(&mut self, idx: usize, data: &[u8]) {
        let at = self.offset_of(idx);
        let (_, end) = self.entry_at(at);
        let entry = encoded(data);
        if entry.len() > end - at {
            self.buf.reserve_exact(entry.len() - (end - at));
        }
        self.buf.splice(at..end, entry);
        self.set_head(self.head());
    }

    /// Keeps the first `keep` elements (`keep <= count`).
    pub(super) fn truncate(&mut self, keep: usize) {
        let at = self.offset_of(keep);
        self.buf.truncate(at);
        self.set_count(keep);
        self.set_head(self.head());
    }

    /// Drops the first `n` elements (`n <= count`).
    pub(super) fn drop_front(&mut self, n: usize) {
        let at = self.offset_of(n);
        self.set_count(self.count() - n);
        self.set_head(at);
    }

    /// Moves elements `idx..` into a new node.
    pub(super) fn split_off(&mut self, idx: usize) -> Node {
        let at = self.offset_of(idx);
        let tail = Node::from_encoded(self.buf.get(at..).unwrap_or(&[]), self.count() - idx);
        self.buf.truncate(at);
        self.buf.shrink_to_fit();
        self.set_count(idx);
        self.set_head(self.head());
        tail
    }

    /// Keeps the elements for which `keep` is true, in order; returns how many went.
    pub(super) fn retain(&mut self, mut keep: impl FnMut(&[u8]) -> bool) -> usize {
        let mut out = Vec::new();
        let mut kept = 0;
        let mut at = self.head();
        while at < self.buf.len() {
            let (range, end) = self.entry_at(at);
            if keep(&self.buf[range]) {
                out.extend_from_slice(&self.buf[at..end]);
                kept += 1;
            }
            at = end;
        }
        let removed = self.count() - kept;
        if removed > 0 {
            *self = Node::from_encoded(&out, kept);
        }
        removed
    }

    /// The elements, from either end.
    pub(super) fn iter(&self) -> NodeIter<'_> {
        NodeIter {
            node: self,
            front: self.head(),
            back: self.buf.len(),
        }
    }
}

/// The elements of a [`Node`], in order or reversed.
pub(super) struct NodeIter<'a> {
    node: &'a Node,
    /// Offset of the next element from the front.
    front: usize,
    /// One past the last element not yet taken from the back.
    back: usize,
}

impl<'a> Iterator for NodeIter<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        if self.front >= self.back {
            return None;
        }
        let (range, end) = self.node.entry_at(self.front);
        self.front = end;
        Some(&self.node.buf[range])
    }
}

impl DoubleEndedIterator for NodeIter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        if self.front >= self.back {
            return None;
        }
        let at = self.node.entry_before(self.back);
        self.back = at;
        let (range, _) = self.node.entry_at(at);
        Some(&self.node.buf[range])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn items(n: &Node) -> Vec<Vec<u8>> {
        n.iter().map(<[u8]>::to_vec).collect()
    }

    #[test]
    fn long_elements_walk_both_ways() {
        // Lengths on both sides of each varint width.
        let lens = [0usize, 1, 127, 128, 300, 16_383, 16_384, 70_000];
        let mut n = Node::with(b"first");
        for (i, &len) in lens.iter().enumerate() {
            n.push_back(&vec![i as u8; len]);
        }
        let forward = items(&n);
        let mut backward: Vec<Vec<u8>> = n.iter().rev().map(<[u8]>::to_vec).collect();
        backward.reverse();
        assert_eq!(forward, backward);
        for (i, &len) in lens.iter().enumerate() {
            assert_eq!(n.get(i + 1), &vec![i as u8; len][..]);
        }
        assert_eq!(
            n.bytes(),
            forward.iter().map(|e| entry_len(e.len())).sum::<usize>()
        );
        assert_eq!(n.pop_back(), vec![7u8; 70_000]);
        assert_eq!(n.count(), lens.len());
        assert_eq!(std::mem::size_of::<Node>(), 24);
    }

    /// One node operation with indices reduced modulo the node's size.
    #[derive(Debug, Clone)]
    enum Op {
        Insert(usize, Vec<u8>),
        Push(Vec<u8>),
        PushFront(Vec<u8>),
        PopFront,
        Remove(usize),
        PopBack,
        Replace(usize, Vec<u8>),
        Truncate(usize),
        DropFront(usize),
        Split(usize),
        Retain(u8),
    }

    fn bytes() -> impl Strategy<Value = Vec<u8>> {
        prop_oneof![
            proptest::collection::vec(0u8..3, 0..4),
            proptest::collection::vec(any::<u8>(), 120..140),
        ]
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            (any::<usize>(), bytes()).prop_map(|(i, b)| Op::Insert(i, b)),
            bytes().prop_map(Op::Push),
            bytes().prop_map(Op::PushFront),
            Just(Op::PopFront),
            any::<usize>().prop_map(Op::Remove),
            Just(Op::PopBack),
            (any::<usize>(), bytes()).prop_map(|(i, b)| Op::Replace(i, b)),
            any::<usize>().prop_map(Op::Truncate),
            any::<usize>().prop_map(Op::DropFront),
            any::<usize>().prop_map(Op::Split),
            (0u8..3).prop_map(Op::Retain),
        ]
    }

    proptest! {
        #[test]
        fn node_matches_vec_model(ops in proptest::collection::vec(op(), 0..60)) {
            let mut n = Node::with(b"x");
            let mut m: Vec<Vec<u8>> = vec![b"x".to_vec()];
            for op in ops {
                let len = m.len();
                match op {
                    Op::Insert(i, b) => {
                        let i = i % (len + 1);
                        n.insert(i, &b);
                        m.insert(i, b);
                    }
                    Op::Push(b) => {
                        n.push_back(&b);
                        m.push(b);
                    }
                    Op::PushFront(b) => {
                        n.insert(0, &b);
                        m.insert(0, b);
                    }
                    Op::PopFront if len > 0 => prop_assert_eq!(n.remove(0), m.remove(0)),
                    Op::Remove(i) if len > 0 => {
                        let i = i % len;
                        prop_assert_eq!(n.remove(i), m.remove(i));
                    }
                    Op::PopBack if len > 0 => prop_assert_eq!(Some(n.pop_back()), m.pop()),
                    Op::Replace(i, b) if len > 0 => {
                        let i = i % len;
                        n.replace(i, &b);
                        m[i] = b;
                    }
                    Op::Truncate(k) => {
                        let k = k % (len + 1);
                        n.truncate(k);
                        m.truncate(k);
                    }
                    Op::DropFront(k) => {
                        let k = k % (len + 1);
                        n.drop_front(k);
                        m.drain(..k);
                    }
                    Op::Split(i) => {
                        let i = i % (len + 1);
                        let tail = n.split_off(i);
                        prop_assert_eq!(items(&tail), m.split_off(i));
                    }
                    Op::Retain(v) => {
                        let before = m.len();
                        m.retain(|e| e.first() != Some(&v));
                        prop_assert_eq!(n.retain(|e| e.first() != Some(&v)), before - m.len());
                    }
                    _ => {}
                }
                prop_assert_eq!(n.count(), m.len());
                prop_assert_eq!(items(&n), m.clone());
                let mut rev: Vec<Vec<u8>> = n.iter().rev().map(<[u8]>::to_vec).collect();
                rev.reverse();
                prop_assert_eq!(&rev, &m);
                for (i, e) in m.iter().enumerate() {
                    prop_assert_eq!(n.get(i), &e[..]);
                }
                prop_assert_eq!(n.bytes(), m.iter().map(|e| entry_len(e.len())).sum::<usize>());
                // The gap before the elements never outgrows them, nor the capacity
                // the buffer.
                prop_assert!(n.gap() <= n.bytes(), "gap {} for {} bytes", n.gap(), n.bytes());
                prop_assert!(
                    n.heap_bytes() <= 2 * n.buf.len() + SLACK_BYTES,
                    "capacity {} for {} bytes", n.heap_bytes(), n.buf.len()
                );
                prop_assert_eq!(n.buf.is_empty(), m.is_empty());
            }
        }
    }
}
