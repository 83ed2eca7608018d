//! Per-command latency histograms, as Redis 7 keeps them for `LATENCY HISTOGRAM` and
//! `INFO latencystats`.
//!
//! The layout is that of an HDR histogram over 1 ns … 1 s with two significant
//! digits, the one Redis uses: values below 256 ns each have a counter, and above
//! that every power of two is split into 128 equal steps, so any value is known to
//! within 1%. Percentiles therefore come out as Redis reports them, and the
//! cumulative power-of-two buckets of `LATENCY HISTOGRAM` (1, 2, 4, 8, 16, 33, 66 …
//! microseconds) fall where Redis's do. Counters are atomics: any thread records
//! without a lock.

use std::sync::atomic::{AtomicU64, Ordering};

/// The largest value kept; longer durations count as this.
pub const HIGHEST_NS: u64 = 1_000_000_000;

/// Values below this each have their own counter (2 · 10² rounded up to a power of 2).
const SUB_BUCKET_COUNT: u64 = 256;
/// log2 of half of it: each power of two above is split into this many steps.
const HALF_MAGNITUDE: u32 = 7;
const HALF_COUNT: u64 = 1 << HALF_MAGNITUDE;
/// Powers of two needed to reach `HIGHEST_NS` from `SUB_BUCKET_COUNT`.
const BUCKET_COUNT: usize = 23;
/// Number of counters.
const COUNTS_LEN: usize = (BUCKET_COUNT + 1) << HALF_MAGNITUDE;

/// The first cumulative bucket `LATENCY HISTOGRAM` reports, in nanoseconds.
const FIRST_REPORTED_NS: u64 = 1024;

/// One command's histogram.
pub struct Histogram {
    /// Durations per bucket. (Their total is summed when read: a command's call
    /// then costs one atomic add here, not two.)
    counts: Box<[AtomicU64]>,
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            counts: (0..COUNTS_LEN).map(|_| AtomicU64::new(0)).collect(),
        }
    }
}

/// Which power-of-two bucket `v` falls in (0 for values below `SUB_BUCKET_COUNT`).
fn bucket_of(v: u64) -> u32 {
    let bits = 64 - (v | (SUB_BUCKET_COUNT - 1)).leading_zeros();
    bits - (HALF_MAGNITUDE + 1)
}

/// The counter that holds `v` (at most `HIGHEST_NS`).
fn index_of(v: u64) -> usize {
    let bucket = bucket_of(v);
    let sub = v >> bucket;
    // In bucket 0 `sub` may be below the half count; the base covers it.
    ((((bucket as usize) + 1) << HALF_MAGNITUDE) + sub as usize) - HALF_COUNT as usize
}

/// The smallest value counter `i` holds.
fn value_at(i: usize) -> u64 {
    let bucket = (i >> HALF_MAGNITUDE) as i64 - 1;
    let sub = (i as u64 & (HALF_COUNT - 1)) + HALF_COUNT;
    if bucket < 0 {
        sub - HALF_COUNT
    } else {
        sub << bucket
    }
}

/// The smallest value counted together with `v`.
fn lowest_equivalent(v: u64) -> u64 {
    let bucket = bucket_of(v);
    (v >> bucket) << bucket
}

/// The largest value counted together with `v`.
fn highest_equivalent(v: u64) -> u64 {
    lowest_equivalent(v) + (1u64 << bucket_of(v)) - 1
}

impl Histogram {
    /// Counts one duration in nanoseconds (clamped to 1 ns … `HIGHEST_NS`).
    pub fn record(&self, ns: u64) {
        let v = ns.clamp(1, HIGHEST_NS);
        self.counts[index_of(v)].fetch_add(1, Ordering::Relaxed);
    }

    /// Durations counted.
    pub fn total(&self) -> u64 {
        self.counts.iter().map(|c| c.load(Ordering::Relaxed)).sum()
    }

    /// Forgets every duration (`CONFIG RESETSTAT`).
    pub fn reset(&self) {
        for c in self.counts.iter() {
            c.store(0, Ordering::Relaxed);
        }
    }

    /// The duration (ns) at `percentile` (0–100): the largest value counted with the
    /// one the percentile lands on (the smallest, for the 0th), 0 when empty.
    pub fn value_at_percentile(&self, percentile: f64) -> u64 {
        let wanted = percentile.min(100.0) / 100.0 * self.total() as f64 + 0.5;
        let wanted = (wanted as u64).max(1);
        let mut seen = 0u64;
        for (i, c) in self.counts.iter().enumerate() {
            seen += c.load(Ordering::Relaxed);
            if seen >= wanted {
                let v = value_at(i);
                return if percentile == 0.0 {
                    lowest_equivalent(v)
                } else {
                    highest_equivalent(v)
                };
            }
        }
        0
    }

    /// `LATENCY HISTOGRAM`'s buckets: (microseconds, durations up to it), one per
    /// power of two from 1024 ns that adds durations, up to the one that holds the
    /// longest. Each bucket's bound is the largest value counted with its power of
    /// two, as Redis's iteration reports it.
    pub fn cumulative_buckets(&self) -> Vec<(u64, u64)> {
        let total = self.total();
        let mut out = Vec::new();
        let (mut seen, mut next_index, mut reported) = (0u64, 0usize, 0u64);
        let mut level = FIRST_REPORTED_NS;
        while seen < total && next_index < COUNTS_LEN {
            // The counter of `level` itself, and with it the step above it.
            let last = index_of(level).min(COUNTS_LEN - 1);
            while next_index <= last {
                seen += self.counts[next_index].load(Ordering::Relaxed);
                next_index += 1;
            }
            if seen > reported {
                out.push((highest_equivalent(level) / 1000, seen));
                reported = seen;
            }
            level <<= 1;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn layout_matches_an_hdr_histogram_with_two_digits() {
        assert_eq!(index_of(1), 1);
        assert_eq!(index_of(255), 255);
        assert_eq!(index_of(256), 256);
        assert_eq!(value_at(256), 256);
        assert_eq!(highest_equivalent(1024), 1031);
        assert!(index_of(HIGHEST_NS) < COUNTS_LEN);
    }

    #[test]
    fn buckets_fall_where_redis_reports_them() {
        let h = Histogram::default();
        for ns in [500, 1_000, 1_500, 3_000, 40_000] {
            h.record(ns);
        }
        // 1024 ns and its 8 ns step: "1"; 32768 ns and its 256 ns step: "33".
        assert_eq!(
            h.cumulative_buckets(),
            vec![(1, 2), (2, 3), (4, 4), (66, 5)]
        );
        assert_eq!(Histogram::default().cumulative_buckets(), vec![]);
        let slow = Histogram::default();
        slow.record(5 * HIGHEST_NS);
        assert_eq!(slow.cumulative_buckets(), vec![(1_082_130, 1)]);
    }

    #[test]
    fn percentiles_are_within_one_percent() {
        let h = Histogram::default();
        for ns in 1..=10_000u64 {
            h.record(ns * 100);
        }
        let p50 = h.value_at_percentile(50.0) as f64;
        assert!((p50 - 500_000.0).abs() / 500_000.0 < 0.01, "{p50}");
        assert_eq!(h.value_at_percentile(0.0), 100);
        assert!(h.value_at_percentile(100.0) >= 1_000_000);
        h.reset();
        assert_eq!((h.total(), h.value_at_percentile(50.0)), (0, 0));
    }

    proptest! {
        #[test]
        fn every_value_lands_in_a_counter_that_holds_it(v in 1u64..=HIGHEST_NS) {
            let i = index_of(v);
            prop_assert!(i < COUNTS_LEN);
            prop_assert!(value_at(i) <= v && v <= highest_equivalent(value_at(i)));
            prop_assert!((highest_equivalent(v) - lowest_equivalent(v)) as f64 <= v as f64 / 100.0 + 1.0);
        }
    }
}
