//! Command-level tests of the list family. Every expected reply and error text was
//! observed on Redis 7.0.15.

use crate::engine::{Engine, EngineOptions};
use crate::reply::Reply;
use crate::test_support::{bulk, bulks, err, int, NOT_INT, SYNTAX, WRONGTYPE};

fn engine() -> Engine {
    Engine::in_memory(EngineOptions {
        disable_active_expiry: true,
        ..EngineOptions::default()
    })
}

/// Whether a key exists, looked at directly in the keyspace.
fn exists(e: &Engine, key: &str) -> bool {
    let mut locked = e.keyspace().lock_keys(&[key], e.now_ms());
    locked.exists(0, key.as_bytes()).unwrap_or(false)
}

/// An engine with `l` = [a b c d e] and the string `s`.
fn abcde() -> Engine {
    let e = engine();
    assert_eq!(
        e.execute(0, &["RPUSH", "l", "a", "b", "c", "d", "e"]),
        int(5)
    );
    assert_eq!(e.execute(0, &["SET", "s", "x"]), Reply::ok());
    e
}

fn all(e: &Engine, key: &str) -> Reply {
    e.execute(0, &["LRANGE", key, "0", "-1"])
}

#[test]
fn pushes_order_and_length() {
    let e = abcde();
    assert_eq!(e.execute(0, &["LPUSH", "l", "x", "y", "z"]), int(8));
    assert_eq!(
        all(&e, "l"),
        bulks(&["z", "y", "x", "a", "b", "c", "d", "e"])
    );
    assert_eq!(e.execute(0, &["RPUSH", "n", "1"]), int(1));
    assert_eq!(e.execute(0, &["LPUSH", "s", "a"]), err(WRONGTYPE));
    assert_eq!(e.execute(0, &["RPUSH", "s", "a"]), err(WRONGTYPE));
    assert_eq!(
        e.execute(0, &["LPUSH", "l"]),
        err("ERR wrong number of arguments for 'lpush' command")
    );
}

#[test]
fn pushx_only_on_existing_lists() {
    let e = abcde();
    assert_eq!(e.execute(0, &["LPUSHX", "nokey", "a"]), int(0));
    assert!(!exists(&e, "nokey"));
    assert_eq!(e.execute(0, &["RPUSHX", "nokey", "a", "b"]), int(0));
    assert_eq!(e.execute(0, &["LPUSHX", "s", "a"]), err(WRONGTYPE));
    assert_eq!(e.execute(0, &["RPUSHX", "l", "f", "g"]), int(7));
    assert_eq!(e.execute(0, &["LPUSHX", "l", "0"]), int(8));
    assert_eq!(e.execute(0, &["LINDEX", "l", "-1"]), bulk("g"));
    assert_eq!(e.execute(0, &["LINDEX", "l", "0"]), bulk("0"));
}

#[test]
fn pop_single_and_counted() {
    let e = abcde();
    assert_eq!(e.execute(0, &["LPOP", "l"]), bulk("a"));
    assert_eq!(e.execute(0, &["RPOP", "l"]), bulk("e"));
    assert_eq!(e.execute(0, &["LPOP", "l", "0"]), Reply::Array(vec![]));
    assert_eq!(e.execute(0, &["RPOP", "l", "2"]), bulks(&["d", "c"]));
    assert_eq!(e.execute(0, &["LPOP", "l", "10"]), bulks(&["b"]));
    assert!(!exists(&e, "l"));
    assert_eq!(e.execute(0, &["LPOP", "l"]), Reply::Null);
    assert_eq!(e.execute(0, &["RPOP", "nokey"]), Reply::Null);
    // A count on a missing key answers the nil array, even count 0.
    assert_eq!(e.execute(0, &["LPOP", "nokey", "1"]), Reply::NullArray);
    assert_eq!(e.execute(0, &["RPOP", "nokey", "0"]), Reply::NullArray);
}

#[test]
fn pop_errors() {
    let e = abcde();
    let range = "ERR value is out of range, must be positive";
    assert_eq!(e.execute(0, &["LPOP", "l", "-1"]), err(range));
    assert_eq!(e.execute(0, &["RPOP", "l", "abc"]), err(range));
    assert_eq!(
        e.execute(0, &["LPOP", "l", "99999999999999999999"]),
        err(range)
    );
    // The count is checked before the key's type.
    assert_eq!(e.execute(0, &["LPOP", "s", "-1"]), err(range));
    assert_eq!(e.execute(0, &["LPOP", "s"]), err(WRONGTYPE));
    assert_eq!(e.execute(0, &["RPOP", "s", "0"]), err(WRONGTYPE));
    assert_eq!(
        e.execute(0, &["LPOP", "l", "1", "2"]),
        err("ERR wrong number of arguments for 'lpop' command")
    );
    assert_eq!(
        e.execute(0, &["RPOP"]),
        err("ERR wrong number of arguments for 'rpop' command")
    );
    assert_eq!(e.execute(0, &["LLEN", "l"]), int(5));
}

#[test]
fn llen_counts() {
    let e = abcde();
    assert_eq!(e.execute(0, &["LLEN", "l"]), int(5));
    assert_eq!(e.execute(0, &["LLEN", "nokey"]), int(0));
    assert_eq!(e.execute(0, &["LLEN", "s"]), err(WRONGTYPE));
}

#[test]
fn lrange_indices() {
    let e = abcde();
    let r = |a: &str, b: &str| e.execute(0, &["LRANGE", "l", a, b]);
    assert_eq!(r("-100", "100"), bulks(&["a", "b", "c", "d", "e"]));
    assert_eq!(r("-2", "-1"), bulks(&["d", "e"]));
    assert_eq!(r("3", "1"), bulks(&[]));
    assert_eq!(r("5", "10"), bulks(&[]));
    assert_eq!(r("-1", "-3"), bulks(&[]));
    assert_eq!(r("0", "-6"), bulks(&[]));
    assert_eq!(r("0", "-5"), bulks(&["a"]));
    assert_eq!(
        r("-9223372036854775808", "9223372036854775807"),
        bulks(&["a", "b", "c", "d", "e"])
    );
    assert_eq!(r("1", "x"), err(NOT_INT));
    assert_eq!(e.execute(0, &["LRANGE", "nokey", "0", "-1"]), bulks(&[]));
    assert_eq!(e.execute(0, &["LRANGE", "s", "0", "-1"]), err(WRONGTYPE));
    // Indices are parsed before the key is looked up.
    assert_eq!(e.execute(0, &["LRANGE", "s", "x", "1"]), err(NOT_INT));
    assert_eq!(e.execute(0, &["LRANGE", "nokey", "x", "1"]), err(NOT_INT));
}

#[test]
fn lindex_looks_up_the_key_first() {
    let e = abcde();
    assert_eq!(e.execute(0, &["LINDEX", "l", "0"]), bulk("a"));
    assert_eq!(e.execute(0, &["LINDEX", "l", "-1"]), bulk("e"));
    assert_eq!(e.execute(0, &["LINDEX", "l", "5"]), Reply::Null);
    assert_eq!(e.execute(0, &["LINDEX", "l", "-6"]), Reply::Null);
    assert_eq!(
        e.execute(0, &["LINDEX", "l", "-9223372036854775808"]),
        Reply::Null
    );
    assert_eq!(e.execute(0, &["LINDEX", "l", "x"]), err(NOT_INT));
    assert_eq!(e.execute(0, &["LINDEX", "nokey", "x"]), Reply::Null);
    assert_eq!(e.execute(0, &["LINDEX", "s", "x"]), err(WRONGTYPE));
}

#[test]
fn lset_errors_and_negative_index() {
    let e = abcde();
    assert_eq!(e.execute(0, &["LSET", "l", "0", "A"]), Reply::ok());
    assert_eq!(e.execute(0, &["LSET", "l", "-1", "E"]), Reply::ok());
    assert_eq!(all(&e, "l"), bulks(&["A", "b", "c", "d", "E"]));
    let range = err("ERR index out of range");
    assert_eq!(e.execute(0, &["LSET", "l", "5", "z"]), range);
    assert_eq!(e.execute(0, &["LSET", "l", "-6", "z"]), range);
    assert_eq!(
        e.execute(0, &["LSET", "l", "-9223372036854775808", "z"]),
        range
    );
    assert_eq!(e.execute(0, &["LSET", "l", "x", "z"]), err(NOT_INT));
    // The key is looked up before the index is parsed.
    assert_eq!(
        e.execute(0, &["LSET", "nokey", "x", "z"]),
        err("ERR no such key")
    );
    assert_eq!(
        e.execute(0, &["LSET", "nokey", "0", "z"]),
        err("ERR no such key")
    );
    assert_eq!(e.execute(0, &["LSET", "s", "x", "z"]), err(WRONGTYPE));
    assert!(!exists(&e, "nokey"));
}

#[test]
fn linsert_before_after() {
    let e = abcde();
    assert_eq!(e.execute(0, &["LINSERT", "l", "before", "c", "X"]), int(6));
    assert_eq!(e.execute(0, &["LINSERT", "l", "after", "e", "Y"]), int(7));
    assert_eq!(e.execute(0, &["LINSERT", "l", "BEFORE", "a", "Z"]), int(8));
    assert_eq!(
        e.execute(0, &["LINSERT", "l", "before", "nope", "X"]),
        int(-1)
    );
    assert_eq!(
        all(&e, "l"),
        bulks(&["Z", "a", "b", "X", "c", "d", "e", "Y"])
    );
    assert_eq!(
        e.execute(0, &["LINSERT", "nokey", "before", "c", "X"]),
        int(0)
    );
    assert!(!exists(&e, "nokey"));
    assert_eq!(
        e.execute(0, &["LINSERT", "s", "before", "c", "X"]),
        err(WRONGTYPE)
    );
    // The position keyword is checked before the key.
    assert_eq!(
        e.execute(0, &["LINSERT", "s", "middle", "c", "X"]),
        err(SYNTAX)
    );
    assert_eq!(
        e.execute(0, &["LINSERT", "nokey", "middle", "c", "X"]),
        err(SYNTAX)
    );
}

#[test]
fn lrem_by_sign_of_count() {
    let e = engine();
    e.execute(0, &["RPUSH", "l", "a", "b", "a", "b", "a", "b", "c"]);
    e.execute(0, &["SET", "s", "x"]);
    assert_eq!(e.execute(0, &["LREM", "l", "2", "a"]), int(2));
    assert_eq!(all(&e, "l"), bulks(&["b", "b", "a", "b", "c"]));
    assert_eq!(e.execute(0, &["LREM", "l", "-1", "b"]), int(1));
    assert_eq!(all(&e, "l"), bulks(&["b", "b", "a", "c"]));
    assert_eq!(e.execute(0, &["LREM", "l", "0", "nothere"]), int(0));
    assert_eq!(
        e.execute(0, &["LREM", "l", "-9223372036854775808", "b"]),
        int(2)
    );
    assert_eq!(e.execute(0, &["LREM", "l", "0", "a"]), int(1));
    assert_eq!(e.execute(0, &["LREM", "l", "0", "c"]), int(1));
    assert!(!exists(&e, "l"));
    assert_eq!(e.execute(0, &["LREM", "nokey", "0", "a"]), int(0));
    assert_eq!(e.execute(0, &["LREM", "l", "x", "b"]), err(NOT_INT));
    assert_eq!(e.execute(0, &["LREM", "s", "0", "a"]), err(WRONGTYPE));
    assert_eq!(e.execute(0, &["LREM", "s", "x", "a"]), err(NOT_INT));
}

#[test]
fn ltrim_ranges() {
    let e = abcde();
    assert_eq!(e.execute(0, &["LTRIM", "l", "1", "-2"]), Reply::ok());
    assert_eq!(all(&e, "l"), bulks(&["b", "c", "d"]));
    assert_eq!(e.execute(0, &["LTRIM", "l", "-100", "100"]), Reply::ok());
    assert_eq!(all(&e, "l"), bulks(&["b", "c", "d"]));
    assert_eq!(e.execute(0, &["LTRIM", "l", "2", "1"]), Reply::ok());
    assert!(!exists(&e, "l"));
    e.execute(0, &["RPUSH", "l", "a", "b", "c", "d", "e"]);
    assert_eq!(e.execute(0, &["LTRIM", "l", "-2", "-1"]), Reply::ok());
    assert_eq!(all(&e, "l"), bulks(&["d", "e"]));
    assert_eq!(e.execute(0, &["LTRIM", "l", "5", "10"]), Reply::ok());
    assert!(!exists(&e, "l"));
    e.execute(0, &["RPUSH", "l", "a", "b"]);
    assert_eq!(
        e.execute(
            0,
            &["LTRIM", "l", "-9223372036854775808", "9223372036854775807"]
        ),
        Reply::ok()
    );
    assert_eq!(all(&e, "l"), bulks(&["a", "b"]));
    assert_eq!(e.execute(0, &["LTRIM", "nokey", "0", "1"]), Reply::ok());
    assert_eq!(e.execute(0, &["LTRIM", "l", "x", "1"]), err(NOT_INT));
    assert_eq!(e.execute(0, &["LTRIM", "s", "0", "1"]), err(WRONGTYPE));
    assert_eq!(e.execute(0, &["LTRIM", "s", "x", "1"]), err(NOT_INT));
}

const RANK_ZERO: &str = "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list";

#[test]
fn lpos_rank_count_maxlen() {
    let e = engine();
    e.execute(0, &["RPUSH", "l", "a", "b", "c", "a", "b", "c", "a"]);
    let p = |args: &[&str]| {
        let mut v = vec!["LPOS", "l", "a"];
        v.extend_from_slice(args);
        e.execute(0, &v)
    };
    let ints = |v: &[i64]| Reply::Array(v.iter().map(|&n| int(n)).collect());
    assert_eq!(p(&[]), int(0));
    assert_eq!(p(&["RANK", "2"]), int(3));
    assert_eq!(p(&["rank", "-1"]), int(6));
    assert_eq!(p(&["rank", "-2"]), int(3));
    assert_eq!(p(&["rank", "9223372036854775807"]), Reply::Null);
    assert_eq!(p(&["rank", "-9223372036854775808"]), int(6));
    assert_eq!(
        p(&["rank", "-9223372036854775808", "count", "0"]),
        ints(&[6, 3, 0])
    );
    assert_eq!(
        p(&["rank", "-9223372036854775807", "count", "0"]),
        ints(&[])
    );
    assert_eq!(p(&["count", "0"]), ints(&[0, 3, 6]));
    assert_eq!(p(&["count", "2"]), ints(&[0, 3]));
    assert_eq!(p(&["maxlen", "0"]), int(0));
    assert_eq!(p(&["maxlen", "3", "count", "0"]), ints(&[0]));
    assert_eq!(p(&["rank", "2", "maxlen", "3"]), Reply::Null);
    assert_eq!(p(&["rank", "-1", "maxlen", "3", "count", "0"]), ints(&[6]));
    assert_eq!(p(&["count", "10", "rank", "-2"]), ints(&[3, 0]));
    assert_eq!(p(&["RANK", "1", "COUNT", "1", "RANK", "2"]), ints(&[3]));
    assert_eq!(p(&["rank", "100", "count", "0"]), ints(&[]));
    assert_eq!(e.execute(0, &["LPOS", "l", "z"]), Reply::Null);
    assert_eq!(e.execute(0, &["LPOS", "l", "z", "COUNT", "0"]), ints(&[]));
    assert_eq!(e.execute(0, &["LPOS", "nokey", "a"]), Reply::Null);
    assert_eq!(
        e.execute(0, &["LPOS", "nokey", "a", "count", "2"]),
        ints(&[])
    );
}

#[test]
fn lpos_errors_in_argument_order() {
    let e = engine();
    e.execute(0, &["RPUSH", "l", "a"]);
    e.execute(0, &["SET", "s", "x"]);
    let p = |args: &[&str]| {
        let mut v = vec!["LPOS", "l", "a"];
        v.extend_from_slice(args);
        e.execute(0, &v)
    };
    assert_eq!(p(&["rank", "0"]), err(RANK_ZERO));
    assert_eq!(p(&["rank", "x"]), err(NOT_INT));
    assert_eq!(p(&["rank", "99999999999999999999"]), err(NOT_INT));
    let neg_count = err("ERR COUNT can't be negative");
    assert_eq!(p(&["count", "-1"]), neg_count);
    assert_eq!(p(&["count", "x"]), neg_count);
    assert_eq!(p(&["count", "99999999999999999999"]), neg_count);
    let neg_maxlen = err("ERR MAXLEN can't be negative");
    assert_eq!(p(&["maxlen", "-1"]), neg_maxlen);
    assert_eq!(p(&["maxlen", "x"]), neg_maxlen);
    assert_eq!(p(&["foo", "1"]), err(SYNTAX));
    assert_eq!(p(&["rank"]), err(SYNTAX));
    assert_eq!(p(&["maxlen", "1", "count"]), err(SYNTAX));
    assert_eq!(p(&["rank", "0", "foo"]), err(RANK_ZERO));
    assert_eq!(p(&["foo", "1", "rank", "0"]), err(SYNTAX));
    assert_eq!(p(&["count", "-1", "rank", "0"]), neg_count);
    assert_eq!(
        e.execute(0, &["LPOS", "nokey", "a", "rank", "0"]),
        err(RANK_ZERO)
    );
    assert_eq!(e.execute(0, &["LPOS", "s", "a"]), err(WRONGTYPE));
    assert_eq!(
        e.execute(0, &["LPOS", "s", "a", "rank", "0"]),
        err(RANK_ZERO)
    );
}

#[test]
fn lmove_between_and_within_lists() {
    let e = engine();
    e.execute(0, &["RPUSH", "l", "a", "b", "c"]);
    e.execute(0, &["SET", "s", "x"]);
    assert_eq!(
        e.execute(0, &["LMOVE", "l", "m", "left", "right"]),
        bulk("a")
    );
    assert_eq!(
        e.execute(0, &["LMOVE", "l", "m", "LEFT", "RIGHT"]),
        bulk("b")
    );
    assert_eq!(all(&e, "m"), bulks(&["a", "b"]));
    assert_eq!(
        e.execute(0, &["LMOVE", "l", "m", "up", "right"]),
        err(SYNTAX)
    );
    assert_eq!(
        e.execute(0, &["LMOVE", "l", "m", "left", "down"]),
        err(SYNTAX)
    );
    assert_eq!(
        e.execute(0, &["LMOVE", "nokey", "m", "up", "right"]),
        err(SYNTAX)
    );
    assert_eq!(
        e.execute(0, &["LMOVE", "nokey", "m", "left", "right"]),
        Reply::Null
    );
    assert_eq!(
        e.execute(0, &["LMOVE", "s", "m", "left", "right"]),
        err(WRONGTYPE)
    );
    // A destination of another type is refused before anything is popped...
    assert_eq!(
        e.execute(0, &["LMOVE", "l", "s", "left", "right"]),
        err(WRONGTYPE)
    );
    assert_eq!(all(&e, "l"), bulks(&["c"]));
    // ...but a missing source answers nil without looking at the destination.
    assert_eq!(
        e.execute(0, &["LMOVE", "nokey", "s", "left", "right"]),
        Reply::Null
    );
    // Same key: a one-element list survives its own rotation.
    assert_eq!(
        e.execute(0, &["LMOVE", "l", "l", "left", "right"]),
        bulk("c")
    );
    assert_eq!(all(&e, "l"), bulks(&["c"]));
    e.execute(0, &["RPUSH", "l", "x"]);
    assert_eq!(
        e.execute(0, &["LMOVE", "l", "l", "right", "left"]),
        bulk("x")
    );
    assert_eq!(all(&e, "l"), bulks(&["x", "c"]));
    assert_eq!(
        e.execute(0, &["LMOVE", "l", "m", "left", "left"]),
        bulk("x")
    );
    assert_eq!(
        e.execute(0, &["LMOVE", "l", "m", "right", "left"]),
        bulk("c")
    );
    assert!(!exists(&e, "l"));
    assert_eq!(all(&e, "m"), bulks(&["c", "x", "a", "b"]));
}

#[test]
fn rpoplpush_rotates() {
    let e = engine();
    e.execute(0, &["RPUSH", "l", "a", "b", "c"]);
    e.execute(0, &["SET", "s", "x"]);
    assert_eq!(e.execute(0, &["RPOPLPUSH", "l", "l"]), bulk("c"));
    assert_eq!(all(&e, "l"), bulks(&["c", "a", "b"]));
    assert_eq!(e.execute(0, &["RPOPLPUSH", "l", "m"]), bulk("b"));
    assert_eq!(all(&e, "m"), bulks(&["b"]));
    assert_eq!(e.execute(0, &["RPOPLPUSH", "nokey", "l"]), Reply::Null);
    assert_eq!(e.execute(0, &["RPOPLPUSH", "s", "m"]), err(WRONGTYPE));
    assert_eq!(e.execute(0, &["RPOPLPUSH", "m", "s"]), err(WRONGTYPE));
    assert_eq!(all(&e, "m"), bulks(&["b"]));
    assert_eq!(
        e.execute(0, &["RPOPLPUSH", "l"]),
        err("ERR wrong number of arguments for 'rpoplpush' command")
    );
}

fn popped(key: &str, items: &[&str]) -> Reply {
    Reply::Array(vec![bulk(key), bulks(items)])
}

#[test]
fn lmpop_pops_from_first_non_empty_list() {
    let e = engine();
    e.execute(0, &["RPUSH", "l", "a", "b", "c", "d"]);
    e.execute(0, &["RPUSH", "m", "x", "y"]);
    e.execute(0, &["SET", "s", "x"]);
    assert_eq!(
        e.execute(0, &["LMPOP", "1", "l", "left"]),
        popped("l", &["a"])
    );
    assert_eq!(
        e.execute(0, &["LMPOP", "2", "nokey", "l", "RIGHT", "COUNT", "2"]),
        popped("l", &["d", "c"])
    );
    assert_eq!(
        e.execute(0, &["LMPOP", "2", "nokey", "m", "left", "count", "10"]),
        popped("m", &["x", "y"])
    );
    assert!(!exists(&e, "m"));
    assert_eq!(
        e.execute(0, &["LMPOP", "2", "nokey", "m", "left"]),
        Reply::NullArray
    );
    assert_eq!(
        e.execute(0, &["LMPOP", "2", "l", "s", "left"]),
        popped("l", &["b"])
    );
    assert_eq!(
        e.execute(0, &["LMPOP", "2", "s", "l", "left"]),
        err(WRONGTYPE)
    );
}

#[test]
fn lmpop_argument_errors() {
    let e = engine();
    e.execute(0, &["RPUSH", "l", "a"]);
    let numkeys = err("ERR numkeys should be greater than 0");
    let count = err("ERR count should be greater than 0");
    let m = |args: &[&str]| {
        let mut v = vec!["LMPOP"];
        v.extend_from_slice(args);
        e.execute(0, &v)
    };
    assert_eq!(m(&["0", "l", "left"]), numkeys);
    assert_eq!(m(&["-1", "l", "left"]), numkeys);
    assert_eq!(m(&["x", "l", "left"]), numkeys);
    assert_eq!(m(&["99999999999999999999", "l", "left"]), numkeys);
    assert_eq!(m(&["2", "l", "left"]), err(SYNTAX));
    assert_eq!(m(&["3", "a", "b", "c"]), err(SYNTAX));
    assert_eq!(m(&["2", "a", "b", "c"]), err(SYNTAX));
    assert_eq!(m(&["1", "l", "middle"]), err(SYNTAX));
    assert_eq!(m(&["1", "l", "middle", "count", "0"]), err(SYNTAX));
    assert_eq!(m(&["1", "l", "left", "foo"]), err(SYNTAX));
    assert_eq!(m(&["1", "l", "left", "1"]), err(SYNTAX));
    assert_eq!(m(&["1", "l", "left", "count"]), err(SYNTAX));
    assert_eq!(
        m(&["1", "l", "left", "count", "1", "count", "1"]),
        err(SYNTAX)
    );
    assert_eq!(m(&["1", "l", "left", "foo", "count", "0"]), err(SYNTAX));
    assert_eq!(m(&["1", "l", "left", "count", "0", "foo"]), count);
    assert_eq!(m(&["1", "l", "left", "count", "-1"]), count);
    assert_eq!(m(&["1", "l", "left", "count", "x"]), count);
    assert_eq!(m(&["1", "nokey", "left", "count", "0"]), count);
    assert_eq!(
        m(&["1", "l"]),
        err("ERR wrong number of arguments for 'lmpop' command")
    );
    assert_eq!(e.execute(0, &["LLEN", "l"]), int(1));
}

#[test]
fn values_are_binary_safe() {
    let e = engine();
    let v: &[u8] = b"a\x00\r\n\xff";
    assert_eq!(e.execute(0, &[&b"RPUSH"[..], b"l", v, b""]), int(2));
    assert_eq!(e.execute(0, &[&b"LPOS"[..], b"l", v]), int(0));
    assert_eq!(e.execute(0, &[&b"LPOS"[..], b"l", b""]), int(1));
    assert_eq!(e.execute(0, &["LINDEX", "l", "0"]), Reply::bulk(v));
    assert_eq!(e.execute(0, &[&b"LREM"[..], b"l", b"0", v]), int(1));
    assert_eq!(e.execute(0, &["LPOP", "l"]), bulk(""));
    assert!(!exists(&e, "l"));
}

#[test]
fn typed_api_round_trip() {
    let e = engine();
    assert_eq!(e.rpush(0, b"l", &[b"b", b"c"]), Ok(2));
    assert_eq!(e.lpush(0, b"l", &[b"a"]), Ok(3));
    assert_eq!(
        e.lrange(0, b"l", 0, -1),
        Ok(vec![b"a".to_vec(), b"b".to_vec(), b"c".to_vec()])
    );
}
