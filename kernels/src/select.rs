//! Query-aware block selection for long contexts: each KV head keeps the first
//! block(s) (attention sinks), a recent window, and then the blocks whose summary
//! scores highest for the query, while their tokens fit a budget. Scores come from the
//! [`BlockSummary`]s alone, so selecting reads a few floats per block instead of the
//! block.
//!
//! A KV head's score for a block is the largest over the rows it serves (every
//! position × every query head of its group), so a block any of those heads needs
//! is kept for all of them.

use rayon::prelude::*;

use crate::attend::Queries;
use crate::error::{refuse, KernelError};
use crate::layout::KvLayout;
use crate::summary::BlockSummary;

/// How a block is scored for a query row `q` (already scaled).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Score {
    /// Quest's upper bound `Σ_j max(q_j·min_j, q_j·max_j)`: no key of the block can
    /// score higher, so a block holding one strongly matching key is never ranked
    /// below blocks that cannot reach it.
    Quest,
    /// The mean key's score `q·mean`: the block's average affinity.
    MeanKey,
}

/// What the selector keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SelectOptions {
    /// Tokens each KV head may attend, the kept first and recent blocks included
    /// (those are kept even when they alone exceed it).
    pub budget_tokens: usize,
    /// Leading blocks always kept.
    pub sink_blocks: usize,
    /// Trailing blocks are always kept until they cover at least this many tokens.
    pub recent_tokens: usize,
    /// How the other blocks are ranked.
    pub score: Score,
}

impl SelectOptions {
    /// A budget with one sink block, one recent block's worth of tokens
    /// (`block_tokens`) and Quest's bound.
    pub fn with_budget(budget_tokens: usize, block_tokens: usize) -> SelectOptions {
        SelectOptions {
            budget_tokens,
            sink_blocks: 1,
            recent_tokens: block_tokens,
            score: Score::Quest,
        }
    }
}

/// For each KV head, the indices (ascending) of the blocks it attends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    /// `[kv_heads]` lists of block indices.
    pub per_head: Vec<Vec<usize>>,
}

impl Selection {
    /// Every block for every head.
    pub fn all(kv_heads: usize, blocks: usize) -> Selection {
        Selection {
            per_head: vec![(0..blocks).collect(); kv_heads],
        }
    }

    /// Blocks selected, summed over heads.
    pub fn blocks(&self) -> usize {
        self.per_head.iter().map(Vec::len).sum()
    }
}

/// The score of one block's summary for KV head `head` over `rows` (scaled queries,
/// `head_dim` each).
pub(crate) fn head_score(summary: &BlockSummary, head: usize, rows: &[f32], score: Score) -> f32 {
    let (mean, lo, hi) = summary.head(head);
    rows.chunks_exact(summary.head_dim)
        .map(|q| match score {
            Score::Quest => lanes_sum(q, lo, hi, |x, l, h| (x * l).max(x * h)),
            Score::MeanKey => lanes_sum(q, mean, mean, |x, m, _| x * m),
        })
        .fold(f32::NEG_INFINITY, f32::max)
}

/// `Σ_j f(q_j, a_j, b_j)` in eight interleaved partial sums (so it vectorises), reduced
/// in a fixed order.
#[inline(always)]
fn lanes_sum(q: &[f32], a: &[f32], b: &[f32], f: impl Fn(f32, f32, f32) -> f32) -> f32 {
    let mut acc = [0f32; 8];
    let (cq, ca, cb) = (q.chunks_exact(8), a.chunks_exact(8), b.chunks_exact(8));
    let (rq, ra, rb) = (cq.remainder(), ca.remainder(), cb.remainder());
    for ((x, y), z) in cq.zip(ca).zip(cb) {
        for j in 0..8 {
            acc[j] += f(x[j], y[j], z[j]);
        }
    }
    for (j, ((x, y), z)) in rq.iter().zip(ra).zip(rb).enumerate() {
        acc[j] += f(*x, *y, *z);
    }
    ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]))
}

/// Chooses each KV head's blocks for `queries` from the blocks' summaries (in
/// sequence order).
pub fn block_select(
    layout: &KvLayout,
    summaries: &[&BlockSummary],
    queries: &Queries<'_>,
    options: &SelectOptions,
) -> Result<Selection, KernelError> {
    let group = queries.check(layout)?;
    for (i, s) in summaries.iter().enumerate() {
        if s.head_dim != layout.head_dim || s.kv_heads() != layout.kv_heads {
            refuse!("summary {i} is not of this layout");
        }
    }
    let scores: Vec<Vec<f32>> = (0..layout.kv_heads)
        .into_par_iter()
        .map(|head| {
            let rows = queries.head_rows(head, group, layout.head_dim);
            summaries
                .iter()
                .map(|s| head_score(s, head, &rows, options.score))
                .collect()
        })
        .collect();
    Ok(choose(summaries, &scores, options))
}

/// Each head's blocks from its scores (`scores[head][block]`): the forced first and
/// recent blocks, then the highest scoring others while the budget holds.
pub(crate) fn choose(
    summaries: &[&BlockSummary],
    scores: &[Vec<f32>],
    options: &SelectOptions,
) -> Selection {
    let n = summaries.len();
    let mut forced = vec![false; n];
    forced[..options.sink_blocks.min(n)].fill(true);
    let mut recent = 0;
    for i in (0..n).rev() {
        if recent >= options.recent_tokens {
            break;
        }
        forced[i] = true;
        recent += summaries[i].tokens;
    }
    let forced_tokens: usize = (0..n)
        .filter(|&i| forced[i])
        .map(|i| summaries[i].tokens)
        .sum();
    let per_head = scores
        .iter()
        .map(|head_scores| {
            let mut ranked: Vec<(f32, usize)> = (0..n)
                .filter(|&i| !forced[i] && summaries[i].tokens > 0)
                .map(|i| (head_scores[i], i))
                .collect();
            // Highest score first; ties (and NaN) by position, so the choice is stable.
            ranked.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            let mut keep = forced.clone();
            let mut tokens = forced_tokens;
            for (_, i) in ranked {
                let t = summaries[i].tokens;
                if tokens + t <= options.budget_tokens {
                    keep[i] = true;
                    tokens += t;
                }
            }
            (0..n).filter(|&i| keep[i]).collect()
        })
        .collect();
    Selection { per_head }
}
