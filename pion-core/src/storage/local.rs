//! The real file system behind [`Storage`].

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;

use super::{DirLock, FileMap, LockError, Open, Storage, StoredFile};

/// Files on the local file system.
#[derive(Debug, Clone, Copy, Default)]
pub struct Local;

impl StoredFile for File {
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.write_all_at(buf, offset)
    }

    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.read_exact_at(buf, offset)
    }

    fn sync(&self) -> io::Result<()> {
        self.sync_data()
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        File::set_len(self, len)
    }

    fn len(&self) -> io::Result<u64> {
        Ok(self.metadata()?.len())
    }

    fn map(&self, len: u64) -> Option<FileMap> {
        let len = usize::try_from(len).ok().filter(|&l| l > 0)?;
        // SAFETY: a shared read-only mapping of this file. Its bytes may change or
        // vanish under it only if the file is written over or truncated while mapped:
        // the block files that are mapped are append-only and never truncated (a file
        // is only ever created afresh under a new number), and `FileMap` hands out
        // views only of ranges its caller has written. Pages past the file's end are
        // never read through a view.
        let map = unsafe { memmap2::MmapOptions::new().len(len).map(self) }.ok()?;
        Some(FileMap::new(map))
    }
}

impl Storage for Local {
    fn create_dir_all(&self, dir: &Path) -> io::Result<()> {
        std::fs::create_dir_all(dir)
    }

    fn open(&self, path: &Path, how: Open) -> io::Result<Arc<dyn StoredFile>> {
        let mut options = OpenOptions::new();
        options.read(true).write(true);
        if how == Open::Create {
            options.create(true).truncate(true);
        }
        Ok(Arc::new(options.open(path)?))
    }

    fn read(&self, path: &Path) -> io::Result<Vec<u8>> {
        std::fs::read(path)
    }

    fn exists(&self, path: &Path) -> bool {
        path.exists()
    }

    fn list(&self, dir: &Path) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(dir)? {
            if let Some(name) = entry?.file_name().to_str() {
                names.push(name.to_string());
            }
        }
        Ok(names)
    }

    fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        std::fs::rename(from, to)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        File::open(dir)?.sync_all()
    }

    fn lock_dir(&self, dir: &Path) -> Result<DirLock, LockError> {
        lock_dir(dir).map(|f| Box::new(f) as DirLock)
    }

    fn is_local(&self) -> bool {
        true
    }
}

/// Locks a data directory for this process: `dir/LOCK`, `flock`ed, holding our process
/// id. The kernel releases the lock however the holder ends, so a crash never leaves
/// a stale lock behind.
fn lock_dir(dir: &Path) -> Result<File, LockError> {
    let path = dir.join("LOCK");
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(&path)
        .map_err(LockError::Io)?;
    // An engine of this same process that is being dropped releases the lock when
    // its background threads let go of it (within one tick, or when a snapshot in
    // progress ends): wait for that rather than fail a close-then-reopen.
    let ours =
        || std::fs::read_to_string(&path).is_ok_and(|p| p.trim() == std::process::id().to_string());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    let locked = loop {
        match file.try_lock() {
            Err(std::fs::TryLockError::WouldBlock)
                if ours() && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            other => break other,
        }
    };
    match locked {
        Ok(()) => {}
        Err(std::fs::TryLockError::WouldBlock) => {
            let holder = std::fs::read_to_string(&path).unwrap_or_default();
            return Err(LockError::InUse(holder.trim().to_string()));
        }
        Err(std::fs::TryLockError::Error(e)) => return Err(LockError::Io(e)),
    }
    file.set_len(0).map_err(LockError::Io)?;
    writeln!(file, "{}", std::process::id()).map_err(LockError::Io)?;
    Ok(file)
}
