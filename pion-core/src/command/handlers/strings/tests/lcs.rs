//! `LCS` replies and errors.

use super::{bulk, engine, err, int, run, seeded, NOT_INT, SYNTAX};
use crate::Reply;

/// One LCS `IDX` match as Redis replies it.
fn lcs_match(a: (i64, i64), b: (i64, i64), len: Option<i64>) -> Reply {
    let mut v = vec![
        Reply::Array(vec![int(a.0), int(a.1)]),
        Reply::Array(vec![int(b.0), int(b.1)]),
    ];
    v.extend(len.map(int));
    Reply::Array(v)
}

fn lcs_idx(matches: Vec<Reply>, len: i64) -> Reply {
    Reply::Map(vec![
        (bulk("matches"), Reply::Array(matches)),
        (bulk("len"), int(len)),
    ])
}

#[test]
fn lcs() {
    let e = seeded();
    run(&e, &["MSET", "key1", "ohmytext", "key2", "mynewtext"]);
    assert_eq!(run(&e, &["LCS", "key1", "key2"]), bulk("mytext"));
    assert_eq!(run(&e, &["LCS", "key1", "key2", "LEN"]), int(6));
    let text = |len| lcs_match((4, 7), (5, 8), len);
    let my = |len| lcs_match((2, 3), (0, 1), len);
    assert_eq!(
        run(&e, &["LCS", "key1", "key2", "IDX"]),
        lcs_idx(vec![text(None), my(None)], 6)
    );
    assert_eq!(
        run(&e, &["LCS", "key1", "key2", "idx", "minmatchlen", "4"]),
        lcs_idx(vec![text(None)], 6)
    );
    assert_eq!(
        run(
            &e,
            &[
                "LCS",
                "key1",
                "key2",
                "idx",
                "minmatchlen",
                "4",
                "withmatchlen"
            ]
        ),
        lcs_idx(vec![text(Some(4))], 6)
    );
    assert_eq!(
        run(&e, &["LCS", "key1", "key2", "idx", "withmatchlen"]),
        lcs_idx(vec![text(Some(4)), my(Some(2))], 6)
    );
    assert_eq!(
        run(&e, &["LCS", "key1", "key2", "minmatchlen", "-5", "idx"]),
        lcs_idx(vec![text(None), my(None)], 6)
    );
    assert_eq!(
        run(
            &e,
            &[
                "LCS",
                "key1",
                "key2",
                "IDX",
                "WITHMATCHLEN",
                "MINMATCHLEN",
                "2",
                "MINMATCHLEN",
                "5"
            ]
        ),
        lcs_idx(vec![], 6)
    );
    assert_eq!(
        run(
            &e,
            &[
                "LCS",
                "key1",
                "key1",
                "withmatchlen",
                "idx",
                "minmatchlen",
                "9223372036854775807"
            ]
        ),
        lcs_idx(vec![], 8)
    );
    run(&e, &["SET", "a", "abc"]);
    assert_eq!(
        run(&e, &["LCS", "a", "a", "idx", "withmatchlen"]),
        lcs_idx(vec![lcs_match((0, 2), (0, 2), Some(3))], 3)
    );
    assert_eq!(
        run(&e, &["LCS", "key1", "key2", "withmatchlen"]),
        bulk("mytext")
    );
    assert_eq!(
        run(
            &e,
            &["LCS", "key1", "key2", "len", "len", "minmatchlen", "3"]
        ),
        int(6)
    );
    assert_eq!(run(&e, &["LCS", "key1", "nokey"]), bulk(""));
    assert_eq!(run(&e, &["LCS", "nokey", "nokey2", "len"]), int(0));
    assert_eq!(
        run(&e, &["LCS", "nokey", "nokey2", "idx"]),
        lcs_idx(vec![], 0)
    );
    const NOT_STRINGS: &str = "ERR The specified keys must contain string values";
    assert_eq!(run(&e, &["LCS", "key1", "l"]), err(NOT_STRINGS));
    assert_eq!(run(&e, &["LCS", "l", "key1", "foo"]), err(NOT_STRINGS));
    const BOTH: &str = "ERR If you want both the length and indexes, please just use IDX.";
    assert_eq!(run(&e, &["LCS", "key1", "key2", "len", "idx"]), err(BOTH));
    assert_eq!(run(&e, &["LCS", "key1", "key2", "foo"]), err(SYNTAX));
    assert_eq!(
        run(&e, &["LCS", "key1", "key2", "minmatchlen"]),
        err(SYNTAX)
    );
    assert_eq!(
        run(&e, &["LCS", "key1", "key2", "minmatchlen", "abc"]),
        err(NOT_INT)
    );
    assert_eq!(
        run(
            &e,
            &["LCS", "key1", "key2", "minmatchlen", "9223372036854775808"]
        ),
        err(NOT_INT)
    );
    assert_eq!(
        run(&e, &["LCS", "key1"]),
        err("ERR wrong number of arguments for 'lcs' command")
    );
}

#[test]
fn lcs_refuses_tables_over_proto_max_bulk_len() {
    let e = engine();
    e.config()
        .set_many(&[("proto-max-bulk-len", "1mb")])
        .expect("valid setting");
    // (511+1) * (511+1) * 4 bytes is exactly 1 MiB and allowed; (511+1) * (512+1) * 4
    // is over.
    run(&e, &["SET", "a", &"a".repeat(511)]);
    run(&e, &["SET", "b", &"b".repeat(511)]);
    run(&e, &["SET", "c", &"c".repeat(512)]);
    assert_eq!(run(&e, &["LCS", "a", "b", "len"]), int(0));
    assert_eq!(
        run(&e, &["LCS", "a", "c", "len"]),
        err("ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len")
    );
    assert_eq!(run(&e, &["LCS", "a", "nokey"]), bulk(""));
}
