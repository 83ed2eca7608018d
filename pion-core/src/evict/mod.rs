//! Eviction under `maxmemory`: before a command runs while used memory is over the
//! limit, keys are evicted as `maxmemory-policy` says, with Redis's approximations
//! (sample `maxmemory-samples` keys per database of a random shard, keep the best
//! candidates in a pool, evict the best), or a command that may grow memory is refused.
//!
//! An evicted key leaves the way a deleted one does: the caller's `on_removed` (the
//! dispatcher's, in [`command::eviction`](crate::command::eviction)) logs a `DEL` (so
//! recovery reaches the same state), drops its search document and tells watchers; it
//! counts in `INFO stats`' `evicted_keys`.

mod pool;

pub use pool::{EvictionPool, POOL_SIZE};

use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering};

use parking_lot::Mutex;
use rand::Rng;

use crate::config::MaxmemoryPolicy;
use crate::keyspace::{Candidate, Entry, Keyspace, SHARDS};
use crate::util::worker;

/// Redis's reply to a command refused for memory.
pub const OOM_ERROR: &str = "OOM command not allowed when used memory > 'maxmemory'.";

/// Evictions that find nothing to remove (keys deleted since they were sampled) before
/// an eviction run gives up.
const MAX_MISSES: usize = 1000;

/// The eviction state an engine keeps: the policy, the pool and the counter.
#[derive(Debug)]
pub struct Evictor {
    policy: AtomicU8,
    samples: AtomicUsize,
    evicted: AtomicU64,
    /// One pool for each worker's own keys (by [`worker`] tag). The lock also
    /// serialises eviction runs: one thread frees memory while the others wait,
    /// then find it freed. Taken before any shard lock, never while holding one.
    pools: Mutex<Vec<EvictionPool>>,
}

impl Default for Evictor {
    fn default() -> Self {
        Evictor {
            policy: AtomicU8::new(MaxmemoryPolicy::NoEviction as u8),
            samples: AtomicUsize::new(5),
            evicted: AtomicU64::new(0),
            pools: Mutex::new(Vec::new()),
        }
    }
}

impl Evictor {
    /// Applies `maxmemory-policy` and `maxmemory-samples` (after `CONFIG SET`).
    pub fn configure(&self, policy: MaxmemoryPolicy, samples: usize) {
        let old = self.policy.swap(policy as u8, Ordering::Relaxed);
        if old != policy as u8 {
            // Scores of another policy mean something else.
            self.pools.lock().iter_mut().for_each(EvictionPool::clear);
        }
        self.samples.store(samples.max(1), Ordering::Relaxed);
    }

    /// The selected policy.
    pub fn policy(&self) -> MaxmemoryPolicy {
        let v = self.policy.load(Ordering::Relaxed);
        MaxmemoryPolicy::ALL
            .into_iter()
            .find(|p| *p as u8 == v)
            .unwrap_or(MaxmemoryPolicy::NoEviction)
    }

    /// Keys evicted since start (or the last `CONFIG RESETSTAT`).
    pub fn evicted_keys(&self) -> u64 {
        self.evicted.load(Ordering::Relaxed)
    }

    /// Resets the counter (`CONFIG RESETSTAT`).
    pub fn reset_stats(&self) {
        self.evicted.store(0, Ordering::Relaxed);
    }

    /// Evicts keys until used memory is at most `limit`, calling `on_removed` for each
    /// key removed (holding its shard); returns false when the policy allows no
    /// eviction or nothing more can be evicted. `measured` reads used memory where it
    /// is measured (the counting allocator); `None` from it means the keyspace's
    /// estimate is the figure. Each key's removal counts what it freed.
    ///
    /// The calling worker evicts the keys it wrote first, by the policy's order
    /// among them: their memory is its own allocator's, which reuses it at once
    /// (see [`worker`]). Where it wrote none, it evicts among all keys.
    pub fn free_memory(
        &self,
        ks: &Keyspace,
        now: i64,
        limit: u64,
        measured: &dyn Fn() -> Option<u64>,
        on_removed: &mut dyn FnMut(usize, &[u8]),
    ) -> bool {
        let policy = self.policy();
        if policy == MaxmemoryPolicy::NoEviction {
            return false;
        }
        let mut pools = self.pools.lock();
        let me = worker::current();
        if pools.len() <= usize::from(me) {
            pools.resize_with(usize::from(me) + 1, EvictionPool::default);
        }
        let pool = &mut pools[usize::from(me)];
        let used = measured().unwrap_or_else(|| ks.estimated_memory() as u64);
        if used <= limit {
            return true;
        }
        let to_free = used - limit;
        let params = ks.lfu_params();
        let rank = move |e: &Entry, deadline: Option<i64>| -> u64 {
            match policy {
                MaxmemoryPolicy::AllKeysLfu | MaxmemoryPolicy::VolatileLfu => {
                    255 - u64::from(e.lfu_counter(now, params))
                }
                MaxmemoryPolicy::VolatileTtl => {
                    deadline.map_or(0, |t| i64::MAX.wrapping_sub(t) as u64)
                }
                _ => e.idle_secs(now).saturating_mul(1000),
            }
        };
        let own =
            move |e: &Entry, deadline: Option<i64>| (e.writer() == me).then(|| rank(e, deadline));
        let any = move |e: &Entry, deadline: Option<i64>| Some(rank(e, deadline));
        let mut rng = rand::thread_rng();
        let samples = self.samples.load(Ordering::Relaxed);
        let volatile = policy.volatile();
        let mut scratch = Vec::new();
        let (mut freed, mut misses) = (0u64, 0usize);
        let mut mine_left = true;
        while freed < to_free {
            // Once no key of its own is found, the rest of the run takes any.
            let take: &dyn Fn(&Entry, Option<i64>) -> Option<u64> =
                if mine_left { &own } else { &any };
            let pick = if policy.ranked() {
                pick_ranked(ks, pool, volatile, samples, take, &mut rng)
            } else {
                pick_random(ks, volatile, take, &mut scratch, &mut rng)
            };
            if pick.is_none() && mine_left {
                mine_left = false;
                continue;
            }
            let Some(c) = pick else { return false };
            match ks.evict(c.db, &c.key, volatile, on_removed) {
                Some(bytes) => {
                    freed += bytes as u64;
                    self.evicted.fetch_add(1, Ordering::Relaxed);
                }
                None => {
                    misses += 1;
                    if misses > MAX_MISSES {
                        return false;
                    }
                }
            }
        }
        true
    }
}

/// Samples the databases of one shard (the first non-empty from a random one) into
/// the pool, then takes the pool's best candidate. `None`: nothing to evict.
fn pick_ranked(
    ks: &Keyspace,
    pool: &mut EvictionPool,
    volatile: bool,
    samples: usize,
    score: &dyn Fn(&Entry, Option<i64>) -> Option<u64>,
    rng: &mut impl Rng,
) -> Option<Candidate> {
    let start = rng.gen_range(0..SHARDS);
    let mut sampled = Vec::new();
    for i in 0..SHARDS {
        if ks.sample_shard(
            (start + i) % SHARDS,
            volatile,
            samples,
            rng,
            score,
            &mut sampled,
        ) > 0
        {
            break;
        }
    }
    for c in sampled {
        pool.offer(c);
    }
    pool.pop_best()
}

/// A random key (with a time to live when `volatile`, and one `take` does not pass
/// over) of a random database.
fn pick_random(
    ks: &Keyspace,
    volatile: bool,
    take: &dyn Fn(&Entry, Option<i64>) -> Option<u64>,
    scratch: &mut Vec<Candidate>,
    rng: &mut impl Rng,
) -> Option<Candidate> {
    let start = rng.gen_range(0..SHARDS);
    for i in 0..SHARDS {
        scratch.clear();
        if ks.sample_shard((start + i) % SHARDS, volatile, 1, rng, take, scratch) > 0 {
            let at = rng.gen_range(0..scratch.len());
            return Some(scratch.swap_remove(at));
        }
    }
    None
}

#[cfg(test)]
mod tests;
