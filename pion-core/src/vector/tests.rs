//! Tests of the index against brute force on seeded data.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::*;

fn random_vectors(seed: u64, n: usize, dim: usize) -> Vec<Vec<f32>> {
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
            ..Default::default()
        },
    );
    assert!(filtered.iter().all(|n| n.label % 2 == 0));
    assert_eq!(filtered.len(), 10);
    assert_eq!(
        idx.upsert(1, &[1.0]),
        Err(VectorError::DimensionMismatch {
            expected: 8,
            got: 1
        })
    );
}
