//! Segment files on disk: their names, how a new one is made (zero-filled, so that
//! writes into it never change metadata and an fsync flushes data only), and the
//! segments the log has rolled away from.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::record::segment_header;

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
    pub(super) file: Arc<File>,
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
    pub(super) file: Arc<File>,
    pub(super) size: u64,
}

/// A zero-filled file made ahead of time, renamed into the next segment at a roll.
pub(super) struct Spare {
    pub(super) path: PathBuf,
    pub(super) file: Arc<File>,
    pub(super) capacity: u64,
}

/// Name of the spare segment file (not a segment until renamed).
pub(super) const SPARE_NAME: &str = "wal-spare.tmp";

/// The first segment after start-up is this size at most, so opening an engine never
/// waits for a full-size segment to be zero-filled; later ones come from the spare.
pub(super) const FIRST_SEGMENT_CAPACITY: u64 = 4 << 20;

/// Creates a file of `len` zero bytes, written out and fsynced (so that later writes
/// into it change no metadata).
pub(super) fn zero_filled(path: &Path, len: u64) -> io::Result<File> {
    let mut file = OpenOptions::new()
        .create(true)
        .truncate(true)
        .read(true)
        .write(true)
        .open(path)?;
    let chunk = vec![0u8; 1 << 20];
    let mut left = len;
    while left > 0 {
        let n = left.min(chunk.len() as u64) as usize;
        file.write_all(&chunk[..n])?;
        left -= n as u64;
    }
    file.sync_all()?;
    Ok(file)
}

/// Starts a segment: the spare renamed into place when there is one, else a new file
/// (zero-filled to `capacity` bytes when `zero_fill`); then its header, durably (file
/// and directory entry).
///
/// Zero-filling pays off only when every batch is fsynced (`always`): under the other
/// policies a segment starts empty and grows, and `capacity` is only where it rolls.
pub(super) fn new_segment(
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
            std::fs::rename(&s.path, &path)?;
            (s.file, s.capacity)
        }
        _ if zero_fill => {
            let capacity = capacity.max(header_len);
            (Arc::new(zero_filled(&path, capacity)?), capacity)
        }
        _ => {
            let file = OpenOptions::new()
                .create(true)
                .truncate(true)
                .read(true)
                .write(true)
                .open(&path)?;
            (Arc::new(file), capacity.max(header_len))
        }
    };
    file.write_all_at(&segment_header(first_seq), 0)?;
    file.sync_data()?;
    sync_dir(dir)?;
    Ok(Segment {
        file,
        first_seq,
        size: super::record::SEGMENT_HEADER_LEN as u64,
        last_seq: first_seq - 1,
        capacity,
    })
}

/// Segment files of a directory, ordered by their first sequence number.
pub fn list_segments(dir: &Path) -> io::Result<Vec<(u64, PathBuf)>> {
    list_numbered(dir, parse_segment_name)
}

/// The files of a directory whose names `parse` reads a number from, ordered by it.
pub(super) fn list_numbered(
    dir: &Path,
    parse: fn(&str) -> Option<u64>,
) -> io::Result<Vec<(u64, PathBuf)>> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if let Some(n) = entry.file_name().to_str().and_then(parse) {
            out.push((n, entry.path()));
        }
    }
    out.sort();
    Ok(out)
}

/// fsyncs a directory, so the files created or renamed in it survive a power loss.
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}
