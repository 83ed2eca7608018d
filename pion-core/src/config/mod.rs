//! Runtime configuration: the parameters `CONFIG GET` and `CONFIG SET` expose, one
//! table row each (name, aliases, how to read it, how to parse a new value).

use std::collections::BTreeMap;

use parking_lot::RwLock;

use crate::util::glob::glob_match;
use crate::value::EncodingLimits;

pub mod compat;
mod eviction;
pub mod file;

pub use compat::{Compat, COMPAT};
pub use eviction::MaxmemoryPolicy;

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
    /// and compression. Pion's lists are one deque with no nodes, so these tune
    /// nothing; they are kept so configurations and tools that set them still work.
    pub list_max_listpack_size: i64,
    /// See `list_max_listpack_size`.
    pub list_compress_depth: i64,
    /// Compact-encoding thresholds.
    pub limits: EncodingLimits,
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
    pub client_output_buffer_limit: crate::pubsub::limits::OutputLimits,
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
    pub enable_debug_command: String,
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
            threads: 1,
            appendonly: false,
            wal: false,
            appendfsync: crate::durability::FsyncPolicy::EverySec,
            kv_budget: 0,
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
            acllog_max_len: crate::acl::log::MAX_ENTRIES,
            tracking_table_max_keys: 1_000_000,
            acl_pubsub_default_all: false,
            notify_keyspace_events: 0,
            client_output_buffer_limit: Default::default(),
            save: Vec::new(),
            loglevel: crate::util::log::Level::Notice,
            logfile: String::new(),
            unixsocket: String::new(),
            unixsocketperm: 0,
            enable_debug_command: "no".into(),
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

fn parse_int<T>(v: &str, min: T, max: T) -> Result<T, String>
where
    T: TryFrom<i128> + TryInto<i128> + Copy + std::fmt::Display,
{
    // Parse wide first: Redis reports a negative value for an unsigned parameter as
    // out of range, not as unparsable.
    let n: i128 = v
        .parse()
        .map_err(|_| "argument couldn't be parsed into an integer".to_string())?;
    let (lo, hi): (i128, i128) = (
        min.try_into().unwrap_or(i128::MIN),
        max.try_into().unwrap_or(i128::MAX),
    );
    if n < lo || n > hi {
        return Err(format!(
            "argument must be between {min} and {max} inclusive"
        ));
    }
    T::try_from(n).map_err(|_| "argument couldn't be parsed into an integer".to_string())
}

/// Parses a memory amount with Redis's units (`b`, `k`, `kb`, `m`, `mb`, `g`, `gb`).
pub fn parse_memory(v: &str) -> Option<u64> {
    let lower = v.to_ascii_lowercase();
    let units: [(&str, u64); 7] = [
        ("gb", 1 << 30),
        ("mb", 1 << 20),
        ("kb", 1 << 10),
        ("g", 1_000_000_000),
        ("m", 1_000_000),
        ("k", 1_000),
        ("b", 1),
    ];
    for (suffix, mul) in units {
        if let Some(num) = lower.strip_suffix(suffix) {
            return num.parse::<u64>().ok()?.checked_mul(mul);
        }
    }
    lower.parse().ok()
}

/// Parses a `save` schedule: pairs of seconds and changes, or empty for none.
fn parse_save(v: &str) -> Result<Vec<(u64, u64)>, String> {
    let words: Vec<&str> = v.split_whitespace().collect();
    if !words.len().is_multiple_of(2) {
        return Err("Invalid save parameters".into());
    }
    words
        .chunks(2)
        .map(
            |pair| match (pair[0].parse::<u64>(), pair[1].parse::<u64>()) {
                (Ok(s), Ok(n)) if s <= i32::MAX as u64 && n <= i32::MAX as u64 => Ok((s, n)),
                _ => Err("Invalid save parameters".to_string()),
            },
        )
        .collect()
}

/// A request-size limit: a memory value of at least 1 MiB.
fn parse_limit_mem(v: &str) -> Result<u64, String> {
    let n = parse_mem_arg(v)?;
    if !(1024 * 1024..=i64::MAX as u64).contains(&n) {
        return Err(format!(
            "argument must be between 1048576 and {} inclusive",
            i64::MAX
        ));
    }
    Ok(n)
}

fn parse_mem_arg(v: &str) -> Result<u64, String> {
    parse_memory(v).ok_or_else(|| "argument must be a memory value".to_string())
}

macro_rules! int_param {
    ($name:expr, $aliases:expr, $($field:ident).+, $ty:ty, $min:expr, $max:expr) => {
        Param {
            name: $name,
            aliases: $aliases,
            get: |c| c.$($field).+.to_string(),
            set: Some(|c, v| {
                c.$($field).+ = parse_int::<$ty>(v, $min, $max)?;
                Ok(())
            }),
        }
    };
}

const POLICIES: &[&str] = &[
    "volatile-lru",
    "volatile-lfu",
    "volatile-random",
    "volatile-ttl",
    "allkeys-lru",
    "allkeys-lfu",
    "allkeys-random",
    "noeviction",
];

/// Every supported parameter.
pub static PARAMS: &[Param] = &[
    Param {
        name: "port",
        aliases: &[],
        get: |c| c.port.to_string(),
        set: None,
    },
    Param {
        name: "bind",
        aliases: &[],
        get: |c| c.bind.clone(),
        set: None,
    },
    Param {
        name: "dir",
        aliases: &[],
        get: |c| c.dir.clone(),
        set: None,
    },
    Param {
        name: "databases",
        aliases: &[],
        get: |c| c.databases.to_string(),
        set: None,
    },
    // Redis's schedule, on top of the snapshot Pion takes when the log grows past
    // --snapshot-wal-size.
    Param {
        name: "save",
        aliases: &[],
        get: |c| {
            c.save
                .iter()
                .map(|(s, n)| format!("{s} {n}"))
                .collect::<Vec<_>>()
                .join(" ")
        },
        set: Some(|c, v| {
            c.save = parse_save(v)?;
            Ok(())
        }),
    },
    Param {
        name: "loglevel",
        aliases: &[],
        get: |c| c.loglevel.name().into(),
        set: Some(|c, v| {
            c.loglevel = crate::util::log::Level::parse(v).ok_or(
                "argument(s) must be one of the following: debug, verbose, notice, warning",
            )?;
            Ok(())
        }),
    },
    Param {
        name: "logfile",
        aliases: &[],
        get: |c| c.logfile.clone(),
        set: None,
    },
    Param {
        name: "unixsocket",
        aliases: &[],
        get: |c| c.unixsocket.clone(),
        set: None,
    },
    Param {
        name: "unixsocketperm",
        aliases: &[],
        get: |c| format!("{:o}", c.unixsocketperm),
        set: None,
    },
    Param {
        name: "enable-debug-command",
        aliases: &[],
        get: |c| c.enable_debug_command.clone(),
        set: None,
    },
    // The server always runs in the foreground, unsupervised (start-up refuses
    // other values): shown, and immutable as in Redis.
    Param {
        name: "daemonize",
        aliases: &[],
        get: |_| "no".into(),
        set: None,
    },
    Param {
        name: "supervised",
        aliases: &[],
        get: |_| "no".into(),
        set: None,
    },
    // The write-ahead log is switched at start-up (--wal). While it is on, `no` is
    // recorded and the log stays on: Pion has no snapshot-only mode, and the log
    // is at least as durable (as `appendonly no` with a `save` schedule at
    // start-up). Without it, `yes` cannot start one.
    Param {
        name: "appendonly",
        aliases: &[],
        get: |c| if c.appendonly { "yes" } else { "no" }.into(),
        set: Some(|c, v| match (v.to_ascii_lowercase().as_str(), c.wal) {
            ("yes", true) => {
                c.appendonly = true;
                Ok(())
            }
            ("no", _) => {
                c.appendonly = false;
                Ok(())
            }
            ("yes", false) => {
                Err("the write-ahead log is switched at start-up (--wal on|off)".into())
            }
            _ => Err("argument must be 'yes' or 'no'".into()),
        }),
    },
    Param {
        name: "appendfsync",
        aliases: &[],
        get: |c| c.appendfsync.name().to_string(),
        set: Some(|c, v| match crate::durability::FsyncPolicy::parse(v) {
            Some(p) => {
                c.appendfsync = p;
                Ok(())
            }
            None => Err("argument(s) must be one of the following: always, everysec, no".into()),
        }),
    },
    Param {
        name: "io-threads",
        aliases: &[],
        get: |c| c.threads.to_string(),
        set: None,
    },
    int_param!("maxclients", &[], maxclients, usize, 1, 1_000_000),
    Param {
        name: "requirepass",
        aliases: &[],
        get: |c| c.requirepass.clone(),
        set: Some(|c, v| {
            c.requirepass = v.to_string();
            Ok(())
        }),
    },
    Param {
        name: "proto-max-bulk-len",
        aliases: &[],
        get: |c| c.proto_max_bulk_len.to_string(),
        set: Some(|c, v| {
            c.proto_max_bulk_len = parse_limit_mem(v)?;
            Ok(())
        }),
    },
    Param {
        name: "client-query-buffer-limit",
        aliases: &[],
        get: |c| c.client_query_buffer_limit.to_string(),
        set: Some(|c, v| {
            c.client_query_buffer_limit = parse_limit_mem(v)?;
            Ok(())
        }),
    },
    int_param!("timeout", &[], timeout, u64, 0, i32::MAX as u64),
    int_param!(
        "busy-reply-threshold",
        &["lua-time-limit"],
        busy_reply_threshold,
        u64,
        0,
        i64::MAX as u64
    ),
    int_param!("hz", &[], hz, u64, 0, i32::MAX as u64),
    Param {
        name: "maxmemory",
        aliases: &[],
        get: |c| c.maxmemory.to_string(),
        set: Some(|c, v| {
            c.maxmemory = parse_mem_arg(v)?;
            Ok(())
        }),
    },
    // The prompt cache's byte budget (0: none); least recently used leaf blocks are
    // evicted beyond it.
    Param {
        name: "kv-budget",
        aliases: &[],
        get: |c| c.kv_budget.to_string(),
        set: Some(|c, v| {
            c.kv_budget = parse_mem_arg(v)?;
            Ok(())
        }),
    },
    Param {
        name: "maxmemory-policy",
        aliases: &[],
        get: |c| c.maxmemory_policy.name().to_string(),
        set: Some(|c, v| match MaxmemoryPolicy::parse(v) {
            Some(p) => {
                c.maxmemory_policy = p;
                Ok(())
            }
            None => {
                Err("argument(s) must be one of the following: ".to_string() + &POLICIES.join(", "))
            }
        }),
    },
    int_param!(
        "list-max-listpack-size",
        &["list-max-ziplist-size"],
        list_max_listpack_size,
        i64,
        i32::MIN as i64,
        i32::MAX as i64
    ),
    int_param!(
        "list-compress-depth",
        &[],
        list_compress_depth,
        i64,
        0,
        i32::MAX as i64
    ),
    int_param!(
        "hash-max-listpack-entries",
        &["hash-max-ziplist-entries"],
        limits.hash_max_listpack_entries,
        usize,
        0,
        i64::MAX as usize
    ),
    int_param!(
        "hash-max-listpack-value",
        &["hash-max-ziplist-value"],
        limits.hash_max_listpack_value,
        usize,
        0,
        i64::MAX as usize
    ),
    int_param!(
        "set-max-intset-entries",
        &[],
        limits.set_max_intset_entries,
        usize,
        0,
        i64::MAX as usize
    ),
    int_param!(
        "zset-max-listpack-entries",
        &["zset-max-ziplist-entries"],
        limits.zset_max_listpack_entries,
        usize,
        0,
        i64::MAX as usize
    ),
    int_param!(
        "zset-max-listpack-value",
        &["zset-max-ziplist-value"],
        limits.zset_max_listpack_value,
        usize,
        0,
        i64::MAX as usize
    ),
    int_param!(
        "maxmemory-samples",
        &[],
        maxmemory_samples,
        usize,
        1,
        i32::MAX as usize
    ),
    int_param!(
        "lfu-log-factor",
        &[],
        lfu_log_factor,
        u32,
        0,
        i32::MAX as u32
    ),
    int_param!(
        "lfu-decay-time",
        &[],
        lfu_decay_time,
        u32,
        0,
        i32::MAX as u32
    ),
    int_param!(
        "slowlog-log-slower-than",
        &[],
        slowlog_log_slower_than,
        i64,
        -1,
        i64::MAX
    ),
    int_param!(
        "slowlog-max-len",
        &[],
        slowlog_max_len,
        usize,
        0,
        i64::MAX as usize
    ),
    int_param!(
        "latency-monitor-threshold",
        &[],
        latency_monitor_threshold,
        u64,
        0,
        i64::MAX as u64
    ),
    Param {
        name: "latency-tracking",
        aliases: &[],
        get: |c| if c.latency_tracking { "yes" } else { "no" }.into(),
        set: Some(|c, v| {
            c.latency_tracking = parse_yes_no(v)?;
            Ok(())
        }),
    },
    Param {
        name: "latency-tracking-info-percentiles",
        aliases: &[],
        get: |c| {
            let shown: Vec<String> = c
                .latency_tracking_info_percentiles
                .iter()
                .map(|p| percentile_label(*p))
                .collect();
            shown.join(" ")
        },
        set: Some(|c, v| {
            c.latency_tracking_info_percentiles = parse_percentiles(v)?;
            Ok(())
        }),
    },
    Param {
        name: "protected-mode",
        aliases: &[],
        get: |c| if c.protected_mode { "yes" } else { "no" }.into(),
        set: Some(|c, v| {
            c.protected_mode = parse_yes_no(v)?;
            Ok(())
        }),
    },
    int_param!(
        "acllog-max-len",
        &[],
        acllog_max_len,
        usize,
        0,
        i64::MAX as usize
    ),
    int_param!(
        "tracking-table-max-keys",
        &[],
        tracking_table_max_keys,
        usize,
        0,
        i64::MAX as usize
    ),
    Param {
        name: "acl-pubsub-default",
        aliases: &[],
        get: |c| {
            if c.acl_pubsub_default_all {
                "allchannels"
            } else {
                "resetchannels"
            }
            .into()
        },
        set: Some(|c, v| {
            c.acl_pubsub_default_all = match v.to_ascii_lowercase().as_str() {
                "allchannels" => true,
                "resetchannels" => false,
                _ => {
                    return Err(
                        "argument(s) must be one of the following: allchannels, resetchannels"
                            .into(),
                    )
                }
            };
            Ok(())
        }),
    },
    Param {
        name: "aclfile",
        aliases: &[],
        get: |c| c.aclfile.clone(),
        set: None,
    },
    Param {
        name: "notify-keyspace-events",
        aliases: &[],
        get: |c| crate::pubsub::notify::format_flags(c.notify_keyspace_events),
        set: Some(|c, v| {
            c.notify_keyspace_events = crate::pubsub::notify::parse_flags(v)?;
            Ok(())
        }),
    },
    Param {
        name: "client-output-buffer-limit",
        aliases: &[],
        get: |c| c.client_output_buffer_limit.render(),
        set: Some(|c, v| c.client_output_buffer_limit.parse_into(v)),
    },
];

/// A yes/no directive's value, with Redis's error text.
fn parse_yes_no(v: &str) -> Result<bool, String> {
    match v.to_ascii_lowercase().as_str() {
        "yes" => Ok(true),
        "no" => Ok(false),
        _ => Err("argument must be 'yes' or 'no'".into()),
    }
}

/// A percentile as Redis prints it: `%f` without trailing zeros (`50`, `99.9`).
pub fn percentile_label(p: f64) -> String {
    let fixed = format!("{p:.6}");
    fixed
        .trim_end_matches('0')
        .trim_end_matches('.')
        .to_string()
}

/// `latency-tracking-info-percentiles`: numbers from 0 to 100, space separated (an
/// empty value: none).
fn parse_percentiles(v: &str) -> Result<Vec<f64>, String> {
    v.split_ascii_whitespace()
        .map(|word| {
            let p = crate::util::num::parse_f64(word.as_bytes())
                .filter(|p| !p.is_nan())
                .ok_or("Invalid latency-tracking-info-percentiles parameters")?;
            if !(0.0..=100.0).contains(&p) {
                return Err(
                    "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]",
                );
            }
            Ok(p)
        })
        .collect::<Result<_, _>>()
        .map_err(str::to_string)
}

/// Every parameter: Pion's own, then the compatibility directives ([`compat`]).
pub fn all_params() -> impl Iterator<Item = &'static Param> {
    PARAMS.iter().chain(compat::COMPAT_PARAMS.iter())
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
