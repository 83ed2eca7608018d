//! `appendfsync always`: no reply to a write leaves before an fsync covers its log
//! record, whether the event loop fsyncs itself (nothing else to do) or hands the
//! fsync to the sync thread (other clients to serve), at one and at four threads.

use std::time::Duration;

use pion_tests::{Client, PionServer, RespValue};

fn ok() -> RespValue {
    RespValue::Line(b'+', b"OK".to_vec())
}

fn check(threads: usize) {
    let server = PionServer::start(threads);
    let mut admin = Client::connect(server.port).expect("connect");
    assert_eq!(admin.cmd(&["CONFIG", "SET", "appendfsync", "always"]), ok());
    let wal = server.engine.durability().expect("durable").wal();
    // One client, one write at a time: its record is the newest when the reply comes.
    let mut c = Client::connect(server.port).expect("connect");
    for i in 0..200 {
        let before = wal.appended_seq();
        assert_eq!(c.cmd(&["SET", &format!("k{i}"), "v"]), ok());
        assert!(
            wal.synced_seq() > before,
            "reply to write {i} left before its fsync (synced {} <= {before})",
            wal.synced_seq()
        );
    }
    // Clients writing at once (batches form, some fsyncs go to the sync thread): each
    // reply still follows the fsync of its own record.
    let writers: Vec<_> = (0..8)
        .map(|t| {
            let port = server.port;
            let engine = server.engine.clone();
            std::thread::spawn(move || {
                let wal = engine.durability().expect("durable").wal();
                let mut c = Client::connect(port).expect("connect");
                for i in 0..200 {
                    let before = wal.appended_seq();
                    assert_eq!(
                        c.cmd(&["RPUSH", &format!("l{t}"), &i.to_string()]),
                        ok_int(i + 1)
                    );
                    // This write's record comes after `before`, and its reply only
                    // after an fsync that covers it.
                    assert!(wal.synced_seq() > before, "reply left before its fsync");
                }
            })
        })
        .collect();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while writers.iter().any(|w| !w.is_finished()) {
        assert!(std::time::Instant::now() < deadline, "writers stalled");
        std::thread::sleep(Duration::from_millis(5));
    }
    for w in writers {
        w.join().expect("writer");
    }
    assert_eq!(
        wal.synced_seq(),
        wal.appended_seq(),
        "everything acknowledged is synced"
    );
    assert!(
        wal.stats()
            .fsyncs
            .load(std::sync::atomic::Ordering::Relaxed)
            > 0
    );
}

fn ok_int(n: i64) -> RespValue {
    RespValue::Line(b':', n.to_string().into_bytes())
}

#[test]
fn replies_follow_their_fsync_one_thread() {
    check(1);
}

#[test]
fn replies_follow_their_fsync_four_threads() {
    check(4);
}

/// A client that reads a write is not answered before that write's fsync either: no
/// client is shown data that a power loss could take back.
#[test]
fn reads_are_not_answered_ahead_of_the_fsync_of_what_they_show() {
    let server = PionServer::start(2);
    let mut admin = Client::connect(server.port).expect("connect");
    assert_eq!(admin.cmd(&["CONFIG", "SET", "appendfsync", "always"]), ok());
    let engine = server.engine.clone();
    let port = server.port;
    let writer = std::thread::spawn(move || {
        let mut c = Client::connect(port).expect("connect");
        for i in 0..500 {
            assert_eq!(c.cmd(&["SET", "shared", &i.to_string()]), ok());
        }
    });
    let wal = engine.durability().expect("durable").wal();
    let mut reader = Client::connect(server.port).expect("connect");
    while !writer.is_finished() {
        let before = wal.appended_seq();
        let _ = reader.cmd(&["GET", "shared"]);
        assert!(
            wal.synced_seq() >= before,
            "a read was answered before the fsync of writes it could see"
        );
    }
    writer.join().expect("writer");
}
