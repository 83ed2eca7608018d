//! The keyspace's part of eviction: sampling candidate keys from one shard, and
//! removing a chosen key under its shard's lock. Which keys a policy prefers, and when
//! to evict at all, is decided by [`crate::evict`].

use rand::Rng;

use super::shard::Entry;
use super::{locate, Keyspace, SLOTS_PER_SHARD};

/// How many keys a sampling looks at for each one it wants, at most, when the
/// scoring passes keys over (an evicting worker's own keys are about half of them
/// with two workers; the rest are looked at and left).
pub const LOOKS_PER_SAMPLE: usize = 4;

/// A key that may be evicted, and how good a choice it is (higher: evict sooner).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    /// The policy's score: idle time, `255 - frequency`, or time left inverted.
    pub score: u64,
    /// The key's database.
    pub db: usize,
    /// The key.
    pub key: Vec<u8>,
}

impl Keyspace {
    /// Samples up to `per_db` keys of every database in shard `idx` (only keys with a
    /// time to live when `volatile`), scoring each with `score`, into `out`. Keys are
    /// taken from consecutive slots starting at a random one, each slot entered at a
    /// random position, as Redis takes a run of buckets from a random one. `score`
    /// sees each key's entry and deadline, and may pass a key over (`None`): then
    /// at most [`LOOKS_PER_SAMPLE`] times `per_db` keys of a database are looked
    /// at. Returns how many were sampled.
    pub fn sample_shard(
        &self,
        idx: usize,
        volatile: bool,
        per_db: usize,
        rng: &mut impl Rng,
        score: &dyn Fn(&Entry, Option<i64>) -> Option<u64>,
        out: &mut Vec<Candidate>,
    ) -> usize {
        let shard = self.lock_shard(idx);
        let before = out.len();
        for (db, d) in shard.dbs.iter().enumerate() {
            let Some(d) = d.as_deref() else { continue };
            let candidates = if volatile { d.slots.volatile() } else { d.keys };
            if candidates == 0 {
                continue;
            }
            let start = rng.gen_range(0..SLOTS_PER_SHARD);
            let (mut taken, mut looked) = (0, 0);
            let most_looks = per_db.saturating_mul(LOOKS_PER_SAMPLE);
            for step in 0..SLOTS_PER_SHARD {
                if taken >= per_db || looked >= most_looks {
                    break;
                }
                let Some(slot) = d.slots.table((start + step) % SLOTS_PER_SHARD) else {
                    continue;
                };
                if volatile && slot.volatile() == 0 {
                    continue;
                }
                let skip = rng.gen_range(0..slot.len());
                for (k, e) in slot.iter().skip(skip).chain(slot.iter().take(skip)) {
                    if taken >= per_db || looked >= most_looks {
                        break;
                    }
                    let deadline = k.deadline();
                    if volatile && deadline.is_none() {
                        continue;
                    }
                    looked += 1;
                    let Some(score) = score(e, deadline) else {
                        continue;
                    };
                    out.push(Candidate {
                        score,
                        db,
                        key: k.as_slice().to_vec(),
                    });
                    taken += 1;
                }
            }
        }
        out.len() - before
    }

    /// Evicts one key if it still exists (and, when `volatile`, still has a time to
    /// live): removes it under its shard's lock and calls `on_removed` before the lock
    /// is released, so whatever records the removal (the write-ahead log, search
    /// indexes) sees it in the order commands on that key ran. Returns the bytes freed:
    /// measured around the removal where the counting allocator is installed, else
    /// the key's estimate.
    pub fn evict(
        &self,
        db: usize,
        key: &[u8],
        volatile: bool,
        on_removed: &mut dyn FnMut(usize, &[u8]),
    ) -> Option<usize> {
        let loc = locate(key);
        let mut shard = self.lock_shard(loc.shard);
        let deadline = shard.db(db)?.slots.deadline_of(loc.local, key)?;
        if volatile && deadline.is_none() {
            return None;
        }
        let before = crate::util::alloc::thread_net();
        let removed = shard.remove(db, loc.local, key)?;
        let estimate = removed.entry.accounted as usize;
        drop(removed);
        // What the removal itself freed, as Redis measures it around the deletion
        // only (and on this thread only, where the removal ran): what telling others
        // costs (the log's record, invalidation messages to tracking clients) must not
        // count against it, or each eviction would pay for the next one's messages and
        // drain the database.
        let freed = match (before, crate::util::alloc::thread_net()) {
            (Some(before), Some(after)) => before.saturating_sub(after).max(0) as usize,
            _ => estimate,
        };
        on_removed(db, key);
        Some(freed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::Value;

    #[test]
    fn samples_only_what_the_policy_may_evict() {
        let ks = Keyspace::new(2);
        let keys: Vec<String> = (0..2000).map(|i| format!("k{i}")).collect();
        {
            let mut l = ks.lock(&super::super::LockSet::All, 0);
            for (i, k) in keys.iter().enumerate() {
                l.set(i % 2, k.as_bytes(), Value::string(b"v".to_vec()))
                    .expect("set");
                if i % 10 == 0 {
                    l.set_expire_at(i % 2, k.as_bytes(), Some(1_000_000 + i as i64))
                        .expect("expire");
                }
            }
        }
        let mut rng = rand::thread_rng();
        let mut out = Vec::new();
        for idx in 0..super::super::SHARDS {
            ks.sample_shard(idx, false, 5, &mut rng, &|_, _| Some(0), &mut out);
        }
        // 2000 keys over 64 shards and 2 databases: about 15 per shard and database.
        assert!(out.len() >= 64 * 2 * 4, "sampled {}", out.len());
        out.clear();
        for idx in 0..super::super::SHARDS {
            ks.sample_shard(
                idx,
                true,
                5,
                &mut rng,
                &|_, deadline| Some(deadline.map_or(0, |t| t as u64)),
                &mut out,
            );
        }
        assert!(!out.is_empty());
        let volatile = out.clone();
        // Keys the scoring passes over are looked at, not sampled, and no more than
        // a few times the sample are looked at: here it passes over all but the keys
        // with a time to live, one in ten.
        out.clear();
        let looked = std::sync::atomic::AtomicUsize::new(0);
        let with_ttl = |_: &Entry, deadline: Option<i64>| {
            looked.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            deadline.map(|t| t as u64)
        };
        for idx in 0..super::super::SHARDS {
            looked.store(0, std::sync::atomic::Ordering::Relaxed);
            ks.sample_shard(idx, false, 2, &mut rng, &with_ttl, &mut out);
            let per_db = looked.load(std::sync::atomic::Ordering::Relaxed);
            assert!(per_db <= 2 * 2 * LOOKS_PER_SAMPLE, "looked at {per_db}");
        }
        assert!(!out.is_empty() && out.len() < volatile.len());
        for c in &out {
            assert_eq!(
                c.score,
                1_000_000
                    + c.key[1..]
                        .iter()
                        .fold(0, |n, d| n * 10 + u64::from(d - b'0'))
            );
        }
        let out = volatile;
        for c in &out {
            let i: usize = std::str::from_utf8(&c.key[1..])
                .expect("utf8")
                .parse()
                .expect("number");
            assert_eq!(i % 10, 0, "a key without a time to live was sampled");
            assert_eq!(c.db, i % 2);
            assert_eq!(c.score, 1_000_000 + i as u64);
        }
        // Eviction: a volatile policy leaves a persistent key alone.
        let mut seen = Vec::new();
        assert_eq!(
            ks.evict(1, b"k1", true, &mut |db, k| seen.push((db, k.to_vec()))),
            None
        );
        assert!(ks
            .evict(1, b"k1", false, &mut |db, k| seen.push((db, k.to_vec())))
            .is_some_and(|b| b > 0));
        assert_eq!(seen, vec![(1, b"k1".to_vec())]);
        assert_eq!(ks.evict(1, b"k1", false, &mut |_, _| {}), None);
        assert_eq!(ks.db_size(1), 999);
    }
}
