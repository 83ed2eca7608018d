//! Redis's `intset`: sorted distinct integers stored at the narrowest width (2, 4 or
//! 8 bytes) that holds them all.
//!
//! A set of small integers held as a `Vec<i64>` pays 8 bytes per member plus the
//! vector's growth slack; most integer sets (ids, flags, counters) fit 2 or 4 bytes.
//! Like Redis, the width only grows (on the insert of a member that needs it), the
//! buffer grows by exactly what an insert needs, and lookups are binary searches.
//! The width is the buffer's first byte, as Redis's intset header holds its encoding,
//! so the set is a single `Vec` (24 bytes) inside the value that holds it.

/// Sorted distinct integers at a shared width.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IntSet {
    /// Empty, or the width (bytes per member: 2, 4 or 8) followed by `len * width`
    /// bytes, little-endian members in ascending order.
    bytes: Vec<u8>,
}

/// Bytes before the members: the width.
const HEADER: usize = 1;

/// The width of a set that has never held a member.
const NARROWEST: u8 = 2;

impl Default for IntSet {
    fn default() -> Self {
        IntSet::new()
    }
}

/// The narrowest width that holds `v`.
fn width_of(v: i64) -> u8 {
    if i16::try_from(v).is_ok() {
        2
    } else if i32::try_from(v).is_ok() {
        4
    } else {
        8
    }
}

fn read(bytes: &[u8], width: u8, index: usize) -> i64 {
    let w = usize::from(width);
    let at = &bytes[index * w..index * w + w];
    match width {
        2 => i64::from(i16::from_le_bytes([at[0], at[1]])),
        4 => i64::from(i32::from_le_bytes([at[0], at[1], at[2], at[3]])),
        _ => {
            let mut b = [0u8; 8];
            b.copy_from_slice(at);
            i64::from_le_bytes(b)
        }
    }
}

/// `v`'s bytes at `width` (which holds it).
fn encode(v: i64, width: u8) -> ([u8; 8], usize) {
    let mut out = [0u8; 8];
    out.copy_from_slice(&v.to_le_bytes());
    // Little-endian: the low `width` bytes of a value that fits are its encoding.
    (out, usize::from(width))
}

impl IntSet {
    /// No members, at the narrowest width.
    pub fn new() -> IntSet {
        IntSet { bytes: Vec::new() }
    }

    /// The members' bytes.
    #[inline]
    fn members(&self) -> &[u8] {
        self.bytes.get(HEADER..).unwrap_or(&[])
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        self.members().len() / usize::from(self.width())
    }

    /// Whether there are no members.
    pub fn is_empty(&self) -> bool {
        self.members().is_empty()
    }

    /// Bytes per member (2, 4 or 8), as Redis's `intset` encoding field says.
    pub fn width(&self) -> u8 {
        self.bytes.first().copied().unwrap_or(NARROWEST)
    }

    /// Bytes held on the heap.
    pub fn heap_bytes(&self) -> usize {
        self.bytes.capacity()
    }

    /// The member at `index` (ascending order).
    pub fn get(&self, index: usize) -> Option<i64> {
        (index < self.len()).then(|| read(self.members(), self.width(), index))
    }

    /// The members in ascending order.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = i64> + '_ {
        let (members, width) = (self.members(), self.width());
        (0..self.len()).map(move |i| read(members, width, i))
    }

    /// `Ok(index)` of `v`, or `Err(index)` where it would go.
    pub fn search(&self, v: i64) -> Result<usize, usize> {
        let (members, width) = (self.members(), self.width());
        if width_of(v) > width {
            // Wider than every member: it sorts past one end.
            return Err(if v < 0 { 0 } else { self.len() });
        }
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match read(members, width, mid).cmp(&v) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Ok(mid),
            }
        }
        Err(lo)
    }

    /// Whether `v` is a member.
    pub fn contains(&self, v: i64) -> bool {
        self.search(v).is_ok()
    }

    /// Adds `v`; returns whether it was new. Widens every member first when `v`
    /// needs more bytes.
    pub fn insert(&mut self, v: i64) -> bool {
        let Err(pos) = self.search(v) else {
            return false;
        };
        if width_of(v) > self.width() {
            self.widen(width_of(v));
        }
        let width = self.width();
        let (encoded, n) = encode(v, width);
        if self.bytes.is_empty() {
            self.bytes.reserve_exact(HEADER + n);
            self.bytes.push(width);
        } else {
            self.bytes.reserve_exact(n);
        }
        let at = HEADER + pos * usize::from(width);
        self.bytes.splice(at..at, encoded[..n].iter().copied());
        true
    }

    /// Removes `v`; returns whether it was a member. The width stays, as in Redis.
    pub fn remove(&mut self, v: i64) -> bool {
        let Ok(pos) = self.search(v) else {
            return false;
        };
        let w = usize::from(self.width());
        let at = HEADER + pos * w;
        self.bytes.drain(at..at + w);
        if self.bytes.capacity() >= 2 * self.bytes.len() + 16 {
            self.bytes.shrink_to_fit();
        }
        true
    }

    fn widen(&mut self, width: u8) {
        let mut bytes = Vec::with_capacity(HEADER + self.len() * usize::from(width));
        bytes.push(width);
        for v in self.iter() {
            let (encoded, n) = encode(v, width);
            bytes.extend_from_slice(&encoded[..n]);
        }
        self.bytes = bytes;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn widens_only_when_a_member_needs_it() {
        let mut s = IntSet::new();
        for v in [1000, 1004, 1001, 1003, 1002] {
            assert!(s.insert(v));
        }
        assert!(!s.insert(1002));
        assert_eq!((s.width(), s.heap_bytes()), (2, HEADER + 10));
        assert_eq!(std::mem::size_of::<IntSet>(), 24);
        assert!(s.insert(-70_000));
        assert_eq!(s.width(), 4);
        assert!(s.insert(i64::MAX));
        assert!(s.insert(i64::MIN));
        assert_eq!(s.width(), 8);
        assert_eq!(
            s.iter().collect::<Vec<_>>(),
            vec![i64::MIN, -70_000, 1000, 1001, 1002, 1003, 1004, i64::MAX]
        );
        assert!(s.remove(i64::MAX) && s.remove(i64::MIN) && !s.remove(5));
        assert_eq!(s.width(), 8);
        assert_eq!(s.get(0), Some(-70_000));
        assert_eq!(s.get(6), None);
    }

    proptest! {
        #[test]
        fn matches_a_sorted_model(ops in proptest::collection::vec((any::<bool>(), prop_oneof![
            -40i64..40,
            any::<i16>().prop_map(i64::from),
            any::<i32>().prop_map(i64::from),
            any::<i64>(),
        ]), 0..200)) {
            let mut s = IntSet::new();
            let mut model = std::collections::BTreeSet::new();
            for (ins, v) in ops {
                if ins {
                    prop_assert_eq!(s.insert(v), model.insert(v));
                } else {
                    prop_assert_eq!(s.remove(v), model.remove(&v));
                }
                prop_assert_eq!(s.len(), model.len());
            }
            prop_assert_eq!(s.iter().collect::<Vec<_>>(), model.iter().copied().collect::<Vec<_>>());
            for v in &model {
                prop_assert!(s.contains(*v));
            }
        }
    }
}
