//! DUMP, RESTORE and their errors on an in-memory engine (MIGRATE's round trips are
//! in `tests/tests/migrate.rs`, against real servers).

use crate::reply::Reply;
use crate::{Engine, EngineOptions};

fn run(e: &Engine, args: &[&str]) -> Reply {
    e.execute(0, args)
}

fn run_bytes(e: &Engine, args: &[&[u8]]) -> Reply {
    e.execute(0, args)
}

fn bulk(r: Reply) -> Vec<u8> {
    match r {
        Reply::Bulk(b) => b,
        other => panic!("not a bulk: {other:?}"),
    }
}

#[test]
fn dump_and_restore_every_type() {
    let e = Engine::in_memory(EngineOptions::default());
    run(&e, &["SET", "s", "hello"]);
    run(&e, &["RPUSH", "l", "a", "b", "1"]);
    run(&e, &["HSET", "h", "f", "v"]);
    run(&e, &["SADD", "st", "1", "x"]);
    run(&e, &["ZADD", "z", "1.5", "m"]);
    run(&e, &["XADD", "x", "1-1", "f", "v"]);
    run(&e, &["JSON.SET", "j", "$", r#"{"a":[1,2.5,"x"]}"#]);
    for key in ["s", "l", "h", "st", "z", "x", "j"] {
        let payload = bulk(run(&e, &["DUMP", key]));
        let copy = format!("{key}-copy");
        let args: Vec<&[u8]> = vec![b"RESTORE", copy.as_bytes(), b"0", &payload];
        assert_eq!(run_bytes(&e, &args), Reply::ok(), "{key}");
        // A hash-table set lists its members in hash order, which differs per copy.
        if key != "st" {
            assert_eq!(bulk(run(&e, &["DUMP", &copy])), payload, "{key}");
        }
        assert_eq!(run(&e, &["TYPE", &copy]), run(&e, &["TYPE", key]));
    }
    assert_eq!(run(&e, &["DUMP", "missing"]), Reply::Null);
}

#[test]
fn restore_errors_come_in_redis_order() {
    let e = Engine::in_memory(EngineOptions::default());
    run(&e, &["SET", "k", "v"]);
    let payload = bulk(run(&e, &["DUMP", "k"]));
    let restore = |extra: &[&[u8]]| {
        let mut args: Vec<&[u8]> = vec![b"RESTORE", b"k", b"0", &payload];
        args.extend_from_slice(extra);
        run_bytes(&e, &args)
    };
    let err = |r: Reply| match r {
        Reply::Error(t) => String::from_utf8_lossy(t.as_bytes()).into_owned(),
        other => panic!("not an error: {other:?}"),
    };
    assert_eq!(err(restore(&[])), "BUSYKEY Target key name already exists.");
    assert_eq!(err(restore(&[b"bogus"])), "ERR syntax error");
    assert_eq!(
        err(restore(&[b"IDLETIME", b"1", b"FREQ", b"1"])),
        "ERR syntax error"
    );
    assert_eq!(
        err(restore(&[b"REPLACE", b"FREQ", b"256"])),
        "ERR Invalid FREQ value, must be >= 0 and <= 255"
    );
    assert_eq!(
        err(restore(&[b"REPLACE", b"IDLETIME", b"-1"])),
        "ERR Invalid IDLETIME value, must be >= 0"
    );
    assert_eq!(
        err(run(&e, &["RESTORE", "n", "-1", "x"])),
        "ERR Invalid TTL value, must be >= 0"
    );
    assert_eq!(
        err(run(&e, &["RESTORE", "n", "0", "x"])),
        "ERR DUMP payload version or checksum are wrong"
    );
    let mut bad = payload.clone();
    bad[0] = 0x63;
    let n = bad.len();
    let crc = crate::util::crc64::crc64(0, &bad[..n - 8]);
    bad[n - 8..].copy_from_slice(&crc.to_le_bytes());
    let args: Vec<&[u8]> = vec![b"RESTORE", b"n", b"0", &bad];
    assert_eq!(err(run_bytes(&e, &args)), "ERR Bad data format");
    // A time to live already past creates nothing; with REPLACE it deletes.
    assert_eq!(restore(&[b"REPLACE", b"ABSTTL"]), Reply::ok());
    let args: Vec<&[u8]> = vec![b"RESTORE", b"k", b"1", &payload, b"ABSTTL", b"REPLACE"];
    assert_eq!(run_bytes(&e, &args), Reply::ok());
    assert_eq!(run(&e, &["EXISTS", "k"]), Reply::Integer(0));
}

#[test]
fn migrate_credentials_are_redacted_where_commands_are_shown() {
    let spec = crate::command::table()
        .get(b"migrate")
        .expect("in the table");
    let argv: Vec<Vec<u8>> = [
        "MIGRATE", "h", "1", "", "0", "100", "COPY", "AUTH", "pw", "AUTH2", "u", "p", "KEYS",
        "AUTH", "k",
    ]
    .iter()
    .map(|a| a.as_bytes().to_vec())
    .collect();
    let shown = super::shown_args(spec, &argv);
    let words: Vec<&str> = shown
        .iter()
        .map(|a| std::str::from_utf8(a).expect("text"))
        .collect();
    assert_eq!(
        words,
        [
            "MIGRATE",
            "h",
            "1",
            "",
            "0",
            "100",
            "COPY",
            "AUTH",
            "(redacted)",
            "AUTH2",
            "(redacted)",
            "(redacted)",
            "KEYS",
            "AUTH",
            "k"
        ]
    );
    let get = crate::command::table().get(b"get").expect("in the table");
    assert!(matches!(
        super::shown_args(get, &argv),
        std::borrow::Cow::Borrowed(_)
    ));
}
