//! An INT8 graph that keeps its vectors as given (`exact_rows`): exact distances and
//! recall, the rows' persistence (and images written before them), and filters given
//! as label bitmaps, answered by a scan when they pass few vectors.

use super::tests::{brute, hnsw_params, random_vectors};
use super::*;

fn exact_params(dim: usize, metric: Metric) -> IndexParams {
    let mut p = hnsw_params(dim, metric, Quantization::Int8);
    p.exact_rows = true;
    p
}

fn built(vs: &[Vec<f32>], p: IndexParams) -> VectorIndex {
    let idx = VectorIndex::new(p);
    for (i, v) in vs.iter().enumerate() {
        idx.upsert(i as u64, v).expect("right dimension");
    }
    idx.optimize();
    idx
}

fn with_ef(ef: usize) -> SearchOptions<'static> {
    SearchOptions {
        ef: Some(ef),
        ..SearchOptions::default()
    }
}

#[test]
fn exact_rows_give_exact_distances_and_f32_recall() {
    for metric in [Metric::L2, Metric::Cosine, Metric::Ip] {
        let vs = random_vectors(41, 2000, 32);
        let idx = built(&vs, exact_params(32, metric));
        assert!(idx.exact_distances());
        let plain = built(&vs, hnsw_params(32, metric, Quantization::Int8));
        assert!(!plain.exact_distances());
        let all: Vec<(u64, Vec<f32>)> = vs
            .iter()
            .cloned()
            .enumerate()
            .map(|(i, v)| (i as u64, v))
            .collect();
        let queries = random_vectors(42, 50, 32);
        let mut hits = 0;
        for q in &queries {
            let got = idx.search(q, 10, &with_ef(64));
            for n in &got {
                // Bit for bit the distance a caller computes from the vector it stored.
                assert_eq!(
                    n.distance,
                    metric.distance(q, &vs[n.label as usize]),
                    "{metric:?}"
                );
            }
            let want = brute(&all, q, 10, metric);
            hits += got.iter().filter(|n| want.contains(&n.label)).count();
        }
        let r = hits as f64 / (10 * queries.len()) as f64;
        assert!(r >= 0.95, "{metric:?}: recall {r}");
        // A large k re-ranks a margin capped below k: every answer is still exact,
        // in order, with the recall of the small k.
        let mut hits = 0;
        for q in &queries[..10] {
            let got = idx.search(q, 100, &with_ef(200));
            assert_eq!(got.len(), 100);
            assert!(got.windows(2).all(|w| w[0].distance <= w[1].distance));
            for n in &got {
                assert_eq!(n.distance, metric.distance(q, &vs[n.label as usize]));
            }
            let want = brute(&all, q, 100, metric);
            hits += got.iter().filter(|n| want.contains(&n.label)).count();
        }
        let r = hits as f64 / 1000.0;
        assert!(r >= 0.95, "{metric:?}: recall@100 {r}");
        // The stored vector comes back as given, not dequantised.
        assert_eq!(idx.get(5), Some(vs[5].clone()));
        assert!(idx.stats().memory_bytes > plain.stats().memory_bytes + 2000 * 32 * 4 / 2);
    }
}

#[test]
fn exact_rows_survive_a_round_trip_and_old_images_still_load() {
    let vs = random_vectors(43, 500, 24);
    let idx = built(&vs, exact_params(24, Metric::Cosine));
    idx.upsert(9000, &vs[3]).expect("right dimension"); // one row in the pending tail
    let mut image = Vec::new();
    idx.write_to(&mut image);
    let back = VectorIndex::read_from(&image).expect("reads back");
    assert!(back.exact_distances());
    for q in random_vectors(44, 20, 24) {
        assert_eq!(
            back.search(&q, 5, &with_ef(40)),
            idx.search(&q, 5, &with_ef(40))
        );
    }
    // The image of an index without exact rows, rewritten as version 1 (no flag
    // byte), loads as an index without them.
    let plain = built(&vs, hnsw_params(24, Metric::Cosine, Quantization::Int8));
    let mut v2 = Vec::new();
    plain.write_to(&mut v2);
    let flag_at = 8 + 4 + 4 + 3;
    assert_eq!(v2[flag_at], 0);
    let mut v1 = v2[..v2.len() - 4].to_vec();
    v1[8..12].copy_from_slice(&1u32.to_le_bytes());
    v1.remove(flag_at);
    let crc = crc32c::crc32c(&v1);
    v1.extend_from_slice(&crc.to_le_bytes());
    let old = VectorIndex::read_from(&v1).expect("version 1 reads");
    assert!(!old.exact_distances());
    let q = &vs[17];
    assert_eq!(
        old.search(q, 3, &with_ef(40)),
        plain.search(q, 3, &with_ef(40))
    );
    // A flag on an index that cannot keep rows is corrupt input.
    let mut bad = v2.clone();
    bad[flag_at] = 7;
    let n = bad.len();
    let crc = crc32c::crc32c(&bad[..n - 4]);
    bad[n - 4..].copy_from_slice(&crc.to_le_bytes());
    assert!(VectorIndex::read_from(&bad).is_err());
}

#[test]
fn label_bitmaps_filter_and_few_passing_labels_are_scanned_exhaustively() {
    let vs = random_vectors(45, 3000, 16);
    for p in [
        exact_params(16, Metric::L2),
        hnsw_params(16, Metric::L2, Quantization::Int8),
    ] {
        let idx = built(&vs, p);
        // Every 50th label: 2 % of the index, answered by a scan of every code.
        let mut bits = vec![0u64; 3000 / 64 + 1];
        let chosen: Vec<(u64, Vec<f32>)> = (0..3000u64)
            .step_by(50)
            .map(|l| {
                bits[(l / 64) as usize] |= 1 << (l % 64);
                (l, vs[l as usize].clone())
            })
            .collect();
        for q in random_vectors(46, 10, 16) {
            let opts = SearchOptions {
                ef: Some(10),
                filter_bits: Some(LabelBits(&bits)),
                filter_passes: Some(chosen.len()),
                ..SearchOptions::default()
            };
            let got = idx.search(&q, 5, &opts);
            assert!(got.iter().all(|n| n.label % 50 == 0));
            let want = brute(&chosen, &q, 5, Metric::L2);
            // A scan misses only what the codes' estimates misorder at the edge.
            let hits = got.iter().filter(|n| want.contains(&n.label)).count();
            assert!(hits >= 4, "scan found {hits} of the 5 nearest");
            // The same filter as a function, walked: the same labels pass.
            let by_fn = |l: u64| l.is_multiple_of(50);
            let walked = idx.search(
                &q,
                5,
                &SearchOptions {
                    ef: Some(200),
                    filter: Some(&by_fn),
                    ..SearchOptions::default()
                },
            );
            assert!(walked.iter().all(|n| n.label % 50 == 0) && walked.len() == 5);
        }
        // Labels past the bitmap's end do not pass.
        assert!(!LabelBits(&bits).contains(1 << 40));
        // A removed label is never returned by the scan, in the first word of slots
        // or in the last, part-filled one (3,000 slots are 46 words and 56 slots),
        // even to a query equal to its vector.
        for gone in [0u64, 2950] {
            assert!(idx.remove(gone));
            let opts = SearchOptions {
                ef: Some(10),
                filter_bits: Some(LabelBits(&bits)),
                filter_passes: Some(chosen.len()),
                ..SearchOptions::default()
            };
            let got = idx.search(&vs[gone as usize], 5, &opts);
            assert_eq!(got.len(), 5);
            assert!(got.iter().all(|n| n.label % 50 == 0 && n.label != gone));
        }
        let last = idx.search(
            &vs[2900],
            1,
            &SearchOptions {
                ef: Some(10),
                filter_bits: Some(LabelBits(&bits)),
                filter_passes: Some(chosen.len()),
                ..SearchOptions::default()
            },
        );
        assert_eq!(last[0].label, 2900, "a slot of the last word is scanned");
    }
}

#[test]
fn search_among_many_labels_ranks_by_code_and_answers_exact_distances() {
    for metric in [Metric::L2, Metric::Cosine, Metric::Ip] {
        let vs = random_vectors(45, 3000, 24);
        let idx = built(&vs, exact_params(24, metric));
        // Every third label, plus a few written after the build (still in the tail).
        let extra = random_vectors(46, 20, 24);
        for (i, v) in extra.iter().enumerate() {
            idx.upsert(3000 + i as u64, v).expect("right dimension");
        }
        let stored = |l: u64| match l {
            l if l < 3000 => &vs[l as usize],
            l => &extra[(l - 3000) as usize],
        };
        let labels: Vec<u64> = (0..3020).filter(|l| l % 3 == 0).collect();
        let among: Vec<(u64, Vec<f32>)> = labels.iter().map(|&l| (l, stored(l).clone())).collect();
        let queries = random_vectors(47, 40, 24);
        let mut hits = 0;
        for q in &queries {
            let got = idx.search_among(q, 10, &labels);
            assert_eq!(got.len(), 10);
            assert!(got.windows(2).all(|w| w[0].distance <= w[1].distance));
            for n in &got {
                assert_eq!(n.label % 3, 0);
                assert_eq!(
                    n.distance,
                    metric.distance(q, stored(n.label)),
                    "{metric:?}"
                );
            }
            let want = brute(&among, q, 10, metric);
            hits += got.iter().filter(|n| want.contains(&n.label)).count();
        }
        assert!(hits >= 396, "{metric:?}: {hits}/400");
    }
}
