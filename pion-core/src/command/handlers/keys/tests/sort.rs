//! SORT and SORT_RO.

use proptest::prelude::*;

use super::*;
use crate::command::handlers::keys::sort::strtod_exact;

const BAD_SCORE: &str = "ERR One or more scores can't be converted into double";

/// The contents of a list, read back with SORT … BY nosort.
fn contents(e: &Engine, key: &str) -> Reply {
    run(e, &["SORT", key, "BY", "nosort"])
}

#[test]
fn numeric_and_alpha() {
    let e = engine();
    list(&e, "l", &["3", "1", "2", "10"]);
    assert_eq!(run(&e, &["SORT", "l"]), bulks(&["1", "2", "3", "10"]));
    assert_eq!(
        run(&e, &["SORT", "l", "DESC"]),
        bulks(&["10", "3", "2", "1"])
    );
    assert_eq!(
        run(&e, &["SORT", "l", "ALPHA"]),
        bulks(&["1", "10", "2", "3"])
    );
    assert_eq!(
        run(&e, &["SORT", "l", "desc", "asc"]),
        bulks(&["1", "2", "3", "10"])
    );
    list(&e, "bad", &["1", "a", "2"]);
    assert_eq!(run(&e, &["SORT", "bad"]), err(BAD_SCORE));
    assert_eq!(run(&e, &["SORT", "bad", "ALPHA"]), bulks(&["1", "2", "a"]));
    // Equal scores fall back to comparing the elements.
    list(&e, "eq", &["1.50", "1.5", "01.5", "0", "-0"]);
    assert_eq!(
        run(&e, &["SORT", "eq"]),
        bulks(&["-0", "0", "01.5", "1.5", "1.50"])
    );
    assert_eq!(
        run(&e, &["SORT", "eq", "DESC"]),
        bulks(&["1.50", "1.5", "01.5", "0", "-0"])
    );
    list(&e, "inf", &["inf", "-inf", "3"]);
    assert_eq!(run(&e, &["SORT", "inf"]), bulks(&["-inf", "3", "inf"]));
}

#[test]
fn types_missing_keys_and_errors() {
    let e = engine();
    assert_eq!(run(&e, &["SORT", "nokey"]), Reply::Array(vec![]));
    mset(&e, &[("str", "x")]);
    let wrong = err("WRONGTYPE Operation against a key holding the wrong kind of value");
    assert_eq!(run(&e, &["SORT", "str"]), wrong);
    hash(&e, "h", &[("a", "b")]);
    assert_eq!(run(&e, &["SORT_RO", "h"]), wrong);
    // Options are read before the key.
    let syntax = err("ERR syntax error");
    assert_eq!(run(&e, &["SORT", "str", "foo"]), syntax);
    list(&e, "l", &["2", "1"]);
    for args in [
        &["SORT", "l", "LIMIT", "1"][..],
        &["SORT", "l", "STORE"],
        &["SORT", "l", "GET"],
        &["SORT", "l", "BY"],
        &["SORT_RO", "l", "STORE", "dst"],
    ] {
        assert_eq!(run(&e, args), syntax, "{args:?}");
    }
    assert_eq!(
        run(&e, &["SORT", "str", "LIMIT", "a", "b"]),
        err("ERR value is not an integer or out of range")
    );
    assert_eq!(
        run(&e, &["SORT"]),
        err("ERR wrong number of arguments for 'sort' command")
    );
    assert_eq!(
        run(&e, &["SORT_RO"]),
        err("ERR wrong number of arguments for 'sort_ro' command")
    );
}

#[test]
fn limit() {
    let e = engine();
    list(&e, "l", &["3", "1", "2", "10"]);
    let s = |a: &str, b: &str| run(&e, &["SORT", "l", "LIMIT", a, b]);
    assert_eq!(s("1", "2"), bulks(&["2", "3"]));
    assert_eq!(s("0", "-1"), bulks(&["1", "2", "3", "10"]));
    assert_eq!(s("-1", "2"), bulks(&["1", "2"]));
    assert_eq!(s("5", "2"), Reply::Array(vec![]));
    assert_eq!(s("0", "0"), Reply::Array(vec![]));
    assert_eq!(s("0", "9223372036854775807"), bulks(&["1", "2", "3", "10"]));
    assert_eq!(s("9223372036854775807", "1"), Reply::Array(vec![]));
    assert_eq!(
        s("-9223372036854775808", "-1"),
        bulks(&["1", "2", "3", "10"])
    );
    // The last LIMIT wins.
    assert_eq!(
        run(&e, &["SORT", "l", "LIMIT", "0", "1", "LIMIT", "1", "1"]),
        bulks(&["2"])
    );
}

#[test]
fn nosort_keeps_the_value_order() {
    let e = engine();
    list(&e, "l", &["3", "1", "2"]);
    let s = |args: &[&str]| {
        let mut full = vec!["SORT", "l", "BY", "nosort"];
        full.extend_from_slice(args);
        run(&e, &full)
    };
    assert_eq!(s(&[]), bulks(&["3", "1", "2"]));
    assert_eq!(s(&["DESC"]), bulks(&["2", "1", "3"]));
    assert_eq!(s(&["LIMIT", "1", "5"]), bulks(&["1", "2"]));
    assert_eq!(s(&["DESC", "LIMIT", "1", "1"]), bulks(&["1"]));
    assert_eq!(s(&["LIMIT", "3", "1"]), Reply::Array(vec![]));
    // A BY pattern without `*` turns sorting off for good.
    assert_eq!(s(&["BY", "w*"]), bulks(&["3", "1", "2"]));
    zset(&e, "z", &[(1.0, "c"), (2.0, "a"), (3.0, "b")]);
    let z = |args: &[&str]| {
        let mut full = vec!["SORT", "z"];
        full.extend_from_slice(args);
        run(&e, &full)
    };
    assert_eq!(z(&["ALPHA"]), bulks(&["a", "b", "c"]));
    assert_eq!(z(&[]), err(BAD_SCORE));
    assert_eq!(z(&["BY", "nosort"]), bulks(&["c", "a", "b"]));
    assert_eq!(z(&["BY", "nosort", "DESC"]), bulks(&["b", "a", "c"]));
    assert_eq!(z(&["BY", "nosort", "LIMIT", "1", "1"]), bulks(&["a"]));
    assert_eq!(
        z(&["BY", "nosort", "DESC", "LIMIT", "0", "2"]),
        bulks(&["b", "a"])
    );
    assert_eq!(z(&["BY", "nosort", "LIMIT", "2", "5"]), bulks(&["b"]));
    // An intset keeps its sorted order; DESC does not apply without sorting.
    set(&e, "si", &["3", "1", "2"]);
    assert_eq!(
        run(&e, &["SORT", "si", "BY", "nosort", "DESC"]),
        bulks(&["1", "2", "3"])
    );
    assert_eq!(
        run(&e, &["SORT", "si", "DESC", "LIMIT", "1", "1"]),
        bulks(&["2"])
    );
}

#[test]
fn by_and_get_patterns() {
    let e = engine();
    list(&e, "l", &["3", "1", "2"]);
    mset(
        &e,
        &[
            ("w_1", "30"),
            ("w_2", "10"),
            ("w_3", "20"),
            ("o_1", "one"),
            ("o_2", "two"),
        ],
    );
    hash(&e, "h_1", &[("f", "x1")]);
    hash(&e, "h_3", &[("f", "x3")]);
    assert_eq!(
        run(&e, &["SORT", "l", "BY", "w_*"]),
        bulks(&["2", "3", "1"])
    );
    assert_eq!(
        run(&e, &["SORT", "l", "BY", "w_*", "DESC"]),
        bulks(&["1", "3", "2"])
    );
    // Missing weights are 0, ties compare the elements.
    assert_eq!(
        run(&e, &["SORT", "l", "BY", "nokey_*"]),
        bulks(&["1", "2", "3"])
    );
    assert_eq!(
        run(
            &e,
            &["SORT", "l", "BY", "w_*", "GET", "o_*", "GET", "#", "GET", "h_*->f"]
        ),
        Reply::Array(vec![
            bulk("two"),
            bulk("2"),
            Reply::Null,
            Reply::Null,
            bulk("3"),
            bulk("x3"),
            bulk("one"),
            bulk("1"),
            bulk("x1"),
        ])
    );
    assert_eq!(
        run(&e, &["SORT", "l", "GET", "nostar"]),
        Reply::Array(vec![Reply::Null; 3])
    );
    // `->` with nothing after it is part of the key name.
    assert_eq!(
        run(&e, &["SORT", "l", "GET", "h_*->", "LIMIT", "0", "1"]),
        Reply::Array(vec![Reply::Null])
    );
    // A missing ALPHA weight sorts first; the wrong type reads as missing.
    assert_eq!(
        run(&e, &["SORT", "l", "BY", "h_*->f", "ALPHA"]),
        bulks(&["2", "1", "3"])
    );
    assert_eq!(run(&e, &["SORT", "l", "BY", "h_*->f"]), err(BAD_SCORE));
    // ALPHA ties (here: every weight missing) keep the value's order, either way.
    list(&e, "t", &["b", "a", "c"]);
    assert_eq!(
        run(&e, &["SORT", "t", "BY", "nokey_*", "ALPHA"]),
        bulks(&["b", "a", "c"])
    );
    assert_eq!(
        run(&e, &["SORT", "t", "BY", "nokey_*", "ALPHA", "DESC"]),
        bulks(&["b", "a", "c"])
    );
    mset(&e, &[("w_a", "x")]);
    assert_eq!(
        run(&e, &["SORT", "t", "BY", "w_*", "ALPHA", "DESC"]),
        bulks(&["a", "b", "c"])
    );

    assert_eq!(run(&e, &["SORT", "l", "BY", "o_*"]), err(BAD_SCORE));
    assert_eq!(
        run(&e, &["SORT", "l", "BY", "h_*", "GET", "w_*->f"]),
        Reply::Array(vec![Reply::Null; 3])
    );
    assert_eq!(
        run(&e, &["SORT_RO", "l", "BY", "nosort", "DESC", "GET", "#"]),
        bulks(&["2", "1", "3"])
    );
}

#[test]
fn store() {
    let e = engine();
    list(&e, "l", &["3", "1", "2"]);
    mset(&e, &[("dst", "x")]);
    run(&e, &["EXPIRE", "dst", "100"]);
    assert_eq!(run(&e, &["SORT", "l", "STORE", "dst"]), int(3));
    assert_eq!(run(&e, &["TYPE", "dst"]), Reply::status("list"));
    assert_eq!(run(&e, &["TTL", "dst"]), int(-1));
    assert_eq!(contents(&e, "dst"), bulks(&["1", "2", "3"]));
    // Missing GET values are stored as empty strings; the count is of stored items.
    hash(&e, "h_1", &[("f", "x1")]);
    assert_eq!(
        run(
            &e,
            &["SORT", "l", "GET", "h_*->f", "GET", "#", "STORE", "d2"]
        ),
        int(6)
    );
    assert_eq!(contents(&e, "d2"), bulks(&["x1", "1", "", "2", "", "3"]));
    // An empty result deletes the destination; the last STORE wins.
    assert_eq!(run(&e, &["SORT", "nokey", "STORE", "dst"]), int(0));
    assert_eq!(run(&e, &["EXISTS", "dst"]), int(0));
    assert_eq!(run(&e, &["SORT", "l", "STORE", "a", "STORE", "b"]), int(3));
    assert_eq!(run(&e, &["EXISTS", "a", "b"]), int(1));
    // Sorting a key into itself.
    assert_eq!(run(&e, &["SORT", "l", "DESC", "STORE", "l"]), int(3));
    assert_eq!(contents(&e, "l"), bulks(&["3", "2", "1"]));
    // An unsorted set is sorted lexicographically when stored.
    set(&e, "s", &["b", "a", "c"]);
    assert_eq!(
        run(&e, &["SORT", "s", "BY", "nosort", "STORE", "d"]),
        int(3)
    );
    assert_eq!(contents(&e, "d"), bulks(&["a", "b", "c"]));
    assert_eq!(
        run(&e, &["SORT", "s", "BY", "nosort", "DESC", "STORE", "d"]),
        int(3)
    );
    assert_eq!(contents(&e, "d"), bulks(&["c", "b", "a"]));
}

#[test]
fn binary_elements() {
    let e = engine();
    let l: crate::value::ListValue = [b"\xff".to_vec(), b"\x00".to_vec(), b"a".to_vec()]
        .into_iter()
        .collect();
    put(&e, 0, "bin", crate::value::Value::List(l));
    assert_eq!(
        run(&e, &["SORT", "bin", "ALPHA"]),
        Reply::Array(vec![Reply::bulk(b"\x00"), bulk("a"), Reply::bulk(b"\xff")])
    );
}

#[test]
fn strtod_rules() {
    for (text, want) in [
        (&b""[..], Some(0.0)),
        (b" 5", Some(5.0)),
        (b"\x0b5", Some(5.0)),
        (b"0x10", Some(16.0)),
        (b"0x.8", Some(0.5)),
        (b"0x1p3", Some(8.0)),
        (b"-0X1P-1", Some(-0.5)),
        (b".5", Some(0.5)),
        (b"5.", Some(5.0)),
        (b"5.e3", Some(5000.0)),
        (b"1E+2", Some(100.0)),
        (b"+3", Some(3.0)),
        (b"  -inf", Some(f64::NEG_INFINITY)),
        (b"-iNfInItY", Some(f64::NEG_INFINITY)),
        (b"0e-999999", Some(0.0)),
        (b"5\x00abc", Some(5.0)),
        (b"2.2250738585072014e-308", Some(2.2250738585072014e-308)),
    ] {
        assert_eq!(
            strtod_exact(text),
            want,
            "{:?}",
            String::from_utf8_lossy(text)
        );
    }
    for bad in [
        &b"5 "[..],
        b" ",
        b"-",
        b"0x",
        b"1e",
        b"1e+",
        b"1e400",
        b"1e-400",
        b"1e-310",
        b"nan",
        b"nan(123)",
        b"1.2.3",
        b"abc",
    ] {
        assert_eq!(
            strtod_exact(bad),
            None,
            "{:?}",
            String::from_utf8_lossy(bad)
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Numeric SORT with LIMIT matches a model: order by (value, element bytes), then
    /// Redis's LIMIT arithmetic.
    #[test]
    fn numeric_sort_matches_model(
        values in proptest::collection::vec(-50i64..50, 0..40),
        offset in -3i64..45,
        count in -2i64..45,
        desc in any::<bool>(),
    ) {
        let e = engine();
        let items: Vec<String> = values.iter().map(i64::to_string).collect();
        let refs: Vec<&str> = items.iter().map(String::as_str).collect();
        list(&e, "l", &refs);
        let mut model = items.clone();
        model.sort_by(|a, b| {
            let (x, y) = (a.parse::<i64>().unwrap_or(0), b.parse::<i64>().unwrap_or(0));
            x.cmp(&y).then_with(|| a.as_bytes().cmp(b.as_bytes()))
        });
        if desc {
            model.reverse();
        }
        let start = offset.max(0) as usize;
        let taken: Vec<&str> = if count < 0 {
            model.iter().skip(start).map(String::as_str).collect()
        } else {
            model.iter().skip(start).take(count as usize).map(String::as_str).collect()
        };
        let (o, c) = (offset.to_string(), count.to_string());
        let mut args = vec!["SORT", "l", "LIMIT", &o, &c];
        if desc {
            args.push("DESC");
        }
        if items.is_empty() {
            prop_assert_eq!(run(&e, &args), Reply::Array(vec![]));
        } else {
            prop_assert_eq!(run(&e, &args), bulks(&taken));
        }
    }
}
