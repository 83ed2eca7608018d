//! RESP request decoding and reply encoding.
#![allow(missing_docs)] // criterion_group! and criterion_main! generate undocumented items

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use pion_core::Reply;
use pion_server::resp::{decode, encode, Decoded, Limits};

fn pipeline(n: usize) -> Vec<u8> {
    let mut buf = Vec::new();
    for i in 0..n {
        let key = format!("key:{i:08}");
        buf.extend_from_slice(
            format!(
                "*3\r\n$3\r\nSET\r\n${}\r\n{key}\r\n$3\r\nxyz\r\n",
                key.len()
            )
            .as_bytes(),
        );
    }
    buf
}

fn bench_decode(c: &mut Criterion) {
    let buf = pipeline(1000);
    let limits = Limits::default();
    let mut g = c.benchmark_group("resp_decode");
    g.throughput(Throughput::Elements(1000));
    g.bench_function("set_pipeline_1000", |b| {
        b.iter(|| {
            let mut at = 0;
            while let Ok(Decoded::Command(args, used)) = decode(&buf[at..], &limits) {
                at += used;
                std::hint::black_box(args);
            }
        })
    });
    g.finish();
}

fn bench_encode(c: &mut Criterion) {
    let reply = Reply::Array(
        (0..100)
            .map(|i| Reply::bulk(format!("value-{i}")))
            .collect(),
    );
    let mut g = c.benchmark_group("resp_encode");
    g.throughput(Throughput::Elements(100));
    for resp in [2u8, 3] {
        g.bench_function(format!("array_of_100_bulks_resp{resp}"), |b| {
            let mut out = Vec::with_capacity(4096);
            b.iter(|| {
                out.clear();
                encode(&reply, resp, &mut out);
                std::hint::black_box(&out);
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench_decode, bench_encode);
criterion_main!(benches);
