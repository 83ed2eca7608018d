//! Segment files on disk: their names, how a new one is made (zero-filled, so that
//! writes into it never change metadata and an fsync flushes data only), and the
//! segments the log has rolled away from.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::record::segment_header;
use crate::storage::{Open, Storage, StoredFile};

/// The file name of the segment whose first record is `first_seq`.
pub fn segment_name(first_seq: u64) -> String {
    format!("wal-{first_seq:020}.log")
}

/// The first sequence number a segment file name declares.
pub fn parse_segment_name(name: &str) -> Option<u64> {
    name.strip_prefix("wal-")?
        .strip_suffix(".log")?
        .parse()
        .ok()
}

/// The segment file being written.
pub(super) struct Segment {
    /// Shared so that an fsync can run without holding the segment lock.
    pub(super) file: Arc<dyn StoredFile>,
    /// Sequence number of its first record (its name and header say so).
    pub(super) first_seq: u64,
    /// Bytes of header and records (the rest of the file is zeros). A failed write may
    /// leave bytes past this point; the retry writes over them.
    pub(super) size: u64,
    /// Sequence number of the last record in this file.
    pub(super) last_seq: u64,
    /// Zero-filled bytes the file was made with: past them, writes would grow the file
    /// (and every fsync would flush metadata), so the log rolls first.
    pub(super) capacity: u64,
}

/// A segment the log rolled away from, not yet fsynced and trimmed to its records.
/// Rolling leaves both to the next sync, so a snapshot's cut never waits for an
/// fsync.
pub(super) struct Closed {
    pub(super) file: Arc<dyn StoredFile>,
    pub(super) size: u64,
    pub(super) path: PathBuf,
}

/// A zero-filled file made ahead of time, renamed into the next segment at a roll.
pub(super) struct Spare {
    pub(super) path: PathBuf,
    pub(super) file: Arc<dyn StoredFile>,
    pub(super) capacity: u64,
}

/// Name of the spare segment file (not a segment until renamed).
pub(super) const SPARE_NAME: &str = "wal-spare.tmp";

/// Name the spare has while it is zero-filled, before it is renamed to
/// [`SPARE_NAME`] (so a roll never takes a file still being written).
pub(super) const SPARE_MAKING_NAME: &str = "wal-spare-making.tmp";

/// The first segment after start-up is this size at most, so opening an engine never
/// waits for a full-size segment to be zero-filled; later ones come from the spare.
pub(super) const FIRST_SEGMENT_CAPACITY: u64 = 4 << 20;

/// Creates a file of `len` zero bytes, written out and fsynced (so that later writes
/// into it change no metadata).
pub(super) fn zero_filled(
    storage: &dyn Storage,
    path: &Path,
    len: u64,
) -> io::Result<Arc<dyn StoredFile>> {
    let file = storage.open(path, Open::Create)?;
    let chunk = vec![0u8; 1 << 20];
    let mut at = 0;
    while at < len {
        let n = (len - at).min(chunk.len() as u64) as usize;
        file.write_at(&chunk[..n], at)?;
        at += n as u64;
    }
    file.sync()?;
    Ok(file)
}

/// Starts a segment: the spare renamed into place when there is one, else a new file
/// (zero-filled to `capacity` bytes when `zero_fill`); then its header, durably (file
/// and directory entry).
///
/// Zero-filling pays off only when every batch is fsynced (`always`): under the other
/// policies a segment starts empty and grows, and `capacity` is only where it rolls.
pub(super) fn new_segment(
    storage: &dyn Storage,
    dir: &Path,
    first_seq: u64,
    spare: Option<Spare>,
    capacity: u64,
    zero_fill: bool,
) -> io::Result<Segment> {
    let path = dir.join(segment_name(first_seq));
    let header_len = super::record::SEGMENT_HEADER_LEN as u64;
    let (file, capacity) = match spare {
        Some(s) if s.capacity >= capacity.min(FIRST_SEGMENT_CAPACITY) => {
            storage.rename(&s.path, &path)?;
            (s.file, s.capacity)
        }
        _ if zero_fill => {
            let capacity = capacity.max(header_len);
            (zero_filled(storage, &path, capacity)?, capacity)
        }
        _ => (storage.open(&path, Open::Create)?, capacity.max(header_len)),
    };
    file.write_at(&segment_header(first_seq), 0)?;
    file.sync()?;
    storage.sync_dir(dir)?;
    Ok(Segment {
        file,
        first_seq,
        size: super::record::SEGMENT_HEADER_LEN as u64,
        last_seq: first_seq - 1,
        capacity,
    })
}

/// Segment files of a directory, ordered by their first sequence number.
pub fn list_segments(storage: &dyn Storage, dir: &Path) -> io::Result<Vec<(u64, PathBuf)>> {
    crate::storage::list_numbered(storage, dir, parse_segment_name)
}
