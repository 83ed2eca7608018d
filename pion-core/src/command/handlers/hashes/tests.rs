//! Hash command tests; every expected reply was checked against Redis 7.0.

use crate::engine::{Engine, EngineOptions};
use crate::reply::Reply;
use crate::test_support::{bulks, err, WRONGTYPE};

fn engine() -> Engine {
    Engine::in_memory(EngineOptions::default())
}

fn b(s: &str) -> Reply {
    Reply::bulk(s)
}

/// The `OBJECT ENCODING` of a key, read straight from the keyspace.
pub(crate) fn encoding(e: &Engine, key: &str) -> Option<&'static str> {
    let mut l = e.keyspace().lock_keys(&[key], e.now_ms());
    l.get(0, key.as_bytes())
        .ok()
        .flatten()
        .map(|v| v.encoding())
}

fn sorted(reply: Reply) -> Vec<Vec<u8>> {
    let items = match reply {
        Reply::Array(v) | Reply::Set(v) => v,
        other => panic!("not a list: {other:?}"),
    };
    let mut out: Vec<Vec<u8>> = items
        .into_iter()
        .map(|r| r.as_bytes().map(<[u8]>::to_vec).unwrap_or_default())
        .collect();
    out.sort();
    out
}

#[test]
fn hset_hget_and_friends() {
    let e = engine();
    assert_eq!(
        e.execute(0, &["HSET", "h", "f"]),
        err("ERR wrong number of arguments for 'hset' command")
    );
    assert_eq!(
        e.execute(0, &["HSET", "h", "f", "v", "g"]),
        err("ERR wrong number of arguments for 'hset' command")
    );
    assert_eq!(encoding(&e, "h"), None);
    assert_eq!(
        e.execute(0, &["HSET", "h", "f", "v", "g", "w", "f", "v2"]),
        Reply::Integer(2)
    );
    assert_eq!(
        e.execute(0, &["HGETALL", "h"]),
        Reply::Map(vec![(b("f"), b("v2")), (b("g"), b("w"))])
    );
    assert_eq!(e.execute(0, &["HSETNX", "h", "f", "x"]), Reply::Integer(0));
    assert_eq!(e.execute(0, &["HSETNX", "h", "n", "x"]), Reply::Integer(1));
    assert_eq!(e.execute(0, &["HMSET", "h", "a", "b"]), Reply::ok());
    assert_eq!(
        e.execute(0, &["HMSET", "h", "a", "b", "c"]),
        err("ERR wrong number of arguments for 'hmset' command")
    );
    assert_eq!(e.execute(0, &["HGET", "h", "nope"]), Reply::Null);
    assert_eq!(e.execute(0, &["HGET", "nokey", "f"]), Reply::Null);
    assert_eq!(
        e.execute(0, &["HMGET", "h", "f", "nope"]),
        Reply::Array(vec![b("v2"), Reply::Null])
    );
    assert_eq!(
        e.execute(0, &["HMGET", "nokey", "a", "b"]),
        Reply::Array(vec![Reply::Null, Reply::Null])
    );
    assert_eq!(e.execute(0, &["HDEL", "h", "f", "nope"]), Reply::Integer(1));
    assert_eq!(e.execute(0, &["HDEL", "nokey", "f"]), Reply::Integer(0));
    assert_eq!(e.execute(0, &["HLEN", "h"]), Reply::Integer(3));
    assert_eq!(e.execute(0, &["HLEN", "nokey"]), Reply::Integer(0));
    assert_eq!(e.execute(0, &["HSTRLEN", "h", "g"]), Reply::Integer(1));
    assert_eq!(e.execute(0, &["HSTRLEN", "h", "nope"]), Reply::Integer(0));
    assert_eq!(e.execute(0, &["HEXISTS", "h", "g"]), Reply::Integer(1));
    assert_eq!(e.execute(0, &["HEXISTS", "h", "zz"]), Reply::Integer(0));
    assert_eq!(e.execute(0, &["HKEYS", "h"]), bulks(&["g", "n", "a"]));
    assert_eq!(e.execute(0, &["HVALS", "h"]), bulks(&["w", "x", "b"]));
    assert_eq!(e.execute(0, &["HKEYS", "nokey"]), Reply::Array(vec![]));
    assert_eq!(e.execute(0, &["HVALS", "nokey"]), Reply::Array(vec![]));
    assert_eq!(e.execute(0, &["HGETALL", "nokey"]), Reply::Map(vec![]));
    assert_eq!(
        e.execute(0, &["HGET", "h"]),
        err("ERR wrong number of arguments for 'hget' command")
    );
    assert_eq!(
        e.execute(0, &["HLEN"]),
        err("ERR wrong number of arguments for 'hlen' command")
    );
}

#[test]
fn hdel_of_last_field_deletes_the_key() {
    let e = engine();
    e.execute(0, &["HSET", "h", "a", "1", "b", "2"]);
    assert_eq!(
        e.execute(0, &["HDEL", "h", "a", "b", "c"]),
        Reply::Integer(2)
    );
    assert_eq!(encoding(&e, "h"), None);
}

#[test]
fn binary_safe_fields_and_values() {
    let e = engine();
    let f: &[u8] = b"f\0\r\n\xff";
    let v: &[u8] = b"\x00\x01v\xfe";
    assert_eq!(e.execute(0, &[&b"HSET"[..], b"h", f, v]), Reply::Integer(1));
    assert_eq!(e.execute(0, &[&b"HGET"[..], b"h", f]), Reply::bulk(v));
    assert_eq!(e.execute(0, &[&b"HSTRLEN"[..], b"h", f]), Reply::Integer(4));
    assert_eq!(
        e.execute(0, &[&b"HSET"[..], b"h", b"", b""]),
        Reply::Integer(1)
    );
    assert_eq!(e.execute(0, &[&b"HGET"[..], b"h", b""]), Reply::bulk(""));
}

#[test]
fn wrong_type() {
    let e = engine();
    e.execute(0, &["SET", "s", "x"]);
    for cmd in [
        &["HSET", "s", "f", "v"][..],
        &["HSETNX", "s", "f", "v"],
        &["HMSET", "s", "f", "v"],
        &["HGET", "s", "f"],
        &["HMGET", "s", "f"],
        &["HDEL", "s", "f"],
        &["HLEN", "s"],
        &["HSTRLEN", "s", "f"],
        &["HEXISTS", "s", "f"],
        &["HKEYS", "s"],
        &["HVALS", "s"],
        &["HGETALL", "s"],
        &["HINCRBY", "s", "f", "1"],
        &["HINCRBYFLOAT", "s", "f", "1"],
        &["HRANDFIELD", "s"],
        &["HRANDFIELD", "s", "0"],
        &["HSCAN", "s", "0"],
        &["HSCAN", "s", "0", "foo"],
    ] {
        assert_eq!(e.execute(0, cmd), err(WRONGTYPE), "{cmd:?}");
    }
    // Argument errors come before the type check.
    assert_eq!(
        e.execute(0, &["HINCRBY", "s", "f", "x"]),
        err("ERR value is not an integer or out of range")
    );
    assert_eq!(
        e.execute(0, &["HINCRBYFLOAT", "s", "f", "x"]),
        err("ERR value is not a valid float")
    );
    assert_eq!(
        e.execute(0, &["HRANDFIELD", "s", "x"]),
        err("ERR value is not an integer or out of range")
    );
    assert_eq!(e.execute(0, &["GET", "s"]), b("x"));
}

#[test]
fn hincrby() {
    let e = engine();
    e.execute(
        0,
        &[
            "HSET",
            "h",
            "n",
            "x",
            "i",
            "10",
            "big",
            "9223372036854775807",
            "sp",
            " 1",
            "e",
            "",
            "z",
            "007",
        ],
    );
    assert_eq!(
        e.execute(0, &["HINCRBY", "h", "i", "-3"]),
        Reply::Integer(7)
    );
    assert_eq!(
        e.execute(0, &["HINCRBY", "h", "new", "5"]),
        Reply::Integer(5)
    );
    assert_eq!(e.execute(0, &["HGET", "h", "new"]), b("5"));
    assert_eq!(
        e.execute(0, &["HINCRBY", "h", "i", "abc"]),
        err("ERR value is not an integer or out of range")
    );
    assert_eq!(
        e.execute(0, &["HINCRBY", "h", "i", "9223372036854775807"]),
        err("ERR increment or decrement would overflow")
    );
    assert_eq!(
        e.execute(0, &["HINCRBY", "h", "big", "1"]),
        err("ERR increment or decrement would overflow")
    );
    for f in ["n", "sp", "e", "z"] {
        assert_eq!(
            e.execute(0, &["HINCRBY", "h", f, "1"]),
            err("ERR hash value is not an integer")
        );
    }
    assert_eq!(
        e.execute(0, &["HINCRBY", "nokey", "f", "x"]),
        err("ERR value is not an integer or out of range")
    );
    assert_eq!(encoding(&e, "nokey"), None);
}

#[test]
fn hincrbyfloat() {
    let e = engine();
    e.execute(
        0,
        &[
            "HSET", "h", "fl", "1.5", "g", "w", "hx", "0x10", "inff", "inf", "i", "7", "e", "",
        ],
    );
    assert_eq!(e.execute(0, &["HINCRBYFLOAT", "h", "fl", "0.1"]), b("1.6"));
    assert_eq!(e.execute(0, &["HINCRBYFLOAT", "h", "fl", "-1.6"]), b("0"));
    assert_eq!(e.execute(0, &["HINCRBYFLOAT", "h", "nf", "3.0"]), b("3"));
    assert_eq!(e.execute(0, &["HINCRBYFLOAT", "h", "hx", "1"]), b("17"));
    assert_eq!(
        e.execute(0, &["HINCRBYFLOAT", "h", "i", "2.5e3"]),
        b("2507")
    );
    assert_eq!(e.execute(0, &["HINCRBYFLOAT", "h", "neg", "-0.0"]), b("0"));
    assert_eq!(
        e.execute(0, &["HINCRBYFLOAT", "h", "fl", "abc"]),
        err("ERR value is not a valid float")
    );
    assert_eq!(
        e.execute(0, &["HINCRBYFLOAT", "h", "fl", " 1"]),
        err("ERR value is not a valid float")
    );
    assert_eq!(
        e.execute(0, &["HINCRBYFLOAT", "h", "fl", "nan"]),
        err("ERR value is not a valid float")
    );
    assert_eq!(
        e.execute(0, &["HINCRBYFLOAT", "h", "fl", "inf"]),
        err("ERR value is NaN or Infinity")
    );
    assert_eq!(
        e.execute(0, &["HINCRBYFLOAT", "h", "g", "1"]),
        err("ERR hash value is not a float")
    );
    assert_eq!(
        e.execute(0, &["HINCRBYFLOAT", "h", "e", "1"]),
        err("ERR hash value is not a float")
    );
    assert_eq!(
        e.execute(0, &["HINCRBYFLOAT", "h", "inff", "1"]),
        err("ERR increment would produce NaN or Infinity")
    );
    assert_eq!(
        e.execute(0, &["HINCRBYFLOAT", "nokey", "f", "inf"]),
        err("ERR value is NaN or Infinity")
    );
    assert_eq!(encoding(&e, "nokey"), None);
    // Long double range: 1e400 is finite, and the long result converts the encoding.
    assert_eq!(encoding(&e, "h"), Some("listpack"));
    let r = e.execute(0, &["HINCRBYFLOAT", "h", "huge", "1e400"]);
    assert!(
        r.as_bytes()
            .is_some_and(|v| v.len() == 401 && v.starts_with(b"1000000000000000000028188")),
        "{r:?}"
    );
    assert_eq!(encoding(&e, "h"), Some("hashtable"));
}

#[test]
fn encoding_conversions() {
    let e = engine();
    let long = "f".repeat(65);
    e.execute(0, &["HSET", "h", "a", "1"]);
    assert_eq!(e.execute(0, &["HGET", "h", &long]), Reply::Null);
    assert_eq!(
        e.execute(0, &["HSETNX", "h", "a", &long]),
        Reply::Integer(0)
    );
    assert_eq!(encoding(&e, "h"), Some("listpack"));
    assert_eq!(
        e.execute(0, &["HINCRBY", "h", &long, "1"]),
        Reply::Integer(1)
    );
    assert_eq!(encoding(&e, "h"), Some("hashtable"));
    e.execute(0, &["HSET", "h2", "a", &long]);
    e.execute(0, &["HDEL", "h2", "a"]);
    e.execute(0, &["HSET", "h2", "a", "1"]);
    assert_eq!(encoding(&e, "h2"), Some("listpack"));
    // Redis's built-in default is 512 (its sample redis.conf says 128): use the engine's.
    let max = e.config().encoding_limits().hash_max_listpack_entries;
    for i in 0..max {
        e.execute(0, &["HSET", "h3", &format!("f{i}"), "v"]);
    }
    assert_eq!(encoding(&e, "h3"), Some("listpack"));
    e.execute(0, &["HSET", "h3", "one-more", "v"]);
    assert_eq!(encoding(&e, "h3"), Some("hashtable"));
    assert_eq!(
        e.execute(0, &["HLEN", "h3"]),
        Reply::Integer(max as i64 + 1)
    );
    assert_eq!(e.execute(0, &["HGET", "h3", "f77"]), b("v"));
}

#[test]
fn hrandfield() {
    let e = engine();
    e.execute(0, &["HSET", "h", "a", "1", "b", "2", "c", "3"]);
    assert_eq!(e.execute(0, &["HRANDFIELD", "nokey"]), Reply::Null);
    assert_eq!(
        e.execute(0, &["HRANDFIELD", "nokey", "3"]),
        Reply::Array(vec![])
    );
    assert_eq!(
        e.execute(0, &["HRANDFIELD", "nokey", "-3", "WITHVALUES"]),
        Reply::Array(vec![])
    );
    assert_eq!(
        e.execute(0, &["HRANDFIELD", "h", "0"]),
        Reply::Array(vec![])
    );
    assert_eq!(
        e.execute(0, &["HRANDFIELD", "h", "0", "withvalues"]),
        Reply::Pairs(vec![])
    );
    assert_eq!(
        e.execute(0, &["HRANDFIELD", "h", "5"]),
        bulks(&["a", "b", "c"])
    );
    assert_eq!(
        e.execute(0, &["HRANDFIELD", "h", "9223372036854775807"]),
        bulks(&["a", "b", "c"])
    );
    assert_eq!(
        e.execute(0, &["HRANDFIELD", "h", "3", "WITHVALUES"]),
        Reply::Pairs(vec![(b("a"), b("1")), (b("b"), b("2")), (b("c"), b("3"))])
    );
    assert!(
        matches!(e.execute(0, &["HRANDFIELD", "h"]), Reply::Bulk(f) if [&b"a"[..], b"b", b"c"].contains(&f.as_slice()))
    );
    // Positive counts give distinct fields, negative ones may repeat.
    for _ in 0..20 {
        let two = sorted(e.execute(0, &["HRANDFIELD", "h", "2"]));
        assert_eq!(two.len(), 2);
        assert_ne!(two[0], two[1]);
        let many = sorted(e.execute(0, &["HRANDFIELD", "h", "-10"]));
        assert_eq!(many.len(), 10);
        assert!(many
            .iter()
            .all(|f| [&b"a"[..], b"b", b"c"].contains(&f.as_slice())));
    }
    match e.execute(0, &["HRANDFIELD", "h", "-4", "WITHVALUES"]) {
        Reply::Pairs(p) => {
            assert_eq!(p.len(), 4);
            for (f, v) in p {
                let expected = match f.as_bytes() {
                    Some(b"a") => "1",
                    Some(b"b") => "2",
                    _ => "3",
                };
                assert_eq!(v, b(expected));
            }
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        e.execute(0, &["HRANDFIELD", "h", "1", "foo"]),
        err("ERR syntax error")
    );
    assert_eq!(
        e.execute(0, &["HRANDFIELD", "h", "1", "withvalues", "x"]),
        err("ERR syntax error")
    );
    assert_eq!(
        e.execute(0, &["HRANDFIELD", "h", "abc", "bad"]),
        err("ERR value is not an integer or out of range")
    );
    assert_eq!(
        e.execute(0, &["HRANDFIELD", "nokey", "1", "bad"]),
        err("ERR syntax error")
    );
    let range = "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807";
    assert_eq!(
        e.execute(0, &["HRANDFIELD", "h", "-9223372036854775808"]),
        err(range)
    );
    assert_eq!(
        e.execute(
            0,
            &["HRANDFIELD", "h", "-4611686018427387904", "withvalues"]
        ),
        err("ERR value is out of range")
    );
    assert_eq!(
        e.execute(0, &["HRANDFIELD", "h", "9223372036854775807", "withvalues"]),
        err("ERR value is out of range")
    );
}

#[test]
fn hrandfield_on_a_table() {
    let e = engine();
    // A value past hash-max-listpack-value makes it a table whatever the entry limit.
    e.execute(0, &["HSET", "h", "f0", &"x".repeat(65)]);
    for i in 1..300 {
        e.execute(0, &["HSET", "h", &format!("f{i}"), &format!("v{i}")]);
    }
    assert_eq!(encoding(&e, "h"), Some("hashtable"));
    for count in ["10", "150", "299", "300", "1000"] {
        let got = sorted(e.execute(0, &["HRANDFIELD", "h", count]));
        let want = count.parse::<usize>().unwrap_or(0).min(300);
        assert_eq!(got.len(), want);
        assert!(got.windows(2).all(|w| w[0] != w[1]));
    }
}

#[test]
fn hscan_listpack_returns_everything_at_once() {
    let e = engine();
    e.execute(0, &["HSET", "h", "a", "1", "b", "2", "c", "3"]);
    let all = bulks(&["a", "1", "b", "2", "c", "3"]);
    let reply = |items: Reply| Reply::Array(vec![b("0"), items]);
    assert_eq!(e.execute(0, &["HSCAN", "h", "0"]), reply(all.clone()));
    assert_eq!(
        e.execute(0, &["HSCAN", "h", "0", "COUNT", "1"]),
        reply(all.clone())
    );
    assert_eq!(e.execute(0, &["HSCAN", "h", "5"]), reply(all.clone()));
    assert_eq!(e.execute(0, &["HSCAN", "h", "-1"]), reply(all));
    assert_eq!(
        e.execute(0, &["HSCAN", "h", "0", "match", "a*"]),
        reply(bulks(&["a", "1"]))
    );
    assert_eq!(
        e.execute(
            0,
            &["HSCAN", "h", "0", "COUNT", "2", "MATCH", "b*", "count", "10"]
        ),
        reply(bulks(&["b", "2"]))
    );
    assert_eq!(
        e.execute(0, &["HSCAN", "h", "0", "MATCH", "b*", "MATCH", "c*"]),
        reply(bulks(&["c", "3"]))
    );
    assert_eq!(
        e.execute(0, &["HSCAN", "nokey", "0"]),
        reply(Reply::Array(vec![]))
    );
    assert_eq!(
        e.execute(0, &["HSCAN", "nokey", "0", "foo", "bar"]),
        reply(Reply::Array(vec![]))
    );
    assert_eq!(
        e.execute(0, &["HSCAN", "h", "abc"]),
        err("ERR invalid cursor")
    );
    assert_eq!(
        e.execute(0, &["HSCAN", "nokey", "18446744073709551616"]),
        err("ERR invalid cursor")
    );
    assert_eq!(
        e.execute(0, &["HSCAN", "h", "0", "count", "0"]),
        err("ERR syntax error")
    );
    assert_eq!(
        e.execute(0, &["HSCAN", "h", "0", "count", "-1"]),
        err("ERR syntax error")
    );
    assert_eq!(
        e.execute(0, &["HSCAN", "h", "0", "count", "abc"]),
        err("ERR value is not an integer or out of range")
    );
    assert_eq!(
        e.execute(0, &["HSCAN", "h", "0", "match"]),
        err("ERR syntax error")
    );
    assert_eq!(
        e.execute(0, &["HSCAN", "h", "0", "novalues"]),
        err("ERR syntax error")
    );
    assert_eq!(
        e.execute(0, &["HSCAN", "h"]),
        err("ERR wrong number of arguments for 'hscan' command")
    );
}

#[test]
fn hscan_table_visits_every_field_across_resizes() {
    let e = engine();
    e.execute(0, &["HSET", "h", "f0", &"x".repeat(65)]);
    for i in 1..500 {
        e.execute(0, &["HSET", "h", &format!("f{i}"), "v"]);
    }
    assert_eq!(encoding(&e, "h"), Some("hashtable"));
    let mut seen = std::collections::HashSet::new();
    let mut cursor = "0".to_string();
    let mut calls = 0;
    loop {
        let Reply::Array(parts) = e.execute(0, &["HSCAN", "h", &cursor, "COUNT", "20"]) else {
            panic!("scan reply");
        };
        let [Reply::Bulk(next), Reply::Array(items)] = parts.as_slice() else {
            panic!("scan shape");
        };
        for pair in items.chunks(2) {
            seen.insert(pair[0].as_bytes().map(<[u8]>::to_vec).unwrap_or_default());
        }
        calls += 1;
        // Grow, then shrink the table while the scan runs; f0..f99 stay throughout.
        if calls == 3 {
            for i in 500..3000 {
                e.execute(0, &["HSET", "h", &format!("f{i}"), "v"]);
            }
        }
        if calls == 10 {
            for i in 100..3000 {
                e.execute(0, &["HDEL", "h", &format!("f{i}")]);
            }
        }
        cursor = String::from_utf8_lossy(next).into_owned();
        if cursor == "0" {
            break;
        }
    }
    for i in 0..100 {
        assert!(seen.contains(format!("f{i}").as_bytes()), "f{i} missed");
    }
}

#[test]
fn command_table_entries() {
    let t = crate::command::table();
    let hset = t.get(b"hset").expect("hset is in the table");
    assert_eq!(
        (hset.arity, hset.keys.first, hset.keys.last, hset.keys.step),
        (-4, 1, 1, 1)
    );
    let hscan = t.get(b"HSCAN").expect("hscan is in the table");
    assert_eq!(hscan.arity, -3);
    assert!(hscan.has(crate::command::flags::READONLY));
    assert!(!hscan.has(crate::command::flags::FAST));
}
