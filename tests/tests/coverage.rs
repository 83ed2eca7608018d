//! Every command in the table is exercised by the differential corpus, so a command
//! added without a differential test fails CI.

use std::collections::BTreeSet;
use std::path::PathBuf;

use pion_core::command::table;
use pion_tests::corpus::{self, Step};

/// Commands the corpus cannot run against both servers, and where they are tested.
const EXEMPT: &[(&str, &str)] = &[
    (
        "shutdown",
        "stops the server: tests/python/test_redis_py.py checks clean exit",
    ),
    (
        "quit",
        "closes the connection: pion-server connection tests",
    ),
    ("reset", "tests/auth.rs"),
    (
        "ft.optimize",
        "Pion's own (RediSearch has none): tests/python/test_search_clients.py and the vector index tests",
    ),
    (
        "auth",
        "tests/auth.rs against redis-server with requirepass",
    ),
    (
        "hello",
        "HELLO replies carry the client id; tests/auth.rs compares shapes",
    ),
    (
        "client|kill",
        "acts on other connections: pion-core connection tests",
    ),
    (
        "client|list",
        "lists per-process connection details (skip-compared in connection.txt)",
    ),
    ("client|info", "per-connection details"),
    (
        "client|setinfo",
        "Redis 7.2 command, absent from the 7.0 oracle",
    ),
    (
        "client|no-touch",
        "Redis 7.2 command, absent from the 7.0 oracle",
    ),
    ("client|help", "help text"),
    ("config|help", "help text"),
    (
        "config|resetstat",
        "resets counters: INFO is server specific",
    ),
    ("command|docs", "documentation text differs by design"),
    ("command|list", "lists only what each server implements"),
    ("command|help", "help text"),
    ("command", "lists only what each server implements"),
    (
        "info",
        "server-specific text; tests/python/test_redis_py.py reads fields",
    ),
    ("object|help", "help text"),
    ("memory|help", "help text"),
    // The prompt cache has no Redis counterpart: its commands are tested against the
    // store's own model in pion-core/src/prefix/tests.rs and over the wire in
    // tests/tests/prompt_cache.rs.
    ("kv.register", "Pion-only: prefix tests"),
    ("kv.manifest", "Pion-only: prefix tests"),
    ("kv.namespaces", "Pion-only: prefix tests"),
    ("kv.info", "Pion-only: prefix tests"),
    ("kv.put", "Pion-only: prefix tests"),
    ("kv.match", "Pion-only: prefix tests"),
    ("kv.export", "Pion-only: tests/tests/kv_export.rs"),
    ("kv.blockids", "Pion-only: prefix tests"),
    ("kv.get", "Pion-only: prefix tests"),
    ("kv.mget", "Pion-only: prefix tests, tests/tests/binary_lane.rs"),
    ("kv.del", "Pion-only: prefix tests"),
    ("kv.drop", "Pion-only: prefix tests"),
    (
        "kv.evict",
        "internal: replayed from the log (prefix durability tests)",
    ),
    (
        "kv.putref",
        "internal: replayed from the log (prefix durability tests)",
    ),
    (
        "kv.reloc",
        "internal: replayed from the log (compaction test)",
    ),
    // Attention over a stored prefix: held to attention computed from the stored K/V
    // in pion-core/src/prefix/attend/tests.rs, and to the kernels' f64 references.
    ("attend.view", "Pion-only: pion-core prefix::attend tests"),
    ("attend.query", "Pion-only: pion-core prefix::attend tests"),
    ("attend.drop", "Pion-only: pion-core prefix::attend tests"),
    // Sentence embeddings and the semantic cache: held to sentence-transformers'
    // vectors (embed_model.rs) and driven over the wire (semantic_cache.rs).
    ("ai.embed", "Pion-only: tests/tests/semantic_cache.rs"),
    ("ai.semantic_cache|set", "Pion-only: tests/tests/semantic_cache.rs"),
    ("ai.semantic_cache|get", "Pion-only: tests/tests/semantic_cache.rs"),
    ("ai.semantic_cache|del", "Pion-only: tests/tests/semantic_cache.rs"),
    ("ai.semantic_cache|flush", "Pion-only: tests/tests/semantic_cache.rs"),
    ("ai.semantic_cache|info", "Pion-only: tests/tests/semantic_cache.rs"),
    // Redis 8.4's hybrid search: the 8.2 search oracle lacks it, so its replies are
    // golden ones worked out from the documented fusion.
    (
        "ft.hybrid",
        "Redis 8.4: golden replies in tests/tests/search_hybrid.rs",
    ),
];

/// Commands used by the core corpus and the search (Redis 8) corpus.
fn corpus_commands() -> BTreeSet<String> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut names = BTreeSet::new();
    // The plain corpus runs against redis-server; corpus-search against the search
    // oracle (Redis 8 with RediSearch) for the FT.* and V* commands.
    let entries = ["corpus", "corpus-search"].into_iter().flat_map(|d| {
        std::fs::read_dir(root.join(d))
            .expect("corpus dir")
            .flatten()
    });
    for entry in entries {
        let text = std::fs::read_to_string(entry.path()).expect("corpus file");
        for step in corpus::parse(&text).expect("corpus parses") {
            if let Step::Command { args, .. } | Step::Send { args, .. } = step {
                let name = String::from_utf8_lossy(&args[0]).to_ascii_lowercase();
                if let Some(sub) = args.get(1) {
                    names.insert(format!(
                        "{name}|{}",
                        String::from_utf8_lossy(sub).to_ascii_lowercase()
                    ));
                }
                names.insert(name);
            }
        }
    }
    names
}

#[test]
fn every_command_is_in_the_differential_corpus() {
    let used = corpus_commands();
    let exempt: BTreeSet<&str> = EXEMPT.iter().map(|(n, _)| *n).collect();
    let mut missing = Vec::new();
    for spec in table().all() {
        let runs_alone = !spec.handler_is_container();
        if runs_alone && !used.contains(spec.name) && !exempt.contains(spec.name) {
            missing.push(spec.name.to_string());
        }
        for sub in spec.subcommands {
            let full = format!("{}|{}", spec.name, sub.name);
            if !used.contains(&full) && !exempt.contains(full.as_str()) {
                missing.push(full);
            }
        }
    }
    assert!(
        missing.is_empty(),
        "commands without a differential test: {missing:?}"
    );
}
