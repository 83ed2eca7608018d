//! Byte-string pairs packed back to back in one buffer: the compact encoding of small
//! hashes (Redis's `listpack`).
//!
//! A small hash held as a vector of `(Vec<u8>, Vec<u8>)` pays 48 bytes of headers and
//! two heap blocks per field, about 80 bytes for a 6-byte field and value, where
//! Redis's listpack pays a few. Here each pair is `len(field) field len(value) value`,
//! lengths as LEB128 varints (one byte below 128), in insertion order, and the buffer
//! grows by exactly what a write needs, so a field costs its bytes plus two. Lookups
//! walk the buffer, as Redis's do; the owner keeps the pair count small
//! (`hash-max-listpack-entries`).
//!
//! The pair count leads the buffer as a varint (one byte below 128 pairs: see
//! [`buffer_count`]), as the listpack's header holds it, so the collection is a
//! single `Vec`: 24 bytes, which keeps the value that holds it within 32 and a key's
//! slot-table pair at 64.

use std::fmt;

/// Pairs of byte strings in insertion order, packed into one buffer.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct PackedPairs {
    /// The count header, then the pairs; empty when there are none.
    buf: Vec<u8>,
}

/// Where a pair sits in the buffer, as [`PackedPairs::find`] reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PairAt {
    /// First byte of the pair (the field's length).
    start: usize,
    /// First byte of the value's length.
    value_header: usize,
    /// One past the value's last byte.
    end: usize,
}

impl fmt::Debug for PackedPairs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        debug_pairs(f, self.iter())
    }
}

/// Formats byte-string pairs as a map of (lossy) text, for the `Debug` of the types
/// that hold them.
pub(crate) fn debug_pairs<'a>(
    f: &mut fmt::Formatter<'_>,
    pairs: impl Iterator<Item = (&'a [u8], &'a [u8])>,
) -> fmt::Result {
    f.debug_map()
        .entries(pairs.map(|(k, v)| (String::from_utf8_lossy(k), String::from_utf8_lossy(v))))
        .finish()
}

/// The item count of a packed buffer (0 for an empty one). A non-empty buffer
/// starts with its count as a varint: one byte below 128 items, two below 16,384
/// (a fixed `u32` would cost three bytes more on every small collection, and at
/// five members it tipped a sorted set's buffer into the next size class).
#[inline]
pub(crate) fn buffer_count(buf: &[u8]) -> usize {
    if buf.is_empty() {
        0
    } else {
        read_varint(buf, 0).0
    }
}

/// Where a packed buffer's items start: after the count (0 for an empty buffer).
#[inline]
pub(crate) fn items_start(buf: &[u8]) -> usize {
    if buf.is_empty() {
        0
    } else {
        read_varint(buf, 0).1
    }
}

/// Makes room for `extra` more bytes, writing a zero count first into an empty
/// buffer (one allocation for both).
pub(crate) fn reserve_counted(buf: &mut Vec<u8>, extra: usize) {
    if buf.is_empty() {
        buf.reserve_exact(1 + extra);
        buf.push(0);
    } else {
        buf.reserve_exact(extra);
    }
}

/// Stores the item count of a buffer [`reserve_counted`] opened; a buffer left
/// with no items is given back whole. A count that needs a longer (or shorter)
/// varint than the old one moves the items, once at 128 items and once at 16,384.
pub(crate) fn set_buffer_count(buf: &mut Vec<u8>, count: usize) {
    if count == 0 {
        *buf = Vec::new();
        return;
    }
    let old = items_start(buf);
    let mut header = [0u8; 10];
    let mut len = 0;
    let mut n = count;
    while n >= 0x80 {
        header[len] = (n as u8 & 0x7f) | 0x80;
        n >>= 7;
        len += 1;
    }
    header[len] = n as u8;
    len += 1;
    if len == old {
        buf[..len].copy_from_slice(&header[..len]);
    } else {
        // Exactly the room the count needs: `splice` alone would grow the buffer
        // the way a vector grows (doubling it).
        buf.reserve_exact(len.saturating_sub(old));
        buf.splice(..old, header[..len].iter().copied());
    }
}

/// Bytes of `n`'s varint.
pub(crate) fn varint_len(mut n: usize) -> usize {
    let mut bytes = 1;
    while n >= 0x80 {
        n >>= 7;
        bytes += 1;
    }
    bytes
}

pub(crate) fn put_varint(buf: &mut Vec<u8>, mut n: usize) {
    while n >= 0x80 {
        buf.push((n as u8 & 0x7f) | 0x80);
        n >>= 7;
    }
    buf.push(n as u8);
}

/// Reads the varint at `at`: (value, bytes it took). Only called on offsets this
/// module wrote a varint at, so the bytes are there.
pub(crate) fn read_varint(buf: &[u8], at: usize) -> (usize, usize) {
    let mut n = 0usize;
    let mut shift = 0;
    let mut i = at;
    loop {
        let b = buf[i];
        n |= usize::from(b & 0x7f) << shift;
        i += 1;
        if b & 0x80 == 0 {
            return (n, i - at);
        }
        shift += 7;
    }
}

/// Reads the length-prefixed string at `at`: (its bytes' range, the offset after it).
fn read_string(buf: &[u8], at: usize) -> (std::ops::Range<usize>, usize) {
    let (len, header) = read_varint(buf, at);
    let start = at + header;
    (start..start + len, start + len)
}

/// The encoded size of a pair.
fn pair_len(field: &[u8], value: &[u8]) -> usize {
    varint_len(field.len()) + field.len() + varint_len(value.len()) + value.len()
}

impl PackedPairs {
    /// No pairs.
    pub fn new() -> PackedPairs {
        PackedPairs::default()
    }

    /// Number of pairs.
    pub fn len(&self) -> usize {
        buffer_count(&self.buf)
    }

    /// Whether there are no pairs.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// Bytes held on the heap (the buffer's capacity).
    pub fn heap_bytes(&self) -> usize {
        self.buf.capacity()
    }

    /// The pairs in insertion order.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            buf: &self.buf,
            at: items_start(&self.buf),
        }
    }

    /// The pair at position `index` (insertion order).
    pub fn nth(&self, index: usize) -> Option<(&[u8], &[u8])> {
        self.iter().nth(index)
    }

    /// Where the pair whose field is `field` sits.
    pub fn find(&self, field: &[u8]) -> Option<PairAt> {
        let mut at = items_start(&self.buf);
        while at < self.buf.len() {
            let (f, value_header) = read_string(&self.buf, at);
            let (_, end) = read_string(&self.buf, value_header);
            if &self.buf[f] == field {
                return Some(PairAt {
                    start: at,
                    value_header,
                    end,
                });
            }
            at = end;
        }
        None
    }

    /// The value of the pair at `at`.
    pub fn value_at(&self, at: PairAt) -> &[u8] {
        &self.buf[read_string(&self.buf, at.value_header).0]
    }

    /// Appends a pair (the caller has checked that `field` is not present).
    pub fn push(&mut self, field: &[u8], value: &[u8]) {
        let count = self.len() + 1;
        reserve_counted(&mut self.buf, pair_len(field, value));
        put_varint(&mut self.buf, field.len());
        self.buf.extend_from_slice(field);
        put_varint(&mut self.buf, value.len());
        self.buf.extend_from_slice(value);
        set_buffer_count(&mut self.buf, count);
    }

    /// Replaces the value of the pair at `at`, keeping its position.
    pub fn set_value(&mut self, at: PairAt, value: &[u8]) {
        let (old, _) = read_string(&self.buf, at.value_header);
        if old.len() == value.len() {
            self.buf[old].copy_from_slice(value);
            return;
        }
        let mut encoded = Vec::with_capacity(varint_len(value.len()) + value.len());
        put_varint(&mut encoded, value.len());
        encoded.extend_from_slice(value);
        let old_len = at.end - at.value_header;
        if encoded.len() > old_len {
            self.buf.reserve_exact(encoded.len() - old_len);
        }
        self.buf.splice(at.value_header..at.end, encoded);
        self.shrink_if_sparse();
    }

    /// Removes the pair at `at`.
    pub fn remove(&mut self, at: PairAt) {
        let count = self.len() - 1;
        self.buf.drain(at.start..at.end);
        set_buffer_count(&mut self.buf, count);
        self.shrink_if_sparse();
    }

    /// Gives back capacity once at least half the buffer is unused.
    fn shrink_if_sparse(&mut self) {
        if self.buf.capacity() >= 2 * self.buf.len() + 16 {
            self.buf.shrink_to_fit();
        }
    }
}

/// The pairs of a [`PackedPairs`], in insertion order.
pub struct Iter<'a> {
    buf: &'a [u8],
    at: usize,
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a [u8], &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        if self.at >= self.buf.len() {
            return None;
        }
        let (field, value_header) = read_string(self.buf, self.at);
        let (value, end) = read_string(self.buf, value_header);
        self.at = end;
        Some((&self.buf[field], &self.buf[value]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn varints_round_trip_at_their_boundaries() {
        for n in [0, 1, 127, 128, 16_383, 16_384, 1 << 21, usize::MAX >> 1] {
            let mut buf = vec![0xAA];
            put_varint(&mut buf, n);
            assert_eq!(buf.len() - 1, varint_len(n), "{n}");
            assert_eq!(read_varint(&buf, 1), (n, varint_len(n)), "{n}");
        }
    }

    #[test]
    fn a_small_pair_costs_its_bytes_plus_two() {
        let mut p = PackedPairs::new();
        for i in 0..5 {
            p.push(
                format!("field{i}").as_bytes(),
                format!("value{i}").as_bytes(),
            );
        }
        assert_eq!(p.len(), 5);
        assert_eq!(p.heap_bytes(), 1 + 5 * (2 + 6 + 6));
        assert_eq!(std::mem::size_of::<PackedPairs>(), 24);
    }

    #[test]
    fn the_count_takes_a_second_byte_at_128_pairs_and_gives_it_back() {
        let mut p = PackedPairs::new();
        let field = |i: usize| format!("f{i}").into_bytes();
        for i in 0..300 {
            p.push(&field(i), b"v");
            assert_eq!(p.len(), i + 1);
            assert_eq!(items_start(&p.buf), varint_len(i + 1));
            // The buffer grows by what each write needs, the count's byte included.
            assert_eq!(p.heap_bytes(), p.buf.len(), "after {} pairs", i + 1);
        }
        assert_eq!(p.nth(299).map(|(f, _)| f.to_vec()), Some(field(299)));
        for i in (0..300).rev() {
            let at = p.find(&field(i)).expect("present");
            p.remove(at);
            assert_eq!(p.len(), i);
            // Every pair left is still read whole from the new start.
            assert_eq!(p.iter().count(), i);
            assert_eq!(p.nth(0).map(|(f, _)| f.to_vec()), (i > 0).then(|| field(0)));
        }
        assert!(p.is_empty());
        let mut big = vec![0u8];
        set_buffer_count(&mut big, 20_000);
        assert_eq!((buffer_count(&big), items_start(&big)), (20_000, 3));
    }

    #[test]
    fn values_are_replaced_in_place_and_pairs_removed() {
        let mut p = PackedPairs::new();
        p.push(b"a", b"1");
        p.push(b"b", &[b'x'; 200]);
        p.push(b"c", b"3");
        let at = p.find(b"b").expect("present");
        assert_eq!(p.value_at(at), &[b'x'; 200][..]);
        p.set_value(at, b"short");
        p.set_value(p.find(b"a").expect("present"), &[b'y'; 130]);
        let pairs: Vec<_> = p.iter().collect();
        assert_eq!(
            pairs,
            vec![
                (&b"a"[..], &[b'y'; 130][..]),
                (&b"b"[..], &b"short"[..]),
                (&b"c"[..], &b"3"[..])
            ]
        );
        p.remove(p.find(b"a").expect("present"));
        assert_eq!(p.nth(0), Some((&b"b"[..], &b"short"[..])));
        assert_eq!(p.nth(2), None);
        assert!(p.find(b"a").is_none());
        assert_eq!(p.len(), 2);
        assert!(p.heap_bytes() < 1 + 2 * (2 + 5 + 2 + 1) + 16);
        p.remove(p.find(b"b").expect("present"));
        p.remove(p.find(b"c").expect("present"));
        assert_eq!((p.is_empty(), p.len(), p.heap_bytes()), (true, 0, 0));
    }

    proptest! {
        #[test]
        fn matches_an_ordered_model(ops in proptest::collection::vec((0u8..3, 0u8..20, 0usize..300), 0..200)) {
            let mut p = PackedPairs::new();
            let mut model: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
            for (op, f, vlen) in ops {
                let f = vec![f; usize::from(f) * 7 % 150];
                let v = vec![b'v'; vlen];
                let pos = model.iter().position(|(k, _)| *k == f);
                match (op, pos) {
                    (0, Some(i)) => { p.set_value(p.find(&f).expect("present"), &v); model[i].1 = v; }
                    (0, None) => { p.push(&f, &v); model.push((f, v)); }
                    (1, Some(i)) => { p.remove(p.find(&f).expect("present")); model.remove(i); }
                    _ => prop_assert_eq!(p.find(&f).map(|at| p.value_at(at).to_vec()), pos.map(|i| model[i].1.clone())),
                }
                prop_assert_eq!(p.len(), model.len());
            }
            let got: Vec<_> = p.iter().map(|(f, v)| (f.to_vec(), v.to_vec())).collect();
            prop_assert_eq!(got, model);
        }
    }
}
