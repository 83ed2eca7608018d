//! What an operator watches: per-command counters and latency histograms, the slow
//! log, the latency monitor and memory statistics (`INFO`, `SLOWLOG`, `LATENCY`,
//! `MEMORY`).

pub mod command_stats;
pub mod latency;
pub mod latency_graph;
pub mod latency_histogram;
pub mod memstats;
pub mod slowlog;
