//! Memory figures for `INFO memory` and `MEMORY STATS` under Redis's field names:
//! used memory (what the counting allocator says the process holds, or the keyspace's
//! estimate where that allocator is not installed — the figure eviction compares with
//! `maxmemory`), its peak, the start-up baseline, the keys' own share, the process's
//! resident set size and the ratio between the two.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::keyspace::Keyspace;
use crate::util::alloc;
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

/// What the engine holds beside the keys, gathered where it is kept (the allocator
/// counts all of it but the mapped payloads; these say where it went).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemoryParts {
    /// What eviction leaves out of `used` (the log's buffer; `mem_aof_buffer`).
    pub not_counted: u64,
    /// Prompt-cache payloads held as views of block-file mappings: resident like
    /// allocated memory but not the allocator's, so added to `used`.
    pub mapped: u64,
    /// The connected clients' query and reply buffers (`mem_clients_normal`).
    pub clients: u64,
    /// The prompt cache's stored layers, mapped or allocated (`mem_prompt_cache`).
    pub prompt_cache: u64,
    /// The search indexes' vector fields (`mem_vector_indexes`).
    pub vector_indexes: u64,
}

/// One reading of the memory figures.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryReport {
    /// Bytes the process holds (counted by the allocator), or the keys' and values'
    /// estimate without it: what eviction keeps under `maxmemory`.
    pub used: u64,
    /// The keys' and values' own estimate (`used_memory_dataset`), at most `used`.
    pub dataset: u64,
    /// `used` when the engine had just started (`used_memory_startup`).
    pub startup: u64,
    /// Highest `used` seen.
    pub peak: u64,
    /// Resident set size of the process (0 where unknown).
    pub rss: u64,
    /// Number of keys in every database.
    pub keys: u64,
    /// Physical memory of the machine (0 where unknown).
    pub system: u64,
    /// Bytes eviction leaves out of `used` (`mem_not_counted_for_evict`).
    pub not_counted: u64,
    /// Where the memory beside the keys is (clients, prompt cache, indexes).
    pub parts: MemoryParts,
    /// The allocator's name (`mem_allocator`).
    pub allocator: String,
}

impl MemoryReport {
    /// Reads the figures of `keyspace` now, noting its used memory in `peak`;
    /// `startup` is the used memory the engine started with, `parts` what the
    /// engine holds beside the keys.
    pub fn read(
        keyspace: &Keyspace,
        peak: &Peak,
        startup: u64,
        parts: MemoryParts,
    ) -> MemoryReport {
        let estimate = keyspace.estimated_memory() as u64;
        let used = alloc::allocated().unwrap_or(estimate) + parts.mapped;
        let dataset = estimate.min(used);
        let keys = (0..keyspace.databases())
            .map(|db| keyspace.db_size(db) as u64)
            .sum();
        MemoryReport {
            used,
            dataset,
            startup: startup.min(used),
            peak: peak.note(used),
            rss: crate::util::alloc::resident_bytes(),
            keys,
            system: system_bytes(),
            not_counted: parts.not_counted.min(used),
            parts,
            allocator: alloc::name(),
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

    /// What is not the keys' and values' own bytes (`used_memory_overhead`): tables,
    /// client and log buffers, indexes, scripts, the start-up baseline.
    pub fn overhead(&self) -> u64 {
        self.used - self.dataset
    }

    /// The dataset as a percentage of what was allocated since start-up (Redis's
    /// `used_memory_dataset_perc`).
    pub fn dataset_percentage(&self) -> f64 {
        let net = self.used.saturating_sub(self.startup);
        if net == 0 {
            100.0
        } else {
            (self.dataset as f64 * 100.0 / net as f64).min(100.0)
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
            ("used_memory_overhead", self.overhead().to_string()),
            ("used_memory_startup", self.startup.to_string()),
            ("used_memory_dataset", self.dataset.to_string()),
            (
                "used_memory_dataset_perc",
                format!("{:.2}%", self.dataset_percentage()),
            ),
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
            ("mem_not_counted_for_evict", self.not_counted.to_string()),
            ("mem_clients_slaves", "0".into()),
            ("mem_clients_normal", self.parts.clients.to_string()),
            ("mem_aof_buffer", self.not_counted.to_string()),
            ("mem_allocator", self.allocator.clone()),
            ("lazyfree_pending_objects", "0".into()),
            ("lazyfreed_objects", "0".into()),
            // Pion's own: the prompt cache's layers, the search indexes' vectors and
            // how often free pages went back to the system.
            ("mem_prompt_cache", self.parts.prompt_cache.to_string()),
            ("mem_prompt_cache_mapped", self.parts.mapped.to_string()),
            ("mem_vector_indexes", self.parts.vector_indexes.to_string()),
            ("mem_purges", crate::util::alloc::purges().to_string()),
        ]
    }
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
