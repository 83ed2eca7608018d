//! Start-up recovery: load the newest snapshot, then replay the log records after the
//! sequence number it covers, in order, at the times they originally ran.
//!
//! A record cut short at the very end of the newest segment is what a crash in the
//! middle of a write leaves: it was never acknowledged, so it is truncated (with a
//! warning saying how many bytes). Anything else that fails its checksum, or a gap in
//! the sequence numbers, stops start-up with an error naming the file and the offset;
//! `--wal-recover truncate` drops everything from there on instead, and says so.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::record::{decode_payload, scan_segment, Payload, ScanEnd};
use super::snapshot::{list_snapshots, SnapshotContents};
use super::wal::list_segments;
use super::{DurabilityOptions, OpenError, RecoverMode, Replayer};
use crate::clients::ClientState;
use crate::durability::{RecoveryError, RecoveryReport};
use crate::storage::{Open, Storage};
use crate::util::codec::DecodeError;
use crate::Engine;

/// Loads what a restart would recover (the newest snapshot, then the log after it)
/// into `engine`, whose keyspace, libraries and search indexes the caller emptied;
/// the prompt cache keeps what it holds. The caller holds the gate exclusively and
/// has written the log through to its files.
pub(crate) fn reload_in_place(
    engine: &Engine,
    options: &DurabilityOptions,
    replayer: &Replayer,
) -> Result<RecoveryReport, OpenError> {
    let started = Instant::now();
    let mut report = RecoveryReport::default();
    let storage = &*options.storage;
    let snapshots = list_snapshots(storage, &options.dir).map_err(|e| io_err(&options.dir, e))?;
    if let Some((seq, path)) = snapshots.last() {
        report.snapshot_keys = load_snapshot(engine, storage, path, Prefix::Keep, replayer)?;
        report.snapshot_seq = *seq;
    }
    replay_log(engine, options, Mode::InPlace, &mut report, replayer)?;
    report.elapsed_ms = started.elapsed().as_millis() as u64;
    Ok(report)
}

/// Prints progress at most once a second while a long step runs.
struct Progress {
    what: &'static str,
    unit: &'static str,
    started: Instant,
    last: Instant,
    done: u64,
}

impl Progress {
    fn new(what: &'static str, unit: &'static str) -> Progress {
        let now = Instant::now();
        Progress {
            what,
            unit,
            started: now,
            last: now,
            done: 0,
        }
    }

    fn tick(&mut self, n: u64) {
        self.done += n;
        if self.done.is_multiple_of(4096) && self.last.elapsed() >= Duration::from_secs(1) {
            self.last = Instant::now();
            self.report("");
        }
    }

    fn report(&self, suffix: &str) {
        let secs = self.started.elapsed().as_secs_f64().max(1e-6);
        crate::log_notice!(
            "{}: {} {} ({:.0} {}/s){suffix}",
            self.what,
            self.done,
            self.unit,
            self.done as f64 / secs,
            self.unit
        );
    }
}

fn io_err(path: &Path, e: std::io::Error) -> OpenError {
    OpenError::Io(format!("cannot read {}: {e}", path.display()))
}

/// Recovers `options.dir` into `engine` (whose keyspace is empty).
pub(crate) fn recover(
    engine: &Engine,
    options: &DurabilityOptions,
    replayer: &Replayer,
) -> Result<RecoveryReport, OpenError> {
    let started = Instant::now();
    let dir = &options.dir;
    let storage = &*options.storage;
    let mut report = RecoveryReport::default();
    let stale_tmp = dir.join("snapshot.tmp");
    if storage.exists(&stale_tmp) {
        // A snapshot that was being written when the process stopped: never complete.
        storage
            .remove(&stale_tmp)
            .map_err(|e| io_err(&stale_tmp, e))?;
    }
    let snapshots = list_snapshots(storage, dir).map_err(|e| io_err(dir, e))?;
    if let Some((seq, path)) = snapshots.last() {
        report.snapshot_keys = load_snapshot(engine, storage, path, Prefix::Load, replayer)?;
        report.snapshot_seq = *seq;
        for (_, older) in &snapshots[..snapshots.len() - 1] {
            // Superseded (the process stopped between writing the new one and
            // removing the old one).
            let _ = storage.remove(older);
        }
    }
    replay_log(engine, options, Mode::Startup, &mut report, replayer)?;
    report.elapsed_ms = started.elapsed().as_millis() as u64;
    if report.snapshot_seq > 0 || report.records > 0 {
        crate::log_notice!(
            "recovered {} keys from the snapshot and {} log records in {} ms",
            report.snapshot_keys,
            report.records,
            report.elapsed_ms
        );
    }
    Ok(report)
}

/// Whether loading a snapshot loads its prompt-cache section.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Prefix {
    /// At start-up, into the empty prompt cache.
    Load,
    /// Reloading in place: the prompt cache keeps what it holds (its blocks are
    /// already in their files).
    Keep,
}

/// Where a replay runs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Start-up: a torn tail is trimmed, damage is handled as `--wal-recover` says.
    Startup,
    /// Reloading a running server from its files (`DEBUG LOADAOF`): the log is being
    /// appended to, so nothing is trimmed, anything but a clean end is an error, and
    /// the prompt cache's records are skipped (it is not reloaded).
    InPlace,
}

fn load_snapshot(
    engine: &Engine,
    storage: &dyn Storage,
    path: &Path,
    prefix: Prefix,
    replayer: &Replayer,
) -> Result<u64, OpenError> {
    let bytes = storage.read(path).map_err(|e| io_err(path, e))?;
    let damaged = |reason: DecodeError| {
        OpenError::Damaged(RecoveryError::SnapshotDamaged {
            file: path.to_path_buf(),
            reason,
        })
    };
    let snap = SnapshotContents::parse(bytes).map_err(damaged)?;
    let databases = engine.keyspace().databases();
    if snap.databases > databases {
        return Err(OpenError::Damaged(RecoveryError::TooManyDatabases {
            file: path.to_path_buf(),
            found: snap.databases,
            configured: databases,
        }));
    }
    let limits = engine.config().encoding_limits();
    let mut progress = Progress::new("loading snapshot", "keys");
    let mut result = Ok(());
    snap.for_each_key(&limits, |k| {
        if result.is_err() {
            return;
        }
        let mut ks = engine.keyspace().lock_keys(&[&k.key], 0);
        result = ks
            .set(k.db, &k.key, k.value)
            .and_then(|()| ks.set_expire_at(k.db, &k.key, k.deadline).map(drop));
        progress.tick(1);
    })
    .map_err(damaged)?;
    result.map_err(|e| {
        damaged(DecodeError::new(
            "snapshot",
            format!("a key refused: {}", e.wire_text()),
        ))
    })?;
    if let (Some(body), Prefix::Load) = (snap.prefix_body(), prefix) {
        let blocks =
            crate::prefix::persist::load(&mut engine.prefix().lock(), body).map_err(damaged)?;
        crate::log_notice!("loaded {blocks} prompt-cache blocks from the snapshot");
    }
    // Search indexes last: their documents are the hashes just loaded.
    if let Some(body) = snap.search_body() {
        let n = crate::index::persist::restore(engine.search(), engine.keyspace(), body)
            .map_err(damaged)?;
        crate::log_notice!("loaded {n} search indexes from the snapshot");
    }
    if let Some(body) = snap.functions_body() {
        let mut client = ClientState::detached(engine.clients(), snap.created_ms);
        let argv = [
            b"FUNCTION".to_vec(),
            b"RESTORE".to_vec(),
            body.to_vec(),
            b"REPLACE".to_vec(),
        ];
        if let crate::Reply::Error(e) =
            (replayer.replay)(engine, &mut client, &argv, snap.created_ms)
        {
            return Err(damaged(DecodeError::new(
                "function libraries",
                e.to_string(),
            )));
        }
    }
    if progress.started.elapsed() >= Duration::from_secs(1) {
        progress.report(" done");
    }
    Ok(snap.keys)
}

/// The advice a damaged log error ends with.
fn truncate_hint(path: &Path, offset: usize, file_len: usize, later: usize) -> String {
    format!(
        "start with --wal-recover truncate to drop everything from {} offset {offset} on \
         ({} bytes in this file{})",
        path.display(),
        file_len - offset,
        if later > 0 {
            format!(" and {later} later segment file(s)")
        } else {
            String::new()
        }
    )
}

fn replay_log(
    engine: &Engine,
    options: &DurabilityOptions,
    mode: Mode,
    report: &mut RecoveryReport,
    replayer: &Replayer,
) -> Result<(), OpenError> {
    let dir = &options.dir;
    let storage = &*options.storage;
    let segments = list_segments(storage, dir).map_err(|e| io_err(dir, e))?;
    let base = report.snapshot_seq;
    let mut expected = base + 1;
    let mut client = ClientState::detached(engine.clients(), 0);
    client.authenticated = true;
    client.replaying = true;
    let mut progress = Progress::new("replaying the log", "records");
    let mut stop_after: Option<usize> = None;
    for (i, (first, path)) in segments.iter().enumerate() {
        if stop_after.is_some() {
            break;
        }
        let next_first = segments.get(i + 1).map(|(f, _)| *f);
        if next_first.is_some_and(|n| n <= base + 1) {
            continue; // Wholly covered by the snapshot.
        }
        let later = segments.len() - i - 1;
        let is_last = later == 0;
        let bytes = storage.read(path).map_err(|e| io_err(path, e))?;
        let scan = scan_segment(&bytes);
        if *first > expected {
            if mode == Mode::Startup && hold_no_record(storage, &segments[i..])? {
                // Segments made by a roll whose records never reached the disk, after
                // a tail that did not either: the machine stopped before the fsync
                // that covers them (which always fsyncs earlier segments first). No
                // record from here on was durable: the log ends at the last one.
                let dropped = drop_segments(storage, &segments[i..])?;
                crate::log_warning!(
                    "warning: the log ends at record {}: {} segment file(s) from {} on                      hold no record (never fsynced before the machine stopped);                      removing them ({dropped} bytes)",
                    expected - 1,
                    later + 1,
                    path.display()
                );
                report.truncated_bytes += dropped;
                break;
            }
            return Err(OpenError::Damaged(RecoveryError::MissingRecords {
                from: expected,
                to: first - 1,
                file: path.clone(),
                offset: None,
            }));
        }
        if scan.first_seq.is_some_and(|f| f != *first) {
            return Err(OpenError::Damaged(RecoveryError::MisnamedSegment {
                file: path.clone(),
                named: *first,
                header: scan.first_seq.unwrap_or_default(),
            }));
        }
        for rec in &scan.records {
            if rec.seq < expected {
                continue;
            }
            // The scanner checked the order within the file; this checks across files.
            if rec.seq != expected {
                return Err(OpenError::Damaged(RecoveryError::MissingRecords {
                    from: expected,
                    to: rec.seq - 1,
                    file: path.clone(),
                    offset: Some(rec.offset as u64),
                }));
            }
            apply(engine, &mut client, rec.payload, mode, report, replayer).map_err(|reason| {
                OpenError::Damaged(RecoveryError::BadRecord {
                    file: path.clone(),
                    offset: rec.offset as u64,
                    reason,
                })
            })?;
            expected += 1;
            progress.tick(1);
        }
        if mode == Mode::InPlace {
            if let ScanEnd::Torn { offset, .. } | ScanEnd::Corrupt { offset, .. } = scan.end {
                return Err(OpenError::Damaged(RecoveryError::LogDamaged {
                    file: path.clone(),
                    offset: offset as u64,
                    reason: None,
                    remedy: None,
                }));
            }
            continue;
        }
        match scan.end {
            ScanEnd::Clean => {
                if bytes.len() > scan.records_end && is_last {
                    // The zero-filled space the crashed process had not used yet.
                    cut(storage, path, scan.records_end)?;
                }
            }
            ScanEnd::Torn { offset, bytes: n } if is_last => {
                crate::log_warning!(
                    "warning: {} ends with a torn record (a write cut short by a crash, \
                     never acknowledged): truncating {n} bytes at offset {offset}",
                    path.display()
                );
                cut(storage, path, offset)?;
                report.truncated_bytes += n as u64;
            }
            ScanEnd::Torn { offset, bytes: n } if hold_no_record(storage, &segments[i + 1..])? => {
                // A torn record, and after it only segments whose records never
                // reached the disk: a tail cut short by the machine stopping, as in
                // the newest segment.
                crate::log_warning!(
                    "warning: {} ends with a torn record (a write cut short when the \
                     machine stopped, never acknowledged): truncating {n} bytes at offset \
                     {offset}, and the {later} later segment file(s), which hold no record",
                    path.display()
                );
                cut(storage, path, offset)?;
                report.truncated_bytes += n as u64 + drop_segments(storage, &segments[i + 1..])?;
                stop_after = Some(i);
            }
            ScanEnd::Torn { offset, bytes: n } if next_first == Some(expected) => {
                // A write that failed (disk full) and was retried in the next segment,
                // whose first record follows on exactly: nothing is missing.
                crate::log_warning!(
                    "note: {} ends with {n} bytes of a failed write that the next \
                     segment repeats; trimming them",
                    path.display()
                );
                cut(storage, path, offset)?;
            }
            ScanEnd::Torn { offset, .. } | ScanEnd::Corrupt { offset, .. } => {
                let reason = match scan.end {
                    ScanEnd::Corrupt { reason, .. } => reason,
                    _ => "incomplete record before the newest segment",
                };
                if options.recover == RecoverMode::Strict {
                    return Err(OpenError::Damaged(RecoveryError::LogDamaged {
                        file: path.clone(),
                        offset: offset as u64,
                        reason: Some(reason),
                        remedy: Some(truncate_hint(path, offset, bytes.len(), later)),
                    }));
                }
                let dropped_later = drop_segments(storage, &segments[i + 1..])?;
                crate::log_warning!(
                    "warning: --wal-recover truncate: {} damaged at offset {offset} \
                     ({reason}); dropping {} bytes there and {dropped_later} bytes in {later} \
                     later segment file(s)",
                    path.display(),
                    bytes.len() - offset
                );
                cut(storage, path, offset)?;
                report.truncated_bytes += (bytes.len() - offset) as u64 + dropped_later;
                stop_after = Some(i);
            }
        }
    }
    if progress.started.elapsed() >= Duration::from_secs(1) {
        progress.report(" done");
    }
    report.last_seq = expected - 1;
    Ok(())
}

fn apply(
    engine: &Engine,
    client: &mut ClientState,
    payload: &[u8],
    mode: Mode,
    report: &mut RecoveryReport,
    replayer: &Replayer,
) -> Result<(), DecodeError> {
    let bad = |what: String| DecodeError::new("log record", what);
    let Payload::Commands { time_ms, commands } =
        decode_payload(payload).map_err(|e| bad(format!("malformed record: {}", e.0)))?;
    let databases = engine.keyspace().databases();
    for c in commands {
        let db = c.db as usize;
        if db >= databases {
            return Err(bad(format!(
                "a record writes to database {db} but the server has {databases}; start \
                 with --databases {}",
                db + 1
            )));
        }
        if mode == Mode::InPlace && (replayer.is_prefix_cache_command)(&c.argv) {
            continue;
        }
        client.select(db);
        let reply = (replayer.replay)(engine, client, &c.argv, time_ms);
        if let crate::Reply::Error(e) = &reply {
            // A logged store whose payload cannot be read back is damage, not a
            // command that failed when it ran.
            if c.argv[0].eq_ignore_ascii_case(b"KV.PUTREF") {
                return Err(bad(format!("prompt-cache block unreadable: {e}")));
            }
            report.command_errors += 1;
        }
        report.commands += 1;
    }
    report.records += 1;
    Ok(())
}

/// Whether none of these segment files holds a valid record.
fn hold_no_record(storage: &dyn Storage, segments: &[(u64, PathBuf)]) -> Result<bool, OpenError> {
    for (_, p) in segments {
        let bytes = storage.read(p).map_err(|e| io_err(p, e))?;
        if !scan_segment(&bytes).records.is_empty() {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Cuts a segment file at `offset` (removing it when not even its header survives).
fn cut(storage: &dyn Storage, path: &Path, offset: usize) -> Result<(), OpenError> {
    let fail =
        |e: std::io::Error| OpenError::Io(format!("cannot truncate {}: {e}", path.display()));
    if offset < super::record::SEGMENT_HEADER_LEN {
        storage.remove(path).map_err(fail)?;
        if let Some(dir) = path.parent() {
            storage.sync_dir(dir).map_err(fail)?;
        }
    } else {
        let f = storage.open(path, Open::Existing).map_err(fail)?;
        f.set_len(offset as u64).map_err(fail)?;
        f.sync().map_err(fail)?;
    }
    Ok(())
}

fn drop_segments(storage: &dyn Storage, segments: &[(u64, PathBuf)]) -> Result<u64, OpenError> {
    let mut bytes = 0;
    for (_, p) in segments {
        bytes += storage
            .open(p, Open::Existing)
            .and_then(|f| f.len())
            .unwrap_or(0);
        storage
            .remove(p)
            .map_err(|e| OpenError::Io(format!("cannot remove {}: {e}", p.display())))?;
    }
    if let Some(dir) = segments.first().and_then(|(_, p)| p.parent()) {
        storage
            .sync_dir(dir)
            .map_err(|e| OpenError::Io(format!("cannot sync {}: {e}", dir.display())))?;
    }
    Ok(bytes)
}
