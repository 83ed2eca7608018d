//! The key type stored in the slot tables: short keys (most real keys) live inline in
//! the table's bucket, so a lookup compares bytes that are already in cache instead of
//! chasing a pointer to the heap.

use std::borrow::Borrow;
use std::hash::{Hash, Hasher};

/// Longest key stored inline.
const INLINE: usize = 22;

/// A stored key: inline up to 22 bytes, boxed otherwise. Hashes and compares exactly
/// like the `[u8]` it holds, so tables keyed by it are looked up with `&[u8]`.
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
}

impl StoredKey {
    /// The key's bytes.
    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        match self {
            StoredKey::Inline { len, bytes } => &bytes[..usize::from(*len)],
            StoredKey::Heap(b) => b,
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
}
