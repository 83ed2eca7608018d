//! `DEBUG RELOAD` and `DEBUG LOADAOF`, and what needs DEBUG to set up.
//!
//! - The replies match a real redis-server with DEBUG enabled: the `corpus_debug`
//!   files, replayed on both (reloads, and `WATCH` of stale keys with active expiry
//!   off).
//! - Every key survives the round trip through a snapshot, and a restart after a
//!   reload recovers what the reload left (also after `NOSAVE`, which goes back to an
//!   older snapshot, and `NOFLUSH MERGE`).
//! - Search indexes answer the same queries afterwards.
//! - `LOADAOF` loads the snapshot and the log after it, and memory is what it was.
//! - Without persistence both are refused and nothing is lost.

use pion_core::EngineOptions;
use pion_tests::differential::{corpus_files, replay};
use pion_tests::dump::{assert_same, dump, ok, Batch};
use pion_tests::{temp_dir, Client, PionProcess, PionServer, RedisServer, RespValue};

fn replay_corpus(threads: usize) {
    let redis = RedisServer::start_with(&["--enable-debug-command", "yes"]);
    let mut options = EngineOptions::default();
    options.config.threads = threads;
    options.config.enable_debug_command = pion_core::config::DebugCommand::Yes;
    let pion = PionServer::start_with(threads, options);
    let mut failures = Vec::new();
    for file in &corpus_files("corpus_debug") {
        for resp in [2, 3] {
            replay(redis.port, pion.port, resp, file, &mut failures);
        }
    }
    assert!(
        failures.is_empty(),
        "{} differences from redis-server:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn reload_replies_match_redis_one_thread() {
    replay_corpus(1);
}

#[test]
fn reload_replies_match_redis_four_threads() {
    replay_corpus(4);
}

const DEBUG: &[&str] = &["--enable-debug-command", "yes"];

/// Every type on both sides of its encoding thresholds, in two databases, some keys
/// with a far-future expiry.
fn populate(c: &mut Client) {
    for db in [0usize, 5] {
        ok(c, &["SELECT", &db.to_string()]);
        let mut batch = Batch::default();
        for i in 0..300 {
            batch.push(&["SET", &format!("s{i}"), &format!("value-{i}")]);
            batch.push(&["SET", &format!("i{i}"), &(i * 1000 - 7).to_string()]);
        }
        for n in [3usize, 200] {
            let members: Vec<String> = (0..n).map(|i| format!("m{i}")).collect();
            let mut rpush = vec!["RPUSH".to_string(), format!("list{n}")];
            rpush.extend(members.iter().cloned());
            batch.push(&rpush);
            let mut hset = vec!["HSET".to_string(), format!("hash{n}")];
            for m in &members {
                hset.push(m.clone());
                hset.push(format!("{m}-value"));
            }
            batch.push(&hset);
            let mut sadd = vec!["SADD".to_string(), format!("set{n}")];
            sadd.extend(members.iter().cloned());
            batch.push(&sadd);
            let mut intset = vec!["SADD".to_string(), format!("intset{n}")];
            intset.extend((0..n).map(|i| (i as i64 * 37 - 1000).to_string()));
            batch.push(&intset);
            let mut zadd = vec!["ZADD".to_string(), format!("zset{n}")];
            for (i, m) in members.iter().enumerate() {
                zadd.push(format!("{}", i as f64 / 8.0 - 3.0));
                zadd.push(m.clone());
            }
            batch.push(&zadd);
        }
        for i in 0..20 {
            batch.push(&["PEXPIRE", &format!("s{i}"), "1000000000"]);
        }
        batch.push(&["PEXPIRE", "hash200", "1000000000"]);
        for reply in batch.run(c) {
            assert!(!reply.is_error(), "{}", reply.render());
        }
    }
    ok(c, &["SELECT", "0"]);
}

fn reply(c: &mut Client, args: &[&str]) -> String {
    c.cmd(args).render()
}

#[test]
fn reload_keeps_every_key_and_a_restart_recovers_what_it_left() {
    let dir = temp_dir("debug-reload");
    let mut server = PionProcess::start(dir.path(), DEBUG);
    let mut c = server.client();
    populate(&mut c);
    let before = dump(&mut c);
    assert_eq!(reply(&mut c, &["DEBUG", "RELOAD"]), "+OK");
    assert_same("after DEBUG RELOAD", &before, &dump(&mut c));

    // NOSAVE goes back to the last save, in memory and on disk.
    ok(&mut c, &["SET", "after-save", "1"]);
    ok(&mut c, &["DEL", "s100"]).render();
    assert_eq!(reply(&mut c, &["DEBUG", "RELOAD", "NOSAVE"]), "+OK");
    assert_same("after DEBUG RELOAD NOSAVE", &before, &dump(&mut c));
    server.kill9();
    let mut server = PionProcess::start(dir.path(), DEBUG);
    let mut c = server.client();
    assert_same("restart after NOSAVE", &before, &dump(&mut c));

    // NOFLUSH MERGE: what was only in memory stays, the saved version of a key in
    // both wins, and a restart recovers the merge.
    ok(&mut c, &["SET", "only-in-memory", "1"]);
    ok(&mut c, &["SET", "s5", "changed"]);
    assert_eq!(
        reply(&mut c, &["DEBUG", "RELOAD", "NOSAVE", "NOFLUSH", "MERGE"]),
        "+OK"
    );
    assert_eq!(reply(&mut c, &["GET", "only-in-memory"]), "\"1\"");
    assert_eq!(reply(&mut c, &["GET", "s5"]), "\"value-5\"");
    let merged = dump(&mut c);
    server.kill9();
    let server = PionProcess::start(dir.path(), DEBUG);
    let mut c = server.client();
    assert_same("restart after NOFLUSH MERGE", &merged, &dump(&mut c));

    // Without MERGE, a key in both fails the reload and changes nothing.
    ok(&mut c, &["SET", "s5", "changed-again"]);
    assert_eq!(
        reply(&mut c, &["DEBUG", "RELOAD", "NOFLUSH"]),
        "-ERR Error trying to load the RDB dump"
    );
    assert_eq!(reply(&mut c, &["GET", "s5"]), "\"changed-again\"");
    assert!(
        server
            .stderr_text()
            .contains("in database 0, which exists (MERGE replaces it)"),
        "the log says why: {}",
        server.stderr_text()
    );
}

#[test]
fn loadaof_reloads_what_a_restart_would_recover() {
    let dir = temp_dir("debug-loadaof");
    let server = PionProcess::start(dir.path(), DEBUG);
    let mut c = server.client();
    populate(&mut c);
    // Commands whose log entry is not the command itself: relative expiries, a float
    // increment, a random pop.
    ok(&mut c, &["SET", "counter", "10.5"]);
    c.cmd(&["INCRBYFLOAT", "counter", "0.25"]);
    c.cmd(&["EXPIRE", "counter", "5000"]);
    c.cmd(&["SPOP", "set200", "3"]);
    let before = dump(&mut c);
    assert_eq!(reply(&mut c, &["DEBUG", "LOADAOF"]), "+OK");
    assert_same("after DEBUG LOADAOF (log only)", &before, &dump(&mut c));

    // A snapshot, then more writes: both parts are loaded.
    ok(&mut c, &["SAVE"]);
    ok(&mut c, &["SET", "after-save", "1"]);
    c.cmd(&["LPOP", "list200", "5"]);
    c.cmd(&["DEL", "hash3"]);
    let before = dump(&mut c);
    assert_eq!(reply(&mut c, &["DEBUG", "LOADAOF"]), "+OK");
    assert_same(
        "after DEBUG LOADAOF (snapshot and log)",
        &before,
        &dump(&mut c),
    );
    assert!(
        server.stderr_text().contains("Reloaded by DEBUG LOADAOF"),
        "{}",
        server.stderr_text()
    );
}

fn knn(c: &mut Client, q: &[u8]) -> String {
    c.cmd(&[
        b"FT.SEARCH".as_slice(),
        b"idx",
        b"*=>[KNN 5 @v $q AS d]",
        b"PARAMS",
        b"2",
        b"q",
        q,
        b"SORTBY",
        b"d",
        b"RETURN",
        b"1",
        b"tag",
        b"DIALECT",
        b"2",
    ])
    .render()
}

#[test]
fn search_indexes_answer_the_same_after_a_reload() {
    let dir = temp_dir("debug-reload-search");
    let server = PionProcess::start(dir.path(), DEBUG);
    let mut c = server.client();
    let created = reply(
        &mut c,
        &"FT.CREATE idx ON HASH PREFIX 1 doc: SCHEMA v VECTOR HNSW 6 TYPE FLOAT32 DIM 2 DISTANCE_METRIC L2 tag TAG"
            .split_whitespace()
            .collect::<Vec<_>>(),
    );
    assert_eq!(created, "+OK");
    for i in 0..200 {
        let v = [(i as f32).to_le_bytes(), ((i % 7) as f32).to_le_bytes()].concat();
        let tag = if i % 2 == 0 { "even" } else { "odd" };
        let r = c.cmd(&[
            b"HSET".as_slice(),
            format!("doc:{i}").as_bytes(),
            b"v",
            &v,
            b"tag",
            tag.as_bytes(),
        ]);
        assert!(!r.is_error());
    }
    let q = [100.2f32.to_le_bytes(), 3.0f32.to_le_bytes()].concat();
    let tags = |c: &mut Client| reply(c, &["FT.SEARCH", "idx", "@tag:{even}", "LIMIT", "0", "0"]);
    let before = (knn(&mut c, &q), tags(&mut c));
    assert!(before.0.contains("doc:100"), "{}", before.0);
    assert_eq!(reply(&mut c, &["DEBUG", "RELOAD"]), "+OK");
    assert_eq!(
        (knn(&mut c, &q), tags(&mut c)),
        before,
        "after DEBUG RELOAD"
    );
    assert_eq!(
        reply(&mut c, &["DEBUG", "RELOAD", "NOSAVE", "NOFLUSH", "MERGE"]),
        "+OK"
    );
    assert_eq!(
        (knn(&mut c, &q), tags(&mut c)),
        before,
        "after NOFLUSH MERGE"
    );
    // An index dropped since the save comes back with NOFLUSH MERGE, over every hash.
    assert_eq!(reply(&mut c, &["FT.DROPINDEX", "idx"]), "+OK");
    let r = c.cmd(&[b"HSET".as_slice(), b"doc:1000", b"v", &q, b"tag", b"new"]);
    assert!(!r.is_error());
    assert_eq!(
        reply(&mut c, &["DEBUG", "RELOAD", "NOSAVE", "NOFLUSH", "MERGE"]),
        "+OK"
    );
    assert!(knn(&mut c, &q).contains("doc:1000"));
    assert_eq!(tags(&mut c), before.1);
}

#[test]
fn without_persistence_the_reload_is_refused_and_nothing_is_lost() {
    let dir = temp_dir("debug-reload-off");
    let server = PionProcess::start(
        dir.path(),
        &["--wal", "off", "--enable-debug-command", "yes"],
    );
    let mut c = server.client();
    ok(&mut c, &["SET", "k", "v"]);
    let r = c.cmd(&["DEBUG", "RELOAD"]);
    assert!(
        matches!(&r, RespValue::Line(b'-', t) if t.starts_with(b"ERR persistence is off")),
        "{}",
        r.render()
    );
    let r = c.cmd(&["DEBUG", "LOADAOF"]);
    assert!(
        matches!(&r, RespValue::Line(b'-', t) if t.starts_with(b"ERR persistence is off")),
        "{}",
        r.render()
    );
    assert_eq!(reply(&mut c, &["GET", "k"]), "\"v\"");
}
