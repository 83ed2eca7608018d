//! What the engine keeps for operators outside the keyspace: eviction under
//! `maxmemory`, the slow log, the latency monitor and client pauses, configured from
//! the live configuration and fed by the dispatcher after each command.

use crate::clients::ClientState;
use crate::config::ConfigValues;
use crate::evict::Evictor;
use crate::keyspace::{Keyspace, LfuParams};
use crate::monitor::latency::LatencyMonitor;
use crate::monitor::slowlog::SlowLog;
use crate::server::pause::PauseState;

/// The operator-facing state of an engine.
#[derive(Debug, Default)]
pub struct Operator {
    /// Eviction under `maxmemory`.
    pub evictor: Evictor,
    /// `SLOWLOG`.
    pub slowlog: SlowLog,
    /// `LATENCY`.
    pub latency: LatencyMonitor,
    /// `CLIENT PAUSE`.
    pub pause: PauseState,
    /// `used_memory_peak`.
    pub peak: crate::monitor::memstats::Peak,
}

impl Operator {
    /// Applies the configuration (at start and after `CONFIG SET`).
    pub fn configure(&self, c: &ConfigValues, keyspace: &Keyspace) {
        let policy = c.maxmemory_policy;
        self.evictor.configure(policy, c.maxmemory_samples);
        keyspace.set_lfu_params(LfuParams {
            log_factor: c.lfu_log_factor,
            decay_minutes: c.lfu_decay_time,
        });
        self.slowlog
            .configure(c.slowlog_log_slower_than, c.slowlog_max_len);
        self.latency.configure(c.latency_monitor_threshold);
    }

    /// After a command ran for `duration_us`: the slow log (unless `skip_slowlog`)
    /// and the latency monitor (`fast`: its `fast-command` event).
    pub fn after_command(
        &self,
        client: &ClientState,
        argv: &[Vec<u8>],
        duration_us: u64,
        skip_slowlog: bool,
        fast: bool,
    ) {
        if self.slowlog.wants(duration_us) && !skip_slowlog {
            let name = client.shared.text.lock().name.clone();
            self.slowlog
                .push(argv, duration_us, client.shared.addr.clone(), name);
        }
        if self.latency.enabled() {
            let event = if fast { "fast-command" } else { "command" };
            self.latency.add_if_needed(
                event,
                duration_us / 1000,
                crate::util::clock::system_unix_ms() / 1000,
            );
        }
    }
}
