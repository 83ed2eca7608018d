//! Reloading the dataset in place. `DEBUG RELOAD` saves a snapshot, empties the
//! server and loads the snapshot back, as Redis saves, empties and loads its RDB file;
//! `DEBUG LOADAOF` empties the server and loads what a restart would (the newest
//! snapshot and the log after it), as Redis reloads its append-only file. Tests use
//! them to prove that every value survives the snapshot format and the log.
//!
//! The dataset is the keyspace, the function libraries and the search indexes. The
//! prompt cache is left as it is: its blocks live in their own files, and a reload
//! would only read back what it already holds.
//!
//! Runs with every other command stopped (the caller holds the gate exclusively), so
//! the snapshot it saves is exactly what memory holds and nothing is written between
//! the save and the load. When what memory holds afterwards is not what a restart
//! would recover (`NOSAVE` went back to an older snapshot, `NOFLUSH` merged one into
//! memory), a new snapshot is taken at the end, so a restart recovers what the reload
//! left.

use std::path::Path;

use super::snapshot::{list_snapshots, SnapshotContents};
use super::snapshotter::take_snapshot;
use super::turn::Waiting;
use super::Replayer;
use crate::clients::ClientState;
use crate::keyspace::LockSet;
use crate::storage::Storage;
use crate::Engine;

/// The options of `DEBUG RELOAD`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReloadOptions {
    /// Save a snapshot first (not `NOSAVE`): the reload then loads what memory holds.
    pub save: bool,
    /// Empty the server before loading (not `NOFLUSH`).
    pub flush: bool,
    /// A key or library present both in memory and in the snapshot takes the
    /// snapshot's version (`MERGE`); without it, such a duplicate fails the reload
    /// before anything changes.
    pub merge: bool,
}

impl Default for ReloadOptions {
    fn default() -> ReloadOptions {
        ReloadOptions {
            save: true,
            flush: true,
            merge: false,
        }
    }
}

/// Why a reload failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReloadError {
    /// The snapshot could not be taken; nothing changed.
    Save(String),
    /// The snapshot could not be loaded (missing, damaged, or a duplicate without
    /// `MERGE`); the text says why.
    Load(String),
}

/// What a reload did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReloadSummary {
    /// Keys loaded from the snapshot (keys already expired are skipped, as Redis
    /// skips them loading an RDB file).
    pub keys: u64,
    /// Log records replayed after the snapshot.
    pub records: u64,
    /// Whether a snapshot was taken afterwards to make the reload durable.
    pub resaved: bool,
}

/// Reloads the dataset of `engine` from its newest snapshot (saving one first unless
/// `options.save` is off). The caller holds the gate exclusively and no shard.
pub fn reload(
    engine: &Engine,
    options: ReloadOptions,
    now_ms: i64,
    replayer: &Replayer,
) -> Result<ReloadSummary, ReloadError> {
    let d = engine.durability().ok_or_else(|| {
        ReloadError::Save("persistence is off (--wal off): there is no snapshot to reload".into())
    })?;
    // A snapshot that is deleting what it covers would pull files from under the
    // load; one that has not cut yet waits at the gate this reload holds.
    d.snapshots().turn.wait_past_cuts();
    if options.save {
        take_snapshot(engine, Waiting::ForAny).map_err(|e| ReloadError::Save(e.to_string()))?;
    }
    let snap = read_newest(&**d.storage(), d.dir()).map_err(ReloadError::Load)?;
    let databases = engine.keyspace().databases();
    if snap.databases > databases {
        return Err(ReloadError::Load(format!(
            "the snapshot holds {} databases but the server has {databases}",
            snap.databases
        )));
    }
    let limits = engine.config().encoding_limits();
    if !options.flush && !options.merge {
        refuse_duplicate_keys(engine, &snap, &limits, now_ms)?;
    }
    if options.flush {
        empty(engine, now_ms);
    }
    if let Some(body) = snap.functions_body() {
        // Redis loads the libraries before the keys; APPEND refuses a library that
        // exists, before it changes anything.
        let policy: &[u8] = if options.merge || options.flush {
            b"REPLACE"
        } else {
            b"APPEND"
        };
        run_detached(
            engine,
            snap.created_ms,
            &[b"FUNCTION", b"RESTORE", body, policy],
            replayer,
        )
        .map_err(|e| ReloadError::Load(format!("function libraries: {e}")))?;
    }
    let keys = load_keys(engine, &snap, &limits, now_ms)?;
    if let Some(body) = snap.search_body() {
        let restored = if options.flush {
            crate::index::persist::restore(engine.search(), engine.keyspace(), body)
        } else {
            crate::index::persist::restore_missing(engine.search(), engine.keyspace(), body)
        };
        restored.map_err(|e| ReloadError::Load(e.to_string()))?;
    }
    let resaved = !(options.save && options.flush);
    if resaved {
        take_snapshot(engine, Waiting::ForAny).map_err(|e| {
            ReloadError::Load(format!(
                "reloaded, but the snapshot that makes the reload durable failed: {e}"
            ))
        })?;
    }
    Ok(ReloadSummary {
        keys,
        records: 0,
        resaved,
    })
}

/// Reloads the dataset of `engine` from its files as a restart would (`DEBUG LOADAOF`):
/// the log is written through, the server emptied, then the newest snapshot and the
/// log after it are loaded. Memory then holds exactly what is durable. The caller
/// holds the gate exclusively and no shard.
pub fn reload_from_log(
    engine: &Engine,
    now_ms: i64,
    replayer: &Replayer,
) -> Result<ReloadSummary, ReloadError> {
    let d = engine.durability().ok_or_else(|| {
        ReloadError::Save("persistence is off (--wal off): there is no log to reload".into())
    })?;
    d.snapshots().turn.wait_past_cuts();
    let wal = d.wal();
    wal.write_through(wal.appended_seq())
        .map_err(|e| ReloadError::Save(e.to_string()))?;
    empty(engine, now_ms);
    let mut options = super::DurabilityOptions::new(d.dir());
    options.storage = std::sync::Arc::clone(d.storage());
    let report = super::recovery::reload_in_place(engine, &options, replayer)
        .map_err(|e| ReloadError::Load(e.to_string()))?;
    Ok(ReloadSummary {
        keys: report.snapshot_keys,
        records: report.records,
        resaved: false,
    })
}

fn read_newest(storage: &dyn Storage, dir: &Path) -> Result<SnapshotContents, String> {
    let snapshots =
        list_snapshots(storage, dir).map_err(|e| format!("cannot list {}: {e}", dir.display()))?;
    let (_, path) = snapshots
        .last()
        .ok_or_else(|| format!("no snapshot in {} to load", dir.display()))?;
    let bytes = storage
        .read(path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    SnapshotContents::parse(bytes)
        .map_err(|e| format!("snapshot {} is damaged: {e}", path.display()))
}

/// Without `MERGE` or a flush, a key in both memory and the snapshot fails the reload
/// (Redis stops on a duplicated key); checked before anything changes.
fn refuse_duplicate_keys(
    engine: &Engine,
    snap: &SnapshotContents,
    limits: &crate::value::EncodingLimits,
    now_ms: i64,
) -> Result<(), ReloadError> {
    let mut duplicate = None;
    snap.for_each_key(limits, |k| {
        if duplicate.is_none() {
            let mut ks = engine.keyspace().lock_keys(&[&k.key], now_ms);
            if matches!(ks.exists(k.db, &k.key), Ok(true)) {
                duplicate = Some((k.db, k.key));
            }
        }
    })
    .map_err(|e| ReloadError::Load(e.to_string()))?;
    match duplicate {
        Some((db, key)) => Err(ReloadError::Load(format!(
            "the snapshot has the key '{}' in database {db}, which exists (MERGE replaces it)",
            String::from_utf8_lossy(&key)
        ))),
        None => Ok(()),
    }
}

/// Empties every database, the function libraries and the search indexes. Clients
/// watching a key that was live see their transaction fail, as after `FLUSHALL`.
fn empty(engine: &Engine, now_ms: i64) {
    let mut all = engine.keyspace().lock(&LockSet::All, now_ms);
    let watches = engine.watches();
    for (db, key) in watches.watched_keys() {
        let before = crate::clients::watch::Presence::of(&mut all, db, &key);
        watches.replaced(db, &key, before, crate::clients::watch::Presence::Absent);
    }
    for db in 0..engine.keyspace().databases() {
        // Every shard is held: flushing cannot fail.
        let _ = all.flush_db(db);
    }
    drop(all);
    engine.search().clear();
    engine.scripting().functions_flush();
}

/// Loads every key of the snapshot that has not expired, replacing a key of the same
/// name. Search indexes that exist (a reload without a flush) follow each key.
fn load_keys(
    engine: &Engine,
    snap: &SnapshotContents,
    limits: &crate::value::EncodingLimits,
    now_ms: i64,
) -> Result<u64, ReloadError> {
    let mut loaded = 0u64;
    let mut failed = None;
    snap.for_each_key(limits, |k| {
        if failed.is_some() || k.deadline.is_some_and(|at| at <= now_ms) {
            return;
        }
        let mut ks = engine.keyspace().lock_keys(&[&k.key], now_ms);
        let stored = ks
            .set(k.db, &k.key, k.value)
            .and_then(|()| ks.set_expire_at(k.db, &k.key, k.deadline).map(drop));
        match stored {
            Ok(()) => {
                engine.search().key_written(&mut ks, k.db, &k.key);
                loaded += 1;
            }
            Err(e) => failed = Some(format!("key '{}': {e:?}", String::from_utf8_lossy(&k.key))),
        }
    })
    .map_err(|e| ReloadError::Load(e.to_string()))?;
    match failed {
        Some(e) => Err(ReloadError::Load(e)),
        None => Ok(loaded),
    }
}

/// Runs one command as recovery does (nothing logged), for an internal client.
fn run_detached(
    engine: &Engine,
    now_ms: i64,
    argv: &[&[u8]],
    replayer: &Replayer,
) -> Result<(), String> {
    let mut client = ClientState::detached(engine.clients(), now_ms);
    client.authenticated = true;
    let argv: Vec<Vec<u8>> = argv.iter().map(|a| a.to_vec()).collect();
    match (replayer.replay)(engine, &mut client, &argv, now_ms) {
        crate::Reply::Error(e) => Err(e.to_string()),
        _ => Ok(()),
    }
}
