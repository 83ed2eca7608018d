//! The eviction pool: the best candidates seen by recent samplings, kept across
//! evictions (Redis's `EVPOOL_SIZE` entries), so each eviction picks from more keys
//! than one sampling round looks at.

use crate::keyspace::Candidate;

/// How many candidates the pool keeps (as in Redis).
pub const POOL_SIZE: usize = 16;

/// Candidates in ascending score order: the best (to evict first) is last.
#[derive(Debug, Default)]
pub struct EvictionPool {
    entries: Vec<Candidate>,
}

impl EvictionPool {
    /// Offers a sampled key. A key already pooled takes the newer score; a full pool
    /// drops its worst entry for a better one and ignores a worse one. Returns whether
    /// the candidate was kept.
    pub fn offer(&mut self, c: Candidate) -> bool {
        if let Some(pos) = self
            .entries
            .iter()
            .position(|e| e.db == c.db && e.key == c.key)
        {
            self.entries.remove(pos);
        }
        if self.entries.len() >= POOL_SIZE && c.score <= self.entries[0].score {
            return false;
        }
        let at = self.entries.partition_point(|e| e.score <= c.score);
        self.entries.insert(at, c);
        if self.entries.len() > POOL_SIZE {
            self.entries.remove(0);
        }
        true
    }

    /// Takes the best candidate out.
    pub fn pop_best(&mut self) -> Option<Candidate> {
        self.entries.pop()
    }

    /// Number of pooled candidates.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the pool is empty.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Forgets every candidate (after a policy change the scores mean something else).
    pub fn clear(&mut self) {
        self.entries.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn cand(score: u64, key: u32) -> Candidate {
        Candidate {
            score,
            db: 0,
            key: key.to_be_bytes().to_vec(),
        }
    }

    #[test]
    fn keeps_the_best_and_pops_best_first() {
        let mut pool = EvictionPool::default();
        for (i, s) in [5u64, 1, 9, 3].into_iter().enumerate() {
            assert!(pool.offer(cand(s, i as u32)));
        }
        assert_eq!(pool.pop_best().map(|c| c.score), Some(9));
        assert_eq!(pool.pop_best().map(|c| c.score), Some(5));
        assert_eq!(pool.len(), 2);
    }

    #[test]
    fn a_resampled_key_takes_its_new_score() {
        let mut pool = EvictionPool::default();
        pool.offer(cand(100, 1));
        pool.offer(cand(50, 2));
        pool.offer(cand(10, 1));
        assert_eq!(pool.len(), 2);
        assert_eq!(pool.pop_best(), Some(cand(50, 2)));
        assert_eq!(pool.pop_best(), Some(cand(10, 1)));
        assert!(pool.is_empty());
    }

    proptest! {
        /// Whatever is offered, the pool holds (at most POOL_SIZE) distinct keys,
        /// pops in descending score order, and holds exactly the best distinct keys
        /// by their last offered score when no key was offered twice.
        #[test]
        fn holds_the_best_offers(offers in proptest::collection::vec((0u64..1000, 0u32..64), 0..200)) {
            let mut pool = EvictionPool::default();
            for &(s, k) in &offers {
                pool.offer(cand(s, k));
            }
            prop_assert!(pool.len() <= POOL_SIZE);
            let mut popped = Vec::new();
            while let Some(c) = pool.pop_best() {
                popped.push(c);
            }
            for w in popped.windows(2) {
                prop_assert!(w[0].score >= w[1].score);
            }
            let mut keys: Vec<&Vec<u8>> = popped.iter().map(|c| &c.key).collect();
            keys.sort();
            keys.dedup();
            prop_assert_eq!(keys.len(), popped.len());
            let distinct: std::collections::HashSet<u32> = offers.iter().map(|o| o.1).collect();
            if distinct.len() == offers.len() {
                let mut scores: Vec<u64> = offers.iter().map(|o| o.0).collect();
                scores.sort_unstable_by(|a, b| b.cmp(a));
                scores.truncate(POOL_SIZE);
                let got: Vec<u64> = popped.iter().map(|c| c.score).collect();
                // Ties at the cut may keep either key, but the scores are the best ones.
                prop_assert_eq!(got, scores);
            }
            // Every pooled entry carries a score that was offered for its key.
            for c in &popped {
                let k = u32::from_be_bytes([c.key[0], c.key[1], c.key[2], c.key[3]]);
                prop_assert!(offers.iter().any(|&(s, kk)| kk == k && s == c.score));
            }
        }
    }
}
