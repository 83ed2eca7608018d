//! Unmodified clients against Pion: `redis-cli` gives the same output as against
//! redis-server for the same input, and raw protocol edge cases behave like Redis.

use std::io::Write;
use std::process::{Command, Stdio};

use pion_tests::{Client, PionServer, RedisServer};

fn redis_cli(port: u16, input: &str, resp3: bool) -> String {
    let mut cmd = Command::new("redis-cli");
    cmd.args(["-p", &port.to_string()]);
    if resp3 {
        cmd.arg("-3");
    }
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("redis-cli must be installed (redis-tools)");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes())
        .expect("write");
    let out = child.wait_with_output().expect("redis-cli output");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn redis_cli_output_matches() {
    let redis = RedisServer::start();
    let pion = PionServer::start(1);
    let script = "FLUSHALL\nSET greeting hello\nGET greeting\nINCR n\nINCRBYFLOAT f 0.1\nDEL greeting nope\nGET missing\nPING\nECHO \"a b\"\nNOSUCHCOMMAND x\nSELECT 99\nCOMMAND GETKEYS SET a b\nTYPE n\n";
    for resp3 in [false, true] {
        assert_eq!(
            redis_cli(pion.port, script, resp3),
            redis_cli(redis.port, script, resp3),
            "resp3={resp3}"
        );
    }
}

#[test]
fn protocol_errors_match_redis_and_close() {
    let redis = RedisServer::start();
    let pion = PionServer::start(1);
    let cases: &[&[u8]] = &[
        b"*1\r\n+PING\r\n",
        b"*-x\r\n",
        b"*2\r\n$3\r\nGET\r\n$-5\r\n",
        b"*1\r\n$999999999999\r\n",
        b"ECHO \"unbalanced\r\n",
        b"*3000000000\r\n",
    ];
    for case in cases {
        let mut replies = Vec::new();
        for port in [redis.port, pion.port] {
            let mut c = Client::connect(port).expect("connect");
            c.send_raw(case).expect("send");
            let first = c.read_reply().map(|(_, raw)| raw).unwrap_or_default();
            let closed = c.call(&["PING"]).is_err();
            replies.push((String::from_utf8_lossy(&first).into_owned(), closed));
        }
        assert_eq!(
            replies[0],
            replies[1],
            "case {:?}",
            String::from_utf8_lossy(case)
        );
    }
}

#[test]
fn inline_commands_and_deep_pipelines() {
    let pion = PionServer::start(2);
    let mut c = Client::connect(pion.port).expect("connect");
    c.send_raw(b"SET a 1\r\nINCR a\r\nGET a\r\n").expect("send");
    let replies: Vec<String> = (0..3)
        .map(|_| String::from_utf8_lossy(&c.read_reply().expect("reply").1).into_owned())
        .collect();
    assert_eq!(replies, vec!["+OK\r\n", ":2\r\n", "$1\r\n2\r\n"]);
    let mut batch = Vec::new();
    for i in 0..20000 {
        batch.extend_from_slice(&Client::encode(&["SET", &format!("p{i}"), &i.to_string()]));
    }
    c.send_raw(&batch).expect("send pipeline");
    for _ in 0..20000 {
        assert_eq!(c.read_reply().expect("reply").1, b"+OK\r\n");
    }
    assert_eq!(
        c.cmd(&["DBSIZE"]),
        pion_tests::RespValue::Line(b':', b"20001".to_vec())
    );
}

#[test]
fn quit_replies_then_closes_like_redis() {
    let redis = RedisServer::start();
    let pion = PionServer::start(1);
    for port in [redis.port, pion.port] {
        let mut c = Client::connect(port).expect("connect");
        let (_, raw) = c.call(&["QUIT"]).expect("reply");
        assert_eq!(raw, b"+OK\r\n");
        assert!(
            c.call(&["PING"]).is_err(),
            "connection must be closed after QUIT"
        );
    }
}

#[test]
fn shutdown_stops_the_server() {
    let pion = PionServer::start(2);
    let mut c = Client::connect(pion.port).expect("connect");
    c.send_raw(&Client::encode(&["SHUTDOWN", "NOSAVE"]))
        .expect("send");
    // Like Redis, a successful SHUTDOWN closes the connection without a reply, and
    // only once the server has stopped listening: connecting now is refused (Redis's
    // own test reconnects at once and expects "connection refused").
    assert!(c.read_reply().is_err());
    assert!(
        Client::connect(pion.port).is_err(),
        "server still accepting after SHUTDOWN closed the connection"
    );
}

fn client_count(c: &mut Client) -> usize {
    match c.cmd(&["CLIENT", "LIST"]) {
        pion_tests::RespValue::Bulk(_, Some(text)) => {
            String::from_utf8_lossy(&text).lines().count()
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn client_kill_closes_and_unregisters() {
    let pion = PionServer::start(2);
    let mut victim = Client::connect(pion.port).expect("connect");
    let victim_id = match victim.cmd(&["CLIENT", "ID"]) {
        pion_tests::RespValue::Line(b':', id) => String::from_utf8_lossy(&id).into_owned(),
        other => panic!("unexpected {other:?}"),
    };
    let mut killer = Client::connect(pion.port).expect("connect");
    assert_eq!(client_count(&mut killer), 2);
    assert_eq!(
        killer.cmd(&["CLIENT", "KILL", "ID", &victim_id]).render(),
        ":1"
    );
    assert_eq!(
        killer.cmd(&["CLIENT", "KILL", "TYPE", "pubsub"]).render(),
        ":0"
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while client_count(&mut killer) != 1 {
        assert!(
            std::time::Instant::now() < deadline,
            "killed client still listed"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(
        victim.call(&["PING"]).is_err(),
        "killed connection must be closed"
    );
}

#[test]
fn idle_clients_time_out_and_huge_query_buffers_are_refused() {
    let pion = PionServer::start(1);
    let mut admin = Client::connect(pion.port).expect("connect");
    assert_eq!(
        admin.cmd(&["CONFIG", "SET", "timeout", "1"]).render(),
        "+OK"
    );
    let mut idle = Client::connect(pion.port).expect("connect");
    assert_eq!(idle.cmd(&["PING"]).render(), "+PONG");
    std::thread::sleep(std::time::Duration::from_millis(2300));
    assert!(
        idle.call(&["PING"]).is_err(),
        "an idle client must be closed after timeout"
    );
    let mut admin = Client::connect(pion.port).expect("connect");
    assert_eq!(
        admin.cmd(&["CONFIG", "SET", "timeout", "0"]).render(),
        "+OK"
    );
    assert_eq!(
        admin
            .cmd(&["CONFIG", "SET", "client-query-buffer-limit", "1mb"])
            .render(),
        "+OK"
    );
    let mut greedy = Client::connect(pion.port).expect("connect");
    // A bulk announced at 4 MB and sent in part: the unparsed input passes the limit.
    let mut frame = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$4194304\r\n".to_vec();
    frame.extend(std::iter::repeat_n(b'x', 2 * 1024 * 1024));
    let _ = greedy.send_raw(&frame);
    assert!(
        greedy.read_reply().is_err(),
        "the connection must be closed"
    );
    assert_eq!(admin.cmd(&["DBSIZE"]).render(), ":0");
}

#[test]
fn multi_megabyte_values_round_trip_byte_exact() {
    let redis = RedisServer::start();
    let pion = PionServer::start(2);
    // Pseudo-random bytes (all 256 values, CR/LF included) so nothing can hide in text.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let value: Vec<u8> = (0..24 * 1024 * 1024)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 24) as u8
        })
        .collect();
    for port in [redis.port, pion.port] {
        let mut c = Client::connect(port).expect("connect");
        let set: Vec<&[u8]> = vec![b"SET", b"big", &value];
        assert_eq!(c.call(&set).expect("set").1, b"+OK\r\n");
        // Pipelined: three large writes and reads in one send.
        let mut batch = Vec::new();
        for i in 0..3 {
            let key = format!("big{i}");
            batch.extend(Client::encode(&[
                b"SET".as_slice(),
                key.as_bytes(),
                &value[..4 << 20],
            ]));
            batch.extend(Client::encode(&[b"GET".as_slice(), key.as_bytes()]));
        }
        c.send_raw(&batch).expect("send");
        for _ in 0..3 {
            assert_eq!(c.read_reply().expect("set").1, b"+OK\r\n");
            match c.read_reply().expect("get").0 {
                pion_tests::RespValue::Bulk(_, Some(got)) => assert!(got == value[..4 << 20]),
                other => panic!("unexpected {}", other.render()),
            }
        }
        match c.cmd(&["GET", "big"]) {
            pion_tests::RespValue::Bulk(_, Some(got)) => {
                assert!(got == value, "24 MiB value differs")
            }
            other => panic!("unexpected {}", other.render()),
        }
        assert_eq!(
            c.cmd(&["STRLEN", "big"]).render(),
            format!(":{}", value.len())
        );
    }
}

/// The query-buffer fields a client sees of itself, against redis-server: while a
/// command runs its bytes are still in the buffer (`CLIENT INFO` is 26 bytes), and
/// so is the rest of a pipeline.
#[test]
fn a_running_command_counts_in_its_query_buffer() {
    let redis = RedisServer::start();
    let pion = PionServer::start(1);
    for port in [redis.port, pion.port] {
        let mut c = Client::connect(port).expect("connect");
        let info = c.cmd(&["CLIENT", "INFO"]).render();
        assert!(info.contains(" qbuf=26 "), "{port}: {info}");
        // A pipeline: the second command's bytes wait behind the first.
        let mut both = Client::encode(&["CLIENT", "INFO"]);
        both.extend_from_slice(&Client::encode(&["PING"]));
        c.send_raw(&both).expect("send");
        let (first, _) = c.read_reply().expect("reply");
        assert!(
            first.render().contains(" qbuf=40 "),
            "{port}: {}",
            first.render()
        );
        c.read_reply().expect("pong");
    }
}

/// The `CLIENT LIST` line of the client named `name`, as seen by `observer`.
fn client_line(observer: &mut Client, name: &str) -> String {
    let list = match observer.cmd(&["CLIENT", "LIST"]) {
        pion_tests::RespValue::Bulk(_, Some(text)) => String::from_utf8_lossy(&text).into_owned(),
        other => panic!("CLIENT LIST: {}", other.render()),
    };
    list.lines()
        .find(|l| l.contains(&format!(" name={name} ")))
        .unwrap_or_else(|| panic!("no client {name} in {list}"))
        .to_string()
}

/// A numeric field of a `CLIENT LIST` line.
fn client_field(line: &str, field: &str) -> usize {
    line.split(' ')
        .find_map(|kv| kv.strip_prefix(field)?.strip_prefix('='))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {field} in {line}"))
}

/// A pipeline burst grows a client's query buffer to hundreds of KiB; once the client
/// idles, the buffer goes back (`qbuf` and `qbuf-free` both 0), on both servers, so
/// that idle connections do not hold what their last burst needed.
#[test]
fn an_idle_clients_query_buffer_goes_back() {
    let redis = RedisServer::start();
    let pion = PionServer::start(1);
    for port in [redis.port, pion.port] {
        let mut burst = Client::connect(port).expect("connect");
        let mut observer = Client::connect(port).expect("connect");
        burst.cmd(&["CLIENT", "SETNAME", "burst"]);
        let value = "v".repeat(400);
        let mut pipeline = Vec::new();
        for i in 0..1000 {
            pipeline.extend_from_slice(&Client::encode(&["SET", &format!("k{i}"), &value]));
        }
        burst.send_raw(&pipeline).expect("send");
        for _ in 0..1000 {
            assert_eq!(burst.read_reply().expect("reply").1, b"+OK\r\n");
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            let line = client_line(&mut observer, "burst");
            if client_field(&line, "qbuf") == 0 && client_field(&line, "qbuf-free") == 0 {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{port}: the idle client keeps its query buffer: {line}"
            );
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        // The connection still works, with a fresh buffer.
        assert_eq!(burst.cmd(&["GET", "k999"]).render(), format!("\"{value}\""));
    }
}

/// `rbs` is the reply buffer's size and `rbp` the most reply bytes that waited at
/// once, which starts over when the client idles.
#[test]
fn client_list_reports_the_reply_buffer_and_its_peak() {
    let pion = PionServer::start(1);
    let mut c = Client::connect(pion.port).expect("connect");
    let mut observer = Client::connect(pion.port).expect("connect");
    c.cmd(&["CLIENT", "SETNAME", "reader"]);
    let value = "x".repeat(100_000);
    c.cmd(&["SET", "big", &value]);
    let mut pipeline = Vec::new();
    for _ in 0..4 {
        pipeline.extend_from_slice(&Client::encode(&["GET", "big"]));
    }
    c.send_raw(&pipeline).expect("send");
    for _ in 0..4 {
        c.read_reply().expect("reply");
    }
    let line = client_line(&mut observer, "reader");
    assert!(client_field(&line, "rbs") >= 16 * 1024, "{line}");
    assert!(client_field(&line, "rbp") >= value.len(), "{line}");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while client_field(&client_line(&mut observer, "reader"), "rbp") != 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "rbp never starts over"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}
