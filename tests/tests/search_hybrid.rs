//! `FT.HYBRID` (Redis 8.4) against a real `pion-server`, with golden replies: the
//! search oracle (Redis 8.2) has no `FT.HYBRID`, so the expected replies here are
//! worked out by hand from the documented fusion (RRF: Σ 1 / (60 + rank); LINEAR:
//! alpha × text + beta × vector), RediSearch's distance normalisation (L2:
//! 1 / (1 + d)) and reply shape (RESP2 flat pairs, RESP3 maps). Text scores are
//! checked against `FT.SEARCH … WITHSCORES`, whose BM25STD the oracle checks.
//!
//! The index: four documents on a unit square, queried from (0.75, 0.25):
//!
//! | key   | description         | vector | category | squared L2 | 1 / (1 + d) |
//! |-------|---------------------|--------|----------|-----------:|------------:|
//! | doc:1 | red shoes           | (0, 0) | shoes    | 0.625      | 0.615384615385 |
//! | doc:2 | red running shoes   | (1, 0) | shoes    | 0.125      | 0.888888888889 |
//! | doc:3 | running gear        | (0, 1) | gear     | 1.125      | 0.470588235294 |
//! | doc:4 | blue shoes          | (1, 1) | shoes    | 0.625      | 0.615384615385 |
//!
//! `shoes` ranks doc:1 = doc:4 > doc:2 by BM25STD (ties in document order); the
//! vector ranks doc:2, doc:1, doc:4, doc:3 (ties in document order).

use pion_tests::{temp_dir, Client, PionProcess, RespValue};

fn vector(x: f32, y: f32) -> Vec<u8> {
    [x.to_le_bytes(), y.to_le_bytes()].concat()
}

fn setup(c: &mut Client) {
    let ok = c.cmd(&[
        "FT.CREATE",
        "idx",
        "SCHEMA",
        "description",
        "TEXT",
        "embedding",
        "VECTOR",
        "FLAT",
        "6",
        "TYPE",
        "FLOAT32",
        "DIM",
        "2",
        "DISTANCE_METRIC",
        "L2",
        "category",
        "TAG",
    ]);
    assert_eq!(ok.render(), "+OK");
    let docs = [
        ("doc:1", "red shoes", (0.0, 0.0), "shoes"),
        ("doc:2", "red running shoes", (1.0, 0.0), "shoes"),
        ("doc:3", "running gear", (0.0, 1.0), "gear"),
        ("doc:4", "blue shoes", (1.0, 1.0), "shoes"),
    ];
    for (key, text, (x, y), cat) in docs {
        let v = vector(x, y);
        let args: Vec<&[u8]> = vec![
            b"HSET",
            key.as_bytes(),
            b"description",
            text.as_bytes(),
            b"embedding",
            &v,
            b"category",
            cat.as_bytes(),
        ];
        assert_eq!(c.cmd(&args).render(), ":3");
    }
}

/// The reply with `execution_time`'s value (a duration) replaced by `T`.
fn without_time(v: RespValue) -> String {
    let RespValue::Agg(t, Some(mut items)) = v else {
        return v.render();
    };
    for i in 0..items.len().saturating_sub(1) {
        if let RespValue::Line(_, l) | RespValue::Bulk(_, Some(l)) = &items[i] {
            if l == b"execution_time" {
                assert!(
                    matches!(
                        &items[i + 1],
                        RespValue::Line(b',', _) | RespValue::Bulk(_, Some(_))
                    ),
                    "execution_time: {}",
                    items[i + 1].render()
                );
                items[i + 1] = RespValue::Line(b'+', b"T".to_vec());
            }
        }
    }
    RespValue::Agg(t, Some(items)).render()
}

/// `FT.HYBRID idx <args> PARAMS 2 q <(0.75, 0.25)>`, rendered.
fn hybrid(c: &mut Client, args: &[&str]) -> String {
    let q = vector(0.75, 0.25);
    let mut argv: Vec<&[u8]> = vec![b"FT.HYBRID", b"idx"];
    argv.extend(args.iter().map(|a| a.as_bytes()));
    argv.extend([b"PARAMS".as_slice(), b"2", b"q", &q]);
    without_time(c.cmd(&argv))
}

fn start() -> (PionProcess, Client, pion_tests::TempDir) {
    let dir = temp_dir("search-hybrid");
    let server = PionProcess::start(dir.path(), &["--wal", "off"]);
    let mut c = server.client();
    setup(&mut c);
    (server, c, dir)
}

/// The default fusion (RRF, constant 60, window 20) in RESP2 and RESP3:
/// doc:1 1/61 + 1/62, doc:2 1/63 + 1/61, doc:4 1/62 + 1/63, doc:3 1/64.
#[test]
fn rrf_default_reply_in_both_protocols() {
    let (_server, mut c, _dir) = start();
    let query = ["SEARCH", "shoes", "VSIM", "@embedding", "$q"];
    assert_eq!(
        hybrid(&mut c, &query),
        r#"*[+total_results, :4, +results, *[*["__key", "doc:1", "__score", "0.032522474881"], *["__key", "doc:2", "__score", "0.032266458496"], *["__key", "doc:4", "__score", "0.0320020481311"], *["__key", "doc:3", "__score", "0.015625"]], +warnings, *[], +execution_time, +T]"#
    );
    // The subquery count is optional; `2` is the only one accepted.
    let counted = ["2", "SEARCH", "shoes", "VSIM", "@embedding", "$q"];
    assert_eq!(hybrid(&mut c, &counted), hybrid(&mut c, &query));
    c.cmd(&["HELLO", "3"]);
    assert_eq!(
        hybrid(&mut c, &query),
        r#"%[+total_results, :4, +results, *[%["__key", "doc:1", "__score", "0.032522474881"], %["__key", "doc:2", "__score", "0.032266458496"], %["__key", "doc:4", "__score", "0.0320020481311"], %["__key", "doc:3", "__score", "0.015625"]], +warnings, *[], +execution_time, +T]"#
    );
}

/// LINEAR with DOCSCORE (every text match scores 1): 0.4 × 1 + 0.6 × vector score,
/// with every score yielded; the vector-only doc:3 has no text score.
#[test]
fn linear_fusion_yields_each_score() {
    let (_server, mut c, _dir) = start();
    let got = hybrid(
        &mut c,
        &[
            "SEARCH",
            "shoes",
            "SCORER",
            "DOCSCORE",
            "YIELD_SCORE_AS",
            "text",
            "VSIM",
            "@embedding",
            "$q",
            "YIELD_SCORE_AS",
            "vec",
            "COMBINE",
            "LINEAR",
            "6",
            "ALPHA",
            "0.4",
            "BETA",
            "0.6",
            "YIELD_SCORE_AS",
            "fused",
            "LOAD",
            "2",
            "@__key",
            "@category",
        ],
    );
    // doc:2 0.4 + 0.6 × 8/9; doc:1 and doc:4 0.4 + 0.6 × 8/13; doc:3 0.6 × 8/17.
    assert_eq!(
        got,
        r#"*[+total_results, :4, +results, *[*["__key", "doc:2", "category", "shoes", "text", "1", "vec", "0.888888888889", "fused", "0.933333333333"], *["__key", "doc:1", "category", "shoes", "text", "1", "vec", "0.615384615385", "fused", "0.769230769231"], *["__key", "doc:4", "category", "shoes", "text", "1", "vec", "0.615384615385", "fused", "0.769230769231"], *["__key", "doc:3", "category", "gear", "vec", "0.470588235294", "fused", "0.282352941176"]], +warnings, *[], +execution_time, +T]"#
    );
}

/// The text score a hybrid query yields is `FT.SEARCH`'s for the same scorer
/// (BM25STD by default), and BM25STD.TANH / BM25STD.NORM are tanh(s / 4) and s / max.
#[test]
fn text_scores_are_ft_search_scores() {
    let (_server, mut c, _dir) = start();
    let search = c.cmd(&[
        "FT.SEARCH",
        "idx",
        "shoes",
        "SCORER",
        "BM25STD",
        "WITHSCORES",
        "NOCONTENT",
        "DIALECT",
        "2",
    ]);
    let RespValue::Agg(_, Some(items)) = search else {
        panic!("FT.SEARCH");
    };
    let mut expected = std::collections::HashMap::new();
    for pair in items[1..].chunks(2) {
        let (RespValue::Bulk(_, Some(k)), RespValue::Bulk(_, Some(s))) = (&pair[0], &pair[1])
        else {
            panic!("pair");
        };
        let s: f64 = String::from_utf8_lossy(s).parse().expect("a score");
        expected.insert(String::from_utf8_lossy(k).into_owned(), s);
    }
    assert_eq!(expected.len(), 3);
    let max = expected.values().copied().fold(0.0, f64::max);
    for (scorer, f) in [
        ("BM25STD", Box::new(|s: f64| s) as Box<dyn Fn(f64) -> f64>),
        ("BM25STD.TANH", Box::new(|s: f64| (s / 4.0).tanh())),
        ("BM25STD.NORM", Box::new(move |s: f64| s / max)),
    ] {
        let q = vector(0.75, 0.25);
        let argv: Vec<&[u8]> = vec![
            b"FT.HYBRID",
            b"idx",
            b"SEARCH",
            b"shoes",
            b"SCORER",
            scorer.as_bytes(),
            b"YIELD_SCORE_AS",
            b"ts",
            b"VSIM",
            b"@embedding",
            b"$q",
            b"LOAD",
            b"1",
            b"@__key",
            b"PARAMS",
            b"2",
            b"q",
            &q,
        ];
        let RespValue::Agg(_, Some(top)) = c.cmd(&argv) else {
            panic!("FT.HYBRID");
        };
        let RespValue::Agg(_, Some(rows)) = &top[3] else {
            panic!("results");
        };
        let mut seen = 0;
        for row in rows {
            let RespValue::Agg(_, Some(kv)) = row else {
                panic!("row");
            };
            let text: Vec<String> = kv
                .iter()
                .map(|v| match v {
                    RespValue::Bulk(_, Some(b)) => String::from_utf8_lossy(b).into_owned(),
                    other => other.render(),
                })
                .collect();
            if let Some(at) = text.iter().position(|k| k == "ts") {
                let got: f64 = text[at + 1].parse().expect("a score");
                let want = f(expected[&text[1]]);
                assert!(
                    (got - want).abs() < 1e-9,
                    "{scorer} {}: {got} vs {want}",
                    text[1]
                );
                seen += 1;
            }
        }
        assert_eq!(seen, 3, "{scorer}");
    }
}

/// RANGE keeps the vectors within the radius; with a FILTER its ranks follow document
/// order (RediSearch then intersects in id order), without one the distance.
#[test]
fn range_ranks_by_distance_or_by_document_with_a_filter() {
    let (_server, mut c, _dir) = start();
    // Within 0.7: doc:2, doc:1, doc:4 (by distance). Text ranks doc:1, doc:4, doc:2:
    // doc:1 1/61 + 1/62, doc:2 1/63 + 1/61, doc:4 1/62 + 1/63.
    assert_eq!(
        hybrid(
            &mut c,
            &[
                "SEARCH",
                "shoes",
                "VSIM",
                "@embedding",
                "$q",
                "RANGE",
                "2",
                "RADIUS",
                "0.7"
            ]
        ),
        r#"*[+total_results, :3, +results, *[*["__key", "doc:1", "__score", "0.032522474881"], *["__key", "doc:2", "__score", "0.032266458496"], *["__key", "doc:4", "__score", "0.0320020481311"]], +warnings, *[], +execution_time, +T]"#
    );
    // Filtered: ranks doc:1, doc:2, doc:4, so doc:2 1/63 + 1/62 ties doc:4 1/62 + 1/63
    // and the tie goes in document order.
    assert_eq!(
        hybrid(
            &mut c,
            &[
                "SEARCH",
                "shoes",
                "VSIM",
                "@embedding",
                "$q",
                "RANGE",
                "2",
                "RADIUS",
                "0.7",
                "FILTER",
                "@category:{shoes}",
                "YIELD_SCORE_AS",
                "vs",
                "LOAD",
                "2",
                "@__key",
                "@__score"
            ]
        ),
        r#"*[+total_results, :3, +results, *[*["__key", "doc:1", "__score", "0.0327868852459", "vs", "0.615384615385"], *["__key", "doc:2", "__score", "0.0320020481311", "vs", "0.888888888889"], *["__key", "doc:4", "__score", "0.0320020481311", "vs", "0.615384615385"]], +warnings, *[], +execution_time, +T]"#
    );
}

/// WINDOW bounds both rankings (and KNN's K), so fewer documents are fused.
#[test]
fn window_bounds_each_ranking() {
    let (_server, mut c, _dir) = start();
    // Text: doc:1, doc:4. Vector (K = min(10, 2)): doc:2, doc:1. Constant 1:
    // doc:1 1/2 + 1/3, doc:2 1/2, doc:4 1/3.
    assert_eq!(
        hybrid(
            &mut c,
            &[
                "SEARCH",
                "shoes",
                "VSIM",
                "@embedding",
                "$q",
                "COMBINE",
                "RRF",
                "4",
                "WINDOW",
                "2",
                "CONSTANT",
                "1"
            ]
        ),
        r#"*[+total_results, :3, +results, *[*["__key", "doc:1", "__score", "0.833333333333"], *["__key", "doc:2", "__score", "0.5"], *["__key", "doc:4", "__score", "0.333333333333"]], +warnings, *[], +execution_time, +T]"#
    );
    // KNN K 1: only doc:2 from the vector side.
    assert_eq!(
        hybrid(
            &mut c,
            &[
                "SEARCH",
                "gear",
                "VSIM",
                "@embedding",
                "$q",
                "KNN",
                "2",
                "K",
                "1"
            ]
        ),
        r#"*[+total_results, :2, +results, *[*["__key", "doc:2", "__score", "0.016393442623"], *["__key", "doc:3", "__score", "0.016393442623"]], +warnings, *[], +execution_time, +T]"#
    );
}

/// The steps after the fusion: APPLY over `@__score`, a post-FILTER, SORTBY on a
/// loaded field, LIMIT, NOSORT, and GROUPBY (whose groups are the total).
#[test]
fn tail_steps_shape_the_fused_rows() {
    let (_server, mut c, _dir) = start();
    assert_eq!(
        hybrid(
            &mut c,
            &[
                "SEARCH",
                "shoes",
                "VSIM",
                "@embedding",
                "$q",
                "LOAD",
                "2",
                "@__key",
                "@description",
                "APPLY",
                "floor(@__score * 10000)",
                "AS",
                "s",
                "FILTER",
                "@s > 200",
                "SORTBY",
                "2",
                "@description",
                "ASC",
                "LIMIT",
                "1",
                "2"
            ]
        ),
        r#"*[+total_results, :4, +results, *[*["__key", "doc:2", "description", "red running shoes", "s", "322"], *["__key", "doc:1", "description", "red shoes", "s", "325"]], +warnings, *[], +execution_time, +T]"#
    );
    // NOSORT keeps the merge order: the text ranking, then vector-only documents.
    assert_eq!(
        hybrid(
            &mut c,
            &[
                "SEARCH",
                "shoes",
                "VSIM",
                "@embedding",
                "$q",
                "LOAD",
                "1",
                "@__key",
                "NOSORT"
            ]
        ),
        r#"*[+total_results, :4, +results, *[*["__key", "doc:1"], *["__key", "doc:4"], *["__key", "doc:2"], *["__key", "doc:3"]], +warnings, *[], +execution_time, +T]"#
    );
    assert_eq!(
        hybrid(
            &mut c,
            &[
                "SEARCH",
                "*",
                "VSIM",
                "@embedding",
                "$q",
                "GROUPBY",
                "1",
                "@category",
                "REDUCE",
                "COUNT",
                "0",
                "AS",
                "n",
                "SORTBY",
                "2",
                "@n",
                "DESC"
            ]
        ),
        r#"*[+total_results, :2, +results, *[*["category", "shoes", "n", "3"], *["category", "gear", "n", "1"]], +warnings, *[], +execution_time, +T]"#
    );
    // LIMIT 0 0 counts.
    assert_eq!(
        hybrid(
            &mut c,
            &[
                "SEARCH",
                "shoes",
                "VSIM",
                "@embedding",
                "$q",
                "LIMIT",
                "0",
                "0"
            ]
        ),
        r#"*[+total_results, :4, +results, *[], +warnings, *[], +execution_time, +T]"#
    );
}

/// Errors as RediSearch words them, over the wire.
#[test]
fn errors_over_the_wire() {
    let (_server, mut c, _dir) = start();
    let cases: &[(&[&str], &str)] = &[
        (
            &["SEARCH", "@embedding:[VECTOR_RANGE 1 $q]", "VSIM", "@embedding", "$q"],
            "-Vector expressions are not allowed in FT.HYBRID SEARCH",
        ),
        (
            &["SEARCH", "shoes", "VSIM", "@embedding", "$missing"],
            "-No such parameter `missing`",
        ),
        (
            &["SEARCH", "shoes", "VSIM", "@description", "$q"],
            "-Invalid vector field for normalization",
        ),
        (
            &["SEARCH", "shoes", "VSIM", "@embedding", "$q", "DIALECT", "2"],
            "-DIALECT is not supported in FT.HYBRID or any of its subqueries. Please check the documentation on search-default-dialect configuration.",
        ),
        (
            &["SEARCH", "shoes", "VSIM", "@embedding", "$q", "WITHCURSOR"],
            "-FT.HYBRID WITHCURSOR is not supported by Pion: page with LIMIT",
        ),
    ];
    for (args, want) in cases {
        assert_eq!(&hybrid(&mut c, args), want, "{args:?}");
    }
    let missing = c.cmd(&["FT.HYBRID", "nope", "SEARCH", "x", "VSIM", "@v", "$q"]);
    assert!(missing.is_error(), "{}", missing.render());
}
