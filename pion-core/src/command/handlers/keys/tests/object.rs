//! OBJECT and its subcommands.

use super::*;

fn set_config(e: &Engine, name: &str, value: &str) {
    assert_eq!(run(e, &["CONFIG", "SET", name, value]), Reply::ok());
}

#[test]
fn encoding() {
    let e = engine();
    run(&e, &["SET", "i", "123"]);
    run(&e, &["SET", "s", "hello"]);
    run(&e, &["SET", "r", &"x".repeat(45)]);
    list(&e, "l", &["a"]);
    hash(&e, "h", &[("a", "b")]);
    set(&e, "si", &["1"]);
    set(&e, "ss", &["a"]);
    zset(&e, "z", &[(1.0, "a")]);
    for (key, enc) in [
        ("i", "int"),
        ("s", "embstr"),
        ("r", "raw"),
        ("l", "quicklist"),
        ("h", "listpack"),
        ("si", "intset"),
        ("ss", "hashtable"),
        ("z", "listpack"),
    ] {
        assert_eq!(run(&e, &["OBJECT", "ENCODING", key]), bulk(enc), "{key}");
    }
    assert_eq!(run(&e, &["OBJECT", "encoding", "nokey"]), Reply::Null);
}

#[test]
fn refcount_of_shared_integers() {
    let e = engine();
    let shared = int(2_147_483_647);
    for (value, expected) in [
        ("0", shared.clone()),
        ("9999", shared.clone()),
        ("10000", int(1)),
        ("-1", int(1)),
        ("hello", int(1)),
    ] {
        run(&e, &["SET", "k", value]);
        assert_eq!(run(&e, &["OBJECT", "REFCOUNT", "k"]), expected, "{value}");
    }
    list(&e, "l", &["1"]);
    assert_eq!(run(&e, &["OBJECT", "REFCOUNT", "l"]), int(1));
    assert_eq!(run(&e, &["OBJECT", "REFCOUNT", "nokey"]), Reply::Null);
    // With a maxmemory LRU/LFU policy Redis stops sharing integers.
    run(&e, &["SET", "k", "5"]);
    set_config(&e, "maxmemory", "1gb");
    set_config(&e, "maxmemory-policy", "allkeys-lru");
    assert_eq!(run(&e, &["OBJECT", "REFCOUNT", "k"]), int(1));
    set_config(&e, "maxmemory-policy", "volatile-ttl");
    assert_eq!(run(&e, &["OBJECT", "REFCOUNT", "k"]), shared);
}

#[test]
fn idletime_and_freq_depend_on_the_policy() {
    let e = engine();
    run(&e, &["SET", "k", "v"]);
    assert_eq!(run(&e, &["OBJECT", "IDLETIME", "k"]), int(0));
    assert_eq!(run(&e, &["OBJECT", "IDLETIME", "nokey"]), Reply::Null);
    assert_eq!(
        run(&e, &["OBJECT", "FREQ", "k"]),
        err("ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.")
    );
    assert_eq!(run(&e, &["OBJECT", "FREQ", "nokey"]), Reply::Null);
    set_config(&e, "maxmemory-policy", "allkeys-lfu");
    // A key created under the LFU policy starts at 5; its first read certainly adds one.
    run(&e, &["DEL", "k"]);
    run(&e, &["SET", "k", "v"]);
    assert_eq!(run(&e, &["OBJECT", "FREQ", "k"]), int(5));
    run(&e, &["GET", "k"]);
    assert_eq!(run(&e, &["OBJECT", "FREQ", "k"]), int(6));
    // Overwriting keeps the counter, as Redis does.
    run(&e, &["SET", "k", "w"]);
    let after = run(&e, &["OBJECT", "FREQ", "k"]);
    assert!(after == int(6) || after == int(7), "{after:?}");
    assert_eq!(
        run(&e, &["OBJECT", "IDLETIME", "k"]),
        err("ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.")
    );
    assert_eq!(run(&e, &["OBJECT", "IDLETIME", "nokey"]), Reply::Null);
}

#[test]
fn object_does_not_touch_and_counts_lookups() {
    let e = engine();
    run(&e, &["SET", "k", "v"]);
    let stats = e.keyspace().stats();
    let hits = stats.keyspace_hits();
    let misses = stats.keyspace_misses();
    run(&e, &["OBJECT", "ENCODING", "k"]);
    run(&e, &["OBJECT", "ENCODING", "nokey"]);
    assert_eq!(stats.keyspace_hits(), hits + 1);
    assert_eq!(stats.keyspace_misses(), misses + 1);
}

#[test]
fn help_and_errors() {
    let e = engine();
    let Reply::Array(lines) = run(&e, &["OBJECT", "HELP"]) else {
        panic!("OBJECT HELP is not an array");
    };
    assert_eq!(lines.len(), 15);
    assert_eq!(
        lines[0],
        Reply::status("OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:")
    );
    assert_eq!(lines[14], Reply::status("    Prints this help."));
    assert_eq!(
        run(&e, &["OBJECT", "foo"]),
        err("ERR unknown subcommand 'foo'. Try OBJECT HELP.")
    );
    assert_eq!(
        run(&e, &["OBJECT"]),
        err("ERR wrong number of arguments for 'object' command")
    );
    assert_eq!(
        run(&e, &["OBJECT", "ENCODING"]),
        err("ERR wrong number of arguments for 'object|encoding' command")
    );
    assert_eq!(
        run(&e, &["OBJECT", "FREQ", "a", "b"]),
        err("ERR wrong number of arguments for 'object|freq' command")
    );
    assert_eq!(
        run(&e, &["OBJECT", "HELP", "x"]),
        err("ERR wrong number of arguments for 'object|help' command")
    );
}
