//! The log's background threads: the fsync thread that `appendfsync always` hands its
//! syncs to, and the keeper that does the periodic work (the once-a-second fsync under
//! `everysec`, finishing rolled segments, preparing the next one, retrying a failed
//! disk, and the automatic snapshot). Both hold only a weak handle on the engine, so
//! they end when it is dropped.

use std::sync::Arc;
use std::time::Duration;

use super::sync_signal::SyncSignal;
use super::wal::FsyncPolicy;
use crate::engine::WeakEngine;

/// Starts the fsync thread: event loops ask for a sync and go on serving other
/// clients while it runs (writes keep landing in the segment file meanwhile, so
/// batches overlap); it wakes them through the signal's listeners when it is done.
pub(crate) fn spawn_syncer(engine: WeakEngine, signal: Arc<SyncSignal>) {
    let spawned = std::thread::Builder::new()
        .name("pion-fsync".into())
        .spawn(move || {
            let mut done = 0;
            loop {
                let wanted = signal.wait(done, Duration::from_millis(100));
                let Some(engine) = engine.upgrade() else {
                    return;
                };
                let Some(d) = engine.durability() else {
                    return;
                };
                let wal = d.wal();
                if wanted > wal.synced_seq() && wal.failure().is_none() {
                    // A failure is recorded in the log's state; event loops retry it
                    // on their tick.
                    let _ = wal.sync_concurrently();
                    signal.set_in_flight(false);
                    signal.notify();
                } else {
                    signal.set_in_flight(false);
                }
                done = wanted;
            }
        });
    if let Err(e) = spawned {
        crate::log_warning!(
            "cannot start the fsync thread ({e}): replies under `always` wait for ticks"
        );
    }
}

/// Starts the keeper (every 50 ms).
pub(crate) fn spawn_keeper(engine: WeakEngine) {
    // When `everysec` last synced, on the engine's clock (a test's manual clock decides
    // when a second has passed): from now, not from whenever the thread first runs.
    let Some(mut last_sync) = engine.upgrade().map(|e| e.clock().now()) else {
        return;
    };
    let spawned = std::thread::Builder::new()
        .name("pion-log".into())
        .spawn(move || {
            let mut spare_failing = false;
            loop {
                std::thread::sleep(Duration::from_millis(50));
                let Some(engine) = engine.upgrade() else {
                    return;
                };
                let Some(d) = engine.durability() else {
                    return;
                };
                let wal = d.wal();
                // A failed disk is never written to again: heal (a snapshot of memory
                // and a fresh segment), retrying with a growing wait; nothing else
                // touches the disk until then.
                if !super::heal::attempt_if_due(&engine) {
                    continue;
                }
                // Failures below are recorded in the disk's state (INFO shows them).
                let now = engine.clock().now();
                if wal.policy() == FsyncPolicy::EverySec
                    && now.saturating_duration_since(last_sync) >= Duration::from_secs(1)
                {
                    let _ = wal.sync_all();
                    last_sync = now;
                }
                let _ = wal.finish_rolled();
                match wal.prepare_spare() {
                    Ok(()) => spare_failing = false,
                    // Not fatal: a roll then creates its segment itself.
                    Err(e) if !spare_failing => {
                        spare_failing = true;
                        crate::log_warning!("cannot prepare the next log segment: {e}");
                    }
                    Err(_) => {}
                }
                // Reclaim the space of evicted prompt-cache blocks, a bounded amount per
                // tick; emptied files go once a snapshot covers the log.
                let files = engine.prefix().lock().files().cloned();
                if let Some(files) = files {
                    if !files.compaction_candidates().is_empty() {
                        crate::prefix::ops::compact(
                            engine.prefix(),
                            d.wal(),
                            engine.now_ms(),
                            32 << 20,
                        );
                        if files.compaction_candidates().is_empty() {
                            // Only a snapshot lets the emptied files go: a rewrite.
                            let _ = super::start_background_snapshot(
                                &engine,
                                super::SnapshotKind::Rewrite,
                            );
                        }
                    }
                }
                let schedule = engine.config().with(|c| c.save.clone());
                // The log's growth asks for a rewrite, as Redis's auto-aof-rewrite does;
                // the `save` schedule for a save.
                if d.snapshot_due(engine.now_ms()) {
                    let _ = super::start_background_snapshot(&engine, super::SnapshotKind::Rewrite);
                } else if d.save_point_due(&schedule, engine.now_ms()) {
                    let _ = super::start_background_snapshot(&engine, super::SnapshotKind::Save);
                }
            }
        });
    if let Err(e) = spawned {
        crate::log_warning!("cannot start the log thread ({e}): no background fsync or snapshots");
    }
}
