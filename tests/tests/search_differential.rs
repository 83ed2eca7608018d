//! The search, vector-set and JSON differential suite: every file of `corpus-search/` is
//! replayed against the search oracle (Redis 8 with RediSearch; see
//! `scripts/search-oracle.sh`) and against Pion, at 1 and 4 worker threads, in RESP2
//! and RESP3, and the replies are compared as each line asks.

use pion_tests::differential::{corpus_files, replay};
use pion_tests::{Client, PionServer, RedisServer, RespValue};

fn run_suite(threads: usize) {
    let oracle = RedisServer::start_search_oracle();
    let pion = PionServer::start(threads);
    let mut failures = Vec::new();
    let files = corpus_files("corpus-search");
    assert!(!files.is_empty(), "no search corpus files");
    for file in &files {
        for resp in [2, 3] {
            replay(oracle.port, pion.port, resp, file, &mut failures);
        }
    }
    assert!(
        failures.is_empty(),
        "{} differences from the search oracle at --threads {threads}:\n{}",
        failures.len(),
        failures
            .iter()
            .take(60)
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn search_corpus_matches_oracle_one_thread() {
    run_suite(1);
}

#[test]
fn search_corpus_matches_oracle_four_threads() {
    run_suite(4);
}

/// Splits a `WITHCURSOR` reply into its chunk and its cursor id.
fn chunk_and_id(reply: &RespValue) -> (RespValue, i64) {
    let RespValue::Agg(b'*', Some(items)) = reply else {
        panic!("not a cursor reply: {}", reply.render());
    };
    let RespValue::Line(b':', id) = &items[1] else {
        panic!("no cursor id: {}", reply.render());
    };
    let id = String::from_utf8_lossy(id).parse().expect("cursor id");
    (items[0].clone(), id)
}

/// Cursors read to their end give the oracle's chunks (rows, `total_results` per
/// read, when the id turns 0), in RESP2 and RESP3. The corpus cannot carry cursor
/// ids from one line to the next, so this reads them here.
#[test]
fn cursor_reads_match_oracle() {
    let oracle = RedisServer::start_search_oracle();
    let pion = PionServer::start(2);
    let cases: &[(&str, &[&str])] = &[
        ("* LOAD 1 @__key WITHCURSOR COUNT 7", &["", "3", "0", "100"]),
        (
            "* LOAD 1 @__key FILTER \"@n % 3 == 0\" WITHCURSOR COUNT 2",
            &["", "1", "5"],
        ),
        (
            "* LOAD 1 @__key SORTBY 2 @n DESC MAX 25 WITHCURSOR COUNT 10",
            &["", ""],
        ),
        (
            "* GROUPBY 1 @g REDUCE COUNT 0 AS c WITHCURSOR COUNT 4",
            &["", ""],
        ),
        ("* LIMIT 0 6 WITHCURSOR COUNT 3", &["", ""]),
        ("* LOAD 1 @__key WITHCURSOR COUNT 5", &["-1"]),
    ];
    for resp in [2, 3] {
        let mut r = Client::connect(oracle.port).expect("connect oracle");
        let mut p = Client::connect(pion.port).expect("connect pion");
        for c in [&mut r, &mut p] {
            c.cmd(&["FLUSHALL"]);
            if resp == 3 {
                c.cmd(&["HELLO", "3"]);
            }
            c.cmd(&[
                "FT.CREATE",
                "cur",
                "PREFIX",
                "1",
                "c:",
                "SCHEMA",
                "g",
                "TAG",
                "SORTABLE",
                "n",
                "NUMERIC",
                "SORTABLE",
            ]);
            for i in 0..40 {
                let (key, g, n) = (format!("c:{i}"), format!("g{}", i % 6), (i % 9).to_string());
                c.cmd(&["HSET", key.as_str(), "g", g.as_str(), "n", n.as_str()]);
            }
        }
        for (query, reads) in cases {
            let mut args = vec!["FT.AGGREGATE".to_string(), "cur".to_string()];
            args.extend(
                pion_server::resp::decode::split_args(query.as_bytes())
                    .expect("query splits")
                    .into_iter()
                    .map(|a| String::from_utf8_lossy(&a).into_owned()),
            );
            let (mut rc, mut rid) = chunk_and_id(&r.cmd(&args));
            let (mut pc, mut pid) = chunk_and_id(&p.cmd(&args));
            let mut step = 0;
            loop {
                assert_eq!(
                    rc.render(),
                    pc.render(),
                    "RESP{resp} {query}: chunk {step} differs"
                );
                assert_eq!(rid == 0, pid == 0, "RESP{resp} {query}: end {step} differs");
                if rid == 0 {
                    break;
                }
                let count = reads.get(step).copied().unwrap_or("");
                let read = |id: i64| {
                    let mut a = vec![
                        "FT.CURSOR".to_string(),
                        "READ".into(),
                        "cur".into(),
                        id.to_string(),
                    ];
                    if !count.is_empty() {
                        a.extend(["COUNT".to_string(), count.to_string()]);
                    }
                    a
                };
                (rc, rid) = chunk_and_id(&r.cmd(&read(rid)));
                (pc, pid) = chunk_and_id(&p.cmd(&read(pid)));
                step += 1;
                assert!(step < 50, "RESP{resp} {query}: the cursor never ends");
            }
        }
        for c in [&mut r, &mut p] {
            c.cmd(&["FT.DROPINDEX", "cur", "DD"]);
        }
    }
}

/// A JSON document's DUMP payload is RedisJSON's byte for byte (the oracle writes RDB
/// version 12 and Pion 10, so the last ten bytes differ), each side restores the
/// other's, and a vector set's payload is refused by the other side with Redis's
/// `Bad data format` (Pion writes a module type of its own, and reads none of Redis
/// 8's vector-set graph).
#[test]
fn dump_payloads_cross_the_oracle() {
    let oracle = RedisServer::start_search_oracle();
    let pion = PionServer::start(1);
    let mut o = Client::connect(oracle.port).expect("oracle");
    let mut p = Client::connect(pion.port).expect("pion");
    let bulk = |v: RespValue| match v {
        RespValue::Bulk(_, Some(b)) => b,
        other => panic!("not a payload: {}", other.render()),
    };
    for doc in [
        r#"{"a":1,"b":[true,null,"x",1.5,1e300,-0.0,12345678901234567890],"c":{"d":"é"}}"#,
        "-42",
        r#""a string long enough to be compressed, compressed, compressed""#,
    ] {
        for c in [&mut o, &mut p] {
            assert_eq!(c.cmd(&["JSON.SET", "doc", "$", doc]).render(), "+OK");
        }
        let (from_o, from_p) = (bulk(o.cmd(&["DUMP", "doc"])), bulk(p.cmd(&["DUMP", "doc"])));
        assert_eq!(
            from_o[..from_o.len() - 10],
            from_p[..from_p.len() - 10],
            "{doc}"
        );
        assert_eq!(&from_p[from_p.len() - 10..from_p.len() - 8], b"\x0a\x00");
        for (c, payload) in [(&mut o, &from_p), (&mut p, &from_o)] {
            let r = c.cmd(&[&b"RESTORE"[..], b"copy", b"0", payload, b"REPLACE"]);
            assert_eq!(r.render(), "+OK", "{doc}");
            assert_eq!(
                c.cmd(&["JSON.GET", "copy"]).render(),
                c.cmd(&["JSON.GET", "doc"]).render()
            );
        }
    }
    for c in [&mut o, &mut p] {
        assert_eq!(
            c.cmd(&["VADD", "vs", "VALUES", "2", "1", "2", "e1"])
                .render(),
            ":1"
        );
    }
    let (from_o, from_p) = (bulk(o.cmd(&["DUMP", "vs"])), bulk(p.cmd(&["DUMP", "vs"])));
    for (c, payload) in [(&mut o, &from_p), (&mut p, &from_o)] {
        let r = c.cmd(&[&b"RESTORE"[..], b"vcopy", b"0", payload]);
        assert_eq!(r.render(), "-ERR Bad data format");
    }
    let r = p.cmd(&[&b"RESTORE"[..], b"vcopy", b"0", &from_p]);
    assert_eq!(r.render(), "+OK");
    assert_eq!(
        p.cmd(&["VEMB", "vcopy", "e1"]).render(),
        p.cmd(&["VEMB", "vs", "e1"]).render()
    );
}

/// Random `FT.SUGADD`/`FT.SUGDEL`/`FT.SUGGET` sequences (ties, `INCR`, negative scores,
/// case and fuzzy matches) give the oracle's replies, order of equal scores included:
/// the trie's shape after any history decides them. Seeded; `PION_DIFF_SEED` replays one.
#[test]
fn random_suggestion_commands_match_oracle() {
    use rand::rngs::SmallRng;
    use rand::{Rng, SeedableRng};
    let oracle = RedisServer::start_search_oracle();
    let pion = PionServer::start(2);
    let seeds: Vec<u64> = match std::env::var("PION_DIFF_SEED") {
        Ok(s) => vec![s.parse().expect("PION_DIFF_SEED must be a number")],
        Err(_) => {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_secs());
            vec![1, 2, now]
        }
    };
    let alphabets = ["abcAB", "abcdefgh", "aéÉßσςΣ"];
    for seed in seeds {
        let mut rng = SmallRng::seed_from_u64(seed);
        let alphabet: Vec<char> = alphabets[(seed % 3) as usize].chars().collect();
        let mut r = Client::connect(oracle.port).expect("connect oracle");
        let mut p = Client::connect(pion.port).expect("connect pion");
        for c in [&mut r, &mut p] {
            c.cmd(&["DEL", "sug:random"]);
        }
        for step in 0..1500 {
            let len = rng.gen_range(1..=5);
            let word: String = (0..len)
                .map(|_| alphabet[rng.gen_range(0..alphabet.len())])
                .collect();
            let mut cmd: Vec<String> = Vec::new();
            let roll: f64 = rng.gen();
            if roll < 0.45 {
                let score = ["1", "2", "3", "0.5", "-1", "4", "10"][rng.gen_range(0..7)];
                cmd.extend(["FT.SUGADD", "sug:random", &word, score].map(String::from));
                if rng.gen_bool(0.3) {
                    cmd.push("INCR".into());
                }
                if rng.gen_bool(0.1) {
                    cmd.extend(["PAYLOAD".to_string(), format!("p{step}")]);
                }
            } else if roll < 0.65 {
                cmd.extend(["FT.SUGDEL", "sug:random", &word].map(String::from));
            } else {
                let prefix: String = word.chars().take(rng.gen_range(0..=3)).collect();
                let max = ["1", "2", "3", "5", "8"][rng.gen_range(0..5)];
                cmd.extend(
                    [
                        "FT.SUGGET",
                        "sug:random",
                        &prefix,
                        "WITHSCORES",
                        "WITHPAYLOADS",
                        "MAX",
                        max,
                    ]
                    .map(String::from),
                );
                if rng.gen_bool(0.4) {
                    cmd.push("FUZZY".into());
                }
            }
            let (want, got) = (r.cmd(&cmd).render(), p.cmd(&cmd).render());
            assert_eq!(
                got, want,
                "seed {seed}, step {step}: {cmd:?} (PION_DIFF_SEED={seed} replays it)"
            );
        }
    }
}

/// `FILTER-EF` bounds a filtered `VSIM` as Redis bounds it: the walk explores at most
/// that many nodes (the entry the first), `COUNT` × 100 by default, and answers with
/// the matches met by then. With one element in two hundred matching, both servers
/// answer nothing at an effort of one, fewer than `COUNT` at a few dozen, and `COUNT`
/// at the default and beyond (their graphs differ, so the elements may too).
#[test]
fn filter_effort_bounds_vsim_as_redis_does() {
    let oracle = RedisServer::start_search_oracle();
    let pion = PionServer::start(2);
    let dim = 16;
    // A fixed pseudo-random sequence: both servers get the same set.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state >> 11) as f64 / (1u64 << 53) as f64 * 2.0 - 1.0
    };
    let mut adds = Vec::new();
    for i in 0..3000 {
        let mut args = vec![
            "VADD".to_string(),
            "fef".into(),
            "VALUES".into(),
            dim.to_string(),
        ];
        args.extend((0..dim).map(|_| format!("{:.6}", next())));
        args.push(format!("e{i}"));
        args.push("SETATTR".into());
        args.push(format!("{{\"g\":{}}}", u8::from(i % 200 == 0)));
        adds.push(args);
    }
    let queries: Vec<Vec<String>> = (0..8)
        .map(|_| (0..dim).map(|_| format!("{:.6}", next())).collect())
        .collect();
    for port in [oracle.port, pion.port] {
        let mut c = Client::connect(port).expect("connect");
        c.cmd(&["DEL", "fef"]);
        for args in &adds {
            let reply = c.cmd(args);
            assert!(!reply.is_error(), "{port}: {}", reply.render());
        }
        for q in &queries {
            let found = |c: &mut Client, effort: Option<&str>| -> usize {
                let mut args = vec!["VSIM", "fef", "VALUES", "16"];
                args.extend(q.iter().map(String::as_str));
                args.extend(["COUNT", "10", "FILTER", ".g == 1"]);
                if let Some(e) = effort {
                    args.extend(["FILTER-EF", e]);
                }
                match c.cmd(&args) {
                    RespValue::Agg(_, Some(items)) => items.len(),
                    other => panic!("{port}: {}", other.render()),
                }
            };
            assert!(found(&mut c, Some("1")) <= 1, "{port}: effort 1");
            assert!(found(&mut c, Some("20")) < 10, "{port}: effort 20");
            assert_eq!(found(&mut c, None), 10, "{port}: default effort");
            assert_eq!(found(&mut c, Some("100000")), 10, "{port}: effort 100000");
        }
        let zero = c.cmd(&["VSIM", "fef", "ELE", "e0", "FILTER", ".g", "FILTER-EF", "0"]);
        assert_eq!(zero.render(), "-ERR invalid FILTER-EF", "{port}");
    }
}
