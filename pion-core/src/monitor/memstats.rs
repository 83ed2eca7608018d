//! Memory figures for `INFO memory` and `MEMORY STATS`: used memory (the keyspace's
//! estimate, which eviction compares with `maxmemory`), its peak, the process's
//! resident set size and the ratio between the two, under Redis's field names.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::keyspace::Keyspace;
use crate::util::num::human_bytes;

/// The highest used memory seen (`used_memory_peak`), process-wide per engine.
#[derive(Debug, Default)]
pub struct Peak(AtomicU64);

impl Peak {
    /// Records `used` and returns the peak including it.
    pub fn note(&self, used: u64) -> u64 {
        self.0.fetch_max(used, Ordering::Relaxed).max(used)
    }
}

/// One reading of the memory figures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MemoryReport {
    /// Bytes of keys and values (estimated), what eviction keeps under `maxmemory`.
    pub used: u64,
    /// Highest `used` seen.
    pub peak: u64,
    /// Resident set size of the process (0 where unknown).
    pub rss: u64,
    /// Number of keys in every database.
    pub keys: u64,
    /// Physical memory of the machine (0 where unknown).
    pub system: u64,
}

impl MemoryReport {
    /// Reads the figures of `keyspace` now, noting its used memory in `peak`.
    pub fn read(keyspace: &Keyspace, peak: &Peak) -> MemoryReport {
        let used = keyspace.used_memory() as u64;
        let keys = (0..keyspace.databases())
            .map(|db| keyspace.db_size(db) as u64)
            .sum();
        MemoryReport {
            used,
            peak: peak.note(used),
            rss: rss_bytes(),
            keys,
            system: system_bytes(),
        }
    }

    /// `rss / used` (Redis's `mem_fragmentation_ratio`); 0 with nothing used.
    pub fn fragmentation(&self) -> f64 {
        if self.used == 0 {
            0.0
        } else {
            self.rss as f64 / self.used as f64
        }
    }

    /// `used` as a percentage of `peak`.
    pub fn peak_percentage(&self) -> f64 {
        if self.peak == 0 {
            100.0
        } else {
            self.used as f64 * 100.0 / self.peak as f64
        }
    }

    /// The `INFO memory` fields (before `maxmemory` and the policy).
    pub fn info_fields(&self) -> Vec<(&'static str, String)> {
        vec![
            ("used_memory", self.used.to_string()),
            ("used_memory_human", human_bytes(self.used)),
            ("used_memory_rss", self.rss.to_string()),
            ("used_memory_rss_human", human_bytes(self.rss)),
            ("used_memory_peak", self.peak.to_string()),
            ("used_memory_peak_human", human_bytes(self.peak)),
            (
                "used_memory_peak_perc",
                format!("{:.2}%", self.peak_percentage()),
            ),
            ("used_memory_overhead", "0".into()),
            ("used_memory_startup", "0".into()),
            ("used_memory_dataset", self.used.to_string()),
            ("used_memory_dataset_perc", "100.00%".into()),
            ("total_system_memory", self.system.to_string()),
            ("total_system_memory_human", human_bytes(self.system)),
        ]
    }

    /// The `INFO memory` fields after `maxmemory` and the policy.
    pub fn info_tail(&self) -> Vec<(&'static str, String)> {
        vec![
            (
                "mem_fragmentation_ratio",
                format!("{:.2}", self.fragmentation()),
            ),
            (
                "mem_fragmentation_bytes",
                (self.rss as i64 - self.used as i64).to_string(),
            ),
            ("mem_not_counted_for_evict", "0".into()),
            ("mem_clients_slaves", "0".into()),
            ("mem_clients_normal", "0".into()),
            ("mem_aof_buffer", "0".into()),
            ("mem_allocator", "libc".into()),
            ("lazyfree_pending_objects", "0".into()),
            ("lazyfreed_objects", "0".into()),
        ]
    }
}

/// The process's resident set size, from `/proc/self/statm` (0 elsewhere).
fn rss_bytes() -> u64 {
    let Ok(text) = std::fs::read_to_string("/proc/self/statm") else {
        return 0;
    };
    let pages: u64 = text
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

/// Physical memory, from `/proc/meminfo` (0 elsewhere).
fn system_bytes() -> u64 {
    let Ok(text) = std::fs::read_to_string("/proc/meminfo") else {
        return 0;
    };
    text.lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}
