//! Search under concurrency at `--threads 4`: writers insert, update and delete
//! vector documents on several connections while readers run KNN and filter queries.
//! Every reply must be well-formed and consistent with what was written, and once the
//! writers stop, KNN recall against brute force (seed printed) must stay high —
//! through churn too.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use pion_tests::{Client, PionServer, RespValue};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const DIM: usize = 16;

fn vector(seed: u64, i: usize) -> Vec<f32> {
    let mut rng = SmallRng::seed_from_u64(seed ^ (i as u64).wrapping_mul(0x9e37_79b9));
    (0..DIM).map(|_| rng.gen_range(-1.0f32..1.0)).collect()
}

fn blob(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn l2(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum()
}

/// KNN ids (document numbers) and distances, nearest first.
fn knn(c: &mut Client, q: &[f32], k: usize, filter: &str) -> Vec<(usize, f32)> {
    let query = format!("{filter}=>[KNN {k} @v $q AS d]");
    let reply = c.cmd(&[
        b"FT.SEARCH".as_slice(),
        b"idx",
        query.as_bytes(),
        b"PARAMS",
        b"2",
        b"q",
        &blob(q),
        b"SORTBY",
        b"d",
        b"RETURN",
        b"1",
        b"d",
        b"LIMIT",
        b"0",
        b"1000",
        b"DIALECT",
        b"2",
    ]);
    let RespValue::Agg(b'*', Some(items)) = reply else {
        panic!("FT.SEARCH: {}", reply.render());
    };
    items[1..]
        .chunks(2)
        .map(|pair| {
            let (RespValue::Bulk(_, Some(key)), RespValue::Agg(_, Some(fields))) =
                (&pair[0], &pair[1])
            else {
                panic!("malformed result {:?}", pair);
            };
            let id = std::str::from_utf8(&key[4..])
                .expect("utf8")
                .parse()
                .expect("doc number");
            let RespValue::Bulk(_, Some(d)) = &fields[1] else {
                panic!("no distance");
            };
            let d: f32 = std::str::from_utf8(d).expect("utf8").parse().expect("f32");
            (id, d)
        })
        .collect()
}

fn hset(c: &mut Client, i: usize, v: &[f32], group: usize) {
    let key = format!("doc:{i}");
    let reply = c.cmd(&[
        b"HSET".as_slice(),
        key.as_bytes(),
        b"v",
        &blob(v),
        b"g",
        group.to_string().as_bytes(),
    ]);
    assert!(!reply.is_error(), "HSET: {}", reply.render());
}

#[test]
fn concurrent_writes_and_queries_at_four_threads() {
    let seed = 20261130;
    println!("seed {seed}");
    let server = PionServer::start(4);
    let mut admin = Client::connect(server.port).expect("connect");
    let created = admin.cmd(
        &"FT.CREATE idx ON HASH PREFIX 1 doc: SCHEMA v VECTOR HNSW 6 TYPE FLOAT32 DIM 16 DISTANCE_METRIC L2 g NUMERIC"
            .split_whitespace()
            .collect::<Vec<_>>(),
    );
    assert_eq!(created.render(), "+OK");
    let writers = 4;
    let per_writer = 600;
    let n = writers * per_writer;
    let done = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|r| {
            let (port, done) = (server.port, done.clone());
            std::thread::spawn(move || {
                let mut c = Client::connect(port).expect("connect");
                let mut rounds = 0;
                while !done.load(Ordering::Relaxed) || rounds < 5 {
                    let q = vector(seed + 1, r * 1000 + rounds);
                    let hits = knn(&mut c, &q, 10, "*");
                    // Nearest first, and each distance is the exact one for what the
                    // writer stored under that key.
                    for w in hits.windows(2) {
                        assert!(w[0].1 <= w[1].1, "not sorted: {hits:?}");
                    }
                    for (id, d) in &hits {
                        let exact = l2(&q, &vector(seed, *id));
                        assert!(
                            (d - exact).abs() <= 1e-3 * exact.max(1.0),
                            "doc {id}: {d} vs {exact}"
                        );
                    }
                    let filtered = knn(&mut c, &q, 5, "(@g:[0 0])");
                    assert!(filtered.iter().all(|(id, _)| id % writers == 0));
                    rounds += 1;
                }
                rounds
            })
        })
        .collect();
    let handles: Vec<_> = (0..writers)
        .map(|w| {
            let port = server.port;
            std::thread::spawn(move || {
                let mut c = Client::connect(port).expect("connect");
                for j in 0..per_writer {
                    let i = j * writers + w;
                    hset(&mut c, i, &vector(seed, i), w);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().expect("writer");
    }
    done.store(true, Ordering::Relaxed);
    for r in readers {
        assert!(r.join().expect("reader") >= 5);
    }

    let recall = |c: &mut Client, live: &dyn Fn(usize) -> bool, salt: usize| {
        let (mut found, mut wanted) = (0, 0);
        for qi in 0..30 {
            let q = vector(seed + 2, salt + qi);
            let mut truth: Vec<(f32, usize)> = (0..n)
                .filter(|i| live(*i))
                .map(|i| (l2(&q, &vector(seed, i)), i))
                .collect();
            truth.sort_by(|a, b| a.0.total_cmp(&b.0));
            let got: Vec<usize> = knn(c, &q, 10, "*").into_iter().map(|(i, _)| i).collect();
            assert!(got.iter().all(|i| live(*i)), "a deleted document came back");
            wanted += 10;
            found += truth[..10].iter().filter(|(_, i)| got.contains(i)).count();
        }
        found as f64 / wanted as f64
    };
    let r = recall(&mut admin, &|_| true, 0);
    assert!(r >= 0.95, "recall@10 {r} after concurrent inserts");

    // Churn: delete a third, and move another third (new vectors under the same keys).
    for i in (0..n).filter(|i| i % 3 == 0) {
        admin.cmd(&["DEL", &format!("doc:{i}")]);
    }
    for i in (0..n).filter(|i| i % 3 == 1) {
        hset(&mut admin, i, &vector(seed, i), i % writers);
    }
    let r = recall(&mut admin, &|i| i % 3 != 0, 100);
    assert!(r >= 0.95, "recall@10 {r} after churn");
    admin.cmd(&["FT.OPTIMIZE", "idx"]);
    let r = recall(&mut admin, &|i| i % 3 != 0, 200);
    assert!(r >= 0.95, "recall@10 {r} after FT.OPTIMIZE");
}

/// `VSIM` walks a set's graph with the key unlocked. While a writer keeps putting a
/// new generation of the same vectors at the key (built elsewhere in another order,
/// then `RENAME`d over it), readers on other threads ask each element's own vector:
/// the nearest element must be that element, from whichever generation answered. A
/// walk that started on the set being replaced must not hand its labels to the new
/// one (where they name other elements).
#[test]
fn vsim_walks_while_the_set_is_replaced() {
    let seed = 20261207;
    println!("seed {seed}");
    let n = 120;
    let server = PionServer::start(4);
    let mut writer = Client::connect(server.port).expect("connect");
    let build = |c: &mut Client, generation: usize| {
        let mut order: Vec<usize> = (0..n).collect();
        let mut rng = SmallRng::seed_from_u64(seed ^ generation as u64);
        for i in (1..n).rev() {
            order.swap(i, rng.gen_range(0..=i));
        }
        let mut pipeline = Vec::with_capacity(n);
        for &i in &order {
            let name = format!("g{generation}:e{i}");
            let v = blob(&vector(seed, i));
            pipeline.push(vec![
                b"VADD".to_vec(),
                b"next".to_vec(),
                b"FP32".to_vec(),
                v,
                name.into_bytes(),
            ]);
        }
        for reply in pion_tests::dump::pipeline(c, &pipeline) {
            assert_eq!(reply.render(), ":1");
        }
        assert_eq!(c.cmd(&["RENAME", "next", "vs"]).render(), "+OK");
    };
    build(&mut writer, 0);
    let done = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..3)
        .map(|r| {
            let (port, done) = (server.port, done.clone());
            std::thread::spawn(move || {
                let mut c = Client::connect(port).expect("connect");
                let mut rounds = 0;
                while !done.load(Ordering::Relaxed) || rounds < 20 {
                    let i = (r * 7919 + rounds * 31) % n;
                    let reply = c.cmd(&[
                        b"VSIM".as_slice(),
                        b"vs",
                        b"FP32",
                        &blob(&vector(seed, i)),
                        b"WITHSCORES",
                        b"COUNT",
                        b"3",
                        b"EF",
                        b"200",
                    ]);
                    let RespValue::Agg(_, Some(items)) = &reply else {
                        panic!("VSIM: {}", reply.render());
                    };
                    let (RespValue::Bulk(_, Some(name)), RespValue::Bulk(_, Some(score))) =
                        (&items[0], &items[1])
                    else {
                        panic!("VSIM: {}", reply.render());
                    };
                    let name = String::from_utf8_lossy(name);
                    assert!(
                        name.ends_with(&format!(":e{i}")),
                        "element {i}'s own vector found {name} first: {}",
                        reply.render()
                    );
                    let score: f64 = String::from_utf8_lossy(score).parse().expect("score");
                    assert!(score > 0.995, "{name} scored {score}");
                    rounds += 1;
                }
                rounds
            })
        })
        .collect();
    for generation in 1..40 {
        build(&mut writer, generation);
    }
    done.store(true, Ordering::Relaxed);
    for r in readers {
        assert!(r.join().expect("reader") >= 20);
    }
}
