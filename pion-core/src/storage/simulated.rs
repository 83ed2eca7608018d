//! Files in memory that remember what an fsync made durable, so a test can cut the
//! power: every byte written since its file's last successful fsync is lost, and so is
//! every file creation, rename and removal since its directory's last fsync. That is
//! the most a real disk may lose, and what a crash-safe format has to survive.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Weak};

use parking_lot::Mutex;

use super::{DirLock, LockError, Open, Storage, StoredFile};

struct Inode {
    /// The bytes as the running system sees them.
    data: Vec<u8>,
    /// The bytes a power cut leaves.
    durable: Vec<u8>,
    /// The range of `data` written since the last fsync (empty: none).
    dirty: (usize, usize),
}

impl Inode {
    fn touch(&mut self, from: usize, to: usize) {
        let (lo, hi) = self.dirty;
        self.dirty = if lo == hi {
            (from, to)
        } else {
            (lo.min(from), hi.max(to))
        };
    }
}

type Entries = BTreeMap<String, u64>;

#[derive(Default)]
struct Fs {
    inodes: HashMap<u64, Inode>,
    next_inode: u64,
    /// Directory entries as the running system sees them.
    dirs: BTreeMap<PathBuf, Entries>,
    /// Directory entries as of each directory's last fsync.
    durable_dirs: BTreeMap<PathBuf, Entries>,
    /// Locked data directories.
    locks: HashSet<PathBuf>,
    /// Bumped by each power cut: files opened before it are gone.
    epoch: u64,
}

fn not_found(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::NotFound,
        format!("{}: no such file", path.display()),
    )
}

fn split(path: &Path) -> io::Result<(PathBuf, String)> {
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "not a file name"))?;
    Ok((dir, name.to_string()))
}

impl Fs {
    fn lookup(&self, path: &Path) -> io::Result<u64> {
        let (dir, name) = split(path)?;
        self.dirs
            .get(&dir)
            .and_then(|e| e.get(&name))
            .copied()
            .ok_or_else(|| not_found(path))
    }

    fn entries(&mut self, dir: &Path) -> io::Result<&mut Entries> {
        self.dirs.get_mut(dir).ok_or_else(|| not_found(dir))
    }
}

/// An in-memory storage whose power can be cut (see the module comment).
#[derive(Clone, Default)]
pub struct Simulated {
    fs: Arc<Mutex<Fs>>,
}

impl Simulated {
    /// An empty disk.
    pub fn new() -> Simulated {
        Simulated::default()
    }

    /// Cuts the power: what no fsync covered is gone, files opened before are
    /// closed, and every directory lock is released.
    pub fn power_cut(&self) {
        let mut fs = self.fs.lock();
        fs.epoch += 1;
        fs.dirs = fs.durable_dirs.clone();
        let live: HashSet<u64> = fs.dirs.values().flat_map(|e| e.values().copied()).collect();
        fs.inodes.retain(|id, _| live.contains(id));
        for inode in fs.inodes.values_mut() {
            inode.data = inode.durable.clone();
            inode.dirty = (0, 0);
        }
        fs.locks.clear();
    }
}

struct SimFile {
    fs: Weak<Mutex<Fs>>,
    inode: u64,
    epoch: u64,
}

impl SimFile {
    fn with<T>(&self, f: impl FnOnce(&mut Inode) -> io::Result<T>) -> io::Result<T> {
        let gone = || io::Error::from_raw_os_error(5);
        let fs = self.fs.upgrade().ok_or_else(gone)?;
        let mut fs = fs.lock();
        if fs.epoch != self.epoch {
            return Err(gone());
        }
        let inode = fs.inodes.get_mut(&self.inode).ok_or_else(gone)?;
        f(inode)
    }
}

impl StoredFile for SimFile {
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.with(|i| {
            let at = usize::try_from(offset)
                .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "offset"))?;
            let end = at + buf.len();
            if i.data.len() < end {
                i.data.resize(end, 0);
            }
            i.data[at..end].copy_from_slice(buf);
            i.touch(at, end);
            Ok(())
        })
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.with(|i| {
            let at = offset as usize;
            let src = i
                .data
                .get(at..at + buf.len())
                .ok_or_else(|| io::Error::from(io::ErrorKind::UnexpectedEof))?;
            buf.copy_from_slice(src);
            Ok(())
        })
    }

    fn sync(&self) -> io::Result<()> {
        self.with(|i| {
            let (lo, hi) = i.dirty;
            i.durable.resize(i.data.len(), 0);
            let hi = hi.min(i.data.len());
            if lo < hi {
                i.durable[lo..hi].copy_from_slice(&i.data[lo..hi]);
            }
            i.dirty = (0, 0);
            Ok(())
        })
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.with(|i| {
            let len = len as usize;
            let old = i.data.len();
            i.data.resize(len, 0);
            i.touch(old.min(len), old.max(len));
            Ok(())
        })
    }

    fn len(&self) -> io::Result<u64> {
        self.with(|i| Ok(i.data.len() as u64))
    }
}

/// Releases a directory lock when dropped.
struct SimLock {
    fs: Weak<Mutex<Fs>>,
    dir: PathBuf,
    epoch: u64,
}

impl Drop for SimLock {
    fn drop(&mut self) {
        if let Some(fs) = self.fs.upgrade() {
            let mut fs = fs.lock();
            if fs.epoch == self.epoch {
                fs.locks.remove(&self.dir);
            }
        }
    }
}

impl Storage for Simulated {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        // Directories are durable at once (they are made once, before any file).
        let mut fs = self.fs.lock();
        let mut at = PathBuf::new();
        for part in dir.components() {
            at.push(part);
            fs.dirs.entry(at.clone()).or_default();
            fs.durable_dirs.entry(at.clone()).or_default();
        }
        Ok(())
    }

    fn open(&self, path: &Path, how: Open) -> io::Result<Arc<dyn StoredFile>> {
        let mut fs = self.fs.lock();
        let (dir, name) = split(path)?;
        let existing = fs.entries(&dir)?.get(&name).copied();
        let inode = match (existing, how) {
            (Some(id), Open::Existing) => id,
            (None, Open::Existing) => return Err(not_found(path)),
            (Some(id), Open::Create) => {
                if let Some(i) = fs.inodes.get_mut(&id) {
                    let old = i.data.len();
                    i.data.clear();
                    i.touch(0, old);
                }
                id
            }
            (None, Open::Create) => {
                fs.next_inode += 1;
                let id = fs.next_inode;
                fs.inodes.insert(
                    id,
                    Inode {
                        data: Vec::new(),
                        durable: Vec::new(),
                        dirty: (0, 0),
                    },
                );
                fs.entries(&dir)?.insert(name, id);
                id
            }
        };
        Ok(Arc::new(SimFile {
            fs: Arc::downgrade(&self.fs),
            inode,
            epoch: fs.epoch,
        }))
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        let fs = self.fs.lock();
        let id = fs.lookup(path)?;
        Ok(fs
            .inodes
            .get(&id)
            .map(|i| i.data.clone())
            .unwrap_or_default())
    }

    fn exists(&self, path: &Path) -> bool {
        self.fs.lock().lookup(path).is_ok()
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let fs = self.fs.lock();
        let entries = fs.dirs.get(dir).ok_or_else(|| not_found(dir))?;
        Ok(entries.keys().cloned().collect())
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let mut fs = self.fs.lock();
        let (from_dir, from_name) = split(from)?;
        let (to_dir, to_name) = split(to)?;
        let id = fs
            .entries(&from_dir)?
            .remove(&from_name)
            .ok_or_else(|| not_found(from))?;
        fs.entries(&to_dir)?.insert(to_name, id);
        Ok(())
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        let mut fs = self.fs.lock();
        let (dir, name) = split(path)?;
        fs.entries(&dir)?
            .remove(&name)
            .map(drop)
            .ok_or_else(|| not_found(path))
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        let mut fs = self.fs.lock();
        let entries = fs.dirs.get(dir).cloned().ok_or_else(|| not_found(dir))?;
        fs.durable_dirs.insert(dir.to_path_buf(), entries);
        Ok(())
    }

    fn lock_dir(&self, dir: &Path) -> Result<DirLock, LockError> {
        let mut fs = self.fs.lock();
        if !fs.locks.insert(dir.to_path_buf()) {
            return Err(LockError::InUse(std::process::id().to_string()));
        }
        Ok(Box::new(SimLock {
            fs: Arc::downgrade(&self.fs),
            dir: dir.to_path_buf(),
            epoch: fs.epoch,
        }))
    }

    fn is_local(&self) -> bool {
        false
    }
}
