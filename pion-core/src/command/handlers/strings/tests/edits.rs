//! Counters, ranges, `APPEND` and `SETRANGE`.

use super::{bulk, encoding, engine, err, int, run, seeded, ttl_ms, NOT_INT, WRONGTYPE};
use crate::Reply;

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
