//! The engine's life on disk: opening a data directory (recovery into the engine,
//! then the log started where it ended), snapshots, reloads, healing after the disk
//! failed, and the background threads that sync the log and take snapshots. The
//! formats and the log itself are [`durability`](crate::durability)'s; this is the
//! part that works on the whole engine and replays commands through the dispatcher.

pub(crate) mod background;
mod heal;
mod recovery;
pub mod reload;
mod snapshotter;

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::durability::{
    lock_dir, record, snapshot, sync_signal, turn, wal, DiskHealth, Durability, DurabilityOptions,
    OpenError, RecoverMode, SnapshotKind, SnapshotStats, Wal,
};
use crate::Engine;

/// How recovery and reloads run logged commands: through the dispatcher, which sits
/// above this layer and hands these in.
#[derive(Clone, Copy)]
pub struct Replayer {
    /// Runs one logged command for a client, at the time it first ran; nothing is
    /// logged or counted.
    pub replay: fn(&Engine, &mut crate::clients::ClientState, &[Vec<u8>], i64) -> crate::Reply,
    /// Whether a command is a prompt-cache one (an in-place reload skips those: the
    /// store keeps what it holds).
    pub is_prefix_cache_command: fn(&[Vec<u8>]) -> bool,
}

pub use snapshotter::{
    start_background_snapshot, start_or_schedule, take_snapshot, BackgroundStart, SnapshotError,
    SnapshotSummary,
};

/// Opens a data directory: lock it, recover its contents into `engine`, and start the
/// log where recovery ended.
pub(crate) fn open(
    engine: &Engine,
    options: &DurabilityOptions,
    replayer: &Replayer,
) -> Result<Durability, OpenError> {
    let dir = &options.dir;
    let storage = &options.storage;
    storage
        .create_dir_all(dir)
        .map_err(|e| OpenError::Io(format!("cannot create {}: {e}", dir.display())))?;
    let lock = lock_dir(&**storage, dir)?;
    let health = Arc::new(DiskHealth::default());
    // Prompt-cache payloads live in block files that log records and snapshots name.
    let files = std::sync::Arc::new(
        crate::prefix::blockfile::BlockFiles::open(
            Arc::clone(storage),
            Arc::clone(&health),
            dir,
            options.block_file_bytes,
        )
        .map_err(|e| {
            OpenError::Io(format!(
                "cannot open the block files in {}: {e}",
                dir.display()
            ))
        })?,
    );
    {
        let mut store = engine.prefix().lock();
        store.set_files(std::sync::Arc::clone(&files));
        engine.set_block_files(std::sync::Arc::clone(&files));
        // Exported prefixes are derived files that other processes map: only on the
        // local file system, and whatever an earlier run left is stale.
        if storage.is_local() {
            let exports = crate::prefix::export::Exports::open(dir).map_err(|e| {
                OpenError::Io(format!(
                    "cannot prepare {}: {e}",
                    dir.join(crate::prefix::export::DIR).display()
                ))
            })?;
            store.set_exports(exports);
        }
    }
    let recovery = recovery::recover(engine, options, replayer)?;
    // Files nothing references any more are deleted after the next snapshot.
    files.retire_empty(recovery.last_seq);
    let wal = Wal::create(
        Arc::clone(storage),
        health,
        dir,
        recovery.last_seq + 1,
        options.fsync,
        options.segment_bytes,
    )
    .map_err(|e| OpenError::Io(format!("cannot start the log in {}: {e}", dir.display())))?;
    // Payloads reach the disk before any log record that names them is fsynced.
    wal.set_companion(Box::new(move || files.sync()));
    let snapshots = SnapshotStats::default();
    snapshots
        .last_save_s
        .store(engine.now_ms() / 1000, Ordering::Relaxed);
    snapshots
        .last_seq
        .store(recovery.snapshot_seq, Ordering::Relaxed);
    Ok(Durability::new(
        dir.clone(),
        Arc::clone(storage),
        wal,
        lock,
        options.snapshot_after_bytes,
        snapshots,
        recovery,
    ))
}

#[cfg(test)]
mod power_cut;
#[cfg(test)]
mod tests;
