//! Engine-level durability tests: reopen equivalence, torn and damaged logs, the lock,
//! a failing disk, and snapshots taken while other threads write (their scheduling in
//! `scheduling`).

use std::path::{Path, PathBuf};

use super::record::SEGMENT_HEADER_LEN;
use super::wal::list_segments;
use crate::durability::{DurabilityOptions, FsyncPolicy, OpenError, RecoverMode};
use crate::{Engine, EngineOptions, Reply};

mod scheduling;

fn tmp(name: &str) -> PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let d = std::env::temp_dir().join(format!(
        "pion-durability-{name}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn options(dir: &Path) -> DurabilityOptions {
    DurabilityOptions::new(dir)
}

fn open(dir: &Path) -> Result<Engine, OpenError> {
    Engine::open_with(
        EngineOptions {
            disable_active_expiry: true,
            ..EngineOptions::default()
        },
        options(dir),
    )
}

fn open_with(dir: &Path, f: impl FnOnce(&mut DurabilityOptions)) -> Result<Engine, OpenError> {
    let mut o = options(dir);
    f(&mut o);
    Engine::open_with(
        EngineOptions {
            disable_active_expiry: true,
            ..EngineOptions::default()
        },
        o,
    )
}

fn run(e: &Engine, db: usize, args: &[&str]) -> Reply {
    e.execute(db, args)
}

/// Every key of every database with its type, content and deadline, in a canonical
/// order, through the public commands.
fn dump(e: &Engine) -> Vec<String> {
    let mut out = Vec::new();
    for db in 0..4 {
        let Reply::Array(keys) = run(e, db, &["KEYS", "*"]) else {
            panic!("KEYS failed");
        };
        let mut keys: Vec<String> = keys
            .into_iter()
            .map(|k| match k {
                Reply::Bulk(b) => String::from_utf8_lossy(&b).into_owned(),
                other => panic!("{other:?}"),
            })
            .collect();
        keys.sort();
        for k in keys {
            let t = run(e, db, &["TYPE", &k]);
            let content = match &t {
                Reply::Status(s) if s == "string" => run(e, db, &["GET", &k]),
                Reply::Status(s) if s == "hash" => sorted(run(e, db, &["HGETALL", &k])),
                Reply::Status(s) if s == "list" => run(e, db, &["LRANGE", &k, "0", "-1"]),
                Reply::Status(s) if s == "set" => sorted(run(e, db, &["SMEMBERS", &k])),
                _ => run(e, db, &["ZRANGE", &k, "0", "-1", "WITHSCORES"]),
            };
            let deadline = run(e, db, &["PEXPIRETIME", &k]);
            out.push(format!("{db} {k} {t:?} {content:?} {deadline:?}"));
        }
    }
    out
}

fn sorted(r: Reply) -> Reply {
    match r {
        Reply::Array(mut v) | Reply::Set(mut v) => {
            v.sort_by_key(|x| format!("{x:?}"));
            Reply::Array(v)
        }
        Reply::Map(mut v) => {
            v.sort_by_key(|x| format!("{x:?}"));
            Reply::Map(v)
        }
        other => other,
    }
}

fn populate(e: &Engine) {
    for i in 0..300 {
        let k = format!("k{i}");
        run(e, i % 3, &["SET", &k, &format!("v{i}")]);
        run(e, 0, &["HSET", "h", &format!("f{i}"), &i.to_string()]);
        run(e, 0, &["RPUSH", "l", &i.to_string()]);
        run(e, 1, &["SADD", "s", &(i * 7).to_string()]);
        run(e, 1, &["SADD", "words", &format!("w{i}")]);
        run(e, 2, &["ZADD", "z", &format!("{}.5", i % 17), &k]);
    }
    run(e, 0, &["PEXPIRE", "k0", "100000000"]);
    run(e, 0, &["SET", "ttl", "x", "EX", "5000"]);
    run(e, 0, &["INCRBYFLOAT", "f", "1.1"]);
    run(e, 0, &["HINCRBYFLOAT", "h", "float", "2.5"]);
    run(e, 1, &["SPOP", "words", "100"]);
    run(e, 1, &["SPOP", "s"]);
    run(e, 0, &["LPOP", "l", "3"]);
    run(e, 3, &["SET", "gone", "1"]);
    run(e, 3, &["FLUSHDB"]);
    run(e, 0, &["RENAME", "k3", "renamed"]);
    run(e, 2, &["ZINCRBY", "z", "-inf", "k2"]);
}

#[test]
fn reopen_restores_every_type_and_deadline() {
    let dir = tmp("reopen");
    let before = {
        let e = open(&dir).expect("open");
        populate(&e);
        dump(&e)
    };
    assert!(before.len() > 300);
    let e = open(&dir).expect("reopen from the log");
    assert_eq!(dump(&e), before);
    // A snapshot, more writes, and a reopen: snapshot plus log tail.
    assert_eq!(run(&e, 0, &["SAVE"]), Reply::ok());
    run(&e, 0, &["SET", "after", "snapshot"]);
    run(&e, 1, &["SPOP", "s", "3"]);
    let before = dump(&e);
    drop(e);
    let e = open(&dir).expect("reopen from snapshot and log");
    assert_eq!(dump(&e), before);
    let r = e.durability().expect("durable").recovery().clone();
    assert!(r.snapshot_keys > 0 && r.records >= 2, "{r:?}");
    drop(e);
    let _ = std::fs::remove_dir_all(&dir);
}

/// The newest segment file.
fn last_segment(dir: &Path) -> PathBuf {
    list_segments(&crate::storage::Local, dir)
        .expect("list")
        .last()
        .expect("a segment")
        .1
        .clone()
}

fn write_n(dir: &Path, n: usize) {
    let e = open(dir).expect("open");
    for i in 0..n {
        run(&e, 0, &["SET", &format!("k{i}"), &i.to_string()]);
    }
}

#[test]
fn a_torn_tail_is_truncated_and_everything_before_it_kept() {
    let dir = tmp("torn");
    write_n(&dir, 10);
    let seg = last_segment(&dir);
    let mut bytes = std::fs::read(&seg).expect("read");
    // Zero the end of the last record, as a crash during its write leaves it in the
    // zero-filled segment.
    let end = super::record::scan_segment(&bytes).records_end;
    bytes[end - 5..end].fill(0);
    std::fs::write(&seg, &bytes).expect("write");
    let e = open(&dir).expect("a torn tail does not stop start-up");
    let r = e.durability().expect("durable").recovery().clone();
    assert_eq!(r.records, 9);
    assert!(r.truncated_bytes > 0);
    assert_eq!(run(&e, 0, &["GET", "k8"]), Reply::bulk("8"));
    assert_eq!(run(&e, 0, &["GET", "k9"]), Reply::Null);
    // The log goes on from there.
    run(&e, 0, &["SET", "k9", "again"]);
    drop(e);
    let e = open(&dir).expect("reopen");
    assert_eq!(run(&e, 0, &["GET", "k9"]), Reply::bulk("again"));
    drop(e);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn damage_in_the_middle_stops_start_up_naming_file_and_offset() {
    let dir = tmp("corrupt");
    write_n(&dir, 10);
    let seg = last_segment(&dir);
    let mut bytes = std::fs::read(&seg).expect("read");
    // Flip a byte inside the third record's payload.
    let offset = super::record::scan_segment(&bytes).records[2].offset;
    bytes[offset + 20] ^= 0xff;
    std::fs::write(&seg, &bytes).expect("write");
    let err = open(&dir).err().expect("damage must stop start-up");
    let text = err.to_string();
    let OpenError::Damaged(damage) = &err else {
        panic!("not damage: {text}");
    };
    // The typed error carries the file and the offset the text names.
    assert_eq!(
        (damage.file(), damage.offset()),
        (seg.as_path(), Some(offset as u64)),
        "{text}"
    );
    assert!(text.contains(&seg.display().to_string()), "{text}");
    assert!(text.contains(&format!("offset {offset}")), "{text}");
    assert!(text.contains("--wal-recover truncate"), "{text}");
    // Nothing was changed by the failed start: the same error again.
    assert_eq!(open(&dir).err().map(|e| e.to_string()), Some(text));
    // Truncating keeps the two records before the damage.
    let e = open_with(&dir, |o| o.recover = RecoverMode::Truncate).expect("truncate");
    assert_eq!(run(&e, 0, &["DBSIZE"]), Reply::Integer(2));
    let r = e.durability().expect("durable").recovery().clone();
    assert_eq!(r.truncated_bytes as usize, bytes.len() - offset);
    drop(e);
    let e = open(&dir).expect("the truncated log is clean");
    assert_eq!(run(&e, 0, &["DBSIZE"]), Reply::Integer(2));
    drop(e);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_missing_segment_is_a_gap_not_a_silent_skip() {
    let dir = tmp("gap");
    {
        let e = open_with(&dir, |o| o.segment_bytes = 4096).expect("open");
        for i in 0..300 {
            run(&e, 0, &["SET", &format!("k{i}"), &"x".repeat(40)]);
        }
    }
    let segments = list_segments(&crate::storage::Local, &dir).expect("list");
    assert!(segments.len() >= 3);
    std::fs::remove_file(&segments[1].1).expect("remove");
    let text = open(&dir)
        .err()
        .expect("a gap must stop start-up")
        .to_string();
    assert!(text.contains("missing records"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_damaged_snapshot_is_named() {
    let dir = tmp("badsnap");
    {
        let e = open(&dir).expect("open");
        populate(&e);
        assert_eq!(run(&e, 0, &["SAVE"]), Reply::ok());
    }
    let (_, path) = super::snapshot::list_snapshots(&crate::storage::Local, &dir)
        .expect("list")
        .pop()
        .expect("a snapshot");
    let mut bytes = std::fs::read(&path).expect("read");
    let n = bytes.len();
    bytes[n / 2] ^= 1;
    std::fs::write(&path, bytes).expect("write");
    let err = open(&dir).err().expect("damaged snapshot");
    let text = err.to_string();
    assert!(text.contains(&path.display().to_string()), "{text}");
    // The typed error says which format and where: the section holding the flipped
    // byte starts at or before it.
    let crate::durability::OpenError::Damaged(crate::durability::RecoveryError::SnapshotDamaged {
        reason,
        ..
    }) = err
    else {
        panic!("not a damaged snapshot: {text}");
    };
    assert_eq!(reason.format, "snapshot", "{text}");
    assert!(
        reason.offset.is_some_and(|at| at <= (n / 2) as u64),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_crash_while_writing_a_snapshot_leaves_the_last_good_one() {
    let dir = tmp("snapcrash");
    let before = {
        let e = open(&dir).expect("open");
        populate(&e);
        assert_eq!(run(&e, 0, &["SAVE"]), Reply::ok());
        run(&e, 0, &["SET", "tail", "1"]);
        dump(&e)
    };
    // What a crash halfway through the next snapshot leaves behind.
    std::fs::write(dir.join("snapshot.tmp"), b"PIONSNP1 half written").expect("write");
    let e = open(&dir).expect("open");
    assert_eq!(dump(&e), before);
    assert!(!dir.join("snapshot.tmp").exists());
    drop(e);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_second_opener_gets_a_clear_error() {
    let dir = tmp("lock");
    let e = open(&dir).expect("open");
    // Same process: waits for a closing engine, then reports the holder.
    let err = open(&dir).err().expect("locked");
    assert!(matches!(err, OpenError::InUse(_)), "{err}");
    assert!(
        err.to_string().contains("in use by another process"),
        "{err}"
    );
    drop(e);
    assert!(open(&dir).is_ok(), "the lock goes with the engine");
    let _ = std::fs::remove_dir_all(&dir);
}

/// INFO persistence as text.
fn persistence(e: &Engine) -> String {
    match run(e, 0, &["INFO", "persistence"]) {
        Reply::Verbatim(_, b) | Reply::Bulk(b) => String::from_utf8_lossy(&b).into_owned(),
        other => panic!("{other:?}"),
    }
}

/// Waits until the engine healed `n` times (INFO says `disk_heals:n`).
fn wait_healed(e: &Engine, n: u64) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !persistence(e).contains(&format!("disk_heals:{n}\r\n")) {
        assert!(
            std::time::Instant::now() < deadline,
            "never healed: {}",
            persistence(e)
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

#[test]
fn a_failing_disk_refuses_writes_keeps_reads_and_loses_nothing_acknowledged() {
    let dir = tmp("diskfull");
    let (storage, faults) = crate::storage::Faulty::wrap(crate::storage::local());
    let e = open_with(&dir, |o| o.storage = storage.clone()).expect("open");
    run(&e, 0, &["SET", "a", "1"]);
    faults.fail_all(Some(28)); // ENOSPC
                               // The write that meets the full disk is not acknowledged.
    let r = run(&e, 0, &["SET", "b", "2"]);
    assert!(
        matches!(&r, Reply::Error(t) if t.starts_with("MISCONF Errors writing to the write-ahead log: write failed: No space left on device")),
        "{r:?}"
    );
    // Further writes are refused before they run; reads still work.
    let r = run(&e, 0, &["SET", "c", "3"]);
    assert!(
        matches!(&r, Reply::Error(t) if t.starts_with("MISCONF")),
        "{r:?}"
    );
    assert_eq!(run(&e, 0, &["GET", "a"]), Reply::bulk("1"));
    assert_eq!(run(&e, 0, &["GET", "c"]), Reply::Null);
    let info = persistence(&e);
    assert!(info.contains("wal_status:failed"), "{info}");
    assert!(info.contains("disk_state:failed"), "{info}");
    assert!(info.contains("aof_last_write_status:err"), "{info}");
    // Healing is tried, and fails while the disk does: writes stay refused.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while persistence(&e).contains("disk_heal_attempts:0\r\n") {
        assert!(std::time::Instant::now() < deadline, "healing never tried");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(matches!(run(&e, 0, &["SET", "c", "3"]), Reply::Error(t) if t.starts_with("MISCONF")));
    // The disk works again. A write that now succeeds proves nothing about the
    // failed file: writes are accepted only once the engine healed (a snapshot of
    // memory, b included, and a fresh segment).
    faults.fail_all(None);
    wait_healed(&e, 1);
    let info = persistence(&e);
    assert!(info.contains("disk_state:ok"), "{info}");
    assert_eq!(run(&e, 0, &["SET", "c", "3"]), Reply::ok());
    let before = dump(&e);
    drop(e);
    let e = open(&dir).expect("reopen");
    assert_eq!(dump(&e), before);
    assert_eq!(run(&e, 0, &["GET", "b"]), Reply::bulk("2"));
    drop(e);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_failed_fsync_is_never_forgotten_by_a_later_one_that_succeeds() {
    let dir = tmp("fsyncgate");
    let (storage, faults) = crate::storage::Faulty::wrap(crate::storage::local());
    let e = open_with(&dir, |o| {
        o.storage = storage.clone();
        o.fsync = FsyncPolicy::Always;
    })
    .expect("open");
    assert_eq!(run(&e, 0, &["SET", "a", "1"]), Reply::ok());
    faults.only_paths_containing("wal-");
    faults.fail_sync(1, 5); // EIO, once: the next fsync would succeed
    let r = run(&e, 0, &["SET", "b", "2"]);
    assert!(
        matches!(&r, Reply::Error(t) if t.contains("fsync failed: Input/output error")),
        "{r:?}"
    );
    // Nothing fails any more, yet writes wait for the heal, which writes everything
    // in memory into a new generation.
    wait_healed(&e, 1);
    let segments = list_segments(&crate::storage::Local, &dir).expect("list");
    assert_eq!(segments.len(), 1, "only the fresh segment: {segments:?}");
    assert_eq!(run(&e, 0, &["SET", "c", "3"]), Reply::ok());
    drop(e);
    let e = open(&dir).expect("reopen");
    for (k, v) in [("a", "1"), ("b", "2"), ("c", "3")] {
        assert_eq!(run(&e, 0, &["GET", k]), Reply::bulk(v), "{k}");
    }
    drop(e);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn fsync_policy_follows_config_set() {
    let dir = tmp("policy");
    let e = open_with(&dir, |o| o.fsync = FsyncPolicy::Always).expect("open");
    let wal = e.durability().expect("durable").wal();
    assert_eq!(wal.policy(), FsyncPolicy::Always);
    run(&e, 0, &["SET", "a", "1"]);
    assert_eq!(
        wal.synced_seq(),
        wal.appended_seq(),
        "always: synced before the reply"
    );
    assert_eq!(
        run(&e, 0, &["CONFIG", "SET", "appendfsync", "no"]),
        Reply::ok()
    );
    assert_eq!(wal.policy(), FsyncPolicy::No);
    assert_eq!(
        run(&e, 0, &["CONFIG", "GET", "appendonly"]),
        Reply::Map(vec![(Reply::bulk("appendonly"), Reply::bulk("yes"))])
    );
    drop(e);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn snapshots_under_concurrent_writes_lose_and_duplicate_nothing() {
    let dir = tmp("concurrent");
    let e = open(&dir).expect("open");
    // Snapshots taken so far: a writer waits for the first before its 1000th write
    // and for the second before its 2000th, so at least two fall amid the writes
    // however slowly a loaded machine takes them.
    let taken = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let writers: Vec<_> = (0..4)
        .map(|t| {
            let e = e.clone();
            let taken = std::sync::Arc::clone(&taken);
            std::thread::spawn(move || {
                for i in 0..3000 {
                    if i % 1000 == 0 && i > 0 {
                        let deadline =
                            std::time::Instant::now() + std::time::Duration::from_secs(60);
                        while taken.load(std::sync::atomic::Ordering::SeqCst) < i / 1000
                            && std::time::Instant::now() < deadline
                        {
                            std::thread::sleep(std::time::Duration::from_millis(1));
                        }
                    }
                    e.execute(0, &["RPUSH", &format!("list{t}"), &i.to_string()]);
                    e.execute(0, &["INCR", &format!("n{t}")]);
                    e.execute(
                        0,
                        &[
                            "HSET",
                            &format!("h{}", i % 50),
                            &format!("{t}"),
                            &i.to_string(),
                        ],
                    );
                }
            })
        })
        .collect();
    while writers.iter().any(|w| !w.is_finished()) {
        if run(&e, 0, &["SAVE"]) == Reply::ok() {
            taken.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }
    for w in writers {
        w.join().expect("writer");
    }
    let taken = taken.load(std::sync::atomic::Ordering::SeqCst);
    assert!(taken >= 2, "only {taken} snapshots during the writes");
    let before = dump(&e);
    drop(e);
    let e = open(&dir).expect("reopen");
    assert_eq!(dump(&e), before);
    for t in 0..4 {
        // Every push exactly once, in order.
        let want: Vec<Reply> = (0..3000).map(|i| Reply::bulk(i.to_string())).collect();
        assert_eq!(
            run(&e, 0, &["LRANGE", &format!("list{t}"), "0", "-1"]),
            Reply::Array(want)
        );
        assert_eq!(run(&e, 0, &["GET", &format!("n{t}")]), Reply::bulk("3000"));
    }
    // Only the newest snapshot and the log after it remain.
    let snaps = super::snapshot::list_snapshots(&crate::storage::Local, &dir).expect("list");
    assert_eq!(snaps.len(), 1);
    let first = list_segments(&crate::storage::Local, &dir).expect("list")[0].0;
    assert!(first <= snaps[0].0 + 1);
    drop(e);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_segment_with_only_a_torn_header_is_removed() {
    let dir = tmp("tornheader");
    write_n(&dir, 3);
    let seg = last_segment(&dir);
    let next = dir.join(super::wal::segment_name(4));
    std::fs::write(
        &next,
        &std::fs::read(&seg).expect("read")[..SEGMENT_HEADER_LEN / 2],
    )
    .expect("write");
    let e = open(&dir).expect("open");
    assert_eq!(run(&e, 0, &["DBSIZE"]), Reply::Integer(3));
    drop(e);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_failed_write_repeated_in_the_next_segment_is_not_damage() {
    use super::record::{encode_commands, frame, segment_header};
    use crate::util::codec::crc;
    let dir = tmp("retried");
    std::fs::create_dir_all(&dir).expect("mkdir");
    let record = |seq: u64, out: &mut Vec<u8>| {
        let argv = vec![
            b"SET".to_vec(),
            format!("k{seq}").into_bytes(),
            b"v".to_vec(),
        ];
        let mut payload = Vec::new();
        encode_commands(1, std::iter::once((0usize, argv.as_slice())), &mut payload);
        frame(seq, &payload, crc(&payload), out);
    };
    let mut first = segment_header(1).to_vec();
    for seq in 1..=3 {
        record(seq, &mut first);
    }
    // Half of record 4: the write that failed before the log rolled.
    let mut half = Vec::new();
    record(4, &mut half);
    first.extend_from_slice(&half[..half.len() / 2]);
    std::fs::write(dir.join(super::wal::segment_name(1)), &first).expect("write");
    let mut second = segment_header(4).to_vec();
    record(4, &mut second);
    record(5, &mut second);
    std::fs::write(dir.join(super::wal::segment_name(4)), &second).expect("write");
    let e = open(&dir).expect("nothing is missing");
    assert_eq!(run(&e, 0, &["DBSIZE"]), Reply::Integer(5));
    drop(e);
    // A torn record whose successor segment does not follow on is damage.
    let dir2 = tmp("retried-gap");
    std::fs::create_dir_all(&dir2).expect("mkdir");
    std::fs::write(dir2.join(super::wal::segment_name(1)), &first).expect("write");
    let mut later = segment_header(5).to_vec();
    record(5, &mut later);
    std::fs::write(dir2.join(super::wal::segment_name(5)), &later).expect("write");
    assert!(matches!(open(&dir2), Err(OpenError::Damaged(_))));
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(&dir2);
}

#[test]
fn always_writes_into_zero_filled_segments_and_recovers_from_them() {
    let dir = tmp("zerofilled");
    let before = {
        let e = open_with(&dir, |o| {
            o.fsync = FsyncPolicy::Always;
            o.segment_bytes = 64 << 10;
        })
        .expect("open");
        // The first segment is made full size, zero-filled.
        let seg = last_segment(&dir);
        assert_eq!(std::fs::metadata(&seg).expect("meta").len(), 64 << 10);
        for i in 0..2000 {
            run(&e, 0, &["SET", &format!("k{i}"), &"v".repeat(50)]);
        }
        dump(&e)
    };
    assert!(
        list_segments(&crate::storage::Local, &dir)
            .expect("list")
            .len()
            > 2,
        "segments rolled"
    );
    let e = open(&dir).expect("reopen");
    assert_eq!(dump(&e), before);
    let r = e.durability().expect("durable").recovery().clone();
    assert_eq!((r.records, r.truncated_bytes), (2000, 0));
    drop(e);
    let _ = std::fs::remove_dir_all(&dir);
}
