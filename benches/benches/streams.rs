//! Streams at a million entries: `XADD` with an explicit id at the end of the
//! stream, and `XRANGE` of 100 entries starting at a random id, through the command
//! table (what a request costs once decoded), single-threaded.
#![allow(missing_docs)] // criterion_group! and criterion_main! generate undocumented items

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use pion_core::{Engine, EngineOptions};

const ENTRIES: u64 = 1_000_000;

fn bench_streams(c: &mut Criterion) {
    let engine = Engine::in_memory(EngineOptions::default());
    let mut session = engine.session();
    for i in 1..=ENTRIES {
        let id = format!("{i}-0").into_bytes();
        session.execute(&[&b"XADD"[..], b"s", &id, b"field", b"value-0123456789"]);
    }
    let mut g = c.benchmark_group("streams");
    g.throughput(Throughput::Elements(1));
    let mut next = ENTRIES;
    g.bench_function("xadd_1m", |b| {
        b.iter(|| {
            next += 1;
            let argv = vec![
                b"XADD".to_vec(),
                b"s".to_vec(),
                format!("{next}-0").into_bytes(),
                b"field".to_vec(),
                b"value-0123456789".to_vec(),
            ];
            std::hint::black_box(session.execute_argv(&argv));
        })
    });
    let mut at = 0u64;
    g.bench_function("xrange_100_of_1m", |b| {
        b.iter(|| {
            at = (at + 7919) % (ENTRIES - 100);
            let argv = vec![
                b"XRANGE".to_vec(),
                b"s".to_vec(),
                format!("{}", at + 1).into_bytes(),
                b"+".to_vec(),
                b"COUNT".to_vec(),
                b"100".to_vec(),
            ];
            std::hint::black_box(session.execute_argv(&argv));
        })
    });
    g.finish();
}

criterion_group!(benches, bench_streams);
criterion_main!(benches);
