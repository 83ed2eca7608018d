//! Whether the disk can be trusted. After any failed write or fsync of a log segment
//! or a block file, that file is never trusted again: on Linux a failed fsync may
//! drop the dirty pages it could not write, and the next fsync of the same file then
//! reports success for bytes that are gone. So a failure is never forgotten by itself
//! (a later write or fsync that succeeds proves nothing): writes are refused until the
//! engine has *healed* — written a complete snapshot of memory, fsynced it and its
//! directory, and started a fresh log segment (see `engine::persistence::heal`). Memory holds
//! everything, so nothing acknowledged is lost.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// The first wait before healing is tried again after a failed attempt; it doubles up
/// to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
/// The longest wait between two healing attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// A write or fsync the disk refused, and on which file: why it is not trusted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DiskFailure {
    /// What failed (`write failed`, `fsync failed`, …).
    pub what: &'static str,
    /// The file's name.
    pub file: String,
    /// The operating system's error.
    pub error: String,
}

impl DiskFailure {
    /// A failure of `what` on `file`.
    pub fn new(what: &'static str, file: &Path, e: &std::io::Error) -> DiskFailure {
        DiskFailure {
            what,
            file: file.file_name().map_or_else(
                || file.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            ),
            error: e.to_string(),
        }
    }
}

impl std::fmt::Display for DiskFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {} ({})", self.what, self.error, self.file)
    }
}

impl std::error::Error for DiskFailure {}

#[derive(Default)]
struct Failure {
    /// The first failure since the last heal.
    first: Option<DiskFailure>,
    /// Unix ms of the first failure since the last heal.
    since_ms: i64,
    /// Healing attempts since that failure.
    attempts: u64,
    /// Why the last attempt failed.
    last_attempt_error: String,
    /// When the next attempt may start.
    next_attempt: Option<Instant>,
}

/// The disk's state, shared by the log and the block files.
#[derive(Default)]
pub struct DiskHealth {
    failed: AtomicBool,
    failure: Mutex<Failure>,
    /// Failed writes and fsyncs, ever.
    errors: AtomicU64,
    /// Heals that succeeded.
    heals: AtomicU64,
}

impl DiskHealth {
    /// Records a failed write or fsync of `file`, and returns it. The first failure
    /// since the last heal is logged.
    pub fn fail(&self, what: &'static str, file: &Path, e: &std::io::Error) -> DiskFailure {
        let failure = DiskFailure::new(what, file, e);
        self.errors.fetch_add(1, Ordering::Relaxed);
        let mut f = self.failure.lock();
        if !self.failed.swap(true, Ordering::SeqCst) {
            crate::log_warning!(
                "{failure}; the file is not trusted again: writes are refused until a \
                 snapshot of memory and a fresh log segment are on disk"
            );
            *f = Failure {
                first: Some(failure.clone()),
                since_ms: crate::util::clock::system_unix_ms(),
                attempts: 0,
                last_attempt_error: String::new(),
                next_attempt: Some(Instant::now()),
            };
        }
        failure
    }

    /// Whether the disk failed and has not been healed.
    pub fn is_failed(&self) -> bool {
        self.failed.load(Ordering::SeqCst)
    }

    /// The first failure since the last heal, while it lasts.
    pub fn failure(&self) -> Option<DiskFailure> {
        if self.is_failed() {
            self.failure.lock().first.clone()
        } else {
            None
        }
    }

    /// Whether a healing attempt is due now.
    pub fn heal_due(&self) -> bool {
        self.is_failed()
            && self
                .failure
                .lock()
                .next_attempt
                .is_none_or(|at| Instant::now() >= at)
    }

    /// A healing attempt failed: the next one waits longer.
    pub fn attempt_failed(&self, error: &str) {
        let mut f = self.failure.lock();
        f.attempts += 1;
        let shift = f.attempts.min(16) as u32 - 1;
        let wait = FIRST_BACKOFF
            .saturating_mul(1u32 << shift.min(10))
            .min(MAX_BACKOFF);
        f.next_attempt = Some(Instant::now() + wait);
        if f.last_attempt_error != error {
            crate::log_warning!(
                "healing the data directory failed ({error}); writes stay refused, trying \
                 again in {} ms",
                wait.as_millis()
            );
        }
        f.last_attempt_error = error.to_string();
    }

    /// Healing succeeded: writes are accepted again.
    pub fn healed(&self) {
        let f = std::mem::take(&mut *self.failure.lock());
        self.failed.store(false, Ordering::SeqCst);
        self.heals.fetch_add(1, Ordering::Relaxed);
        crate::log_notice!(
            "data directory healed after {} attempt(s): a snapshot of memory and a fresh \
             log segment are on disk; writes accepted",
            f.attempts + 1
        );
    }

    /// Failed writes and fsyncs, ever.
    pub fn errors(&self) -> u64 {
        self.errors.load(Ordering::Relaxed)
    }

    /// The `INFO persistence` fields of the disk's state.
    pub fn info_fields(&self) -> Vec<(&'static str, String)> {
        let f = self.failure.lock();
        let failed = self.is_failed();
        let next_ms = match (failed, f.next_attempt) {
            (true, Some(at)) => at.saturating_duration_since(Instant::now()).as_millis() as i64,
            _ => -1,
        };
        vec![
            (
                "disk_state",
                if failed { "failed" } else { "ok" }.to_string(),
            ),
            (
                "disk_failed_since",
                if failed { f.since_ms / 1000 } else { -1 }.to_string(),
            ),
            ("disk_heal_attempts", f.attempts.to_string()),
            ("disk_heal_last_error", f.last_attempt_error.clone()),
            ("disk_heal_next_attempt_ms", next_ms.to_string()),
            ("disk_heals", self.heals.load(Ordering::Relaxed).to_string()),
        ]
    }
}
