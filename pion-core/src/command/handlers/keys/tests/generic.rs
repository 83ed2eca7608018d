//! DEL, UNLINK, EXISTS, TOUCH, TYPE, RENAME, RENAMENX, COPY, MOVE and the table entries.

use super::*;

fn stats(e: &Engine) -> (u64, u64) {
    let s = e.keyspace().stats();
    (s.keyspace_hits(), s.keyspace_misses())
}

#[test]
fn table_entries_match_redis() {
    let e = engine();
    for expected in [
        "del -2 write 1 -1 1 @keyspace @write @slow",
        "unlink -2 write fast 1 -1 1 @keyspace @write @fast",
        "exists -2 readonly fast 1 -1 1 @keyspace @read @fast",
        "touch -2 readonly fast 1 -1 1 @keyspace @read @fast",
        "type 2 readonly fast 1 1 1 @keyspace @read @fast",
        "expire -3 write fast 1 1 1 @keyspace @write @fast",
        "pexpire -3 write fast 1 1 1 @keyspace @write @fast",
        "expireat -3 write fast 1 1 1 @keyspace @write @fast",
        "pexpireat -3 write fast 1 1 1 @keyspace @write @fast",
        "expiretime 2 readonly fast 1 1 1 @keyspace @read @fast",
        "pexpiretime 2 readonly fast 1 1 1 @keyspace @read @fast",
        "ttl 2 readonly fast 1 1 1 @keyspace @read @fast",
        "pttl 2 readonly fast 1 1 1 @keyspace @read @fast",
        "persist 2 write fast 1 1 1 @keyspace @write @fast",
        "rename 3 write 1 2 1 @keyspace @write @slow",
        "renamenx 3 write fast 1 2 1 @keyspace @write @fast",
        "copy -3 write denyoom 1 2 1 @keyspace @write @slow",
        "move 3 write fast 1 1 1 @keyspace @write @fast",
        "keys 2 readonly 0 0 0 @keyspace @read @slow @dangerous",
        "scan -2 readonly 0 0 0 @keyspace @read @slow",
        "randomkey 1 readonly 0 0 0 @keyspace @read @slow",
        "object|encoding 3 readonly 2 2 1 @keyspace @read @slow",
        "object|freq 3 readonly 2 2 1 @keyspace @read @slow",
        "object|idletime 3 readonly 2 2 1 @keyspace @read @slow",
        "object|refcount 3 readonly 2 2 1 @keyspace @read @slow",
        "object|help 2 loading stale 0 0 0 @keyspace @slow",
    ] {
        let name = expected.split(' ').next().unwrap_or_default();
        assert_eq!(info_line(&e, name), expected);
    }
    // Arity, flags and key range as in Redis (its categories add @set and @sortedset).
    assert!(info_line(&e, "sort").starts_with("sort -2 write denyoom movablekeys 1 1 1 "));
    assert!(info_line(&e, "sort_ro").starts_with("sort_ro -2 readonly movablekeys 1 1 1 "));
    assert!(info_line(&e, "sort").ends_with("@slow @dangerous"));
}

#[test]
fn getkeys_of_sort() {
    let e = engine();
    let keys = |args: &[&str]| {
        let mut full = vec!["COMMAND", "GETKEYS"];
        full.extend_from_slice(args);
        run(&e, &full)
    };
    assert_eq!(
        keys(&["SORT", "l", "STORE", "a", "STORE", "b"]),
        bulks(&["l", "b"])
    );
    assert_eq!(
        keys(&["SORT", "l", "BY", "x", "GET", "store"]),
        bulks(&["l"])
    );
    assert_eq!(
        keys(&["SORT", "l", "LIMIT", "store", "x", "store", "d"]),
        bulks(&["l", "d"])
    );
    assert_eq!(keys(&["SORT_RO", "l", "STORE", "x"]), bulks(&["l"]));
}

#[test]
fn del_unlink_exists() {
    let e = engine();
    run(&e, &["SET", "a", "1"]);
    run(&e, &["SET", "b", "2"]);
    assert_eq!(run(&e, &["DEL", "a", "b", "c"]), int(2));
    assert_eq!(run(&e, &["EXISTS", "a", "b", "a"]), int(0));
    run(&e, &["SET", "a", "1"]);
    assert_eq!(run(&e, &["EXISTS", "a", "a", "a"]), int(3));
    assert_eq!(run(&e, &["UNLINK", "a", "a"]), int(1));
    assert_eq!(
        run(&e, &["DEL"]),
        err("ERR wrong number of arguments for 'del' command")
    );
    assert_eq!(
        run(&e, &["EXISTS"]),
        err("ERR wrong number of arguments for 'exists' command")
    );
    // Binary-safe names, the empty name included.
    e.execute(0, &[&b"SET"[..], b"\x00\xff", b"v"]);
    run(&e, &["SET", "", "v"]);
    assert_eq!(e.execute(0, &[&b"EXISTS"[..], b"\x00\xff", b""]), int(2));
    assert_eq!(e.execute(0, &[&b"DEL"[..], b"\x00\xff", b""]), int(2));
}

#[test]
fn expired_keys_do_not_exist() {
    let e = engine();
    run(&e, &["SET", "a", "1"]);
    list(&e, "l", &["x"]);
    assert_eq!(run(&e, &["PEXPIREAT", "a", "1"]), int(1));
    assert_eq!(run(&e, &["EXISTS", "a"]), int(0));
    assert_eq!(run(&e, &["DEL", "a", "l"]), int(1));
}

#[test]
fn touch_and_type() {
    let e = engine();
    run(&e, &["SET", "s", "1"]);
    list(&e, "l", &["x"]);
    hash(&e, "h", &[("f", "v")]);
    set(&e, "st", &["m"]);
    zset(&e, "z", &[(1.0, "m")]);
    assert_eq!(run(&e, &["TOUCH", "s", "s", "nokey"]), int(2));
    for (key, name) in [
        ("s", "string"),
        ("l", "list"),
        ("h", "hash"),
        ("st", "set"),
        ("z", "zset"),
        ("nokey", "none"),
    ] {
        assert_eq!(run(&e, &["TYPE", key]), Reply::status(name));
    }
    assert_eq!(
        run(&e, &["TYPE", "a", "b"]),
        err("ERR wrong number of arguments for 'type' command")
    );
}

#[test]
fn lookups_count_hits_and_misses_like_redis() {
    let e = engine();
    run(&e, &["SET", "a", "1"]);
    let before = stats(&e);
    run(&e, &["EXISTS", "a", "nokey"]);
    run(&e, &["TYPE", "a"]);
    run(&e, &["TOUCH", "a", "nokey"]);
    run(&e, &["DEL", "nokey"]);
    run(&e, &["COPY", "nokey", "x"]);
    run(&e, &["RENAME", "a", "b"]);
    let after = stats(&e);
    assert_eq!((after.0 - before.0, after.1 - before.1), (3, 3));
}

#[test]
fn rename_moves_value_and_ttl() {
    let e = engine();
    assert_eq!(run(&e, &["RENAME", "nokey", "x"]), err("ERR no such key"));
    assert_eq!(run(&e, &["RENAMENX", "nokey", "x"]), err("ERR no such key"));
    assert_eq!(
        run(&e, &["RENAME", "nokey", "nokey"]),
        err("ERR no such key")
    );
    run(&e, &["SET", "a", "1", "EX", "100"]);
    assert_eq!(run(&e, &["RENAME", "a", "a"]), Reply::ok());
    assert_eq!(run(&e, &["RENAMENX", "a", "a"]), int(0));
    assert_eq!(run(&e, &["RENAME", "a", "b"]), Reply::ok());
    assert_eq!(run(&e, &["TTL", "b"]), int(100));
    assert_eq!(run(&e, &["EXISTS", "a"]), int(0));
    run(&e, &["SET", "c", "2"]);
    assert_eq!(run(&e, &["RENAMENX", "b", "c"]), int(0));
    assert_eq!(run(&e, &["RENAMENX", "b", "d"]), int(1));
    assert_eq!(run(&e, &["TTL", "d"]), int(100));
    // The destination's old value and time to live are replaced.
    list(&e, "e", &["x"]);
    assert_eq!(run(&e, &["RENAME", "e", "d"]), Reply::ok());
    assert_eq!(run(&e, &["TTL", "d"]), int(-1));
    assert_eq!(run(&e, &["TYPE", "d"]), Reply::status("list"));
    assert_eq!(
        run(&e, &["RENAME", "d"]),
        err("ERR wrong number of arguments for 'rename' command")
    );
}

#[test]
fn copy_options_and_errors() {
    let e = engine();
    assert_eq!(run(&e, &["COPY", "nokey", "x"]), int(0));
    assert_eq!(
        run(&e, &["COPY", "nokey", "nokey"]),
        err("ERR source and destination objects are the same")
    );
    run(&e, &["SET", "d", "v", "PX", "100000"]);
    assert_eq!(
        run(&e, &["COPY", "d", "d", "DB", "0"]),
        err("ERR source and destination objects are the same")
    );
    assert_eq!(run(&e, &["COPY", "d", "x"]), int(1));
    assert_eq!(run(&e, &["GET", "x"]), bulk("v"));
    assert!(matches!(run(&e, &["PTTL", "x"]), Reply::Integer(n) if n > 99_000));
    assert_eq!(run(&e, &["COPY", "d", "d", "db", "1"]), int(1));
    assert_eq!(e.execute(1, &["GET", "d"]), bulk("v"));
    assert_eq!(run(&e, &["COPY", "d", "d", "DB", "1"]), int(0));
    assert_eq!(run(&e, &["COPY", "d", "d", "DB", "1", "REPLACE"]), int(1));
    run(&e, &["SET", "z", "old"]);
    assert_eq!(run(&e, &["COPY", "d", "z"]), int(0));
    assert_eq!(run(&e, &["COPY", "d", "z", "replace", "replace"]), int(1));
    assert_eq!(run(&e, &["GET", "z"]), bulk("v"));
    let out_of_range = err("ERR DB index is out of range");
    assert_eq!(run(&e, &["COPY", "d", "y", "DB", "16"]), out_of_range);
    assert_eq!(run(&e, &["COPY", "d", "y", "DB", "-1"]), out_of_range);
    assert_eq!(
        run(&e, &["COPY", "nokey", "y", "DB", "abc"]),
        err("ERR value is not an integer or out of range")
    );
    assert_eq!(run(&e, &["COPY", "d", "y", "DB"]), err("ERR syntax error"));
    assert_eq!(
        run(&e, &["COPY", "nokey", "y", "foo"]),
        err("ERR syntax error")
    );
    // Any type, content and order kept.
    list(&e, "l", &["b", "a"]);
    assert_eq!(run(&e, &["COPY", "l", "l2"]), int(1));
    assert_eq!(run(&e, &["SORT", "l2", "BY", "nosort"]), bulks(&["b", "a"]));
}

#[test]
fn move_between_databases() {
    let e = engine();
    run(&e, &["SET", "k", "v", "PX", "100000"]);
    let same = err("ERR source and destination objects are the same");
    assert_eq!(run(&e, &["MOVE", "k", "0"]), same);
    assert_eq!(run(&e, &["MOVE", "nokey", "0"]), same);
    assert_eq!(
        run(&e, &["MOVE", "k", "16"]),
        err("ERR DB index is out of range")
    );
    assert_eq!(
        run(&e, &["MOVE", "k", "-1"]),
        err("ERR DB index is out of range")
    );
    assert_eq!(
        run(&e, &["MOVE", "k", "abc"]),
        err("ERR value is not an integer or out of range")
    );
    assert_eq!(run(&e, &["MOVE", "nokey", "1"]), int(0));
    assert_eq!(run(&e, &["MOVE", "k", "1"]), int(1));
    assert_eq!(run(&e, &["EXISTS", "k"]), int(0));
    assert!(matches!(e.execute(1, &["PTTL", "k"]), Reply::Integer(n) if n > 99_000));
    // An existing key in the target database blocks the move.
    run(&e, &["SET", "k", "other"]);
    assert_eq!(e.execute(1, &["MOVE", "k", "0"]), int(0));
    assert_eq!(run(&e, &["GET", "k"]), bulk("other"));
    assert_eq!(e.execute(1, &["GET", "k"]), bulk("v"));
}
