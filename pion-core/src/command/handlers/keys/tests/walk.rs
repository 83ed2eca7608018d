//! KEYS, SCAN and RANDOMKEY.

use std::collections::BTreeSet;

use proptest::prelude::*;

use super::*;
use crate::command::handlers::util::parse_scan_cursor as parse_cursor;

/// The keys of a reply array, sorted (Pion's order is its own).
fn sorted(reply: Reply) -> Vec<Vec<u8>> {
    let Reply::Array(items) = reply else {
        return Vec::new();
    };
    let mut keys: Vec<Vec<u8>> = items
        .iter()
        .filter_map(|r| r.as_bytes().map(<[u8]>::to_vec))
        .collect();
    keys.sort();
    keys
}

/// Runs a whole SCAN iteration; returns every key it reported and the number of calls.
fn scan_all(e: &Engine, extra: &[&str]) -> (Vec<Vec<u8>>, usize) {
    let mut cursor = String::from("0");
    let mut keys = Vec::new();
    let mut calls = 0;
    loop {
        let mut args = vec!["SCAN", cursor.as_str()];
        args.extend_from_slice(extra);
        let reply = run(e, &args);
        calls += 1;
        let Reply::Array(parts) = reply else {
            panic!("SCAN replied {reply:?}");
        };
        let next = parts[0]
            .as_bytes()
            .map(|b| String::from_utf8_lossy(b).into_owned());
        keys.extend(sorted(parts[1].clone()));
        match next {
            Some(c) if c != "0" => cursor = c,
            _ => break,
        }
    }
    keys.sort();
    (keys, calls)
}

fn b(s: &str) -> Vec<u8> {
    s.as_bytes().to_vec()
}

#[test]
fn keys_with_patterns() {
    let e = engine();
    mset(&e, &[("a", "1"), ("ab", "2"), ("abc", "3"), ("b", "4")]);
    assert_eq!(
        sorted(run(&e, &["KEYS", "a*"])),
        vec![b("a"), b("ab"), b("abc")]
    );
    assert_eq!(sorted(run(&e, &["KEYS", "*"])).len(), 4);
    assert_eq!(sorted(run(&e, &["KEYS", "?"])), vec![b("a"), b("b")]);
    assert_eq!(run(&e, &["KEYS", "x"]), Reply::Array(vec![]));
    // The empty pattern matches the empty key only.
    assert_eq!(run(&e, &["KEYS", ""]), Reply::Array(vec![]));
    run(&e, &["SET", "", "e"]);
    assert_eq!(run(&e, &["KEYS", ""]), bulks(&[""]));
    run(&e, &["PEXPIREAT", "abc", "1"]);
    assert_eq!(sorted(run(&e, &["KEYS", "a*"])), vec![b("a"), b("ab")]);
    assert_eq!(
        run(&e, &["KEYS"]),
        err("ERR wrong number of arguments for 'keys' command")
    );
}

#[test]
fn scan_options_and_errors() {
    let e = engine();
    mset(&e, &[("a", "1"), ("b", "2")]);
    list(&e, "l", &["x"]);
    let (all, _) = scan_all(&e, &[]);
    assert_eq!(all, vec![b("a"), b("b"), b("l")]);
    assert_eq!(scan_all(&e, &["TYPE", "list"]).0, vec![b("l")]);
    assert_eq!(scan_all(&e, &["TYPE", "String"]).0, vec![b("a"), b("b")]);
    assert_eq!(scan_all(&e, &["TYPE", "foo"]).0, Vec::<Vec<u8>>::new());
    assert_eq!(scan_all(&e, &["MATCH", "*", "MATCH", "b"]).0, vec![b("b")]);
    assert_eq!(
        scan_all(&e, &["MATCH", "[ab]", "COUNT", "1000"]).0,
        vec![b("a"), b("b")]
    );
    let syntax = err("ERR syntax error");
    assert_eq!(run(&e, &["SCAN", "0", "COUNT", "0"]), syntax);
    assert_eq!(run(&e, &["SCAN", "0", "COUNT", "-1"]), syntax);
    assert_eq!(run(&e, &["SCAN", "0", "MATCH"]), syntax);
    assert_eq!(run(&e, &["SCAN", "0", "COUNT", "5", "MATCH"]), syntax);
    assert_eq!(run(&e, &["SCAN", "0", "foo", "bar"]), syntax);
    assert_eq!(
        run(&e, &["SCAN", "0", "COUNT", "abc"]),
        err("ERR value is not an integer or out of range")
    );
    let invalid = err("ERR invalid cursor");
    for bad in ["abc", " 0", "0x", "18446744073709551616", "+", "-"] {
        assert_eq!(run(&e, &["SCAN", bad]), invalid, "{bad:?}");
    }
    // The cursor is checked before the options.
    assert_eq!(run(&e, &["SCAN", "abc", "COUNT", "0"]), invalid);
    assert_eq!(
        run(&e, &["SCAN"]),
        err("ERR wrong number of arguments for 'scan' command")
    );
    // Cursors past the end finish the iteration.
    assert_eq!(
        run(&e, &["SCAN", "18446744073709551615"]),
        Reply::Array(vec![bulk("0"), Reply::Array(vec![])])
    );
}

#[test]
fn cursor_parsing_follows_strtoull() {
    assert_eq!(parse_cursor(b""), Ok(0));
    assert_eq!(parse_cursor(b"+7"), Ok(7));
    assert_eq!(parse_cursor(b"007"), Ok(7));
    assert_eq!(parse_cursor(b"-1"), Ok(u64::MAX));
    assert_eq!(parse_cursor(b"18446744073709551615"), Ok(u64::MAX));
    assert!(parse_cursor(b"1 ").is_err());
}

#[test]
fn scan_skips_expired_keys_and_works_per_database() {
    let e = engine();
    run(&e, &["SET", "live", "1"]);
    run(&e, &["SET", "dead", "1"]);
    run(&e, &["PEXPIREAT", "dead", "1"]);
    e.execute(1, &["SET", "other", "1"]);
    assert_eq!(scan_all(&e, &[]).0, vec![b("live")]);
    assert_eq!(
        e.execute(1, &["SCAN", "0", "COUNT", "100000"]),
        Reply::Array(vec![bulk("0"), bulks(&["other"])])
    );
}

#[test]
fn randomkey() {
    let e = engine();
    assert_eq!(run(&e, &["RANDOMKEY"]), Reply::Null);
    run(&e, &["SET", "only", "1"]);
    assert_eq!(run(&e, &["RANDOMKEY"]), bulk("only"));
    run(&e, &["PEXPIREAT", "only", "1"]);
    assert_eq!(run(&e, &["RANDOMKEY"]), Reply::Null);
    mset(&e, &[("a", "1"), ("b", "2")]);
    let seen: BTreeSet<_> = (0..50)
        .filter_map(|_| run(&e, &["RANDOMKEY"]).as_bytes().map(<[u8]>::to_vec))
        .collect();
    assert!(seen.iter().all(|k| k == b"a" || k == b"b"));
    assert_eq!(
        run(&e, &["RANDOMKEY", "x"]),
        err("ERR wrong number of arguments for 'randomkey' command")
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// A full SCAN iteration reports every key exactly once, whatever the COUNT, and
    /// MATCH filters like KEYS does.
    #[test]
    fn scan_reports_every_key_once(
        names in proptest::collection::btree_set("[a-d]{1,6}", 0..60),
        count in 1usize..50,
    ) {
        let e = engine();
        for n in &names {
            run(&e, &["SET", n, "v"]);
        }
        let count = count.to_string();
        let (keys, _) = scan_all(&e, &["COUNT", &count]);
        let expected: Vec<Vec<u8>> = names.iter().map(|n| b(n)).collect();
        prop_assert_eq!(keys, expected);
        let (matched, _) = scan_all(&e, &["MATCH", "a*", "COUNT", &count]);
        prop_assert_eq!(matched, sorted(run(&e, &["KEYS", "a*"])));
    }
}
