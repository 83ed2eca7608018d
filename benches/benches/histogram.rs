//! The per-command latency histogram: what recording one call costs (every command
//! pays it while `latency-tracking` is on) and what a percentile for
//! `INFO latencystats` costs.
#![allow(missing_docs)] // criterion_group! and criterion_main! generate undocumented items

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use pion_core::monitor::latency_histogram::Histogram;

fn bench_histogram(c: &mut Criterion) {
    let h = Histogram::default();
    let mut g = c.benchmark_group("latency_histogram");
    g.throughput(Throughput::Elements(1));
    let mut ns = 1u64;
    g.bench_function("record", |b| {
        b.iter(|| {
            // A spread of durations from 1 ns to about 1 ms.
            ns = (ns * 7919) % 1_000_003 + 1;
            h.record(std::hint::black_box(ns));
        })
    });
    g.bench_function("p99", |b| {
        b.iter(|| std::hint::black_box(h.value_at_percentile(99.0)))
    });
    g.finish();
}

criterion_group!(benches, bench_histogram);
criterion_main!(benches);
