//! What active expiry knows about deadlines without an index of them: for each slot,
//! how many of its keys have a deadline and a time no later than the earliest one.
//!
//! An ordered index of every deadline costs about 50 bytes a volatile key (a B-tree
//! element of deadline and key, with its nodes' slack): more than the key's own
//! bytes. Redis keeps a second hash table instead and samples it. Here a key's
//! deadline is stored with the key (`StoredKey::Timed`), and each slot keeps only a
//! count and a lower bound of its deadlines. The expiry cycle visits the slots whose
//! bound has passed and walks their keys, removing the due ones and tightening the
//! bound to the earliest deadline left.
//!
//! The bound is never later than a deadline in the slot: it only moves down when a
//! deadline is set, and up when a walk has seen every key. A deadline cleared or a
//! key removed leaves it low, which costs at most one walk that finds nothing due.
//! Each walk is bounded by an [`ExpiryBudget`], so a cycle's work is bounded whatever
//! the slot sizes; a slot left half walked keeps its bound and is walked again first.

/// A slot's deadlines, summarised.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DeadlineSummary {
    /// Keys in the slot that have a deadline.
    volatile: u32,
    /// No later than the earliest of their deadlines (`i64::MAX` when none).
    earliest: i64,
}

impl Default for DeadlineSummary {
    fn default() -> Self {
        DeadlineSummary {
            volatile: 0,
            earliest: i64::MAX,
        }
    }
}

impl DeadlineSummary {
    /// Records a key's deadline going from `old` to `new` (a key arriving has `old`
    /// `None`, one leaving `new` `None`).
    #[inline]
    pub fn changed(&mut self, old: Option<i64>, new: Option<i64>) {
        match (old, new) {
            (None, Some(_)) => self.volatile += 1,
            (Some(_), None) => self.volatile = self.volatile.saturating_sub(1),
            _ => {}
        }
        if let Some(at) = new {
            self.earliest = self.earliest.min(at);
        }
        if self.volatile == 0 {
            self.earliest = i64::MAX;
        }
    }

    /// Whether a key of the slot may be due at `now_ms`.
    #[inline]
    pub fn may_be_due(&self, now_ms: i64) -> bool {
        self.volatile > 0 && self.earliest <= now_ms
    }

    /// How many keys of the slot have a deadline.
    #[inline]
    pub fn volatile(&self) -> usize {
        self.volatile as usize
    }

    /// After a walk that saw every key: `earliest` is the earliest deadline left.
    #[inline]
    pub fn walked(&mut self, earliest: i64) {
        self.earliest = if self.volatile == 0 {
            i64::MAX
        } else {
            earliest
        };
    }
}

/// How much one expiry pass over a database's slots in one shard may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ExpiryBudget {
    /// Keys it may look at.
    pub look: usize,
    /// Keys it may remove.
    pub remove: usize,
}

impl ExpiryBudget {
    /// A pass that removes at most `remove` keys and looks at sixteen times as many.
    pub fn removing(remove: usize) -> ExpiryBudget {
        ExpiryBudget {
            look: remove.saturating_mul(16),
            remove,
        }
    }

    /// Whether nothing is left to spend.
    #[inline]
    pub fn spent(&self) -> bool {
        self.look == 0 || self.remove == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bound_follows_deadlines_down_and_walks_up() {
        let mut s = DeadlineSummary::default();
        assert!(!s.may_be_due(i64::MAX));
        s.changed(None, Some(100));
        s.changed(None, Some(50));
        assert_eq!(s.volatile(), 2);
        assert!(s.may_be_due(50) && !s.may_be_due(49));
        // Clearing the earlier deadline leaves the bound low until a walk.
        s.changed(Some(50), None);
        assert!(s.may_be_due(50));
        s.walked(100);
        assert!(!s.may_be_due(99) && s.may_be_due(100));
        // Moving a deadline later keeps the old bound; earlier lowers it.
        s.changed(Some(100), Some(200));
        assert!(s.may_be_due(100));
        s.changed(Some(200), Some(10));
        assert!(s.may_be_due(10));
        s.changed(Some(10), None);
        assert_eq!(s.volatile(), 0);
        assert!(!s.may_be_due(i64::MAX));
        s.walked(5);
        assert!(!s.may_be_due(i64::MAX), "no volatile key: no bound");
    }

    #[test]
    fn a_budget_looks_at_more_keys_than_it_removes() {
        let b = ExpiryBudget::removing(200);
        assert_eq!((b.look, b.remove), (3200, 200));
        assert!(!b.spent());
        assert!(ExpiryBudget { look: 0, remove: 5 }.spent());
        assert!(ExpiryBudget { look: 5, remove: 0 }.spent());
    }
}
