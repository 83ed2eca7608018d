//! The set type: a sorted `intset` while every member is an integer and the set is
//! small, a hash table otherwise.
//!
//! Clients observe the encoding: an intset lists its members in ascending order and
//! `SSCAN` returns it whole with cursor 0, while the hash table answers in hash order
//! and scans with a resumable cursor ([`ScanTable`]). Like Redis, a set never converts
//! back to an intset.

use rand::Rng;

use super::hash::table::ScanTable;
use super::intset::IntSet;
use super::EncodingLimits;
use crate::util::num::parse_i64;

/// A set value.
#[derive(Debug, Clone, PartialEq)]
pub struct SetValue {
    repr: Repr,
}

#[derive(Debug, Clone, PartialEq)]
enum Repr {
    IntSet(IntSet),
    /// Boxed, so a small set's value stays the size of its intset's header.
    Table(Box<ScanTable>),
}

impl Default for SetValue {
    fn default() -> Self {
        SetValue::new()
    }
}

impl SetValue {
    /// An empty set (intset encoding, as Redis creates for an integer first member and
    /// for the destination of `SINTERSTORE`, `SUNIONSTORE` and `SDIFFSTORE`).
    pub fn new() -> SetValue {
        SetValue {
            repr: Repr::IntSet(IntSet::new()),
        }
    }

    /// An empty set already in hash-table encoding (Redis creates one when the first
    /// member is not an integer).
    pub fn new_table() -> SetValue {
        SetValue {
            repr: Repr::Table(Box::default()),
        }
    }

    /// An empty set in the encoding Redis picks for this first member.
    pub fn for_first_member(member: &[u8]) -> SetValue {
        if parse_i64(member).is_some() {
            SetValue::new()
        } else {
            SetValue::new_table()
        }
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        match &self.repr {
            Repr::IntSet(v) => v.len(),
            Repr::Table(s) => s.len(),
        }
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The encoding name (`intset` or `hashtable`).
    pub fn encoding(&self) -> &'static str {
        match &self.repr {
            Repr::IntSet(_) => "intset",
            Repr::Table(_) => "hashtable",
        }
    }

    /// Whether the set still has the compact intset encoding.
    pub fn is_compact(&self) -> bool {
        matches!(self.repr, Repr::IntSet(_))
    }

    /// Whether `member` is in the set.
    pub fn contains(&self, member: &[u8]) -> bool {
        match &self.repr {
            Repr::IntSet(v) => parse_i64(member).is_some_and(|i| v.contains(i)),
            Repr::Table(s) => s.contains(member),
        }
    }

    /// Adds a member; returns true if it was not there. An intset converts to a hash
    /// table for a non-integer member or past `set-max-intset-entries` members.
    pub fn insert(&mut self, member: &[u8], limits: &EncodingLimits) -> bool {
        if let Repr::IntSet(v) = &mut self.repr {
            let Some(i) = parse_i64(member) else {
                self.convert_to_table();
                return self.insert(member, limits);
            };
            if !v.insert(i) {
                return false;
            }
            if v.len() > limits.set_max_intset_entries {
                self.convert_to_table();
            }
            return true;
        }
        match &mut self.repr {
            Repr::Table(s) => !s.contains(member) && s.insert(member, b""),
            Repr::IntSet(_) => false,
        }
    }

    fn convert_to_table(&mut self) {
        if let Repr::IntSet(v) = &self.repr {
            let mut s = ScanTable::with_capacity(v.len());
            for i in v.iter() {
                s.insert(i.to_string().as_bytes(), b"");
            }
            self.repr = Repr::Table(Box::new(s));
        }
    }

    /// Removes a member; returns true if it was there.
    pub fn remove(&mut self, member: &[u8]) -> bool {
        match &mut self.repr {
            Repr::IntSet(v) => parse_i64(member).is_some_and(|i| v.remove(i)),
            Repr::Table(s) => s.remove(member).is_some(),
        }
    }

    /// The members (ascending for an intset, hash order otherwise).
    pub fn members(&self) -> Vec<Vec<u8>> {
        let mut out = Vec::with_capacity(self.len());
        self.for_each(|m| out.push(m.to_vec()));
        out
    }

    /// Calls `f` with every member, in the order [`SetValue::members`] lists them.
    pub fn for_each(&self, mut f: impl FnMut(&[u8])) {
        match &self.repr {
            Repr::IntSet(v) => {
                for i in v.iter() {
                    f(i.to_string().as_bytes());
                }
            }
            Repr::Table(s) => {
                for (m, _) in s.iter() {
                    f(m);
                }
            }
        }
    }

    /// A uniformly chosen member, or `None` when empty (expected O(1)).
    pub fn random(&self, rng: &mut impl Rng) -> Option<Vec<u8>> {
        match &self.repr {
            Repr::IntSet(v) if v.is_empty() => None,
            Repr::IntSet(v) => v
                .get(rng.gen_range(0..v.len()))
                .map(|i| i.to_string().into_bytes()),
            Repr::Table(s) => s.random(rng).map(|(m, _)| m.to_vec()),
        }
    }

    /// Removes and returns a uniformly chosen member, or `None` when empty.
    pub fn pop_random(&mut self, rng: &mut impl Rng) -> Option<Vec<u8>> {
        let m = self.random(rng)?;
        self.remove(&m);
        Some(m)
    }

    /// One step of `SSCAN`: visits some members and returns the next cursor (0 when
    /// done). An intset is visited whole and answers cursor 0, as in Redis; a hash
    /// table visits one bucket per step (see [`ScanTable`] for the guarantee).
    pub fn scan_step(&self, cursor: u64, mut visit: impl FnMut(&[u8])) -> u64 {
        match &self.repr {
            Repr::IntSet(_) => {
                self.for_each(visit);
                0
            }
            Repr::Table(s) => s.scan_step(cursor, |m, _| visit(m)),
        }
    }

    pub(crate) fn mem_usage(&self, samples: usize) -> usize {
        match &self.repr {
            Repr::IntSet(v) => v.heap_bytes(),
            Repr::Table(s) => s.mem_usage(samples) + std::mem::size_of::<ScanTable>(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use rand::SeedableRng;
    use std::collections::BTreeSet;

    #[test]
    fn intset_stays_sorted_and_converts() {
        let l = EncodingLimits {
            set_max_intset_entries: 3,
            ..EncodingLimits::default()
        };
        let mut s = SetValue::new();
        for m in ["5", "-1", "3", "5"] {
            s.insert(m.as_bytes(), &l);
        }
        assert_eq!(
            s.members(),
            vec![b"-1".to_vec(), b"3".to_vec(), b"5".to_vec()]
        );
        assert_eq!(s.encoding(), "intset");
        assert!(!s.contains(b"05"));
        assert!(s.insert(b"7", &l));
        assert_eq!(s.encoding(), "hashtable");
        assert_eq!(s.len(), 4);
        let mut t = SetValue::new();
        assert!(t.insert(b"x", &l));
        assert_eq!(t.encoding(), "hashtable");
        assert!(t.contains(b"x"));
    }

    #[test]
    fn pop_random_empties_the_set() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(1);
        let mut s = SetValue::new();
        for m in ["1", "2", "a"] {
            s.insert(m.as_bytes(), &EncodingLimits::default());
        }
        let mut popped = BTreeSet::new();
        while let Some(m) = s.pop_random(&mut rng) {
            popped.insert(m);
        }
        assert_eq!(popped.len(), 3);
        assert!(s.is_empty());
        assert_eq!(s.random(&mut rng), None);
    }

    proptest! {
        #[test]
        fn matches_a_set_model(ops in proptest::collection::vec((any::<bool>(), prop_oneof![
            (-20i64..20).prop_map(|i| i.to_string()),
            "[a-c]{1,2}",
        ]), 0..300)) {
            let l = EncodingLimits { set_max_intset_entries: 16, ..EncodingLimits::default() };
            let mut s = SetValue::new();
            let mut model = BTreeSet::new();
            for (ins, m) in ops {
                let m = m.into_bytes();
                if ins {
                    prop_assert_eq!(s.insert(&m, &l), model.insert(m.clone()));
                } else {
                    prop_assert_eq!(s.remove(&m), model.remove(&m));
                }
                prop_assert_eq!(s.len(), model.len());
            }
            if s.encoding() == "intset" {
                let mut sorted: Vec<_> = model.iter().filter_map(|m| parse_i64(m)).collect();
                sorted.sort_unstable();
                let expected: Vec<_> = sorted.iter().map(|i| i.to_string().into_bytes()).collect();
                prop_assert_eq!(s.members(), expected);
            }
            let mut seen = BTreeSet::new();
            let mut cursor = 0;
            loop {
                cursor = s.scan_step(cursor, |m| { seen.insert(m.to_vec()); });
                if cursor == 0 { break; }
            }
            prop_assert_eq!(seen, model);
        }
    }
}
