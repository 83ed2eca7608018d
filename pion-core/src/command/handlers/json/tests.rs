//! JSON commands against the engine: reply shapes of JSONPath and legacy paths,
//! RedisJSON's errors, and the type's place in the keyspace.

use crate::engine::{Engine, EngineOptions};
use crate::reply::Reply;
use crate::test_support::{bulk, err, int};

fn engine() -> Engine {
    Engine::in_memory(EngineOptions::default())
}

fn run(e: &Engine, args: &[&str]) -> Reply {
    e.execute(0, args)
}

#[test]
fn set_get_with_both_path_languages() {
    let e = engine();
    assert_eq!(
        run(&e, &["JSON.SET", "d", "$", r#"{"a":1,"b":[1,2.0]}"#]),
        Reply::ok()
    );
    assert_eq!(run(&e, &["JSON.GET", "d"]), bulk(r#"{"a":1,"b":[1,2.0]}"#));
    assert_eq!(run(&e, &["JSON.GET", "d", "$.a"]), bulk("[1]"));
    assert_eq!(run(&e, &["JSON.GET", "d", "a"]), bulk("1"));
    assert_eq!(run(&e, &["JSON.GET", "d", "$.zz"]), bulk("[]"));
    assert_eq!(
        run(&e, &["JSON.GET", "d", ".zz"]),
        err("ERR Path '$.zz' does not exist")
    );
    assert_eq!(run(&e, &["JSON.SET", "d", "$.c", "true"]), Reply::ok());
    assert_eq!(run(&e, &["JSON.SET", "d", "$.q.r", "1"]), Reply::Null);
    assert_eq!(
        run(&e, &["JSON.SET", "n", "$.a", "1"]),
        err("ERR new objects must be created at the root")
    );
    assert_eq!(run(&e, &["TYPE", "d"]), Reply::status("ReJSON-RL"));
    assert_eq!(run(&e, &["JSON.DEL", "d", "$..a"]), int(1));
    // As in RedisJSON, the last member takes the place of a deleted one.
    assert_eq!(
        run(&e, &["JSON.GET", "d"]),
        bulk(r#"{"c":true,"b":[1,2.0]}"#)
    );
}

#[test]
fn numbers_arrays_and_errors() {
    let e = engine();
    run(
        &e,
        &["JSON.SET", "d", "$", r#"{"n":4,"s":"ab","a":[1,2,3]}"#],
    );
    assert_eq!(run(&e, &["JSON.NUMMULTBY", "d", ".n", "2.5"]), bulk("10.0"));
    assert_eq!(
        run(&e, &["JSON.NUMINCRBY", "d", "$.n", "1"]),
        bulk("[11.0]")
    );
    assert_eq!(run(&e, &["JSON.STRAPPEND", "d", ".s", "\"cd\""]), int(4));
    assert_eq!(run(&e, &["JSON.ARRPOP", "d", ".a"]), bulk("3"));
    assert_eq!(run(&e, &["JSON.ARRINSERT", "d", ".a", "0", "0"]), int(3));
    assert_eq!(run(&e, &["JSON.ARRINDEX", "d", ".a", "2"]), int(2));
    assert_eq!(
        run(&e, &["JSON.ARRINSERT", "d", ".a", "9", "0"]),
        err("ERR index out of bounds")
    );
    assert_eq!(
        run(&e, &["JSON.SET", "str", "$", "[1"]),
        err("EOF while parsing a list at line 1 column 2")
    );
    run(&e, &["SET", "plain", "x"]);
    assert_eq!(
        run(&e, &["JSON.GET", "plain"]),
        err("Existing key has wrong Redis type")
    );
}

#[test]
fn merge_follows_rfc_7396() {
    let e = engine();
    run(&e, &["JSON.SET", "d", "$", r#"{"a":{"b":1,"c":2},"d":3}"#]);
    assert_eq!(
        run(
            &e,
            &[
                "JSON.MERGE",
                "d",
                "$",
                r#"{"a":{"b":null,"e":[1]},"d":null}"#
            ]
        ),
        Reply::ok()
    );
    assert_eq!(
        run(&e, &["JSON.GET", "d"]),
        bulk(r#"{"a":{"c":2,"e":[1]}}"#)
    );
}

#[test]
fn documents_nest_only_so_deep() {
    let e = engine();
    let level = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
    let at = |n: usize| format!("${}", "[0]".repeat(n));
    assert_eq!(run(&e, &["JSON.SET", "d", "$", &level(120)]), Reply::ok());
    // Deeper than one parse allows, through edits: as RedisJSON, accepted.
    assert_eq!(
        run(&e, &["JSON.SET", "d", &at(119), &level(120)]),
        Reply::ok()
    );
    // The innermost array is now 238 levels down.
    assert_eq!(
        run(&e, &["JSON.ARRAPPEND", "d", &at(238), &level(120)]),
        Reply::Array(vec![int(1)])
    );
    assert_eq!(
        run(
            &e,
            &["JSON.ARRAPPEND", "d", &at(238), &level(120), &level(120)]
        ),
        Reply::Array(vec![int(3)])
    );
    assert_eq!(
        run(&e, &["JSON.SET", "d", &at(239), &level(120)]),
        Reply::ok()
    );
    assert_eq!(
        run(&e, &["JSON.SET", "d", &at(358), &level(120)]),
        Reply::ok()
    );
    // Now 477 levels: past Pion's limit of 512 the write is refused.
    assert_eq!(
        run(&e, &["JSON.SET", "d", &at(477), &level(120)]),
        err("ERR recursion limit exceeded")
    );
    assert_eq!(
        run(&e, &["JSON.ARRAPPEND", "d", &at(477), &level(120)]),
        err("ERR recursion limit exceeded")
    );
    assert_eq!(
        run(&e, &["JSON.ARRAPPEND", "d", &at(477), "1"]),
        Reply::Array(vec![int(1)])
    );
}

#[test]
fn failed_multi_match_writes_change_nothing() {
    let e = engine();
    run(
        &e,
        &["JSON.SET", "d", "$", r#"{"a":[1,2,3],"b":{"a":[1]}}"#],
    );
    assert_eq!(
        run(&e, &["JSON.ARRINSERT", "d", "$..a", "2", "0"]),
        err("ERR index out of bounds")
    );
    assert_eq!(
        run(&e, &["JSON.GET", "d"]),
        bulk(r#"{"a":[1,2,3],"b":{"a":[1]}}"#)
    );
    assert_eq!(
        run(
            &e,
            &[
                "JSON.MSET",
                "d",
                "$.a[0]",
                "9",
                "e",
                "$",
                "1",
                "d",
                "$.a[7]",
                "1"
            ]
        ),
        err("ERR array index out of range")
    );
    assert_eq!(run(&e, &["EXISTS", "e"]), int(0));
    assert_eq!(run(&e, &["JSON.GET", "d", "$.a[0]"]), bulk("[1]"));
    // A key made by an earlier triple does not count as existing (RedisJSON).
    let mset = |args: &[&str]| {
        let mut argv = vec!["JSON.MSET"];
        argv.extend_from_slice(args);
        run(&e, &argv)
    };
    assert_eq!(
        mset(&["d", "$.a[0]", "9", "e", "$", "{}", "e", "$.x", "2"]),
        err("ERR new objects must be created at the root")
    );
    assert_eq!(
        mset(&["d", "$.a[0]", "9", "e", "$", "{}", "d", "$.b.a", "2"]),
        Reply::ok()
    );
    assert_eq!(run(&e, &["JSON.GET", "e"]), bulk("{}"));
    assert_eq!(
        run(&e, &["JSON.GET", "d"]),
        bulk(r#"{"a":[9,2,3],"b":{"a":2}}"#)
    );
}
