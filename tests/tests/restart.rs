//! Restart equivalence: what a client can observe — every key of every database, its
//! type, full content and absolute expiry — is the same after a restart as before it,
//! whether the server stopped cleanly, was SIGKILLed, recovered from a snapshot plus the
//! log written after it, or was killed right after a BGSAVE taken while writes ran. The
//! data covers every type and encoding boundary, binary values, infinite and fractional
//! scores, and the commands whose log entry must not be the command itself (SPOP,
//! INCRBYFLOAT, relative expiry, SWAPDB, FLUSHDB), and in-place bitmap edits. Also: a second server on the same data
//! directory is refused while the first runs.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use pion_tests::dump::{assert_same, bulk, dump, integer, ok, Content, Dump, Dumped};
use pion_tests::{temp_dir, Client, PionProcess, RespValue};

#[path = "restart/data.rs"]
mod data;
use data::{ascii, more_writes, populate};

/// INFO persistence as text.
fn persistence(client: &mut Client) -> String {
    String::from_utf8_lossy(&bulk(&ok(client, &["INFO", "persistence"]))).into_owned()
}

fn unix_secs() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// Starts a server on a fresh directory and fills it.
fn populated(name: &str) -> (pion_tests::TempDir, PionProcess, Dump) {
    let dir = temp_dir(name);
    let server = PionProcess::start(dir.path(), &[]);
    let mut client = server.client();
    populate(&mut client, 7);
    let before = dump(&mut client);
    assert!(before.len() > 2000, "populated only {} keys", before.len());
    assert!(
        before.keys().any(|(db, _)| *db == 1) && before.keys().any(|(db, _)| *db == 2),
        "expected keys in several databases"
    );
    assert!(
        before.values().filter(|d| d.pexpiretime > 0).count() > 100,
        "expected keys with deadlines"
    );
    (dir, server, before)
}

#[test]
fn clean_shutdown_then_restart_keeps_everything() {
    let (dir, mut server, before) = populated("restart-clean");
    let info = persistence(&mut server.client());
    for field in [
        "rdb_bgsave_in_progress:0",
        "wal_enabled:1",
        "wal_fsync_policy:everysec",
    ] {
        assert!(
            info.contains(field),
            "INFO persistence lacks {field}:\n{info}"
        );
    }
    let status = server.shutdown();
    assert!(status.success(), "SHUTDOWN exit status {status}");
    let mut server = PionProcess::start(dir.path(), &[]);
    assert_same(
        "after SHUTDOWN and restart",
        &before,
        &dump(&mut server.client()),
    );

    // The same through SIGTERM, after more writes.
    more_writes(&mut server.client(), 11);
    let before = dump(&mut server.client());
    let status = server.terminate();
    assert!(status.success(), "SIGTERM exit status {status}");
    let server = PionProcess::start(dir.path(), &[]);
    assert_same(
        "after SIGTERM and restart",
        &before,
        &dump(&mut server.client()),
    );
}

#[test]
fn sigkill_then_restart_keeps_everything() {
    let (dir, mut server, before) = populated("restart-kill");
    server.kill9();
    let mut server = PionProcess::start(dir.path(), &[]);
    assert_same(
        "after SIGKILL and restart",
        &before,
        &dump(&mut server.client()),
    );
    // Recovering must leave a directory that recovers again, also after more writes.
    more_writes(&mut server.client(), 12);
    let before = dump(&mut server.client());
    server.kill9();
    let server = PionProcess::start(dir.path(), &[]);
    assert_same(
        "after a second SIGKILL and restart",
        &before,
        &dump(&mut server.client()),
    );
}

#[test]
fn snapshot_plus_log_tail_after_sigkill() {
    let (dir, mut server, _) = populated("restart-snapshot");
    let mut client = server.client();
    let started = unix_secs();
    assert_eq!(
        ok(&mut client, &["SAVE"]),
        RespValue::Line(b'+', b"OK".to_vec())
    );
    let lastsave = integer(&ok(&mut client, &["LASTSAVE"]));
    assert!(
        lastsave >= started - 1 && lastsave <= unix_secs() + 1,
        "LASTSAVE {lastsave} is not the time of the SAVE just done (~{started})"
    );
    more_writes(&mut client, 13);
    let before = dump(&mut client);
    server.kill9();
    let mut server = PionProcess::start(dir.path(), &[]);
    assert_same(
        "after SAVE, more writes, SIGKILL and restart",
        &before,
        &dump(&mut server.client()),
    );
    // A snapshot taken by a recovered server, then a log tail again.
    assert!(!ok(&mut server.client(), &["SAVE"]).is_error());
    more_writes(&mut server.client(), 14);
    let before = dump(&mut server.client());
    server.kill9();
    let server = PionProcess::start(dir.path(), &[]);
    assert_same(
        "after a second SAVE, more writes, SIGKILL and restart",
        &before,
        &dump(&mut server.client()),
    );
}

/// The writer's own keys: strings, lists, hashes and counters it keeps a model of.
fn writer_thread(port: u16, stop: Arc<AtomicBool>) -> (u64, Dump) {
    let mut client = Client::connect(port).expect("writer connects");
    ok(&mut client, &["SELECT", "5"]);
    let mut rng = SmallRng::seed_from_u64(99);
    let mut model: BTreeMap<Vec<u8>, Content> = BTreeMap::new();
    let mut writes = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let i = rng.gen_range(0..200);
        let (key, reply) = match rng.gen_range(0..4) {
            0 => {
                let key = format!("w:s{i}");
                let v = ascii(&mut rng, 40);
                let reply = client.cmd(&["SET", &key, &v]);
                model.insert(key.clone().into_bytes(), Content::Str(v.into_bytes()));
                (key, reply)
            }
            1 => {
                let key = format!("w:l{i}");
                let v = format!("x{writes}");
                let reply = client.cmd(&["RPUSH", &key, &v]);
                match model
                    .entry(key.clone().into_bytes())
                    .or_insert_with(|| Content::List(Vec::new()))
                {
                    Content::List(l) => l.push(v.into_bytes()),
                    _ => unreachable!("w:l keys are lists"),
                }
                (key, reply)
            }
            2 => {
                let key = format!("w:h{}", i % 20);
                let field = format!("f{i}");
                let v = writes.to_string();
                let reply = client.cmd(&["HSET", &key, &field, &v]);
                match model
                    .entry(key.clone().into_bytes())
                    .or_insert_with(|| Content::Hash(Vec::new()))
                {
                    Content::Hash(h) => {
                        h.retain(|(f, _)| f != field.as_bytes());
                        h.push((field.into_bytes(), v.into_bytes()));
                        h.sort();
                    }
                    _ => unreachable!("w:h keys are hashes"),
                }
                (key, reply)
            }
            _ => {
                let key = format!("w:n{}", i % 10);
                let reply = client.cmd(&["INCR", &key]);
                let entry = model
                    .entry(key.clone().into_bytes())
                    .or_insert_with(|| Content::Str(b"0".to_vec()));
                if let Content::Str(v) = entry {
                    let n: i64 = String::from_utf8_lossy(v).parse().unwrap_or(0);
                    *v = (n + 1).to_string().into_bytes();
                }
                (key, reply)
            }
        };
        assert!(
            !reply.is_error() && !matches!(reply, RespValue::Line(b'!', _)),
            "writer: write to {key} failed: {}",
            reply.render()
        );
        writes += 1;
    }
    let view = model
        .into_iter()
        .map(|(k, content)| {
            (
                (5, k),
                Dumped {
                    content,
                    pexpiretime: -1,
                },
            )
        })
        .collect();
    (writes, view)
}

fn wait_snapshot_done(client: &mut Client) -> String {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let info = persistence(client);
        assert!(
            info.contains("rdb_bgsave_in_progress:"),
            "INFO persistence lacks rdb_bgsave_in_progress:\n{info}"
        );
        if info.contains("rdb_bgsave_in_progress:0") {
            return info;
        }
        assert!(
            Instant::now() < deadline,
            "BGSAVE still running after 120 s:\n{info}"
        );
        thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn bgsave_during_writes_then_sigkill() {
    let (dir, mut server, _) = populated("restart-bgsave");
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (port, stop) = (server.port(), stop.clone());
        thread::spawn(move || writer_thread(port, stop))
    };
    thread::sleep(Duration::from_millis(100));
    let mut client = server.client();
    let reply = ok(&mut client, &["BGSAVE"]);
    assert_eq!(
        reply,
        RespValue::Line(b'+', b"Background saving started".to_vec())
    );
    let info = wait_snapshot_done(&mut client);
    assert!(
        info.contains("rdb_last_bgsave_status:ok"),
        "BGSAVE did not succeed:\n{info}"
    );
    // Writes continue past the snapshot, so recovery needs the log after it.
    thread::sleep(Duration::from_millis(200));
    stop.store(true, Ordering::Relaxed);
    let (writes, writer_view) = writer.join().expect("writer thread");
    assert!(writes > 0, "the writer wrote nothing");
    let before = dump(&mut client);
    for (key, expected) in &writer_view {
        assert_eq!(
            before.get(key),
            Some(expected),
            "before the kill, the server disagrees with the writer on {:?}",
            String::from_utf8_lossy(&key.1)
        );
    }
    server.kill9();
    let server = PionProcess::start(dir.path(), &[]);
    let after = dump(&mut server.client());
    for (key, expected) in &writer_view {
        assert_eq!(
            after.get(key),
            Some(expected),
            "after the restart, {:?} is not what the writer last wrote ({writes} writes)",
            String::from_utf8_lossy(&key.1)
        );
    }
    assert_same(
        "after BGSAVE during writes, SIGKILL and restart",
        &before,
        &after,
    );
}

#[test]
fn second_server_on_the_same_dir_is_refused() {
    let dir = temp_dir("restart-lock");
    let first = PionProcess::start(dir.path(), &[]);
    let mut client = first.client();
    ok(&mut client, &["SET", "owner", "first"]);
    match PionProcess::try_start(dir.path(), &[]) {
        Ok(mut second) => {
            second.kill9();
            panic!("a second pion-server started on a data directory in use");
        }
        Err(text) => assert!(
            text.to_lowercase().contains("lock"),
            "the refusal does not mention the lock:\n{text}"
        ),
    }
    assert_eq!(
        client.cmd(&["GET", "owner"]),
        RespValue::Bulk(b'$', Some(b"first".to_vec())),
        "the first server stopped serving"
    );
    ok(&mut client, &["SET", "owner", "still first"]);
    let mut fresh = first.client();
    assert_eq!(
        fresh.cmd(&["GET", "owner"]),
        RespValue::Bulk(b'$', Some(b"still first".to_vec()))
    );
}
