//! `ATTEND.*` through an embedded engine: dense answers against attention computed
//! here from the stored K/V as `KV.GET … DECODE` returns it, views by tokens and by
//! block ids, sparse queries, and every way a query can fail closed.

use half::f16;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::{Engine, EngineOptions, Reply};

const BLOCK: usize = 16;
const KV_HEADS: usize = 2;
const DIM: usize = 32;

fn engine(tier: &str) -> Engine {
    let e = Engine::in_memory(EngineOptions::default());
    let manifest = format!(
        r#"{{"model":"m","block_tokens":{BLOCK},"dtype":"f16","tier":"{tier}","layers":[
            {{"kind":"attention","kv_heads":{KV_HEADS},"head_dim":{DIM}}},
            {{"kind":"recurrent","state_bytes":8}}]}}"#
    );
    assert_eq!(
        e.execute(0, &["KV.REGISTER", "ns", &manifest]),
        Reply::Status("OK".into())
    );
    e
}

fn le(tokens: &[u32]) -> Vec<u8> {
    tokens.iter().flat_map(|t| t.to_le_bytes()).collect()
}

/// Stores `tokens` block by block with random K/V; returns the block ids.
fn store(e: &Engine, tokens: &[u32], rng: &mut SmallRng) -> Vec<String> {
    let mut parent = "root".to_string();
    let mut ids = Vec::new();
    for chunk in tokens.chunks(BLOCK) {
        let kv: Vec<u8> = (0..2 * KV_HEADS * chunk.len() * DIM)
            .flat_map(|_| f16::from_f32(rng.gen_range(-1.0..1.0)).to_le_bytes())
            .collect();
        let args: Vec<Vec<u8>> = vec![
            b"KV.PUT".to_vec(),
            b"ns".to_vec(),
            parent.clone().into_bytes(),
            le(chunk),
            kv,
            vec![1; 8],
        ];
        match e.execute(0, &args) {
            Reply::Bulk(id) => parent = String::from_utf8(id).expect("hex"),
            other => panic!("KV.PUT: {other:?}"),
        }
        ids.push(parent.clone());
    }
    ids
}

fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// Per KV head, per token, a row of `DIM` values.
type Rows = Vec<Vec<Vec<f32>>>;

/// (K, V) of layer 0 of every block, decoded by the store.
fn decoded(e: &Engine, ids: &[String]) -> (Rows, Rows) {
    let mut k = vec![Vec::new(); KV_HEADS];
    let mut v = vec![Vec::new(); KV_HEADS];
    for id in ids {
        let Reply::Array(parts) = e.execute(0, &["KV.GET", "ns", id, "LAYERS", "0", "DECODE"])
        else {
            panic!("KV.GET");
        };
        let (Reply::Integer(n), Reply::Bulk(bytes)) = (&parts[0], &parts[1]) else {
            panic!("KV.GET reply of {} parts", parts.len());
        };
        let n = *n as usize;
        let x: Vec<f32> = bytes
            .chunks_exact(2)
            .map(|c| f16::from_le_bytes([c[0], c[1]]).to_f32())
            .collect();
        let half = KV_HEADS * n * DIM;
        for h in 0..KV_HEADS {
            for t in 0..n {
                let at = (h * n + t) * DIM;
                k[h].push(x[at..at + DIM].to_vec());
                v[h].push(x[half + at..half + at + DIM].to_vec());
            }
        }
    }
    (k, v)
}

/// Attention of each query row over (K, V), in f64: outputs and LSEs.
fn attention(
    k: &[Vec<Vec<f32>>],
    v: &[Vec<Vec<f32>>],
    q: &[f32],
    q_heads: usize,
    scale: f64,
) -> (Vec<f64>, Vec<f64>) {
    let group = q_heads / KV_HEADS;
    let rows = q.len() / DIM;
    let mut out = vec![0f64; rows * DIM];
    let mut lse = vec![f64::NEG_INFINITY; rows];
    for row in 0..rows {
        let h = (row % q_heads) / group;
        let qr = &q[row * DIM..(row + 1) * DIM];
        let s: Vec<f64> = k[h]
            .iter()
            .map(|kt| {
                qr.iter()
                    .zip(kt)
                    .map(|(a, b)| f64::from(*a) * f64::from(*b))
                    .sum::<f64>()
                    * scale
            })
            .collect();
        if s.is_empty() {
            continue;
        }
        let m = s.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let sum: f64 = s.iter().map(|x| (x - m).exp()).sum();
        lse[row] = m + sum.ln();
        for (x, vt) in s.iter().zip(&v[h]) {
            let w = (x - m).exp() / sum;
            for j in 0..DIM {
                out[row * DIM + j] += w * f64::from(vt[j]);
            }
        }
    }
    (out, lse)
}

/// One layer's `[output, lse, tokens, blocks]` of an `ATTEND.QUERY` reply.
fn answer(reply: Reply) -> (Vec<f32>, Vec<f32>, i64, i64) {
    let Reply::Array(layers) = reply else {
        panic!("ATTEND.QUERY: {reply:?}")
    };
    let Reply::Array(parts) = &layers[0] else {
        panic!("{layers:?}")
    };
    match &parts[..] {
        [Reply::Bulk(o), Reply::Bulk(l), Reply::Integer(t), Reply::Integer(b)] => {
            (f32s(o), f32s(l), *t, *b)
        }
        other => panic!("{other:?}"),
    }
}

fn error(reply: Reply) -> String {
    match reply {
        Reply::Error(e) => e.to_string(),
        other => panic!("expected an error, got {other:?}"),
    }
}

#[test]
fn dense_queries_match_attention_over_the_stored_kv_on_each_tier() {
    for (tier, tolerance) in [("as-given", 1e-4), ("int8", 2e-3), ("q4", 2e-3)] {
        let e = engine(tier);
        let mut rng = SmallRng::seed_from_u64(1);
        let tokens: Vec<u32> = (0..40).collect();
        let ids = store(&e, &tokens, &mut rng);
        let (k, v) = decoded(&e, &ids);
        // A view by tokens (little-endian u32 bytes): the longest stored prefix.
        let view = e.execute(
            0,
            &[
                b"ATTEND.VIEW".to_vec(),
                b"ns".to_vec(),
                b"v".to_vec(),
                le(&tokens),
            ],
        );
        assert_eq!(
            view,
            Reply::Array(vec![Reply::Integer(40), Reply::Integer(3)]),
            "{tier}"
        );
        let (positions, q_heads) = (2, 4);
        let q: Vec<f32> = (0..positions * q_heads * DIM)
            .map(|_| rng.gen_range(-2.0..2.0))
            .collect();
        let qb: Vec<u8> = q.iter().flat_map(|x| x.to_le_bytes()).collect();
        let reply = e.execute(
            0,
            &[
                &b"ATTEND.QUERY"[..],
                b"ns",
                b"v",
                b"LAYER",
                b"0",
                b"Q",
                &qb,
                b"POSITIONS",
                b"2",
            ],
        );
        let (out, lse, t, b) = answer(reply);
        assert_eq!((t, b), (40, 3 * KV_HEADS as i64));
        let (want_out, want_lse) = attention(&k, &v, &q, q_heads, 1.0 / (DIM as f64).sqrt());
        for (g, w) in out.iter().zip(&want_out) {
            assert!((f64::from(*g) - w).abs() < tolerance, "{tier}: {g} vs {w}");
        }
        for (g, w) in lse.iter().zip(&want_lse) {
            assert!(
                (f64::from(*g) - w).abs() < tolerance * (1.0 + w.abs()),
                "{tier}: {g} vs {w}"
            );
        }
        // f16 queries and an explicit scale give the same answer for the same values.
        let q16: Vec<u8> = q
            .iter()
            .flat_map(|x| f16::from_f32(*x).to_le_bytes())
            .collect();
        let q16_values: Vec<f32> = q.iter().map(|x| f16::from_f32(*x).to_f32()).collect();
        let reply = e.execute(
            0,
            &[
                &b"ATTEND.QUERY"[..],
                b"ns",
                b"v",
                b"LAYER",
                b"0",
                b"Q",
                &q16,
                b"POSITIONS",
                b"2",
                b"DTYPE",
                b"f16",
                b"SCALE",
                b"0.5",
            ],
        );
        let (out, _, _, _) = answer(reply);
        let (want_out, _) = attention(&k, &v, &q16_values, q_heads, 0.5);
        for (g, w) in out.iter().zip(&want_out) {
            assert!(
                (f64::from(*g) - w).abs() < tolerance,
                "{tier} f16: {g} vs {w}"
            );
        }
    }
}

#[test]
fn views_by_block_ids_sparse_queries_and_counters() {
    let e = engine("as-given");
    let mut rng = SmallRng::seed_from_u64(2);
    let tokens: Vec<u32> = (100..100 + 8 * BLOCK as u32).collect();
    let ids = store(&e, &tokens, &mut rng);
    let mut args = vec!["ATTEND.VIEW", "ns", "b", "BLOCKS"];
    args.extend(ids.iter().map(String::as_str));
    assert_eq!(
        e.execute(0, &args),
        Reply::Array(vec![Reply::Integer(128), Reply::Integer(8)])
    );
    let q: Vec<u8> = (0..KV_HEADS * DIM)
        .flat_map(|_| rng.gen_range(-1.0f32..1.0).to_le_bytes())
        .collect();
    let query = |extra: &[&[u8]]| {
        let mut a: Vec<&[u8]> = vec![b"ATTEND.QUERY", b"ns", b"b", b"LAYER", b"0", b"Q", &q];
        a.extend_from_slice(extra);
        e.execute(0, &a)
    };
    let dense = answer(query(&[]));
    // A budget covering everything is dense, exactly.
    let all = answer(query(&[b"SPARSE", b"4096"]));
    assert_eq!(all, dense);
    // 48 tokens: the sink block, the recent block and one chosen block per head.
    let (_, _, t, b) = answer(query(&[b"SPARSE", b"48"]));
    assert_eq!((t, b), (48, 3 * KV_HEADS as i64));
    let (_, _, t, _) = answer(query(&[
        b"SPARSE", b"48", b"SINK", b"0", b"RECENT", b"0", b"SCORE", b"MEAN",
    ]));
    assert_eq!(t, 48);
    // Two layers' worth in one call (the same layer twice here): one answer each.
    let Reply::Array(two) = e.execute(
        0,
        &[
            &b"ATTEND.QUERY"[..],
            b"ns",
            b"b",
            b"LAYER",
            b"0",
            b"Q",
            &q,
            b"LAYER",
            b"0",
            b"Q",
            &q,
        ],
    ) else {
        panic!("two layers");
    };
    assert_eq!(two.len(), 2);
    let Reply::Verbatim(_, info) = e.execute(0, &["INFO", "attention"]) else {
        panic!("INFO")
    };
    let info = String::from_utf8(info).expect("utf8");
    for want in [
        "attend_views:1",
        "attend_queries:5",
        "attend_layer_queries:6",
        "attend_sparse_queries:3",
        "attend_device:cpu",
    ] {
        assert!(info.contains(want), "{want} in {info}");
    }
    // Out of order, or not from the start: refused.
    let e2 = ids[2].as_str();
    let e1 = ids[1].as_str();
    assert!(
        error(e.execute(0, &["ATTEND.VIEW", "ns", "x", "BLOCKS", e1, e2]))
            .contains("does not follow")
    );
    assert!(error(e.execute(
        0,
        &["ATTEND.VIEW", "ns", "x", "BLOCKS", ids[0].as_str(), e2]
    ))
    .contains("does not follow"));
    assert!(
        error(e.execute(0, &["ATTEND.VIEW", "ns", "x", "BLOCKS", "zz"]))
            .contains("invalid block id")
    );
    // Deleting a block of the view makes its queries fail closed.
    assert!(matches!(
        e.execute(0, &["KV.DEL", "ns", ids[5].as_str()]),
        Reply::Integer(3)
    ));
    assert!(error(query(&[])).contains("no longer stored"));
    assert_eq!(e.execute(0, &["ATTEND.DROP", "ns", "b"]), Reply::Integer(1));
    assert_eq!(e.execute(0, &["ATTEND.DROP", "ns", "b"]), Reply::Integer(0));
    assert!(error(query(&[])).contains("no attention view"));
}

#[test]
fn queries_that_do_not_fit_the_layout_fail_closed() {
    let e = engine("as-given");
    let mut rng = SmallRng::seed_from_u64(3);
    let tokens: Vec<u32> = (0..20).collect();
    store(&e, &tokens, &mut rng);
    assert_eq!(
        e.execute(
            0,
            &[
                "ATTEND.VIEW",
                "ns",
                "v",
                "TOKENS",
                "0",
                "1",
                "2",
                "3",
                "4",
                "5",
                "6",
                "7",
                "8",
                "9",
                "10",
                "11",
                "12",
                "13",
                "14",
                "15",
                "16"
            ]
        ),
        Reply::Array(vec![Reply::Integer(16), Reply::Integer(1)])
    );
    let f = |n: usize| -> Vec<u8> { vec![0u8; 4 * n] };
    let q = |layer: &str, bytes: Vec<u8>, extra: &[&str]| {
        let mut a: Vec<Vec<u8>> = vec![
            b"ATTEND.QUERY".to_vec(),
            b"ns".to_vec(),
            b"v".to_vec(),
            b"LAYER".to_vec(),
            layer.into(),
            b"Q".to_vec(),
            bytes,
        ];
        a.extend(extra.iter().map(|s| s.as_bytes().to_vec()));
        e.execute(0, &a)
    };
    assert!(error(q("0", f(DIM + 1), &[])).contains("not POSITIONS"));
    assert!(error(q("0", f(3 * DIM), &[])).contains("do not divide"));
    assert!(error(q("0", f(2 * DIM), &["POSITIONS", "3"])).contains("not POSITIONS"));
    assert!(error(q("0", f(2 * DIM), &["POSITIONS", "0"])).contains("POSITIONS"));
    assert!(error(q("1", f(2 * DIM), &[])).contains("recurrent"));
    assert!(error(q("7", f(2 * DIM), &[])).contains("out of range"));
    assert!(error(q("0", vec![0; 6], &[])).contains("whole number"));
    assert!(error(q("0", f(2 * DIM), &["DTYPE", "f8"])).contains("DTYPE"));
    assert!(error(q("0", f(2 * DIM), &["SCALE", "inf"])).contains("SCALE"));
    assert!(error(q("0", f(2 * DIM), &["BOGUS"])).contains("syntax"));
    assert!(error(e.execute(
        0,
        &["ATTEND.QUERY", "ns", "v", "POSITIONS", "1", "SCALE", "2"]
    ))
    .contains("LAYER"));
    assert!(
        error(e.execute(0, &["ATTEND.QUERY", "nope", "v", "LAYER", "0", "Q", "xxxx"]))
            .contains("no attention view")
    );
    // A view that matched nothing attends nothing: LSE -inf, outputs 0.
    assert_eq!(
        e.execute(0, &["ATTEND.VIEW", "ns", "empty", "TOKENS", "9", "9"]),
        Reply::Array(vec![Reply::Integer(0), Reply::Integer(0)])
    );
    let mut a: Vec<Vec<u8>> = ["ATTEND.QUERY", "ns", "empty", "LAYER", "0", "Q"]
        .iter()
        .map(|s| s.as_bytes().to_vec())
        .collect();
    a.push(f(2 * DIM));
    let (out, lse, t, b) = answer(e.execute(0, &a));
    assert_eq!((t, b), (0, 0));
    assert!(out.iter().all(|&x| x == 0.0));
    assert!(lse.iter().all(|&x| x == f32::NEG_INFINITY));
    // Dropping the namespace drops its views.
    assert_eq!(e.execute(0, &["KV.DROP", "ns"]), Reply::Integer(1));
    assert!(error(e.execute(0, &a)).contains("no attention view"));
}
