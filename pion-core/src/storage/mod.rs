//! The seam under everything Pion keeps on disk: the write-ahead log's segments, the
//! snapshots and the prompt cache's block files reach the file system only through
//! [`Storage`] and [`StoredFile`]. [`Local`] is the real file system; [`Faulty`]
//! wraps any storage to fail chosen writes and fsyncs (or tear a write); and
//! [`Simulated`] keeps files in memory and can "lose power", dropping every byte and
//! every directory change that no successful fsync covered. Tests use the last two to
//! check that an acknowledged write survives disks that fail and machines that stop.
//!
//! The operations are the few the durable formats need: whole-file reads, positioned
//! writes and reads, fsync of a file and of a directory, truncation, rename, remove
//! and listing.

mod faults;
mod local;
mod simulated;

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use faults::{FaultPlan, Faulty};
pub use local::Local;
pub use simulated::Simulated;

/// How a file is opened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Open {
    /// Created empty (an existing file of that name is emptied).
    Create,
    /// An existing file, for reading and writing.
    Existing,
}

/// An open file.
pub trait StoredFile: Send + Sync {
    /// Writes all of `buf` at `offset` (the file grows as needed).
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()>;
    /// Reads exactly `buf.len()` bytes at `offset`.
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;
    /// Makes the file's bytes and size durable (`fdatasync`).
    fn sync(&self) -> io::Result<()>;
    /// Truncates or extends the file to `len` bytes.
    fn set_len(&self, len: u64) -> io::Result<()>;
    /// The file's size.
    fn len(&self) -> io::Result<u64>;
    /// Whether the file is empty.
    fn is_empty(&self) -> io::Result<bool> {
        Ok(self.len()? == 0)
    }
    /// A read-only shared mapping of the file's first `len` bytes, which may reach
    /// past its end; `None` where this storage maps nothing (or the mapping failed),
    /// and the caller keeps its own copy of what it reads or writes.
    fn map(&self, len: u64) -> Option<FileMap> {
        let _ = len;
        None
    }
}

/// A read-only shared mapping of a file's first bytes: what is written there is the
/// page cache's, shared with every view. The mapping may reach past the file's end
/// (so a growing file needs few mappings); a page there must not be read until it is
/// written, so views are handed out only of ranges their caller knows are written.
pub struct FileMap {
    /// The whole mapping, never exposed whole: only [`FileMap::view`]s of it.
    all: bytes::Bytes,
}

impl FileMap {
    /// Wraps a mapping (`owner` unmaps when the last view of it is dropped).
    pub fn new<T: AsRef<[u8]> + Send + 'static>(owner: T) -> FileMap {
        FileMap {
            all: bytes::Bytes::from_owner(owner),
        }
    }

    /// Bytes mapped (file offsets `0..len()`).
    pub fn len(&self) -> u64 {
        self.all.len() as u64
    }

    /// Whether nothing is mapped.
    pub fn is_empty(&self) -> bool {
        self.all.is_empty()
    }

    /// File bytes `[offset, offset + len)`, which the caller knows are written, as a
    /// view that keeps the mapping alive; `None` past the mapping's end.
    pub fn view(&self, offset: u64, len: u64) -> Option<bytes::Bytes> {
        let start = usize::try_from(offset).ok()?;
        let end = start.checked_add(usize::try_from(len).ok()?)?;
        (end <= self.all.len()).then(|| self.all.slice(start..end))
    }
}

/// A held lock on a data directory; released when dropped.
pub type DirLock = Box<dyn Send + Sync>;

/// Why a data directory could not be locked.
#[derive(Debug)]
pub enum LockError {
    /// Another process (or engine) holds it; its process id as the lock file says.
    InUse(String),
    /// The lock file could not be made.
    Io(io::Error),
}

/// Where durable files live.
pub trait Storage: Send + Sync {
    /// Creates a directory and its parents.
    fn create_dir_all(&self, dir: &Path) -> io::Result<()>;
    /// Opens a file.
    fn open(&self, path: &Path, how: Open) -> io::Result<Arc<dyn StoredFile>>;
    /// Reads a whole file.
    fn read(&self, path: &Path) -> io::Result<Vec<u8>>;
    /// Whether a file exists.
    fn exists(&self, path: &Path) -> bool;
    /// The names of the files in a directory.
    fn list(&self, dir: &Path) -> io::Result<Vec<String>>;
    /// Renames a file (replacing the target), atomically.
    fn rename(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Removes a file.
    fn remove(&self, path: &Path) -> io::Result<()>;
    /// Makes a directory's entries (files created, renamed, removed) durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;
    /// Locks a data directory for this process.
    fn lock_dir(&self, dir: &Path) -> Result<DirLock, LockError>;
    /// Whether files are on the local file system, where other processes can map them
    /// (the prompt cache's export files need that).
    fn is_local(&self) -> bool;
}

/// The real file system.
pub fn local() -> Arc<dyn Storage> {
    Arc::new(Local)
}

/// The files of `dir` whose names `parse` reads a number from, ordered by it.
pub fn list_numbered(
    storage: &dyn Storage,
    dir: &Path,
    parse: fn(&str) -> Option<u64>,
) -> io::Result<Vec<(u64, PathBuf)>> {
    let mut out: Vec<(u64, PathBuf)> = storage
        .list(dir)?
        .into_iter()
        .filter_map(|name| parse(&name).map(|n| (n, dir.join(name))))
        .collect();
    out.sort();
    Ok(out)
}

/// Writes a file front to back through a buffer (snapshots).
pub struct SeqWriter {
    file: Arc<dyn StoredFile>,
    at: u64,
    buf: Vec<u8>,
}

impl SeqWriter {
    /// Bytes gathered before each write.
    const CHUNK: usize = 1 << 20;

    /// Writes `file` from its start.
    pub fn new(file: Arc<dyn StoredFile>) -> SeqWriter {
        SeqWriter {
            file,
            at: 0,
            buf: Vec::with_capacity(Self::CHUNK),
        }
    }

    /// Writes what is buffered and fsyncs the file.
    pub fn finish(mut self) -> io::Result<Arc<dyn StoredFile>> {
        self.write_buffered()?;
        self.file.sync()?;
        Ok(self.file)
    }

    fn write_buffered(&mut self) -> io::Result<()> {
        if !self.buf.is_empty() {
            self.file.write_at(&self.buf, self.at)?;
            self.at += self.buf.len() as u64;
            self.buf.clear();
        }
        Ok(())
    }
}

impl io::Write for SeqWriter {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        if self.buf.len() + data.len() > Self::CHUNK {
            self.write_buffered()?;
        }
        if data.len() >= Self::CHUNK {
            self.file.write_at(data, self.at)?;
            self.at += data.len() as u64;
        } else {
            self.buf.extend_from_slice(data);
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.write_buffered()
    }
}

#[cfg(test)]
mod tests;
