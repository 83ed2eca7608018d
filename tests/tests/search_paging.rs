//! `FT.SEARCH` pages: a query ranks only as far as the page it is asked for, so every
//! page must be the slice of the whole ranking that its `LIMIT` names — by score
//! (ties in document order), by a `SORTBY` field either way (documents without it
//! last), and in document order when nothing ranks.

use pion_tests::{Client, PionServer, RespValue};

const DOCS: usize = 300;
const PAGE: usize = 7;

fn load(c: &mut Client) {
    let create = c.cmd(&[
        "FT.CREATE",
        "idx",
        "ON",
        "HASH",
        "PREFIX",
        "1",
        "p:",
        "SCHEMA",
        "x",
        "TEXT",
        "n",
        "NUMERIC",
        "SORTABLE",
        "s",
        "TEXT",
        "SORTABLE",
        "g",
        "TAG",
    ]);
    assert_eq!(create.render(), "+OK");
    for i in 0..DOCS {
        let key = format!("p:{i}");
        // Scores repeat (ties), numbers repeat, some documents lack `n`.
        let text = format!(
            "{} beta{} filler {}",
            "alpha ".repeat(i % 5 + 1),
            i % 3,
            "word ".repeat(i % 7)
        );
        let mut args = vec![
            "HSET".to_string(),
            key,
            "x".into(),
            text,
            "s".into(),
            format!("S{}", i % 11),
            "g".into(),
            format!("g{}", i % 4),
        ];
        if i % 4 != 0 {
            args.extend(["n".to_string(), (i % 17).to_string()]);
        }
        assert!(!c.cmd(&args).is_error());
    }
}

/// (key, score) of each result of a `NOCONTENT WITHSCORES` reply, and the total.
fn results(reply: &RespValue) -> (i64, Vec<(String, String)>) {
    let RespValue::Agg(_, Some(items)) = reply else {
        panic!("FT.SEARCH replied {}", reply.render());
    };
    let total = match &items[0] {
        RespValue::Line(b':', n) => String::from_utf8_lossy(n).parse().expect("a count"),
        other => panic!("no total: {}", other.render()),
    };
    let rows = items[1..]
        .chunks(2)
        .map(|pair| (pair[0].render(), pair[1].render()))
        .collect();
    (total, rows)
}

fn search(c: &mut Client, query: &str, extra: &[&str], offset: usize, num: usize) -> RespValue {
    let (offset, num) = (offset.to_string(), num.to_string());
    let mut args = vec!["FT.SEARCH", "idx", query, "NOCONTENT", "WITHSCORES"];
    args.extend_from_slice(extra);
    args.extend(["LIMIT", offset.as_str(), num.as_str()]);
    c.cmd(&args)
}

#[test]
fn every_page_is_a_slice_of_the_whole_ranking() {
    let pion = PionServer::start(2);
    let mut c = Client::connect(pion.port).expect("connect");
    load(&mut c);
    let cases: &[(&str, &[&str])] = &[
        ("alpha", &[]),
        ("alpha|beta1*", &[]),
        ("alpha word", &[]),
        ("*", &[]),
        ("@g:{g1}", &[]),
        ("@n:[0 10]", &[]),
        ("alpha", &["SORTBY", "n", "ASC"]),
        ("alpha", &["SORTBY", "n", "DESC"]),
        ("*", &["SORTBY", "s"]),
        ("beta2", &["SORTBY", "s", "DESC"]),
    ];
    for (query, extra) in cases {
        let whole = search(&mut c, query, extra, 0, DOCS + 10);
        let (total, all) = results(&whole);
        assert!(total > PAGE as i64, "{query} {extra:?} matched {total}");
        assert_eq!(all.len() as i64, total, "{query} {extra:?}");
        let mut paged = Vec::new();
        for offset in (0..DOCS + PAGE).step_by(PAGE) {
            let (t, rows) = results(&search(&mut c, query, extra, offset, PAGE));
            assert_eq!(t, total, "{query} {extra:?}: the total of page at {offset}");
            paged.extend(rows);
        }
        assert_eq!(paged, all, "{query} {extra:?}: pages differ from the whole");
        // LIMIT 0 0 counts without ranking.
        let (t, rows) = results(&search(&mut c, query, extra, 0, 0));
        assert_eq!((t, rows.len()), (total, 0), "{query} {extra:?} LIMIT 0 0");
    }
    // The orders themselves: best score first, ties by document order.
    let (_, ranked) = results(&search(&mut c, "alpha", &[], 0, DOCS));
    let score = |s: &str| s.trim_matches('"').parse::<f64>().expect("a score");
    let id = |k: &str| k.trim_matches('"')[2..].parse::<usize>().expect("an id");
    for w in ranked.windows(2) {
        let (a, b) = (score(&w[0].1), score(&w[1].1));
        assert!(a > b || (a == b && id(&w[0].0) < id(&w[1].0)), "{w:?}");
    }
    // SORTBY n ASC: numbers ascending, ties by document order, documents without last.
    let (_, sorted) = results(&search(&mut c, "alpha", &["SORTBY", "n", "ASC"], 0, DOCS));
    let n_of = |k: &str| {
        let i = id(k);
        (i % 4 != 0).then_some(i % 17)
    };
    for w in sorted.windows(2) {
        let (a, b) = (n_of(&w[0].0), n_of(&w[1].0));
        let ok = match (a, b) {
            (Some(x), Some(y)) => x < y || (x == y && id(&w[0].0) < id(&w[1].0)),
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => id(&w[0].0) < id(&w[1].0),
        };
        assert!(ok, "SORTBY n ASC out of order at {w:?}");
    }
}
