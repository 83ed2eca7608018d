//! Block payloads on disk: append-only files of checksummed records, which the log and
//! snapshots reference by location instead of carrying the bytes. A snapshot of a large
//! prompt cache is then an index, not a copy of the cache.
//!
//! ```text
//! blocks/blk-0000000007.dat = record*
//! record = "PKVB" len:u64 crc:u32 data[len]        (crc: CRC32C of data)
//! location = file:u32 offset:u64 (of the record) len:u64 crc:u32
//! ```
//!
//! Space of evicted and deleted blocks is reclaimed by compaction: live payloads of a
//! mostly-dead file are appended again (and their new locations logged); the emptied
//! file is *retired* at that log position and deleted once a snapshot covers it, so no
//! log record still to be replayed can name it.
//!
//! Where the storage maps files (the local file system), a payload written or read is
//! handed back as a view of the file's mapping: the store keeps the page cache's copy
//! that the write filled instead of a second one in its own memory, and a large store
//! costs one copy into the page cache rather than a fresh allocation, a copy into it,
//! and the copy of the write.

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::durability::health::DiskHealth;
use crate::storage::{FileMap, Open, Storage, StoredFile};
use crate::util::codec::{crc, Reader};
use bytes::Bytes;

const MAGIC: &[u8; 4] = b"PKVB";
const RECORD_HEADER: u64 = 16;

/// Where a payload is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Loc {
    /// File number.
    pub file: u32,
    /// Offset of the record header.
    pub offset: u64,
    /// Payload bytes.
    pub len: u64,
    /// CRC32C of the payload.
    pub crc: u32,
}

/// Bytes of an encoded [`Loc`].
pub const LOC_LEN: usize = 24;

impl Loc {
    /// Appends the location's 24-byte encoding.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.file.to_le_bytes());
        out.extend_from_slice(&self.offset.to_le_bytes());
        out.extend_from_slice(&self.len.to_le_bytes());
        out.extend_from_slice(&self.crc.to_le_bytes());
    }

    /// Reads an encoded location.
    pub fn decode(r: &mut Reader<'_>) -> Option<Loc> {
        Some(Loc {
            file: r.u32().ok()?,
            offset: r.u64().ok()?,
            len: r.u64().ok()?,
            crc: r.u32().ok()?,
        })
    }
}

struct FileInfo {
    file: Arc<dyn StoredFile>,
    size: u64,
    live: u64,
    /// The file's mapping (views of payloads come from it), made on first need and
    /// made again, longer, once the file outgrows it.
    map: Option<FileMap>,
}

struct Files {
    active: u32,
    files: BTreeMap<u32, FileInfo>,
    /// Emptied files and the log sequence number after which no record names them.
    retired: Vec<(u32, u64)>,
    /// Files a write or fsync failed on: never trusted again (healing moves their
    /// payloads to a fresh file, and deletes them once a snapshot covers that).
    untrusted: BTreeSet<u32>,
    dirty: bool,
}

/// The block files of one data directory.
pub struct BlockFiles {
    /// Payload bytes compaction moved, ever (`INFO`'s `kv_compacted_bytes`).
    compacted: AtomicU64,
    storage: Arc<dyn Storage>,
    health: Arc<DiskHealth>,
    dir: PathBuf,
    roll_bytes: u64,
    inner: Mutex<Files>,
    /// Live payload bytes in every file (the sum of the files' `live`), readable
    /// without the lock: the memory figures add it while payloads are views.
    live_total: AtomicU64,
    /// Whether a payload has been handed out as a view of a mapping (the storage maps
    /// files): the live payloads are then the page cache's, not the allocator's.
    viewed: AtomicBool,
}

fn file_name(n: u32) -> String {
    format!("blk-{n:010}.dat")
}

fn parse_name(name: &str) -> Option<u32> {
    name.strip_prefix("blk-")?
        .strip_suffix(".dat")?
        .parse()
        .ok()
}

/// Counters for `INFO` and compaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FileStats {
    /// Block files on disk.
    pub files: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Bytes of payloads still in use.
    pub live: u64,
    /// Payload bytes compaction moved, ever.
    pub compacted: u64,
}

impl BlockFiles {
    /// Opens `dir/blocks`, creating it; new payloads go to a new file after the
    /// existing ones. Live bytes are counted as payloads are referenced at recovery.
    pub fn open(
        storage: Arc<dyn Storage>,
        health: Arc<DiskHealth>,
        dir: &Path,
        roll_bytes: u64,
    ) -> io::Result<BlockFiles> {
        let dir = dir.join("blocks");
        storage.create_dir_all(&dir)?;
        let mut files = BTreeMap::new();
        for name in storage.list(&dir)? {
            if let Some(n) = parse_name(&name) {
                let file = storage.open(&dir.join(&name), Open::Existing)?;
                let size = file.len()?;
                files.insert(
                    n,
                    FileInfo {
                        file,
                        size,
                        live: 0,
                        map: None,
                    },
                );
            }
        }
        let active = files.keys().next_back().map_or(1, |n| n + 1);
        let bf = BlockFiles {
            compacted: AtomicU64::new(0),
            storage,
            health,
            dir,
            roll_bytes: roll_bytes.max(64 << 10),
            inner: Mutex::new(Files {
                active,
                files,
                retired: Vec::new(),
                untrusted: BTreeSet::new(),
                dirty: false,
            }),
            live_total: AtomicU64::new(0),
            viewed: AtomicBool::new(false),
        };
        bf.create(&mut bf.inner.lock(), active)?;
        Ok(bf)
    }

    fn create(&self, f: &mut Files, n: u32) -> io::Result<()> {
        let file = self
            .storage
            .open(&self.dir.join(file_name(n)), Open::Create)?;
        self.storage.sync_dir(&self.dir)?;
        f.files.insert(
            n,
            FileInfo {
                file,
                size: 0,
                live: 0,
                map: None,
            },
        );
        f.active = n;
        Ok(())
    }

    /// Appends a payload; returns where it is. Refused while the disk is failed.
    pub fn append(&self, data: &[u8]) -> io::Result<Loc> {
        self.append_view(data).map(|(loc, _)| loc)
    }

    /// Appends a payload; returns where it is and, where the storage maps files, the
    /// written bytes as a view of the file (for the store to keep instead of its own
    /// copy). Refused while the disk is failed.
    pub fn append_view(&self, data: &[u8]) -> io::Result<(Loc, Option<Bytes>)> {
        if let Some(failure) = self.health.failure() {
            return Err(io::Error::other(failure));
        }
        let mut f = self.inner.lock();
        let active = f.active;
        if f.files
            .get(&active)
            .is_some_and(|a| a.size >= self.roll_bytes)
        {
            if let Some(a) = f.files.get(&active) {
                if let Err(e) = a.file.sync() {
                    return Err(self.failed(&mut f, active, "block file fsync failed", e));
                }
            }
            self.create(&mut f, active + 1)
                .map_err(|e| self.failed(&mut f, active + 1, "cannot start a block file", e))?;
        }
        let loc = self.write_record(&mut f, data)?;
        let view = self.view_in(&mut f, loc);
        Ok((loc, view))
    }

    /// Payload `loc` as a view of its file's mapping, mapping the file (again, longer)
    /// when it has outgrown its mapping; `None` where the storage maps nothing or the
    /// payload is not wholly written.
    fn view_in(&self, f: &mut Files, loc: Loc) -> Option<Bytes> {
        let info = f.files.get_mut(&loc.file)?;
        let start = loc.offset.checked_add(RECORD_HEADER)?;
        let end = start.checked_add(loc.len)?;
        if end > info.size {
            return None;
        }
        if info.map.as_ref().is_none_or(|m| m.len() < end) {
            // A whole file's worth at once: a file takes one or two mappings in its
            // life, not one per payload.
            info.map = info.file.map(end.next_multiple_of(self.roll_bytes));
        }
        let view = info.map.as_ref()?.view(start, loc.len)?;
        self.viewed.store(true, Ordering::Relaxed);
        Some(view)
    }

    /// Payload `loc` as a checked view of its file, where the storage maps files and
    /// the record is whole and matches its checksum.
    pub fn view(&self, loc: Loc) -> Option<Bytes> {
        let view = self.view_in(&mut self.inner.lock(), loc)?;
        (crc(&view) == loc.crc).then_some(view)
    }

    /// Live payload bytes held as views of the files' mappings: the page cache's
    /// memory the store keeps instead of the allocator's (0 where nothing is mapped).
    pub fn mapped_bytes(&self) -> u64 {
        if self.viewed.load(Ordering::Relaxed) {
            self.live_total.load(Ordering::Relaxed)
        } else {
            0
        }
    }

    /// Appends a payload to the active file whatever the disk's state (healing).
    fn write_record(&self, f: &mut Files, data: &[u8]) -> io::Result<Loc> {
        let active = f.active;
        let info = f
            .files
            .get_mut(&active)
            .ok_or_else(|| io::Error::other("no active block file"))?;
        let c = crc(data);
        let mut head = Vec::with_capacity(RECORD_HEADER as usize);
        head.extend_from_slice(MAGIC);
        head.extend_from_slice(&(data.len() as u64).to_le_bytes());
        head.extend_from_slice(&c.to_le_bytes());
        let offset = info.size;
        let written = info
            .file
            .write_at(&head, offset)
            .and_then(|()| info.file.write_at(data, offset + RECORD_HEADER));
        if let Err(e) = written {
            return Err(self.failed(f, active, "block file write failed", e));
        }
        info.size += RECORD_HEADER + data.len() as u64;
        info.live += data.len() as u64;
        self.live_total
            .fetch_add(data.len() as u64, Ordering::Relaxed);
        f.dirty = true;
        Ok(Loc {
            file: active,
            offset,
            len: data.len() as u64,
            crc: c,
        })
    }

    /// Records a failed write or fsync of file `n`: the file is not trusted again.
    fn failed(&self, f: &mut Files, n: u32, what: &'static str, e: io::Error) -> io::Error {
        f.untrusted.insert(n);
        let failure = self.health.fail(what, &self.dir.join(file_name(n)), &e);
        io::Error::new(e.kind(), failure.to_string())
    }

    /// Whether a payload at `loc` (none: never written) must be written again before
    /// a snapshot may name it: it is not on disk, or its file is not trusted.
    pub fn needs_rewrite(&self, loc: Option<Loc>) -> bool {
        match loc {
            None => true,
            Some(l) => self.inner.lock().untrusted.contains(&l.file),
        }
    }

    /// Healing, first step: a fresh active file for the payloads to move.
    pub fn heal_begin(&self) -> io::Result<()> {
        let mut f = self.inner.lock();
        let next = f.files.keys().next_back().map_or(1, |n| n + 1);
        self.create(&mut f, next)
    }

    /// Healing: writes a payload again (into the fresh file); returns where it is,
    /// and the bytes as a view of it where the storage maps files.
    pub fn heal_append(&self, data: &[u8]) -> io::Result<(Loc, Option<Bytes>)> {
        let mut f = self.inner.lock();
        let loc = self.write_record(&mut f, data)?;
        let view = self.view_in(&mut f, loc);
        Ok((loc, view))
    }

    /// Healing, last step (a snapshot that names none of them is durable): the
    /// untrusted files go.
    pub fn heal_finish(&self) -> io::Result<()> {
        let mut f = self.inner.lock();
        let gone: Vec<u32> = std::mem::take(&mut f.untrusted).into_iter().collect();
        for n in &gone {
            if *n != f.active {
                f.files.remove(n);
                f.retired.retain(|(r, _)| r != n);
                let _ = self.storage.remove(&self.dir.join(file_name(*n)));
            }
        }
        if !gone.is_empty() {
            self.storage.sync_dir(&self.dir)?;
        }
        Ok(())
    }

    /// Reads and checks a payload (as a view of its file where the storage maps
    /// files, else a copy); the error names the file and offset.
    pub fn read(&self, loc: Loc) -> Result<Bytes, String> {
        let path = self.dir.join(file_name(loc.file));
        let file = {
            let f = self.inner.lock();
            f.files.get(&loc.file).map(|i| Arc::clone(&i.file))
        };
        let Some(file) = file else {
            return Err(format!("block file {} is missing", path.display()));
        };
        let bad = |what: &str| format!("{} offset {}: {what}", path.display(), loc.offset);
        let mut head = [0u8; RECORD_HEADER as usize];
        file.read_at(&mut head, loc.offset)
            .map_err(|e| bad(&format!("cannot read the record ({e})")))?;
        let len = u64::from_le_bytes(head[4..12].try_into().map_err(|_| bad("bad header"))?);
        let stored = u32::from_le_bytes(head[12..16].try_into().map_err(|_| bad("bad header"))?);
        if &head[..4] != MAGIC || len != loc.len || stored != loc.crc {
            return Err(bad("the record does not match the location the log gives"));
        }
        let size = usize::try_from(len).map_err(|_| bad("record too large"))?;
        // A view only of a record the file wholly holds (`view_in` checks the size).
        let data = match self.view_in(&mut self.inner.lock(), loc) {
            Some(view) => view,
            None => {
                let mut data = vec![0u8; size];
                file.read_at(&mut data, loc.offset + RECORD_HEADER)
                    .map_err(|e| bad(&format!("cannot read the payload ({e})")))?;
                Bytes::from(data)
            }
        };
        if crc(&data) != loc.crc {
            return Err(bad("payload checksum mismatch"));
        }
        Ok(data)
    }

    /// Counts a payload as referenced (recovery).
    pub fn retain(&self, loc: Loc) {
        if let Some(i) = self.inner.lock().files.get_mut(&loc.file) {
            i.live += loc.len;
            self.live_total.fetch_add(loc.len, Ordering::Relaxed);
        }
    }

    /// Counts a payload as no longer referenced (evicted, deleted, relocated).
    pub fn release(&self, loc: Loc) {
        if let Some(i) = self.inner.lock().files.get_mut(&loc.file) {
            let gone = i.live.min(loc.len);
            i.live -= gone;
            self.live_total.fetch_sub(gone, Ordering::Relaxed);
        }
    }

    /// fsyncs what was appended since the last call (before the log's fsync, and
    /// before a snapshot that names the payloads is put in place). Refused while the
    /// disk is failed.
    pub fn sync(&self) -> io::Result<()> {
        if let Some(failure) = self.health.failure() {
            return Err(io::Error::other(failure));
        }
        self.sync_active()
    }

    /// Healing: fsyncs what was appended to the active file (the fresh one, once
    /// payloads moved there), whatever the disk's state; a failure makes the file
    /// untrusted, so its payloads are written again.
    pub fn heal_sync_active(&self) -> io::Result<()> {
        self.sync_active()
    }

    fn sync_active(&self) -> io::Result<()> {
        let (file, n) = {
            let mut f = self.inner.lock();
            if !f.dirty || f.untrusted.contains(&f.active) {
                return Ok(());
            }
            f.dirty = false;
            let n = f.active;
            (f.files.get(&n).map(|i| Arc::clone(&i.file)), n)
        };
        match file {
            Some(file) => file.sync().map_err(|e| {
                let mut f = self.inner.lock();
                self.failed(&mut f, n, "block file fsync failed", e)
            }),
            None => Ok(()),
        }
    }

    /// Counts payload bytes a compaction moved.
    pub fn note_compacted(&self, bytes: u64) {
        self.compacted.fetch_add(bytes, Ordering::Relaxed);
    }

    /// Files worth compacting: not the active one, at least an eighth of a file's size
    /// dead and less than half live. Most dead first.
    pub fn compaction_candidates(&self) -> Vec<u32> {
        let f = self.inner.lock();
        let mut v: Vec<(u64, u32)> = f
            .files
            .iter()
            .filter(|(n, i)| {
                **n != f.active
                    && !f.retired.iter().any(|(r, _)| r == *n)
                    && !f.untrusted.contains(n)
                    && i.size > 0
                    && i.size - i.live >= self.roll_bytes / 8
                    && i.live * 2 < i.size
            })
            .map(|(n, i)| (i.size - i.live, *n))
            .collect();
        v.sort_unstable_by(|a, b| b.cmp(a));
        v.into_iter().map(|(_, n)| n).collect()
    }

    /// Marks files with nothing live (other than the active one) as retired after log
    /// record `seq`; returns how many.
    pub fn retire_empty(&self, seq: u64) -> usize {
        let mut f = self.inner.lock();
        let active = f.active;
        let empty: Vec<u32> = f
            .files
            .iter()
            .filter(|(n, i)| **n != active && i.live == 0)
            .map(|(n, _)| *n)
            .filter(|n| !f.retired.iter().any(|(r, _)| r == n))
            .collect();
        for n in &empty {
            f.retired.push((*n, seq));
        }
        empty.len()
    }

    /// Deletes retired files that a snapshot at `snapshot_seq` covers.
    pub fn delete_covered(&self, snapshot_seq: u64) -> io::Result<usize> {
        let mut f = self.inner.lock();
        let (gone, keep): (Vec<_>, Vec<_>) =
            f.retired.iter().partition(|(_, seq)| *seq <= snapshot_seq);
        f.retired = keep;
        for (n, _) in &gone {
            f.files.remove(n);
            self.storage.remove(&self.dir.join(file_name(*n)))?;
        }
        if !gone.is_empty() {
            self.storage.sync_dir(&self.dir)?;
        }
        Ok(gone.len())
    }

    /// Files, bytes and live bytes.
    pub fn stats(&self) -> FileStats {
        let f = self.inner.lock();
        FileStats {
            files: f.files.len() as u64,
            bytes: f.files.values().map(|i| i.size).sum(),
            live: f.files.values().map(|i| i.live).sum(),
            compacted: self.compacted.load(Ordering::Relaxed),
        }
    }
}
