//! The hottest keyspace paths: GET and SET through the command table (what a network
//! request costs once decoded), single-threaded.
#![allow(missing_docs)] // criterion_group! and criterion_main! generate undocumented items

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use pion_core::{Engine, EngineOptions};

fn bench_get_set(c: &mut Criterion) {
    let engine = Engine::in_memory(EngineOptions::default());
    let mut session = engine.session();
    let keys: Vec<Vec<u8>> = (0..100_000)
        .map(|i| format!("key:{i:08}").into_bytes())
        .collect();
    for k in &keys {
        session.execute(&[&b"SET"[..], k, b"xyz"]);
    }
    let mut g = c.benchmark_group("keyspace");
    g.throughput(Throughput::Elements(1));
    let mut i = 0usize;
    g.bench_function("set_existing", |b| {
        b.iter(|| {
            i = (i + 7919) % keys.len();
            let argv = vec![b"SET".to_vec(), keys[i].clone(), b"abc".to_vec()];
            std::hint::black_box(session.execute_argv(&argv));
        })
    });
    g.bench_function("get_hit", |b| {
        b.iter(|| {
            i = (i + 7919) % keys.len();
            let argv = vec![b"GET".to_vec(), keys[i].clone()];
            std::hint::black_box(session.execute_argv(&argv));
        })
    });
    g.finish();
}

criterion_group!(benches, bench_get_set);
criterion_main!(benches);
