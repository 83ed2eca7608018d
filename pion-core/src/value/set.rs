//! The set type: a sorted `intset` while every member is an integer and the set is
//! small, a hash set otherwise.

use std::collections::HashSet;

use super::{sampled_size, EncodingLimits};
use crate::num::parse_i64;

/// A set value.
#[derive(Debug, Clone, PartialEq)]
pub struct SetValue {
    repr: Repr,
}

#[derive(Debug, Clone, PartialEq)]
enum Repr {
    IntSet(Vec<i64>),
    Table(HashSet<Vec<u8>, ahash::RandomState>),
}

impl Default for SetValue {
    fn default() -> Self {
        SetValue::new()
    }
}

impl SetValue {
    /// An empty set (intset encoding, as Redis creates for an integer first member).
    pub fn new() -> SetValue {
        SetValue {
            repr: Repr::IntSet(Vec::new()),
        }
    }

    /// An empty set already in hash-table encoding (Redis creates one when the first
    /// member is not an integer).
    pub fn new_table() -> SetValue {
        SetValue {
            repr: Repr::Table(HashSet::with_hasher(ahash::RandomState::new())),
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

    /// Whether `member` is in the set.
    pub fn contains(&self, member: &[u8]) -> bool {
        match &self.repr {
            Repr::IntSet(v) => parse_i64(member).is_some_and(|i| v.binary_search(&i).is_ok()),
            Repr::Table(s) => s.contains(member),
        }
    }

    /// Adds a member; returns true if it was not there.
    pub fn insert(&mut self, member: &[u8], limits: &EncodingLimits) -> bool {
        if let Repr::IntSet(v) = &mut self.repr {
            if let Some(i) = parse_i64(member) {
                match v.binary_search(&i) {
                    Ok(_) => return false,
                    Err(pos) => {
                        v.insert(pos, i);
                        if v.len() > limits.set_max_intset_entries {
                            self.convert_to_table();
                        }
                        return true;
                    }
                }
            }
            self.convert_to_table();
        }
        match &mut self.repr {
            Repr::Table(s) => {
                if s.contains(member) {
                    false
                } else {
                    s.insert(member.to_vec())
                }
            }
            Repr::IntSet(_) => unreachable!("converted above"),
        }
    }

    fn convert_to_table(&mut self) {
        if let Repr::IntSet(v) = &self.repr {
            let mut s = HashSet::with_capacity_and_hasher(v.len(), ahash::RandomState::new());
            s.extend(v.iter().map(|i| i.to_string().into_bytes()));
            self.repr = Repr::Table(s);
        }
    }

    /// Removes a member; returns true if it was there.
    pub fn remove(&mut self, member: &[u8]) -> bool {
        match &mut self.repr {
            Repr::IntSet(v) => match parse_i64(member).map(|i| v.binary_search(&i)) {
                Some(Ok(pos)) => {
                    v.remove(pos);
                    true
                }
                _ => false,
            },
            Repr::Table(s) => s.remove(member),
        }
    }

    /// The members (ascending for an intset, hash order otherwise).
    pub fn members(&self) -> Vec<Vec<u8>> {
        match &self.repr {
            Repr::IntSet(v) => v.iter().map(|i| i.to_string().into_bytes()).collect(),
            Repr::Table(s) => s.iter().cloned().collect(),
        }
    }

    /// The member at position `index` of the encoding's iteration order, for random
    /// picks (O(1) for an intset, O(n) for a table).
    pub fn nth(&self, index: usize) -> Option<Vec<u8>> {
        match &self.repr {
            Repr::IntSet(v) => v.get(index).map(|i| i.to_string().into_bytes()),
            Repr::Table(s) => s.iter().nth(index).cloned(),
        }
    }

    pub(crate) fn mem_usage(&self) -> usize {
        match &self.repr {
            Repr::IntSet(v) => v.len() * 8,
            Repr::Table(s) => sampled_size(s.iter().map(Vec::len), s.len(), 24),
        }
    }
}
