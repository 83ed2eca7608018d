//! The search and vector-set differential suite: every file of `corpus-search/` is
//! replayed against the search oracle (Redis 8 with RediSearch; see
//! `scripts/search-oracle.sh`) and against Pion, at 1 and 4 worker threads, in RESP2
//! and RESP3, and the replies are compared as each line asks.

use pion_tests::differential::{corpus_files, replay};
use pion_tests::{PionServer, RedisServer};

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
