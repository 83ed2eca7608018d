//! Search indexes across restarts of a real pion-server process: the definitions come
//! back from the log, and from a snapshot once the log before it is gone; the
//! documents come back from the hashes; an acknowledged HSET survives SIGKILL.

use pion_tests::{temp_dir, Client, PionProcess, RespValue};

fn vector(x: f32, y: f32) -> Vec<u8> {
    [x.to_le_bytes(), y.to_le_bytes()].concat()
}

fn knn_ids(c: &mut Client, q: &[u8], k: usize) -> Vec<String> {
    let reply = c.cmd(&[
        b"FT.SEARCH".as_slice(),
        b"idx",
        format!("*=>[KNN {k} @v $q EF_RUNTIME 200 AS d]").as_bytes(),
        b"PARAMS",
        b"2",
        b"q",
        q,
        b"SORTBY",
        b"d",
        b"NOCONTENT",
        b"DIALECT",
        b"2",
    ]);
    let RespValue::Agg(b'*', Some(items)) = reply else {
        panic!("FT.SEARCH: {}", reply.render());
    };
    items[1..]
        .iter()
        .map(|i| match i {
            RespValue::Bulk(_, Some(b)) => String::from_utf8_lossy(b).into_owned(),
            other => panic!("unexpected {}", other.render()),
        })
        .collect()
}

fn count(c: &mut Client, query: &str) -> i64 {
    match c.cmd(&["FT.SEARCH", "idx", query, "LIMIT", "0", "0"]) {
        RespValue::Agg(b'*', Some(items)) => match &items[0] {
            RespValue::Line(b':', n) => String::from_utf8_lossy(n).parse().expect("count"),
            other => panic!("no count: {}", other.render()),
        },
        other => panic!("FT.SEARCH: {}", other.render()),
    }
}

fn fill(c: &mut Client, from: usize, to: usize) {
    for i in from..to {
        let key = format!("doc:{i}");
        let v = vector(i as f32, (i % 7) as f32);
        let tag = if i % 2 == 0 { "even" } else { "odd" };
        c.cmd(&[
            b"HSET".as_slice(),
            key.as_bytes(),
            b"v",
            &v,
            b"tag",
            tag.as_bytes(),
            b"n",
            i.to_string().as_bytes(),
        ]);
    }
}

#[test]
fn index_survives_sigkill_and_snapshot() {
    let dir = temp_dir("search-restart");
    let mut server = PionProcess::start(dir.path(), &[]);
    let mut c = server.client();
    let created = c.cmd(
        &"FT.CREATE idx ON HASH PREFIX 1 doc: SCHEMA v VECTOR HNSW 6 TYPE FLOAT32 DIM 2 DISTANCE_METRIC L2 tag TAG n NUMERIC"
            .split_whitespace()
            .collect::<Vec<_>>(),
    );
    assert_eq!(created.render(), "+OK");
    fill(&mut c, 0, 300);
    let q = vector(150.2, 3.0);
    let before = knn_ids(&mut c, &q, 5);
    assert_eq!(before[0], "doc:150");
    server.kill9();

    let mut server = PionProcess::start(dir.path(), &[]);
    let mut c = server.client();
    assert_eq!(knn_ids(&mut c, &q, 5), before, "after SIGKILL (log replay)");
    assert_eq!(count(&mut c, "@tag:{even}"), 150);

    // A snapshot replaces the log that held FT.CREATE: the definition must be in it,
    // and the graph too.
    assert_eq!(c.cmd(&["FT.OPTIMIZE", "idx"]).render(), "+OK");
    assert_eq!(c.cmd(&["SAVE"]).render(), "+OK");
    fill(&mut c, 300, 400);
    c.cmd(&["DEL", "doc:150"]);
    server.kill9();

    let server = PionProcess::start(dir.path(), &[]);
    let mut c = server.client();
    // The graph came from the snapshot (linked before SAVE): not rebuilt.
    let info = c.cmd(&["INFO", "search"]).render();
    assert!(info.contains("search_graphs_loaded:1"), "{info}");
    assert!(info.contains("search_graphs_rebuilt:0"), "{info}");
    let after = knn_ids(&mut c, &q, 5);
    assert!(!after.contains(&"doc:150".to_string()));
    assert_eq!(after[0], "doc:151");
    assert_eq!(count(&mut c, "*"), 399);
    assert_eq!(count(&mut c, "@n:[300 +inf]"), 100);
}

fn vsim(c: &mut Client, q: &[f32]) -> String {
    let mut args: Vec<Vec<u8>> = vec![b"VSIM".to_vec(), b"vs".to_vec(), b"VALUES".to_vec()];
    args.push(q.len().to_string().into_bytes());
    args.extend(q.iter().map(|x| x.to_string().into_bytes()));
    args.extend([b"COUNT".to_vec(), b"20".to_vec(), b"WITHSCORES".to_vec()]);
    c.cmd(&args).render()
}

#[test]
fn vector_set_graph_survives_snapshot_and_log() {
    let dir = temp_dir("vset-restart");
    let mut server = PionProcess::start(dir.path(), &[]);
    let mut c = server.client();
    let point = |i: usize| -> Vec<f32> {
        (0..8)
            .map(|d| ((i * 7 + d * 13) % 17) as f32 - 8.0 + (i as f32) * 0.001)
            .collect()
    };
    let vadd = |c: &mut Client, i: usize| {
        let mut args: Vec<Vec<u8>> = vec![b"VADD".to_vec(), b"vs".to_vec(), b"VALUES".to_vec()];
        args.push(b"8".to_vec());
        args.extend(point(i).iter().map(|x| x.to_string().into_bytes()));
        args.push(format!("e{i}").into_bytes());
        let reply = c.cmd(&args);
        assert!(!reply.is_error(), "VADD: {}", reply.render());
    };
    for i in 0..400 {
        vadd(&mut c, i);
    }
    assert_eq!(c.cmd(&["SAVE"]).render(), "+OK");
    for i in 400..500 {
        vadd(&mut c, i);
    }
    c.cmd(&["VREM", "vs", "e3"]);
    let queries: Vec<Vec<f32>> = (0..5).map(|i| point(i * 97 + 1)).collect();
    let before: Vec<String> = queries.iter().map(|q| vsim(&mut c, q)).collect();
    let card = c.cmd(&["VCARD", "vs"]).render();
    server.kill9();

    let server = PionProcess::start(dir.path(), &[]);
    let mut c = server.client();
    assert_eq!(c.cmd(&["VCARD", "vs"]).render(), card);
    assert_eq!(c.cmd(&["VISMEMBER", "vs", "e3"]).render(), ":0");
    let after: Vec<String> = queries.iter().map(|q| vsim(&mut c, q)).collect();
    assert_eq!(before, after, "VSIM after snapshot + log replay");
}

#[test]
fn json_index_survives_sigkill_and_snapshot() {
    let dir = temp_dir("search-restart-json");
    let mut server = PionProcess::start(dir.path(), &[]);
    let mut c = server.client();
    let created = c.cmd(
        &"FT.CREATE idx ON JSON PREFIX 1 doc: SCHEMA $.v AS v VECTOR HNSW 6 TYPE FLOAT32 DIM 2 DISTANCE_METRIC L2 $.tags[*] AS tag TAG $.n AS n NUMERIC"
            .split_whitespace()
            .collect::<Vec<_>>(),
    );
    assert_eq!(created.render(), "+OK");
    let put = |c: &mut Client, from: usize, to: usize| {
        for i in from..to {
            let tag = if i % 2 == 0 { "even" } else { "odd" };
            let doc = format!(r#"{{"v":[{i},{}],"tags":["{tag}","all"],"n":{i}}}"#, i % 7);
            let reply = c.cmd(&["JSON.SET", &format!("doc:{i}"), "$", &doc]);
            assert_eq!(reply.render(), "+OK");
        }
    };
    put(&mut c, 0, 300);
    let q = vector(150.2, 3.0);
    let before = knn_ids(&mut c, &q, 5);
    assert_eq!(before[0], "doc:150");
    server.kill9();

    let mut server = PionProcess::start(dir.path(), &[]);
    let mut c = server.client();
    assert_eq!(knn_ids(&mut c, &q, 5), before, "after SIGKILL (log replay)");
    assert_eq!(count(&mut c, "@tag:{even}"), 150);
    assert_eq!(count(&mut c, "@tag:{all}"), 300);

    // The definition and the graph come back from a snapshot; writes after it from
    // the log: a changed number, a deleted document.
    assert_eq!(c.cmd(&["FT.OPTIMIZE", "idx"]).render(), "+OK");
    assert_eq!(c.cmd(&["SAVE"]).render(), "+OK");
    put(&mut c, 300, 400);
    c.cmd(&["JSON.DEL", "doc:150"]);
    c.cmd(&["JSON.SET", "doc:10", "$.n", "1000"]);
    server.kill9();

    let server = PionProcess::start(dir.path(), &[]);
    let mut c = server.client();
    let info = c.cmd(&["INFO", "search"]).render();
    assert!(info.contains("search_graphs_loaded:1"), "{info}");
    let after = knn_ids(&mut c, &q, 5);
    assert!(!after.contains(&"doc:150".to_string()));
    assert_eq!(after[0], "doc:151");
    assert_eq!(count(&mut c, "*"), 399);
    assert_eq!(count(&mut c, "@n:[300 +inf]"), 101);
}

/// A multi-value vector field (`$.chunks[*].v`, three vectors a document) comes back
/// from the log after SIGKILL and from a snapshot's graph, each document at its
/// nearest chunk, and a deleted document takes all its vectors with it.
#[test]
fn json_multi_vector_index_survives_sigkill_and_snapshot() {
    let dir = temp_dir("search-restart-json-multi");
    let mut server = PionProcess::start(dir.path(), &[]);
    let mut c = server.client();
    let created = c.cmd(
        &"FT.CREATE idx ON JSON PREFIX 1 doc: SCHEMA $.chunks[*].v AS v VECTOR HNSW 6 TYPE FLOAT32 DIM 2 DISTANCE_METRIC L2"
            .split_whitespace()
            .collect::<Vec<_>>(),
    );
    assert_eq!(created.render(), "+OK");
    let put = |c: &mut Client, from: usize, to: usize| {
        for i in from..to {
            let doc = format!(
                r#"{{"chunks":[{{"v":[{i},0]}},{{"v":[{},1]}},{{"v":[{},2]}}]}}"#,
                i + 1000,
                i + 2000
            );
            let reply = c.cmd(&["JSON.SET", &format!("doc:{i}"), "$", &doc]);
            assert_eq!(reply.render(), "+OK");
        }
    };
    let vectors = |c: &mut Client| -> String {
        let info = c.cmd(&["INFO", "search"]).render();
        let (_, after) = info
            .split_once("search_vectors:")
            .unwrap_or_else(|| panic!("no search_vectors in {info}"));
        after.chars().take_while(char::is_ascii_digit).collect()
    };
    put(&mut c, 0, 300);
    // Nearest through each document's second chunk.
    let q = vector(1150.2, 1.0);
    let before = knn_ids(&mut c, &q, 5);
    assert_eq!(
        before,
        ["doc:150", "doc:151", "doc:149", "doc:152", "doc:148"]
    );
    assert_eq!(vectors(&mut c), "900");
    server.kill9();

    let mut server = PionProcess::start(dir.path(), &[]);
    let mut c = server.client();
    assert_eq!(knn_ids(&mut c, &q, 5), before, "after SIGKILL (log replay)");
    assert_eq!(vectors(&mut c), "900");

    assert_eq!(c.cmd(&["FT.OPTIMIZE", "idx"]).render(), "+OK");
    assert_eq!(c.cmd(&["SAVE"]).render(), "+OK");
    put(&mut c, 300, 400);
    c.cmd(&["JSON.DEL", "doc:150"]);
    server.kill9();

    let server = PionProcess::start(dir.path(), &[]);
    let mut c = server.client();
    let info = c.cmd(&["INFO", "search"]).render();
    assert!(info.contains("search_graphs_loaded:1"), "{info}");
    assert_eq!(vectors(&mut c), "1197");
    let after = knn_ids(&mut c, &q, 3);
    assert_eq!(after, ["doc:151", "doc:149", "doc:152"]);
    // The third chunk of a document loaded after the snapshot.
    assert_eq!(knn_ids(&mut c, &vector(2350.1, 2.0), 1), ["doc:350"]);
}

/// Dictionaries and synonym groups come back from the log after SIGKILL, and from a
/// snapshot once the log that held them is gone; a snapshot of the older format
/// (indexes without dictionaries) still loads, which the unit tests of the section
/// cover.
#[test]
fn dictionaries_and_synonyms_survive_sigkill_and_snapshot() {
    let dir = temp_dir("search-restart-lexicon");
    let mut server = PionProcess::start(dir.path(), &[]);
    let mut c = server.client();
    let ok = |r: RespValue| assert_eq!(r.render(), "+OK");
    ok(c.cmd(&[
        "FT.CREATE",
        "sy",
        "PREFIX",
        "1",
        "s:",
        "SCHEMA",
        "t",
        "TEXT",
    ]));
    ok(c.cmd(&["FT.SYNUPDATE", "sy", "g1", "kid", "child"]));
    c.cmd(&["HSET", "s:1", "t", "a child sleeps"]);
    assert_eq!(c.cmd(&["FT.DICTADD", "d", "zebra", "apple"]).render(), ":2");
    let kids = |c: &mut Client| c.cmd(&["FT.SEARCH", "sy", "kid", "NOCONTENT"]).render();
    assert_eq!(kids(&mut c), "*[:1, \"s:1\"]");
    server.kill9();

    let mut server = PionProcess::start(dir.path(), &[]);
    let mut c = server.client();
    assert_eq!(
        kids(&mut c),
        "*[:1, \"s:1\"]",
        "synonyms after SIGKILL (log replay)"
    );
    assert_eq!(
        c.cmd(&["FT.DICTDUMP", "d"]).render(),
        "*[\"apple\", \"zebra\"]"
    );
    ok(c.cmd(&["SAVE"]));
    assert_eq!(c.cmd(&["FT.DICTDEL", "d", "zebra"]).render(), ":1");
    ok(c.cmd(&["FT.SYNUPDATE", "sy", "g2", "SKIPINITIALSCAN", "infant"]));
    server.kill9();

    let server = PionProcess::start(dir.path(), &[]);
    let mut c = server.client();
    assert_eq!(kids(&mut c), "*[:1, \"s:1\"]", "synonyms from the snapshot");
    assert_eq!(c.cmd(&["FT.DICTDUMP", "d"]).render(), "*[\"apple\"]");
    let groups = c.cmd(&["FT.SYNDUMP", "sy"]).render();
    assert!(groups.contains("\"infant\", *[\"g2\"]"), "{groups}");
    assert!(groups.contains("\"kid\", *[\"g1\"]"), "{groups}");
}

/// Aliases come back from the log after SIGKILL and from a snapshot once the log that
/// held them is gone; a drop through an alias replays as the drop of its index.
#[test]
fn aliases_survive_sigkill_and_snapshot() {
    let dir = temp_dir("search-restart-aliases");
    let mut server = PionProcess::start(dir.path(), &[]);
    let mut c = server.client();
    let ok = |r: RespValue| assert_eq!(r.render(), "+OK");
    for name in ["v1", "v2", "v3"] {
        let prefix = format!("{name}:");
        ok(c.cmd(&[
            "FT.CREATE",
            name,
            "PREFIX",
            "1",
            &prefix,
            "SCHEMA",
            "t",
            "TEXT",
        ]));
        c.cmd(&["HSET", &format!("{name}:1"), "t", name]);
    }
    ok(c.cmd(&["FT.ALIASADD", "live", "v1"]));
    ok(c.cmd(&["FT.ALIASADD", "old", "v3"]));
    let hits =
        |c: &mut Client, alias: &str| c.cmd(&["FT.SEARCH", alias, "*", "NOCONTENT"]).render();
    assert_eq!(hits(&mut c, "live"), "*[:1, \"v1:1\"]");
    server.kill9();

    let mut server = PionProcess::start(dir.path(), &[]);
    let mut c = server.client();
    assert_eq!(hits(&mut c, "live"), "*[:1, \"v1:1\"]", "after SIGKILL");
    ok(c.cmd(&["SAVE"]));
    ok(c.cmd(&["FT.ALIASUPDATE", "live", "v2"]));
    ok(c.cmd(&["FT.DROPINDEX", "old"]));
    server.kill9();

    let mut server = PionProcess::start(dir.path(), &[]);
    let mut c = server.client();
    assert_eq!(
        hits(&mut c, "live"),
        "*[:1, \"v2:1\"]",
        "snapshot, then log"
    );
    assert_eq!(c.cmd(&["FT._LIST"]).render(), "*[+v1, +v2]");
    ok(c.cmd(&["SAVE"]));
    server.kill9();

    let server = PionProcess::start(dir.path(), &[]);
    let mut c = server.client();
    assert_eq!(hits(&mut c, "live"), "*[:1, \"v2:1\"]", "from the snapshot");
    assert_eq!(hits(&mut c, "old"), "-old: no such index");
}

/// Suggestion dictionaries (`FT.SUGADD`) come back from the log after SIGKILL and
/// from a snapshot, with scores, payloads, `INCR` sums, deletes and the ranking that
/// depends on them; an emptied dictionary comes back as an empty key.
#[test]
fn suggestions_survive_sigkill_and_snapshot() {
    let dir = temp_dir("search-restart-suggestions");
    let mut server = PionProcess::start(dir.path(), &[]);
    let mut c = server.client();
    for (text, score) in [
        ("hello", "1"),
        ("Hello", "2"),
        ("help", "3"),
        ("hel", "0.5"),
    ] {
        c.cmd(&["FT.SUGADD", "sug", text, score]);
    }
    c.cmd(&["FT.SUGADD", "sug", "helpful", "3", "PAYLOAD", "p1"]);
    c.cmd(&["FT.SUGADD", "sug", "hello", "2", "INCR"]);
    assert_eq!(c.cmd(&["FT.SUGDEL", "sug", "Hello"]).render(), ":1");
    c.cmd(&["FT.SUGADD", "gone", "a", "1"]);
    c.cmd(&["FT.SUGDEL", "gone", "a"]);
    let get = |c: &mut Client| {
        c.cmd(&["FT.SUGGET", "sug", "hel", "WITHSCORES", "WITHPAYLOADS"])
            .render()
    };
    let before = get(&mut c);
    assert_eq!(
        before,
        "*[\"hel\", \"2147483648\", (nil), \"help\", \"2.1213202476501465\", (nil), \
         \"hello\", \"1.7320507764816284\", (nil), \"helpful\", \"1.341640830039978\", \"p1\"]"
    );
    server.kill9();

    let mut server = PionProcess::start(dir.path(), &[]);
    let mut c = server.client();
    assert_eq!(get(&mut c), before, "after SIGKILL");
    assert_eq!(c.cmd(&["TYPE", "gone"]).render(), "+trietype0");
    assert_eq!(c.cmd(&["SAVE"]).render(), "+OK");
    c.cmd(&["FT.SUGADD", "sug", "helm", "9"]);
    server.kill9();

    let mut server = PionProcess::start(dir.path(), &[]);
    let mut c = server.client();
    assert_eq!(
        c.cmd(&["FT.SUGGET", "sug", "hel", "MAX", "2"]).render(),
        "*[\"hel\", \"helm\"]",
        "snapshot, then log"
    );
    assert_eq!(c.cmd(&["FT.SUGLEN", "sug"]).render(), ":5");
    assert_eq!(c.cmd(&["SAVE"]).render(), "+OK");
    server.kill9();

    let server = PionProcess::start(dir.path(), &[]);
    let mut c = server.client();
    assert_eq!(
        c.cmd(&["FT.SUGLEN", "sug"]).render(),
        ":5",
        "from the snapshot"
    );
    assert_eq!(c.cmd(&["FT.SUGLEN", "gone"]).render(), ":0");
    assert_eq!(c.cmd(&["EXISTS", "gone"]).render(), ":1");
}
