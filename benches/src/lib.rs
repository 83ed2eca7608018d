//! Benchmarks for Pion: criterion micro-benchmarks (`cargo bench -p pion-benches`) and
//! comparison harnesses that run Pion and its anchor side by side
//! (`cargo run --release -p pion-benches --bin redis_compare`). Method and figures are
//! in doc/benchmarks.md.
