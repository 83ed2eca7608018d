//! Decode attention over stored blocks on the CPU: `decode_partial` over every block,
//! `sparse_partial` over the blocks a [`Selection`] chose for each KV head.
//!
//! Work is split into items of one KV head and a run of consecutive blocks of about
//! [`CHUNK_TOKENS`] tokens; rayon spreads the items over every core. Within an item the
//! head's query rows (every position × every query head of its GQA group) share each
//! K/V load: a block's keys for that head are decoded once into a small f32 buffer,
//! scored against all rows, and its values accumulated into all rows, with an online
//! softmax in f32. The items' states are merged per head in block order, so the result
//! depends on the inputs alone, never on how many threads ran them.

use rayon::prelude::*;

use crate::error::{refuse, KernelError};
use crate::layout::{BlockKv, KvLayout};
use crate::select::Selection;
use crate::simd;
use crate::state::AttnState;

/// Tokens per work item (a run of whole blocks reaching at least this many).
pub const CHUNK_TOKENS: usize = 2048;

/// Post-RoPE query heads for a batch of positions.
#[derive(Debug, Clone, Copy)]
pub struct Queries<'a> {
    /// `[positions, q_heads, head_dim]`, row-major.
    pub data: &'a [f32],
    /// Positions in the batch (every one attends the whole prefix: the prefix comes
    /// before them all).
    pub positions: usize,
    /// Query heads per position: a multiple of the layout's KV heads (query head `q`
    /// reads KV head `q / (q_heads / kv_heads)`).
    pub q_heads: usize,
    /// The softmax scale (commonly `1/sqrt(head_dim)`).
    pub scale: f32,
}

impl Queries<'_> {
    /// Checks the shape against `layout`; returns the GQA group size.
    pub fn check(&self, layout: &KvLayout) -> Result<usize, KernelError> {
        if self.positions == 0 || self.q_heads == 0 {
            refuse!("queries need at least one position and one head");
        }
        if !self.q_heads.is_multiple_of(layout.kv_heads) {
            refuse!(
                "{} query heads do not divide into {} KV heads",
                self.q_heads,
                layout.kv_heads
            );
        }
        let want = self
            .positions
            .checked_mul(self.q_heads)
            .and_then(|n| n.checked_mul(layout.head_dim));
        if want != Some(self.data.len()) {
            refuse!(
                "queries of {} positions × {} heads × {} need {} floats, got {}",
                self.positions,
                self.q_heads,
                layout.head_dim,
                want.map_or("too many".to_string(), |n| n.to_string()),
                self.data.len()
            );
        }
        if !self.scale.is_finite() {
            refuse!("the softmax scale must be finite");
        }
        Ok(self.q_heads / layout.kv_heads)
    }

    /// KV head `head`'s rows, scaled: for each position, its group's query heads.
    pub(crate) fn head_rows(&self, head: usize, group: usize, head_dim: usize) -> Vec<f32> {
        let mut rows = Vec::with_capacity(self.positions * group * head_dim);
        for p in 0..self.positions {
            let first = (p * self.q_heads + head * group) * head_dim;
            rows.extend(
                self.data[first..first + group * head_dim]
                    .iter()
                    .map(|x| x * self.scale),
            );
        }
        rows
    }
}

/// Attention of every query row over all of `blocks` (one layer's blocks of a stored
/// prefix, in order): the output normalised over those keys and its LSE, rows in
/// `[positions, q_heads]` order.
pub fn decode_partial(
    layout: &KvLayout,
    blocks: &[BlockKv<'_>],
    queries: &Queries<'_>,
) -> Result<AttnState, KernelError> {
    let all: Vec<usize> = (0..blocks.len()).collect();
    let lists = vec![all.as_slice(); layout.kv_heads];
    partial(layout, blocks, &lists, queries)
}

/// [`decode_partial`] over only the blocks `selection` chose for each KV head.
pub fn sparse_partial(
    layout: &KvLayout,
    blocks: &[BlockKv<'_>],
    selection: &Selection,
    queries: &Queries<'_>,
) -> Result<AttnState, KernelError> {
    if selection.per_head.len() != layout.kv_heads {
        refuse!(
            "a selection for {} KV heads, the layout has {}",
            selection.per_head.len(),
            layout.kv_heads
        );
    }
    let lists: Vec<&[usize]> = selection.per_head.iter().map(Vec::as_slice).collect();
    partial(layout, blocks, &lists, queries)
}

/// Attention of each KV head's rows over the blocks `lists[head]` names.
fn partial(
    layout: &KvLayout,
    blocks: &[BlockKv<'_>],
    lists: &[&[usize]],
    queries: &Queries<'_>,
) -> Result<AttnState, KernelError> {
    let group = queries.check(layout)?;
    for block in blocks {
        layout.check(block)?;
    }
    for list in lists {
        if let Some(&bad) = list.iter().find(|&&i| i >= blocks.len()) {
            refuse!("block index {bad} out of range: {} blocks", blocks.len());
        }
    }
    let d = layout.head_dim;
    let rows = queries.positions * group;
    let head_rows: Vec<Vec<f32>> = (0..layout.kv_heads)
        .map(|h| queries.head_rows(h, group, d))
        .collect();
    let items = work_items(blocks, lists);
    let parts: Vec<AttnState> = items
        .par_iter()
        .map(|&(head, ref run)| {
            head_part(
                layout,
                blocks,
                &lists[head][run.clone()],
                head,
                &head_rows[head],
                rows,
            )
        })
        .collect();
    let mut out = AttnState::empty(queries.positions * queries.q_heads, d);
    let mut parts = items.iter().map(|(h, _)| *h).zip(parts).peekable();
    for head in 0..layout.kv_heads {
        let mut merged = AttnState::empty(rows, d);
        while let Some((_, part)) = parts.next_if(|(h, _)| *h == head) {
            merged.merge(&part)?;
        }
        for r in 0..rows {
            let (p, g) = (r / group, r % group);
            let row = p * queries.q_heads + head * group + g;
            out.lse[row] = merged.lse[r];
            out.out[row * d..(row + 1) * d].copy_from_slice(&merged.out[r * d..(r + 1) * d]);
        }
    }
    Ok(out)
}

/// (KV head, range of its list) items, each a run of blocks of at least
/// [`CHUNK_TOKENS`] tokens (the last of a head's may be shorter), in head order.
fn work_items(blocks: &[BlockKv<'_>], lists: &[&[usize]]) -> Vec<(usize, std::ops::Range<usize>)> {
    let mut items = Vec::new();
    for (head, list) in lists.iter().enumerate() {
        let (mut start, mut tokens) = (0, 0);
        for (i, &b) in list.iter().enumerate() {
            tokens += blocks[b].tokens;
            if tokens >= CHUNK_TOKENS {
                items.push((head, start..i + 1));
                (start, tokens) = (i + 1, 0);
            }
        }
        if start < list.len() {
            items.push((head, start..list.len()));
        }
    }
    items
}

/// One KV head's rows over a run of blocks, with an online softmax.
fn head_part(
    layout: &KvLayout,
    blocks: &[BlockKv<'_>],
    run: &[usize],
    head: usize,
    queries: &[f32],
    rows: usize,
) -> AttnState {
    let d = layout.head_dim;
    let mut max = vec![f32::NEG_INFINITY; rows];
    let mut sum = vec![0f32; rows];
    let mut acc = vec![0f32; rows * d];
    let (mut keys, mut values, mut scores, mut params) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for (i, &b) in run.iter().enumerate() {
        let block = &blocks[b];
        let t = block.tokens;
        if t == 0 {
            continue;
        }
        // The next block's K streams in while this block is scored, its V while
        // this block's values are accumulated.
        let (next_k, next_v) = match run.get(i + 1) {
            Some(&next) => layout.head_bytes(&blocks[next], head),
            None => (&[][..], &[][..]),
        };
        keys.resize(t * d, 0.0);
        layout.load_head(block.keys, t, head, &mut params, &mut keys);
        scores.resize(rows * t, 0.0);
        simd::scores(queries, &keys, d, &mut scores, next_k);
        for r in 0..rows {
            let s = &mut scores[r * t..(r + 1) * t];
            let block_max = s.iter().copied().fold(f32::NEG_INFINITY, f32::max);
            let new_max = max[r].max(block_max);
            let mut block_sum = 0.0;
            simd::softmax_weights(s, new_max, &mut block_sum);
            if max[r] != new_max && max[r] != f32::NEG_INFINITY {
                let c = (max[r] - new_max).exp();
                sum[r] *= c;
                acc[r * d..(r + 1) * d].iter_mut().for_each(|x| *x *= c);
            }
            max[r] = new_max;
            sum[r] += block_sum;
        }
        values.resize(t * d, 0.0);
        layout.load_head(block.values, t, head, &mut params, &mut values);
        simd::accumulate(&scores, &values, d, &mut acc, next_v);
    }
    let mut state = AttnState::empty(rows, d);
    for r in 0..rows {
        if sum[r] > 0.0 {
            state.lse[r] = max[r] + sum[r].ln();
            let inv = 1.0 / sum[r];
            for (o, a) in state.out[r * d..(r + 1) * d]
                .iter_mut()
                .zip(&acc[r * d..(r + 1) * d])
            {
                *o = a * inv;
            }
        }
    }
    state
}
