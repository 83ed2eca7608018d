//! Where each label's element sits in a vector set's dense storage.
//!
//! A filtered `VSIM` looks an element up by label for every node its walk tests, some
//! twenty thousand times a query at a 1 % filter. Through a hash map that was a probe
//! of the control bytes and then of the bucket, two dependent cache misses before the
//! element itself (a sixth of the query's time). Labels are handed out in order from
//! zero, so most of them index a plain array of slot numbers: one 4-byte read, in an
//! array a tenth of the map's size.
//!
//! A label far beyond the labels in use (after heavy churn, or one a snapshot
//! restored) goes to a map instead, so the array never grows past about twice the
//! elements it maps.

use ahash::AHashMap;

/// The array's mark for a label with no element.
const ABSENT: u32 = u32::MAX;

/// How far past the mapped labels the array may grow to take a new label: twice the
/// labels it maps, plus this many.
const GROWTH_SLACK: usize = 1024;

/// A map from label to slot.
#[derive(Debug, Default)]
pub(super) struct LabelSlots {
    /// The slot of label `l` at `l`, or [`ABSENT`].
    dense: Vec<u32>,
    /// Labels in `dense`.
    in_dense: usize,
    /// Labels the array does not reach, and slots it cannot hold.
    sparse: AHashMap<u64, usize>,
}

impl LabelSlots {
    /// The slot of `label`.
    #[inline]
    pub fn get(&self, label: u64) -> Option<usize> {
        match usize::try_from(label).ok().and_then(|l| self.dense.get(l)) {
            Some(&slot) if slot != ABSENT => Some(slot as usize),
            _ if self.sparse.is_empty() => None,
            _ => self.sparse.get(&label).copied(),
        }
    }

    /// Whether `label` has a slot.
    pub fn contains(&self, label: u64) -> bool {
        self.get(label).is_some()
    }

    /// Sets the slot of `label`.
    pub fn insert(&mut self, label: u64, slot: usize) {
        self.remove(label);
        let mapped = self.in_dense + self.sparse.len();
        match (usize::try_from(label), u32::try_from(slot)) {
            (Ok(l), Ok(s))
                if s != ABSENT && l < self.dense.len().max(2 * mapped + GROWTH_SLACK) =>
            {
                if l >= self.dense.len() {
                    self.dense.resize(l + 1, ABSENT);
                }
                // `l < dense.len()`: checked, or the array just grew past it.
                self.dense[l] = s;
                self.in_dense += 1;
            }
            _ => {
                self.sparse.insert(label, slot);
            }
        }
    }

    /// Removes `label`; returns its slot.
    pub fn remove(&mut self, label: u64) -> Option<usize> {
        let cell = usize::try_from(label)
            .ok()
            .and_then(|l| self.dense.get_mut(l));
        if let Some(cell) = cell.filter(|c| **c != ABSENT) {
            self.in_dense -= 1;
            return Some(std::mem::replace(cell, ABSENT) as usize);
        }
        self.sparse.remove(&label)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    #[test]
    fn labels_in_order_stay_in_the_array() {
        let mut m = LabelSlots::default();
        for l in 0..10_000u64 {
            m.insert(l, l as usize);
        }
        assert!(m.sparse.is_empty());
        assert_eq!(m.dense.len(), 10_000);
        assert_eq!(m.get(9_999), Some(9_999));
        assert_eq!(m.get(10_000), None);
    }

    #[test]
    fn a_far_label_goes_to_the_map_and_the_array_stays_small() {
        let mut m = LabelSlots::default();
        m.insert(0, 0);
        m.insert(1 << 60, 1);
        m.insert(u64::MAX, 2);
        assert!(m.dense.len() <= GROWTH_SLACK);
        assert_eq!(m.get(1 << 60), Some(1));
        assert_eq!(m.get(u64::MAX), Some(2));
        assert_eq!(m.remove(1 << 60), Some(1));
        assert_eq!(m.get(1 << 60), None);
    }

    #[test]
    fn churn_keeps_the_array_within_twice_the_labels() {
        // A set of 100 elements whose names keep changing: every new name is a new
        // label, the old one removed.
        let mut m = LabelSlots::default();
        let mut live: Vec<u64> = (0..100).collect();
        for (slot, &l) in live.iter().enumerate() {
            m.insert(l, slot);
        }
        for next in 100..200_000u64 {
            let slot = (next % 100) as usize;
            assert_eq!(m.remove(live[slot]), Some(slot));
            live[slot] = next;
            m.insert(next, slot);
        }
        assert!(
            m.dense.len() <= 2 * 100 + GROWTH_SLACK + 1,
            "{}",
            m.dense.len()
        );
        for (slot, &l) in live.iter().enumerate() {
            assert_eq!(m.get(l), Some(slot));
        }
    }

    proptest! {
        /// Whatever labels come and go, it answers as a map does.
        #[test]
        fn answers_as_a_map(ops in proptest::collection::vec(
            (0u8..3, prop_oneof![0u64..64, 0u64..5_000, any::<u64>()], 0usize..1_000),
            1..400,
        )) {
            let mut m = LabelSlots::default();
            let mut model: HashMap<u64, usize> = HashMap::new();
            for (op, label, slot) in ops {
                match op {
                    0 => {
                        m.insert(label, slot);
                        model.insert(label, slot);
                    }
                    1 => prop_assert_eq!(m.remove(label), model.remove(&label)),
                    _ => prop_assert_eq!(m.get(label), model.get(&label).copied()),
                }
                prop_assert_eq!(m.in_dense + m.sparse.len(), model.len());
            }
            for (&l, &s) in &model {
                prop_assert_eq!(m.get(l), Some(s));
            }
        }
    }
}
