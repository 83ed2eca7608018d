//! The key type stored in the slot tables: short keys (most real keys) live inline in
//! the table's bucket, so a lookup compares bytes that are already in cache instead of
//! chasing a pointer to the heap.
//!
//! A key with a time to live carries its deadline too, in a heap block before its
//! bytes. Most keys have none, so keeping the deadline here rather than in every
//! entry saves each key 8 bytes (a key's pair in the table is 64 bytes, a size class
//! and a cache line); a volatile key pays a small block instead, as Redis pays an
//! entry in its `expires` dictionary.

use std::borrow::Borrow;
use std::hash::{Hash, Hasher};

/// Longest key stored inline.
const INLINE: usize = 22;

/// A stored key: inline up to 22 bytes, boxed otherwise or when it has a deadline.
/// Hashes and compares exactly like the `[u8]` it holds, so tables keyed by it are
/// looked up with `&[u8]`.
#[derive(Clone)]
pub enum StoredKey {
    /// A short key, held in place.
    Inline {
        /// Length in bytes.
        len: u8,
        /// The bytes (`len` of them are used).
        bytes: [u8; INLINE],
    },
    /// A longer key on the heap.
    Heap(Box<[u8]>),
    /// A key with a deadline: the deadline (Unix ms, [`DEADLINE_BYTES`] little-endian
    /// bytes), then the key.
    Timed(Box<[u8]>),
}

/// Bytes of a timed key's deadline, before its bytes.
const DEADLINE_BYTES: usize = 8;

impl StoredKey {
    /// The key's bytes.
    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        match self {
            StoredKey::Inline { len, bytes } => &bytes[..usize::from(*len)],
            StoredKey::Heap(b) => b,
            StoredKey::Timed(b) => b.get(DEADLINE_BYTES..).unwrap_or(&[]),
        }
    }

    /// The key's deadline (Unix ms), if it has one.
    #[inline]
    pub fn deadline(&self) -> Option<i64> {
        match self {
            StoredKey::Timed(b) => b
                .first_chunk::<DEADLINE_BYTES>()
                .map(|d| i64::from_le_bytes(*d)),
            _ => None,
        }
    }

    /// Sets (or clears) the deadline: in place when the key has one already.
    pub fn set_deadline(&mut self, at: Option<i64>) {
        if let (StoredKey::Timed(block), Some(at)) = (&mut *self, at) {
            if let Some(deadline) = block.first_chunk_mut::<DEADLINE_BYTES>() {
                *deadline = at.to_le_bytes();
                return;
            }
        }
        *self = self.with_deadline(at);
    }

    /// The same key with deadline `at` (or none).
    pub fn with_deadline(&self, at: Option<i64>) -> StoredKey {
        let key = self.as_slice();
        match at {
            None => StoredKey::from(key),
            Some(at) => {
                let mut block = Vec::with_capacity(DEADLINE_BYTES + key.len());
                block.extend_from_slice(&at.to_le_bytes());
                block.extend_from_slice(key);
                StoredKey::Timed(block.into_boxed_slice())
            }
        }
    }
}

impl StoredKey {
    /// Whether this is `key`: what a lookup asks of every candidate it probes.
    #[inline]
    pub fn is(&self, key: &[u8]) -> bool {
        short_eq(self.as_slice(), key)
    }
}

/// Byte equality without a call into `memcmp` for the short keys most lookups
/// compare: up to 16 bytes, two overlapping word loads per side.
#[inline]
fn short_eq(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    let word = |s: &[u8], at: usize| {
        let mut w = [0u8; 8];
        w.copy_from_slice(&s[at..at + 8]);
        u64::from_ne_bytes(w)
    };
    let half = |s: &[u8], at: usize| {
        let mut w = [0u8; 4];
        w.copy_from_slice(&s[at..at + 4]);
        u32::from_ne_bytes(w)
    };
    match n {
        // The two loads overlap in the middle when n < 16; together they cover all.
        8..=16 => word(a, 0) == word(b, 0) && word(a, n - 8) == word(b, n - 8),
        4..=7 => half(a, 0) == half(b, 0) && half(a, n - 4) == half(b, n - 4),
        _ => a == b,
    }
}

impl From<&[u8]> for StoredKey {
    fn from(key: &[u8]) -> StoredKey {
        if key.len() <= INLINE {
            let mut bytes = [0u8; INLINE];
            bytes[..key.len()].copy_from_slice(key);
            StoredKey::Inline {
                len: key.len() as u8,
                bytes,
            }
        } else {
            StoredKey::Heap(key.into())
        }
    }
}

impl Borrow<[u8]> for StoredKey {
    #[inline]
    fn borrow(&self) -> &[u8] {
        self.as_slice()
    }
}

impl Hash for StoredKey {
    #[inline]
    fn hash<H: Hasher>(&self, state: &mut H) {
        // Must equal `<[u8] as Hash>::hash` for `Borrow<[u8]>` lookups to work.
        self.as_slice().hash(state);
    }
}

impl PartialEq for StoredKey {
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for StoredKey {}

impl std::fmt::Debug for StoredKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", String::from_utf8_lossy(self.as_slice()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_comparison_agrees_with_slice_equality() {
        let base: Vec<u8> = (0..40u8).map(|i| i.wrapping_mul(37)).collect();
        for n in 0..=40 {
            let a = &base[..n];
            assert!(short_eq(a, a), "{n}");
            assert!(!short_eq(a, &base[..n.saturating_sub(1)]) || n == 0);
            for flip in 0..n {
                let mut b = a.to_vec();
                b[flip] ^= 0x80;
                assert!(!short_eq(a, &b), "length {n}, byte {flip}");
            }
        }
    }
    use std::collections::HashMap;

    #[test]
    fn inline_and_heap_keys_look_up_by_slice() {
        let mut m: HashMap<StoredKey, u32> = HashMap::new();
        let short = b"user:1".as_slice();
        let long = vec![b'x'; 100];
        let edge = vec![b'y'; INLINE];
        m.insert(StoredKey::from(short), 1);
        m.insert(StoredKey::from(long.as_slice()), 2);
        m.insert(StoredKey::from(edge.as_slice()), 3);
        m.insert(StoredKey::from(&b""[..]), 4);
        assert_eq!(m.get(short), Some(&1));
        assert_eq!(m.get(long.as_slice()), Some(&2));
        assert_eq!(m.get(edge.as_slice()), Some(&3));
        assert_eq!(m.get(&b""[..]), Some(&4));
        assert_eq!(m.get(&b"user:2"[..]), None);
        assert!(matches!(
            StoredKey::from(edge.as_slice()),
            StoredKey::Inline { .. }
        ));
        assert_eq!(std::mem::size_of::<StoredKey>(), 24);
    }

    #[test]
    fn a_deadline_travels_with_the_key_and_leaves_it_unchanged() {
        let mut m: HashMap<StoredKey, u32> = HashMap::new();
        let long = vec![b'z'; 40];
        for (i, key) in [&b"k"[..], &b""[..], &long].into_iter().enumerate() {
            let plain = StoredKey::from(key);
            assert_eq!(plain.deadline(), None);
            let timed = plain.with_deadline(Some(-5 - i as i64));
            assert_eq!(timed.as_slice(), key);
            assert_eq!(timed.deadline(), Some(-5 - i as i64));
            assert!(timed == plain && timed.is(key));
            m.insert(timed.clone(), i as u32);
            assert_eq!(m.get(key), Some(&(i as u32)));
            let mut moved = timed.clone();
            moved.set_deadline(Some(42));
            assert_eq!((moved.as_slice(), moved.deadline()), (key, Some(42)));
            moved.set_deadline(None);
            assert_eq!((moved.as_slice(), moved.deadline()), (key, None));
            let cleared = timed.with_deadline(None);
            assert_eq!((cleared.as_slice(), cleared.deadline()), (key, None));
            assert_eq!(
                timed.with_deadline(Some(i64::MAX)).deadline(),
                Some(i64::MAX)
            );
        }
        assert!(matches!(
            StoredKey::from(&b"k"[..]).with_deadline(None),
            StoredKey::Inline { .. }
        ));
    }
}
