//! Snapshot scheduling: SAVE against a running rewrite, the exclusive thread's
//! save at a parked snapshot's gate, deferred snapshots, and the save schedule on the
//! engine's clock.

use super::*;

/// Holds the execution gate exclusively on a thread of its own until the returned
/// sender is dropped, as a transaction would: a snapshot started meanwhile parks
/// before its cut.
fn hold_gate(e: &Engine) -> std::sync::mpsc::Sender<()> {
    let (held_tx, held_rx) = std::sync::mpsc::channel();
    let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
    let e = e.clone();
    std::thread::spawn(move || {
        let _x = e.gate().exclusive_unless_busy(0).expect("no script runs");
        held_tx.send(()).expect("test waits");
        let _ = release_rx.recv();
    });
    held_rx.recv().expect("gate taken");
    release_tx
}

fn snapshots_taken(e: &Engine) -> u64 {
    let d = e.durability().expect("persistence on");
    d.snapshots()
        .count
        .load(std::sync::atomic::Ordering::Relaxed)
}

/// Waits until no snapshot runs and `count` have been taken.
fn wait_snapshots(e: &Engine, count: u64) {
    let d = e.durability().expect("persistence on");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while d.snapshots().turn.running().is_some() || snapshots_taken(e) < count {
        assert!(
            std::time::Instant::now() < deadline,
            "snapshots still running: {:?}, {} taken",
            d.snapshots().turn.running(),
            snapshots_taken(e)
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

fn info_field(e: &Engine, name: &str) -> String {
    let d = e.durability().expect("persistence on");
    d.info_fields(crate::util::clock::system_unix_ms())
        .into_iter()
        .find(|(n, _)| *n == name)
        .map(|(_, v)| v)
        .unwrap_or_else(|| panic!("INFO persistence lacks {name}"))
}

#[test]
fn save_waits_for_a_running_rewrite_instead_of_failing() {
    use super::super::{start_background_snapshot, take_snapshot};
    use crate::durability::{SnapshotKind, Waiting};
    let dir = tmp("save-after-rewrite");
    let e = open(&dir).expect("open");
    populate(&e);
    let gate = hold_gate(&e);
    start_background_snapshot(&e, SnapshotKind::Rewrite).expect("nothing runs");
    // Reported from the moment it was asked for, so a client that polls INFO until
    // the rewrite is done never sees it done before it started.
    assert_eq!(info_field(&e, "aof_rewrite_in_progress"), "1");
    assert_eq!(info_field(&e, "rdb_bgsave_in_progress"), "0");
    let saver = {
        let e = e.clone();
        std::thread::spawn(move || take_snapshot(&e, Waiting::ForRewrite).map(|s| s.keys))
    };
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert!(
        !saver.is_finished(),
        "SAVE ended while the rewrite was parked"
    );
    drop(gate);
    let keys = saver
        .join()
        .expect("saver")
        .expect("SAVE waits, then saves");
    assert!(keys > 0);
    wait_snapshots(&e, 2);
    assert_eq!(info_field(&e, "aof_rewrite_in_progress"), "0");
    drop(e);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_exclusive_thread_saves_inside_a_snapshot_parked_at_its_gate() {
    use super::super::{start_background_snapshot, take_snapshot};
    use crate::durability::{SnapshotKind, Waiting};
    let dir = tmp("nested-save");
    let e = open(&dir).expect("open");
    populate(&e);
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    {
        let e = e.clone();
        std::thread::spawn(move || {
            // As `DEBUG RELOAD` inside the exclusive section, with a rewrite just
            // started: waiting for the rewrite would wait for this thread itself.
            let x = e.gate().exclusive_unless_busy(0).expect("no script runs");
            start_background_snapshot(&e, SnapshotKind::Rewrite).expect("nothing runs");
            let saved = take_snapshot(&e, Waiting::ForAny).map(|s| s.keys);
            drop(x);
            let _ = done_tx.send(saved);
        });
    }
    let saved = done_rx
        .recv_timeout(std::time::Duration::from_secs(60))
        .expect("the exclusive thread's snapshot never ended");
    assert!(saved.expect("saved") > 0);
    // The parked rewrite runs once the gate is free.
    wait_snapshots(&e, 2);
    drop(e);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_deferred_snapshot_follows_the_running_one_of_the_other_kind() {
    use super::super::{
        start_background_snapshot, start_or_schedule, BackgroundStart, SnapshotError,
    };
    use crate::durability::{SnapshotKind, Waiting};
    let dir = tmp("scheduled");
    let e = open(&dir).expect("open");
    populate(&e);
    let gate = hold_gate(&e);
    assert_eq!(
        start_or_schedule(&e, SnapshotKind::Save),
        Ok(BackgroundStart::Started)
    );
    assert_eq!(
        start_background_snapshot(&e, SnapshotKind::Rewrite),
        Err(SnapshotError::Running(SnapshotKind::Save))
    );
    assert_eq!(
        super::super::take_snapshot(&e, Waiting::ForRewrite).map(|s| s.keys),
        Err(SnapshotError::Running(SnapshotKind::Save))
    );
    assert_eq!(
        start_or_schedule(&e, SnapshotKind::Rewrite),
        Ok(BackgroundStart::Scheduled)
    );
    assert_eq!(
        start_or_schedule(&e, SnapshotKind::Save),
        Err(SnapshotError::Running(SnapshotKind::Save))
    );
    assert_eq!(info_field(&e, "rdb_bgsave_in_progress"), "1");
    assert_eq!(info_field(&e, "aof_rewrite_scheduled"), "1");
    drop(gate);
    wait_snapshots(&e, 2);
    assert_eq!(info_field(&e, "aof_rewrite_scheduled"), "0");
    drop(e);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_save_schedule_follows_the_engine_clock() {
    use std::time::Duration;
    let dir = tmp("schedule");
    let (clock, hand) = crate::util::clock::Clock::manual(1_700_000_000_000);
    let e = Engine::open_with(
        EngineOptions {
            disable_active_expiry: true,
            clock,
            ..EngineOptions::default()
        },
        options(&dir),
    )
    .expect("open");
    assert_eq!(run(&e, 0, &["CONFIG", "SET", "save", "60 1"]), Reply::ok());
    assert_eq!(run(&e, 0, &["SET", "k", "v"]), Reply::ok());
    let count = |e: &Engine| {
        persistence(e)
            .lines()
            .find_map(|l| {
                l.strip_prefix("snapshot_count:")?
                    .trim()
                    .parse::<u64>()
                    .ok()
            })
            .expect("snapshot_count")
    };
    // A change, but not 60 seconds yet: the keeper (every 50 ms) takes nothing.
    hand.advance(Duration::from_secs(59));
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(count(&e), 0);
    // Past the schedule's point: the next tick takes a snapshot.
    hand.advance(Duration::from_secs(2));
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while count(&e) == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "no scheduled snapshot"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let info = persistence(&e);
    assert!(info.contains("rdb_last_save_time:1700000061"), "{info}");
    assert!(info.contains("rdb_changes_since_last_save:0"), "{info}");
    drop(e);
    let _ = std::fs::remove_dir_all(&dir);
}
