//! Plain f64 references the tests hold every path to: a decoder written from the
//! layout's description (not sharing the kernels' loaders), attention as the textbook
//! softmax, summaries as the definition says.

use half::{bf16, f16};

use crate::layout::{BlockKv, KvLayout};
use crate::quant::{DType, Tier};

/// One element of `dtype` at element index `i` of `bytes`.
fn element(dtype: DType, bytes: &[u8], i: usize) -> f64 {
    match dtype {
        DType::F16 => f64::from(f16::from_le_bytes([bytes[2 * i], bytes[2 * i + 1]]).to_f32()),
        DType::BF16 => f64::from(bf16::from_le_bytes([bytes[2 * i], bytes[2 * i + 1]]).to_f32()),
        DType::F32 => f64::from(f32::from_le_bytes([
            bytes[4 * i],
            bytes[4 * i + 1],
            bytes[4 * i + 2],
            bytes[4 * i + 3],
        ])),
    }
}

/// A whole stored tensor `[heads, tokens, head_dim]` in f64.
pub fn decode(layout: &KvLayout, tensor: &[u8], tokens: usize) -> Vec<f64> {
    let n = layout.kv_heads * tokens * layout.head_dim;
    let bits = match layout.tier {
        Tier::AsGiven => return (0..n).map(|i| element(layout.dtype, tensor, i)).collect(),
        Tier::Int8 => 8,
        Tier::Q4 => 4,
        Tier::Q2 => unreachable!("not an attention tier"),
    };
    let per_word = 32 / bits;
    let code_bytes = n / per_word * 4;
    let groups = n / 32;
    let psize = layout.dtype.size();
    let scales = &tensor[code_bytes..code_bytes + groups * psize];
    let biases = &tensor[code_bytes + groups * psize..];
    (0..n)
        .map(|i| {
            let w = i / per_word;
            let word = u32::from_le_bytes([
                tensor[4 * w],
                tensor[4 * w + 1],
                tensor[4 * w + 2],
                tensor[4 * w + 3],
            ]);
            let q = (word >> (bits * (i % per_word))) & ((1 << bits) - 1);
            let g = i / 32;
            element(layout.dtype, scales, g) * f64::from(q) + element(layout.dtype, biases, g)
        })
        .collect()
}

/// Softmax attention of every query row over the blocks `lists[head]` names: outputs
/// `[positions, q_heads, head_dim]` and LSEs `[positions, q_heads]`.
pub fn attention(
    layout: &KvLayout,
    blocks: &[BlockKv<'_>],
    lists: &[Vec<usize>],
    queries: &[f32],
    q_heads: usize,
    scale: f32,
) -> (Vec<f64>, Vec<f64>) {
    let d = layout.head_dim;
    let group = q_heads / layout.kv_heads;
    let positions = queries.len() / (q_heads * d);
    let decoded: Vec<(Vec<f64>, Vec<f64>, usize)> = blocks
        .iter()
        .map(|b| {
            (
                decode(layout, b.keys, b.tokens),
                decode(layout, b.values, b.tokens),
                b.tokens,
            )
        })
        .collect();
    let mut out = vec![0f64; positions * q_heads * d];
    let mut lse = vec![f64::NEG_INFINITY; positions * q_heads];
    for p in 0..positions {
        for qh in 0..q_heads {
            let h = qh / group;
            let row = p * q_heads + qh;
            let q = &queries[row * d..(row + 1) * d];
            let mut scores = Vec::new();
            let mut vals = Vec::new();
            for &b in &lists[h] {
                let (k, v, t) = &decoded[b];
                for tok in 0..*t {
                    let at = (h * t + tok) * d;
                    let s: f64 = (0..d)
                        .map(|j| f64::from(q[j]) * f64::from(scale) * k[at + j])
                        .sum();
                    scores.push(s);
                    vals.push(&v[at..at + d]);
                }
            }
            if scores.is_empty() {
                continue;
            }
            let m = scores.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let sum: f64 = scores.iter().map(|s| (s - m).exp()).sum();
            lse[row] = m + sum.ln();
            for (s, v) in scores.iter().zip(&vals) {
                let w = (s - m).exp() / sum;
                for j in 0..d {
                    out[row * d + j] += w * v[j];
                }
            }
        }
    }
    (out, lse)
}

/// `[kv_heads, 3, head_dim]`: each head's mean, minimum and maximum key.
pub fn summary(layout: &KvLayout, block: &BlockKv<'_>) -> Vec<f64> {
    let (d, t) = (layout.head_dim, block.tokens);
    let k = decode(layout, block.keys, t);
    let mut out = vec![0f64; layout.kv_heads * 3 * d];
    for h in 0..layout.kv_heads {
        for j in 0..d {
            let col: Vec<f64> = (0..t).map(|tok| k[(h * t + tok) * d + j]).collect();
            if col.is_empty() {
                continue;
            }
            out[h * 3 * d + j] = col.iter().sum::<f64>() / t as f64;
            out[h * 3 * d + d + j] = col.iter().copied().fold(f64::INFINITY, f64::min);
            out[h * 3 * d + 2 * d + j] = col.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        }
    }
    out
}
