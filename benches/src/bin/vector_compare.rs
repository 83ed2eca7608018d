//! Pion's HNSW index on a real embedding set (TEXMEX `.fvecs`/`.ivecs`: `base.fvecs`,
//! `query.fvecs`, `gt.ivecs` with top-100 ids): build time, memory against the raw f32
//! size, and recall@10 / recall@100 / QPS over an `ef` sweep. `benches/vector_compare.py`
//! runs it next to hnswlib and faiss. Method: doc/vector-index.md.
//!
//! ```text
//! cargo run --release -p pion-benches --bin vector_compare -- \
//!     [--data DIR] [--threads N] [--metric cosine|ip|l2] [--quant int8|none]
//!     [--exact on|off] [--limit N] [--passes N] [--json]
//! ```
//! Each ef's queries run `--passes` times (default 3) and the median pass gives the
//! QPS: a single pass of 1,000 queries takes a fraction of a second, which a busy
//! neighbour on a shared machine can move by a third.
//! `--exact on` (the default, as `FT.CREATE` builds its indexes) keeps each vector as
//! given beside its INT8 code, and re-ranks the walk's best candidates exactly.
//! `--data` defaults to `$PION_VECTOR_DATA/minilm384`.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use pion_benches::knn::{fvecs, ivecs};
use pion_core::vector::{Algorithm, IndexParams, Metric, Quantization, SearchOptions, VectorIndex};

const EFS: [usize; 6] = [10, 20, 40, 80, 160, 320];

struct Args {
    data: PathBuf,
    threads: usize,
    metric: Metric,
    quant: Quantization,
    exact: bool,
    limit: Option<usize>,
    passes: usize,
    json: bool,
}

fn args() -> Result<Args, String> {
    let mut a = Args {
        data: std::env::var_os("PION_VECTOR_DATA")
            .map(|d| PathBuf::from(d).join("minilm384"))
            .unwrap_or_default(),
        threads: 2,
        metric: Metric::Cosine,
        quant: Quantization::Int8,
        exact: true,
        limit: None,
        passes: 3,
        json: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut val = || it.next().ok_or(format!("{k} needs a value"));
        match k.as_str() {
            "--data" => a.data = PathBuf::from(val()?),
            "--threads" => a.threads = val()?.parse().map_err(|e| format!("{e}"))?,
            "--metric" => {
                a.metric = Metric::parse(val()?.as_bytes()).ok_or("bad --metric")?;
            }
            "--quant" => {
                a.quant = match val()?.as_str() {
                    "int8" => Quantization::Int8,
                    "none" => Quantization::None,
                    _ => return Err("bad --quant".into()),
                }
            }
            "--exact" => {
                a.exact = match val()?.as_str() {
                    "on" => true,
                    "off" => false,
                    _ => return Err("bad --exact (on|off)".into()),
                }
            }
            "--limit" => a.limit = Some(val()?.parse().map_err(|e| format!("{e}"))?),
            "--passes" => {
                a.passes = val()?.parse().map_err(|e| format!("{e}"))?;
                if a.passes == 0 {
                    return Err("--passes must be at least 1".into());
                }
            }
            "--json" => a.json = true,
            _ => return Err(format!("unknown argument {k}")),
        }
    }
    if a.data.as_os_str().is_empty() {
        return Err("set PION_VECTOR_DATA or pass --data".into());
    }
    Ok(a)
}

/// Runs `f(i)` for every query index from `threads` threads.
fn par_queries(n: usize, threads: usize, f: impl Fn(usize) + Sync) {
    let next = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    break;
                }
                f(i);
            });
        }
    });
}

fn main() -> Result<(), String> {
    let a = args()?;
    let (dim, mut base) = fvecs(&a.data.join("base.fvecs"))?;
    let (_, queries) = fvecs(&a.data.join("query.fvecs"))?;
    let (gk, gt) = ivecs(&a.data.join("gt.ivecs"))?;
    if let Some(l) = a.limit {
        base.truncate(l * dim);
    }
    let n = base.len() / dim;
    let nq = queries.len() / dim;
    let mut p = IndexParams::new(dim, a.metric, Algorithm::Hnsw);
    p.quantization = a.quant;
    p.m = 16;
    p.ef_construction = 200;
    p.initial_cap = n;
    p.exact_rows = a.exact;
    let idx = VectorIndex::new(p);
    let t = Instant::now();
    for (i, v) in base.chunks_exact(dim).enumerate() {
        idx.upsert(i as u64, v).map_err(|e| e.to_string())?;
    }
    let upsert_s = t.elapsed().as_secs_f64();
    idx.optimize_with(a.threads);
    let build_s = t.elapsed().as_secs_f64();
    let stats = idx.stats();
    let raw = n * dim * 4;
    // Ground truth is for the full base; with --limit recompute it by brute force.
    let truth: Vec<Vec<u32>> = if a.limit.is_none() {
        gt.chunks_exact(gk).map(|r| r.to_vec()).collect()
    } else {
        let flat = VectorIndex::new(IndexParams::new(dim, a.metric, Algorithm::Flat));
        for (i, v) in base.chunks_exact(dim).enumerate() {
            flat.upsert(i as u64, v).map_err(|e| e.to_string())?;
        }
        queries
            .chunks_exact(dim)
            .map(|q| {
                flat.search(q, 100, &SearchOptions::default())
                    .iter()
                    .map(|n| n.label as u32)
                    .collect()
            })
            .collect()
    };
    // One pass over every query at (k, ef): recall@k and the pass's seconds.
    let recall_pass = |k: usize, ef: usize| -> (f64, f64) {
        let hits = AtomicUsize::new(0);
        let t = Instant::now();
        par_queries(nq, a.threads, |i| {
            let q = &queries[i * dim..(i + 1) * dim];
            let got = idx.search(
                q,
                k,
                &SearchOptions {
                    ef: Some(ef),
                    ..Default::default()
                },
            );
            let tr = &truth[i][..k.min(truth[i].len())];
            let h = got
                .iter()
                .filter(|n| tr.contains(&(n.label as u32)))
                .count();
            hits.fetch_add(h, Ordering::Relaxed);
        });
        let secs = t.elapsed().as_secs_f64();
        (hits.into_inner() as f64 / (nq * k) as f64, secs)
    };
    let mut rows = Vec::new();
    for ef in EFS {
        let passes: Vec<(f64, f64)> = (0..a.passes).map(|_| recall_pass(10, ef)).collect();
        let r10 = passes[0].0;
        let mut pass_secs: Vec<f64> = passes.iter().map(|p| p.1).collect();
        pass_secs.sort_by(f64::total_cmp);
        let secs = pass_secs[pass_secs.len() / 2];
        let r100 = (ef >= 100).then(|| recall_pass(100, ef).0);
        rows.push((ef, r10, r100, nq as f64 / secs));
    }
    if a.json {
        let rows_json: Vec<String> = rows
            .iter()
            .map(|(ef, r10, r100, qps)| {
                format!(
                    "{{\"ef\":{ef},\"recall10\":{r10:.4},\"recall100\":{},\"qps\":{qps:.1}}}",
                    r100.map_or("null".to_string(), |r| format!("{r:.4}"))
                )
            })
            .collect();
        println!(
            "{{\"engine\":\"pion\",\"cpu\":{:?},\"n\":{n},\"dim\":{dim},\"threads\":{},\"build_s\":{build_s:.3},\"upsert_s\":{upsert_s:.3},\"memory_bytes\":{},\"raw_f32_bytes\":{raw},\"max_level\":{},\"rows\":[{}]}}",
            pion_benches::cpu_summary(),
            a.threads,
            stats.memory_bytes,
            stats.max_level,
            rows_json.join(",")
        );
    } else {
        println!("{}", pion_benches::cpu_summary());
        println!(
            "pion HNSW {n}x{dim} {:?} {:?} exact rows {}, {} threads: build {build_s:.2} s (upserts {upsert_s:.2} s), memory {} B = {:.1}% of f32 {raw} B",
            a.metric,
            a.quant,
            a.exact,
            a.threads,
            stats.memory_bytes,
            100.0 * stats.memory_bytes as f64 / raw as f64
        );
        println!(
            "{:>5} {:>10} {:>10} {:>10}",
            "ef", "recall@10", "recall@100", "QPS"
        );
        for (ef, r10, r100, qps) in rows {
            let r100 = r100.map_or("-".to_string(), |r| format!("{r:.4}"));
            println!("{ef:>5} {r10:>10.4} {r100:>10} {qps:>10.0}");
        }
    }
    Ok(())
}
