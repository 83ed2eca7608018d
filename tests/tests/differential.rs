//! The differential suite: every corpus file is replayed against a real redis-server
//! and against Pion (at 1 and 4 worker threads, in RESP2 and RESP3), and the replies are
//! compared as each line asks.

use pion_tests::differential::{corpus_files, replay};
use pion_tests::{PionServer, RedisServer};

fn run_suite(threads: usize) {
    let redis = RedisServer::start();
    let pion = PionServer::start(threads);
    let mut failures = Vec::new();
    let files = corpus_files("corpus");
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
