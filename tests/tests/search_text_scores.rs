//! Text search scored as RediSearch scores it, on real text: 1,500 snippets of Rust
//! documentation and man pages (`tests/fixtures/text_corpus.jsonl`, taken from the
//! project's minilm384 benchmark set with 80 of its query texts) are indexed in the
//! search oracle and in Pion, and queries made from the query texts' words (single
//! terms, intersections, unions, prefixes, field scopes, `VERBATIM`) must give the same
//! documents with the same scores under every scorer, to the last printed digit.
//!
//! This covers stemming (a query word finds its other forms), the distance penalty of
//! multi-term queries, field weights and prefix scoring on text nobody wrote for a test.

use std::collections::BTreeMap;
use std::path::PathBuf;

use pion_tests::{Client, PionServer, RedisServer, RespValue};

const SCORERS: &[&str] = &["TFIDF", "TFIDF.DOCNORM", "BM25", "BM25STD", "DISMAX"];

struct Corpus {
    docs: Vec<(u64, String)>,
    queries: Vec<String>,
}

fn corpus() -> Corpus {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/text_corpus.jsonl");
    let text = std::fs::read_to_string(&path).expect("the text corpus fixture");
    let mut docs = Vec::new();
    let mut queries = Vec::new();
    for line in text.lines() {
        let row: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
        let body = row["text"].as_str().expect("text").to_string();
        if row["split"] == "query" {
            queries.push(body);
        } else {
            docs.push((row["id"].as_u64().expect("id"), body));
        }
    }
    Corpus { docs, queries }
}

/// The words of a text a query may name bare: lowercase letters and digits.
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|w| w.len() >= 3)
        .map(str::to_ascii_lowercase)
        .collect()
}

/// Queries made from one query text.
fn queries_of(text: &str) -> Vec<String> {
    let w = words(text);
    let mut out = Vec::new();
    if let Some(a) = w.first() {
        out.push(a.clone());
        out.push(format!("@title:{a}"));
        out.push(format!("{}*", &a[..a.len().min(4)]));
    }
    if w.len() >= 2 {
        out.push(format!("{} {}", w[0], w[1]));
        out.push(format!("{}|{}", w[0], w[1]));
    }
    if w.len() >= 4 {
        out.push(format!("{} {} {}", w[1], w[2], w[3]));
        out.push(format!("{} -{}", w[2], w[3]));
    }
    out
}

fn load(port: u16, docs: &[(u64, String)]) {
    let mut c = Client::connect(port).expect("connect");
    let r = c.cmd(&[
        // No initial scan: RediSearch's runs in the background and, run late, would
        // re-index the documents written meanwhile (new ids, inflated term counts).
        "FT.CREATE",
        "tx",
        "SKIPINITIALSCAN",
        "PREFIX",
        "1",
        "tx:",
        "SCHEMA",
        "title",
        "TEXT",
        "WEIGHT",
        "2",
        "body",
        "TEXT",
    ]);
    assert!(!r.is_error(), "FT.CREATE: {}", r.render());
    let mut batch = Vec::new();
    for (id, text) in docs {
        // The first four words make a title, weighted twice the body.
        let split = text
            .char_indices()
            .filter(|(_, ch)| *ch == ' ')
            .nth(3)
            .map_or(text.len(), |(i, _)| i);
        let (title, body) = text.split_at(split);
        batch.extend(Client::encode(&[
            "HSET".to_string(),
            format!("tx:{id}"),
            "title".into(),
            title.into(),
            "body".into(),
            body.trim().into(),
        ]));
    }
    c.send_raw(&batch).expect("send the documents");
    for _ in docs {
        let (r, _) = c.read_reply().expect("HSET reply");
        assert!(!r.is_error(), "HSET: {}", r.render());
    }
}

/// A search's total and each document's score, as printed.
fn scores(
    c: &mut Client,
    query: &str,
    scorer: &str,
    extra: &[&str],
) -> (String, BTreeMap<String, String>) {
    let mut args = vec![
        "FT.SEARCH",
        "tx",
        query,
        "WITHSCORES",
        "NOCONTENT",
        "LIMIT",
        "0",
        "2000",
        "SCORER",
        scorer,
    ];
    args.extend_from_slice(extra);
    let reply = c.cmd(&args);
    let RespValue::Agg(b'*', Some(items)) = &reply else {
        return (reply.render(), BTreeMap::new());
    };
    let text = |v: &RespValue| match v {
        RespValue::Bulk(_, Some(b)) => String::from_utf8_lossy(b).into_owned(),
        other => other.render(),
    };
    let total = items[0].render();
    let mut out = BTreeMap::new();
    for pair in items[1..].chunks(2) {
        if let [key, score] = pair {
            out.insert(text(key), text(score));
        }
    }
    (total, out)
}

/// How closely a query's scores must agree with the oracle's.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Agreement {
    /// The same score, to the last printed digit.
    Exact,
    /// An intersection of stemmed terms: RediSearch's iterators sometimes credit a
    /// document with only one form of a term (doc/search.md), so Pion's score is at
    /// least the oracle's.
    AtLeast,
    /// A prefix: each document is scored by one of its matching terms, which
    /// RediSearch picks by iterator state: the same documents, any positive score.
    Documents,
}

fn agreement(query: &str, verbatim: bool) -> Agreement {
    if query.ends_with('*') {
        Agreement::Documents
    } else if !verbatim && (query.contains(' ') || query.contains('-')) {
        Agreement::AtLeast
    } else {
        Agreement::Exact
    }
}

fn agrees(how: Agreement, want: &str, got: &str) -> bool {
    let (w, g): (f64, f64) = match (want.parse(), got.parse()) {
        (Ok(w), Ok(g)) => (w, g),
        _ => return want == got,
    };
    match how {
        Agreement::Exact => want == got,
        Agreement::AtLeast => g >= w * (1.0 - 1e-12),
        Agreement::Documents => g > 0.0 && w > 0.0,
    }
}

/// The first results of a search with `EXPLAINSCORE`: each document's score and its
/// explanation, rendered.
fn explanations(
    c: &mut Client,
    query: &str,
    scorer: &str,
    extra: &[&str],
) -> BTreeMap<String, String> {
    let mut args = vec![
        "FT.SEARCH",
        "tx",
        query,
        "WITHSCORES",
        "EXPLAINSCORE",
        "NOCONTENT",
        "LIMIT",
        "0",
        "5",
        "SCORER",
        scorer,
    ];
    args.extend_from_slice(extra);
    let RespValue::Agg(b'*', Some(items)) = c.cmd(&args) else {
        return BTreeMap::new();
    };
    items[1..]
        .chunks(2)
        .filter_map(|pair| match pair {
            [key, explained] => Some((key.render(), explained.render())),
            _ => None,
        })
        .collect()
}

#[test]
fn text_scores_match_the_oracle_on_real_text() {
    let oracle = RedisServer::start_search_oracle();
    let pion = PionServer::start(2);
    let corpus = corpus();
    load(oracle.port, &corpus.docs);
    load(pion.port, &corpus.docs);
    let mut o = Client::connect(oracle.port).expect("connect oracle");
    let mut p = Client::connect(pion.port).expect("connect pion");
    let mut checked = 0;
    let mut exact_docs = 0;
    let mut explained = 0;
    let mut failures = Vec::new();
    for text in &corpus.queries {
        for query in queries_of(text) {
            for scorer in SCORERS {
                for verbatim in [false, true] {
                    let extra: &[&str] = if verbatim { &["VERBATIM"] } else { &[] };
                    let how = agreement(&query, verbatim);
                    let want = scores(&mut o, &query, scorer, extra);
                    let got = scores(&mut p, &query, scorer, extra);
                    checked += 1;
                    let same_docs = want.0 == got.0 && want.1.keys().eq(got.1.keys());
                    let differing: Vec<String> = want
                        .1
                        .iter()
                        .filter(|(k, v)| !got.1.get(*k).is_some_and(|g| agrees(how, v, g)))
                        .take(3)
                        .map(|(k, v)| format!("{k}: {v} vs {:?}", got.1.get(k)))
                        .collect();
                    if how == Agreement::Exact {
                        exact_docs += want.1.len();
                        // Where the scores agree, so do their explanations, line for line.
                        let want = explanations(&mut o, &query, scorer, extra);
                        let got = explanations(&mut p, &query, scorer, extra);
                        for (key, w) in &want {
                            explained += usize::from(got.contains_key(key));
                            if got.get(key).is_some_and(|g| g != w) {
                                failures.push(format!(
                                    "{query:?} {scorer} {extra:?} EXPLAINSCORE of {key}:\n  {w}\n  {}",
                                    got[key]
                                ));
                            }
                        }
                    }
                    if !same_docs || !differing.is_empty() {
                        failures.push(format!(
                            "{query:?} {scorer} {extra:?} ({how:?}): totals {} vs {}; {differing:?}",
                            want.0, got.0
                        ));
                    }
                }
            }
        }
    }
    assert!(checked > 2000, "only {checked} searches");
    assert!(explained > 1000, "only {explained} scores explained");
    assert!(
        exact_docs > 10_000,
        "only {exact_docs} documents scored exactly: the queries find too little"
    );
    assert!(
        failures.is_empty(),
        "{} of {checked} searches differ from the oracle:\n{}",
        failures.len(),
        failures
            .iter()
            .take(30)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
}
