//! Behaviour of the HNSW index: the pending tail, concurrent building, churn with
//! repair, filters, range queries, persistence and its robustness, memory use.

use std::sync::atomic::{AtomicBool, Ordering};

use ahash::AHashMap;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::tests::{brute, hnsw_params, random_vectors, recall};
use super::*;

fn opts(ef: usize) -> SearchOptions<'static> {
    SearchOptions {
        ef: Some(ef),
        ..Default::default()
    }
}

#[test]
fn upsert_is_searchable_at_once_and_linking_keeps_answers() {
    let vs = random_vectors(1, 300, 16);
    let idx = VectorIndex::new(hnsw_params(16, Metric::L2, Quantization::Int8));
    for (i, v) in vs.iter().enumerate() {
        idx.upsert(i as u64, v).expect("right dimension");
    }
    assert_eq!(idx.pending(), 300);
    assert_eq!(idx.stats().pending, 300);
    // The tail is exact.
    let got = idx.search(&vs[7], 1, &opts(10));
    assert_eq!((got[0].label, got[0].distance), (7, 0.0));
    assert_eq!(idx.neighbors(7), Some(vec![vec![]]));
    assert_eq!(idx.build_pending(100), 100);
    assert_eq!(idx.pending(), 200);
    idx.optimize();
    assert_eq!(idx.stats().pending, 0);
    assert_eq!(idx.len(), 300);
    let got = idx.search(&vs[7], 1, &opts(32));
    assert_eq!(got[0].label, 7);
    assert!(
        got[0].distance.abs() < 1e-2,
        "int8 estimate {}",
        got[0].distance
    );
    // get() dequantises within half a step per component.
    let back = idx.get(7).expect("present");
    let max = vs[7].iter().fold(0f32, |m, x| m.max(x.abs()));
    assert!(back
        .iter()
        .zip(&vs[7])
        .all(|(a, b)| (a - b).abs() <= max / 254.0 + 1e-6));
    let links = idx.neighbors(7).expect("linked");
    assert!(!links[0].is_empty() && links.len() <= idx.stats().max_level + 1);
    // Replacing a linked label moves it to the tail; the old node is never returned.
    idx.upsert(7, &vs[8]).expect("right dimension");
    assert_eq!(idx.len(), 300);
    let got = idx.search(&vs[8], 2, &opts(32));
    let mut labels: Vec<u64> = got.iter().map(|n| n.label).collect();
    labels.sort();
    assert_eq!(labels, vec![7, 8]);
    assert!(
        idx.search(&vs[7], 300, &opts(300))
            .iter()
            .filter(|n| n.label == 7)
            .count()
            == 1
    );
    idx.optimize();
    assert_eq!(idx.len(), 300);
    assert!(idx.remove(7) && !idx.remove(7) && !idx.contains(7));
    assert_eq!(idx.get(7), None);
    assert_eq!(idx.len(), 299);
}

#[test]
fn upsert_linked_links_at_once() {
    let vs = random_vectors(2, 200, 16);
    let idx = VectorIndex::new(hnsw_params(16, Metric::Cosine, Quantization::None));
    std::thread::scope(|s| {
        for t in 0..2 {
            let (idx, vs) = (&idx, &vs);
            s.spawn(move || {
                for (i, v) in vs.iter().enumerate().skip(t).step_by(2) {
                    idx.upsert_linked(i as u64, v).expect("right dimension");
                }
            });
        }
    });
    assert_eq!(idx.pending(), 0);
    let labelled: Vec<(u64, Vec<f32>)> = vs
        .iter()
        .enumerate()
        .map(|(i, v)| (i as u64, v.clone()))
        .collect();
    let r = recall(&idx, &labelled, &random_vectors(3, 20, 16), 10, 64);
    assert!(r >= 0.95, "recall {r}");
}

#[test]
fn concurrent_upserts_searches_and_builds() {
    let seed = 31;
    println!("seed {seed}");
    let vs = random_vectors(seed, 1600, 24);
    let idx = VectorIndex::new(hnsw_params(24, Metric::L2, Quantization::Int8));
    let done = AtomicBool::new(false);
    std::thread::scope(|s| {
        for t in 0..4u64 {
            let (idx, vs) = (&idx, &vs);
            s.spawn(move || {
                for i in (t as usize..vs.len()).step_by(4) {
                    idx.upsert(i as u64, &vs[i]).expect("right dimension");
                    // Every acknowledged write is found: exactly while it waits in the
                    // tail, and by the graph once a builder linked it. An ef of 16 may
                    // miss it, as any approximate search; a search as wide as the
                    // index finds it, except in the instant when its only in-link
                    // comes from a node another builder is still linking.
                    let got = idx.search(&vs[i], 1, &opts(16));
                    if got[0].label != i as u64 {
                        let found = (0..50).any(|_| {
                            let wide = idx.search(&vs[i], 1, &opts(vs.len()));
                            wide[0].label == i as u64 || {
                                std::thread::sleep(std::time::Duration::from_millis(2));
                                false
                            }
                        });
                        assert!(found, "write {i} not found");
                    }
                }
            });
        }
        for _ in 0..2 {
            let (idx, done) = (&idx, &done);
            s.spawn(move || {
                while !done.load(Ordering::Relaxed) {
                    if idx.build_pending(64) == 0 {
                        std::thread::yield_now();
                    }
                }
            });
        }
        s.spawn(|| {
            // Bounded: a failed writer thread must fail the test, not hang it.
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
            while idx.len() < vs.len() && std::time::Instant::now() < deadline {
                std::thread::yield_now();
            }
            done.store(true, Ordering::Relaxed);
        });
    });
    idx.optimize();
    assert_eq!((idx.len(), idx.pending()), (vs.len(), 0));
    let labelled: Vec<(u64, Vec<f32>)> = vs
        .iter()
        .enumerate()
        .map(|(i, v)| (i as u64, v.clone()))
        .collect();
    let r = recall(&idx, &labelled, &random_vectors(seed + 1, 30, 24), 10, 64);
    println!("recall@10 {r:.3}");
    assert!(r >= 0.9, "recall {r}");
}

#[test]
fn churn_keeps_recall() {
    let seed = 41;
    println!("seed {seed}");
    let dim = 24;
    let vs = random_vectors(seed, 2000, dim);
    let idx = VectorIndex::new(hnsw_params(dim, Metric::L2, Quantization::None));
    for (i, v) in vs.iter().enumerate() {
        idx.upsert(i as u64, v).expect("right dimension");
    }
    idx.optimize();
    let queries = random_vectors(seed + 1, 30, dim);
    let extra = random_vectors(seed + 2, 1000, dim);
    let mut live: Vec<(u64, Vec<f32>)> = Vec::new();
    // Three rounds: remove half of the graph, insert new vectors, relink.
    for round in 0..3u64 {
        live.clear();
        for i in 0..2000u64 {
            let keep = (i + round).is_multiple_of(2);
            if !keep {
                idx.remove(i);
            }
        }
        for (j, v) in extra.iter().enumerate() {
            idx.upsert(10_000 * (round + 1) + j as u64, v)
                .expect("right dimension");
        }
        idx.optimize();
        for i in 0..2000u64 {
            if idx.contains(i) {
                live.push((i, vs[i as usize].clone()));
            }
        }
        for (j, v) in extra.iter().enumerate() {
            live.push((10_000 * (round + 1) + j as u64, v.clone()));
        }
        // Older rounds' extras are still there unless removed: drop them now.
        for (j, _) in extra.iter().enumerate() {
            if round > 0 {
                idx.remove(10_000 * round + j as u64);
            }
        }
        for i in 0..2000u64 {
            if !idx.contains(i) {
                idx.upsert(i, &vs[i as usize]).expect("right dimension");
                live.push((i, vs[i as usize].clone()));
            }
        }
        idx.optimize();
        assert_eq!(idx.len(), live.len());
        let r = recall(&idx, &live, &queries, 10, 64);
        println!("round {round}: {} vectors, recall@10 {r:.3}", live.len());
        assert!(r >= 0.95, "round {round} recall {r}");
    }
    assert!(idx.stats().memory_bytes > 0);
}

/// 3,000 random 16-dimensional vectors, labelled by position and linked, and those of
/// them a one-in-a-hundred filter (labels that are multiples of 100) passes.
fn one_in_a_hundred(seed: u64) -> (VectorIndex, Vec<(u64, Vec<f32>)>) {
    println!("seed {seed}");
    let vs = random_vectors(seed, 3000, 16);
    let idx = VectorIndex::new(hnsw_params(16, Metric::L2, Quantization::None));
    for (i, v) in vs.iter().enumerate() {
        idx.upsert(i as u64, v).expect("right dimension");
    }
    idx.optimize();
    let allowed = (0..3000u64)
        .filter(|l| l.is_multiple_of(100))
        .map(|l| (l, vs[l as usize].clone()))
        .collect();
    (idx, allowed)
}

#[test]
fn filtered_search_at_one_percent_is_exact() {
    let seed = 51;
    let (idx, allowed) = one_in_a_hundred(seed);
    let accepted = |l: u64| l.is_multiple_of(100);
    let labels: Vec<u64> = allowed.iter().map(|(l, _)| *l).collect();
    for q in random_vectors(seed + 1, 20, 16) {
        let truth = brute(&allowed, &q, 10, Metric::L2);
        let got = idx.search(
            &q,
            10,
            &SearchOptions {
                ef: Some(10),
                filter: Some(&accepted),
                ..SearchOptions::default()
            },
        );
        assert_eq!(got.iter().map(|n| n.label).collect::<Vec<_>>(), truth);
        let among = idx.search_among(&q, 10, &labels);
        assert_eq!(among.iter().map(|n| n.label).collect::<Vec<_>>(), truth);
    }
}

/// A filter effort (`VSIM`'s `FILTER-EF`) caps how many nodes the walk expands: a
/// small one answers with the few matches it met among their neighbours; one large
/// enough finds the exact filtered nearest, as the unbounded search does.
#[test]
fn a_filter_effort_bounds_the_nodes_tested() {
    use std::sync::atomic::AtomicUsize;
    let seed = 63;
    let (idx, allowed) = one_in_a_hundred(seed);
    let tested = AtomicUsize::new(0);
    let accepted = |l: u64| {
        tested.fetch_add(1, Ordering::Relaxed);
        l.is_multiple_of(100)
    };
    let search = |q: &[f32], effort: usize| {
        tested.store(0, Ordering::Relaxed);
        let opts = SearchOptions {
            ef: Some(10),
            filter: Some(&accepted),
            filter_effort: Some(effort),
            ..SearchOptions::default()
        };
        let got: Vec<u64> = idx.search(q, 10, &opts).iter().map(|n| n.label).collect();
        (got, tested.load(Ordering::Relaxed))
    };
    for q in random_vectors(seed + 1, 20, 16) {
        // The entry counts as the first: an effort of one tests it alone.
        let (_, alone) = search(&q, 1);
        assert_eq!(alone, 1);
        // Two more expansions test at most their neighbours (32 links each at
        // layer 0): a few dozen nodes, where ten matches take a thousand.
        let (few, calls) = search(&q, 3);
        assert!(calls <= 1 + 2 * 32, "tested {calls} nodes expanding three");
        assert!(few.len() < 10 && few.iter().all(|l| l.is_multiple_of(100)));
        let (all, _) = search(&q, 1_000_000);
        assert_eq!(all, brute(&allowed, &q, 10, Metric::L2));
    }
}

/// A filter that looks ahead hears of every label the walk tests, before the test,
/// but the entry point (tested as the walk starts); and hearing of them changes no
/// answer. A walk without a filter reads no labels for it.
#[test]
fn a_filter_hears_of_its_labels_before_their_tests() {
    use std::collections::HashSet;
    use std::sync::Mutex;
    let seed = 67;
    let (idx, _) = one_in_a_hundred(seed);
    let heard: Mutex<HashSet<u64>> = Mutex::new(HashSet::new());
    let unheard = Mutex::new(0usize);
    let tested = Mutex::new(0usize);
    let accepted = |l: u64| {
        *tested.lock().expect("lock") += 1;
        if !heard.lock().expect("lock").contains(&l) {
            *unheard.lock().expect("lock") += 1;
        }
        l.is_multiple_of(100)
    };
    let ahead = |l: u64| {
        heard.lock().expect("lock").insert(l);
    };
    for q in random_vectors(seed + 1, 10, 16) {
        heard.lock().expect("lock").clear();
        *unheard.lock().expect("lock") = 0;
        *tested.lock().expect("lock") = 0;
        let opts = SearchOptions {
            ef: Some(10),
            filter: Some(&accepted),
            filter_ahead: Some(&ahead),
            filter_effort: Some(1_000),
            ..SearchOptions::default()
        };
        let got: Vec<u64> = idx.search(&q, 10, &opts).iter().map(|n| n.label).collect();
        let tests = *tested.lock().expect("lock");
        assert!(tests > 100, "the walk tested {tests} labels");
        assert!(
            *unheard.lock().expect("lock") <= 1,
            "tested before heard of"
        );
        let plain = SearchOptions {
            filter_ahead: None,
            ..opts
        };
        let without: Vec<u64> = idx.search(&q, 10, &plain).iter().map(|n| n.label).collect();
        assert_eq!(got, without);
        heard.lock().expect("lock").clear();
        let unfiltered = SearchOptions {
            filter: None,
            filter_ahead: Some(&ahead),
            ..opts
        };
        idx.search(&q, 10, &unfiltered);
        assert!(heard.lock().expect("lock").is_empty());
    }
}

#[test]
fn range_matches_brute_force() {
    let seed = 61;
    println!("seed {seed}");
    let vs = random_vectors(seed, 2000, 8);
    let mut p = hnsw_params(8, Metric::L2, Quantization::None);
    p.epsilon = 0.2;
    let idx = VectorIndex::new(p);
    for (i, v) in vs.iter().enumerate() {
        idx.upsert(i as u64, v).expect("right dimension");
    }
    idx.build_pending(1900);
    assert_eq!(idx.pending(), 100);
    let (mut found, mut expected) = (0usize, 0usize);
    for q in random_vectors(seed + 1, 20, 8) {
        let radius = 0.8;
        let truth: Vec<u64> = vs
            .iter()
            .enumerate()
            .filter(|(_, v)| Metric::L2.distance(&q, v) <= radius)
            .map(|(i, _)| i as u64)
            .collect();
        let got = idx.range(&q, radius, &SearchOptions::default());
        assert!(got.windows(2).all(|w| w[0].distance <= w[1].distance));
        assert!(got
            .iter()
            .all(|n| n.distance <= radius && truth.contains(&n.label)));
        expected += truth.len();
        found += got.len();
    }
    println!("range recall {found}/{expected}");
    assert!(expected > 50 && found as f64 >= 0.95 * expected as f64);
}

fn sample_index(q: Quantization) -> (VectorIndex, Vec<Vec<f32>>) {
    let vs = random_vectors(71, 400, 16);
    let idx = VectorIndex::new(hnsw_params(16, Metric::Cosine, q));
    for (i, v) in vs.iter().enumerate() {
        idx.upsert(i as u64, v).expect("right dimension");
    }
    idx.build_pending(350);
    for i in 0..20 {
        idx.remove(i * 7);
    }
    (idx, vs)
}

#[test]
fn serialisation_round_trip_gives_identical_results() {
    for q in [Quantization::None, Quantization::Int8, Quantization::Binary] {
        let (idx, vs) = sample_index(q);
        let mut bytes = Vec::new();
        idx.write_to(&mut bytes);
        let back = VectorIndex::read_from(&bytes).expect("valid");
        assert_eq!(back.params(), idx.params());
        assert_eq!((back.len(), back.pending()), (idx.len(), idx.pending()));
        assert_eq!(back.stats().max_level, idx.stats().max_level);
        for v in vs.iter().take(40) {
            assert_eq!(back.search(v, 10, &opts(32)), idx.search(v, 10, &opts(32)));
        }
        assert_eq!(back.neighbors(100), idx.neighbors(100));
        back.optimize();
        assert_eq!(back.len(), idx.len());
    }
    let flat = VectorIndex::new(IndexParams::new(4, Metric::Ip, Algorithm::Flat));
    flat.upsert(9, &[1.0, 2.0, 3.0, 4.0])
        .expect("right dimension");
    let mut bytes = Vec::new();
    flat.write_to(&mut bytes);
    let back = VectorIndex::read_from(&bytes).expect("valid");
    assert_eq!(back.get(9), Some(vec![1.0, 2.0, 3.0, 4.0]));
}

#[test]
fn corrupt_or_truncated_input_is_an_error_not_a_panic() {
    let (idx, _) = sample_index(Quantization::Int8);
    let mut bytes = Vec::new();
    idx.write_to(&mut bytes);
    let mut rng = SmallRng::seed_from_u64(81);
    for n in [0, 1, 8, 12, bytes.len() / 2, bytes.len() - 1] {
        assert!(VectorIndex::read_from(&bytes[..n]).is_err());
    }
    for _ in 0..300 {
        let mut b = bytes.clone();
        for _ in 0..rng.gen_range(1..4) {
            let i = rng.gen_range(0..b.len());
            b[i] ^= 1 << rng.gen_range(0..8);
        }
        let cut = if rng.gen_bool(0.3) {
            rng.gen_range(0..b.len())
        } else {
            b.len()
        };
        assert!(VectorIndex::read_from(&b[..cut]).is_err());
    }
    // With a fixed-up checksum the structural checks must hold on their own.
    let body = bytes.len() - 4;
    for _ in 0..300 {
        let mut b = bytes[..body].to_vec();
        let i = rng.gen_range(12..b.len());
        b[i] = rng.gen();
        let crc = crc32c::crc32c(&b);
        b.extend_from_slice(&crc.to_le_bytes());
        if let Ok(idx) = VectorIndex::read_from(&b) {
            let q = vec![0.5f32; 16];
            let _ = idx.search(&q, 5, &opts(16));
            let _ = idx.range(&q, 0.5, &opts(16));
            idx.optimize();
        }
    }
}

#[test]
fn int8_index_memory_is_under_forty_percent_of_f32() {
    let (n, dim) = (1500, 384);
    let vs = random_vectors(91, n, dim);
    let mut p = IndexParams::new(dim, Metric::Cosine, Algorithm::Hnsw);
    p.ef_construction = 16;
    p.initial_cap = n;
    let idx = VectorIndex::new(p);
    for (i, v) in vs.iter().enumerate() {
        idx.upsert(i as u64, v).expect("right dimension");
    }
    idx.optimize();
    let raw = n * dim * 4;
    let mem = idx.stats().memory_bytes;
    println!(
        "int8 HNSW {mem} bytes vs raw f32 {raw} ({:.1}%)",
        100.0 * mem as f64 / raw as f64
    );
    assert!(mem * 10 <= raw * 4, "{mem} > 40% of {raw}");
}

#[test]
fn a_reindex_racing_the_builder_keeps_every_vector_findable() {
    // A reload that merges re-indexes every document (remove, then upsert under a new
    // label) while the background builder links batches; removals trigger repairs.
    // Afterwards every vector must still be reachable: a node whose in-links all came
    // from removed nodes, or one linked when every node near it was dead, would not be.
    let vs = random_vectors(11, 200, 8);
    let idx = std::sync::Arc::new(VectorIndex::new(hnsw_params(
        8,
        Metric::L2,
        Quantization::None,
    )));
    for (i, v) in vs.iter().enumerate() {
        idx.upsert(i as u64, v).expect("right dimension");
    }
    idx.optimize();
    let mut labels: Vec<u64> = (0..vs.len() as u64).collect();
    for round in 1..=20u64 {
        let done = std::sync::Arc::new(AtomicBool::new(false));
        let builder = {
            let (idx, done) = (std::sync::Arc::clone(&idx), std::sync::Arc::clone(&done));
            std::thread::spawn(move || {
                while !done.load(Ordering::Relaxed) {
                    idx.build_pending_with(16, 1);
                }
            })
        };
        for (i, v) in vs.iter().enumerate() {
            assert!(idx.remove(labels[i]));
            labels[i] = round * 1000 + i as u64;
            idx.upsert(labels[i], v).expect("right dimension");
        }
        done.store(true, Ordering::Relaxed);
        builder.join().expect("builder");
        idx.optimize();
        assert_eq!(idx.len(), vs.len(), "round {round}");
        for (i, v) in vs.iter().enumerate() {
            // An ef past the index's size: every reachable node is visited.
            let got = idx.search(v, 1, &opts(400));
            assert_eq!(
                got.first().map(|n| n.label),
                Some(labels[i]),
                "round {round}, vector {i}"
            );
        }
    }
}

#[test]
fn a_long_coded_tail_is_ranked_by_codes_and_answers_exact_distances() {
    let dim = 24;
    for metric in [Metric::Cosine, Metric::L2, Metric::Ip] {
        let vs = random_vectors(91, 5000, dim);
        let idx = VectorIndex::new(hnsw_params(dim, metric, Quantization::Int8));
        for (i, v) in vs.iter().enumerate() {
            idx.upsert(i as u64, v).expect("right dimension");
        }
        let mut live: AHashMap<u64, Vec<f32>> = vs
            .into_iter()
            .enumerate()
            .map(|(i, v)| (i as u64, v))
            .collect();
        // Removes move the tail's last row into the hole; rewrites recode in place.
        for l in (0..5000u64).step_by(7) {
            assert!(idx.remove(l));
            live.remove(&l);
        }
        let rewritten = random_vectors(93, 5000, dim);
        for l in (3..5000u64).step_by(11) {
            let v = rewritten[l as usize].clone();
            idx.upsert(l, &v).expect("right dimension");
            live.insert(l, v);
        }
        assert_eq!(idx.pending(), live.len());
        let pairs: Vec<(u64, Vec<f32>)> = live.iter().map(|(&l, v)| (l, v.clone())).collect();
        let queries = random_vectors(92, 50, dim);
        let mut hits = 0;
        for q in &queries {
            let truth = brute(&pairs, q, 10, metric);
            let got = idx.search(q, 10, &opts(10));
            assert_eq!(got.len(), 10);
            for n in &got {
                let d = metric.distance(q, &live[&n.label]);
                assert!(
                    (n.distance - d).abs() <= 1e-5 * d.abs().max(1.0),
                    "{metric:?}"
                );
            }
            hits += got.iter().filter(|n| truth.contains(&n.label)).count();
        }
        println!("{metric:?}: {hits}/500");
        assert!(hits >= 495, "{metric:?}: {hits}/500");
    }
}
