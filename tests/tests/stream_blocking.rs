//! A client blocked in `XREADGROUP … BLOCK` whose stream goes away (DEL, FLUSHALL) is
//! unblocked with Redis's `UNBLOCKED the stream key no longer exists`; one whose group
//! goes away (XGROUP DESTROY) with `NOGROUP`. Redis's own units send the deletion
//! without waiting for the client to block; here the test waits for it.

use std::time::{Duration, Instant};

use pion_tests::{temp_dir, Client, PionProcess, RespValue};

fn blocked_clients(c: &mut Client) -> i64 {
    let RespValue::Bulk(_, Some(info)) = c.cmd(&["INFO", "clients"]) else {
        panic!("INFO clients");
    };
    String::from_utf8_lossy(&info)
        .lines()
        .find_map(|l| l.strip_prefix("blocked_clients:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("blocked_clients in INFO")
}

/// Blocks a second client in XREADGROUP on `mystream`, runs `then` on the first once
/// it is blocked, and returns what the blocked client got.
fn unblocked_by(server: &PionProcess, then: &[&str]) -> String {
    let mut c = server.client();
    c.cmd(&["DEL", "mystream"]);
    c.cmd(&["XADD", "mystream", "666", "f", "v"]);
    assert_eq!(
        c.cmd(&["XGROUP", "CREATE", "mystream", "mygroup", "$"])
            .render(),
        "+OK"
    );
    let mut rd = server.client();
    rd.send_raw(&Client::encode(&[
        "XREADGROUP",
        "GROUP",
        "mygroup",
        "Alice",
        "BLOCK",
        "0",
        "STREAMS",
        "mystream",
        ">",
    ]))
    .expect("send");
    let start = Instant::now();
    while blocked_clients(&mut c) < 1 {
        assert!(start.elapsed() < Duration::from_secs(10), "never blocked");
        std::thread::sleep(Duration::from_millis(5));
    }
    c.cmd(then);
    rd.set_read_timeout(Duration::from_secs(10))
        .expect("timeout");
    rd.read_reply().expect("a reply").0.render()
}

#[test]
fn a_blocked_xreadgroup_learns_its_stream_or_group_is_gone() {
    let dir = temp_dir("stream-blocking");
    let server = PionProcess::start(dir.path(), &["--wal", "off"]);
    assert_eq!(
        unblocked_by(&server, &["DEL", "mystream"]),
        "-UNBLOCKED the stream key no longer exists"
    );
    assert_eq!(
        unblocked_by(&server, &["FLUSHALL"]),
        "-UNBLOCKED the stream key no longer exists"
    );
    assert_eq!(
        unblocked_by(&server, &["XGROUP", "DESTROY", "mystream", "mygroup"]),
        "-NOGROUP the consumer group this client was blocked on no longer exists"
    );
}
