//! MIGRATE between real servers: Pion to redis-server, redis-server to Pion, and Pion
//! to Pion, with COPY, REPLACE, KEYS, AUTH and AUTH2, the target's errors, a timeout,
//! the cached connection; and restored keys surviving a SIGKILL of their server.

use pion_core::EngineOptions;
use pion_tests::dump::{bulk, integer, ok};
use pion_tests::{temp_dir, Client, PionProcess, PionServer, RedisServer, RespValue};

fn line(v: &RespValue) -> String {
    v.render()
}

/// A key of every core type, one with a deadline.
fn populate(c: &mut Client) {
    ok(c, &["SET", "s", "hello"]);
    ok(c, &["PEXPIRE", "s", "100000"]);
    ok(c, &["RPUSH", "l", "a", "1", "b"]);
    ok(c, &["HSET", "h", "f", "v", "n", "7"]);
    ok(c, &["SADD", "st", "x", "y"]);
    ok(c, &["ZADD", "z", "1.5", "m", "-2", "n"]);
    ok(c, &["XADD", "x", "1-1", "f", "v"]);
    ok(c, &["XGROUP", "CREATE", "x", "g", "0"]);
}

/// What each populated key holds, as the target reports it.
fn contents(c: &mut Client) -> Vec<String> {
    [
        vec!["GET", "s"],
        vec!["LRANGE", "l", "0", "-1"],
        vec!["HGETALL", "h"],
        vec!["SMEMBERS", "st"],
        vec!["ZRANGE", "z", "0", "-1", "WITHSCORES"],
        vec!["XRANGE", "x", "-", "+"],
        vec!["XINFO", "GROUPS", "x"],
    ]
    .iter()
    .map(|cmd| {
        let r = c.cmd(cmd);
        if cmd[0] == "SMEMBERS" {
            r.normalized().render()
        } else {
            r.render()
        }
    })
    .collect()
}

const KEYS: &[&str] = &["s", "l", "h", "st", "z", "x"];

fn migrate_all(c: &mut Client, port: u16, db: &str, extra: &[&str]) -> RespValue {
    let port = port.to_string();
    let mut args = vec!["MIGRATE", "127.0.0.1", &port, "", db, "5000"];
    args.extend_from_slice(extra);
    args.push("KEYS");
    args.extend_from_slice(KEYS);
    c.cmd(&args)
}

#[test]
fn keys_move_between_pion_and_redis_both_ways() {
    let pion = PionServer::start(2);
    let redis = RedisServer::start();
    let mut p = Client::connect(pion.port).expect("pion");
    let mut r = Client::connect(redis.port).expect("redis");
    populate(&mut p);
    let want = contents(&mut p);

    // Pion → redis-server, into database 3: the keys leave Pion.
    assert_eq!(line(&migrate_all(&mut p, redis.port, "3", &[])), "+OK");
    assert_eq!(integer(&p.cmd(&["DBSIZE"])), 0);
    ok(&mut r, &["SELECT", "3"]);
    assert_eq!(contents(&mut r), want);
    let ttl = integer(&r.cmd(&["PTTL", "s"]));
    assert!((90_000..=100_000).contains(&ttl), "ttl {ttl}");

    // redis-server → Pion, COPY: both keep them.
    let pion_port = pion.port.to_string();
    let mut args = vec![
        "MIGRATE",
        "127.0.0.1",
        &pion_port,
        "",
        "0",
        "5000",
        "COPY",
        "KEYS",
    ];
    args.extend_from_slice(KEYS);
    assert_eq!(line(&r.cmd(&args)), "+OK");
    assert_eq!(integer(&r.cmd(&["DBSIZE"])), KEYS.len() as i64);
    assert_eq!(contents(&mut p), want);
    let ttl = integer(&p.cmd(&["PTTL", "s"]));
    assert!((80_000..=100_000).contains(&ttl), "ttl {ttl}");

    // Again without REPLACE: the target refuses each key, nothing is deleted.
    let refused = line(&r.cmd(&args));
    assert!(
        refused.starts_with("-ERR Target instance replied with error: BUSYKEY"),
        "{refused}"
    );
    args.insert(6, "REPLACE");
    assert_eq!(line(&r.cmd(&args)), "+OK");

    // Pion → redis-server with REPLACE over what is there; NOKEY when nothing is.
    assert_eq!(
        line(&migrate_all(&mut p, redis.port, "3", &["REPLACE"])),
        "+OK"
    );
    assert_eq!(contents(&mut r), want);
    assert_eq!(line(&migrate_all(&mut p, redis.port, "3", &[])), "+NOKEY");
    // One connection to redis-server stays cached.
    let info = bulk(&p.cmd(&["INFO", "stats"]));
    assert!(String::from_utf8_lossy(&info).contains("migrate_cached_sockets:1\r\n"));
}

#[test]
fn pion_to_pion_with_auth_partial_acks_and_a_timeout() {
    let source = PionServer::start(2);
    let mut options = EngineOptions::default();
    options.config.enable_debug_command = pion_core::config::DebugCommand::Yes;
    // One worker thread, so that DEBUG SLEEP below stalls the whole target.
    options.config.threads = 1;
    let target = PionServer::start_with(1, options);
    let mut s = Client::connect(source.port).expect("source");
    let mut t = Client::connect(target.port).expect("target");
    let port = target.port.to_string();

    // Two of the keys are taken on the target: the others move, those two stay.
    for k in ["a", "b", "c", "d"] {
        ok(&mut s, &["SET", k, k]);
    }
    ok(&mut t, &["MSET", "b", "_", "c", "_"]);
    let r = s.cmd(&[
        "MIGRATE",
        "127.0.0.1",
        &port,
        "",
        "0",
        "5000",
        "KEYS",
        "a",
        "b",
        "c",
        "d",
    ]);
    assert!(line(&r).contains("BUSYKEY"), "{}", line(&r));
    assert_eq!(
        line(&s.cmd(&["MGET", "a", "b", "c", "d"])),
        "*[(nil), \"b\", \"c\", (nil)]"
    );
    assert_eq!(line(&t.cmd(&["MGET", "a", "d"])), "*[\"a\", \"d\"]");

    // AUTH and AUTH2 against a target with a password and a user.
    ok(
        &mut t,
        &["ACL", "SETUSER", "mover", "on", ">secret", "~*", "+@all"],
    );
    ok(&mut t, &["CONFIG", "SET", "requirepass", "pw"]);
    ok(&mut s, &["SET", "k1", "v1"]);
    ok(&mut s, &["SET", "k2", "v2"]);
    // (The cached connection was authenticated before the password was set: a wrong
    // AUTH fails the command, and the key, copied, is there too.)
    let wrong = s.cmd(&[
        "MIGRATE",
        "127.0.0.1",
        &port,
        "k1",
        "0",
        "5000",
        "COPY",
        "AUTH",
        "bad",
    ]);
    assert!(line(&wrong).contains("WRONGPASS"), "{}", line(&wrong));
    let r = s.cmd(&[
        "MIGRATE",
        "127.0.0.1",
        &port,
        "k1",
        "1",
        "5000",
        "AUTH",
        "pw",
    ]);
    assert_eq!(line(&r), "+OK");
    let r = s.cmd(&[
        "MIGRATE",
        "127.0.0.1",
        &port,
        "k2",
        "1",
        "5000",
        "AUTH2",
        "mover",
        "secret",
    ]);
    assert_eq!(line(&r), "+OK");
    ok(&mut t, &["AUTH", "pw"]);
    ok(&mut t, &["SELECT", "1"]);
    assert_eq!(line(&t.cmd(&["MGET", "k1", "k2"])), "*[\"v1\", \"v2\"]");

    // A target that does not answer in time: IOERR, and the key stays.
    ok(&mut s, &["SET", "slow", "v"]);
    let mut sleeper = Client::connect(target.port).expect("target");
    ok(&mut sleeper, &["AUTH", "pw"]);
    sleeper
        .send_raw(b"*3\r\n$5\r\nDEBUG\r\n$5\r\nSLEEP\r\n$3\r\n1.5\r\n")
        .expect("send");
    std::thread::sleep(std::time::Duration::from_millis(100));
    let r = s.cmd(&[
        "MIGRATE",
        "127.0.0.1",
        &port,
        "slow",
        "0",
        "300",
        "AUTH",
        "pw",
    ]);
    assert!(
        line(&r).starts_with("-IOERR error or timeout"),
        "{}",
        line(&r)
    );
    assert_eq!(line(&s.cmd(&["EXISTS", "slow"])), ":1");
    let _ = sleeper.read_reply();
}

#[test]
fn restored_and_migrated_keys_survive_sigkill() {
    let dir = temp_dir("migrate-restart");
    let mut server = PionProcess::start(dir.path(), &[]);
    let redis = RedisServer::start();
    let mut r = Client::connect(redis.port).expect("redis");
    populate(&mut r);
    let want = contents(&mut r);
    let port = server.port().to_string();
    let mut args = vec!["MIGRATE", "127.0.0.1", &port, "", "0", "5000", "KEYS"];
    args.extend_from_slice(KEYS);
    assert_eq!(line(&r.cmd(&args)), "+OK");
    let mut c = server.client();
    // A RESTORE with a deadline, and one that REPLACE deleted because its time passed.
    ok(&mut c, &["SET", "gone", "x"]);
    let payload = bulk(&c.cmd(&["DUMP", "gone"]));
    let restored = c.cmd(&[&b"RESTORE"[..], b"later", b"100000", &payload]);
    assert_eq!(line(&restored), "+OK");
    let past = c.cmd(&[
        &b"RESTORE"[..],
        b"gone",
        b"1",
        &payload,
        b"ABSTTL",
        b"REPLACE",
    ]);
    assert_eq!(line(&past), "+OK");
    let deadline = integer(&c.cmd(&["PEXPIRETIME", "later"]));
    assert_eq!(contents(&mut c), want);
    server.kill9();

    let server = PionProcess::start(dir.path(), &[]);
    let mut c = server.client();
    assert_eq!(contents(&mut c), want, "after SIGKILL (log replay)");
    assert_eq!(integer(&c.cmd(&["PEXPIRETIME", "later"])), deadline);
    assert_eq!(integer(&c.cmd(&["EXISTS", "gone"])), 0);
    assert!(integer(&c.cmd(&["PTTL", "s"])) > 0);
}

/// A key another client changes while MIGRATE waits for its target stays (and keeps
/// the new value); the key that did not change leaves. The target here is a stand-in
/// that answers only when told to.
#[test]
fn a_key_changed_during_the_round_trip_stays() {
    use std::io::{Read, Write};
    let source = PionServer::start(2);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port().to_string();
    let (seen_tx, seen_rx) = std::sync::mpsc::channel::<()>();
    let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
    let target = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().expect("accept");
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        // SELECT and two RESTOREs: wait until both keys' commands arrived.
        while got.windows(7).filter(|w| w == b"RESTORE").count() < 2 {
            let n = s.read(&mut buf).expect("read");
            assert!(n > 0, "the source hung up");
            got.extend_from_slice(&buf[..n]);
        }
        seen_tx.send(()).expect("notify");
        go_rx.recv().expect("go");
        s.write_all(b"+OK\r\n+OK\r\n+OK\r\n").expect("reply");
        got
    });
    let mut a = Client::connect(source.port).expect("source");
    let mut b = Client::connect(source.port).expect("source");
    ok(&mut a, &["MSET", "stay", "old", "go", "v"]);
    // One connection per worker thread: `a` runs MIGRATE, `b` writes meanwhile.
    let migrating = std::thread::spawn(move || {
        let r = a.cmd(&[
            "MIGRATE",
            "127.0.0.1",
            &port,
            "",
            "0",
            "5000",
            "KEYS",
            "stay",
            "go",
        ]);
        (a, r)
    });
    seen_rx.recv().expect("the target saw the commands");
    ok(&mut b, &["SET", "stay", "new"]);
    go_tx.send(()).expect("go");
    let (_a, reply) = migrating.join().expect("migrate");
    assert_eq!(line(&reply), "+OK");
    assert_eq!(line(&b.cmd(&["GET", "stay"])), "\"new\"");
    assert_eq!(integer(&b.cmd(&["EXISTS", "go"])), 0);
    let sent = target.join().expect("target");
    assert!(sent.starts_with(
        b"*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n*4\r\n$7\r\nRESTORE\r\n$4\r\nstay\r\n$1\r\n0\r\n"
    ));
}
