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
