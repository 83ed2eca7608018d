//! Directives of redis.conf that configure machinery Pion does not have (RDB files,
//! replication, the AOF rewrite, hash-table rehashing). A configuration file written for
//! redis-server, or a tool that sets them with `CONFIG SET`, must still work: each one
//! here is checked like Redis checks it, kept, and shown by `CONFIG GET`, and the table
//! says why it changes nothing.

use super::{ConfigValues, Param};

/// How a compatibility directive's value is checked (and normalised, as Redis does).
#[derive(Debug, Clone, Copy)]
pub enum Check {
    /// `yes` or `no`.
    YesNo,
    /// An integer in this range.
    Int(i64, i64),
    /// A memory size (`1mb`, `64k`, bytes), shown in bytes.
    Memory,
    /// One of these words.
    OneOf(&'static [&'static str]),
    /// Any text.
    Text,
}

impl Check {
    /// The value as it is kept, or why it is refused (Redis's wording).
    pub fn normalise(self, v: &str) -> Result<String, String> {
        match self {
            Check::YesNo => match v.to_ascii_lowercase().as_str() {
                w @ ("yes" | "no") => Ok(w.to_string()),
                _ => Err("argument must be 'yes' or 'no'".into()),
            },
            Check::Int(min, max) => match v.parse::<i64>() {
                Ok(n) if (min..=max).contains(&n) => Ok(n.to_string()),
                Ok(_) => Err(format!(
                    "argument must be between {min} and {max} inclusive"
                )),
                Err(_) => Err("argument couldn't be parsed into an integer".into()),
            },
            Check::Memory => super::parse_memory(v)
                .map(|n| n.to_string())
                .ok_or_else(|| "argument must be a memory value".into()),
            Check::OneOf(words) => {
                let lower = v.to_ascii_lowercase();
                if words.contains(&lower.as_str()) {
                    Ok(lower)
                } else {
                    Err(format!(
                        "argument(s) must be one of the following: {}",
                        words.join(", ")
                    ))
                }
            }
            Check::Text => Ok(v.to_string()),
        }
    }
}

/// One directive accepted for compatibility.
pub struct Compat {
    /// Canonical name.
    pub name: &'static str,
    /// Other accepted names (Redis's `slave-*` spellings).
    pub aliases: &'static [&'static str],
    /// Redis's default, shown until it is set.
    pub default: &'static str,
    /// How values are checked.
    pub check: Check,
    /// Why it has no effect in Pion.
    pub why: &'static str,
}

const RDB: &str = "Pion writes its own snapshot format, not RDB files";
const REPLICATION: &str = "Pion has no replication";
const AOF_REWRITE: &str =
    "Pion's write-ahead log is segmented and trimmed by snapshots, never rewritten";
const LAZYFREE: &str = "Pion frees values on the thread that removes them";

/// Declares the compatibility directives once: [`COMPAT`] (what each is) and
/// [`COMPAT_PARAMS`] (the `CONFIG GET`/`SET` rows that read and keep their values).
macro_rules! compat_table {
    ($( ($name:literal, [$($alias:literal),*], $default:literal, $check:expr, $why:expr) ),* $(,)?) => {
        /// Every compatibility directive.
        pub static COMPAT: &[Compat] = &[
            $( Compat { name: $name, aliases: &[$($alias),*], default: $default, check: $check, why: $why } ),*
        ];
        /// Their configuration parameters.
        pub static COMPAT_PARAMS: &[Param] = &[
            $( Param { name: $name, aliases: &[$($alias),*], get: |c| value(c, $name), set: Some(|c, v| set(c, $name, v)) } ),*
        ];
    };
}

compat_table! {
    ("rdbchecksum", [], "yes", Check::YesNo, "snapshots are always checksummed (CRC32C per section), DUMP payloads always carry their CRC-64"),
    ("sanitize-dump-payload", [], "no", Check::OneOf(&["no", "yes", "clients"]), "RESTORE always validates a payload in full, as Redis's `yes` does (doc/dump.md)"),
    ("dbfilename", [], "dump.rdb", Check::Text, RDB),
    ("rdb-del-sync-files", [], "no", Check::YesNo, RDB),
    ("stop-writes-on-bgsave-error", [], "yes", Check::YesNo, "writes stop when the write-ahead log fails, whatever snapshots do"),
    ("appendfilename", [], "appendonly.aof", Check::Text, "the log's segments are named by Pion inside the data directory"),
    ("appenddirname", [], "appendonlydir", Check::Text, "the log's segments live in the data directory"),
    ("no-appendfsync-on-rewrite", [], "no", Check::YesNo, AOF_REWRITE),
    ("auto-aof-rewrite-percentage", [], "100", Check::Int(0, i32::MAX as i64), AOF_REWRITE),
    ("auto-aof-rewrite-min-size", [], "67108864", Check::Memory, AOF_REWRITE),
    ("aof-use-rdb-preamble", [], "yes", Check::YesNo, AOF_REWRITE),
    ("aof-load-truncated", [], "yes", Check::YesNo, "a damaged log tail is handled by --wal-recover"),
    ("aof-timestamp-enabled", [], "no", Check::YesNo, AOF_REWRITE),
    ("activerehashing", [], "yes", Check::YesNo, "Pion's tables grow without an incremental rehash"),
    ("active-defrag-enabled", ["activedefrag"], "no", Check::YesNo, "Pion's allocator is mimalloc, which has no defragmentation hook"),
    ("dynamic-hz", [], "yes", Check::YesNo, "background work runs on its own timers"),
    ("jemalloc-bg-thread", [], "yes", Check::YesNo, "Pion does not use jemalloc"),
    ("lazyfree-lazy-eviction", [], "no", Check::YesNo, LAZYFREE),
    ("lazyfree-lazy-expire", [], "no", Check::YesNo, LAZYFREE),
    ("lazyfree-lazy-server-del", [], "no", Check::YesNo, LAZYFREE),
    ("lazyfree-lazy-user-del", [], "no", Check::YesNo, LAZYFREE),
    ("lazyfree-lazy-user-flush", [], "no", Check::YesNo, LAZYFREE),
    ("replica-serve-stale-data", ["slave-serve-stale-data"], "yes", Check::YesNo, REPLICATION),
    ("replica-read-only", ["slave-read-only"], "yes", Check::YesNo, REPLICATION),
    ("repl-diskless-sync", [], "yes", Check::YesNo, REPLICATION),
    ("repl-diskless-sync-delay", [], "5", Check::Int(0, i32::MAX as i64), REPLICATION),
    ("repl-diskless-load", [], "disabled", Check::OneOf(&["disabled", "on-empty-db", "swapdb"]), REPLICATION),
    ("repl-timeout", [], "60", Check::Int(1, i32::MAX as i64), REPLICATION),
    ("repl-backlog-size", [], "1048576", Check::Memory, REPLICATION),
    ("repl-ping-replica-period", ["repl-ping-slave-period"], "10", Check::Int(1, i32::MAX as i64), REPLICATION),
    ("masterauth", [], "", Check::Text, REPLICATION),
    ("masteruser", [], "", Check::Text, REPLICATION),
    ("min-replicas-to-write", ["min-slaves-to-write"], "0", Check::Int(0, i32::MAX as i64), REPLICATION),
    ("propagation-error-behavior", [], "ignore", Check::OneOf(&["ignore", "panic", "panic-on-replicas"]), REPLICATION),
    ("enable-protected-configs", [], "no", Check::OneOf(&["yes", "no", "local"]), "the directives it protects (dir, dbfilename, …) cannot change at run time in Pion"),
    ("enable-module-command", [], "no", Check::OneOf(&["yes", "no", "local"]), "Pion loads no modules; its search and vector commands are built in"),
    ("maxmemory-eviction-tenacity", [], "10", Check::Int(0, 100), "each write evicts until memory is under the limit, without a time box"),
    ("tcp-backlog", [], "511", Check::Int(0, i32::MAX as i64), "the listening socket uses the operating system's default backlog"),
    ("tcp-keepalive", [], "300", Check::Int(0, i32::MAX as i64), "idle clients are closed by `timeout`; TCP keepalive is left to the operating system"),
    ("oom-score-adj", [], "no", Check::OneOf(&["no", "yes", "relative", "absolute"]), "Pion does not change its OOM score"),
    ("crash-log-enabled", [], "yes", Check::YesNo, "a panic is reported by Rust's handler"),
    ("crash-memcheck-enabled", [], "yes", Check::YesNo, "a panic is reported by Rust's handler"),
    ("syslog-enabled", [], "no", Check::OneOf(&["no"]), "the log goes to `logfile`; syslog is not supported"),
}

/// The compatibility directive named `name` (canonical name).
fn row(name: &str) -> Option<&'static Compat> {
    COMPAT.iter().find(|c| c.name == name)
}

/// The current value of compatibility directive `name`.
fn value(values: &ConfigValues, name: &'static str) -> String {
    match values.compat.get(name) {
        Some(v) => v.clone(),
        None => row(name).map(|c| c.default.to_string()).unwrap_or_default(),
    }
}

/// Checks and keeps a new value of compatibility directive `name`.
fn set(values: &mut ConfigValues, name: &'static str, v: &str) -> Result<(), String> {
    let check = row(name).map_or(Check::Text, |c| c.check);
    values.compat.insert(name, check.normalise(v)?);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_normalise_like_redis() {
        assert_eq!(Check::YesNo.normalise("YES"), Ok("yes".into()));
        assert!(Check::YesNo.normalise("maybe").is_err());
        assert_eq!(Check::Memory.normalise("1mb"), Ok("1048576".into()));
        assert!(Check::Int(0, 100).normalise("101").is_err());
        assert_eq!(Check::OneOf(&["a", "b"]).normalise("B"), Ok("b".into()));
    }

    #[test]
    fn names_are_unique_and_lowercase() {
        let mut seen = std::collections::HashSet::new();
        for c in COMPAT {
            for n in std::iter::once(&c.name).chain(c.aliases) {
                assert_eq!(*n, n.to_ascii_lowercase());
                assert!(seen.insert(*n), "{n} twice");
                assert!(
                    super::super::PARAMS
                        .iter()
                        .all(|p| p.name != *n && !p.aliases.contains(n)),
                    "{n} is a real parameter"
                );
            }
            assert!(c.check.normalise(c.default).is_ok(), "{}", c.name);
        }
        assert_eq!(COMPAT.len(), COMPAT_PARAMS.len());
    }

    #[test]
    fn values_are_checked_kept_and_defaulted() {
        let mut v = ConfigValues::default();
        let p = COMPAT_PARAMS
            .iter()
            .find(|p| p.name == "rdbchecksum")
            .expect("row");
        assert_eq!((p.get)(&v), "yes");
        let set = p.set.expect("settable");
        assert!(set(&mut v, "maybe").is_err());
        set(&mut v, "NO").expect("valid");
        assert_eq!((p.get)(&v), "no");
    }
}
