//! The slow log: commands that ran at least `slowlog-log-slower-than` microseconds,
//! newest first, at most `slowlog-max-len` of them (`SLOWLOG GET`). Arguments are
//! truncated as Redis truncates them, so one huge command cannot fill memory.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering};

use parking_lot::Mutex;

/// Arguments kept per entry; the last kept one says how many more there were.
pub const MAX_ARGC: usize = 32;
/// Bytes kept per argument; the rest is replaced by a note of how many there were.
pub const MAX_ARG_LEN: usize = 128;

/// One logged command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlowEntry {
    /// Increasing id (not reset by `SLOWLOG RESET`).
    pub id: u64,
    /// Unix seconds when it was logged.
    pub timestamp: i64,
    /// How long it ran, in microseconds.
    pub duration_us: u64,
    /// Its arguments, truncated.
    pub args: Vec<Vec<u8>>,
    /// The client's address.
    pub addr: String,
    /// The client's name.
    pub name: Vec<u8>,
}

/// The slow log of an engine.
#[derive(Debug)]
pub struct SlowLog {
    /// `slowlog-log-slower-than` in µs; negative: off.
    threshold_us: AtomicI64,
    max_len: AtomicUsize,
    next_id: AtomicU64,
    entries: Mutex<VecDeque<SlowEntry>>,
}

impl Default for SlowLog {
    fn default() -> Self {
        SlowLog {
            threshold_us: AtomicI64::new(10_000),
            max_len: AtomicUsize::new(128),
            next_id: AtomicU64::new(0),
            entries: Mutex::new(VecDeque::new()),
        }
    }
}

/// The arguments as the slow log keeps them.
pub fn truncate_args(argv: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let kept = argv.len().min(MAX_ARGC);
    let mut out = Vec::with_capacity(kept);
    for (i, a) in argv.iter().take(kept).enumerate() {
        if i == MAX_ARGC - 1 && argv.len() > MAX_ARGC {
            out.push(format!("... ({} more arguments)", argv.len() - MAX_ARGC + 1).into_bytes());
        } else if a.len() > MAX_ARG_LEN {
            let mut s = a[..MAX_ARG_LEN].to_vec();
            s.extend_from_slice(format!("... ({} more bytes)", a.len() - MAX_ARG_LEN).as_bytes());
            out.push(s);
        } else {
            out.push(a.clone());
        }
    }
    out
}

impl SlowLog {
    /// Applies `slowlog-log-slower-than` and `slowlog-max-len`.
    pub fn configure(&self, threshold_us: i64, max_len: usize) {
        self.threshold_us.store(threshold_us, Ordering::Relaxed);
        self.max_len.store(max_len, Ordering::Relaxed);
        let mut e = self.entries.lock();
        e.truncate(max_len);
    }

    /// Whether a command that ran `duration_us` is logged.
    pub fn wants(&self, duration_us: u64) -> bool {
        let t = self.threshold_us.load(Ordering::Relaxed);
        t >= 0 && duration_us >= t as u64
    }

    /// Logs a command (the caller checked [`wants`](Self::wants)).
    pub fn push(&self, argv: &[Vec<u8>], duration_us: u64, addr: String, name: Vec<u8>) {
        let entry = SlowEntry {
            id: self.next_id.fetch_add(1, Ordering::Relaxed),
            timestamp: crate::util::clock::system_unix_us() / 1_000_000,
            duration_us,
            args: truncate_args(argv),
            addr,
            name,
        };
        let max = self.max_len.load(Ordering::Relaxed);
        let mut e = self.entries.lock();
        e.push_front(entry);
        e.truncate(max);
    }

    /// The newest `count` entries (all when `None`), newest first.
    pub fn get(&self, count: Option<usize>) -> Vec<SlowEntry> {
        let e = self.entries.lock();
        e.iter()
            .take(count.unwrap_or(usize::MAX))
            .cloned()
            .collect()
    }

    /// Number of entries.
    pub fn len(&self) -> usize {
        self.entries.lock().len()
    }

    /// Whether the log is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Empties the log (ids go on increasing, as in Redis).
    pub fn reset(&self) {
        self.entries.lock().clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncates_like_redis() {
        let argv: Vec<Vec<u8>> = (0..40).map(|i| format!("a{i}").into_bytes()).collect();
        let t = truncate_args(&argv);
        assert_eq!(t.len(), 32);
        assert_eq!(t[30], b"a30");
        assert_eq!(t[31], b"... (9 more arguments)");
        let long = vec![vec![b'x'; 130]];
        let t = truncate_args(&long);
        assert_eq!(t[0].len(), 128 + b"... (2 more bytes)".len());
        assert!(t[0].ends_with(b"... (2 more bytes)"));
    }

    #[test]
    fn keeps_the_newest_up_to_max_len() {
        let log = SlowLog::default();
        log.configure(0, 2);
        assert!(log.wants(0));
        for i in 0..3 {
            log.push(
                &[format!("c{i}").into_bytes()],
                5,
                String::new(),
                Vec::new(),
            );
        }
        let got = log.get(None);
        assert_eq!(got.len(), 2);
        assert_eq!((got[0].id, got[1].id), (2, 1));
        log.configure(-1, 2);
        assert!(!log.wants(1_000_000));
        log.reset();
        assert!(log.is_empty());
    }
}
