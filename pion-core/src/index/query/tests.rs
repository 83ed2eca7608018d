//! Parser tests on the typed tree: constructs, precedence, escapes, parameters,
//! dialects and error texts (recorded from RediSearch 2.10.5), plus a property test
//! that no input makes the parser panic.

use super::*;
use proptest::prelude::*;

fn schema() -> FieldList {
    FieldList::new([
        ("title", FieldKind::Text),
        ("body", FieldKind::Text),
        ("price", FieldKind::Numeric),
        ("tags", FieldKind::Tag),
        ("vec", FieldKind::Vector),
        ("loc", FieldKind::Geo),
    ])
}

fn params(kv: &[(&str, &[u8])]) -> Params {
    kv.iter().map(|(k, v)| (k.as_bytes(), v.to_vec())).collect()
}

fn p2(q: &str) -> Query {
    parse(q.as_bytes(), &Params::new(), 2, &schema()).expect("query parses")
}

fn err(q: &str, dialect: u32, ps: &Params) -> String {
    parse(q.as_bytes(), ps, dialect, &schema())
        .expect_err("query is refused")
        .message()
        .to_string()
}

fn term(t: &str) -> Node {
    Node::Term {
        fields: FieldScope::All,
        term: t.as_bytes().to_vec(),
        expanded: false,
    }
}

fn scoped(fields: &[&str], t: &str) -> Node {
    Node::Term {
        fields: FieldScope::Fields(fields.iter().map(|f| f.as_bytes().to_vec()).collect()),
        term: t.as_bytes().to_vec(),
        expanded: false,
    }
}

fn and(children: Vec<Node>) -> Node {
    Node::Intersect {
        fields: FieldScope::All,
        children,
    }
}

fn or(children: Vec<Node>) -> Node {
    Node::Union {
        fields: FieldScope::All,
        children,
    }
}

#[test]
fn terms_are_lowercased_and_stopwords_dropped() {
    assert_eq!(p2("Hello").filter, term("hello"));
    assert_eq!(p2("the Hello").filter, term("hello"));
    assert_eq!(p2("the a").filter, Node::Empty);
    assert_eq!(p2("").filter, Node::Empty);
    assert_eq!(p2("*").filter, Node::MatchAll);
    assert_eq!(p2("HÉLLO").filter, term("héllo"));
    assert_eq!(p2("-12").filter, term("-12"));
    assert_eq!(p2("12.5").filter, term("12.5"));
}

#[test]
fn intersection_binds_tighter_than_union() {
    assert_eq!(
        p2("p q | r s").filter,
        or(vec![
            and(vec![term("p"), term("q")]),
            and(vec![term("r"), term("s")])
        ])
    );
    assert_eq!(
        p2("(p q) r").filter,
        and(vec![term("p"), term("q"), term("r")])
    );
    assert_eq!(
        p2("p (q r)").filter,
        and(vec![term("p"), and(vec![term("q"), term("r")])])
    );
    let not_p = Node::Not {
        fields: FieldScope::All,
        child: Box::new(term("p")),
    };
    assert_eq!(p2("-p q").filter, and(vec![not_p, term("q")]));
    assert!(matches!(p2("~p").filter, Node::Optional { .. }));
}

#[test]
fn prefixes_suffixes_fuzzy_and_phrases() {
    assert_eq!(
        p2("Hel*").filter,
        Node::Prefix {
            fields: FieldScope::All,
            prefix: b"hel".to_vec()
        }
    );
    assert!(matches!(p2("*lo").filter, Node::Suffix { .. }));
    assert!(matches!(
        p2("%%helo%%").filter,
        Node::Fuzzy { distance: 2, .. }
    ));
    assert_eq!(
        p2("\"The Quick-fox\"").filter,
        Node::Phrase {
            fields: FieldScope::All,
            terms: vec![b"the".to_vec(), b"quick".to_vec(), b"fox".to_vec()]
        }
    );
}

#[test]
fn escapes_keep_separators_in_terms() {
    assert_eq!(p2(r"foo\-bar").filter, term("foo-bar"));
    assert_eq!(p2(r"a\ b").filter, term("a b"));
    assert_eq!(p2(r"\@x").filter, term("@x"));
    assert_eq!(unescape(br"a\\b\ c"), b"a\\b c".to_vec());
}

#[test]
fn field_modifiers_resolve_text_fields_in_schema_order() {
    assert_eq!(p2("@title:Foo").filter, scoped(&["title"], "foo"));
    assert_eq!(
        p2("@body|title:foo").filter,
        scoped(&["title", "body"], "foo")
    );
    // Unknown or non-TEXT fields leave an empty scope: no match, no error.
    assert_eq!(p2("@price:foo").filter, scoped(&[], "foo"));
    assert_eq!(p2("@nosuch:foo").filter, scoped(&[], "foo"));
    // DIALECT 2: the modifier covers one element.
    assert_eq!(
        p2("@title:foo bar").filter,
        and(vec![scoped(&["title"], "foo"), term("bar")])
    );
    // DIALECT 1: it runs on to the following words.
    let d1 = parse(b"@title:foo bar", &Params::new(), 1, &schema()).expect("parses");
    assert_eq!(
        d1.filter,
        Node::Intersect {
            fields: FieldScope::Fields(vec![b"title".to_vec()]),
            children: vec![scoped(&["title"], "foo"), scoped(&["title"], "bar")]
        }
    );
}

#[test]
fn tags_keep_their_text() {
    let q = p2(r"@tags:{Red | big\ dog | bl* | two words}");
    assert_eq!(
        q.filter,
        Node::Tag {
            field: b"tags".to_vec(),
            alternatives: vec![
                TagAlternative::Exact(b"Red".to_vec()),
                TagAlternative::Exact(br"big\ dog".to_vec()),
                TagAlternative::Prefix(b"bl".to_vec()),
                TagAlternative::All(vec![
                    TagAlternative::Exact(b"two".to_vec()),
                    TagAlternative::Exact(b"words".to_vec()),
                ]),
            ]
        }
    );
    assert_eq!(
        TagAlternative::Exact(br"big\ dog".to_vec()).value(),
        b"big dog"
    );
    let ps = params(&[("t", b"x y")]);
    let q = parse(b"@tags:{$t}", &ps, 2, &schema()).expect("parses");
    assert!(matches!(&q.filter, Node::Tag { alternatives, .. }
        if alternatives == &[TagAlternative::Exact(b"x y".to_vec())]));
}

#[test]
fn numeric_ranges() {
    let range = |q: &str, ps: &Params| match parse(q.as_bytes(), ps, 2, &schema()) {
        Ok(Query {
            filter: Node::Numeric { range, .. },
            ..
        }) => range,
        other => panic!("not a numeric range: {other:?}"),
    };
    let none = Params::new();
    let r = range("@price:[(1 +inf]", &none);
    assert_eq!(
        (r.min, r.min_inclusive, r.max, r.max_inclusive),
        (1.0, false, f64::INFINITY, true)
    );
    assert!(!r.contains(1.0) && r.contains(1.5));
    let r = range("@price:[-inf (5]", &none);
    assert!(r.contains(-1e300) && !r.contains(5.0));
    let r = range("@price:[7]", &none);
    assert!(r.contains(7.0) && !r.contains(7.5));
    let ps = params(&[("lo", b"(2"), ("hi", b"3")]);
    let r = range("@price:[$lo $hi]", &ps);
    // A parameter's `(` is skipped but does not make the bound exclusive.
    assert_eq!((r.min, r.min_inclusive), (2.0, true));
    assert_eq!(
        err("@price:[$lo 5]", 2, &params(&[("lo", b"x")])),
        "Bad lower range: x"
    );
    assert_eq!(
        err("@price:[1 $hi]", 2, &params(&[("hi", b"1e400")])),
        "Bad upper range: 1e400"
    );
    let q = p2("@loc:[2.5 48.1 10 km]");
    assert!(matches!(
        q.filter,
        Node::Geo {
            unit: GeoUnit::Km,
            ..
        }
    ));
    assert_eq!(
        err("@loc:[1 2 3 parsecs]", 2, &Params::new()),
        "Invalid GeoFilter unit"
    );
}

#[test]
fn params_only_in_dialect_2() {
    let ps = params(&[("x", b"World")]);
    assert_eq!(
        parse(b"$x", &ps, 2, &schema()).expect("parses").filter,
        term("world")
    );
    assert_eq!(err("hello $x", 1, &ps), "Syntax error at offset 6 near x");
    assert_eq!(err("hello $y", 2, &ps), "No such parameter `y`");
    assert_eq!(
        err("x", 0, &ps),
        "DIALECT requires a non negative integer >=1 and <= 4"
    );
    assert_eq!(
        err("x", 5, &ps),
        "DIALECT requires a non negative integer >=1 and <= 4"
    );
    assert!(parse(b"$x", &ps, 4, &schema()).is_ok());
}

#[test]
fn knn_clause() {
    let blob = [0u8, 0, 128, 63, 0, 0, 0, 64];
    let ps = params(&[("b", &blob), ("k", b"5"), ("ef", b"40")]);
    let q = parse(
        b"(@title:foo @price:[1 2])=>[KNN $k @vec $b EF_RUNTIME $ef AS dist]",
        &ps,
        2,
        &schema(),
    )
    .expect("parses");
    let v = q.vector.expect("has a KNN clause");
    assert_eq!(v.k, 5);
    assert_eq!(v.field, b"vec");
    assert_eq!(v.blob, blob);
    assert_eq!(v.ef_runtime.as_ref().map(|e| e.value), Some(40.0));
    assert_eq!(v.score_field(), b"dist");
    assert!(matches!(q.filter, Node::Intersect { .. }));
    let q = parse(b"*=>[KNN 3 @vec $b]", &ps, 2, &schema()).expect("parses");
    assert_eq!(q.filter, Node::MatchAll);
    assert_eq!(q.vector.expect("knn").score_field(), b"__vec_score");
    assert_eq!(
        err("*=>[KNN 3 @vec $b]", 1, &ps),
        "Syntax error at offset 1 near >["
    );
    assert_eq!(
        err(
            "*=>[KNN $k @vec $b]",
            2,
            &params(&[("b", &blob), ("k", b"-3")])
        ),
        "Invalid numeric value (-3) for parameter `k`"
    );
    assert_eq!(
        err("*=>[KNN 3 @vec $b EPSILON 0.1]", 2, &ps),
        "Error parsing vector similarity parameters: range query attributes were sent for a non-range query"
    );
    assert_eq!(
        err("*=>[KNN 3 @vec $b AS a]=>{$YIELD_DISTANCE_AS: c}", 2, &ps),
        "Distance field was specified twice for vector query: a and c"
    );
    assert_eq!(
        err("*=>[FOO 3 @vec $b]", 2, &ps),
        "Syntax error: Expecting Vector Similarity command at offset 4 near FOO"
    );
}

#[test]
fn vector_range_is_a_filter_node() {
    let blob = [1u8, 2, 3, 4];
    let ps = params(&[("b", &blob), ("r", b"0.5")]);
    let q = parse(
        b"@vec:[VECTOR_RANGE $r $b]=>{$YIELD_DISTANCE_AS: d; $EPSILON: 0.01} @title:x",
        &ps,
        2,
        &schema(),
    )
    .expect("parses");
    let Node::Intersect { children, .. } = &q.filter else {
        panic!("not an intersection: {:?}", q.filter);
    };
    let Node::VectorRange(r) = &children[0] else {
        panic!("not a vector range: {:?}", children[0]);
    };
    assert_eq!(r.radius, 0.5);
    assert_eq!(r.blob, blob);
    assert_eq!(r.yield_distance_as.as_deref(), Some(&b"d"[..]));
    assert_eq!(r.epsilon.as_ref().map(|e| e.value), Some(0.01));
    assert_eq!(
        err("@vec:[VECTOR_RANGE -1 $b]", 2, &ps),
        "Error parsing vector similarity query: negative radius (-1) given in a range query"
    );
    assert_eq!(
        err("@vec:[VECTOR_RANGE 1 $b]=>{$FOO: 1}", 2, &ps),
        "Invalid attribute FOO"
    );
}

#[test]
fn syntax_errors_quote_offset_and_last_text() {
    let none = Params::new();
    for (q, want) in [
        ("p |", "Syntax error at offset 2 near p"),
        ("| p", "Syntax error at offset 0 near "),
        ("()", "Syntax error at offset 1 near "),
        ("(p", "Syntax error at offset 1 near p"),
        ("p)", "Syntax error at offset 1 near p"),
        ("@t", "Syntax error at offset 0 near t"),
        ("@title:*", "Syntax error at offset 7 near title"),
        ("* p", "Syntax error at offset 2 near p"),
        ("@tags:{}", "Syntax error at offset 7 near tags"),
        ("@price:[1 2 3]", "Syntax error at offset 13 near 3"),
        ("\"p q", "Syntax error at offset 1 near p"),
        ("a b =>[KNN 10 @v $b]", "Syntax error at offset 6 near >["),
    ] {
        assert_eq!(err(q, 2, &none), want, "{q}");
    }
    assert_eq!(
        err("@title:(@body:x)", 2, &none),
        "Syntax error at offset 8 near body"
    );
    assert!(parse(b"@title:(@body:x)", &none, 1, &schema()).is_ok());
}

#[test]
fn query_error_displays_its_text() {
    let e = QueryError::new("Syntax error at offset 3 near foo");
    assert_eq!(e.to_string(), "Syntax error at offset 3 near foo");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64), dialect in 1u32..=2) {
        let ps = params(&[("b", b"abcd"), ("k", b"3"), ("r", b"1")]);
        if let Ok(q) = parse(&bytes, &ps, dialect, &schema()) {
            let _ = explain(&q);
        }
    }

    #[test]
    fn parse_never_panics_on_query_alphabet(
        s in "[a-z@|(){}\\[\\]:$*%\"~=>;\\\\ .,0-9-]{0,40}",
        dialect in 1u32..=2,
    ) {
        let ps = params(&[("b", b"abcd"), ("k", b"3"), ("r", b"1")]);
        if let Ok(q) = parse(s.as_bytes(), &ps, dialect, &schema()) {
            let _ = explain(&q);
        }
    }
}

/// `HYBRID_POLICY` / `BATCH_SIZE` are taken as written and checked when the query runs,
/// with the texts `FT.SEARCH` gives (recorded from RediSearch 2.10.5).
#[test]
fn hybrid_options_are_checked_when_the_query_runs() {
    let blob = [0u8; 8];
    let ps = params(&[("b", &blob), ("bs", b"4")]);
    let hybrid = |q: &str| {
        let query = parse(q.as_bytes(), &ps, 2, &schema()).expect("query parses");
        let filtered = !matches!(query.filter, Node::MatchAll);
        query
            .vector
            .expect("knn")
            .hybrid(filtered)
            .map_err(|e| e.message().to_string())
    };
    let ok = |policy, batch_size| Ok(Hybrid { policy, batch_size });
    assert_eq!(
        hybrid("@tags:{x}=>[KNN 2 @vec $b HYBRID_POLICY BATCHES BATCH_SIZE 8 AS d]"),
        ok(Some(HybridPolicy::Batches), Some(8))
    );
    assert_eq!(
        hybrid("(@tags:{x})=>[KNN 2 @vec $b]=>{$hybrid_policy: adhoc_bf}"),
        ok(Some(HybridPolicy::AdhocBf), None)
    );
    assert_eq!(
        hybrid("@price:[1 2]=>[KNN 2 @vec $b BATCH_SIZE $bs]"),
        ok(None, Some(4))
    );
    assert_eq!(hybrid("*=>[KNN 2 @vec $b EF_RUNTIME 5]"), ok(None, None));
    let refused = [
        (
            "*=>[KNN 2 @vec $b HYBRID_POLICY FOO]",
            "hybrid query attributes were sent for a non-hybrid query",
        ),
        (
            "*=>[KNN 2 @vec $b BATCH_SIZE 0]",
            "hybrid query attributes were sent for a non-hybrid query",
        ),
        (
            "@tags:{x}=>[KNN 2 @vec $b HYBRID_POLICY FOO]",
            "invalid hybrid policy was given",
        ),
        (
            "@tags:{x}=>[KNN 2 @vec $b BATCH_SIZE 3 HYBRID_POLICY ADHOC_BF]",
            "'batch size' is irrelevant for 'ADHOC_BF' policy",
        ),
        (
            "@tags:{x}=>[KNN 2 @vec $b EF_RUNTIME 5 HYBRID_POLICY ADHOC_BF]",
            "'EF_RUNTIME' is irrelevant for 'ADHOC_BF' policy",
        ),
        (
            "@tags:{x}=>[KNN 2 @vec $b HYBRID_POLICY BATCHES]=>{$HYBRID_POLICY: BATCHES}",
            "Parameter was specified twice",
        ),
        (
            "@tags:{x}=>[KNN 2 @vec $b BATCH_SIZE 2 BATCH_SIZE 3]",
            "Parameter was specified twice",
        ),
        (
            "@tags:{x}=>[KNN 2 @vec $b BATCH_SIZE 2.5]",
            "Invalid value was given",
        ),
        (
            "@tags:{x}=>[KNN 2 @vec $b BATCH_SIZE -1]",
            "Invalid value was given",
        ),
    ];
    for (q, why) in refused {
        assert_eq!(
            hybrid(q),
            Err(format!("Error parsing vector similarity parameters: {why}")),
            "{q}"
        );
    }
    let range = parse(
        b"@vec:[VECTOR_RANGE 1 $b]=>{$HYBRID_POLICY: BATCHES}",
        &ps,
        2,
        &schema(),
    )
    .expect("query parses");
    let Node::VectorRange(vr) = range.filter else {
        panic!("a range node");
    };
    assert_eq!(
        vr.check_not_hybrid().map_err(|e| e.message().to_string()),
        Err("Error parsing vector similarity parameters: hybrid query attributes were sent for a non-hybrid query".to_string())
    );
}
