//! Decode attention over stored blocks on the CPU: `decode_partial` over every block,
//! `sparse_partial` over the blocks a [`Selection`] chose for each KV head.
//!
//! Work is split into items of one KV head and a run of consecutive blocks of about
//! [`CHUNK_TOKENS`] tokens; rayon spreads the items over every core. Within an item the
//! head's query rows (every position × every query head of its GQA group) share each
//! K/V load: a block's keys for that head are decoded a tile of tokens at a time into
//! an f32 buffer that stays in the L1 cache, scored against all rows, and its values
//! likewise accumulated into all rows, with an online softmax in f32 per block. The items' states are merged per head in block order, so the result
//! depends on the inputs alone, never on how many threads ran them.

use rayon::prelude::*;

use crate::error::{refuse, KernelError};
use crate::layout::{BlockKv, KvLayout};
use crate::select::Selection;
use std::ops::Range;

use crate::simd::{self, Columns, Tile};
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

/// Tokens per tile: a block's keys and values are decoded into f32 a tile at a time,
/// into a buffer of about 8 KiB that stays in the L1 cache while every query row of
/// the head reads it (a multiple of 8 tokens, the scoring kernel's width).
fn tile_tokens(head_dim: usize) -> usize {
    (8192 / (4 * head_dim.max(1)) / 8 * 8).max(8)
}

/// Part `n` of `parts` nearly equal parts of `bytes` (empty past the end).
fn share(bytes: &[u8], parts: usize, n: usize) -> &[u8] {
    let each = bytes.len().div_ceil(parts.max(1));
    let start = (n * each).min(bytes.len());
    &bytes[start..(start + each).min(bytes.len())]
}

/// Rows `span` of KV head `head` of a stored tensor of `tokens` rows as the kernels
/// read them: the stored f16 or affine codes themselves where they convert them in
/// registers (a code group's scale and bias decoded into `params`), else decoded into
/// `decoded`.
fn tile_of<'t>(
    layout: &KvLayout,
    tensor: &'t [u8],
    tokens: usize,
    head: usize,
    span: Range<usize>,
    decoded: &'t mut [f32],
    params: &'t mut Vec<f32>,
) -> Tile<'t> {
    if simd::reads_in_place(layout.head_dim) {
        if let Some(bytes) = layout.stored_f16_rows(tensor, tokens, head, span.clone()) {
            return Tile::F16(bytes);
        }
        if let Some((codes, bits)) = layout.stored_codes(tensor, tokens, head, span.clone(), params)
        {
            let (scales, biases) = params.split_at(params.len() / 2);
            return Tile::Affine {
                codes,
                bits,
                scales,
                biases,
            };
        }
    }
    let out = &mut decoded[..span.len() * layout.head_dim];
    layout.load_rows(tensor, tokens, head, span, params, out);
    Tile::F32(out)
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
    let tile = tile_tokens(d);
    let mut max = vec![f32::NEG_INFINITY; rows];
    let mut sum = vec![0f32; rows];
    let mut acc = vec![0f32; rows * d];
    let mut decoded = vec![0f32; tile * d];
    let (mut scores, mut params) = (Vec::new(), Vec::new());
    for (i, &b) in run.iter().enumerate() {
        let block = &blocks[b];
        let t = block.tokens;
        if t == 0 {
            continue;
        }
        // Memory streams one phase ahead, a share per tile: this block's V while its
        // K is scored, the next block's K while this V is accumulated.
        let ahead_v = layout.head_bytes(block, head).1;
        let ahead_k = match run.get(i + 1) {
            Some(&next) => layout.head_bytes(&blocks[next], head).0,
            None => &[][..],
        };
        let tiles = t.div_ceil(tile);
        scores.resize(rows * t, 0.0);
        for n in 0..tiles {
            let span = n * tile..((n + 1) * tile).min(t);
            let cols = Columns {
                stride: t,
                at: span.start,
            };
            let keys = tile_of(layout, block.keys, t, head, span, &mut decoded, &mut params);
            simd::scores(
                queries,
                keys,
                d,
                &mut scores,
                cols,
                share(ahead_v, tiles, n),
            );
        }
        for r in 0..rows {
            let s = &mut scores[r * t..(r + 1) * t];
            let mut new_max = max[r];
            simd::raise_max(s, &mut new_max);
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
        for n in 0..tiles {
            let span = n * tile..((n + 1) * tile).min(t);
            let cols = Columns {
                stride: t,
                at: span.start,
            };
            let values = tile_of(
                layout,
                block.values,
                t,
                head,
                span,
                &mut decoded,
                &mut params,
            );
            simd::accumulate(&scores, cols, values, d, &mut acc, share(ahead_k, tiles, n));
        }
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
