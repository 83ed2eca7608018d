//! Tests of the index against brute force on seeded data: metrics, FLAT, HNSW recall on
//! uniform and clustered data for every metric and storage, and the quantiser. Helpers
//! here are shared with `tests_hnsw`.

use proptest::prelude::*;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::*;

/// `n` vectors with components uniform in [-1, 1).
pub(super) fn random_vectors(seed: u64, n: usize, dim: usize) -> Vec<Vec<f32>> {
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..n)
        .map(|_| (0..dim).map(|_| rng.gen_range(-1.0f32..1.0)).collect())
        .collect()
}

#[test]
fn metrics_follow_redisearch_conventions() {
    let (a, b) = ([1.0f32, 0.0], [0.0f32, 2.0]);
    assert_eq!(Metric::L2.distance(&a, &b), 5.0);
    assert_eq!(Metric::Ip.distance(&a, &b), 1.0);
    assert!((Metric::Cosine.distance(&a, &[2.0, 0.0])).abs() < 1e-7);
}

#[test]
fn flat_index_is_exact_and_handles_replace_and_remove() {
    let seed = 7;
    println!("seed {seed}");
    let vs = random_vectors(seed, 300, 8);
    let idx = VectorIndex::new(IndexParams::new(8, Metric::L2, Algorithm::Flat));
    for (i, v) in vs.iter().enumerate() {
        idx.upsert(i as u64, v).expect("right dimension");
    }
    assert!(idx.remove(3));
    assert!(!idx.remove(3));
    idx.upsert(5, &vs[0]).expect("right dimension");
    assert_eq!(idx.len(), 299);
    let got = idx.search(&vs[0], 2, &SearchOptions::default());
    let labels: Vec<u64> = got.iter().map(|n| n.label).collect();
    assert_eq!(labels, vec![0, 5]);
    let even = |l: u64| l.is_multiple_of(2);
    let filtered = idx.search(
        &vs[1],
        10,
        &SearchOptions {
            filter: Some(&even),
            filter_bits: None,
            filter_passes: None,
            ..Default::default()
        },
    );
    assert!(filtered.iter().all(|n| n.label.is_multiple_of(2)));
    assert_eq!(filtered.len(), 10);
    assert_eq!(
        idx.upsert(1, &[1.0]),
        Err(VectorError::DimensionMismatch {
            expected: 8,
            got: 1
        })
    );
}

/// `n` vectors around `clusters` random centres in [-1, 1) (each component ±0.3).
pub(super) fn clustered_vectors(seed: u64, n: usize, dim: usize, clusters: usize) -> Vec<Vec<f32>> {
    let centres = random_vectors(seed ^ 0xc1, clusters, dim);
    let mut rng = SmallRng::seed_from_u64(seed);
    (0..n)
        .map(|i| {
            centres[i % clusters]
                .iter()
                .map(|c| c + rng.gen_range(-0.3f32..0.3))
                .collect()
        })
        .collect()
}

/// HNSW parameters small enough for debug-mode tests.
pub(super) fn hnsw_params(dim: usize, metric: Metric, q: Quantization) -> IndexParams {
    let mut p = IndexParams::new(dim, metric, Algorithm::Hnsw);
    p.quantization = q;
    p.m = 12;
    p.ef_construction = 64;
    p
}

/// Exact top-k labels by the metric.
pub(super) fn brute(vs: &[(u64, Vec<f32>)], q: &[f32], k: usize, metric: Metric) -> Vec<u64> {
    let all = vs
        .iter()
        .map(|(l, v)| Neighbor {
            label: *l,
            distance: metric.distance(q, v),
        })
        .collect();
    top_k(all, k).into_iter().map(|n| n.label).collect()
}

/// Mean recall@k of `idx` over `queries` against brute force over `vs`.
pub(super) fn recall(
    idx: &VectorIndex,
    vs: &[(u64, Vec<f32>)],
    queries: &[Vec<f32>],
    k: usize,
    ef: usize,
) -> f64 {
    let metric = idx.params().metric;
    let mut hit = 0usize;
    for q in queries {
        let truth = brute(vs, q, k, metric);
        let got = idx.search(
            q,
            k,
            &SearchOptions {
                ef: Some(ef),
                ..Default::default()
            },
        );
        hit += got.iter().filter(|n| truth.contains(&n.label)).count();
    }
    hit as f64 / (k * queries.len()) as f64
}

fn build(vs: &[Vec<f32>], p: IndexParams) -> (VectorIndex, Vec<(u64, Vec<f32>)>) {
    let idx = VectorIndex::new(p);
    let labelled: Vec<(u64, Vec<f32>)> = vs
        .iter()
        .enumerate()
        .map(|(i, v)| (i as u64 * 3 + 1, v.clone()))
        .collect();
    for (l, v) in &labelled {
        idx.upsert(*l, v).expect("right dimension");
    }
    idx.optimize();
    assert_eq!(idx.pending(), 0);
    assert_eq!(idx.len(), vs.len());
    (idx, labelled)
}

#[test]
fn hnsw_recall_uniform_every_metric_and_storage() {
    let seed = 11;
    println!("seed {seed}");
    let vs = random_vectors(seed, 2000, 32);
    let queries = random_vectors(seed + 1, 40, 32);
    for metric in [Metric::L2, Metric::Cosine, Metric::Ip] {
        for q in [Quantization::None, Quantization::Int8] {
            let (idx, labelled) = build(&vs, hnsw_params(32, metric, q));
            let r = recall(&idx, &labelled, &queries, 10, 64);
            println!("{metric:?} {q:?} recall@10 {r:.3}");
            let min = if q == Quantization::None { 0.95 } else { 0.9 };
            assert!(r >= min, "{metric:?} {q:?} recall {r}");
        }
    }
}

#[test]
fn hnsw_recall_clustered() {
    let seed = 23;
    println!("seed {seed}");
    let vs = clustered_vectors(seed, 3000, 48, 30);
    let queries = clustered_vectors(seed + 1, 40, 48, 30);
    for q in [Quantization::None, Quantization::Int8] {
        let mut p = hnsw_params(48, Metric::L2, q);
        (p.m, p.ef_construction) = (16, 100);
        let (idx, labelled) = build(&vs, p);
        let r = recall(&idx, &labelled, &queries, 10, 128);
        println!("clustered {q:?} recall@10 {r:.3}");
        assert!(r >= 0.95, "{q:?} recall {r}");
    }
}

#[test]
fn binary_codes_find_the_same_vector() {
    let seed = 5;
    println!("seed {seed}");
    let vs = random_vectors(seed, 500, 128);
    let (idx, _) = build(&vs, hnsw_params(128, Metric::Cosine, Quantization::Binary));
    let mut hits = 0;
    for (i, v) in vs.iter().enumerate().take(50) {
        let got = idx.search(
            v,
            1,
            &SearchOptions {
                ef: Some(64),
                ..Default::default()
            },
        );
        hits += usize::from(got[0].label == i as u64 * 3 + 1 && got[0].distance == 0.0);
    }
    assert!(hits >= 48, "{hits}");
    let back = idx.get(1).expect("present");
    assert!(back.iter().all(|x| x.abs() == 1.0));
}

#[test]
fn simsimd_int8_kernel_matches_scalar() {
    // Exercises the FFI kernel (and its unsafe call inside simsimd) on odd lengths too.
    let mut rng = SmallRng::seed_from_u64(3);
    for len in [1usize, 7, 31, 64, 100, 384, 1000] {
        let a: Vec<i8> = (0..len).map(|_| rng.gen_range(-127..=127)).collect();
        let b: Vec<i8> = (0..len).map(|_| rng.gen_range(-127..=127)).collect();
        assert_eq!(
            quant::dot_i8(&a, &b),
            quant::dot_i8_scalar(&a, &b) as f32,
            "len {len}"
        );
        let fa: Vec<f32> = a.iter().map(|&x| x as f32 / 7.0).collect();
        let fb: Vec<f32> = b.iter().map(|&x| x as f32 / 5.0).collect();
        let rel = |x: f32, y: f32| (x - y).abs() <= 1e-3 * (1.0 + y.abs());
        assert!(rel(quant::dot_f32(&fa, &fb), dot(&fa, &fb)));
        assert!(rel(
            quant::l2sq_f32(&fa, &fb),
            Metric::L2.distance(&fa, &fb)
        ));
    }
}

/// A vector with a NaN or an infinite component codes to zeros at scale 0, wherever
/// the bad component sits, as the all-zero vector does.
#[test]
fn int8_codes_of_a_non_finite_vector_are_zero() {
    for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
        for at in [0, 5, 9] {
            let mut v = vec![0.25f32; 10];
            v[at] = bad;
            let mut codes = vec![1i8; 10];
            assert_eq!(quant::quantize_i8(&v, &mut codes), 0.0);
            assert!(codes.iter().all(|&c| c == 0));
        }
    }
    let mut codes = vec![1i8; 4];
    assert_eq!(quant::quantize_i8(&[0.0, -0.0, 0.0, 0.0], &mut codes), 0.0);
    assert!(codes.iter().all(|&c| c == 0));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Every component comes back within half a quantisation step.
    #[test]
    fn int8_dequantisation_error_is_bounded(v in prop::collection::vec(-1000.0f32..1000.0, 1..200)) {
        let mut codes = vec![0i8; v.len()];
        let scale = quant::quantize_i8(&v, &mut codes);
        let back = quant::dequantize_i8(&codes, scale, 1.0);
        let max = v.iter().fold(0f32, |m, x| m.max(x.abs()));
        prop_assert!((scale - max / 127.0).abs() <= 1e-6 * max.max(1.0));
        for (x, y) in v.iter().zip(&back) {
            prop_assert!((x - y).abs() <= scale * 0.5 + 1e-4 * max, "{} vs {}", x, y);
        }
    }

    /// Each code is the nearest integer to `x / scale`, ties to even, as the plain
    /// rounding function gives it, and the largest magnitude codes to ±127.
    #[test]
    fn int8_codes_round_to_nearest(v in prop::collection::vec(-1.0e6f32..1.0e6, 1..300)) {
        let mut codes = vec![0i8; v.len()];
        let scale = quant::quantize_i8(&v, &mut codes);
        let max = v.iter().fold(0f32, |m, x| m.max(x.abs()));
        if max == 0.0 {
            prop_assert_eq!(scale, 0.0);
            prop_assert!(codes.iter().all(|&c| c == 0));
        } else {
            let inv = 1.0 / scale;
            for (x, &c) in v.iter().zip(&codes) {
                let want = (x * inv).clamp(-127.0, 127.0).round_ties_even() as i8;
                prop_assert_eq!(c, want, "{} at scale {}", x, scale);
            }
            prop_assert!(codes.iter().any(|&c| c.unsigned_abs() == 127));
        }
    }

    /// The int8 dot estimate is within the bound implied by the per-component errors.
    #[test]
    fn int8_dot_estimate_is_bounded(
        pair in (1usize..100).prop_flat_map(|n| (
            prop::collection::vec(-1.0f32..1.0, n),
            prop::collection::vec(-1.0f32..1.0, n),
        ))
    ) {
        let (a, b) = pair;
        let (mut ca, mut cb) = (vec![0i8; a.len()], vec![0i8; b.len()]);
        let (sa, sb) = (quant::quantize_i8(&a, &mut ca), quant::quantize_i8(&b, &mut cb));
        let est = sa * sb * quant::dot_i8(&ca, &cb);
        let l1 = |v: &[f32]| v.iter().map(|x| x.abs()).sum::<f32>();
        let bound = 0.5 * (sa * l1(&b) + sb * l1(&a)) + 0.25 * sa * sb * a.len() as f32 + 1e-4;
        prop_assert!((est - dot(&a, &b)).abs() <= bound);
    }
}
