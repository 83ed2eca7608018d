//! `FT.HYBRID` argument parsing: defaults, every clause, and RediSearch's error texts.

use super::*;

fn argv(words: &[&str]) -> Vec<Vec<u8>> {
    words.iter().map(|w| w.as_bytes().to_vec()).collect()
}

fn parse_err(words: &[&str]) -> String {
    match parse(&argv(words)) {
        Ok(_) => panic!("{words:?} parsed"),
        Err(e) => e.wire_text().into_owned(),
    }
}

#[test]
fn defaults_are_redisearchs() {
    let r = parse(&argv(&[
        "FT.HYBRID",
        "idx",
        "SEARCH",
        "hello",
        "VSIM",
        "@v",
        "$b",
    ]))
    .expect("parses");
    assert_eq!(r.scorer, TextScorer::Plain(Scorer::Bm25Std));
    assert_eq!(
        r.fusion,
        Fusion::Rrf {
            constant: 60.0,
            window: 20
        }
    );
    assert_eq!(
        r.vector.method,
        VectorMethod::Knn {
            k: 10,
            ef_runtime: None
        }
    );
    assert_eq!(r.vector.filter, None);
    assert_eq!(r.arrange, Arrange::default());
}

#[test]
fn both_forms_and_every_clause_parse() {
    let r = parse(&argv(&[
        "FT.HYBRID",
        "idx",
        "2",
        "SEARCH",
        "@t:x",
        "SCORER",
        "BM25STD.TANH",
        "YIELD_SCORE_AS",
        "ts",
        "VSIM",
        "@v",
        "$b",
        "RANGE",
        "4",
        "RADIUS",
        "0.5",
        "EPSILON",
        "0.1",
        "FILTER",
        "5",
        "@g:{a}",
        "POLICY",
        "ADHOC",
        "BATCH_SIZE",
        "8",
        "YIELD_SCORE_AS",
        "vs",
        "COMBINE",
        "LINEAR",
        "6",
        "ALPHA",
        "0.6",
        "BETA",
        "0.4",
        "YIELD_SCORE_AS",
        "f",
        "LOAD",
        "3",
        "@a",
        "AS",
        "b",
        "APPLY",
        "@f*2",
        "AS",
        "g",
        "SORTBY",
        "2",
        "@g",
        "DESC",
        "LIMIT",
        "0",
        "5",
        "PARAMS",
        "2",
        "b",
        "xxxx",
        "TIMEOUT",
        "100",
    ]))
    .expect("parses");
    assert_eq!(r.scorer, TextScorer::Bm25StdTanh);
    assert_eq!(r.text_alias.as_deref(), Some(&b"ts"[..]));
    assert_eq!(
        r.vector.method,
        VectorMethod::Range {
            radius: 0.5,
            epsilon: Some((b"0.1".to_vec(), 0.1))
        }
    );
    assert_eq!(r.vector.filter.as_deref(), Some(&b"@g:{a}"[..]));
    assert_eq!(r.vector.policy, Some(&b"ADHOC_BF"[..]));
    assert_eq!(r.vector.batch_size.as_deref(), Some(&b"8"[..]));
    assert_eq!(r.vector.score_alias.as_deref(), Some(&b"vs"[..]));
    assert_eq!(
        r.fusion,
        Fusion::Linear {
            alpha: 0.6,
            beta: 0.4,
            window: 20
        }
    );
    assert_eq!(r.fused_alias.as_deref(), Some(&b"f"[..]));
    assert_eq!(r.steps.len(), 2);
    assert_eq!(r.arrange.sort, Some(vec![(b"g".to_vec(), false)]));
    assert_eq!(r.arrange.limit, Some((0, 5)));
    assert_eq!(r.arrange.position, Some(2));
    assert_eq!(r.params.get(b"b"), Some(&b"xxxx"[..]));
    assert_eq!(r.timeout_ms, Some(100));
}

#[test]
fn errors_are_redisearchs() {
    let base = ["FT.HYBRID", "idx"];
    let with = |rest: &[&str]| parse_err(&[&base[..], rest].concat());
    assert_eq!(
        with(&["3", "SEARCH", "x"]),
        "FT.HYBRID currently supports only two subqueries"
    );
    assert_eq!(
        with(&["x"]),
        "Invalid subqueries count: expected an unsigned integer"
    );
    assert_eq!(with(&["SEARCH", "x"]), "VSIM argument is required");
    assert_eq!(with(&["SEARCH", "x", "DIALECT", "2"]), DIALECT_REFUSED);
    assert_eq!(
        with(&["SEARCH", "x", "FOO", "VSIM"]),
        "Unknown argument `FOO` in SEARCH"
    );
    assert_eq!(
        with(&["SEARCH", "x", "VSIM", "v", "$b"]),
        "Missing @ prefix for vector field name"
    );
    assert_eq!(
        with(&["SEARCH", "x", "VSIM", "@v", "b"]),
        "Invalid vector argument, expected a parameter name starting with $"
    );
    assert_eq!(
        with(&["SEARCH", "x", "VSIM", "@v", "$b", "KNN", "3", "K"]),
        "Invalid argument count: 3 (must be a positive even number for key/value pairs)"
    );
    assert_eq!(
        with(&[
            "SEARCH",
            "x",
            "VSIM",
            "@v",
            "$b",
            "KNN",
            "2",
            "EF_RUNTIME",
            "5"
        ]),
        "Missing required argument K"
    );
    assert_eq!(
        with(&["SEARCH", "x", "VSIM", "@v", "$b", "KNN", "2", "K", "0"]),
        "Invalid K value"
    );
    assert_eq!(
        with(&[
            "SEARCH",
            "x",
            "VSIM",
            "@v",
            "$b",
            "KNN",
            "2",
            "YIELD_DISTANCE_AS",
            "d"
        ]),
        "Unknown argument `YIELD_DISTANCE_AS` in KNN"
    );
    assert_eq!(
        with(&["SEARCH", "x", "VSIM", "@v", "$b", "RANGE", "2", "EPSILON", "0.1"]),
        "Missing required argument RADIUS"
    );
    assert_eq!(
        with(&["SEARCH", "x", "VSIM", "@v", "$b", "SORTBY", "1", "@a", "NOSORT"]),
        "NOSORT is not allowed with SORTBY"
    );
    assert_eq!(
        with(&["SEARCH", "x", "VSIM", "@v", "$b", "LIMIT", "2", "0"]),
        "The `offset` of the LIMIT must be 0 when `num` is 0"
    );
    assert_eq!(
        with(&["SEARCH", "x", "VSIM", "@v", "$b", "COMBINE", "LINEAR", "2", "ALPHA", "1"]),
        "Missing value for BETA"
    );
    assert_eq!(
        with(&["SEARCH", "x", "VSIM", "@v", "$b", "COMBINE", "MAX", "0"]),
        "Unknown COMBINE method `MAX`"
    );
    assert_eq!(
        with(&["SEARCH", "x", "VSIM", "@v", "$b", "SORTBY", "1", "a"]),
        "Missing prefix: name requires '@' prefix, JSON path require '$' prefix, got: a in SORTBY"
    );
    assert_eq!(
        with(&["SEARCH", "x", "VSIM", "@v", "$b", "LOAD", "0"]),
        "Bad arguments for LOAD: Expected number of fields or `*`"
    );
    assert_eq!(
        with(&["SEARCH", "x", "VSIM", "@v", "$b", "EXPLAINSCORE"]),
        "EXPLAINSCORE is not yet supported by FT.HYBRID"
    );
    assert_eq!(
        with(&[
            "SEARCH", "x", "VSIM", "@v", "$b", "PARAMS", "2", "a", "b", "PARAMS", "2", "c", "d"
        ]),
        "Multiple PARAMS are not allowed. Parameters can be defined only once"
    );
    assert_eq!(
        with(&["SEARCH", "x", "VSIM", "@v", "$b", "BOGUS"]),
        "BOGUS: Unknown argument"
    );
}

#[test]
fn limit_after_a_group_arranges_after_it() {
    let r = parse(&argv(&[
        "FT.HYBRID",
        "idx",
        "SEARCH",
        "x",
        "VSIM",
        "@v",
        "$b",
        "LIMIT",
        "0",
        "3",
        "GROUPBY",
        "1",
        "@t",
        "REDUCE",
        "COUNT",
        "0",
        "AS",
        "n",
        "SORTBY",
        "2",
        "@n",
        "DESC",
    ]))
    .expect("parses");
    assert_eq!(r.arrange.position, Some(1));
    assert_eq!(r.arrange.limit, Some((0, 3)));
}
