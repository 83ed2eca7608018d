//! A slot table's index: the positions of its pairs, hashed by their keys.
//!
//! Nearly every slot holds far fewer than 65,536 keys (a billion keys spread over
//! the 16,384 slots is 61,000 a slot), so positions are kept as `u16`: a bucket is
//! then three bytes (the position and hashbrown's control byte) instead of five,
//! which is about three bytes a key at the index's usual load. A slot that grows past
//! `u16` positions moves to `u32` ones, once, and stays there.

use hashbrown::HashTable;

/// Positions of a table's pairs, hashed by their keys. The caller supplies each
/// position's hash (`rehash`) when the index grows, and the test of a position's key
/// (`is_key`) when it looks one up.
#[derive(Debug)]
pub(crate) enum Positions {
    /// Every position is below 65,536.
    Narrow(HashTable<u16>),
    /// Some position was not.
    Wide(HashTable<u32>),
}

impl Default for Positions {
    fn default() -> Self {
        Positions::Narrow(HashTable::new())
    }
}

impl Positions {
    /// The position whose key has `hash` and passes `is_key`.
    #[inline]
    pub fn find(&self, hash: u64, is_key: impl Fn(usize) -> bool) -> Option<usize> {
        match self {
            Positions::Narrow(t) => t
                .find(hash, |&p| is_key(usize::from(p)))
                .map(|&p| usize::from(p)),
            Positions::Wide(t) => t.find(hash, |&p| is_key(p as usize)).map(|&p| p as usize),
        }
    }

    /// Adds `position` (not present) for a key with `hash`.
    pub fn insert(&mut self, hash: u64, position: usize, rehash: impl Fn(usize) -> u64) {
        if let Positions::Narrow(t) = self {
            match u16::try_from(position) {
                Ok(p) => {
                    t.insert_unique(hash, p, |&p| rehash(usize::from(p)));
                    return;
                }
                Err(_) => self.widen(&rehash),
            }
        }
        if let Positions::Wide(t) = self {
            // A slot never holds 2^32 keys (the whole keyspace would be 300 GiB of keys).
            let p = u32::try_from(position).unwrap_or(u32::MAX);
            t.insert_unique(hash, p, |&p| rehash(p as usize));
        }
    }

    /// Moves every position to a `u32` index.
    fn widen(&mut self, rehash: &impl Fn(usize) -> u64) {
        if let Positions::Narrow(narrow) = self {
            let mut wide = HashTable::with_capacity(narrow.len() * 2);
            for &p in narrow.iter() {
                let p = usize::from(p);
                // Below 65,536: fits a u32.
                wide.insert_unique(rehash(p), p as u32, |&q| rehash(q as usize));
            }
            *self = Positions::Wide(wide);
        }
    }

    /// Removes the position whose key has `hash` and passes `is_key`; returns it.
    pub fn remove(&mut self, hash: u64, is_key: impl Fn(usize) -> bool) -> Option<usize> {
        match self {
            Positions::Narrow(t) => {
                let found = t.find_entry(hash, |&p| is_key(usize::from(p))).ok()?;
                Some(usize::from(found.remove().0))
            }
            Positions::Wide(t) => {
                let found = t.find_entry(hash, |&p| is_key(p as usize)).ok()?;
                Some(found.remove().0 as usize)
            }
        }
    }

    /// Records that the pair at `from` (whose key has `hash`) moved to `to`, a lower
    /// position.
    pub fn moved(&mut self, hash: u64, from: usize, to: usize) {
        match self {
            Positions::Narrow(t) => {
                if let (Some(p), Ok(to)) = (
                    t.find_mut(hash, |&p| usize::from(p) == from),
                    u16::try_from(to),
                ) {
                    *p = to;
                }
            }
            Positions::Wide(t) => {
                if let (Some(p), Ok(to)) =
                    (t.find_mut(hash, |&p| p as usize == from), u32::try_from(to))
                {
                    *p = to;
                }
            }
        }
    }

    /// Number of buckets.
    pub fn capacity(&self) -> usize {
        match self {
            Positions::Narrow(t) => t.capacity(),
            Positions::Wide(t) => t.capacity(),
        }
    }

    /// Shrinks the buckets to what `len` positions need.
    pub fn shrink_to(&mut self, len: usize, rehash: impl Fn(usize) -> u64) {
        match self {
            Positions::Narrow(t) => t.shrink_to(len, |&p| rehash(usize::from(p))),
            Positions::Wide(t) => t.shrink_to(len, |&p| rehash(p as usize)),
        }
    }

    /// Bytes the buckets take (a position and a control byte each).
    #[cfg(test)]
    pub fn bytes(&self) -> usize {
        match self {
            Positions::Narrow(t) => t.capacity() * 3,
            Positions::Wide(t) => t.capacity() * 5,
        }
    }
}
