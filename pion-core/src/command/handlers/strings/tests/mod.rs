//! Behaviour of the string family, with replies checked against Redis 7.0.15. This
//! file holds the shared helpers and the whole-value commands; `edits` covers
//! counters and partial edits, `lcs` the `LCS` command.

mod bits;
mod edits;
mod lcs;

use crate::value::{ListValue, Value};
use crate::{Engine, EngineOptions, Reply};

pub(super) fn engine() -> Engine {
    Engine::in_memory(EngineOptions::default())
}

pub(super) fn run(e: &Engine, args: &[&str]) -> Reply {
    e.execute(0, args)
}

pub(super) fn bulk(s: &str) -> Reply {
    Reply::bulk(s)
}

pub(super) fn int(n: i64) -> Reply {
    Reply::Integer(n)
}

pub(super) fn err(text: &'static str) -> Reply {
    Reply::error(text)
}

pub(super) const WRONGTYPE: &str =
    "WRONGTYPE Operation against a key holding the wrong kind of value";
pub(super) const NOT_INT: &str = "ERR value is not an integer or out of range";
pub(super) const SYNTAX: &str = "ERR syntax error";

/// `OBJECT ENCODING` of a key, read straight from the keyspace.
pub(super) fn encoding(e: &Engine, key: &str) -> Option<&'static str> {
    let mut l = e.keyspace().lock_keys(&[key], e.now_ms());
    l.get(0, key.as_bytes())
        .expect("db 0 exists")
        .map(|v| v.encoding())
}

/// Milliseconds left before the key expires: `None` when missing, `Some(None)` with no TTL.
pub(super) fn ttl_ms(e: &Engine, key: &str) -> Option<Option<i64>> {
    let now = e.now_ms();
    let mut l = e.keyspace().lock_keys(&[key], now);
    l.expire_at(0, key.as_bytes())
        .expect("db 0 exists")
        .map(|at| at.map(|at| at - now))
}

/// Stores a one-element list at `key`, written straight into the keyspace so these
/// tests need no list command.
pub(super) fn put_list(e: &Engine, key: &str) {
    let list: ListValue = [b"a".to_vec()].into_iter().collect();
    let mut l = e.keyspace().lock_keys(&[key], e.now_ms());
    l.set(0, key.as_bytes(), Value::List(list))
        .expect("db 0 exists");
}

/// An engine holding `s` = "hello" and the list `l`.
pub(super) fn seeded() -> Engine {
    let e = engine();
    assert_eq!(run(&e, &["SET", "s", "hello"]), Reply::ok());
    put_list(&e, "l");
    e
}
#[test]
fn get_and_set_basics() {
    let e = seeded();
    assert_eq!(run(&e, &["GET", "s"]), bulk("hello"));
    assert_eq!(run(&e, &["GET", "nokey"]), Reply::Null);
    assert_eq!(
        run(&e, &["GET"]),
        err("ERR wrong number of arguments for 'get' command")
    );
    let bin = [0u8, 255, b'\r', b'\n'];
    assert_eq!(e.execute(0, &[&b"SET"[..], b"b", &bin]), Reply::ok());
    assert_eq!(
        e.execute(0, &[&b"GET"[..], b"b"]),
        Reply::Bulk(bin.to_vec())
    );
    assert_eq!(encoding(&e, "s"), Some("embstr"));
    run(&e, &["SET", "n", "123"]);
    assert_eq!(encoding(&e, "n"), Some("int"));
    run(&e, &["SET", "long", &"x".repeat(45)]);
    assert_eq!(encoding(&e, "long"), Some("raw"));
}

#[test]
fn set_options() {
    let e = seeded();
    assert_eq!(run(&e, &["SET", "s", "v", "NX"]), Reply::Null);
    assert_eq!(run(&e, &["SET", "s", "v", "nx", "nx"]), Reply::Null);
    assert_eq!(run(&e, &["SET", "x", "v", "XX"]), Reply::Null);
    assert_eq!(run(&e, &["SET", "s", "v", "nx", "xx"]), err(SYNTAX));
    assert_eq!(
        run(&e, &["SET", "s", "v", "ex", "10", "px", "20"]),
        err(SYNTAX)
    );
    assert_eq!(
        run(&e, &["SET", "s", "v", "ex", "10", "keepttl"]),
        err(SYNTAX)
    );
    assert_eq!(
        run(&e, &["SET", "s", "v", "keepttl", "ex", "10"]),
        err(SYNTAX)
    );
    assert_eq!(run(&e, &["SET", "s", "v", "persist"]), err(SYNTAX));
    assert_eq!(run(&e, &["SET", "s", "v", "ex"]), err(SYNTAX));
    assert_eq!(run(&e, &["SET", "s", "v", "ex", "abc", "foo"]), err(SYNTAX));
    assert_eq!(run(&e, &["SET", "s", "v", "ex", "abc"]), err(NOT_INT));
    assert_eq!(
        run(&e, &["SET", "l", "v", "get", "ex", "0"]),
        err("ERR invalid expire time in 'set' command")
    );
    assert_eq!(run(&e, &["SET", "l", "v", "nx", "get"]), err(WRONGTYPE));
    assert_eq!(run(&e, &["SET", "s", "w", "get", "get"]), bulk("hello"));
    assert_eq!(run(&e, &["SET", "new", "v", "xx", "get"]), Reply::Null);
    assert_eq!(
        run(&e, &["SET", "s", "v", "ex", "10", "ex", "20"]),
        Reply::ok()
    );
    let ttl = ttl_ms(&e, "s").flatten().expect("has a ttl");
    assert!(ttl > 19_000 && ttl <= 20_000, "{ttl}");
    assert_eq!(
        run(&e, &["SET", "s", "v2", "keepttl", "keepttl"]),
        Reply::ok()
    );
    assert!(ttl_ms(&e, "s").flatten().is_some());
    assert_eq!(run(&e, &["SET", "s", "v3"]), Reply::ok());
    assert_eq!(ttl_ms(&e, "s"), Some(None));
    assert_eq!(run(&e, &["SET", "s", "v", "exat", "1"]), Reply::ok());
    assert_eq!(run(&e, &["GET", "s"]), Reply::Null);
    assert_eq!(run(&e, &["SET", "l", "v"]), Reply::ok());
    assert_eq!(run(&e, &["GET", "l"]), bulk("v"));
}

#[test]
fn setnx() {
    let e = seeded();
    assert_eq!(run(&e, &["SETNX", "s", "x"]), int(0));
    assert_eq!(run(&e, &["SETNX", "l", "x"]), int(0));
    assert_eq!(run(&e, &["SETNX", "n", "12"]), int(1));
    assert_eq!(run(&e, &["GET", "n"]), bulk("12"));
    assert_eq!(encoding(&e, "n"), Some("int"));
    assert_eq!(run(&e, &["GET", "s"]), bulk("hello"));
    assert_eq!(
        run(&e, &["SETNX", "s"]),
        err("ERR wrong number of arguments for 'setnx' command")
    );
}

#[test]
fn setex_and_psetex() {
    let e = seeded();
    for bad in ["0", "-1", "9223372036854775807", "9223372036854775"] {
        assert_eq!(
            run(&e, &["SETEX", "k", bad, "v"]),
            err("ERR invalid expire time in 'setex' command"),
            "{bad}"
        );
    }
    assert_eq!(run(&e, &["SETEX", "k", "abc", "v"]), err(NOT_INT));
    assert_eq!(
        run(&e, &["PSETEX", "k", "0", "v"]),
        err("ERR invalid expire time in 'psetex' command")
    );
    assert_eq!(
        run(&e, &["PSETEX", "k", "9223372036854775000", "v"]),
        err("ERR invalid expire time in 'psetex' command")
    );
    assert_eq!(run(&e, &["GET", "k"]), Reply::Null);
    assert_eq!(run(&e, &["SETEX", "k", "10", "123"]), Reply::ok());
    assert_eq!(encoding(&e, "k"), Some("int"));
    let ttl = ttl_ms(&e, "k").flatten().expect("has a ttl");
    assert!(ttl > 9_000 && ttl <= 10_000, "{ttl}");
    assert_eq!(run(&e, &["PSETEX", "k", "1500", "v"]), Reply::ok());
    let ttl = ttl_ms(&e, "k").flatten().expect("has a ttl");
    assert!(ttl > 1_000 && ttl <= 1_500, "{ttl}");
    assert_eq!(run(&e, &["SETEX", "l", "10", "v"]), Reply::ok());
    assert_eq!(run(&e, &["GET", "l"]), bulk("v"));
}

#[test]
fn getset_and_getdel() {
    let e = seeded();
    assert_eq!(run(&e, &["SETEX", "s", "100", "old"]), Reply::ok());
    assert_eq!(run(&e, &["GETSET", "s", "123"]), bulk("old"));
    assert_eq!(ttl_ms(&e, "s"), Some(None));
    assert_eq!(encoding(&e, "s"), Some("int"));
    assert_eq!(run(&e, &["GETSET", "nokey", "v"]), Reply::Null);
    assert_eq!(run(&e, &["GET", "nokey"]), bulk("v"));
    assert_eq!(run(&e, &["GETSET", "l", "v"]), err(WRONGTYPE));
    assert_eq!(run(&e, &["GETDEL", "s"]), bulk("123"));
    assert_eq!(run(&e, &["GETDEL", "s"]), Reply::Null);
    assert_eq!(ttl_ms(&e, "s"), None);
    assert_eq!(run(&e, &["GETDEL", "l"]), err(WRONGTYPE));
    assert!(ttl_ms(&e, "l").is_some());
}

#[test]
fn getex() {
    let e = seeded();
    assert_eq!(run(&e, &["SETEX", "s", "100", "v"]), Reply::ok());
    assert_eq!(run(&e, &["GETEX", "s"]), bulk("v"));
    assert!(ttl_ms(&e, "s").flatten().is_some());
    assert_eq!(run(&e, &["GETEX", "s", "PERSIST", "persist"]), bulk("v"));
    assert_eq!(ttl_ms(&e, "s"), Some(None));
    assert_eq!(run(&e, &["GETEX", "s", "ex", "10", "ex", "20"]), bulk("v"));
    let ttl = ttl_ms(&e, "s").flatten().expect("has a ttl");
    assert!(ttl > 19_000 && ttl <= 20_000, "{ttl}");
    assert_eq!(run(&e, &["GETEX", "s", "px", "1500"]), bulk("v"));
    let ttl = ttl_ms(&e, "s").flatten().expect("has a ttl");
    assert!(ttl > 1_000 && ttl <= 1_500, "{ttl}");
    assert_eq!(run(&e, &["GETEX", "s", "exat", "99999999999"]), bulk("v"));
    assert_eq!(
        run(&e, &["GETEX", "s", "pxat", "99999999999999"]),
        bulk("v")
    );
    for bad in [
        &["ex", "10", "px", "10"][..],
        &["persist", "ex", "10"],
        &["ex", "10", "persist"],
        &["keepttl"],
        &["nx"],
        &["get"],
        &["ex"],
        &["ex", "abc", "foo"],
    ] {
        let mut args = vec!["GETEX", "s"];
        args.extend_from_slice(bad);
        assert_eq!(run(&e, &args), err(SYNTAX), "{bad:?}");
    }
    for bad in ["0", "-5", "9223372036854775"] {
        assert_eq!(
            run(&e, &["GETEX", "s", "ex", bad]),
            err("ERR invalid expire time in 'getex' command")
        );
    }
    assert_eq!(
        run(&e, &["GETEX", "s", "px", "9223372036854775807"]),
        err("ERR invalid expire time in 'getex' command")
    );
    assert_eq!(
        run(&e, &["GETEX", "s", "exat", "9223372036854775807"]),
        err("ERR invalid expire time in 'getex' command")
    );
    assert_eq!(
        run(&e, &["GETEX", "s", "pxat", "0"]),
        err("ERR invalid expire time in 'getex' command")
    );
    assert_eq!(run(&e, &["GETEX", "s", "ex", "abc"]), err(NOT_INT));
    // A missing key answers nil before the number is checked; a list answers WRONGTYPE.
    assert_eq!(run(&e, &["GETEX", "nokey", "ex", "abc"]), Reply::Null);
    assert_eq!(run(&e, &["GETEX", "nokey", "ex", "0"]), Reply::Null);
    assert_eq!(run(&e, &["GETEX", "nokey", "foo"]), err(SYNTAX));
    assert_eq!(run(&e, &["GETEX", "l", "ex", "abc"]), err(WRONGTYPE));
    assert_eq!(run(&e, &["GETEX", "l"]), err(WRONGTYPE));
    // A deadline already past deletes the key, after replying with the value.
    assert_eq!(run(&e, &["GETEX", "s", "exat", "1"]), bulk("v"));
    assert_eq!(ttl_ms(&e, "s"), None);
    run(&e, &["SET", "i", "1"]);
    assert_eq!(run(&e, &["GETEX", "i", "persist"]), bulk("1"));
    assert_eq!(encoding(&e, "i"), Some("int"));
    assert_eq!(
        run(&e, &["GETEX"]),
        err("ERR wrong number of arguments for 'getex' command")
    );
}

#[test]
fn mget_mset_msetnx() {
    let e = seeded();
    assert_eq!(
        run(&e, &["MGET", "s", "l", "nokey", "s"]),
        Reply::Array(vec![bulk("hello"), Reply::Null, Reply::Null, bulk("hello")])
    );
    assert_eq!(
        run(&e, &["MSET", "a", "1", "b", "2", "a", "3"]),
        Reply::ok()
    );
    assert_eq!(
        run(&e, &["MGET", "a", "b"]),
        Reply::Array(vec![bulk("3"), bulk("2")])
    );
    assert_eq!(
        run(&e, &["MSET", "a", "1", "b"]),
        err("ERR wrong number of arguments for 'mset' command")
    );
    assert_eq!(
        run(&e, &["MSET", "a"]),
        err("ERR wrong number of arguments for 'mset' command")
    );
    assert_eq!(run(&e, &["MSET", "l", "x"]), Reply::ok());
    assert_eq!(run(&e, &["GET", "l"]), bulk("x"));
    put_list(&e, "l2");
    assert_eq!(run(&e, &["MSETNX", "c", "1", "d", "2"]), int(1));
    assert_eq!(run(&e, &["MSETNX", "c", "1", "e", "2"]), int(0));
    assert_eq!(run(&e, &["MSETNX", "z", "1", "l2", "2"]), int(0));
    assert_eq!(
        run(&e, &["MGET", "e", "z"]),
        Reply::Array(vec![Reply::Null, Reply::Null])
    );
    assert_eq!(run(&e, &["MSETNX", "x", "1", "x", "2"]), int(1));
    assert_eq!(run(&e, &["GET", "x"]), bulk("2"));
    assert_eq!(
        run(&e, &["MSETNX", "c", "1", "d"]),
        err("ERR wrong number of arguments for 'msetnx' command")
    );
    assert_eq!(
        run(&e, &["MGET"]),
        err("ERR wrong number of arguments for 'mget' command")
    );
}
#[test]
fn only_reads_count_keyspace_hits_and_misses() {
    let e = engine();
    run(&e, &["SET", "s", "1"]);
    let stats = |e: &Engine| {
        let s = e.keyspace().stats();
        (s.keyspace_hits(), s.keyspace_misses())
    };
    // The sequence and running totals recorded from Redis 7.0.15 (INFO stats).
    let steps: &[(&[&str], (u64, u64))] = &[
        (&["INCR", "s"], (0, 0)),
        (&["INCR", "nn"], (0, 0)),
        (&["INCRBYFLOAT", "s", "1"], (0, 0)),
        (&["APPEND", "s", "1"], (0, 0)),
        (&["SETRANGE", "s", "0", "1"], (0, 0)),
        (&["SETNX", "s", "1"], (0, 0)),
        (&["MSETNX", "s", "1"], (0, 0)),
        (&["GETSET", "s", "2"], (1, 0)),
        (&["GETDEL", "s"], (2, 0)),
        (&["GETEX", "nn"], (3, 0)),
        (&["STRLEN", "nn"], (4, 0)),
        (&["SET", "s", "1", "GET"], (4, 1)),
        (&["SET", "s", "1"], (4, 1)),
        (&["MGET", "s", "nn"], (6, 1)),
        (&["LCS", "s", "nn"], (8, 1)),
        (&["GETRANGE", "s", "0", "1"], (9, 1)),
        (&["DECRBY", "s", "1"], (9, 1)),
        (&["SETEX", "s", "10", "1"], (9, 1)),
    ];
    for (args, want) in steps {
        assert!(!run(&e, args).is_error(), "{args:?}");
        assert_eq!(stats(&e), *want, "{args:?}");
    }
}
