//! A storage that fails on purpose: wraps another and fails the writes and fsyncs a
//! [`FaultPlan`] names (the Nth write with a chosen errno, a write torn after k bytes,
//! every write and fsync while the disk is "full", everything once the machine has
//! "stopped"), so tests can check what the engine does when the disk refuses.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::{DirLock, LockError, Open, Storage, StoredFile};

/// One planned failure of a write or an fsync.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Planned {
    /// The `nth` write fails with `errno`, after writing its first `keep` bytes.
    Write { nth: u64, keep: usize, errno: i32 },
    /// The `nth` fsync (of a file or a directory) fails with `errno`.
    Sync { nth: u64, errno: i32 },
}

/// Which failures to inject, and counters of the operations seen.
pub struct FaultPlan {
    planned: Mutex<Vec<Planned>>,
    /// Only files whose path contains this fail, by plan or while the disk is full
    /// (empty: any).
    only: Mutex<String>,
    writes: AtomicU64,
    syncs: AtomicU64,
    /// Every write and fsync fails with this errno while it is set (0: none).
    all: AtomicI32,
    /// Every operation fails from now on: the machine stopped.
    stopped: AtomicBool,
    /// Changes to the disk still allowed before the machine stops (negative: no
    /// stop planned).
    stop_in: std::sync::atomic::AtomicI64,
    injected: AtomicU64,
}

impl FaultPlan {
    /// Fails the `nth` write from now (1: the next one) with `errno`.
    pub fn fail_write(&self, nth: u64, errno: i32) {
        self.tear_write(nth, 0, errno);
    }

    /// Writes only the first `keep` bytes of the `nth` write from now, then fails it
    /// with `errno`.
    pub fn tear_write(&self, nth: u64, keep: usize, errno: i32) {
        let nth = self.writes.load(Ordering::SeqCst) + nth;
        self.planned
            .lock()
            .push(Planned::Write { nth, keep, errno });
    }

    /// Fails the `nth` fsync from now (of a file or a directory) with `errno`.
    pub fn fail_sync(&self, nth: u64, errno: i32) {
        let nth = self.syncs.load(Ordering::SeqCst) + nth;
        self.planned.lock().push(Planned::Sync { nth, errno });
    }

    /// Planned failures, and a full disk, hit only files whose path contains `part`
    /// (empty: any file).
    pub fn only_paths_containing(&self, part: &str) {
        *self.only.lock() = part.to_string();
    }

    /// Makes every write and fsync fail with `errno` (a full or failing disk), or
    /// stops doing so with `None`.
    pub fn fail_all(&self, errno: Option<i32>) {
        self.all.store(errno.unwrap_or(0), Ordering::SeqCst);
    }

    /// Fails every operation from now on, as a machine that lost power does nothing
    /// more (a simulated power cut then decides what the disk kept).
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
    }

    /// Stops the machine after `n` more changes to the disk (writes, fsyncs,
    /// truncations, creations, renames, removals): a power cut in the middle of
    /// whatever runs then.
    pub fn stop_after(&self, n: u64) {
        self.stop_in.store(n as i64, Ordering::SeqCst);
    }

    /// Whether the machine has stopped.
    pub fn is_stopped(&self) -> bool {
        self.stopped.load(Ordering::SeqCst)
    }

    /// Undoes [`stop`](Self::stop), [`fail_all`](Self::fail_all) and the planned
    /// failures (the machine restarts).
    pub fn clear(&self) {
        self.stop_in.store(-1, Ordering::SeqCst);
        self.stopped.store(false, Ordering::SeqCst);
        self.all.store(0, Ordering::SeqCst);
        self.planned.lock().clear();
    }

    /// Writes seen so far.
    pub fn writes(&self) -> u64 {
        self.writes.load(Ordering::SeqCst)
    }

    /// Fsyncs seen so far.
    pub fn syncs(&self) -> u64 {
        self.syncs.load(Ordering::SeqCst)
    }

    /// Failures injected so far.
    pub fn injected(&self) -> u64 {
        self.injected.load(Ordering::SeqCst)
    }

    /// Counts a change to the disk against a planned stop.
    fn change(&self) -> io::Result<()> {
        if self.stop_in.load(Ordering::SeqCst) >= 0
            && self.stop_in.fetch_sub(1, Ordering::SeqCst) <= 0
        {
            self.stop_in.store(-1, Ordering::SeqCst);
            self.stopped.store(true, Ordering::SeqCst);
        }
        self.stopped()
    }

    fn stopped(&self) -> io::Result<()> {
        if self.stopped.load(Ordering::SeqCst) {
            self.injected.fetch_add(1, Ordering::SeqCst);
            return Err(io::Error::from_raw_os_error(libc_eio()));
        }
        Ok(())
    }

    fn all(&self, path: &Path) -> io::Result<()> {
        self.change()?;
        match self.all.load(Ordering::SeqCst) {
            0 => Ok(()),
            _ if !self.applies_to(path) => Ok(()),
            errno => {
                self.injected.fetch_add(1, Ordering::SeqCst);
                Err(io::Error::from_raw_os_error(errno))
            }
        }
    }

    fn applies_to(&self, path: &Path) -> bool {
        let only = self.only.lock();
        only.is_empty() || path.to_string_lossy().contains(only.as_str())
    }

    /// Counts a write to `path`; what to keep of it and the error, when it fails.
    fn on_write(&self, path: &Path) -> Option<(usize, io::Error)> {
        if let Err(e) = self.all(path) {
            return Some((0, e));
        }
        let n = self.writes.fetch_add(1, Ordering::SeqCst) + 1;
        if !self.applies_to(path) {
            return None;
        }
        let mut planned = self.planned.lock();
        let at = planned
            .iter()
            .position(|p| matches!(p, Planned::Write { nth, .. } if *nth <= n))?;
        let Planned::Write { keep, errno, .. } = planned.remove(at) else {
            return None;
        };
        self.injected.fetch_add(1, Ordering::SeqCst);
        Some((keep, io::Error::from_raw_os_error(errno)))
    }

    /// Counts an fsync of `path`; the error, when it fails.
    fn on_sync(&self, path: &Path) -> io::Result<()> {
        self.all(path)?;
        let n = self.syncs.fetch_add(1, Ordering::SeqCst) + 1;
        if !self.applies_to(path) {
            return Ok(());
        }
        let mut planned = self.planned.lock();
        let Some(at) = planned
            .iter()
            .position(|p| matches!(p, Planned::Sync { nth, .. } if *nth <= n))
        else {
            return Ok(());
        };
        let Planned::Sync { errno, .. } = planned.remove(at) else {
            return Ok(());
        };
        self.injected.fetch_add(1, Ordering::SeqCst);
        Err(io::Error::from_raw_os_error(errno))
    }
}

/// `EIO`, the error of a disk that is gone.
const fn libc_eio() -> i32 {
    5
}

/// A storage whose writes and fsyncs fail as its [`FaultPlan`] says.
pub struct Faulty {
    inner: Arc<dyn Storage>,
    plan: Arc<FaultPlan>,
}

impl Default for FaultPlan {
    fn default() -> FaultPlan {
        FaultPlan {
            planned: Mutex::default(),
            only: Mutex::default(),
            writes: AtomicU64::new(0),
            syncs: AtomicU64::new(0),
            all: AtomicI32::new(0),
            stopped: AtomicBool::new(false),
            stop_in: std::sync::atomic::AtomicI64::new(-1),
            injected: AtomicU64::new(0),
        }
    }
}

impl Faulty {
    /// Wraps `inner`; failures are injected through the returned plan.
    pub fn wrap(inner: Arc<dyn Storage>) -> (Arc<Faulty>, Arc<FaultPlan>) {
        let plan = Arc::new(FaultPlan::default());
        let faulty = Arc::new(Faulty {
            inner,
            plan: Arc::clone(&plan),
        });
        (faulty, plan)
    }
}

struct FaultyFile {
    inner: Arc<dyn StoredFile>,
    path: PathBuf,
    plan: Arc<FaultPlan>,
}

impl StoredFile for FaultyFile {
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        if let Some((keep, e)) = self.plan.on_write(&self.path) {
            if keep > 0 {
                self.inner.write_at(&buf[..keep.min(buf.len())], offset)?;
            }
            return Err(e);
        }
        self.inner.write_at(buf, offset)
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.plan.stopped()?;
        self.inner.read_at(buf, offset)
    }

    fn sync(&self) -> io::Result<()> {
        self.plan.on_sync(&self.path)?;
        self.inner.sync()
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.plan.all(&self.path)?;
        self.inner.set_len(len)
    }

    fn len(&self) -> io::Result<u64> {
        self.plan.stopped()?;
        self.inner.len()
    }

    fn map(&self, len: u64) -> Option<super::FileMap> {
        self.inner.map(len)
    }
}

impl Storage for Faulty {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        self.plan.stopped()?;
        self.inner.create_dir_all(dir)
    }

    fn open(&self, path: &Path, how: Open) -> io::Result<Arc<dyn StoredFile>> {
        if how == Open::Create {
            self.plan.all(path)?;
        } else {
            self.plan.stopped()?;
        }
        Ok(Arc::new(FaultyFile {
            inner: self.inner.open(path, how)?,
            path: path.to_path_buf(),
            plan: Arc::clone(&self.plan),
        }))
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.plan.stopped()?;
        self.inner.read(path)
    }

    fn exists(&self, path: &Path) -> bool {
        self.inner.exists(path)
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        self.plan.stopped()?;
        self.inner.list(dir)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        self.plan.all(to)?;
        self.inner.rename(from, to)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        self.plan.change()?;
        self.inner.remove(path)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        self.plan.on_sync(dir)?;
        self.inner.sync_dir(dir)
    }

    fn lock_dir(&self, dir: &Path) -> Result<DirLock, LockError> {
        self.inner.lock_dir(dir)
    }

    fn is_local(&self) -> bool {
        self.inner.is_local()
    }
}
