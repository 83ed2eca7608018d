//! The kernels' CPU paths at one layer-step of Llama-3.2-1B's layout (8 KV heads, 32
//! query heads, head_dim 64) over a 4K-token prefix: dense decode attention per tier,
//! the merge of partial states, a block summary, block selection and sparse attention
//! within a 512-token budget. `attend_bench` measures the same paths against the
//! machine's memory bandwidth over 1K–128K tokens.
#![allow(missing_docs)] // criterion_group! and criterion_main! generate undocumented items

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use half::f16;
use kernels::quant::{self, DType, Role, Shape, Tier};
use kernels::{
    block_select, block_summary, decode_partial, merge_states, sparse_partial, BlockKv,
    BlockSummary, KvLayout, Queries, SelectOptions,
};
use pion_benches::values;

const BLOCK: usize = 256;
const BLOCKS: usize = 16;

fn layer(layout: &KvLayout, seed: u64) -> Vec<u8> {
    let shape = Shape {
        heads: layout.kv_heads,
        tokens: BLOCK,
        head_dim: layout.head_dim,
    };
    let mut out = Vec::new();
    for (i, role) in [Role::Keys, Role::Values].into_iter().enumerate() {
        let given: Vec<u8> = values(seed * 2 + i as u64, shape.heads * BLOCK * shape.head_dim)
            .iter()
            .flat_map(|v| f16::from_f32(*v).to_le_bytes())
            .collect();
        out.extend(
            quant::encode(layout.tier, layout.dtype, shape, role, &given).unwrap_or_default(),
        );
    }
    out
}

fn attention(c: &mut Criterion) {
    let q = values(99, 32 * 64);
    let queries = Queries {
        data: &q,
        positions: 1,
        q_heads: 32,
        scale: 0.125,
    };
    for tier in [Tier::AsGiven, Tier::Int8, Tier::Q4] {
        let Ok(layout) = KvLayout::new(8, 64, DType::F16, tier) else {
            continue;
        };
        let stored: Vec<Vec<u8>> = (0..BLOCKS as u64).map(|s| layer(&layout, s)).collect();
        let blocks: Vec<BlockKv<'_>> = stored
            .iter()
            .filter_map(|s| layout.split(BLOCK, s).ok())
            .collect();
        c.bench_function(&format!("decode_partial_4k_{}", tier.name()), |b| {
            b.iter(|| decode_partial(&layout, black_box(&blocks), &queries))
        });
        if tier == Tier::AsGiven {
            c.bench_function("block_summary_256", |b| {
                b.iter(|| block_summary(&layout, black_box(&blocks[0])))
            });
            let summaries: Vec<BlockSummary> = blocks
                .iter()
                .filter_map(|b| block_summary(&layout, b).ok())
                .collect();
            let refs: Vec<&BlockSummary> = summaries.iter().collect();
            let options = SelectOptions::with_budget(512, BLOCK);
            c.bench_function("block_select_16_blocks", |b| {
                b.iter(|| block_select(&layout, black_box(&refs), &queries, &options))
            });
            let Ok(selection) = block_select(&layout, &refs, &queries, &options) else {
                continue;
            };
            c.bench_function("sparse_partial_4k_budget_512", |b| {
                b.iter(|| sparse_partial(&layout, black_box(&blocks), &selection, &queries))
            });
            let (Ok(a), Ok(z)) = (
                decode_partial(&layout, &blocks[..8], &queries),
                decode_partial(&layout, &blocks[8..], &queries),
            ) else {
                continue;
            };
            c.bench_function("merge_states_32_heads", |b| {
                b.iter(|| merge_states(black_box(&[&a, &z])))
            });
        }
    }
}

criterion_group!(benches, attention);
criterion_main!(benches);
