//! Runtime configuration: the parameters `CONFIG GET` and `CONFIG SET` expose, one
//! table row each (name, aliases, how to read it, how to parse a new value).

use std::collections::BTreeMap;

use parking_lot::RwLock;

use crate::util::glob::glob_match;
use crate::value::EncodingLimits;

pub mod compat;
mod eviction;
pub mod file;
pub mod keyspace_events;
pub mod output_limits;
mod params;
pub mod search;

pub use compat::{Compat, COMPAT};
pub use eviction::MaxmemoryPolicy;

/// `enable-debug-command`: who may run `DEBUG` (and `MODULE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DebugCommand {
    /// Nobody.
    No,
    /// Every client.
    Yes,
    /// Loopback and Unix-socket clients only.
    Local,
}

impl DebugCommand {
    /// Its name in the configuration.
    pub fn name(self) -> &'static str {
        match self {
            DebugCommand::No => "no",
            DebugCommand::Yes => "yes",
            DebugCommand::Local => "local",
        }
    }

    /// The setting `value` names, in any case.
    pub fn parse(value: &str) -> Option<DebugCommand> {
        [DebugCommand::No, DebugCommand::Yes, DebugCommand::Local]
            .into_iter()
            .find(|d| d.name().eq_ignore_ascii_case(value))
    }
}
pub use params::{parse_memory, percentile_label, PARAMS};

/// `acllog-max-len`'s default: the most `ACL LOG` entries kept.
pub const ACLLOG_MAX_LEN_DEFAULT: usize = 128;

/// The values of every parameter.
#[derive(Debug, Clone)]
pub struct ConfigValues {
    /// `port`.
    pub port: u16,
    /// `bind` addresses, space separated.
    pub bind: String,
    /// `dir`: the data directory.
    pub dir: String,
    /// `databases` (immutable).
    pub databases: usize,
    /// `maxclients`.
    pub maxclients: usize,
    /// `requirepass` (empty: none).
    pub requirepass: String,
    /// `proto-max-bulk-len`.
    pub proto_max_bulk_len: u64,
    /// `client-query-buffer-limit`.
    pub client_query_buffer_limit: u64,
    /// `timeout` (idle seconds before closing a client; 0 = never).
    pub timeout: u64,
    /// `hz`.
    pub hz: u64,
    /// `maxmemory` in bytes (0 = unlimited).
    pub maxmemory: u64,
    /// `maxmemory-policy`.
    pub maxmemory_policy: MaxmemoryPolicy,
    /// `list-max-listpack-size` (and `list-compress-depth`): Redis's quicklist node size
    /// and compression. Pion's lists are one deque with no nodes: these shape only the
    /// nodes a list's `DUMP` payload is split into, as Redis would have filled them.
    pub list_max_listpack_size: i64,
    /// See `list_max_listpack_size`.
    pub list_compress_depth: i64,
    /// Compact-encoding thresholds.
    pub limits: EncodingLimits,
    /// `rdbcompression`: `DUMP` payloads LZF-compress strings longer than 20 bytes.
    pub rdbcompression: bool,
    /// `hll-sparse-max-bytes`: the longest a sparse HyperLogLog grows before it turns
    /// dense.
    pub hll_sparse_max_bytes: u64,
    /// `threads` (immutable; Pion's executing threads).
    pub threads: usize,
    /// `appendonly`: as set at start-up (the log's state) or since by `CONFIG SET`.
    pub appendonly: bool,
    /// Whether the write-ahead log is on: fixed at start-up (`--wal`).
    pub wal: bool,
    /// `appendfsync`: `always`, `everysec` or `no`.
    pub appendfsync: crate::durability::FsyncPolicy,
    /// `kv-budget`: bytes of prompt-cache blocks kept (0: no limit).
    pub kv_budget: u64,
    /// Where `ATTEND.*` runs its kernels: `auto` (a hardware GPU when there is one,
    /// for calls large enough), `cpu`, or `gpu` (any adapter, software ones too).
    pub attend_device: kernels::DevicePolicy,
    /// `busy-reply-threshold` (alias `lua-time-limit`): milliseconds a script runs
    /// before other clients are answered `-BUSY`.
    pub busy_reply_threshold: u64,
    /// `maxmemory-samples`: keys sampled per database for each eviction.
    pub maxmemory_samples: usize,
    /// `lfu-log-factor`.
    pub lfu_log_factor: u32,
    /// `lfu-decay-time` (minutes).
    pub lfu_decay_time: u32,
    /// `slowlog-log-slower-than` (µs; negative: off).
    pub slowlog_log_slower_than: i64,
    /// `slowlog-max-len`.
    pub slowlog_max_len: usize,
    /// `latency-monitor-threshold` (ms; 0: off).
    pub latency_monitor_threshold: u64,
    /// `latency-tracking`: per-command latency histograms are kept.
    pub latency_tracking: bool,
    /// `latency-tracking-info-percentiles`: what `INFO latencystats` reports.
    pub latency_tracking_info_percentiles: Vec<f64>,
    /// `protected-mode`: with no password on the default user, only loopback clients
    /// are served.
    pub protected_mode: bool,
    /// `acl-pubsub-default`: new users may use every channel (`allchannels`) or none
    /// (`resetchannels`, the default).
    pub acl_pubsub_default_all: bool,
    /// `acllog-max-len`: entries `ACL LOG` keeps.
    pub acllog_max_len: usize,
    /// `tracking-table-max-keys`: keys the client-side caching table remembers
    /// before it invalidates some to make room (0: no limit).
    pub tracking_table_max_keys: usize,
    /// `aclfile`: where users are loaded from and saved to (empty: none).
    pub aclfile: String,
    /// `notify-keyspace-events`, as class bits.
    pub notify_keyspace_events: u32,
    /// `client-output-buffer-limit`.
    pub client_output_buffer_limit: output_limits::OutputLimits,
    /// `save`: the snapshot schedule, (seconds, changes) points; a snapshot starts
    /// when at least `changes` writes are older than the last one by `seconds`.
    pub save: Vec<(u64, u64)>,
    /// `loglevel`.
    pub loglevel: crate::util::log::Level,
    /// `logfile` (empty: standard output; set at start-up).
    pub logfile: String,
    /// `unixsocket`: path of a Unix-domain socket to listen on too (empty: none).
    pub unixsocket: String,
    /// `unixsocketperm`: permission bits of that socket (0: the umask's).
    pub unixsocketperm: u32,
    /// `enable-debug-command`: `no`, `yes`, or `local` (loopback and Unix-socket
    /// clients only).
    pub enable_debug_command: DebugCommand,
    /// The search engine's settings ([`search`]).
    pub search: search::SearchSettings,
    /// Values of the compatibility directives that were set ([`compat`]).
    pub compat: BTreeMap<&'static str, String>,
}

impl Default for ConfigValues {
    fn default() -> Self {
        ConfigValues {
            port: 1974,
            bind: "127.0.0.1".into(),
            dir: ".".into(),
            databases: 16,
            maxclients: 10000,
            requirepass: String::new(),
            proto_max_bulk_len: 512 * 1024 * 1024,
            client_query_buffer_limit: 1024 * 1024 * 1024,
            timeout: 0,
            hz: 10,
            maxmemory: 0,
            maxmemory_policy: MaxmemoryPolicy::NoEviction,
            list_max_listpack_size: -2,
            list_compress_depth: 0,
            limits: EncodingLimits::default(),
            rdbcompression: true,
            hll_sparse_max_bytes: 3000,
            threads: 1,
            appendonly: false,
            wal: false,
            appendfsync: crate::durability::FsyncPolicy::EverySec,
            kv_budget: 0,
            attend_device: kernels::DevicePolicy::Auto,
            busy_reply_threshold: 5000,
            maxmemory_samples: 5,
            lfu_log_factor: 10,
            lfu_decay_time: 1,
            slowlog_log_slower_than: 10_000,
            slowlog_max_len: 128,
            latency_monitor_threshold: 0,
            latency_tracking: true,
            latency_tracking_info_percentiles: vec![50.0, 99.0, 99.9],
            protected_mode: true,
            aclfile: String::new(),
            acllog_max_len: ACLLOG_MAX_LEN_DEFAULT,
            tracking_table_max_keys: 1_000_000,
            acl_pubsub_default_all: false,
            notify_keyspace_events: 0,
            client_output_buffer_limit: Default::default(),
            save: Vec::new(),
            loglevel: crate::util::log::Level::Notice,
            logfile: String::new(),
            unixsocket: String::new(),
            unixsocketperm: 0,
            enable_debug_command: DebugCommand::No,
            search: search::SearchSettings::default(),
            compat: BTreeMap::new(),
        }
    }
}

type Getter = fn(&ConfigValues) -> String;
type Setter = fn(&mut ConfigValues, &str) -> Result<(), String>;

/// One configuration parameter.
pub struct Param {
    /// Canonical name.
    pub name: &'static str,
    /// Other accepted names (Redis's old `ziplist` spellings).
    pub aliases: &'static [&'static str],
    /// Reads the current value as text.
    pub get: Getter,
    /// Parses and applies a new value; `None` for immutable parameters.
    pub set: Option<Setter>,
}

/// Every parameter: Pion's own, the search settings, then the compatibility
/// directives ([`compat`]).
pub fn all_params() -> impl Iterator<Item = &'static Param> {
    PARAMS
        .iter()
        .chain(search::params())
        .chain(compat::COMPAT_PARAMS.iter())
}

/// Why `CONFIG SET` refused a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigError {
    /// No such parameter.
    Unknown(String),
    /// The parameter cannot change at run time.
    Immutable(String),
    /// The value is invalid: (parameter, reason).
    Invalid(String, String),
}

/// The live configuration.
pub struct Config {
    values: RwLock<ConfigValues>,
}

impl Config {
    /// A configuration with these values.
    pub fn new(values: ConfigValues) -> Config {
        Config {
            values: RwLock::new(values),
        }
    }

    /// A copy of every value.
    pub fn snapshot(&self) -> ConfigValues {
        self.values.read().clone()
    }

    /// Changes values in place (start-up settings that bypass `CONFIG SET`'s checks).
    pub fn update(&self, f: impl FnOnce(&mut ConfigValues)) {
        f(&mut self.values.write());
    }

    /// Reads values under the lock.
    pub fn with<T>(&self, f: impl FnOnce(&ConfigValues) -> T) -> T {
        f(&self.values.read())
    }

    /// The compact-encoding thresholds.
    pub fn encoding_limits(&self) -> EncodingLimits {
        self.values.read().limits
    }

    /// The parameter with this name or alias.
    pub fn param(name: &str) -> Option<&'static Param> {
        let lower = name.to_ascii_lowercase();
        all_params().find(|p| p.name == lower || p.aliases.contains(&lower.as_str()))
    }

    /// `CONFIG GET` for several glob patterns: (name, value) pairs, each parameter once.
    pub fn get_matching(&self, patterns: &[&[u8]]) -> Vec<(String, String)> {
        let values = self.values.read();
        let mut out: Vec<(String, String)> = Vec::new();
        for pattern in patterns {
            for p in all_params() {
                for name in std::iter::once(&p.name).chain(p.aliases.iter()) {
                    let exact = !pattern.iter().any(|c| matches!(c, b'*' | b'?' | b'['));
                    // Aliases only answer when asked for by their exact name, as in Redis.
                    let alias = *name != p.name;
                    let hit = if exact {
                        pattern.eq_ignore_ascii_case(name.as_bytes())
                    } else {
                        !alias && glob_match(pattern, name.as_bytes(), true)
                    };
                    if hit && !out.iter().any(|(n, _)| n.eq_ignore_ascii_case(name)) {
                        // An exact name is echoed as the client spelled it, as Redis does.
                        let shown = if exact {
                            String::from_utf8_lossy(pattern).into_owned()
                        } else {
                            name.to_string()
                        };
                        out.push((shown, (p.get)(&values)));
                    }
                }
            }
        }
        out
    }

    /// `CONFIG SET` of several parameters, atomically: all apply or none.
    pub fn set_many(&self, pairs: &[(&str, &str)]) -> Result<(), ConfigError> {
        let mut values = self.values.write();
        let mut next = values.clone();
        for (name, value) in pairs {
            let p = Config::param(name).ok_or_else(|| ConfigError::Unknown(name.to_string()))?;
            let set = p
                .set
                .ok_or_else(|| ConfigError::Immutable(name.to_string()))?;
            set(&mut next, value).map_err(|e| ConfigError::Invalid(name.to_string(), e))?;
        }
        crate::util::log::set_level(next.loglevel);
        *values = next;
        Ok(())
    }
}
