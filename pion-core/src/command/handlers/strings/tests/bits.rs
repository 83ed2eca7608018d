//! The bitmap commands: `SETBIT`, `GETBIT`, `BITCOUNT`, `BITPOS`, `BITOP`, `BITFIELD`
//! and `BITFIELD_RO`, with replies and error texts checked against Redis 7.0.15.

use super::{bulk, encoding, engine, err, int, run, seeded, ttl_ms, NOT_INT, SYNTAX, WRONGTYPE};
use crate::Reply;

const BAD_OFFSET: &str = "ERR bit offset is not an integer or out of range";
const BAD_BIT: &str = "ERR bit is not an integer or out of range";
const BAD_TYPE: &str =
    "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.";

fn ints(values: &[i64]) -> Reply {
    Reply::Array(values.iter().map(|&v| Reply::Integer(v)).collect())
}

#[test]
fn setbit_and_getbit() {
    let e = seeded();
    assert_eq!(run(&e, &["SETBIT", "b", "7", "1"]), int(0));
    assert_eq!(run(&e, &["GET", "b"]), bulk("\x01"));
    assert_eq!(encoding(&e, "b"), Some("raw"));
    assert_eq!(run(&e, &["SETBIT", "b", "7", "1"]), int(1));
    assert_eq!(run(&e, &["SETBIT", "b", "7", "0"]), int(1));
    assert_eq!(run(&e, &["SETBIT", "b", "17", "1"]), int(0));
    assert_eq!(run(&e, &["STRLEN", "b"]), int(3));
    assert_eq!(run(&e, &["GETBIT", "b", "17"]), int(1));
    assert_eq!(run(&e, &["GETBIT", "b", "16"]), int(0));
    assert_eq!(run(&e, &["GETBIT", "b", "4294967295"]), int(0));
    assert_eq!(run(&e, &["GETBIT", "nokey", "0"]), int(0));
    // "hello": 'h' is 0x68 = 0110 1000.
    assert_eq!(run(&e, &["GETBIT", "s", "1"]), int(1));
    assert_eq!(run(&e, &["GETBIT", "s", "0"]), int(0));
    assert_eq!(
        encoding(&e, "s"),
        Some("embstr"),
        "reads leave the encoding"
    );
    // An int-encoded value is edited as its decimal text, and becomes raw.
    assert_eq!(run(&e, &["SET", "n", "12"]), Reply::ok());
    assert_eq!(run(&e, &["SETBIT", "n", "0", "0"]), int(0));
    assert_eq!(encoding(&e, "n"), Some("raw"));
    assert_eq!(run(&e, &["GET", "n"]), bulk("12"));
    // The time to live stays, as with SETRANGE.
    assert_eq!(run(&e, &["SETEX", "t", "100", "v"]), Reply::ok());
    assert_eq!(run(&e, &["SETBIT", "t", "100", "1"]), int(0));
    assert!(ttl_ms(&e, "t").flatten().is_some());
}

#[test]
fn setbit_errors() {
    let e = seeded();
    for bad in ["-1", "4294967296", "x", "", "#1", "01", "1.0"] {
        assert_eq!(
            run(&e, &["SETBIT", "b", bad, "1"]),
            err(BAD_OFFSET),
            "{bad:?}"
        );
        assert_eq!(run(&e, &["GETBIT", "b", bad]), err(BAD_OFFSET), "{bad:?}");
    }
    for bad in ["2", "-1", "x", " 1", "01"] {
        assert_eq!(run(&e, &["SETBIT", "b", "0", bad]), err(BAD_BIT), "{bad:?}");
    }
    // The offset is checked before the bit, both before the type.
    assert_eq!(run(&e, &["SETBIT", "l", "-1", "2"]), err(BAD_OFFSET));
    assert_eq!(run(&e, &["SETBIT", "l", "0", "2"]), err(BAD_BIT));
    assert_eq!(run(&e, &["SETBIT", "l", "0", "1"]), err(WRONGTYPE));
    assert_eq!(run(&e, &["GETBIT", "l", "0"]), err(WRONGTYPE));
    assert_eq!(run(&e, &["EXISTS", "b"]), int(0));
    // The bound follows proto-max-bulk-len.
    e.config()
        .set_many(&[("proto-max-bulk-len", "1mb")])
        .expect("valid setting");
    assert_eq!(run(&e, &["SETBIT", "b", "8388608", "1"]), err(BAD_OFFSET));
    assert_eq!(run(&e, &["SETBIT", "b", "8388607", "1"]), int(0));
    assert_eq!(run(&e, &["STRLEN", "b"]), int(1024 * 1024));
}

#[test]
fn bitcount_ranges() {
    let e = seeded();
    assert_eq!(run(&e, &["SET", "k", "foobar"]), Reply::ok());
    assert_eq!(run(&e, &["BITCOUNT", "k"]), int(26));
    assert_eq!(run(&e, &["BITCOUNT", "k", "0", "0"]), int(4));
    assert_eq!(run(&e, &["BITCOUNT", "k", "1", "1"]), int(6));
    assert_eq!(run(&e, &["BITCOUNT", "k", "-2", "-1"]), int(7));
    assert_eq!(run(&e, &["BITCOUNT", "k", "1", "1", "byte"]), int(6));
    assert_eq!(run(&e, &["BITCOUNT", "k", "5", "30", "BIT"]), int(17));
    assert_eq!(run(&e, &["BITCOUNT", "k", "0", "-1", "bit"]), int(26));
    assert_eq!(run(&e, &["BITCOUNT", "k", "-100", "100"]), int(26));
    assert_eq!(run(&e, &["BITCOUNT", "k", "3", "2"]), int(0));
    assert_eq!(run(&e, &["BITCOUNT", "k", "-1", "-5"]), int(0));
    // Reversed negative ranges count 0 before the unit keyword is read.
    assert_eq!(run(&e, &["BITCOUNT", "k", "-1", "-5", "foo"]), int(0));
    assert_eq!(run(&e, &["BITCOUNT", "k", "0", "1", "foo"]), err(SYNTAX));
    assert_eq!(run(&e, &["BITCOUNT", "k", "1"]), err(SYNTAX));
    assert_eq!(
        run(&e, &["BITCOUNT", "k", "1", "2", "bit", "x"]),
        err(SYNTAX)
    );
    assert_eq!(run(&e, &["BITCOUNT", "k", "x", "1"]), err(NOT_INT));
    // A missing key counts 0 before the arguments are looked at.
    assert_eq!(run(&e, &["BITCOUNT", "nokey"]), int(0));
    assert_eq!(run(&e, &["BITCOUNT", "nokey", "1"]), int(0));
    assert_eq!(run(&e, &["BITCOUNT", "l"]), err(WRONGTYPE));
    assert_eq!(run(&e, &["SET", "empty", ""]), Reply::ok());
    assert_eq!(run(&e, &["BITCOUNT", "empty", "0", "-1"]), int(0));
}

#[test]
fn bitpos_edges() {
    let e = seeded();
    assert_eq!(run(&e, &["SET", "ones", "\u{7f}"]), Reply::ok());
    assert_eq!(run(&e, &["BITPOS", "ones", "0"]), int(0));
    assert_eq!(run(&e, &["BITPOS", "ones", "1"]), int(1));
    let all = e.execute(0, &[&b"SET"[..], b"f", &[0xFF, 0xFF, 0xFF]]);
    assert_eq!(all, Reply::ok());
    // No clear bit: without an end the string reads as zero-padded; with one, -1.
    assert_eq!(run(&e, &["BITPOS", "f", "0"]), int(24));
    assert_eq!(run(&e, &["BITPOS", "f", "0", "1"]), int(24));
    assert_eq!(run(&e, &["BITPOS", "f", "0", "1", "-1"]), int(-1));
    assert_eq!(run(&e, &["BITPOS", "f", "0", "3", "30", "bit"]), int(-1));
    assert_eq!(run(&e, &["BITPOS", "f", "1", "3", "30", "bit"]), int(3));
    assert_eq!(run(&e, &["BITPOS", "f", "0", "20"]), int(-1));
    let bytes = e.execute(0, &[&b"SET"[..], b"z", &[0x00, 0x0F, 0x00]]);
    assert_eq!(bytes, Reply::ok());
    assert_eq!(run(&e, &["BITPOS", "z", "1"]), int(12));
    assert_eq!(run(&e, &["BITPOS", "z", "1", "2"]), int(-1));
    assert_eq!(run(&e, &["BITPOS", "z", "1", "13", "-1", "BIT"]), int(13));
    assert_eq!(run(&e, &["BITPOS", "z", "0", "12", "15", "bit"]), int(-1));
    assert_eq!(run(&e, &["BITPOS", "z", "0", "12", "16", "bit"]), int(16));
    assert_eq!(run(&e, &["BITPOS", "z", "1", "-2", "-1", "byte"]), int(12));
    // Missing and empty keys.
    assert_eq!(run(&e, &["BITPOS", "nokey", "0"]), int(0));
    assert_eq!(run(&e, &["BITPOS", "nokey", "1", "foo"]), int(-1));
    assert_eq!(run(&e, &["SET", "empty", ""]), Reply::ok());
    assert_eq!(run(&e, &["BITPOS", "empty", "0"]), int(-1));
    assert_eq!(run(&e, &["BITPOS", "empty", "1"]), int(-1));
    // Errors, in Redis's order: the bit, the type, start, the unit, end.
    let bad_bit = err("ERR The bit argument must be 1 or 0.");
    assert_eq!(run(&e, &["BITPOS", "l", "2"]), bad_bit);
    assert_eq!(run(&e, &["BITPOS", "nokey", "x"]), err(NOT_INT));
    assert_eq!(run(&e, &["BITPOS", "l", "1"]), err(WRONGTYPE));
    assert_eq!(run(&e, &["BITPOS", "z", "1", "x"]), err(NOT_INT));
    assert_eq!(run(&e, &["BITPOS", "z", "1", "0", "x", "foo"]), err(SYNTAX));
    assert_eq!(run(&e, &["BITPOS", "z", "1", "0", "x"]), err(NOT_INT));
    assert_eq!(
        run(&e, &["BITPOS", "z", "1", "0", "1", "bit", "x"]),
        err(SYNTAX)
    );
}

#[test]
fn bitop_lengths_and_deletes() {
    let e = seeded();
    let set = |k: &str, v: &[u8]| e.execute(0, &[&b"SET"[..], k.as_bytes(), v]);
    assert_eq!(set("a", &[0xF0, 0x0F, 0xAA]), Reply::ok());
    assert_eq!(set("b", &[0xFF]), Reply::ok());
    assert_eq!(run(&e, &["BITOP", "AND", "d", "a", "b"]), int(3));
    let get = |k: &str| run(&e, &["GET", k]);
    assert_eq!(get("d"), Reply::Bulk(vec![0xF0, 0, 0]));
    assert_eq!(encoding(&e, "d"), Some("raw"));
    assert_eq!(run(&e, &["BITOP", "or", "d", "a", "b", "nokey"]), int(3));
    assert_eq!(get("d"), Reply::Bulk(vec![0xFF, 0x0F, 0xAA]));
    assert_eq!(run(&e, &["BITOP", "XOR", "d", "a", "b"]), int(3));
    assert_eq!(get("d"), Reply::Bulk(vec![0x0F, 0x0F, 0xAA]));
    assert_eq!(run(&e, &["BITOP", "NOT", "d", "a"]), int(3));
    assert_eq!(get("d"), Reply::Bulk(vec![0x0F, 0xF0, 0x55]));
    // Words and tails: a 21-byte operand against a 10-byte one.
    let long: Vec<u8> = (1..=21).collect();
    assert_eq!(set("long", &long), Reply::ok());
    assert_eq!(set("short", &[0x0F; 10]), Reply::ok());
    assert_eq!(run(&e, &["BITOP", "AND", "d", "short", "long"]), int(21));
    let mut and: Vec<u8> = long.iter().map(|b| b & 0x0F).collect();
    and[10..].fill(0);
    assert_eq!(get("d"), Reply::Bulk(and));
    // The result overwrites any type and drops the time to live.
    assert_eq!(run(&e, &["EXPIRE", "d", "100"]), int(1));
    assert_eq!(run(&e, &["BITOP", "OR", "l", "a"]), int(3));
    assert_eq!(run(&e, &["TYPE", "l"]), Reply::status("string"));
    assert_eq!(run(&e, &["BITOP", "OR", "d", "a"]), int(3));
    assert_eq!(ttl_ms(&e, "d"), Some(None));
    // An empty result deletes the destination.
    assert_eq!(run(&e, &["BITOP", "AND", "d", "nokey", "nokey2"]), int(0));
    assert_eq!(run(&e, &["EXISTS", "d"]), int(0));
    assert_eq!(run(&e, &["BITOP", "NOT", "d", "nokey"]), int(0));
    // Errors.
    assert_eq!(
        run(&e, &["BITOP", "NOT", "d", "a", "b"]),
        err("ERR BITOP NOT must be called with a single source key.")
    );
    assert_eq!(run(&e, &["BITOP", "NAND", "d", "a"]), err(SYNTAX));
    assert_eq!(run(&e, &["RPUSH", "list", "x"]), int(1));
    assert_eq!(run(&e, &["BITOP", "AND", "d", "a", "list"]), err(WRONGTYPE));
    assert_eq!(
        run(&e, &["BITOP", "AND", "d"]),
        err("ERR wrong number of arguments for 'bitop' command")
    );
}

#[test]
fn bitfield_operations() {
    let e = seeded();
    let bf = |args: &[&str]| {
        let mut argv = vec!["BITFIELD"];
        argv.extend_from_slice(args);
        run(&e, &argv)
    };
    assert_eq!(
        bf(&["b", "SET", "u5", "7", "23", "GET", "u5", "7"]),
        ints(&[0, 23])
    );
    assert_eq!(run(&e, &["GET", "b"]), Reply::Bulk(vec![0x01, 0x70]));
    assert_eq!(encoding(&e, "b"), Some("raw"));
    assert_eq!(bf(&["b", "INCRBY", "u5", "7", "10"]), ints(&[1]));
    assert_eq!(
        bf(&["b", "OVERFLOW", "SAT", "INCRBY", "u5", "7", "100"]),
        ints(&[31])
    );
    assert_eq!(
        bf(&["b", "OVERFLOW", "FAIL", "INCRBY", "u5", "7", "1", "GET", "u5", "7"]),
        Reply::Array(vec![Reply::Null, Reply::Integer(31)])
    );
    // `#N` offsets count fields of the type's width.
    assert_eq!(
        bf(&["h", "SET", "i8", "#1", "-1", "GET", "u8", "8"]),
        ints(&[0, 255])
    );
    assert_eq!(run(&e, &["STRLEN", "h"]), int(2));
    // The widest types and their limits.
    assert_eq!(
        bf(&[
            "w",
            "SET",
            "i64",
            "0",
            "-9223372036854775808",
            "INCRBY",
            "i64",
            "0",
            "-1",
            "OVERFLOW",
            "SAT",
            "INCRBY",
            "i64",
            "0",
            "1",
            "SET",
            "u63",
            "64",
            "9223372036854775807",
            "INCRBY",
            "u63",
            "64",
            "1"
        ]),
        ints(&[
            0,
            9223372036854775807,
            9223372036854775807,
            0,
            9223372036854775807
        ])
    );
    // Redis's arithmetic: -2^63 into an i8 under SAT stores 127.
    assert_eq!(
        bf(&[
            "q",
            "OVERFLOW",
            "SAT",
            "SET",
            "i8",
            "0",
            "-9223372036854775808",
            "GET",
            "i8",
            "0"
        ]),
        ints(&[0, 127])
    );
    // Reads only: a missing key reads as zeros and is not created.
    assert_eq!(
        bf(&["nokey", "GET", "i8", "0", "GET", "u4", "100"]),
        ints(&[0, 0])
    );
    assert_eq!(run(&e, &["EXISTS", "nokey"]), int(0));
    assert_eq!(bf(&["nokey"]), ints(&[]));
    // A failed write still makes room for it, as in Redis.
    assert_eq!(
        bf(&["g", "OVERFLOW", "FAIL", "INCRBY", "u2", "100", "10"]),
        Reply::Array(vec![Reply::Null])
    );
    assert_eq!(run(&e, &["STRLEN", "g"]), int(13));
}

#[test]
fn bitfield_errors() {
    let e = seeded();
    let bf = |args: &[&str]| {
        let mut argv = vec!["BITFIELD"];
        argv.extend_from_slice(args);
        run(&e, &argv)
    };
    for bad in ["u64", "i65", "i0", "I8", "x8", "", "u"] {
        assert_eq!(bf(&["k", "GET", bad, "0"]), err(BAD_TYPE), "{bad:?}");
    }
    for bad in ["#-1", "-1", "4294967296", "x", "#"] {
        assert_eq!(bf(&["k", "GET", "i8", bad]), err(BAD_OFFSET), "{bad:?}");
    }
    assert_eq!(bf(&["k", "GET", "i8", "4294967295"]), ints(&[0]));
    assert_eq!(bf(&["k", "SET", "i8", "0", "x"]), err(NOT_INT));
    assert_eq!(
        bf(&["k", "OVERFLOW", "foo"]),
        err("ERR Invalid OVERFLOW type specified")
    );
    assert_eq!(bf(&["k", "OVERFLOW"]), err(SYNTAX));
    assert_eq!(bf(&["k", "GET", "i8"]), err(SYNTAX));
    assert_eq!(bf(&["k", "foo"]), err(SYNTAX));
    // Nothing runs when a later subcommand is wrong.
    assert_eq!(
        bf(&["k", "SET", "i8", "0", "1", "GET", "i9x", "0"]),
        err(BAD_TYPE)
    );
    assert_eq!(run(&e, &["EXISTS", "k"]), int(0));
    assert_eq!(bf(&["l", "GET", "i8", "0"]), err(WRONGTYPE));
    assert_eq!(bf(&["l", "SET", "i8", "0", "1"]), err(WRONGTYPE));
    // BITFIELD_RO: GET only, checked after the arguments parse.
    assert_eq!(
        run(&e, &["BITFIELD_RO", "s", "GET", "u8", "0"]),
        ints(&[104])
    );
    assert_eq!(
        run(&e, &["BITFIELD_RO", "k", "SET", "i8", "0", "x"]),
        err(NOT_INT)
    );
    assert_eq!(
        run(&e, &["BITFIELD_RO", "k", "SET", "i8", "0", "1"]),
        err("ERR BITFIELD_RO only supports the GET subcommand")
    );
    assert_eq!(
        run(&e, &["BITFIELD_RO", "l", "GET", "i8", "0"]),
        err(WRONGTYPE)
    );
}

#[test]
fn popcount_of_large_values() {
    let e = engine();
    let v: Vec<u8> = (0..100_003u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 24) as u8)
        .collect();
    let expect: i64 = v.iter().map(|b| i64::from(b.count_ones())).sum();
    assert_eq!(e.execute(0, &[&b"SET"[..], b"big", &v]), Reply::ok());
    assert_eq!(run(&e, &["BITCOUNT", "big"]), int(expect));
    let tail: i64 = v[99_000..].iter().map(|b| i64::from(b.count_ones())).sum();
    assert_eq!(run(&e, &["BITCOUNT", "big", "99000", "-1"]), int(tail));
}
