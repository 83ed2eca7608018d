//! Block summaries: per block and KV head, the mean key and the per-dimension minimum
//! and maximum keys, computed once when a block is stored. Quest's bound
//! `Σ_j max(q_j·min_j, q_j·max_j)` is then an upper bound on any of the block's scores
//! for a query, and the mean key's score an estimate of their average; the selector
//! ranks blocks by them without reading the block.

use crate::error::KernelError;
use crate::layout::{BlockKv, KvLayout};

/// One block's summary for one layer.
#[derive(Debug, Clone, PartialEq)]
pub struct BlockSummary {
    /// Tokens the block covers (0: an empty block, never selected by score).
    pub tokens: usize,
    /// Elements per head.
    pub head_dim: usize,
    /// `[kv_heads, 3, head_dim]`: per KV head its mean, minimum and maximum key.
    pub data: Vec<f32>,
}

impl BlockSummary {
    /// KV heads summarised.
    pub fn kv_heads(&self) -> usize {
        self.data.len() / (3 * self.head_dim.max(1))
    }

    /// KV head `head`'s (mean, min, max) keys.
    pub fn head(&self, head: usize) -> (&[f32], &[f32], &[f32]) {
        let d = self.head_dim;
        let at = head * 3 * d;
        (
            &self.data[at..at + d],
            &self.data[at + d..at + 2 * d],
            &self.data[at + 2 * d..at + 3 * d],
        )
    }

    /// The summary as little-endian f32 bytes (`[kv_heads, 3, head_dim]`), for storing
    /// next to the block.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.data.iter().flat_map(|x| x.to_le_bytes()).collect()
    }
}

/// The summary of one stored block (checked against `layout`).
pub fn block_summary(layout: &KvLayout, block: &BlockKv<'_>) -> Result<BlockSummary, KernelError> {
    layout.check(block)?;
    let (d, t) = (layout.head_dim, block.tokens);
    let mut data = vec![0f32; layout.kv_heads * 3 * d];
    let (mut keys, mut params) = (vec![0f32; t * d], Vec::new());
    for h in 0..layout.kv_heads {
        let out = &mut data[h * 3 * d..(h + 1) * 3 * d];
        if t == 0 {
            continue;
        }
        layout.load_head(block.keys, t, h, &mut params, &mut keys);
        let (mean, rest) = out.split_at_mut(d);
        let (lo, hi) = rest.split_at_mut(d);
        lo.fill(f32::INFINITY);
        hi.fill(f32::NEG_INFINITY);
        for row in keys.chunks_exact(d) {
            for j in 0..d {
                mean[j] += row[j];
                lo[j] = lo[j].min(row[j]);
                hi[j] = hi[j].max(row[j]);
            }
        }
        let inv = 1.0 / t as f32;
        mean.iter_mut().for_each(|m| *m *= inv);
    }
    Ok(BlockSummary {
        tokens: t,
        head_dim: d,
        data,
    })
}
