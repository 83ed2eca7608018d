//! `AI.EMBED` and `AI.SEMANTIC_CACHE` against a real `pion-server` with the model
//! `PION_EMBED_MODEL` names (the test command installs all-MiniLM-L6-v2): a paraphrase
//! hits and an unrelated prompt misses at the default threshold, scopes and TTLs keep
//! entries apart, the cache is a vector set, and it survives SIGKILL through the log
//! (replayed without embedding anything). Without a model the commands say so, and a
//! broken model folder stops the start-up.

use std::path::PathBuf;

use pion_tests::{temp_dir, Client, PionProcess, RespValue};

fn model_dir() -> Option<String> {
    let dir = PathBuf::from(std::env::var_os("PION_EMBED_MODEL")?);
    dir.join("model.safetensors")
        .is_file()
        .then(|| dir.to_string_lossy().into_owned())
}

fn show(v: &RespValue) -> String {
    v.render()
}

fn hit(c: &mut Client, args: &[&str]) -> Option<(String, f64)> {
    match c.cmd(args) {
        RespValue::Agg(b'*', Some(items)) if items.len() == 2 => {
            let RespValue::Bulk(_, Some(resp)) = &items[0] else {
                panic!("response: {}", show(&items[0]));
            };
            let RespValue::Bulk(_, Some(sim)) = &items[1] else {
                panic!("similarity: {}", show(&items[1]));
            };
            Some((
                String::from_utf8_lossy(resp).into_owned(),
                String::from_utf8_lossy(sim).parse().expect("a double"),
            ))
        }
        RespValue::Bulk(_, None) => None,
        other => panic!("GET replied {}", show(&other)),
    }
}

/// `SET qa prompt response extra…`, its reply.
fn store(c: &mut Client, prompt: &str, response: &str, extra: &[&str]) -> String {
    let mut args = vec!["AI.SEMANTIC_CACHE", "SET", "qa", prompt, response];
    args.extend_from_slice(extra);
    show(&c.cmd(&args))
}

/// The response `GET qa prompt extra…` finds.
fn answer(c: &mut Client, prompt: &str, extra: &[&str]) -> Option<String> {
    let mut args = vec!["AI.SEMANTIC_CACHE", "GET", "qa", prompt];
    args.extend_from_slice(extra);
    hit(c, &args).map(|h| h.0)
}

#[test]
fn the_semantic_cache_answers_paraphrases_and_survives_sigkill() {
    let Some(model) = model_dir() else {
        println!("PION_EMBED_MODEL names no model folder: the semantic cache test is skipped");
        return;
    };
    let dir = temp_dir("semantic-cache");
    let mut server = PionProcess::start(dir.path(), &["--embed-model", &model]);
    let mut c = Client::connect(server.port()).expect("connect");
    assert_eq!(store(&mut c, "capital of France?", "Paris", &[]), "+OK");
    store(
        &mut c,
        "How do I reverse a vector in Rust?",
        "v.reverse()",
        &[],
    );
    let (resp, sim) = hit(
        &mut c,
        &[
            "AI.SEMANTIC_CACHE",
            "GET",
            "qa",
            "What is the capital of France?",
        ],
    )
    .expect("a paraphrase hits");
    assert_eq!(resp, "Paris");
    assert!(sim > 0.9 && sim < 1.0, "{sim}");
    assert_eq!(
        hit(
            &mut c,
            &[
                "AI.SEMANTIC_CACHE",
                "GET",
                "qa",
                "Best pizza toppings for a party"
            ]
        ),
        None,
        "an unrelated prompt misses"
    );
    // A lower threshold lets a weaker match through; scopes keep entries apart.
    assert!(hit(
        &mut c,
        &[
            "AI.SEMANTIC_CACHE",
            "GET",
            "qa",
            "France",
            "THRESHOLD",
            "0.3"
        ]
    )
    .is_some());
    store(
        &mut c,
        "capital of France?",
        "Paris (user 7)",
        &["SCOPE", "user:7"],
    );
    assert_eq!(
        answer(&mut c, "capital of France?", &["SCOPE", "user:7"]),
        Some("Paris (user 7)".into())
    );
    assert_eq!(
        answer(&mut c, "capital of France?", &[]),
        Some("Paris".into())
    );
    // A TTL: gone once it passes.
    store(&mut c, "the weather today", "sunny", &["TTL", "1"]);
    assert!(hit(
        &mut c,
        &["AI.SEMANTIC_CACHE", "GET", "qa", "the weather today"]
    )
    .is_some());
    std::thread::sleep(std::time::Duration::from_millis(1100));
    assert_eq!(
        hit(
            &mut c,
            &["AI.SEMANTIC_CACHE", "GET", "qa", "the weather today"]
        ),
        None
    );
    // The cache is a vector set of the model's dimensions.
    assert_eq!(show(&c.cmd(&["TYPE", "qa"])), "+vectorset");
    assert_eq!(show(&c.cmd(&["VDIM", "qa"])), ":384");
    assert_eq!(show(&c.cmd(&["VCARD", "qa"])), ":4");
    // AI.EMBED gives the same unit vectors, one per text.
    match c.cmd(&["AI.EMBED", "hello", "world"]) {
        RespValue::Agg(b'*', Some(items)) => {
            assert_eq!(items.len(), 2);
            for item in items {
                let RespValue::Bulk(_, Some(b)) = item else {
                    panic!("a blob");
                };
                assert_eq!(b.len(), 384 * 4);
            }
        }
        other => panic!("AI.EMBED replied {}", show(&other)),
    }
    // Inside MULTI the embedding still happens.
    assert_eq!(show(&c.cmd(&["MULTI"])), "+OK");
    c.cmd(&[
        "AI.SEMANTIC_CACHE",
        "SET",
        "qa",
        "largest planet",
        "Jupiter",
    ]);
    c.cmd(&[
        "AI.SEMANTIC_CACHE",
        "GET",
        "qa",
        "Which planet is the biggest?",
        "THRESHOLD",
        "0.5",
    ]);
    let exec = show(&c.cmd(&["EXEC"]));
    assert!(exec.contains("Jupiter"), "{exec}");
    // Errors, each naming what is wrong.
    for (args, want) in [
        (
            vec!["AI.SEMANTIC_CACHE", "GET", "qa", "x", "THRESHOLD", "2"],
            "THRESHOLD must be a cosine similarity",
        ),
        (
            vec!["AI.SEMANTIC_CACHE", "SET", "qa", "x", "y", "TTL", "0"],
            "TTL must be a positive number",
        ),
        (
            vec!["AI.SEMANTIC_CACHE", "SET", "qa", "x", "y", "BOGUS", "1"],
            "syntax error",
        ),
        (
            vec!["AI.SEMANTIC_CACHE", "SET", "qa", "x"],
            "wrong number of arguments",
        ),
    ] {
        let got = show(&c.cmd(&args));
        assert!(got.contains(want), "{args:?}: {got}");
    }
    c.cmd(&["SET", "plain", "v"]);
    assert!(show(&c.cmd(&["AI.SEMANTIC_CACHE", "GET", "plain", "x"])).contains("WRONGTYPE"));
    c.cmd(&["VADD", "q8", "VALUES", "2", "1", "0", "e"]);
    assert!(
        show(&c.cmd(&["AI.SEMANTIC_CACHE", "SET", "q8", "x", "y"])).contains("holds 2-dimensional")
    );

    // SIGKILL: the log replays the entries (as VADD, with their vectors): the three
    // from before, the planet, and not the expired one (the planet's SET purged it).
    server.kill9();
    let server = PionProcess::start(dir.path(), &["--embed-model", &model]);
    let mut c = Client::connect(server.port()).expect("connect");
    assert_eq!(show(&c.cmd(&["VCARD", "qa"])), ":4");
    assert_eq!(
        answer(&mut c, "What's France's capital city?", &[]),
        Some("Paris".into())
    );
    assert_eq!(
        show(&c.cmd(&["AI.SEMANTIC_CACHE", "DEL", "qa", "capital of France?"])),
        ":1"
    );
    assert_eq!(show(&c.cmd(&["AI.SEMANTIC_CACHE", "FLUSH", "qa"])), ":3");
    assert_eq!(show(&c.cmd(&["EXISTS", "qa"])), ":0");
    let info = show(&c.cmd(&["INFO", "ai"]));
    assert!(info.contains("semantic_cache_hits:1"), "{info}");
}

#[test]
fn without_a_model_the_ai_commands_say_so() {
    let dir = temp_dir("semantic-cache-none");
    let server = PionProcess::start(dir.path(), &["--wal", "off"]);
    let mut c = Client::connect(server.port()).expect("connect");
    for args in [
        vec!["AI.EMBED", "hello"],
        vec!["AI.SEMANTIC_CACHE", "SET", "k", "p", "r"],
        vec!["AI.SEMANTIC_CACHE", "GET", "k", "p"],
    ] {
        let got = show(&c.cmd(&args));
        assert!(
            got.contains("no embedding model is loaded (start the server with --embed-model DIR)"),
            "{args:?}: {got}"
        );
    }
    assert_eq!(show(&c.cmd(&["EXISTS", "k"])), ":0");
}

#[test]
fn a_broken_model_folder_stops_the_start_up() {
    let dir = temp_dir("semantic-cache-broken");
    let model = dir.path().join("model");
    std::fs::create_dir_all(&model).expect("dir");
    let model = model.to_string_lossy().into_owned();
    let err = PionProcess::try_start(dir.path(), &["--embed-model", &model])
        .err()
        .expect("refuses to start");
    assert!(err.contains("config.json is missing"), "{err}");
}
