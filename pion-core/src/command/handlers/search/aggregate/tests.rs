//! `FT.AGGREGATE` and `FT.CURSOR` through the engine.

use crate::reply::Reply;
use crate::{Engine, EngineOptions};

fn engine_with_docs(n: usize) -> Engine {
    let e = Engine::in_memory(EngineOptions::default());
    let r = e.execute(
        0,
        &[
            "FT.CREATE",
            "idx",
            "PREFIX",
            "1",
            "d:",
            "SCHEMA",
            "g",
            "TAG",
            "SORTABLE",
            "n",
            "NUMERIC",
            "SORTABLE",
        ],
    );
    assert_eq!(r, Reply::ok());
    for i in 0..n {
        let key = format!("d:{i}");
        let g = format!("g{}", i % 5);
        let v = i.to_string();
        e.execute(0, &["HSET", key.as_str(), "g", g.as_str(), "n", v.as_str()]);
    }
    e
}

fn array(r: Reply) -> Vec<Reply> {
    match r {
        Reply::Array(a) => a,
        other => panic!("not an array: {other:?}"),
    }
}

fn int(r: &Reply) -> i64 {
    match r {
        Reply::Integer(n) => *n,
        other => panic!("not an integer: {other:?}"),
    }
}

/// Reading a cursor to the end gives every row exactly once.
#[test]
fn cursor_reads_every_row_once() {
    let e = engine_with_docs(57);
    let first = array(e.execute(
        0,
        &[
            "FT.AGGREGATE",
            "idx",
            "*",
            "LOAD",
            "1",
            "@__key",
            "WITHCURSOR",
            "COUNT",
            "10",
        ],
    ));
    let mut seen = Vec::new();
    let mut chunk = first;
    let mut reads = 0;
    loop {
        let id = int(&chunk[1]);
        let rows = array(chunk[0].clone());
        for row in &rows[1..] {
            let fields = array(row.clone());
            assert_eq!(fields[0], Reply::bulk("__key"));
            seen.push(fields[1].clone());
        }
        if id == 0 {
            break;
        }
        reads += 1;
        let sid = id.to_string();
        chunk = array(e.execute(0, &["FT.CURSOR", "READ", "idx", sid.as_str()]));
    }
    assert_eq!(reads, 5);
    let mut keys: Vec<String> = seen
        .iter()
        .map(|r| match r {
            Reply::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(keys.len(), 57);
    keys.sort();
    keys.dedup();
    assert_eq!(keys.len(), 57, "a row came twice");
}

/// A cursor that was deleted, or read to its end, is gone.
#[test]
fn cursor_delete_and_exhaustion() {
    let e = engine_with_docs(5);
    let r = array(e.execute(0, &["FT.AGGREGATE", "idx", "*", "WITHCURSOR", "COUNT", "2"]));
    let id = int(&r[1]).to_string();
    assert_eq!(
        e.execute(0, &["FT.CURSOR", "DEL", "idx", id.as_str()]),
        Reply::ok()
    );
    assert_eq!(
        e.execute(0, &["FT.CURSOR", "DEL", "idx", id.as_str()]),
        Reply::error("Cursor does not exist")
    );
    assert_eq!(
        e.execute(0, &["FT.CURSOR", "READ", "idx", id.as_str()]),
        Reply::error("Cursor not found")
    );
    let r = array(e.execute(0, &["FT.AGGREGATE", "idx", "*", "WITHCURSOR", "COUNT", "2"]));
    let id = int(&r[1]).to_string();
    let r = array(e.execute(
        0,
        &["FT.CURSOR", "READ", "idx", id.as_str(), "COUNT", "100"],
    ));
    assert_eq!(int(&r[1]), 0);
    assert_eq!(
        e.execute(0, &["FT.CURSOR", "READ", "idx", id.as_str()]),
        Reply::error("Cursor not found")
    );
}

/// A cursor idle past its MAXIDLE is gone.
#[test]
fn cursor_expires_after_max_idle() {
    let e = engine_with_docs(5);
    let r = array(e.execute(
        0,
        &[
            "FT.AGGREGATE",
            "idx",
            "*",
            "WITHCURSOR",
            "COUNT",
            "1",
            "MAXIDLE",
            "20",
        ],
    ));
    let id = int(&r[1]).to_string();
    std::thread::sleep(std::time::Duration::from_millis(60));
    assert_eq!(
        e.execute(0, &["FT.CURSOR", "READ", "idx", id.as_str()]),
        Reply::error("Cursor not found")
    );
}

/// Groups, reducers and sorting over a larger set.
#[test]
fn group_and_sort() {
    let e = engine_with_docs(20);
    let r = array(e.execute(
        0,
        &[
            "FT.AGGREGATE",
            "idx",
            "*",
            "GROUPBY",
            "1",
            "@g",
            "REDUCE",
            "COUNT",
            "0",
            "AS",
            "c",
            "REDUCE",
            "SUM",
            "1",
            "@n",
            "AS",
            "s",
            "SORTBY",
            "2",
            "@s",
            "DESC",
        ],
    ));
    assert_eq!(int(&r[0]), 5);
    assert_eq!(r[1], Reply::bulks(["g", "g4", "c", "4", "s", "46"]));
}

#[test]
fn search_options_pion_does_not_apply_are_refused_by_name() {
    let e = engine_with_docs(3);
    for opt in ["WITHSORTKEYS", "PAYLOAD"] {
        let r = e.execute(0, &["FT.SEARCH", "idx", "*", opt]);
        let Reply::Error(text) = r else {
            panic!("{opt} answered {r:?}");
        };
        assert!(
            text.contains(opt) && text.contains("not supported"),
            "{text}"
        );
    }
    // A language RediSearch stems and Pion has no stemmer for, and one neither knows.
    let r = e.execute(0, &["FT.SEARCH", "idx", "*", "LANGUAGE", "chinese"]);
    assert!(
        matches!(r, Reply::Error(ref t) if t.contains("no stemmer for LANGUAGE chinese")),
        "{r:?}"
    );
    let r = e.execute(0, &["FT.SEARCH", "idx", "*", "LANGUAGE", "klingon"]);
    assert_eq!(r, Reply::Error("No such language".into()));
    let r = e.execute(0, &["FT.SEARCH", "idx", "*", "LANGUAGE", "german"]);
    assert_eq!(array(r)[0], Reply::Integer(3));
    // Expanders: RediSearch's names, case-sensitive; phonetic matching is refused.
    for (name, ok) in [
        ("SBSTEM", true),
        ("SYNONYM", true),
        ("DEFAULT", true),
        ("PHONETIC", false),
        ("sbstem", false),
    ] {
        let r = e.execute(0, &["FT.SEARCH", "idx", "*", "EXPANDER", name]);
        assert_eq!(!matches!(r, Reply::Error(_)), ok, "{name}: {r:?}");
    }
    let r = e.execute(
        0,
        &[
            "FT.SEARCH",
            "idx",
            "*",
            "LANGUAGE",
            "English",
            "LIMIT",
            "0",
            "0",
        ],
    );
    assert_eq!(array(r)[0], Reply::Integer(3));
}

/// A moment already past, as a deadline.
fn past() -> std::time::Instant {
    let now = std::time::Instant::now();
    now.checked_sub(std::time::Duration::from_millis(10))
        .unwrap_or(now)
}

/// An evaluation whose deadline has passed gives up with RediSearch's timeout text.
#[test]
fn evaluation_gives_up_past_its_deadline() {
    use crate::index::eval::{evaluate_with, EvalOptions, TIMED_OUT};
    let e = engine_with_docs(10);
    let index = e.search().get(b"idx").expect("the index");
    let def = index.def.read().clone();
    let docs = index.docs.read();
    let query = crate::index::query::Node::MatchAll;
    let late = EvalOptions {
        deadline: Some(past()),
        ..EvalOptions::default()
    };
    let Err(failed) = evaluate_with(&query, &def, &docs, late) else {
        panic!("evaluated past the deadline");
    };
    assert!(failed.timed_out());
    assert_eq!(failed.0, TIMED_OUT);
    let in_time = EvalOptions {
        deadline: Some(std::time::Instant::now() + std::time::Duration::from_secs(60)),
        ..EvalOptions::default()
    };
    let found = evaluate_with(&query, &def, &docs, in_time).expect("in time");
    assert_eq!(found.set.len(), 10);
}

/// A pipeline past its deadline replies no rows and the timeout as a warning (RESP3's
/// `warning`), not as an error.
#[test]
fn a_pipeline_past_its_deadline_warns() {
    use super::pipeline::{Env, TIMED_OUT};
    let e = engine_with_docs(10);
    let index = e.search().get(b"idx").expect("the index");
    let def = index.def.read().clone();
    let ids = index
        .docs
        .read()
        .all()
        .iter()
        .map(|id| (id, None))
        .collect();
    let matched = super::Matched {
        ids,
        distance_name: None,
        columns: Vec::new(),
        terms: None,
    };
    let steps = vec![super::Step::Load(vec![(b"n".to_vec(), b"n".to_vec())])];
    let mut pipe = super::compile(&def, steps, matched).expect("compiles");
    pipe.state.deadline = Some(past());
    let env = Env {
        engine: &e,
        index: &index,
        now_ms: 0,
    };
    let chunk = super::read_chunk(&mut pipe, &env, None).expect("a reply, not an error");
    assert!(chunk.rows.is_empty());
    assert_eq!(chunk.warning.as_deref(), Some(TIMED_OUT));
    let reply = super::chunk_reply(chunk, true);
    let Reply::Map(fields) = reply else {
        panic!("RESP3 map");
    };
    assert_eq!(
        fields.last().map(|(_, v)| v.clone()),
        Some(Reply::Array(vec![Reply::status(TIMED_OUT)]))
    );
}

/// A sort whose upstream times out gives the rows it read, sorted, then the timeout.
#[test]
fn a_sort_cut_short_gives_what_it_read() {
    use super::pipeline::{Env, Row, Sorter, Stage, StageError, State, TIMED_OUT};
    use super::value::Value;

    /// Three rows, then the timeout.
    struct Cut(Vec<f64>);
    impl Stage for Cut {
        fn next(&mut self, _: &Env<'_>, _: &mut State) -> Result<Option<Row>, StageError> {
            match self.0.pop() {
                Some(n) => {
                    let mut row = Row::default();
                    row.set(0, Value::Num(n));
                    Ok(Some(row))
                }
                None => Err(TIMED_OUT.to_string()),
            }
        }

        fn upstream(&mut self) -> Option<&mut Box<dyn Stage>> {
            None
        }

        fn profile_name(&self) -> String {
            "Index".into()
        }
    }
    let e = engine_with_docs(1);
    let index = e.search().get(b"idx").expect("the index");
    let env = Env {
        engine: &e,
        index: &index,
        now_ms: 0,
    };
    let mut lookup = super::pipeline::Lookup::default();
    lookup.add(b"x");
    let mut st = State {
        def: index.def.read().clone(),
        lookups: vec![lookup],
        total: 0,
        deadline: None,
        ids_read: 0,
        ids_done: false,
        last_id: 0,
    };
    let mut sorter = Sorter {
        up: Box::new(Cut(vec![2.0, 3.0, 1.0])),
        keys: vec![(0, true)],
        seg: 0,
        cap: 10,
        ties_in_id_order: false,
        sorted: None,
        timed_out: false,
    };
    let mut got = Vec::new();
    let end = loop {
        match sorter.next(&env, &mut st) {
            Ok(Some(row)) => got.push(st.get(0, &row, 0)),
            Ok(None) => break None,
            Err(e) => break Some(e),
        }
    };
    assert_eq!(
        got,
        vec![
            Some(Value::Num(1.0)),
            Some(Value::Num(2.0)),
            Some(Value::Num(3.0))
        ]
    );
    assert_eq!(end.as_deref(), Some(TIMED_OUT));
}

/// A TIMEOUT the query stays within changes nothing.
#[test]
fn a_timeout_in_reach_changes_nothing() {
    let e = engine_with_docs(12);
    let plain = e.execute(0, &["FT.AGGREGATE", "idx", "*", "LOAD", "1", "@n"]);
    let bounded = e.execute(
        0,
        &[
            "FT.AGGREGATE",
            "idx",
            "*",
            "LOAD",
            "1",
            "@n",
            "TIMEOUT",
            "60000",
        ],
    );
    assert_eq!(plain, bounded);
    let plain = e.execute(0, &["FT.SEARCH", "idx", "*", "LIMIT", "0", "20"]);
    let bounded = e.execute(
        0,
        &[
            "FT.SEARCH",
            "idx",
            "*",
            "LIMIT",
            "0",
            "20",
            "TIMEOUT",
            "60000",
        ],
    );
    assert_eq!(plain, bounded);
}
