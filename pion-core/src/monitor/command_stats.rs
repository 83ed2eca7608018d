//! Per-command counters: calls, time, failures and refusals for `INFO commandstats`,
//! and the latency histograms behind `LATENCY HISTOGRAM` and `INFO latencystats`.
//! One slot per command and subcommand (the command table numbers them). What every
//! call adds to (calls, time, failures) is striped by thread ([`StripedCounters`]);
//! the rest are atomics. Any thread records without a lock.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use crate::monitor::latency_histogram::Histogram;
use crate::util::striped::StripedCounters;

/// A slot's counters in [`CommandStats::per_call`]: calls, microseconds, failures.
const PER_CALL: usize = 3;
const CALLS: usize = 0;
const USEC: usize = 1;
const FAILED: usize = 2;

/// Per-command counters.
pub struct CommandStats {
    /// Calls, microseconds and failures of each slot, [`PER_CALL`] counters a slot.
    per_call: StripedCounters,
    rejected: Vec<AtomicU64>,
    /// Made on a command's first timed call (24 KiB each), as Redis does.
    histograms: Vec<OnceLock<Histogram>>,
    /// `latency-tracking`: whether calls are added to the histograms.
    tracking: AtomicBool,
}

/// One command's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CommandStat {
    /// Calls that ran.
    pub calls: u64,
    /// Total microseconds spent.
    pub usec: u64,
    /// Calls whose reply was an error.
    pub failed: u64,
    /// Calls refused before running (arity, authentication).
    pub rejected: u64,
}

impl CommandStats {
    /// Counters for `slots` commands and subcommands, latency tracking on.
    pub(crate) fn new(slots: usize) -> CommandStats {
        CommandStats {
            per_call: StripedCounters::new(slots * PER_CALL),
            rejected: (0..slots).map(|_| AtomicU64::new(0)).collect(),
            histograms: (0..slots).map(|_| OnceLock::new()).collect(),
            tracking: AtomicBool::new(true),
        }
    }

    /// Counts one call of `slot` that took `elapsed`.
    pub(crate) fn record(&self, slot: usize, elapsed: Duration, failed: bool) {
        let usec = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX);
        let at = slot * PER_CALL;
        self.per_call.add(at + CALLS, 1);
        self.per_call.add(at + USEC, usec);
        if failed {
            self.per_call.add(at + FAILED, 1);
        }
        if self.tracking.load(Ordering::Relaxed) {
            let ns = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
            self.histograms[slot]
                .get_or_init(Histogram::default)
                .record(ns);
        }
    }

    /// Counts a failure of a call of `slot` already counted (a blocked command that
    /// ends with an error).
    pub(crate) fn fail(&self, slot: usize) {
        self.per_call.add(slot * PER_CALL + FAILED, 1);
    }

    /// Counts one refused call of `slot`.
    pub(crate) fn reject(&self, slot: usize) {
        self.rejected[slot].fetch_add(1, Ordering::Relaxed);
    }

    /// Applies `latency-tracking`.
    pub(crate) fn set_latency_tracking(&self, on: bool) {
        self.tracking.store(on, Ordering::Relaxed);
    }

    /// The counters of one slot.
    pub fn get(&self, slot: usize) -> CommandStat {
        let at = slot * PER_CALL;
        CommandStat {
            calls: self.per_call.get(at + CALLS),
            usec: self.per_call.get(at + USEC),
            failed: self.per_call.get(at + FAILED),
            rejected: self
                .rejected
                .get(slot)
                .map_or(0, |r| r.load(Ordering::Relaxed)),
        }
    }

    /// The latency histogram of one slot, if it has counted a call since the last
    /// reset.
    pub fn histogram(&self, slot: usize) -> Option<&Histogram> {
        self.histograms
            .get(slot)
            .and_then(OnceLock::get)
            .filter(|h| h.total() > 0)
    }

    /// Resets every counter and histogram (`CONFIG RESETSTAT`).
    pub fn reset(&self) {
        self.per_call.reset();
        for a in &self.rejected {
            a.store(0, Ordering::Relaxed);
        }
        for h in self.histograms.iter().filter_map(OnceLock::get) {
            h.reset();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histograms_follow_tracking_and_reset() {
        let stats = CommandStats::new(2);
        stats.record(0, Duration::from_micros(3), false);
        assert_eq!(stats.histogram(0).map(Histogram::total), Some(1));
        assert!(stats.histogram(1).is_none());
        stats.set_latency_tracking(false);
        stats.record(0, Duration::from_micros(3), true);
        assert_eq!(stats.histogram(0).map(Histogram::total), Some(1));
        assert_eq!(stats.get(0).calls, 2);
        stats.reset();
        assert!(stats.histogram(0).is_none());
        assert_eq!(stats.get(0), CommandStat::default());
    }
}
