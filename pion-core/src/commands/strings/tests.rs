//! Behaviour of the string family, with replies checked against Redis 7.0.15.

use crate::value::{ListValue, Value};
use crate::{Engine, EngineOptions, Reply};

fn engine() -> Engine {
    Engine::open(EngineOptions::default())
}

fn run(e: &Engine, args: &[&str]) -> Reply {
    e.execute(0, args)
}

fn bulk(s: &str) -> Reply {
    Reply::bulk(s)
}

fn int(n: i64) -> Reply {
    Reply::Integer(n)
}

fn err(text: &'static str) -> Reply {
    Reply::error(text)
}

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
const NOT_INT: &str = "ERR value is not an integer or out of range";
const SYNTAX: &str = "ERR syntax error";

/// `OBJECT ENCODING` of a key, read straight from the keyspace.
fn encoding(e: &Engine, key: &str) -> Option<&'static str> {
    let mut l = e.keyspace().lock_keys(&[key], e.now_ms());
    l.get(0, key.as_bytes())
        .expect("db 0 exists")
        .map(|v| v.encoding())
}

/// Milliseconds left before the key expires: `None` when missing, `Some(None)` with no TTL.
fn ttl_ms(e: &Engine, key: &str) -> Option<Option<i64>> {
    let now = e.now_ms();
    let mut l = e.keyspace().lock_keys(&[key], now);
    l.expire_at(0, key.as_bytes())
        .expect("db 0 exists")
        .map(|at| at.map(|at| at - now))
}

/// Stores a one-element list at `key`, written straight into the keyspace so these
/// tests need no list command.
fn put_list(e: &Engine, key: &str) {
    let mut list = ListValue::new();
    list.items_mut().push_back(b"a".to_vec());
    let mut l = e.keyspace().lock_keys(&[key], e.now_ms());
    l.set(0, key.as_bytes(), Value::List(list))
        .expect("db 0 exists");
}

/// An engine holding `s` = "hello" and the list `l`.
fn seeded() -> Engine {
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
fn append_and_strlen() {
    let e = seeded();
    assert_eq!(run(&e, &["APPEND", "k", "hello"]), int(5));
    assert_eq!(encoding(&e, "k"), Some("embstr"));
    assert_eq!(run(&e, &["APPEND", "k", " world"]), int(11));
    assert_eq!(encoding(&e, "k"), Some("raw"));
    assert_eq!(run(&e, &["GET", "k"]), bulk("hello world"));
    assert_eq!(run(&e, &["APPEND", "n", "12"]), int(2));
    assert_eq!(encoding(&e, "n"), Some("int"));
    assert_eq!(run(&e, &["APPEND", "n", ""]), int(2));
    assert_eq!(encoding(&e, "n"), Some("raw"));
    assert_eq!(run(&e, &["APPEND", "n", "3"]), int(3));
    assert_eq!(run(&e, &["GET", "n"]), bulk("123"));
    assert_eq!(run(&e, &["APPEND", "empty", ""]), int(0));
    assert_eq!(run(&e, &["GET", "empty"]), bulk(""));
    assert_eq!(encoding(&e, "empty"), Some("embstr"));
    assert_eq!(run(&e, &["APPEND", "l", "x"]), err(WRONGTYPE));
    assert_eq!(run(&e, &["STRLEN", "k"]), int(11));
    assert_eq!(run(&e, &["STRLEN", "n"]), int(3));
    assert_eq!(run(&e, &["STRLEN", "nokey"]), int(0));
    assert_eq!(run(&e, &["STRLEN", "l"]), err(WRONGTYPE));
    assert_eq!(run(&e, &["SETEX", "t", "100", "v"]), Reply::ok());
    assert_eq!(run(&e, &["APPEND", "t", "w"]), int(2));
    assert!(ttl_ms(&e, "t").flatten().is_some());
}

#[test]
fn append_and_setrange_respect_proto_max_bulk_len() {
    let e = engine();
    e.config()
        .set_many(&[("proto-max-bulk-len", "1mb")])
        .expect("valid setting");
    let full = "a".repeat(1024 * 1024);
    const TOO_BIG: &str = "ERR string exceeds maximum allowed size (proto-max-bulk-len)";
    assert_eq!(run(&e, &["SET", "big", &full]), Reply::ok());
    assert_eq!(run(&e, &["APPEND", "big", "x"]), err(TOO_BIG));
    assert_eq!(run(&e, &["APPEND", "big", ""]), int(1 << 20));
    assert_eq!(run(&e, &["SETRANGE", "big", "1048575", "x"]), int(1 << 20));
    assert_eq!(run(&e, &["SETRANGE", "big", "1048576", ""]), int(1 << 20));
    assert_eq!(run(&e, &["SETRANGE", "big", "1048576", "x"]), err(TOO_BIG));
    assert_eq!(run(&e, &["SETRANGE", "nk", "1048576", "x"]), err(TOO_BIG));
    assert_eq!(run(&e, &["SETRANGE", "nk", "1048575", "x"]), int(1 << 20));
}

#[test]
fn counters() {
    let e = seeded();
    assert_eq!(run(&e, &["INCR", "n"]), int(1));
    assert_eq!(encoding(&e, "n"), Some("int"));
    assert_eq!(run(&e, &["INCRBY", "n", "10"]), int(11));
    assert_eq!(run(&e, &["DECR", "n"]), int(10));
    assert_eq!(run(&e, &["DECRBY", "n", "5"]), int(5));
    assert_eq!(run(&e, &["DECRBY", "n", "-5"]), int(10));
    assert_eq!(run(&e, &["DECR", "m"]), int(-1));
    assert_eq!(run(&e, &["INCR", "l"]), err(WRONGTYPE));
    assert_eq!(run(&e, &["INCRBY", "l", "abc"]), err(NOT_INT));
    assert_eq!(run(&e, &["INCRBY", "n", "1.5"]), err(NOT_INT));
    assert_eq!(
        run(&e, &["INCRBY", "n", "9223372036854775808"]),
        err(NOT_INT)
    );
    for bad in [
        "abc",
        " 1",
        "1 ",
        "01",
        "+1",
        "-0",
        "1.0",
        "12345678901234567890123",
    ] {
        run(&e, &["SET", "bad", bad]);
        assert_eq!(run(&e, &["INCR", "bad"]), err(NOT_INT), "{bad}");
    }
    const OVERFLOW: &str = "ERR increment or decrement would overflow";
    run(&e, &["SET", "max", "9223372036854775807"]);
    assert_eq!(run(&e, &["INCR", "max"]), err(OVERFLOW));
    assert_eq!(run(&e, &["INCRBY", "max", "-1"]), int(9223372036854775806));
    run(&e, &["SET", "min", "-9223372036854775808"]);
    assert_eq!(run(&e, &["DECR", "min"]), err(OVERFLOW));
    run(&e, &["SET", "five", "5"]);
    assert_eq!(
        run(&e, &["DECRBY", "five", "9223372036854775807"]),
        int(-9223372036854775802)
    );
    assert_eq!(
        run(&e, &["DECRBY", "five", "9223372036854775807"]),
        err(OVERFLOW)
    );
    // Negating i64::MIN fails before the key is even looked at.
    for key in ["n", "nokey", "l"] {
        assert_eq!(
            run(&e, &["DECRBY", key, "-9223372036854775808"]),
            err("ERR decrement would overflow")
        );
    }
    // An in-place edit makes a raw string; INCR makes it an int again, keeping the TTL.
    run(&e, &["SETEX", "t", "100", "123456"]);
    assert_eq!(run(&e, &["SETRANGE", "t", "0", "9"]), int(6));
    assert_eq!(encoding(&e, "t"), Some("raw"));
    assert_eq!(run(&e, &["INCR", "t"]), int(923457));
    assert_eq!(encoding(&e, "t"), Some("int"));
    assert!(ttl_ms(&e, "t").flatten().is_some());
    assert_eq!(
        run(&e, &["INCR"]),
        err("ERR wrong number of arguments for 'incr' command")
    );
}

#[test]
fn incrbyfloat() {
    let e = seeded();
    assert_eq!(run(&e, &["INCRBYFLOAT", "f", "1.5"]), bulk("1.5"));
    assert_eq!(encoding(&e, "f"), Some("embstr"));
    assert_eq!(run(&e, &["INCRBYFLOAT", "f", "0.1"]), bulk("1.6"));
    assert_eq!(run(&e, &["INCRBYFLOAT", "i", "3"]), bulk("3"));
    assert_eq!(encoding(&e, "i"), Some("embstr"));
    assert_eq!(run(&e, &["INCRBYFLOAT", "i", "3.0e3"]), bulk("3003"));
    run(&e, &["SET", "h", "5.0e3"]);
    assert_eq!(run(&e, &["INCRBYFLOAT", "h", "0"]), bulk("5000"));
    assert_eq!(run(&e, &["INCRBYFLOAT", "hex", "0x10"]), bulk("16"));
    assert_eq!(run(&e, &["INCRBYFLOAT", "z", "-0"]), bulk("0"));
    assert_eq!(run(&e, &["INCRBYFLOAT", "tiny", "1e-400"]), bulk("0"));
    assert_eq!(
        run(
            &e,
            &[
                "INCRBYFLOAT",
                "x",
                "1234567890123456789012345678901234567890"
            ]
        ),
        bulk("1234567890123456788999898750329779388416")
    );
    assert_eq!(encoding(&e, "x"), Some("embstr"));
    run(&e, &["SET", "g", "1e308"]);
    let Reply::Bulk(huge) = run(&e, &["INCRBYFLOAT", "g", "1e308"]) else {
        panic!("bulk reply expected");
    };
    assert!(huge.starts_with(b"1999999999999999999933717593116912913211"));
    assert_eq!(huge.len(), 309);
    assert_eq!(encoding(&e, "g"), Some("raw"));
    const NOT_FLOAT: &str = "ERR value is not a valid float";
    assert_eq!(run(&e, &["INCRBYFLOAT", "f", "abc"]), err(NOT_FLOAT));
    for bad in [" 1", "1e5000", "nan"] {
        assert_eq!(run(&e, &["INCRBYFLOAT", "k", bad]), err(NOT_FLOAT), "{bad}");
    }
    for bad in ["abc", " 1", "1 "] {
        run(&e, &["SET", "bad", bad]);
        assert_eq!(
            run(&e, &["INCRBYFLOAT", "bad", "1"]),
            err(NOT_FLOAT),
            "{bad}"
        );
    }
    run(&e, &["SET", "negzero", "-0"]);
    assert_eq!(run(&e, &["INCRBYFLOAT", "negzero", "1"]), bulk("1"));
    assert_eq!(
        run(&e, &["INCRBYFLOAT", "f", "inf"]),
        err("ERR increment would produce NaN or Infinity")
    );
    assert_eq!(run(&e, &["INCRBYFLOAT", "l", "1"]), err(WRONGTYPE));
    assert_eq!(run(&e, &["INCRBYFLOAT", "l", "abc"]), err(WRONGTYPE));
    run(&e, &["SETEX", "t", "100", "5"]);
    assert_eq!(run(&e, &["INCRBYFLOAT", "t", "1"]), bulk("6"));
    assert!(ttl_ms(&e, "t").flatten().is_some());
}

#[test]
fn getrange_and_substr() {
    let e = seeded();
    run(&e, &["SET", "s", "Hello World"]);
    let cases: &[(&str, &str, &str)] = &[
        ("0", "4", "Hello"),
        ("-3", "-1", "rld"),
        ("0", "-1", "Hello World"),
        ("10", "100", "d"),
        ("11", "100", ""),
        ("5", "3", ""),
        ("-100", "-50", "H"),
        ("-100", "2", "Hel"),
        ("3", "-100", ""),
        ("0", "-100", "H"),
        ("-1", "-2", ""),
        ("9223372036854775807", "-9223372036854775808", ""),
    ];
    for (start, end, want) in cases {
        assert_eq!(
            run(&e, &["GETRANGE", "s", start, end]),
            bulk(want),
            "{start} {end}"
        );
        assert_eq!(
            run(&e, &["SUBSTR", "s", start, end]),
            bulk(want),
            "{start} {end}"
        );
    }
    assert_eq!(run(&e, &["GETRANGE", "nokey", "0", "-1"]), bulk(""));
    run(&e, &["SET", "e", ""]);
    assert_eq!(run(&e, &["GETRANGE", "e", "-1", "0"]), bulk(""));
    run(&e, &["SET", "n", "12345"]);
    assert_eq!(run(&e, &["GETRANGE", "n", "1", "2"]), bulk("23"));
    assert_eq!(run(&e, &["GETRANGE", "l", "0", "1"]), err(WRONGTYPE));
    assert_eq!(run(&e, &["SUBSTR", "l", "0", "1"]), err(WRONGTYPE));
    assert_eq!(run(&e, &["GETRANGE", "s", "a", "1"]), err(NOT_INT));
    assert_eq!(run(&e, &["GETRANGE", "s", "0", "b"]), err(NOT_INT));
    assert_eq!(run(&e, &["GETRANGE", "nokey", "a", "1"]), err(NOT_INT));
    assert_eq!(run(&e, &["GETRANGE", "l", "a", "1"]), err(NOT_INT));
    assert_eq!(
        run(&e, &["GETRANGE", "s", "0"]),
        err("ERR wrong number of arguments for 'getrange' command")
    );
}

#[test]
fn setrange() {
    let e = seeded();
    run(&e, &["SET", "s", "Hello World"]);
    assert_eq!(run(&e, &["SETRANGE", "s", "6", "Redis"]), int(11));
    assert_eq!(run(&e, &["GET", "s"]), bulk("Hello Redis"));
    assert_eq!(encoding(&e, "s"), Some("raw"));
    assert_eq!(run(&e, &["SETRANGE", "s", "20", "X"]), int(21));
    assert_eq!(
        run(&e, &["GET", "s"]),
        Reply::Bulk(b"Hello Redis\0\0\0\0\0\0\0\0\0X".to_vec())
    );
    assert_eq!(run(&e, &["SETRANGE", "nokey", "0", ""]), int(0));
    assert_eq!(
        run(&e, &["SETRANGE", "nokey", "9223372036854775807", ""]),
        int(0)
    );
    assert_eq!(run(&e, &["GET", "nokey"]), Reply::Null);
    assert_eq!(run(&e, &["SETRANGE", "nokey", "2", "ab"]), int(4));
    assert_eq!(run(&e, &["GET", "nokey"]), Reply::Bulk(b"\0\0ab".to_vec()));
    assert_eq!(encoding(&e, "nokey"), Some("raw"));
    const OUT_OF_RANGE: &str = "ERR offset is out of range";
    assert_eq!(run(&e, &["SETRANGE", "s", "-1", "x"]), err(OUT_OF_RANGE));
    assert_eq!(run(&e, &["SETRANGE", "l", "-1", "x"]), err(OUT_OF_RANGE));
    assert_eq!(run(&e, &["SETRANGE", "s", "a", "x"]), err(NOT_INT));
    assert_eq!(run(&e, &["SETRANGE", "l", "0", "x"]), err(WRONGTYPE));
    assert_eq!(run(&e, &["SETRANGE", "l", "0", ""]), err(WRONGTYPE));
    assert_eq!(
        run(&e, &["SETRANGE", "l", "536870912", "x"]),
        err(WRONGTYPE)
    );
    const TOO_BIG: &str = "ERR string exceeds maximum allowed size (proto-max-bulk-len)";
    assert_eq!(run(&e, &["SETRANGE", "s", "536870912", "x"]), err(TOO_BIG));
    assert_eq!(
        run(&e, &["SETRANGE", "s", "9223372036854775807", "x"]),
        err(TOO_BIG)
    );
    assert_eq!(
        run(&e, &["SETRANGE", "s", "9223372036854775807", ""]),
        int(21)
    );
    // An empty patch leaves an int or embstr encoding alone.
    run(&e, &["SET", "n", "123"]);
    assert_eq!(run(&e, &["SETRANGE", "n", "0", ""]), int(3));
    assert_eq!(encoding(&e, "n"), Some("int"));
    assert_eq!(run(&e, &["SETRANGE", "n", "0", "4"]), int(3));
    assert_eq!(encoding(&e, "n"), Some("raw"));
    assert_eq!(run(&e, &["GET", "n"]), bulk("423"));
    run(&e, &["SETEX", "t", "100", "abc"]);
    assert_eq!(run(&e, &["SETRANGE", "t", "1", "X"]), int(3));
    assert!(ttl_ms(&e, "t").flatten().is_some());
}

/// One LCS `IDX` match as Redis replies it.
fn lcs_match(a: (i64, i64), b: (i64, i64), len: Option<i64>) -> Reply {
    let mut v = vec![
        Reply::Array(vec![int(a.0), int(a.1)]),
        Reply::Array(vec![int(b.0), int(b.1)]),
    ];
    v.extend(len.map(int));
    Reply::Array(v)
}

fn lcs_idx(matches: Vec<Reply>, len: i64) -> Reply {
    Reply::Map(vec![
        (bulk("matches"), Reply::Array(matches)),
        (bulk("len"), int(len)),
    ])
}

#[test]
fn lcs() {
    let e = seeded();
    run(&e, &["MSET", "key1", "ohmytext", "key2", "mynewtext"]);
    assert_eq!(run(&e, &["LCS", "key1", "key2"]), bulk("mytext"));
    assert_eq!(run(&e, &["LCS", "key1", "key2", "LEN"]), int(6));
    let text = |len| lcs_match((4, 7), (5, 8), len);
    let my = |len| lcs_match((2, 3), (0, 1), len);
    assert_eq!(
        run(&e, &["LCS", "key1", "key2", "IDX"]),
        lcs_idx(vec![text(None), my(None)], 6)
    );
    assert_eq!(
        run(&e, &["LCS", "key1", "key2", "idx", "minmatchlen", "4"]),
        lcs_idx(vec![text(None)], 6)
    );
    assert_eq!(
        run(
            &e,
            &[
                "LCS",
                "key1",
                "key2",
                "idx",
                "minmatchlen",
                "4",
                "withmatchlen"
            ]
        ),
        lcs_idx(vec![text(Some(4))], 6)
    );
    assert_eq!(
        run(&e, &["LCS", "key1", "key2", "idx", "withmatchlen"]),
        lcs_idx(vec![text(Some(4)), my(Some(2))], 6)
    );
    assert_eq!(
        run(&e, &["LCS", "key1", "key2", "minmatchlen", "-5", "idx"]),
        lcs_idx(vec![text(None), my(None)], 6)
    );
    assert_eq!(
        run(
            &e,
            &[
                "LCS",
                "key1",
                "key2",
                "IDX",
                "WITHMATCHLEN",
                "MINMATCHLEN",
                "2",
                "MINMATCHLEN",
                "5"
            ]
        ),
        lcs_idx(vec![], 6)
    );
    assert_eq!(
        run(
            &e,
            &[
                "LCS",
                "key1",
                "key1",
                "withmatchlen",
                "idx",
                "minmatchlen",
                "9223372036854775807"
            ]
        ),
        lcs_idx(vec![], 8)
    );
    run(&e, &["SET", "a", "abc"]);
    assert_eq!(
        run(&e, &["LCS", "a", "a", "idx", "withmatchlen"]),
        lcs_idx(vec![lcs_match((0, 2), (0, 2), Some(3))], 3)
    );
    assert_eq!(
        run(&e, &["LCS", "key1", "key2", "withmatchlen"]),
        bulk("mytext")
    );
    assert_eq!(
        run(
            &e,
            &["LCS", "key1", "key2", "len", "len", "minmatchlen", "3"]
        ),
        int(6)
    );
    assert_eq!(run(&e, &["LCS", "key1", "nokey"]), bulk(""));
    assert_eq!(run(&e, &["LCS", "nokey", "nokey2", "len"]), int(0));
    assert_eq!(
        run(&e, &["LCS", "nokey", "nokey2", "idx"]),
        lcs_idx(vec![], 0)
    );
    const NOT_STRINGS: &str = "ERR The specified keys must contain string values";
    assert_eq!(run(&e, &["LCS", "key1", "l"]), err(NOT_STRINGS));
    assert_eq!(run(&e, &["LCS", "l", "key1", "foo"]), err(NOT_STRINGS));
    const BOTH: &str = "ERR If you want both the length and indexes, please just use IDX.";
    assert_eq!(run(&e, &["LCS", "key1", "key2", "len", "idx"]), err(BOTH));
    assert_eq!(run(&e, &["LCS", "key1", "key2", "foo"]), err(SYNTAX));
    assert_eq!(
        run(&e, &["LCS", "key1", "key2", "minmatchlen"]),
        err(SYNTAX)
    );
    assert_eq!(
        run(&e, &["LCS", "key1", "key2", "minmatchlen", "abc"]),
        err(NOT_INT)
    );
    assert_eq!(
        run(
            &e,
            &["LCS", "key1", "key2", "minmatchlen", "9223372036854775808"]
        ),
        err(NOT_INT)
    );
    assert_eq!(
        run(&e, &["LCS", "key1"]),
        err("ERR wrong number of arguments for 'lcs' command")
    );
}

#[test]
fn lcs_refuses_tables_over_proto_max_bulk_len() {
    let e = engine();
    e.config()
        .set_many(&[("proto-max-bulk-len", "1mb")])
        .expect("valid setting");
    // (511+1) * (511+1) * 4 bytes is exactly 1 MiB and allowed; (511+1) * (512+1) * 4
    // is over.
    run(&e, &["SET", "a", &"a".repeat(511)]);
    run(&e, &["SET", "b", &"b".repeat(511)]);
    run(&e, &["SET", "c", &"c".repeat(512)]);
    assert_eq!(run(&e, &["LCS", "a", "b", "len"]), int(0));
    assert_eq!(
        run(&e, &["LCS", "a", "c", "len"]),
        err("ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len")
    );
    assert_eq!(run(&e, &["LCS", "a", "nokey"]), bulk(""));
}

#[test]
fn only_reads_count_keyspace_hits_and_misses() {
    use std::sync::atomic::Ordering;
    let e = engine();
    run(&e, &["SET", "s", "1"]);
    let stats = |e: &Engine| {
        let s = e.keyspace().stats();
        (
            s.keyspace_hits.load(Ordering::Relaxed),
            s.keyspace_misses.load(Ordering::Relaxed),
        )
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
