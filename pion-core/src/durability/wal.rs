//! The log writer. Commands append records to an in-memory buffer while they still
//! hold their shard locks (so the log order is the order conflicting commands ran in);
//! before a reply leaves, its record is written to the current segment file — and,
//! under `appendfsync always`, fsynced. Writers share that work: whoever takes the
//! file lock writes (and syncs) everything appended so far, the others find their
//! records already done. That is group commit: one `write` and at most one `fsync` per
//! batch, however many threads and clients contributed to it.
//!
//! Records are written in place (`pwrite` at the end of the records). Under `always`,
//! segment files are zero-filled when they are created (ahead of time, by the log's
//! background thread): an fsync then flushes only data, never the file's size or
//! block map, which makes it about three times cheaper per batch than fsyncing an
//! appended file. Under the other policies, where fsyncs are rare, a segment simply
//! grows (zero-filling would double the bytes written). Recovery reads zeros after the
//! last record, like the end of the file, as the end of the log.
//!
//! A failed write or fsync (disk full, I/O error) puts the disk in the failed state
//! ([`DiskHealth`]): the segment is never written again, nothing more is acknowledged,
//! and writes are refused until the engine heals with a snapshot of memory and a fresh
//! segment ([`Wal::begin_generation`], [`Wal::start_generation`]).

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::health::{DiskFailure, DiskHealth};
use super::record::{encode_commands, frame};
pub use super::segment::{list_segments, parse_segment_name, segment_name};
use super::segment::{
    new_segment, zero_filled, Closed, Segment, Spare, FIRST_SEGMENT_CAPACITY, SPARE_MAKING_NAME,
    SPARE_NAME,
};
pub use super::sync_signal::SyncSignal;
use crate::storage::{Storage, StoredFile};
use crate::util::codec::crc;

/// When the log is flushed to stable storage.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FsyncPolicy {
    /// Before any reply to a write (group commit: one fsync per batch).
    Always,
    /// Once a second in the background; a crash of the machine may lose up to a
    /// second of writes, a crash of the process loses none.
    EverySec,
    /// Left to the operating system.
    No,
}

impl FsyncPolicy {
    /// The policy's name as `appendfsync` spells it.
    pub fn name(self) -> &'static str {
        match self {
            FsyncPolicy::Always => "always",
            FsyncPolicy::EverySec => "everysec",
            FsyncPolicy::No => "no",
        }
    }

    /// Parses `always`, `everysec` or `no` (any case).
    pub fn parse(s: &str) -> Option<FsyncPolicy> {
        match s.to_ascii_lowercase().as_str() {
            "always" => Some(FsyncPolicy::Always),
            "everysec" => Some(FsyncPolicy::EverySec),
            "no" => Some(FsyncPolicy::No),
            _ => None,
        }
    }

    fn code(self) -> u8 {
        match self {
            FsyncPolicy::Always => 0,
            FsyncPolicy::EverySec => 1,
            FsyncPolicy::No => 2,
        }
    }

    fn from_code(c: u8) -> FsyncPolicy {
        match c {
            0 => FsyncPolicy::Always,
            2 => FsyncPolicy::No,
            _ => FsyncPolicy::EverySec,
        }
    }
}

/// Counters for `INFO persistence`.
#[derive(Debug, Default)]
pub struct WalStats {
    /// Record bytes written to segment files.
    pub bytes_written: AtomicU64,
    /// `write` calls that carried records.
    pub writes: AtomicU64,
    /// fsyncs of segment files.
    pub fsyncs: AtomicU64,
    /// Unix ms of the last successful fsync.
    pub last_fsync_ms: AtomicU64,
    /// Bytes in segment files on disk (all segments).
    pub bytes_on_disk: AtomicU64,
}

/// The largest pending buffer kept once written (as Redis keeps its AOF buffer's).
const KEPT_BUFFER: usize = 1024;

struct Pending {
    buf: Vec<u8>,
    last_seq: u64,
}

/// The write-ahead log of one data directory.
pub struct Wal {
    storage: Arc<dyn Storage>,
    dir: PathBuf,
    policy: AtomicU8,
    segment_limit: u64,
    pending: Mutex<Pending>,
    /// The pending buffer's capacity (`mem_aof_buffer`, which eviction leaves out).
    buffered: AtomicU64,
    segment: Mutex<Segment>,
    spare: Mutex<Option<Spare>>,
    closed: Mutex<Vec<Closed>>,
    appended: AtomicU64,
    written: AtomicU64,
    synced: AtomicU64,
    /// Whether the disk is trusted (shared with the block files).
    health: Arc<DiskHealth>,
    stats: WalStats,
    /// Requests for the background fsync and the callbacks it runs when done.
    signal: Arc<SyncSignal>,
    /// Files the log's records point into (prompt-cache block files): fsynced before
    /// the log itself.
    companion: std::sync::OnceLock<Companion>,
}

/// fsyncs the files a log's records point into.
type Companion = Box<dyn Fn() -> io::Result<()> + Send + Sync>;

thread_local! {
    static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl Wal {
    /// Opens a log whose next record is `next_seq`, in a new segment file.
    pub fn create(
        storage: Arc<dyn Storage>,
        health: Arc<DiskHealth>,
        dir: &Path,
        next_seq: u64,
        policy: FsyncPolicy,
        segment_limit: u64,
    ) -> io::Result<Wal> {
        let _ = storage.remove(&dir.join(SPARE_NAME));
        let _ = storage.remove(&dir.join(SPARE_MAKING_NAME));
        let always = policy == FsyncPolicy::Always;
        let first_capacity = if always {
            segment_limit.min(FIRST_SEGMENT_CAPACITY)
        } else {
            segment_limit
        };
        let segment = new_segment(&*storage, dir, next_seq, None, first_capacity, always)?;
        let last = next_seq - 1;
        let on_disk = bytes_in_segments(&*storage, dir)?;
        let wal = Wal {
            storage,
            dir: dir.to_path_buf(),
            policy: AtomicU8::new(policy.code()),
            segment_limit: segment_limit.max(4096),
            pending: Mutex::new(Pending {
                buf: Vec::new(),
                last_seq: last,
            }),
            buffered: AtomicU64::new(0),
            segment: Mutex::new(segment),
            spare: Mutex::new(None),
            closed: Mutex::new(Vec::new()),
            appended: AtomicU64::new(last),
            written: AtomicU64::new(last),
            synced: AtomicU64::new(last),
            health,
            stats: WalStats::default(),
            signal: Arc::new(SyncSignal::default()),
            companion: std::sync::OnceLock::new(),
        };
        wal.stats.bytes_on_disk.store(on_disk, Ordering::Relaxed);
        Ok(wal)
    }

    /// The fsync policy.
    pub fn policy(&self) -> FsyncPolicy {
        FsyncPolicy::from_code(self.policy.load(Ordering::Relaxed))
    }

    /// Changes the fsync policy (`CONFIG SET appendfsync`).
    pub fn set_policy(&self, policy: FsyncPolicy) {
        self.policy.store(policy.code(), Ordering::Relaxed);
    }

    /// Counters.
    pub fn stats(&self) -> &WalStats {
        &self.stats
    }

    /// Bytes the log holds in memory for records not yet written to its segment
    /// file (the pending buffer's capacity, kept for the next batch).
    pub fn buffered_bytes(&self) -> u64 {
        self.buffered.load(Ordering::Relaxed)
    }

    /// Sequence number of the last appended record.
    pub fn appended_seq(&self) -> u64 {
        self.appended.load(Ordering::Acquire)
    }

    /// Sequence number up to which records are in the segment files.
    pub fn written_seq(&self) -> u64 {
        self.written.load(Ordering::Acquire)
    }

    /// Sequence number up to which records are fsynced.
    pub fn synced_seq(&self) -> u64 {
        self.synced.load(Ordering::Acquire)
    }

    /// Sequence number up to which a reply may be sent under the current policy.
    pub fn durable_seq(&self) -> u64 {
        match self.policy() {
            FsyncPolicy::Always => self.synced_seq(),
            _ => self.written_seq(),
        }
    }

    /// The error that stopped the log, until the engine heals.
    pub fn failure(&self) -> Option<DiskFailure> {
        self.health.failure()
    }

    /// The disk's state (shared with the block files).
    pub fn health(&self) -> &Arc<DiskHealth> {
        &self.health
    }

    /// The failure, as an error, when the disk is not trusted: nothing is written to
    /// it until the engine heals.
    fn refuse_if_failed(&self) -> Result<(), DiskFailure> {
        match self.health.failure() {
            Some(f) => Err(f),
            None => Ok(()),
        }
    }

    /// Appends one record of commands that ran at `time_ms`; returns its sequence
    /// number. Call while holding the locks of the keys the commands touched.
    pub fn append<'a>(
        &self,
        time_ms: i64,
        commands: impl ExactSizeIterator<Item = (usize, &'a [Vec<u8>])>,
    ) -> u64 {
        SCRATCH.with(|scratch| {
            let mut payload = scratch.borrow_mut();
            payload.clear();
            encode_commands(time_ms, commands, &mut payload);
            let payload_crc = crc(&payload);
            let mut p = self.pending.lock();
            let seq = p.last_seq + 1;
            p.last_seq = seq;
            frame(seq, &payload, payload_crc, &mut p.buf);
            self.buffered
                .store(p.buf.capacity() as u64, Ordering::Relaxed);
            self.appended.store(seq, Ordering::Release);
            if payload.capacity() > 64 << 20 {
                *payload = Vec::new();
            }
            seq
        })
    }

    /// Makes every record up to `seq` durable under the current policy: written to the
    /// segment file, and under `always` fsynced. Returns the error text when the disk
    /// refuses, or has refused since the last heal (the records stay queued).
    pub fn commit(&self, seq: u64) -> Result<(), DiskFailure> {
        let always = self.policy() == FsyncPolicy::Always;
        let done = |w: &Wal| {
            if always {
                w.synced_seq() >= seq
            } else {
                w.written_seq() >= seq
            }
        };
        // Records the log already holds stay acknowledged while the disk fails.
        if done(self) {
            return Ok(());
        }
        self.refuse_if_failed()?;
        let mut seg = self.segment.lock();
        if done(self) {
            return Ok(());
        }
        self.write_pending(&mut seg)?;
        if always {
            self.sync_locked(&mut seg)?;
        }
        Ok(())
    }

    /// The background-fsync signal (see [`SyncSignal`]).
    pub fn signal(&self) -> &Arc<SyncSignal> {
        &self.signal
    }

    /// Writes every record up to `seq` to the segment file without fsyncing, for a
    /// caller that will wait for the background fsync instead of doing it.
    pub fn write_through(&self, seq: u64) -> Result<(), DiskFailure> {
        if self.written_seq() >= seq {
            return Ok(());
        }
        self.refuse_if_failed()?;
        let mut seg = self.segment.lock();
        self.write_pending(&mut seg)
    }

    /// Writes what is pending and fsyncs, holding the segment lock only to write:
    /// writers go on appending while the fsync runs (the background sync thread).
    pub fn sync_concurrently(&self) -> Result<(), DiskFailure> {
        self.refuse_if_failed()?;
        let (file, path, target, closed) = {
            let mut seg = self.segment.lock();
            self.write_pending(&mut seg)?;
            let closed = std::mem::take(&mut *self.closed.lock());
            let path = self.dir.join(segment_name(seg.first_seq));
            (Arc::clone(&seg.file), path, self.written_seq(), closed)
        };
        self.finish_closed(closed)?;
        if self.synced_seq() >= target {
            return Ok(());
        }
        self.fsync(&*file, &path, target)
    }

    /// Writes and fsyncs everything appended so far (the everysec tick, shutdown).
    pub fn sync_all(&self) -> Result<(), DiskFailure> {
        self.refuse_if_failed()?;
        let mut seg = self.segment.lock();
        self.write_pending(&mut seg)?;
        if self.synced_seq() < self.written_seq() {
            self.sync_locked(&mut seg)?;
        }
        Ok(())
    }

    /// Ends the current segment and starts a new one at the next sequence number;
    /// returns that number. Everything appended before is written first. Used at a
    /// snapshot's cut, with every shard locked, so no record is being appended.
    pub fn roll(&self) -> Result<u64, DiskFailure> {
        self.refuse_if_failed()?;
        let mut seg = self.segment.lock();
        self.write_pending(&mut seg)?;
        let next = self.written_seq() + 1;
        if seg.first_seq != next {
            self.roll_locked(&mut seg, next)?;
        }
        Ok(next)
    }

    /// Zero-fills the next segment ahead of time if it is not ready yet (the log's
    /// background thread calls this, so a roll only renames a file).
    ///
    /// The file is made under a temporary name and renamed to the spare's name with
    /// the spare's lock held: every operation on the spare's name (this rename, a
    /// roll's rename into place, healing's removal) happens under that lock, so a roll
    /// never renames a file that is still being zero-filled, and no spare is
    /// announced whose file is gone.
    pub fn prepare_spare(&self) -> io::Result<()> {
        if self.spare.lock().is_some() || self.policy() != FsyncPolicy::Always {
            return Ok(());
        }
        let making = self.dir.join(SPARE_MAKING_NAME);
        let file = match zero_filled(&*self.storage, &making, self.segment_limit) {
            Ok(f) => f,
            Err(e) => {
                // A half-made spare would only take the space the log needs.
                let _ = self.storage.remove(&making);
                return Err(e);
            }
        };
        let mut spare = self.spare.lock();
        if spare.is_some() {
            drop(spare);
            let _ = self.storage.remove(&making);
            return Ok(());
        }
        let path = self.dir.join(SPARE_NAME);
        if let Err(e) = self.storage.rename(&making, &path) {
            let _ = self.storage.remove(&making);
            return Err(e);
        }
        *spare = Some(Spare {
            path,
            file,
            capacity: self.segment_limit,
        });
        Ok(())
    }

    /// Deletes every segment that ends before `first_kept` (a snapshot covers them).
    pub fn remove_segments_before(&self, first_kept: u64) -> io::Result<usize> {
        let segments = list_segments(&*self.storage, &self.dir)?;
        let mut removed = 0;
        for (i, (first, path)) in segments.iter().enumerate() {
            let next_first = segments.get(i + 1).map(|(f, _)| *f);
            // A segment may go only when the next one starts at or before the first
            // record still needed.
            if *first < first_kept && next_first.is_some_and(|n| n <= first_kept) {
                let len = self
                    .storage
                    .open(path, crate::storage::Open::Existing)
                    .and_then(|f| f.len())
                    .unwrap_or(0);
                self.storage.remove(path)?;
                self.stats.bytes_on_disk.fetch_sub(
                    len.min(self.stats.bytes_on_disk.load(Ordering::Relaxed)),
                    Ordering::Relaxed,
                );
                removed += 1;
            }
        }
        if removed > 0 {
            self.storage.sync_dir(&self.dir)?;
        }
        Ok(removed)
    }

    fn fail(&self, what: &'static str, path: &Path, e: &io::Error) -> DiskFailure {
        self.health.fail(what, path, e)
    }

    /// The first step of healing, with every shard held (so no record is being
    /// appended): the records appended so far are dropped from the queue, since the
    /// snapshot taken at this cut holds their effect. Returns the sequence number the
    /// snapshot covers.
    pub fn begin_generation(&self) -> u64 {
        let _seg = self.segment.lock();
        let mut p = self.pending.lock();
        p.buf = Vec::new();
        self.buffered.store(0, Ordering::Relaxed);
        p.last_seq
    }

    /// The last step of healing, once the snapshot covering `covered` is durable and
    /// every older segment is gone: the log goes on in a fresh segment from record
    /// `covered + 1`, and everything up to `covered` counts as durable.
    pub fn start_generation(&self, covered: u64) -> Result<(), DiskFailure> {
        let mut seg = self.segment.lock();
        let next = covered + 1;
        let always = self.policy() == FsyncPolicy::Always;
        let capacity = if always {
            self.segment_limit.min(FIRST_SEGMENT_CAPACITY)
        } else {
            self.segment_limit
        };
        let path = self.dir.join(segment_name(next));
        let fresh = new_segment(&*self.storage, &self.dir, next, None, capacity, always)
            .map_err(|e| DiskFailure::new("cannot start segment", &path, &e))?;
        // The rolled-away segments and the spare belong to the untrusted generation.
        self.closed.lock().clear();
        {
            let mut spare = self.spare.lock();
            *spare = None;
            let _ = self.storage.remove(&self.dir.join(SPARE_NAME));
        }
        *seg = fresh;
        self.written.fetch_max(covered, Ordering::AcqRel);
        self.synced.fetch_max(covered, Ordering::AcqRel);
        let on_disk = bytes_in_segments(&*self.storage, &self.dir)
            .map_err(|e| DiskFailure::new("cannot list the log", &self.dir, &e))?;
        self.stats.bytes_on_disk.store(on_disk, Ordering::Relaxed);
        Ok(())
    }

    /// Writes the pending buffer to the segment file (rolling first when the segment
    /// is full). On failure the bytes go back to the front of the buffer.
    fn write_pending(&self, seg: &mut Segment) -> Result<(), DiskFailure> {
        let (buf, last) = {
            let mut p = self.pending.lock();
            (std::mem::take(&mut p.buf), p.last_seq)
        };
        if buf.is_empty() {
            return Ok(());
        }
        let result = self.write_buf(seg, &buf, last);
        if let Err(e) = result {
            let mut p = self.pending.lock();
            let newer = std::mem::replace(&mut p.buf, buf);
            p.buf.extend_from_slice(&newer);
            return Err(e);
        }
        let mut p = self.pending.lock();
        if p.buf.is_empty() && p.buf.capacity() < buf.capacity() && buf.capacity() <= KEPT_BUFFER {
            // A small allocation serves the next batch; a larger one goes back.
            let mut buf = buf;
            buf.clear();
            p.buf = buf;
        }
        self.buffered
            .store(p.buf.capacity() as u64, Ordering::Relaxed);
        Ok(())
    }

    fn write_buf(&self, seg: &mut Segment, buf: &[u8], last: u64) -> Result<(), DiskFailure> {
        let n = buf.len() as u64;
        if seg.size + n > seg.capacity && seg.last_seq >= seg.first_seq {
            let next = self.written_seq() + 1;
            self.roll_locked(seg, next)?;
        }
        // In place, at the end of the records. A write that fails leaves the segment
        // untrusted: nothing is written to it again.
        if let Err(e) = seg.file.write_at(buf, seg.size) {
            let path = self.dir.join(segment_name(seg.first_seq));
            return Err(self.fail("write failed", &path, &e));
        }
        seg.size += n;
        seg.last_seq = last;
        self.stats.bytes_written.fetch_add(n, Ordering::Relaxed);
        self.stats.bytes_on_disk.fetch_add(n, Ordering::Relaxed);
        self.stats.writes.fetch_add(1, Ordering::Relaxed);
        self.written.store(last, Ordering::Release);
        Ok(())
    }

    fn sync_locked(&self, seg: &mut Segment) -> Result<(), DiskFailure> {
        let target = self.written_seq();
        let closed = std::mem::take(&mut *self.closed.lock());
        self.finish_closed(closed)?;
        let path = self.dir.join(segment_name(seg.first_seq));
        self.fsync(&*seg.file, &path, target)
    }

    /// Registers the files the log's records point into, fsynced before the log.
    pub fn set_companion(&self, sync: Companion) {
        let _ = self.companion.set(sync);
    }

    /// fsyncs the segment file that holds the records up to `target` (and first the
    /// files its records point into), and counts it.
    fn fsync(&self, file: &dyn StoredFile, path: &Path, target: u64) -> Result<(), DiskFailure> {
        if let Some(sync) = self.companion.get() {
            // The block files record their own failure.
            sync().map_err(|e| {
                self.health
                    .failure()
                    .unwrap_or_else(|| DiskFailure::new("block file fsync failed", &self.dir, &e))
            })?;
        }
        file.sync()
            .map_err(|e| self.fail("fsync failed", path, &e))?;
        self.stats.fsyncs.fetch_add(1, Ordering::Relaxed);
        self.stats.last_fsync_ms.store(
            crate::util::clock::system_unix_ms() as u64,
            Ordering::Relaxed,
        );
        self.synced.fetch_max(target, Ordering::AcqRel);
        Ok(())
    }

    fn roll_locked(&self, seg: &mut Segment, next: u64) -> Result<(), DiskFailure> {
        // Held until the spare is renamed into place (see `prepare_spare`).
        let mut spare_slot = self.spare.lock();
        let spare = spare_slot.take();
        // Rolls happen with writers waiting (and at a snapshot's cut, with every shard
        // held): never zero-fill here. Without a spare ready, a short plain segment
        // bridges until the background thread has made one.
        let capacity = if spare.is_none() && self.policy() == FsyncPolicy::Always {
            self.segment_limit.min(FIRST_SEGMENT_CAPACITY)
        } else {
            self.segment_limit
        };
        let path = self.dir.join(segment_name(next));
        let fresh = new_segment(&*self.storage, &self.dir, next, spare, capacity, false)
            .map_err(|e| self.fail("cannot start segment", &path, &e))?;
        drop(spare_slot);
        self.stats
            .bytes_on_disk
            .fetch_add(fresh.size, Ordering::Relaxed);
        let old = std::mem::replace(seg, fresh);
        self.closed.lock().push(Closed {
            file: old.file,
            size: old.size,
            path: self.dir.join(segment_name(old.first_seq)),
        });
        Ok(())
    }

    /// fsyncs rolled-away segments and trims them to their records (no zeros, no
    /// bytes of a failed write past the end). On failure the rest stay queued.
    fn finish_closed(&self, mut closed: Vec<Closed>) -> Result<(), DiskFailure> {
        while let Some(c) = closed.first() {
            let done = c.file.sync().and_then(|()| c.file.set_len(c.size));
            if let Err(e) = done {
                let path = c.path.clone();
                let mut queue = self.closed.lock();
                let newer = std::mem::take(&mut *queue);
                *queue = closed;
                queue.extend(newer);
                return Err(self.fail("cannot close segment", &path, &e));
            }
            closed.remove(0);
        }
        Ok(())
    }

    /// fsyncs and trims rolled-away segments now (the background thread, so that
    /// they are finished even under `appendfsync no`).
    pub fn finish_rolled(&self) -> Result<(), DiskFailure> {
        self.refuse_if_failed()?;
        let closed = std::mem::take(&mut *self.closed.lock());
        self.finish_closed(closed)
    }
}

/// Bytes in the segment files of `dir`.
fn bytes_in_segments(storage: &dyn Storage, dir: &Path) -> io::Result<u64> {
    Ok(list_segments(storage, dir)?
        .iter()
        .filter_map(|(_, p)| storage.open(p, crate::storage::Open::Existing).ok())
        .filter_map(|f| f.len().ok())
        .sum())
}

#[cfg(test)]
mod tests {
    use super::super::record::{scan_segment, ScanEnd};
    use super::*;
    use std::sync::atomic::AtomicBool;

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("pion-wal-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("temp dir");
        d
    }

    fn set(wal: &Wal, i: u64) -> u64 {
        let argv = vec![b"SET".to_vec(), b"k".to_vec(), i.to_string().into_bytes()];
        wal.append(1, [(0usize, argv.as_slice())].into_iter())
    }

    #[test]
    fn records_reach_the_file_on_commit_and_segments_roll() {
        let dir = tmp("roll");
        let wal = Wal::create(
            crate::storage::local(),
            Arc::new(DiskHealth::default()),
            &dir,
            1,
            FsyncPolicy::Always,
            4096,
        )
        .expect("create");
        let mut last = 0;
        for i in 0..400 {
            last = set(&wal, i);
            if i % 7 == 0 {
                wal.commit(last).expect("commit");
            }
        }
        wal.commit(last).expect("commit");
        assert_eq!(wal.synced_seq(), 400);
        let segments = list_segments(&crate::storage::Local, &dir).expect("list");
        assert!(segments.len() > 3, "segments rolled: {segments:?}");
        let mut next = 1;
        for (first, path) in &segments {
            let bytes = std::fs::read(path).expect("read");
            let scan = scan_segment(&bytes);
            assert_eq!(scan.first_seq, Some(*first));
            assert_eq!(scan.end, ScanEnd::Clean);
            for r in &scan.records {
                assert_eq!(r.seq, next);
                next += 1;
            }
        }
        assert_eq!(next, 401);
        // Everything before the last roll can go once a snapshot covers it.
        let first_kept = wal.roll().expect("roll");
        assert_eq!(first_kept, 401);
        wal.remove_segments_before(first_kept).expect("remove");
        assert_eq!(
            list_segments(&crate::storage::Local, &dir)
                .expect("list")
                .len(),
            1
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_spare_made_while_the_log_rolls_is_never_a_live_segment() {
        // The log's background thread makes spares while writers roll segments. A
        // spare made under its final name could be renamed into place by a roll while
        // still being zero-filled (its zeros then landing on the new segment's
        // records), and then be announced with no file behind it.
        let dir = tmp("spare-race");
        let wal = Arc::new(
            Wal::create(
                crate::storage::local(),
                Arc::new(DiskHealth::default()),
                &dir,
                1,
                FsyncPolicy::Always,
                64 << 10,
            )
            .expect("create"),
        );
        let done = Arc::new(AtomicBool::new(false));
        let maker = {
            let (wal, done) = (Arc::clone(&wal), Arc::clone(&done));
            std::thread::spawn(move || {
                while !done.load(Ordering::Relaxed) {
                    wal.prepare_spare().expect("spare");
                }
            })
        };
        let mut last = 0;
        for i in 0..1200 {
            last = set(&wal, i);
            wal.commit(last).expect("commit");
            if i % 3 == 0 {
                wal.roll().expect("roll");
            }
        }
        done.store(true, Ordering::Relaxed);
        maker.join().expect("spare maker");
        wal.sync_all().expect("sync");
        let mut next = 1;
        for (first, path) in list_segments(&crate::storage::Local, &dir).expect("list") {
            let bytes = std::fs::read(&path).expect("read");
            let scan = scan_segment(&bytes);
            assert_eq!(scan.first_seq, Some(first), "{}", path.display());
            for r in &scan.records {
                assert_eq!(r.seq, next, "{}", path.display());
                next += 1;
            }
        }
        assert_eq!(next, last + 1, "every record is in the segments, in order");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_failed_log_stays_failed_until_a_new_generation_starts() {
        let dir = tmp("fail");
        let (storage, faults) = crate::storage::Faulty::wrap(crate::storage::local());
        let health = Arc::new(DiskHealth::default());
        let wal = Wal::create(
            storage,
            Arc::clone(&health),
            &dir,
            1,
            FsyncPolicy::EverySec,
            1 << 20,
        )
        .expect("create");
        let a = set(&wal, 1);
        wal.commit(a).expect("commit");
        faults.fail_write(1, 28);
        let b = set(&wal, 2);
        let err = wal.commit(b).expect_err("disk full");
        assert!(err.to_string().contains("No space left on device"), "{err}");
        assert_eq!(wal.written_seq(), 1);
        // The disk would take writes again, but the segment is not trusted: nothing
        // is written to it, and every commit says why.
        let c = set(&wal, 3);
        assert_eq!(wal.commit(c), Err(err.clone()));
        assert_eq!(wal.sync_all(), Err(err.clone()));
        assert!(wal.roll().is_err());
        assert_eq!(faults.writes(), 3, "nothing written after the failed write");
        // Records already in the log stay acknowledged.
        assert_eq!(wal.commit(a), Ok(()));
        // Healing: at the cut the queue is dropped (a snapshot holds it); once that
        // snapshot is durable the log goes on in a fresh segment.
        let covered = wal.begin_generation();
        assert_eq!(covered, 3);
        for (_, p) in list_segments(&crate::storage::Local, &dir).expect("list") {
            std::fs::remove_file(p).expect("remove");
        }
        wal.start_generation(covered).expect("fresh segment");
        health.healed();
        assert_eq!(wal.durable_seq(), 3);
        let d = set(&wal, 4);
        assert_eq!(d, 4);
        wal.commit(d).expect("commit");
        let segments = list_segments(&crate::storage::Local, &dir).expect("list");
        assert_eq!(segments.len(), 1);
        assert_eq!(segments[0].0, 4);
        let scan = scan_segment(&std::fs::read(&segments[0].1).expect("read"))
            .records
            .len();
        assert_eq!(scan, 1);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
