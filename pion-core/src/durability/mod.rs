//! Durability: the write-ahead log, snapshots and recovery that make an acknowledged
//! write survive a crash.
//!
//! Every write command appends a record of its effect to the log while it still holds
//! its keys' locks, and its reply leaves only once the record is in the segment file
//! (and fsynced, under `appendfsync always`). Snapshots, taken in the background
//! without stopping the server (see [`crate::keyspace`]'s cut), bound the log that a
//! restart must replay: recovery loads the newest snapshot and replays the records
//! after its sequence number. The data directory is locked, so a second process can
//! never write to the same files.

pub mod health;
pub mod record;
pub(crate) mod segment;
pub mod snapshot;
pub(crate) mod sync_signal;
pub mod turn;
pub mod wal;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;

use crate::storage::{DirLock, LockError, Storage};

pub use health::{DiskFailure, DiskHealth};
pub use turn::{SnapshotKind, SnapshotTurn, Waiting};
pub use wal::{FsyncPolicy, Wal};

/// What to do when the log is damaged before its last record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecoverMode {
    /// Refuse to start, naming the file and offset (the default).
    Strict,
    /// Drop everything from the damaged record on, with a warning saying how much.
    Truncate,
}

/// How an engine keeps its data.
#[derive(Clone)]
pub struct DurabilityOptions {
    /// The data directory (created if missing).
    pub dir: PathBuf,
    /// When the log is fsynced.
    pub fsync: FsyncPolicy,
    /// Size at which a log segment file is closed and a new one started.
    pub segment_bytes: u64,
    /// Take a snapshot once this many log bytes were written since the last one
    /// (0: only on `SAVE`/`BGSAVE`).
    pub snapshot_after_bytes: u64,
    /// What recovery does with a damaged log.
    pub recover: RecoverMode,
    /// Size at which a prompt-cache block file is closed and a new one started.
    pub block_file_bytes: u64,
    /// Where the files are: the local file system, unless a test gives a simulated
    /// or fault-injecting storage.
    pub storage: Arc<dyn Storage>,
}

impl std::fmt::Debug for DurabilityOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DurabilityOptions")
            .field("dir", &self.dir)
            .field("fsync", &self.fsync)
            .field("segment_bytes", &self.segment_bytes)
            .field("snapshot_after_bytes", &self.snapshot_after_bytes)
            .field("recover", &self.recover)
            .field("block_file_bytes", &self.block_file_bytes)
            .field("local", &self.storage.is_local())
            .finish()
    }
}

impl DurabilityOptions {
    /// The defaults (`everysec`, 64 MiB segments, a snapshot every 256 MiB of log,
    /// strict recovery) for a data directory.
    pub fn new(dir: impl Into<PathBuf>) -> DurabilityOptions {
        DurabilityOptions {
            dir: dir.into(),
            fsync: FsyncPolicy::EverySec,
            segment_bytes: 64 << 20,
            snapshot_after_bytes: 256 << 20,
            recover: RecoverMode::Strict,
            block_file_bytes: 256 << 20,
            storage: crate::storage::local(),
        }
    }
}

/// Why a data directory could not be opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OpenError {
    /// Another process holds the directory's lock.
    InUse(String),
    /// A snapshot or the log is damaged: which file, where, and what.
    Damaged(RecoveryError),
    /// The directory or a file in it could not be read or written.
    Io(String),
}

impl std::fmt::Display for OpenError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OpenError::InUse(s) | OpenError::Io(s) => f.write_str(s),
            OpenError::Damaged(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for OpenError {}

/// What recovery found wrong in a data directory, with the file and the place; its
/// text (the one place it is made) tells the operator what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecoveryError {
    /// A snapshot that does not decode (the decoder's reason).
    SnapshotDamaged {
        /// The snapshot file.
        file: PathBuf,
        /// What is wrong in it, and where.
        reason: crate::util::codec::DecodeError,
    },
    /// A snapshot with more databases than the server has.
    TooManyDatabases {
        /// The snapshot file.
        file: PathBuf,
        /// Databases it holds.
        found: usize,
        /// Databases the server has.
        configured: usize,
    },
    /// Records `from..=to` are in no segment.
    MissingRecords {
        /// First record missing.
        from: u64,
        /// Last record missing.
        to: u64,
        /// The segment found after the gap.
        file: PathBuf,
        /// Where in it the next record was found (`None`: the segment starts later).
        offset: Option<u64>,
    },
    /// A segment whose header names another first record than its file name.
    MisnamedSegment {
        /// The segment file.
        file: PathBuf,
        /// The first record its name says.
        named: u64,
        /// The first record its header says.
        header: u64,
    },
    /// A record that could not be applied (malformed, or naming a database the server
    /// does not have).
    BadRecord {
        /// The segment file.
        file: PathBuf,
        /// The record's offset in it.
        offset: u64,
        /// Why.
        reason: crate::util::codec::DecodeError,
    },
    /// A torn or corrupt record in the log; nothing after it was replayed.
    LogDamaged {
        /// The segment file.
        file: PathBuf,
        /// Where the damage starts.
        offset: u64,
        /// What the scanner found (`None`: an in-place reload, which never truncates).
        reason: Option<&'static str>,
        /// How to start anyway (`--wal-recover truncate` and what it would drop).
        remedy: Option<String>,
    },
}

impl RecoveryError {
    /// The file the damage is in.
    pub fn file(&self) -> &Path {
        match self {
            RecoveryError::SnapshotDamaged { file, .. }
            | RecoveryError::TooManyDatabases { file, .. }
            | RecoveryError::MissingRecords { file, .. }
            | RecoveryError::MisnamedSegment { file, .. }
            | RecoveryError::BadRecord { file, .. }
            | RecoveryError::LogDamaged { file, .. } => file,
        }
    }

    /// The byte offset of the damage in [`file`](Self::file), when one is known.
    pub fn offset(&self) -> Option<u64> {
        match self {
            RecoveryError::MissingRecords { offset, .. } => *offset,
            RecoveryError::BadRecord { offset, .. } | RecoveryError::LogDamaged { offset, .. } => {
                Some(*offset)
            }
            _ => None,
        }
    }
}

impl std::fmt::Display for RecoveryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RecoveryError::SnapshotDamaged { file, reason } => write!(
                f,
                "snapshot {} is damaged: {reason}; move it away to start from the log alone \
                 (which holds only what came after it)",
                file.display()
            ),
            RecoveryError::TooManyDatabases {
                file,
                found,
                configured,
            } => write!(
                f,
                "snapshot {} holds {found} databases but the server has {configured}; start \
                 with --databases {found}",
                file.display()
            ),
            RecoveryError::MissingRecords {
                from,
                to,
                file,
                offset: None,
            } => write!(
                f,
                "the log is missing records {from} to {to}: {} starts at {}",
                file.display(),
                to + 1
            ),
            RecoveryError::MissingRecords {
                from,
                to,
                file,
                offset: Some(offset),
            } => write!(
                f,
                "the log is missing records {from} to {to} (found at {} offset {offset})",
                file.display()
            ),
            RecoveryError::MisnamedSegment {
                file,
                named,
                header,
            } => write!(
                f,
                "{} is named for record {named} but its header says {header}",
                file.display()
            ),
            RecoveryError::BadRecord {
                file,
                offset,
                reason,
            } => write!(f, "{} offset {offset}: {reason}", file.display()),
            RecoveryError::LogDamaged {
                file,
                offset,
                reason: None,
                ..
            } => write!(
                f,
                "write-ahead log {} is damaged at offset {offset}",
                file.display()
            ),
            RecoveryError::LogDamaged {
                file,
                offset,
                reason: Some(reason),
                remedy,
            } => {
                write!(
                    f,
                    "write-ahead log {} is damaged at offset {offset} ({reason}); nothing \
                     after it was replayed.",
                    file.display()
                )?;
                match remedy {
                    Some(remedy) => write!(f, " To start anyway, {remedy}"),
                    None => Ok(()),
                }
            }
        }
    }
}

/// Snapshot bookkeeping for `INFO persistence` and `LASTSAVE`.
#[derive(Debug, Default)]
pub struct SnapshotStats {
    /// Which snapshot runs, and which waits for it.
    pub turn: SnapshotTurn,
    /// When the running snapshot started (Unix ms).
    pub started_ms: AtomicI64,
    /// Whether the last snapshot succeeded (true before the first).
    pub last_failed: AtomicBool,
    /// Unix seconds of the last successful snapshot (or of start-up).
    pub last_save_s: AtomicI64,
    /// Unix ms of the last failed attempt (automatic snapshots back off after one).
    pub last_failure_ms: AtomicI64,
    /// Duration of the last snapshot, ms.
    pub last_duration_ms: AtomicU64,
    /// How long the last cut held every shard, µs.
    pub last_pause_us: AtomicU64,
    /// Keys in the last snapshot.
    pub last_keys: AtomicU64,
    /// Size of the last snapshot file.
    pub last_bytes: AtomicU64,
    /// Log sequence number the last snapshot covers.
    pub last_seq: AtomicU64,
    /// Snapshots taken since start.
    pub count: AtomicU64,
    /// Log bytes written when the last snapshot was cut (the automatic trigger counts
    /// from here).
    pub wal_bytes_at_cut: AtomicU64,
}

/// What recovery found and did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    /// Sequence number the loaded snapshot covers (0: none).
    pub snapshot_seq: u64,
    /// Keys loaded from the snapshot.
    pub snapshot_keys: u64,
    /// Log records replayed.
    pub records: u64,
    /// Commands in them.
    pub commands: u64,
    /// Replayed commands that answered with an error (as they did when they ran).
    pub command_errors: u64,
    /// Bytes dropped from the log (torn tail, or damage under `--wal-recover truncate`).
    pub truncated_bytes: u64,
    /// Sequence number of the last record recovered.
    pub last_seq: u64,
    /// Wall time recovery took, ms.
    pub elapsed_ms: u64,
}

/// The durable state of one engine: its locked data directory, its log and its
/// snapshot bookkeeping.
pub struct Durability {
    dir: PathBuf,
    storage: Arc<dyn Storage>,
    wal: Wal,
    /// Held for the engine's lifetime: the operating system releases the lock when
    /// the process ends, however it ends.
    _lock: DirLock,
    snapshot_after_bytes: AtomicU64,
    snapshots: SnapshotStats,
    recovery: RecoveryReport,
}

impl Durability {
    /// A durable state from its parts, once recovery ran and the log started
    /// (see `engine::persistence::open`).
    pub(crate) fn new(
        dir: PathBuf,
        storage: Arc<dyn Storage>,
        wal: Wal,
        lock: DirLock,
        snapshot_after_bytes: u64,
        snapshots: SnapshotStats,
        recovery: RecoveryReport,
    ) -> Durability {
        Durability {
            dir,
            storage,
            wal,
            _lock: lock,
            snapshot_after_bytes: AtomicU64::new(snapshot_after_bytes),
            snapshots,
            recovery,
        }
    }

    /// The data directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where the files are.
    pub fn storage(&self) -> &Arc<dyn Storage> {
        &self.storage
    }

    /// Whether the disk is trusted (see [`DiskHealth`]).
    pub fn health(&self) -> &Arc<DiskHealth> {
        self.wal.health()
    }

    /// The log.
    pub fn wal(&self) -> &Wal {
        &self.wal
    }

    /// Snapshot counters.
    pub fn snapshots(&self) -> &SnapshotStats {
        &self.snapshots
    }

    /// What start-up recovered.
    pub fn recovery(&self) -> &RecoveryReport {
        &self.recovery
    }

    /// Log bytes after which a snapshot is taken automatically (0: never).
    pub fn snapshot_after_bytes(&self) -> u64 {
        self.snapshot_after_bytes.load(Ordering::Relaxed)
    }

    /// Whether enough log was written since the last snapshot to take another.
    pub(crate) fn snapshot_due(&self, now_ms: i64) -> bool {
        let limit = self.snapshot_after_bytes();
        let s = &self.snapshots;
        let since = self
            .wal
            .stats()
            .bytes_written
            .load(Ordering::Relaxed)
            .saturating_sub(s.wal_bytes_at_cut.load(Ordering::Relaxed));
        // After a failure, wait 5 s before trying again (as Redis does).
        let backoff = s.last_failed.load(Ordering::Relaxed)
            && now_ms - s.last_failure_ms.load(Ordering::Relaxed) < 5000;
        limit > 0 && since >= limit && s.turn.running().is_none() && !backoff
    }

    /// Whether a point of the `save` schedule is reached: at least `changes` writes
    /// since the last snapshot, which is more than `seconds` old (Redis's rule).
    pub(crate) fn save_point_due(&self, schedule: &[(u64, u64)], now_ms: i64) -> bool {
        let s = &self.snapshots;
        if schedule.is_empty() || s.turn.running().is_some() {
            return false;
        }
        if s.last_failed.load(Ordering::Relaxed)
            && now_ms - s.last_failure_ms.load(Ordering::Relaxed) < 5000
        {
            return false;
        }
        let changes = self
            .wal
            .appended_seq()
            .saturating_sub(s.last_seq.load(Ordering::Relaxed));
        let age = (now_ms / 1000 - s.last_save_s.load(Ordering::Relaxed)).max(0) as u64;
        schedule
            .iter()
            .any(|&(seconds, needed)| changes >= needed && age > seconds)
    }

    /// The `INFO persistence` fields.
    pub fn info_fields(&self, now_ms: i64) -> Vec<(&'static str, String)> {
        let w = &self.wal;
        let st = w.stats();
        let s = &self.snapshots;
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed).to_string();
        let running = s.turn.running();
        let in_progress = |kind| u8::from(running == Some(kind)).to_string();
        let current_secs = |kind| {
            if running == Some(kind) {
                ((now_ms - s.started_ms.load(Ordering::Relaxed)) / 1000).to_string()
            } else {
                "-1".to_string()
            }
        };
        let failure = w.failure();
        let since_snapshot = w
            .appended_seq()
            .saturating_sub(s.last_seq.load(Ordering::Relaxed));
        let r = &self.recovery;
        vec![
            ("rdb_changes_since_last_save", since_snapshot.to_string()),
            ("rdb_bgsave_in_progress", in_progress(SnapshotKind::Save)),
            (
                "rdb_last_save_time",
                s.last_save_s.load(Ordering::Relaxed).to_string(),
            ),
            (
                "rdb_last_bgsave_status",
                if s.last_failed.load(Ordering::Relaxed) {
                    "err"
                } else {
                    "ok"
                }
                .into(),
            ),
            (
                "rdb_last_bgsave_time_sec",
                if s.count.load(Ordering::Relaxed) == 0 {
                    "-1".to_string()
                } else {
                    (s.last_duration_ms.load(Ordering::Relaxed) / 1000).to_string()
                },
            ),
            (
                "rdb_current_bgsave_time_sec",
                current_secs(SnapshotKind::Save),
            ),
            ("aof_enabled", "1".into()),
            // Pion's rewrite is a snapshot too: `BGREWRITEAOF`, or the log's growth.
            (
                "aof_rewrite_in_progress",
                in_progress(SnapshotKind::Rewrite),
            ),
            (
                "aof_rewrite_scheduled",
                u8::from(s.turn.scheduled(SnapshotKind::Rewrite)).to_string(),
            ),
            (
                "aof_current_rewrite_time_sec",
                current_secs(SnapshotKind::Rewrite),
            ),
            (
                "aof_last_write_status",
                if failure.is_some() { "err" } else { "ok" }.into(),
            ),
            ("wal_enabled", "1".into()),
            ("wal_dir", self.dir.display().to_string()),
            ("wal_fsync_policy", w.policy().name().into()),
            (
                "wal_status",
                if failure.is_some() { "failed" } else { "ok" }.into(),
            ),
            (
                "wal_last_error",
                failure.map(|f| f.to_string()).unwrap_or_default(),
            ),
            ("wal_bytes", load(&st.bytes_on_disk)),
            ("wal_bytes_written", load(&st.bytes_written)),
            ("wal_writes", load(&st.writes)),
            ("wal_last_seq", w.appended_seq().to_string()),
            ("wal_written_seq", w.written_seq().to_string()),
            ("wal_synced_seq", w.synced_seq().to_string()),
            ("wal_fsyncs", load(&st.fsyncs)),
            ("wal_last_fsync_ms", load(&st.last_fsync_ms)),
            ("wal_errors", w.health().errors().to_string()),
            (
                "snapshot_auto_after_bytes",
                self.snapshot_after_bytes().to_string(),
            ),
            ("snapshot_count", load(&s.count)),
            ("snapshot_last_seq", load(&s.last_seq)),
            ("snapshot_last_keys", load(&s.last_keys)),
            ("snapshot_last_bytes", load(&s.last_bytes)),
            ("snapshot_last_pause_us", load(&s.last_pause_us)),
            ("snapshot_last_duration_ms", load(&s.last_duration_ms)),
            ("recovery_ms", r.elapsed_ms.to_string()),
            ("recovery_snapshot_keys", r.snapshot_keys.to_string()),
            ("recovery_wal_records", r.records.to_string()),
            ("recovery_truncated_bytes", r.truncated_bytes.to_string()),
        ]
        .into_iter()
        .chain(w.health().info_fields())
        .collect()
    }
}

/// Locks a data directory for this process (see [`Storage::lock_dir`]).
pub(crate) fn lock_dir(storage: &dyn Storage, dir: &Path) -> Result<DirLock, OpenError> {
    let path = dir.join("LOCK");
    storage.lock_dir(dir).map_err(|e| match e {
        LockError::InUse(holder) => OpenError::InUse(format!(
            "data directory {} is in use by another process (pid {holder}; lock file {})",
            dir.display(),
            path.display()
        )),
        LockError::Io(e) => OpenError::Io(format!("cannot open {}: {e}", path.display())),
    })
}

impl Drop for Durability {
    fn drop(&mut self) {
        // The last handle is gone: make what was written durable before the lock goes.
        if let Err(e) = self.wal.sync_all() {
            crate::log_warning!("could not flush the write-ahead log on close: {e}");
        }
    }
}
