//! The latency monitor: events (`command`, `fast-command`) that took at least
//! `latency-monitor-threshold` milliseconds, one sample per event and second (the
//! second's maximum), the last 160 kept, as `LATENCY LATEST` and `HISTORY` report.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

/// Samples kept per event (Redis's `LATENCY_TS_LEN`).
pub const HISTORY_LEN: usize = 160;

/// One event's record.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EventSeries {
    /// (Unix seconds, milliseconds), oldest first.
    pub samples: VecDeque<(i64, u64)>,
    /// The highest latency ever recorded for the event (until reset).
    pub max_ms: u64,
}

/// The latency monitor of an engine.
#[derive(Debug, Default)]
pub struct LatencyMonitor {
    /// `latency-monitor-threshold` in ms; 0: off.
    threshold_ms: AtomicU64,
    events: Mutex<BTreeMap<String, EventSeries>>,
}

impl LatencyMonitor {
    /// Applies `latency-monitor-threshold`.
    pub fn configure(&self, threshold_ms: u64) {
        self.threshold_ms.store(threshold_ms, Ordering::Relaxed);
    }

    /// Whether monitoring is on.
    pub fn enabled(&self) -> bool {
        self.threshold_ms.load(Ordering::Relaxed) > 0
    }

    /// Records `event` taking `ms` at Unix second `now_s` if it reached the threshold.
    pub fn add_if_needed(&self, event: &str, ms: u64, now_s: i64) {
        let t = self.threshold_ms.load(Ordering::Relaxed);
        if t == 0 || ms < t {
            return;
        }
        let mut events = self.events.lock();
        let series = events.entry(event.to_string()).or_default();
        series.max_ms = series.max_ms.max(ms);
        match series.samples.back_mut() {
            Some((s, v)) if *s == now_s => *v = (*v).max(ms),
            _ => {
                series.samples.push_back((now_s, ms));
                if series.samples.len() > HISTORY_LEN {
                    series.samples.pop_front();
                }
            }
        }
    }

    /// Every event's latest sample: (event, Unix seconds, latest ms, max ms).
    pub fn latest(&self) -> Vec<(String, i64, u64, u64)> {
        self.events
            .lock()
            .iter()
            .filter_map(|(name, s)| {
                s.samples
                    .back()
                    .map(|&(t, ms)| (name.clone(), t, ms, s.max_ms))
            })
            .collect()
    }

    /// One event's samples, oldest first (empty for an unknown event).
    pub fn history(&self, event: &str) -> Vec<(i64, u64)> {
        self.events
            .lock()
            .get(event)
            .map(|s| s.samples.iter().copied().collect())
            .unwrap_or_default()
    }

    /// Forgets the named events (every event when `names` is empty); returns how many
    /// had samples.
    pub fn reset(&self, names: &[&str]) -> usize {
        let mut events = self.events.lock();
        if names.is_empty() {
            let n = events.len();
            events.clear();
            return n;
        }
        names
            .iter()
            .filter(|n| events.remove(**n).is_some())
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_sample_per_second_and_threshold() {
        let m = LatencyMonitor::default();
        m.add_if_needed("command", 500, 1);
        assert!(m.latest().is_empty(), "off by default");
        m.configure(10);
        m.add_if_needed("command", 5, 1);
        m.add_if_needed("command", 20, 1);
        m.add_if_needed("command", 30, 1);
        m.add_if_needed("command", 15, 2);
        assert_eq!(m.history("command"), vec![(1, 30), (2, 15)]);
        assert_eq!(m.latest(), vec![("command".to_string(), 2, 15, 30)]);
        for s in 3..400 {
            m.add_if_needed("command", 11, s);
        }
        assert_eq!(m.history("command").len(), HISTORY_LEN);
        assert_eq!(m.reset(&["nope", "command"]), 1);
        assert!(m.history("command").is_empty());
    }
}
