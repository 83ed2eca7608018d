//! Vector kernels and search: int8 dot product at 384 dimensions (the one the index
//! uses, simsimd's, and a plain Rust loop), f32 dot, the exact COSINE distance of a
//! prepared query (16 lanes, over f32 and over a document's little-endian bytes)
//! against the one-sum loop, and k-nearest search on a small seeded HNSW index, with
//! and without exact rows.
#![allow(missing_docs)] // criterion_group! and criterion_main! generate undocumented items

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use pion_benches::values;
use pion_core::vector::{
    quant, Algorithm, ExactQuery, IndexParams, Metric, SearchOptions, VectorIndex,
};

fn kernels(c: &mut Criterion) {
    let (a, b) = (values(1, 384), values(2, 384));
    let (mut ca, mut cb) = (vec![0i8; 384], vec![0i8; 384]);
    quant::quantize_i8(&a, &mut ca);
    quant::quantize_i8(&b, &mut cb);
    c.bench_function("dot_i8_384", |bch| {
        bch.iter(|| quant::dot_i8(black_box(&ca), black_box(&cb)))
    });
    c.bench_function("dot_i8_384_simsimd", |bch| {
        bch.iter(|| quant::dot_i8_simsimd(black_box(&ca), black_box(&cb)))
    });
    c.bench_function("dot_i8_384_scalar", |bch| {
        bch.iter(|| quant::dot_i8_scalar(black_box(&ca), black_box(&cb)))
    });
    c.bench_function("dot_f32_384_simsimd", |bch| {
        bch.iter(|| quant::dot_f32(black_box(&a), black_box(&b)))
    });
    c.bench_function("dot_f32_384_scalar", |bch| {
        bch.iter(|| pion_core::vector::dot(black_box(&a), black_box(&b)))
    });
    let exact = ExactQuery::new(Metric::Cosine, &a);
    let stored: Vec<u8> = b.iter().flat_map(|x| x.to_le_bytes()).collect();
    c.bench_function("cosine_384_exact_query", |bch| {
        bch.iter(|| exact.distance(black_box(&b)))
    });
    c.bench_function("cosine_384_exact_query_le_bytes", |bch| {
        bch.iter(|| exact.distance_le(black_box(&stored)))
    });
    c.bench_function("cosine_384_one_sum_loop", |bch| {
        bch.iter(|| {
            let (x, y) = (black_box(&a), black_box(&b));
            let (nx, ny) = (
                pion_core::vector::dot(x, x).sqrt(),
                pion_core::vector::dot(y, y).sqrt(),
            );
            1.0 - pion_core::vector::dot(x, y) / (nx * ny)
        })
    });
}

fn search(c: &mut Criterion) {
    let (n, dim) = (10_000, 128);
    let data = values(3, n * dim);
    let idx = VectorIndex::new(IndexParams::new(dim, Metric::Cosine, Algorithm::Hnsw));
    for (i, v) in data.chunks_exact(dim).enumerate() {
        idx.upsert(i as u64, v).expect("right dimension");
    }
    idx.optimize();
    let queries = values(4, 100 * dim);
    let mut i = 0;
    let opts = SearchOptions {
        ef: Some(64),
        ..SearchOptions::default()
    };
    c.bench_function("hnsw_int8_search_10k_128d_k10_ef64", |bch| {
        bch.iter(|| {
            i = (i + 1) % 100;
            idx.search(&queries[i * dim..(i + 1) * dim], 10, &opts)
        })
    });
    let mut p = IndexParams::new(dim, Metric::Cosine, Algorithm::Hnsw);
    p.exact_rows = true;
    let exact = VectorIndex::new(p);
    for (i, v) in data.chunks_exact(dim).enumerate() {
        exact.upsert(i as u64, v).expect("right dimension");
    }
    exact.optimize();
    c.bench_function("hnsw_int8_exact_rows_search_10k_128d_k10_ef64", |bch| {
        bch.iter(|| {
            i = (i + 1) % 100;
            exact.search(&queries[i * dim..(i + 1) * dim], 10, &opts)
        })
    });
}

criterion_group!(benches, kernels, search);
criterion_main!(benches);
