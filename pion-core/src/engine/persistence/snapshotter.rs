//! Taking a snapshot: the cut (every shard locked for a moment, the log rolled to a new
//! segment, every shard marked for capture), then the capture of each shard into the
//! snapshot file, then the clean-up of what the snapshot made redundant.

use std::sync::atomic::Ordering;
use std::time::Instant;

use super::snapshot::{list_snapshots, SnapshotWriter};
use super::turn::{Claim, Deferred, SnapshotKind, Waiting};
use crate::keyspace::{LockSet, SHARDS};
use crate::Engine;

/// What one snapshot did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotSummary {
    /// Log sequence number it covers.
    pub seq: u64,
    /// Keys written.
    pub keys: u64,
    /// File size.
    pub bytes: u64,
    /// How long every shard was held at the cut, µs.
    pub pause_us: u64,
    /// Total time, ms.
    pub duration_ms: u64,
}

/// Ends the cut however the snapshot ends, so no shard keeps being captured.
struct CutGuard<'a>(&'a Engine);

impl Drop for CutGuard<'_> {
    fn drop(&mut self) {
        self.0.keyspace().end_cut();
    }
}

/// Why a snapshot could not be taken or started.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SnapshotError {
    /// The engine runs without persistence.
    Off,
    /// A snapshot of this kind runs and the request does not wait for it.
    Running(SnapshotKind),
    /// The snapshot failed (I/O, or its thread could not start).
    Failed(String),
}

impl std::fmt::Display for SnapshotError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SnapshotError::Off => {
                f.write_str("persistence is off (--wal off): there is nothing to save to")
            }
            SnapshotError::Running(SnapshotKind::Save) => {
                f.write_str("Background save already in progress")
            }
            SnapshotError::Running(SnapshotKind::Rewrite) => {
                f.write_str("Background append only file rewriting already in progress")
            }
            SnapshotError::Failed(e) => f.write_str(e),
        }
    }
}

/// How a background request was answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackgroundStart {
    /// Its snapshot runs now, on its own thread.
    Started,
    /// It runs when the snapshot of the other kind that runs now ends.
    Scheduled,
}

/// Takes a snapshot in this thread (`SAVE`, `DEBUG RELOAD`, `SHUTDOWN SAVE`), waiting
/// for a running one as `waiting` says (see [`Waiting`]).
pub fn take_snapshot(engine: &Engine, waiting: Waiting) -> Result<SnapshotSummary, SnapshotError> {
    let d = engine.durability().ok_or(SnapshotError::Off)?;
    let claim = d
        .snapshots()
        .turn
        .claim(
            SnapshotKind::Save,
            waiting,
            crate::server::gate::exclusive_here(),
        )
        .map_err(SnapshotError::Running)?;
    run_claimed(engine, claim).map_err(SnapshotError::Failed)
}

/// Starts a snapshot of `kind` on its own thread unless one runs (the automatic
/// triggers, and `BGSAVE` without `SCHEDULE`).
pub fn start_background_snapshot(engine: &Engine, kind: SnapshotKind) -> Result<(), SnapshotError> {
    let d = engine.durability().ok_or(SnapshotError::Off)?;
    let claim = d
        .snapshots()
        .turn
        .claim(kind, Waiting::Never, false)
        .map_err(SnapshotError::Running)?;
    spawn(engine, claim)
}

/// Starts a snapshot of `kind` on its own thread, or schedules it behind a running
/// snapshot of the other kind (`BGSAVE SCHEDULE`, `BGREWRITEAOF`).
pub fn start_or_schedule(
    engine: &Engine,
    kind: SnapshotKind,
) -> Result<BackgroundStart, SnapshotError> {
    let d = engine.durability().ok_or(SnapshotError::Off)?;
    match d.snapshots().turn.claim_or_schedule(kind) {
        Deferred::Started(claim) => spawn(engine, claim).map(|()| BackgroundStart::Started),
        Deferred::Scheduled => Ok(BackgroundStart::Scheduled),
        Deferred::Refused(running) => Err(SnapshotError::Running(running)),
    }
}

/// Runs a claimed snapshot on a thread of its own.
fn spawn(engine: &Engine, claim: Claim) -> Result<(), SnapshotError> {
    // From the reply on, INFO counts the running time from now.
    mark_started(engine, claim);
    let runner = engine.clone();
    let spawned = std::thread::Builder::new()
        .name("pion-snapshot".into())
        .spawn(move || {
            let _ = run_claimed(&runner, claim);
        });
    spawned.map(drop).map_err(|e| {
        // The turn was taken for this snapshot: give it back.
        finish_turn(engine, claim);
        SnapshotError::Failed(format!("cannot start the snapshot thread: {e}"))
    })
}

/// Whether a snapshot continues the log, or starts a new generation of it: healing
/// after the disk failed, when no file written before may be trusted (see
/// [`super::health`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Generation {
    /// The log rolls to a new segment at the cut; segments the snapshot covers go.
    Continue,
    /// Payloads in untrusted block files are written again first; at the cut the
    /// queued records are dropped (the snapshot holds their effect); once the snapshot
    /// is durable every segment goes and the log restarts in a fresh one.
    Fresh,
}

/// Takes the snapshot of a granted turn, records how it went, and ends the turn.
fn run_claimed(engine: &Engine, claim: Claim) -> Result<SnapshotSummary, String> {
    run_claimed_as(engine, claim, Generation::Continue)
}

/// [`run_claimed`] for either kind of [`Generation`].
pub(crate) fn run_claimed_as(
    engine: &Engine,
    claim: Claim,
    generation: Generation,
) -> Result<SnapshotSummary, String> {
    let Some(d) = engine.durability() else {
        return Err("persistence is off".into());
    };
    let stats = d.snapshots();
    mark_started(engine, claim);
    let result = run(engine, claim, generation);
    let now = engine.now_ms();
    match &result {
        Ok(s) => {
            stats.last_failed.store(false, Ordering::Relaxed);
            stats.last_save_s.store(now / 1000, Ordering::Relaxed);
            stats
                .last_duration_ms
                .store(s.duration_ms, Ordering::Relaxed);
            stats.last_pause_us.store(s.pause_us, Ordering::Relaxed);
            stats.last_keys.store(s.keys, Ordering::Relaxed);
            stats.last_bytes.store(s.bytes, Ordering::Relaxed);
            stats.last_seq.store(s.seq, Ordering::Relaxed);
            stats.count.fetch_add(1, Ordering::Relaxed);
        }
        Err(e) => {
            crate::log_warning!("snapshot failed: {e}");
            stats.last_failed.store(true, Ordering::Relaxed);
            stats.last_failure_ms.store(now, Ordering::Relaxed);
        }
    }
    finish_turn(engine, claim);
    result
}

/// Records when the snapshot of a turn of its own started (`rdb_current_bgsave_time_sec`).
fn mark_started(engine: &Engine, claim: Claim) {
    if let (Claim::Own(_), Some(d)) = (claim, engine.durability()) {
        d.snapshots()
            .started_ms
            .store(engine.now_ms(), Ordering::Relaxed);
    }
}

/// Ends a turn, starting the snapshot that was scheduled behind it.
fn finish_turn(engine: &Engine, claim: Claim) {
    let Some(d) = engine.durability() else {
        return;
    };
    if let Some(next) = d.snapshots().turn.end(claim) {
        if let Err(e) = spawn(engine, next) {
            crate::log_warning!("the scheduled snapshot did not start: {e}");
        }
    }
}

fn run(engine: &Engine, claim: Claim, generation: Generation) -> Result<SnapshotSummary, String> {
    let started = Instant::now();
    let Some(d) = engine.durability() else {
        return Err("persistence is off".into());
    };
    let wal = d.wal();
    let ks = engine.keyspace();
    if generation == Generation::Fresh {
        crate::prefix::ops::rewrite_untrusted(engine.prefix())?;
    }
    // The cut: with every shard held, nothing is mid-command, so the keyspace is
    // exactly the effect of records 1..=seq.
    let (seq, pause_us, guard, prefix, search, libraries) = {
        // Never inside a transaction or script: their effects are logged as one record
        // when they end, so a cut between two of their commands would be replayed
        // twice.
        let _gate = engine.gate().enter_background();
        let all = ks.lock(&LockSet::All, 0);
        // The prompt cache logs its changes under its own lock: holding it too makes
        // its export the state at the same record (payloads are shared, not copied).
        let store = engine.prefix().lock();
        if generation == Generation::Fresh && crate::prefix::ops::needs_rewrite(&store) {
            return Err("prompt-cache payloads arrived that are not on disk yet".into());
        }
        let prefix = store.export();
        // Search indexes change only under shard locks: with every shard held, their
        // documents and graphs are those of this keyspace.
        let search = crate::index::persist::export(engine.search());
        // Function libraries change without shard locks, but are logged after they
        // change: a library loaded just before the cut and logged after it is
        // restored twice, and the second load fails harmlessly.
        let libraries = engine
            .scripting()
            .functions(|f| {
                Ok(if f.libs.is_empty() {
                    Vec::new()
                } else {
                    f.dump()
                })
            })
            .unwrap_or_default();
        let next = match generation {
            Generation::Continue => wal.roll().map_err(|e| e.to_string())?,
            Generation::Fresh => wal.begin_generation() + 1,
        };
        drop(store);
        ks.begin_cut(&all);
        let guard = CutGuard(engine);
        if let Claim::Own(_) = claim {
            // Still at the gate: a thread that holds it exclusively from now on finds
            // this snapshot past its cut, and may wait for it.
            d.snapshots().turn.cut_passed();
        }
        d.snapshots().wal_bytes_at_cut.store(
            wal.stats().bytes_written.load(Ordering::Relaxed),
            Ordering::Relaxed,
        );
        (
            next - 1,
            started.elapsed().as_micros() as u64,
            guard,
            prefix,
            search,
            libraries,
        )
    };
    let io = |e: std::io::Error| format!("cannot write the snapshot in {}: {e}", d.dir().display());
    let mut writer = SnapshotWriter::create(
        std::sync::Arc::clone(d.storage()),
        d.dir(),
        seq,
        engine.now_ms(),
        ks.databases(),
    )
    .map_err(io)?;
    let mut sections = 0;
    let mut keys_so_far = 0;
    let mut last_report = Instant::now();
    for idx in 0..SHARDS {
        for shard in ks.capture(idx) {
            writer
                .section(shard.shard, shard.keys, &shard.body)
                .map_err(io)?;
            sections += 1;
            keys_so_far += shard.keys;
        }
        if last_report.elapsed().as_secs() >= 1 {
            // A large keyspace takes a while: say how far it got.
            last_report = Instant::now();
            let secs = started.elapsed().as_secs_f64().max(1e-3);
            crate::log_notice!(
                "snapshot: {sections}/{SHARDS} shards, {keys_so_far} keys ({:.0} keys/s)",
                keys_so_far as f64 / secs
            );
        }
    }
    drop(guard);
    writer.prefix_section(&prefix).map_err(io)?;
    writer.search_section(&search).map_err(io)?;
    writer.functions_section(&libraries).map_err(io)?;
    drop(search);
    drop(prefix);
    if sections != SHARDS {
        return Err(format!("captured {sections} of {SHARDS} shards"));
    }
    // The prompt-cache section names payloads in the block files: they reach the disk
    // before the snapshot that names them is put in place (and the log it covers goes).
    let files = engine.prefix().lock().files().cloned();
    if let Some(files) = &files {
        match generation {
            Generation::Continue => files.sync(),
            Generation::Fresh => files.heal_sync_active(),
        }
        .map_err(io)?;
    }
    let (path, keys, bytes) = writer.finish().map_err(io)?;
    let storage = &**d.storage();
    if generation == Generation::Fresh {
        // Every segment holds records the snapshot covers, in files not trusted: they
        // go before the log starts again, so no restart ever reads them.
        for (_, p) in super::wal::list_segments(storage, d.dir()).map_err(io)? {
            storage.remove(&p).map_err(io)?;
        }
        storage.sync_dir(d.dir()).map_err(io)?;
        wal.start_generation(seq).map_err(|e| e.to_string())?;
    }
    // The new snapshot is durable: older ones and the log it covers can go.
    for (old, p) in list_snapshots(storage, d.dir()).map_err(io)? {
        if old < seq {
            let _ = storage.remove(&p);
        }
    }
    wal.remove_segments_before(seq + 1).map_err(io)?;
    // Block files emptied before the cut: no log record still to be replayed names them.
    if let Some(files) = files {
        if generation == Generation::Fresh {
            files.heal_finish().map_err(io)?;
        }
        files.delete_covered(seq).map_err(io)?;
    }
    let duration_ms = started.elapsed().as_millis() as u64;
    crate::log_notice!(
        "snapshot {} written: {keys} keys, {bytes} bytes, {duration_ms} ms \
         (cut pause {pause_us} µs)",
        path.display()
    );
    Ok(SnapshotSummary {
        seq,
        keys,
        bytes,
        pause_us,
        duration_ms,
    })
}
