//! The CPU paths against the f64 references, on every tier, GQA ratios, ragged blocks
//! and batches of positions; the merge's algebra; the selector on planted needles.

use half::{bf16, f16};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::quant::{self, DType, Role, Shape, Tier};
use crate::reference;
use crate::*;

/// Outputs within this of the reference (K and V elements are in [-1, 1], so outputs
/// are too); LSEs within this relative to `1 + |lse|`.
const TOLERANCE: f64 = 2e-4;

fn to_bytes(dtype: DType, x: &[f32]) -> Vec<u8> {
    match dtype {
        DType::F16 => x
            .iter()
            .flat_map(|v| f16::from_f32(*v).to_le_bytes())
            .collect(),
        DType::BF16 => x
            .iter()
            .flat_map(|v| bf16::from_f32(*v).to_le_bytes())
            .collect(),
        DType::F32 => x.iter().flat_map(|v| v.to_le_bytes()).collect(),
    }
}

/// One layer of a stored block (K then V, encoded at the layout's tier) holding
/// `keys` and `values` (`[kv_heads, tokens, head_dim]` f32).
pub(crate) fn stored_block(
    layout: &KvLayout,
    tokens: usize,
    keys: &[f32],
    values: &[f32],
) -> Vec<u8> {
    let shape = Shape {
        heads: layout.kv_heads,
        tokens,
        head_dim: layout.head_dim,
    };
    let mut out = Vec::new();
    for (role, x) in [(Role::Keys, keys), (Role::Values, values)] {
        let given = to_bytes(layout.dtype, x);
        out.extend(quant::encode(layout.tier, layout.dtype, shape, role, &given).expect("encode"));
    }
    out
}

/// A stored layer of random K/V in [-1, 1].
pub(crate) fn random_block(layout: &KvLayout, tokens: usize, rng: &mut SmallRng) -> Vec<u8> {
    let n = layout.kv_heads * tokens * layout.head_dim;
    let k: Vec<f32> = (0..n).map(|_| rng.gen_range(-1.0..1.0)).collect();
    let v: Vec<f32> = (0..n).map(|_| rng.gen_range(-1.0..1.0)).collect();
    stored_block(layout, tokens, &k, &v)
}

/// A stored layer of random K/V for each block size.
pub(crate) fn random_blocks(
    layout: &KvLayout,
    sizes: &[usize],
    rng: &mut SmallRng,
) -> Vec<Vec<u8>> {
    sizes
        .iter()
        .map(|&t| random_block(layout, t, rng))
        .collect()
}

/// The blocks of `stored` (one per size) as the kernels read them.
pub(crate) fn views<'a>(
    layout: &KvLayout,
    sizes: &[usize],
    stored: &'a [Vec<u8>],
) -> Vec<BlockKv<'a>> {
    sizes
        .iter()
        .zip(stored)
        .map(|(&t, s)| layout.split(t, s).expect("split"))
        .collect()
}

fn layouts() -> Vec<KvLayout> {
    let mut out = Vec::new();
    for (dtype, tier) in [
        (DType::F16, Tier::AsGiven),
        (DType::BF16, Tier::AsGiven),
        (DType::F32, Tier::AsGiven),
        (DType::F16, Tier::Int8),
        (DType::F16, Tier::Q4),
        (DType::BF16, Tier::Q4),
    ] {
        out.push(KvLayout::new(2, 64, dtype, tier).expect("layout"));
    }
    // A head_dim that is not a multiple of 16 (the SIMD loops' remainders).
    out.push(KvLayout::new(1, 40, DType::F16, Tier::AsGiven).expect("layout"));
    out
}

fn assert_close(got: &AttnState, want: &(Vec<f64>, Vec<f64>), what: &str) {
    let (out, lse) = want;
    assert_eq!(got.out.len(), out.len(), "{what}");
    for (i, (&g, &w)) in got.out.iter().zip(out).enumerate() {
        assert!(
            (f64::from(g) - w).abs() <= TOLERANCE,
            "{what}: out[{i}] {g} vs {w}"
        );
    }
    for (i, (&g, &w)) in got.lse.iter().zip(lse).enumerate() {
        if w == f64::NEG_INFINITY {
            assert_eq!(g, f32::NEG_INFINITY, "{what}: lse[{i}]");
        } else {
            assert!(
                (f64::from(g) - w).abs() <= TOLERANCE * (1.0 + w.abs()),
                "{what}: lse[{i}] {g} vs {w}"
            );
        }
    }
}

fn queries(rng: &mut SmallRng, n: usize) -> Vec<f32> {
    (0..n).map(|_| rng.gen_range(-2.0..2.0)).collect()
}

#[test]
fn decode_partial_matches_the_reference_on_every_tier_and_gqa_ratio() {
    let mut rng = SmallRng::seed_from_u64(20);
    for layout in layouts() {
        // Ragged: full blocks, a short last one, and an empty one in between.
        let sizes = [64usize, 64, 0, 64, 17];
        let stored = random_blocks(&layout, &sizes, &mut rng);
        let blocks = views(&layout, &sizes, &stored);
        // Query rows per KV head from 1 to 15: whole and partial groups of the SIMD
        // loops' row blocking.
        for group in [1, 4, 5] {
            for positions in [1, 3] {
                let q_heads = layout.kv_heads * group;
                let q = queries(&mut rng, positions * q_heads * layout.head_dim);
                let scale = 1.0 / (layout.head_dim as f32).sqrt();
                let qs = Queries {
                    data: &q,
                    positions,
                    q_heads,
                    scale,
                };
                let got = decode_partial(&layout, &blocks, &qs).expect("attend");
                let all = vec![(0..blocks.len()).collect(); layout.kv_heads];
                let want = reference::attention(&layout, &blocks, &all, &q, q_heads, scale);
                assert_close(
                    &got,
                    &want,
                    &format!("{layout:?} group {group} positions {positions}"),
                );
            }
        }
    }
}

#[test]
fn long_prefixes_stay_within_tolerance_and_the_result_ignores_the_thread_count() {
    let layout = KvLayout::new(2, 64, DType::F16, Tier::AsGiven).expect("layout");
    let mut rng = SmallRng::seed_from_u64(7);
    let stored: Vec<Vec<u8>> = (0..40)
        .map(|_| random_block(&layout, 256, &mut rng))
        .collect();
    let blocks: Vec<BlockKv<'_>> = stored
        .iter()
        .map(|s| layout.split(256, s).expect("split"))
        .collect();
    let q = queries(&mut rng, 8 * 64);
    let qs = Queries {
        data: &q,
        positions: 1,
        q_heads: 8,
        scale: 0.125,
    };
    let run = |threads: usize| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .expect("pool")
            .install(|| decode_partial(&layout, &blocks, &qs).expect("attend"))
    };
    let one = run(1);
    assert_eq!(one, run(3), "same bits on 1 and 3 threads");
    assert_eq!(one, run(3), "same bits on every run");
    let all = vec![(0..blocks.len()).collect(); 2];
    assert_close(
        &one,
        &reference::attention(&layout, &blocks, &all, &q, 8, 0.125),
        "10K tokens",
    );
}

#[test]
fn merged_parts_equal_the_whole_and_empty_parts_weigh_nothing() {
    let layout = KvLayout::new(2, 32, DType::F32, Tier::AsGiven).expect("layout");
    let mut rng = SmallRng::seed_from_u64(3);
    let stored: Vec<Vec<u8>> = (0..6)
        .map(|_| random_block(&layout, 32, &mut rng))
        .collect();
    let blocks: Vec<BlockKv<'_>> = stored
        .iter()
        .map(|s| layout.split(32, s).expect("split"))
        .collect();
    let q = queries(&mut rng, 2 * 4 * 32);
    let qs = Queries {
        data: &q,
        positions: 2,
        q_heads: 4,
        scale: 0.2,
    };
    let whole = decode_partial(&layout, &blocks, &qs).expect("whole");
    let a = decode_partial(&layout, &blocks[..2], &qs).expect("a");
    let b = decode_partial(&layout, &blocks[2..5], &qs).expect("b");
    let c = decode_partial(&layout, &blocks[5..], &qs).expect("c");
    let empty = decode_partial(&layout, &[], &qs).expect("empty");
    assert!(empty.lse.iter().all(|&l| l == f32::NEG_INFINITY));
    assert!(empty.out.iter().all(|&x| x == 0.0));
    let merged = merge_states(&[&a, &empty, &b, &c]).expect("merge");
    for (x, y) in merged.out.iter().zip(&whole.out) {
        assert!((x - y).abs() < 1e-5, "{x} vs {y}");
    }
    for (x, y) in merged.lse.iter().zip(&whole.lse) {
        assert!((x - y).abs() < 1e-5, "{x} vs {y}");
    }
    // Empty with empty stays empty, with no NaN.
    let none = merge_states(&[&empty, &empty]).expect("merge");
    assert_eq!(none, empty);
    // Merging with an empty part changes nothing at all.
    assert_eq!(merge_states(&[&empty, &a]).expect("merge"), a);
    let bad = AttnState::empty(3, 32);
    assert!(merge_states(&[&a, &bad]).is_err());
    assert!(merge_states(&[]).is_err());
}

#[test]
fn summaries_match_the_reference() {
    let mut rng = SmallRng::seed_from_u64(9);
    for layout in layouts() {
        for tokens in [1usize, 31, 64] {
            let stored = random_block(&layout, tokens, &mut rng);
            let block = layout.split(tokens, &stored).expect("split");
            let got = block_summary(&layout, &block).expect("summary");
            let want = reference::summary(&layout, &block);
            assert_eq!(got.kv_heads(), layout.kv_heads);
            for (g, w) in got.data.iter().zip(&want) {
                assert!(
                    (f64::from(*g) - w).abs() < 1e-5,
                    "{layout:?} {tokens}: {g} vs {w}"
                );
            }
        }
    }
}

#[test]
fn bad_inputs_are_errors() {
    assert!(KvLayout::new(2, 64, DType::F16, Tier::Q2).is_err());
    assert!(KvLayout::new(2, 40, DType::F16, Tier::Q4).is_err());
    assert!(KvLayout::new(0, 64, DType::F16, Tier::AsGiven).is_err());
    assert!(KvLayout::new(2, 512, DType::F16, Tier::AsGiven).is_err());
    let layout = KvLayout::new(2, 64, DType::F16, Tier::Int8).expect("layout");
    let mut rng = SmallRng::seed_from_u64(1);
    let stored = random_block(&layout, 8, &mut rng);
    assert!(layout.split(8, &stored[1..]).is_err());
    assert!(layout.split(9, &stored).is_err());
    let block = layout.split(8, &stored).expect("split");
    let short = BlockKv {
        tokens: 8,
        keys: &block.keys[1..],
        values: block.values,
    };
    let q = vec![0.5f32; 4 * 64];
    let ok = Queries {
        data: &q,
        positions: 1,
        q_heads: 4,
        scale: 1.0,
    };
    assert!(decode_partial(&layout, &[short], &ok).is_err());
    for bad in [
        Queries { q_heads: 3, ..ok },
        Queries { positions: 2, ..ok },
        Queries { positions: 0, ..ok },
        Queries {
            scale: f32::NAN,
            ..ok
        },
    ] {
        assert!(decode_partial(&layout, &[block], &bad).is_err(), "{bad:?}");
    }
    let wrong = Selection::all(3, 1);
    assert!(sparse_partial(&layout, &[block], &wrong, &ok).is_err());
    let out_of_range = Selection {
        per_head: vec![vec![0], vec![1]],
    };
    assert!(sparse_partial(&layout, &[block], &out_of_range, &ok).is_err());
}

/// A prefix of `tokens` random keys with one planted needle, the query aligned with
/// it: (stored blocks, query, the needle's token).
fn needle_prefix(
    seed: u64,
    tokens: usize,
    block: usize,
) -> (KvLayout, Vec<Vec<u8>>, Vec<f32>, usize) {
    let layout = KvLayout::new(1, 64, DType::F16, Tier::AsGiven).expect("layout");
    let mut rng = SmallRng::seed_from_u64(seed);
    let d = layout.head_dim;
    let q: Vec<f32> = (0..d).map(|_| rng.gen_range(-1.0f32..1.0)).collect();
    let needle = rng.gen_range(block..tokens - block);
    let mut stored = Vec::new();
    for b in 0..tokens / block {
        let mut k: Vec<f32> = (0..block * d).map(|_| rng.gen_range(-1.0..1.0)).collect();
        let v: Vec<f32> = (0..block * d).map(|_| rng.gen_range(-1.0..1.0)).collect();
        if needle / block == b {
            let row = needle % block;
            for j in 0..d {
                k[row * d + j] = q[j].signum();
            }
        }
        stored.push(stored_block(&layout, block, &k, &v));
    }
    (layout, stored, q, needle)
}

#[test]
fn the_needles_block_is_always_selected_and_selecting_everything_is_dense() {
    for block in [16usize, 32, 64] {
        for seed in 0..4 {
            let (layout, stored, q, needle) = needle_prefix(seed, 64 * 1024, block);
            let blocks: Vec<BlockKv<'_>> = stored
                .iter()
                .map(|s| layout.split(block, s).expect("split"))
                .collect();
            let summaries: Vec<BlockSummary> = blocks
                .iter()
                .map(|b| block_summary(&layout, b).expect("summary"))
                .collect();
            let refs: Vec<&BlockSummary> = summaries.iter().collect();
            let qs = Queries {
                data: &q,
                positions: 1,
                q_heads: 1,
                scale: 0.125,
            };
            let options = SelectOptions::with_budget(512, block);
            let chosen = block_select(&layout, &refs, &qs, &options).expect("select");
            let list = &chosen.per_head[0];
            assert!(
                list.contains(&(needle / block)),
                "block {block} seed {seed}: needle at {needle} not in {list:?}"
            );
            assert!(
                list.contains(&0) && list.contains(&(blocks.len() - 1)),
                "sink and recent kept"
            );
            let tokens: usize = list.len() * block;
            assert!(tokens <= 512, "{tokens} tokens over the budget");
            assert!(list.windows(2).all(|w| w[0] < w[1]), "ascending");
            if block == 64 && seed == 0 {
                let everything = Selection::all(1, blocks.len());
                let sparse = sparse_partial(&layout, &blocks, &everything, &qs).expect("sparse");
                assert_eq!(
                    sparse,
                    decode_partial(&layout, &blocks, &qs).expect("dense")
                );
                let mean = SelectOptions {
                    score: Score::MeanKey,
                    ..options
                };
                let by_mean = block_select(&layout, &refs, &qs, &mean).expect("select");
                assert!(by_mean.per_head[0].len() * block <= 512);
            }
        }
    }
}

#[test]
fn forced_blocks_are_kept_even_over_the_budget() {
    let layout = KvLayout::new(2, 32, DType::F16, Tier::AsGiven).expect("layout");
    let mut rng = SmallRng::seed_from_u64(5);
    let stored: Vec<Vec<u8>> = (0..10)
        .map(|_| random_block(&layout, 32, &mut rng))
        .collect();
    let summaries: Vec<BlockSummary> = stored
        .iter()
        .map(|s| block_summary(&layout, &layout.split(32, s).expect("split")).expect("summary"))
        .collect();
    let refs: Vec<&BlockSummary> = summaries.iter().collect();
    let q = queries(&mut rng, 2 * 32);
    let qs = Queries {
        data: &q,
        positions: 1,
        q_heads: 2,
        scale: 0.2,
    };
    let options = SelectOptions {
        budget_tokens: 0,
        sink_blocks: 2,
        recent_tokens: 40,
        score: Score::Quest,
    };
    let chosen = block_select(&layout, &refs, &qs, &options).expect("select");
    assert_eq!(chosen.per_head, vec![vec![0, 1, 8, 9]; 2]);
    let roomy = SelectOptions {
        budget_tokens: 10 * 32,
        ..options
    };
    assert_eq!(
        block_select(&layout, &refs, &qs, &roomy).expect("select"),
        Selection::all(2, 10)
    );
}
