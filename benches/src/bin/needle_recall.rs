//! The sparse block selector on planted needles: 64K-token prefixes of random keys
//! (one KV head, head_dim 64, four query heads), each query head aligned with a needle
//! key planted at a random depth (seeded). For block sizes 16/32/64 and budgets
//! 256–4096 tokens it reports how often every needle's block was selected and the
//! attention-mass recall (the share of the dense softmax mass inside the selected
//! blocks, `exp(lse_sparse - lse_dense)`), for Quest's bound and the mean-key score.
//!
//! The softmax scale sets how much of the mass the needle holds: at the default
//! (`--scale-milli 500`, i.e. 0.5) the needle's score is about 16 against random keys'
//! spread of about 1.3, so it holds most of the dense mass; at 0.125 it holds almost
//! none and any selection's recall is close to its share of the tokens.
//!
//! `cargo run --release -p pion-benches --bin needle_recall -- [--seeds 8]
//! [--tokens 65536] [--scale-milli 500]`. doc/benchmarks.md has the figures.

use half::f16;
use kernels::quant::{DType, Tier};
use kernels::{
    block_select, block_summary, decode_partial, sparse_partial, BlockKv, BlockSummary, KvLayout,
    Queries, Score, SelectOptions,
};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const DIM: usize = 64;
const Q_HEADS: usize = 4;

fn arg(name: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// One seeded prefix: stored blocks, the queries, and each query head's needle token.
fn prefix(seed: u64, tokens: usize, block: usize) -> (Vec<Vec<u8>>, Vec<f32>, Vec<usize>) {
    let mut rng = SmallRng::seed_from_u64(seed);
    let q: Vec<f32> = (0..Q_HEADS * DIM)
        .map(|_| rng.gen_range(-1.0f32..1.0))
        .collect();
    let needles: Vec<usize> = (0..Q_HEADS)
        .map(|_| rng.gen_range(block..tokens - block))
        .collect();
    let mut keys: Vec<f32> = (0..tokens * DIM)
        .map(|_| rng.gen_range(-1.0..1.0))
        .collect();
    for (h, &n) in needles.iter().enumerate() {
        for j in 0..DIM {
            keys[n * DIM + j] = q[h * DIM + j].signum();
        }
    }
    let blocks = (0..tokens / block)
        .map(|b| {
            let mut out: Vec<u8> = keys[b * block * DIM..(b + 1) * block * DIM]
                .iter()
                .flat_map(|x| f16::from_f32(*x).to_le_bytes())
                .collect();
            out.extend(
                (0..block * DIM)
                    .flat_map(|_| f16::from_f32(rng.gen_range(-1.0..1.0)).to_le_bytes()),
            );
            out
        })
        .collect();
    (blocks, q, needles)
}

fn main() {
    let seeds = arg("--seeds", 8) as u64;
    let tokens = arg("--tokens", 65536);
    let scale = arg("--scale-milli", 500) as f32 / 1000.0;
    let Ok(layout) = KvLayout::new(1, DIM, DType::F16, Tier::AsGiven) else {
        return;
    };
    println!("{tokens} tokens, {seeds} seeds, {Q_HEADS} query heads each aligned with a needle, scale {scale}");
    println!(
        "{:>6} {:>7} {:>8} {:>14} {:>14}",
        "block", "budget", "score", "needles kept", "mass recall"
    );
    for block in [16usize, 32, 64] {
        let cases: Vec<_> = (0..seeds).map(|s| prefix(s, tokens, block)).collect();
        for score in [Score::Quest, Score::MeanKey] {
            for budget in [256usize, 512, 1024, 2048, 4096] {
                let (mut kept, mut needles, mut recall, mut rows) = (0, 0, 0f64, 0);
                for (stored, q, planted) in &cases {
                    let blocks: Vec<BlockKv<'_>> = stored
                        .iter()
                        .filter_map(|s| layout.split(block, s).ok())
                        .collect();
                    let summaries: Vec<BlockSummary> = blocks
                        .iter()
                        .filter_map(|b| block_summary(&layout, b).ok())
                        .collect();
                    let refs: Vec<&BlockSummary> = summaries.iter().collect();
                    let options = SelectOptions {
                        score,
                        ..SelectOptions::with_budget(budget, block)
                    };
                    let Ok(selection) = (0..Q_HEADS)
                        .map(|h| {
                            // Each query head selects for itself (as a KV head with one
                            // query head would), so its needle's fate is its own.
                            let one = Queries {
                                data: &q[h * DIM..(h + 1) * DIM],
                                positions: 1,
                                q_heads: 1,
                                scale,
                            };
                            block_select(&layout, &refs, &one, &options).map(|s| (h, s))
                        })
                        .collect::<Result<Vec<_>, _>>()
                    else {
                        continue;
                    };
                    for (h, s) in selection {
                        let one = Queries {
                            data: &q[h * DIM..(h + 1) * DIM],
                            positions: 1,
                            q_heads: 1,
                            scale,
                        };
                        needles += 1;
                        kept += usize::from(s.per_head[0].contains(&(planted[h] / block)));
                        if let (Ok(dense), Ok(sparse)) = (
                            decode_partial(&layout, &blocks, &one),
                            sparse_partial(&layout, &blocks, &s, &one),
                        ) {
                            recall += f64::from(sparse.lse[0] - dense.lse[0]).exp();
                            rows += 1;
                        }
                    }
                }
                println!(
                    "{block:>6} {budget:>7} {:>8} {:>9}/{needles:<4} {:>14.3}",
                    match score {
                        Score::Quest => "quest",
                        Score::MeanKey => "mean",
                    },
                    kept,
                    recall / rows.max(1) as f64
                );
            }
        }
    }
}
