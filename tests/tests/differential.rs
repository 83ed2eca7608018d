//! The differential suite: every corpus file is replayed against a real redis-server
//! and against Pion (at 1 and 4 worker threads, in RESP2 and RESP3), and the replies are
//! compared as each line asks.

use std::path::PathBuf;

use pion_tests::corpus::{self, Compare, Step};
use pion_tests::{Client, PionServer, RedisServer};

fn corpus_files() -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("corpus");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "txt"))
        .collect();
    files.sort();
    files
}

fn replay(redis: u16, pion: u16, resp: u8, file: &PathBuf, failures: &mut Vec<String>) {
    let text = std::fs::read_to_string(file).expect("corpus file");
    let steps = corpus::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let mut r = Client::connect(redis).expect("connect redis");
    let mut p = Client::connect(pion).expect("connect pion");
    for c in [&mut r, &mut p] {
        c.cmd(&["FLUSHALL"]);
        if resp == 3 {
            c.cmd(&["HELLO", "3"]);
        }
    }
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    for step in steps {
        match step {
            Step::Sleep(ms) => std::thread::sleep(std::time::Duration::from_millis(ms)),
            Step::Command {
                line,
                compare,
                args,
            } => {
                let (rv, rraw) = r
                    .call(&args)
                    .unwrap_or_else(|e| panic!("{name}:{line}: redis: {e}"));
                let (pv, praw) = match p.call(&args) {
                    Ok(x) => x,
                    Err(e) => {
                        failures.push(format!(
                            "{name}:{line} RESP{resp}: pion connection error {e}"
                        ));
                        return;
                    }
                };
                let same = match compare {
                    Compare::Exact => rraw == praw,
                    Compare::Unordered => rv.normalized() == pv.normalized(),
                    Compare::Shape => rv.shape() == pv.shape(),
                    Compare::Skip => true,
                };
                if !same {
                    let cmd: Vec<String> = args
                        .iter()
                        .map(|a| String::from_utf8_lossy(a).into_owned())
                        .collect();
                    failures.push(format!(
                        "{name}:{line} RESP{resp} {:?}\n    redis: {}\n    pion:  {}",
                        cmd.join(" "),
                        rv.render(),
                        pv.render()
                    ));
                }
            }
        }
    }
}

fn run_suite(threads: usize) {
    let redis = RedisServer::start();
    let pion = PionServer::start(threads);
    let mut failures = Vec::new();
    let files = corpus_files();
    assert!(!files.is_empty(), "no corpus files");
    for file in &files {
        for resp in [2, 3] {
            replay(redis.port, pion.port, resp, file, &mut failures);
        }
    }
    if !failures.is_empty() {
        let shown: Vec<&String> = failures.iter().take(60).collect();
        panic!(
            "{} differences from redis-server at --threads {threads}:\n{}",
            failures.len(),
            shown
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
}

#[test]
fn corpus_matches_redis_one_thread() {
    run_suite(1);
}

#[test]
fn corpus_matches_redis_four_threads() {
    run_suite(4);
}
