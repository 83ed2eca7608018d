//! Every `CONFIG` parameter: its name, aliases, how its value is shown and how a new
//! one is checked and applied, with the parsers they share (integers in range, memory
//! sizes, yes/no, the `save` schedule, percentiles). Errors carry Redis's wording.

use super::{MaxmemoryPolicy, Param};

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
        get: |c| c.enable_debug_command.name().to_string(),
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
    // Where ATTEND.* computes (auto, cpu, gpu); a change takes effect at the next query.
    Param {
        name: "attend-device",
        aliases: &[],
        get: |c| c.attend_device.name().to_string(),
        set: Some(|c, v| match kernels::DevicePolicy::parse(v) {
            Some(p) => {
                c.attend_device = p;
                Ok(())
            }
            None => Err("argument(s) must be one of the following: auto, cpu, gpu".into()),
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
        "stream-node-max-entries",
        &[],
        limits.stream_node_max_entries,
        usize,
        0,
        i64::MAX as usize
    ),
    Param {
        name: "stream-node-max-bytes",
        aliases: &[],
        get: |c| c.limits.stream_node_max_bytes.to_string(),
        set: Some(|c, v| {
            let n = parse_mem_arg(v)?;
            if n > i64::MAX as u64 {
                return Err(format!(
                    "argument must be between 0 and {} inclusive",
                    i64::MAX
                ));
            }
            c.limits.stream_node_max_bytes = n as usize;
            Ok(())
        }),
    },
    Param {
        name: "hll-sparse-max-bytes",
        aliases: &[],
        get: |c| c.hll_sparse_max_bytes.to_string(),
        set: Some(|c, v| {
            let n = parse_mem_arg(v)?;
            if n > i64::MAX as u64 {
                return Err(format!(
                    "argument must be between 0 and {} inclusive",
                    i64::MAX
                ));
            }
            c.hll_sparse_max_bytes = n;
            Ok(())
        }),
    },
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
        name: "rdbcompression",
        aliases: &[],
        get: |c| if c.rdbcompression { "yes" } else { "no" }.into(),
        set: Some(|c, v| {
            c.rdbcompression = parse_yes_no(v)?;
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
        get: |c| super::keyspace_events::format_flags(c.notify_keyspace_events),
        set: Some(|c, v| {
            c.notify_keyspace_events = super::keyspace_events::parse_flags(v)?;
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
