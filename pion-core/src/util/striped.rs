//! Counters that every thread adds to without an atomic read-modify-write: each
//! thread that counts gets its own stripe of the counters, which only it writes (a
//! plain load and store), and a reading sums the stripes. Every command adds to its
//! statistics; with one atomic add per counter, those adds were a measurable part of
//! a pipelined `GET`.
//!
//! A reading is exact but for adds in flight on other threads at that moment (the
//! same as atomics give). Threads are numbered once, for the life of the process;
//! past [`STRIPES`] of them, a thread adds to a shared stripe with atomic adds.
//! A reset does not write the stripes (their owners may be adding): it records what
//! the counters read then, and later readings subtract it.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;

/// Threads that get a stripe of their own.
pub const STRIPES: usize = 64;

/// Stripe numbers handed out so far (may run past [`STRIPES`]).
static CLAIMED: AtomicUsize = AtomicUsize::new(0);

/// A thread that has not counted yet.
const UNCLAIMED: usize = usize::MAX;

thread_local! {
    /// This thread's stripe number ([`STRIPES`] or more: the shared stripe).
    static MINE: Cell<usize> = const { Cell::new(UNCLAIMED) };
}

/// This thread's stripe number, claimed on first use.
#[inline]
fn my_stripe() -> usize {
    MINE.try_with(|m| {
        let mut i = m.get();
        if i == UNCLAIMED {
            i = CLAIMED.fetch_add(1, Ordering::Relaxed).min(STRIPES);
            m.set(i);
        }
        i
    })
    .unwrap_or(STRIPES)
}

/// A fixed number of counters, striped by thread.
#[derive(Debug)]
pub struct StripedCounters {
    len: usize,
    /// One stripe per numbered thread, made when it first counts.
    own: Box<[OnceLock<Box<[AtomicU64]>>]>,
    /// The stripe of threads past [`STRIPES`] (atomic adds).
    shared: Box<[AtomicU64]>,
    /// What the counters read at the last reset.
    base: Box<[AtomicU64]>,
}

fn zeroed(len: usize) -> Box<[AtomicU64]> {
    (0..len).map(|_| AtomicU64::new(0)).collect()
}

impl StripedCounters {
    /// `len` counters at zero.
    pub fn new(len: usize) -> StripedCounters {
        StripedCounters {
            len,
            own: (0..STRIPES).map(|_| OnceLock::new()).collect(),
            shared: zeroed(len),
            base: zeroed(len),
        }
    }

    /// Adds `n` to counter `i` (ignored past the last counter).
    #[inline]
    pub fn add(&self, i: usize, n: u64) {
        let stripe = my_stripe();
        match self.own.get(stripe) {
            Some(own) => {
                let own = own.get_or_init(|| zeroed(self.len));
                if let Some(c) = own.get(i) {
                    // Only this thread writes this stripe: no other add can come
                    // between the load and the store.
                    c.store(c.load(Ordering::Relaxed).wrapping_add(n), Ordering::Relaxed);
                }
            }
            None => {
                if let Some(c) = self.shared.get(i) {
                    c.fetch_add(n, Ordering::Relaxed);
                }
            }
        }
    }

    /// The sum of every add to counter `i` since it was made or reset.
    fn total(&self, i: usize) -> u64 {
        let load = |c: Option<&AtomicU64>| c.map_or(0, |c| c.load(Ordering::Relaxed));
        self.own
            .iter()
            .filter_map(OnceLock::get)
            .fold(load(self.shared.get(i)), |sum, own| {
                sum.wrapping_add(load(own.get(i)))
            })
    }

    /// Counter `i` now.
    pub fn get(&self, i: usize) -> u64 {
        let base = self.base.get(i).map_or(0, |b| b.load(Ordering::Relaxed));
        self.total(i).wrapping_sub(base)
    }

    /// Sets every counter back to zero.
    pub fn reset(&self) {
        for (i, base) in self.base.iter().enumerate() {
            base.store(self.total(i), Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn adds_from_many_threads_sum_exactly() {
        let counters = Arc::new(StripedCounters::new(3));
        let threads: Vec<_> = (0..8)
            .map(|t| {
                let counters = Arc::clone(&counters);
                std::thread::spawn(move || {
                    for _ in 0..10_000 {
                        counters.add(0, 1);
                        counters.add(2, t);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().expect("thread");
        }
        assert_eq!(counters.get(0), 80_000);
        assert_eq!(counters.get(1), 0);
        assert_eq!(counters.get(2), 10_000 * (0..8).sum::<u64>());
        // Out of range: ignored, never a panic.
        counters.add(3, 1);
        assert_eq!(counters.get(3), 0);
    }

    #[test]
    fn reset_counts_from_zero_again() {
        let counters = StripedCounters::new(1);
        counters.add(0, 5);
        counters.reset();
        assert_eq!(counters.get(0), 0);
        counters.add(0, 2);
        assert_eq!(counters.get(0), 2);
        std::thread::scope(|s| {
            s.spawn(|| counters.add(0, 3));
        });
        assert_eq!(counters.get(0), 5);
    }

    #[test]
    fn threads_past_the_stripes_share_one() {
        let counters = Arc::new(StripedCounters::new(1));
        // Use up the numbered stripes (other tests in this process claim some too).
        let threads: Vec<_> = (0..STRIPES + 4)
            .map(|_| {
                let counters = Arc::clone(&counters);
                std::thread::spawn(move || counters.add(0, 1))
            })
            .collect();
        for t in threads {
            t.join().expect("thread");
        }
        assert_eq!(counters.get(0), (STRIPES + 4) as u64);
        assert!(counters.shared[0].load(Ordering::Relaxed) >= 4);
    }
}
