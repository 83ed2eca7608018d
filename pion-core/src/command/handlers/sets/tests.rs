//! Set command tests; every expected reply was checked against Redis 7.0. Hash-table
//! sets have no defined order, so their replies are compared sorted.

use crate::command::handlers::hashes::tests::encoding;
use crate::engine::{Engine, EngineOptions};
use crate::reply::Reply;

fn engine() -> Engine {
    Engine::in_memory(EngineOptions::default())
}

fn b(s: &str) -> Reply {
    Reply::bulk(s)
}

fn set(items: &[&str]) -> Reply {
    Reply::Set(items.iter().map(|s| b(s)).collect())
}

fn arr(items: &[&str]) -> Reply {
    Reply::bulks(items.iter().copied())
}

fn ints(items: &[i64]) -> Reply {
    Reply::Array(items.iter().map(|&i| Reply::Integer(i)).collect())
}

fn err(text: &'static str) -> Reply {
    Reply::error(text)
}

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

/// The members of a list or set reply, sorted.
fn sorted(reply: Reply) -> Vec<String> {
    let items = match reply {
        Reply::Array(v) | Reply::Set(v) => v,
        other => panic!("not a list: {other:?}"),
    };
    let mut out: Vec<String> = items
        .into_iter()
        .map(|r| String::from_utf8_lossy(r.as_bytes().unwrap_or_default()).into_owned())
        .collect();
    out.sort();
    out
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

#[test]
fn basic_commands() {
    let e = engine();
    assert_eq!(
        e.execute(0, &["SADD", "a", "3", "1", "2"]),
        Reply::Integer(3)
    );
    assert_eq!(encoding(&e, "a"), Some("intset"));
    assert_eq!(e.execute(0, &["SMEMBERS", "a"]), set(&["1", "2", "3"]));
    assert_eq!(e.execute(0, &["SADD", "a", "2", "x"]), Reply::Integer(1));
    assert_eq!(encoding(&e, "a"), Some("hashtable"));
    assert_eq!(
        sorted(e.execute(0, &["SMEMBERS", "a"])),
        strings(&["1", "2", "3", "x"])
    );
    assert_eq!(e.execute(0, &["SADD", "b", "x", "5"]), Reply::Integer(2));
    assert_eq!(encoding(&e, "b"), Some("hashtable"));
    assert_eq!(
        e.execute(0, &["SADD", "a"]),
        err("ERR wrong number of arguments for 'sadd' command")
    );
    assert_eq!(e.execute(0, &["SREM", "a", "1", "nope"]), Reply::Integer(1));
    assert_eq!(e.execute(0, &["SREM", "nokey", "1"]), Reply::Integer(0));
    assert_eq!(e.execute(0, &["SISMEMBER", "a", "2"]), Reply::Integer(1));
    assert_eq!(e.execute(0, &["SISMEMBER", "a", "1"]), Reply::Integer(0));
    assert_eq!(
        e.execute(0, &["SISMEMBER", "nokey", "2"]),
        Reply::Integer(0)
    );
    assert_eq!(
        e.execute(0, &["SMISMEMBER", "a", "2", "nope", "3"]),
        ints(&[1, 0, 1])
    );
    assert_eq!(
        e.execute(0, &["SMISMEMBER", "nokey", "1", "2"]),
        ints(&[0, 0])
    );
    assert_eq!(e.execute(0, &["SCARD", "a"]), Reply::Integer(3));
    assert_eq!(e.execute(0, &["SCARD", "nokey"]), Reply::Integer(0));
    assert_eq!(e.execute(0, &["SMEMBERS", "nokey"]), Reply::Set(vec![]));
    assert_eq!(
        e.execute(0, &["SREM", "a", "2", "3", "x"]),
        Reply::Integer(3)
    );
    assert_eq!(encoding(&e, "a"), None);
}

#[test]
fn intset_is_sorted_and_strict_about_integers() {
    let e = engine();
    e.execute(
        0,
        &[
            "SADD",
            "i",
            "5",
            "-3",
            "9223372036854775807",
            "-9223372036854775808",
            "0",
        ],
    );
    assert_eq!(
        e.execute(0, &["SMEMBERS", "i"]),
        set(&[
            "-9223372036854775808",
            "-3",
            "0",
            "5",
            "9223372036854775807"
        ])
    );
    assert_eq!(
        e.execute(0, &["SADD", "i", "007", "+1", " 1"]),
        Reply::Integer(3)
    );
    assert_eq!(encoding(&e, "i"), Some("hashtable"));
    assert_eq!(e.execute(0, &["SCARD", "i"]), Reply::Integer(8));
    assert_eq!(e.execute(0, &["SISMEMBER", "i", "007"]), Reply::Integer(1));
    // Conversion at set-max-intset-entries (512).
    let members: Vec<String> = (0..512).map(|i| i.to_string()).collect();
    let mut cmd = vec!["SADD", "big"];
    cmd.extend(members.iter().map(String::as_str));
    assert_eq!(e.execute(0, &cmd), Reply::Integer(512));
    assert_eq!(encoding(&e, "big"), Some("intset"));
    e.execute(0, &["SADD", "big", "512"]);
    assert_eq!(encoding(&e, "big"), Some("hashtable"));
    assert_eq!(e.execute(0, &["SCARD", "big"]), Reply::Integer(513));
}

#[test]
fn binary_safe_members() {
    let e = engine();
    let m: &[u8] = b"\x00\xff\r\nm";
    assert_eq!(
        e.execute(0, &[&b"SADD"[..], b"s", m, b""]),
        Reply::Integer(2)
    );
    assert_eq!(
        e.execute(0, &[&b"SISMEMBER"[..], b"s", m]),
        Reply::Integer(1)
    );
    assert_eq!(
        e.execute(0, &[&b"SISMEMBER"[..], b"s", b""]),
        Reply::Integer(1)
    );
    assert_eq!(e.execute(0, &[&b"SREM"[..], b"s", m]), Reply::Integer(1));
    assert_eq!(e.execute(0, &["SMEMBERS", "s"]), set(&[""]));
}

#[test]
fn wrong_type() {
    let e = engine();
    e.execute(0, &["SET", "s", "x"]);
    e.execute(0, &["SADD", "a", "1"]);
    for cmd in [
        &["SADD", "s", "1"][..],
        &["SREM", "s", "1"],
        &["SMEMBERS", "s"],
        &["SISMEMBER", "s", "1"],
        &["SMISMEMBER", "s", "1"],
        &["SCARD", "s"],
        &["SPOP", "s"],
        &["SPOP", "s", "0"],
        &["SRANDMEMBER", "s"],
        &["SRANDMEMBER", "s", "0"],
        &["SMOVE", "a", "s", "1"],
        &["SMOVE", "a", "s", "99"],
        &["SMOVE", "s", "a", "1"],
        &["SINTER", "a", "s"],
        &["SINTER", "nokey", "s"],
        &["SINTERCARD", "2", "nokey", "s"],
        &["SINTERSTORE", "d", "nokey", "s"],
        &["SUNION", "nokey", "s"],
        &["SUNIONSTORE", "d", "a", "s"],
        &["SDIFF", "nokey", "s"],
        &["SDIFF", "a", "s"],
        &["SDIFFSTORE", "d", "s", "a"],
        &["SSCAN", "s", "0"],
    ] {
        assert_eq!(e.execute(0, cmd), err(WRONGTYPE), "{cmd:?}");
    }
    // A missing source comes before the destination's type check.
    assert_eq!(
        e.execute(0, &["SMOVE", "nokey", "s", "1"]),
        Reply::Integer(0)
    );
    assert_eq!(e.execute(0, &["SMEMBERS", "a"]), set(&["1"]));
    assert_eq!(encoding(&e, "d"), None);
}

#[test]
fn spop() {
    let e = engine();
    assert_eq!(e.execute(0, &["SPOP", "nokey"]), Reply::Null);
    assert_eq!(e.execute(0, &["SPOP", "nokey", "2"]), Reply::Set(vec![]));
    assert_eq!(e.execute(0, &["SPOP", "nokey", "0"]), Reply::Set(vec![]));
    let positive = "ERR value is out of range, must be positive";
    for bad in ["-1", "abc", "-9223372036854775808"] {
        assert_eq!(e.execute(0, &["SPOP", "nokey", bad]), err(positive));
    }
    e.execute(0, &["SADD", "p", "1", "2", "3", "4", "5"]);
    assert_eq!(
        e.execute(0, &["SPOP", "p", "1", "2"]),
        err("ERR syntax error")
    );
    assert_eq!(e.execute(0, &["SPOP", "p", "0"]), Reply::Set(vec![]));
    let two = sorted(e.execute(0, &["SPOP", "p", "2"]));
    assert_eq!(two.len(), 2);
    assert_eq!(e.execute(0, &["SCARD", "p"]), Reply::Integer(3));
    let one = e.execute(0, &["SPOP", "p"]);
    assert!(matches!(&one, Reply::Bulk(m) if m.len() == 1), "{one:?}");
    let rest = sorted(e.execute(0, &["SPOP", "p", "10"]));
    assert_eq!(rest.len(), 2);
    assert_eq!(encoding(&e, "p"), None);
    // Everything popped comes back exactly once.
    let mut all: Vec<String> = two.into_iter().chain(rest).collect();
    all.push(String::from_utf8_lossy(one.as_bytes().unwrap_or_default()).into_owned());
    all.sort();
    assert_eq!(all, strings(&["1", "2", "3", "4", "5"]));
    // Whole-set pops come back in intset order.
    e.execute(0, &["SADD", "q", "3", "1", "2"]);
    assert_eq!(
        e.execute(0, &["SPOP", "q", "9223372036854775807"]),
        set(&["1", "2", "3"])
    );
}

#[test]
fn spop_most_of_a_set_keeps_the_rest_with_redis_encoding() {
    let e = engine();
    let mut cmd = vec!["SADD".to_string(), "s".to_string(), "x".to_string()];
    cmd.extend((0..20).map(|i| i.to_string()));
    e.execute(0, &cmd);
    assert_eq!(encoding(&e, "s"), Some("hashtable"));
    let popped = sorted(e.execute(0, &["SPOP", "s", "19"]));
    assert_eq!(popped.len(), 19);
    let left = sorted(e.execute(0, &["SMEMBERS", "s"]));
    assert_eq!(left.len(), 2);
    assert!(left.iter().all(|m| !popped.contains(m)));
    // The kept members form a new set, an intset when they are all integers.
    let all_ints = left.iter().all(|m| m.parse::<i64>().is_ok());
    assert_eq!(
        encoding(&e, "s"),
        Some(if all_ints { "intset" } else { "hashtable" })
    );
}

#[test]
fn srandmember() {
    let e = engine();
    assert_eq!(e.execute(0, &["SRANDMEMBER", "nokey"]), Reply::Null);
    assert_eq!(
        e.execute(0, &["SRANDMEMBER", "nokey", "-2"]),
        Reply::Array(vec![])
    );
    assert_eq!(
        e.execute(0, &["SRANDMEMBER", "nokey", "0"]),
        Reply::Array(vec![])
    );
    assert_eq!(
        e.execute(0, &["SRANDMEMBER", "nokey", "abc"]),
        err("ERR value is not an integer or out of range")
    );
    e.execute(0, &["SADD", "p", "3", "1", "2"]);
    assert_eq!(
        e.execute(0, &["SRANDMEMBER", "p", "0"]),
        Reply::Array(vec![])
    );
    assert_eq!(
        e.execute(0, &["SRANDMEMBER", "p", "10"]),
        arr(&["1", "2", "3"])
    );
    assert_eq!(
        e.execute(0, &["SRANDMEMBER", "p", "1", "2"]),
        err("ERR syntax error")
    );
    assert_eq!(
        e.execute(0, &["SRANDMEMBER", "p", "-9223372036854775808"]),
        err("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807")
    );
    for _ in 0..20 {
        let two = sorted(e.execute(0, &["SRANDMEMBER", "p", "2"]));
        assert_eq!(two.len(), 2);
        assert_ne!(two[0], two[1]);
        let many = sorted(e.execute(0, &["SRANDMEMBER", "p", "-7"]));
        assert_eq!(many.len(), 7);
        assert!(many.iter().all(|m| ["1", "2", "3"].contains(&m.as_str())));
    }
    assert_eq!(e.execute(0, &["SCARD", "p"]), Reply::Integer(3));
    // A table: few out of many, and many out of many, are distinct.
    for i in 0..200 {
        e.execute(0, &["SADD", "t", &format!("m{i}")]);
    }
    for count in ["5", "100", "199", "200", "500"] {
        let got = sorted(e.execute(0, &["SRANDMEMBER", "t", count]));
        assert_eq!(got.len(), count.parse::<usize>().unwrap_or(0).min(200));
        assert!(got.windows(2).all(|w| w[0] != w[1]));
    }
}

#[test]
fn smove() {
    let e = engine();
    e.execute(0, &["SADD", "a", "1", "2", "3"]);
    e.execute(0, &["SADD", "b", "x"]);
    assert_eq!(e.execute(0, &["SMOVE", "a", "b", "1"]), Reply::Integer(1));
    assert_eq!(e.execute(0, &["SMOVE", "a", "b", "1"]), Reply::Integer(0));
    assert_eq!(
        sorted(e.execute(0, &["SMEMBERS", "b"])),
        strings(&["1", "x"])
    );
    assert_eq!(
        e.execute(0, &["SMOVE", "nokey", "b", "1"]),
        Reply::Integer(0)
    );
    assert_eq!(e.execute(0, &["SMOVE", "a", "new", "2"]), Reply::Integer(1));
    assert_eq!(encoding(&e, "new"), Some("intset"));
    assert_eq!(e.execute(0, &["SMOVE", "a", "a", "3"]), Reply::Integer(1));
    assert_eq!(e.execute(0, &["SMOVE", "a", "a", "99"]), Reply::Integer(0));
    assert_eq!(e.execute(0, &["SMEMBERS", "a"]), set(&["3"]));
    assert_eq!(e.execute(0, &["SMOVE", "a", "new", "3"]), Reply::Integer(1));
    assert_eq!(encoding(&e, "a"), None);
    assert_eq!(e.execute(0, &["SMEMBERS", "new"]), set(&["2", "3"]));
    // Moving a member the destination already has still answers 1.
    e.execute(0, &["SADD", "c", "2"]);
    assert_eq!(e.execute(0, &["SMOVE", "c", "new", "2"]), Reply::Integer(1));
    assert_eq!(e.execute(0, &["SMEMBERS", "new"]), set(&["2", "3"]));
    assert_eq!(
        e.execute(0, &["SMOVE", "nokey", "nokey", "1"]),
        Reply::Integer(0)
    );
    assert_eq!(
        e.execute(0, &["SMOVE", "a", "b"]),
        err("ERR wrong number of arguments for 'smove' command")
    );
}

#[test]
fn inter_union_diff() {
    let e = engine();
    e.execute(0, &["SADD", "x", "1", "2", "3", "4"]);
    e.execute(0, &["SADD", "y", "3", "4", "5"]);
    e.execute(0, &["SADD", "z", "a", "3"]);
    assert_eq!(e.execute(0, &["SINTER", "x", "y"]), set(&["3", "4"]));
    assert_eq!(e.execute(0, &["SINTER", "x", "y", "z"]), set(&["3"]));
    assert_eq!(e.execute(0, &["SINTER", "x", "nokey"]), Reply::Set(vec![]));
    assert_eq!(e.execute(0, &["SINTER", "x"]), set(&["1", "2", "3", "4"]));
    assert_eq!(
        e.execute(0, &["SUNION", "x", "nokey", "y"]),
        set(&["1", "2", "3", "4", "5"])
    );
    assert_eq!(e.execute(0, &["SUNION", "nokey"]), Reply::Set(vec![]));
    assert_eq!(
        sorted(e.execute(0, &["SUNION", "x", "z"])),
        strings(&["1", "2", "3", "4", "a"])
    );
    assert_eq!(e.execute(0, &["SDIFF", "x", "y"]), set(&["1", "2"]));
    assert_eq!(
        e.execute(0, &["SDIFF", "x", "nokey"]),
        set(&["1", "2", "3", "4"])
    );
    assert_eq!(e.execute(0, &["SDIFF", "nokey", "x"]), Reply::Set(vec![]));
    assert_eq!(e.execute(0, &["SDIFF", "x", "x"]), Reply::Set(vec![]));
    assert_eq!(e.execute(0, &["SDIFF", "z", "x"]), set(&["a"]));
    assert_eq!(
        e.execute(0, &["SINTER"]),
        err("ERR wrong number of arguments for 'sinter' command")
    );
    assert_eq!(
        e.execute(0, &["SDIFFSTORE", "d"]),
        err("ERR wrong number of arguments for 'sdiffstore' command")
    );
}

#[test]
fn store_commands_pick_redis_encodings() {
    let e = engine();
    e.execute(0, &["SADD", "x", "1", "2", "3", "4"]);
    e.execute(0, &["SADD", "y", "3", "4", "5"]);
    e.execute(0, &["SADD", "z", "a", "3"]);
    e.execute(0, &["SADD", "big", "a", "b"]);
    e.execute(0, &["SADD", "onlyint", "1", "2"]);
    e.execute(0, &["SET", "str", "v"]);
    assert_eq!(
        e.execute(0, &["SINTERSTORE", "d", "x", "y"]),
        Reply::Integer(2)
    );
    assert_eq!(encoding(&e, "d"), Some("intset"));
    assert_eq!(e.execute(0, &["SMEMBERS", "d"]), set(&["3", "4"]));
    // An empty result deletes the destination, whatever it held.
    assert_eq!(
        e.execute(0, &["SINTERSTORE", "str", "x", "nokey"]),
        Reply::Integer(0)
    );
    assert_eq!(encoding(&e, "str"), None);
    assert_eq!(
        e.execute(0, &["SINTERSTORE", "s2", "x", "z"]),
        Reply::Integer(1)
    );
    assert_eq!(encoding(&e, "s2"), Some("intset"));
    assert_eq!(
        e.execute(0, &["SUNIONSTORE", "d2", "x", "z"]),
        Reply::Integer(5)
    );
    assert_eq!(encoding(&e, "d2"), Some("hashtable"));
    assert_eq!(
        e.execute(0, &["SDIFFSTORE", "d3", "z", "x"]),
        Reply::Integer(1)
    );
    assert_eq!(encoding(&e, "d3"), Some("hashtable"));
    assert_eq!(
        e.execute(0, &["SDIFFSTORE", "d3", "x", "x"]),
        Reply::Integer(0)
    );
    assert_eq!(encoding(&e, "d3"), None);
    assert_eq!(
        e.execute(0, &["SINTERSTORE", "d5", "big"]),
        Reply::Integer(2)
    );
    assert_eq!(encoding(&e, "d5"), Some("hashtable"));
    assert_eq!(
        e.execute(0, &["SUNIONSTORE", "d6", "onlyint"]),
        Reply::Integer(2)
    );
    assert_eq!(encoding(&e, "d6"), Some("intset"));
    assert_eq!(
        e.execute(0, &["SDIFFSTORE", "d7", "onlyint"]),
        Reply::Integer(2)
    );
    assert_eq!(encoding(&e, "d7"), Some("intset"));
    // The destination may be a source.
    assert_eq!(
        e.execute(0, &["SINTERSTORE", "x", "x", "y"]),
        Reply::Integer(2)
    );
    assert_eq!(e.execute(0, &["SMEMBERS", "x"]), set(&["3", "4"]));
    e.execute(0, &["SET", "str", "v"]);
    assert_eq!(
        e.execute(0, &["SUNIONSTORE", "str", "nokey"]),
        Reply::Integer(0)
    );
    assert_eq!(encoding(&e, "str"), None);
}

#[test]
fn sdiffstore_encoding_follows_the_algorithm_redis_picks() {
    let e = engine();
    e.execute(0, &["SADD", "A", "1", "2", "3", "4", "5", "6", "x"]);
    e.execute(0, &["SADD", "B", "x"]);
    e.execute(0, &["SADD", "C", "9"]);
    // Copy-then-remove (three keys, small subtrahends): the copy converted.
    assert_eq!(
        e.execute(0, &["SDIFFSTORE", "D", "A", "B", "C"]),
        Reply::Integer(6)
    );
    assert_eq!(encoding(&e, "D"), Some("hashtable"));
    // Filtering (two keys): only integers were ever added.
    assert_eq!(
        e.execute(0, &["SDIFFSTORE", "D", "A", "B"]),
        Reply::Integer(6)
    );
    assert_eq!(encoding(&e, "D"), Some("intset"));
    e.execute(0, &["SADD", "F", "3", "1", "2", "x"]);
    assert_eq!(
        e.execute(0, &["SDIFF", "F", "B", "C"]),
        set(&["1", "2", "3"])
    );
}

#[test]
fn sintercard() {
    let e = engine();
    e.execute(0, &["SADD", "x", "1", "2", "3", "4"]);
    e.execute(0, &["SADD", "y", "3", "4", "5"]);
    e.execute(0, &["SET", "s", "v"]);
    assert_eq!(
        e.execute(0, &["SINTERCARD", "2", "x", "y"]),
        Reply::Integer(2)
    );
    assert_eq!(e.execute(0, &["SINTERCARD", "1", "x"]), Reply::Integer(4));
    assert_eq!(
        e.execute(0, &["SINTERCARD", "2", "x", "y", "LIMIT", "1"]),
        Reply::Integer(1)
    );
    assert_eq!(
        e.execute(0, &["SINTERCARD", "2", "x", "y", "limit", "0"]),
        Reply::Integer(2)
    );
    assert_eq!(
        e.execute(0, &["SINTERCARD", "1", "x", "limit", "1", "limit", "5"]),
        Reply::Integer(4)
    );
    assert_eq!(
        e.execute(0, &["SINTERCARD", "2", "x", "nokey"]),
        Reply::Integer(0)
    );
    let gt0 = "ERR numkeys should be greater than 0";
    for bad in ["0", "-1", "abc", "99999999999999999999"] {
        assert_eq!(e.execute(0, &["SINTERCARD", bad, "x"]), err(gt0), "{bad}");
    }
    let too_many = "ERR Number of keys can't be greater than number of args";
    assert_eq!(e.execute(0, &["SINTERCARD", "3", "x", "y"]), err(too_many));
    assert_eq!(
        e.execute(0, &["SINTERCARD", "2147483648", "x"]),
        err(too_many)
    );
    let negative = "ERR LIMIT can't be negative";
    assert_eq!(
        e.execute(0, &["SINTERCARD", "2", "x", "y", "limit", "-1"]),
        err(negative)
    );
    assert_eq!(
        e.execute(0, &["SINTERCARD", "2", "x", "y", "limit", "abc"]),
        err(negative)
    );
    assert_eq!(
        e.execute(0, &["SINTERCARD", "2", "x", "y", "foo", "1"]),
        err("ERR syntax error")
    );
    assert_eq!(
        e.execute(0, &["SINTERCARD", "2", "x", "y", "limit"]),
        err("ERR syntax error")
    );
    assert_eq!(
        e.execute(0, &["SINTERCARD", "1", "s", "foo"]),
        err("ERR syntax error")
    );
    assert_eq!(e.execute(0, &["SINTERCARD", "1", "s"]), err(WRONGTYPE));
    assert_eq!(
        e.execute(0, &["SINTERCARD", "1"]),
        err("ERR wrong number of arguments for 'sintercard' command")
    );
}

#[test]
fn sscan() {
    let e = engine();
    e.execute(0, &["SADD", "ii", "3", "1", "2"]);
    let reply = |items: Reply| Reply::Array(vec![b("0"), items]);
    assert_eq!(
        e.execute(0, &["SSCAN", "ii", "0"]),
        reply(arr(&["1", "2", "3"]))
    );
    assert_eq!(
        e.execute(0, &["SSCAN", "ii", "0", "COUNT", "1"]),
        reply(arr(&["1", "2", "3"]))
    );
    assert_eq!(
        e.execute(0, &["SSCAN", "ii", "0", "MATCH", "[12]"]),
        reply(arr(&["1", "2"]))
    );
    assert_eq!(
        e.execute(0, &["SSCAN", "nokey", "0", "foo"]),
        reply(Reply::Array(vec![]))
    );
    assert_eq!(
        e.execute(0, &["SSCAN", "ii", "abc"]),
        err("ERR invalid cursor")
    );
    assert_eq!(
        e.execute(0, &["SSCAN", "ii", "0", "count", "0"]),
        err("ERR syntax error")
    );
    e.execute(0, &["SADD", "t", "a", "b", "c"]);
    let Reply::Array(parts) = e.execute(0, &["SSCAN", "t", "0"]) else {
        panic!("scan reply");
    };
    assert_eq!(parts[0], b("0"));
    assert_eq!(sorted(parts[1].clone()), strings(&["a", "b", "c"]));
    // A large table, walked with small counts, yields every member exactly once.
    for i in 0..1000 {
        e.execute(0, &["SADD", "big", &format!("m{i}")]);
    }
    let mut seen = Vec::new();
    let mut cursor = "0".to_string();
    loop {
        let Reply::Array(parts) = e.execute(0, &["SSCAN", "big", &cursor, "COUNT", "7"]) else {
            panic!("scan reply");
        };
        seen.extend(sorted(parts[1].clone()));
        cursor = String::from_utf8_lossy(parts[0].as_bytes().unwrap_or_default()).into_owned();
        if cursor == "0" {
            break;
        }
    }
    seen.sort();
    let mut want: Vec<String> = (0..1000).map(|i| format!("m{i}")).collect();
    want.sort();
    assert_eq!(seen, want);
}

#[test]
fn command_table_entries() {
    use crate::command::flags::*;
    let t = crate::command::table();
    let smove = t.get(b"smove").expect("smove is in the table");
    assert_eq!(
        (
            smove.arity,
            smove.keys.first,
            smove.keys.last,
            smove.keys.step
        ),
        (4, 1, 2, 1)
    );
    let card = t.get(b"sintercard").expect("sintercard is in the table");
    assert_eq!(
        (card.arity, card.keys.first, card.keys.last, card.keys.step),
        (-3, 0, 0, 0)
    );
    assert!(card.has(READONLY) && card.has(MOVABLE_KEYS));
    let spop = t.get(b"spop").expect("spop is in the table");
    assert!(spop.has(WRITE) && spop.has(FAST));
    let store = t.get(b"sunionstore").expect("sunionstore is in the table");
    assert!(store.has(WRITE) && store.has(DENYOOM) && !store.has(FAST));
}
