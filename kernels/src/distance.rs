//! Exact f32 distances between a query and stored vectors: what a vector index
//! computes over rows it has not linked yet, and what a search re-ranks its
//! candidates with, reading each document's FLOAT32 field where it lies (little-endian
//! bytes at any alignment, never copied into a vector first).
//!
//! A plain `iter().sum()` adds one product at a time, each waiting on the last: 384
//! dependent additions per distance. Here 16 partial sums run side by side and are
//! reduced pairwise, in an AVX2 + FMA copy where the CPU has one (see `simd`), so the
//! order of the additions is fixed by the length alone and the same inputs give the
//! same bits on every run. Short vectors (under 16 elements) are summed in order, as
//! a plain loop would.

use crate::simd::{fast, madd};

/// Partial sums kept side by side.
const LANES: usize = 16;

/// Bytes of one little-endian f32.
const F32_BYTES: usize = 4;

/// Reduces the partial sums pairwise (a fixed order).
#[inline(always)]
fn reduce(mut acc: [f32; LANES]) -> f32 {
    let mut width = LANES / 2;
    while width > 0 {
        for j in 0..width {
            acc[j] += acc[j + width];
        }
        width /= 2;
    }
    acc[0]
}

/// The f32 at `bytes[4 * i..]`, little-endian.
#[inline(always)]
fn le(bytes: &[u8], i: usize) -> f32 {
    let at = i * F32_BYTES;
    f32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

/// What one pass over a stored row gives: `Σ q_i·x_i`, `Σ x_i²` and `Σ (q_i − x_i)²`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RowSums {
    /// The inner product with the query.
    pub dot: f32,
    /// The row's squared norm.
    pub norm2: f32,
    /// The squared Euclidean distance to the query.
    pub l2sq: f32,
}

/// The three sums of one chunk of 16 elements, each into its own 16 partial sums
/// (three plain loops, which the compiler turns into vector instructions).
#[inline(always)]
fn chunk<const FMA: bool>(
    q: &[f32; LANES],
    x: &[f32; LANES],
    dot: &mut [f32; LANES],
    norm2: &mut [f32; LANES],
    l2: &mut [f32; LANES],
) {
    for j in 0..LANES {
        dot[j] = madd::<FMA>(q[j], x[j], dot[j]);
    }
    for j in 0..LANES {
        norm2[j] = madd::<FMA>(x[j], x[j], norm2[j]);
    }
    for j in 0..LANES {
        let d = q[j] - x[j];
        l2[j] = madd::<FMA>(d, d, l2[j]);
    }
}

/// The sums over `q` and `x` (the same length), `x` read through `row` one chunk of
/// 16 at a time and element by element past the last whole chunk.
#[inline(always)]
fn sums<const FMA: bool>(
    q: &[f32],
    row: impl Fn(usize) -> [f32; LANES],
    tail: impl Fn(usize) -> f32,
) -> RowSums {
    let (mut dot, mut norm2, mut l2) = ([0f32; LANES], [0f32; LANES], [0f32; LANES]);
    let (qc, qt) = q.as_chunks::<LANES>();
    for (c, a) in qc.iter().enumerate() {
        chunk::<FMA>(a, &row(c), &mut dot, &mut norm2, &mut l2);
    }
    let base = qc.len() * LANES;
    for (j, a) in qt.iter().enumerate() {
        let b = tail(base + j);
        dot[j] = madd::<FMA>(*a, b, dot[j]);
        norm2[j] = madd::<FMA>(b, b, norm2[j]);
        let d = a - b;
        l2[j] = madd::<FMA>(d, d, l2[j]);
    }
    RowSums {
        dot: reduce(dot),
        norm2: reduce(norm2),
        l2sq: reduce(l2),
    }
}

#[inline(always)]
fn sums_f32_body<const FMA: bool>(q: &[f32], x: &[f32]) -> RowSums {
    let (xc, _) = x.as_chunks::<LANES>();
    sums::<FMA>(q, |c| xc[c], |i| x[i])
}

#[inline(always)]
fn sums_le_body<const FMA: bool>(q: &[f32], row: &[u8]) -> RowSums {
    let (xc, _) = row.as_chunks::<{ LANES * F32_BYTES }>();
    sums::<FMA>(
        q,
        |c| std::array::from_fn(|j| le(&xc[c], j)),
        |i| le(row, i),
    )
}

/// Runs `$body::<true>` in an AVX2 + FMA copy where the CPU has them, else
/// `$body::<false>`, and returns what it returns.
macro_rules! with_fma {
    ($body:ident ($q:ident, $x:ident : $xty:ty) -> $ret:ty) => {{
        #[cfg(target_arch = "x86_64")]
        {
            #[target_feature(enable = "avx2,fma,f16c")]
            fn avx2(q: &[f32], x: $xty) -> $ret {
                $body::<true>(q, x)
            }
            if fast() {
                // SAFETY: `fast()` has just checked that this CPU has every feature
                // the copy was compiled for.
                unsafe { avx2($q, $x) }
            } else {
                $body::<false>($q, $x)
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            $body::<false>($q, $x)
        }
    }};
}

/// The sums of `q` against a row stored as `4 * q.len()` little-endian f32 bytes;
/// `None` when `row` has another length.
pub fn row_sums_le(q: &[f32], row: &[u8]) -> Option<RowSums> {
    if row.len() != q.len() * F32_BYTES {
        return None;
    }
    Some(with_fma!(sums_le_body(q, row: &[u8]) -> RowSums))
}

/// The sums of `q` against a row of f32 (over the shorter length of the two).
pub fn row_sums(q: &[f32], x: &[f32]) -> RowSums {
    let n = q.len().min(x.len());
    let (q, x) = (&q[..n], &x[..n]);
    with_fma!(sums_f32_body(q, x: &[f32]) -> RowSums)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(q: &[f32], x: &[f32]) -> (f64, f64, f64) {
        let dot = q.iter().zip(x).map(|(a, b)| *a as f64 * *b as f64).sum();
        let norm2 = x.iter().map(|b| *b as f64 * *b as f64).sum();
        let l2 = q
            .iter()
            .zip(x)
            .map(|(a, b)| (*a as f64 - *b as f64).powi(2))
            .sum();
        (dot, norm2, l2)
    }

    fn rows(n: usize, seed: u32) -> Vec<f32> {
        let mut s = seed;
        (0..n)
            .map(|_| {
                s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                (s >> 8) as f32 / (1u32 << 24) as f32 - 0.5
            })
            .collect()
    }

    #[test]
    fn sums_match_an_f64_reference_at_every_length_and_alignment() {
        for n in [0, 1, 2, 3, 15, 16, 17, 31, 64, 383, 384, 1536] {
            let q = rows(n, 7);
            let x = rows(n, 11);
            let (dot, norm2, l2) = reference(&q, &x);
            let tol = |v: f64| 1e-5 * (1.0 + v.abs()) * (n as f64).sqrt().max(1.0);
            let s = row_sums(&q, &x);
            assert!(
                (s.dot as f64 - dot).abs() <= tol(dot),
                "{n}: {s:?} vs {dot}"
            );
            assert!((s.norm2 as f64 - norm2).abs() <= tol(norm2), "{n}");
            assert!((s.l2sq as f64 - l2).abs() <= tol(l2), "{n}");
            // The same row as stored bytes, at every offset within a word.
            for shift in 0..4 {
                let mut buf = vec![0xAAu8; shift];
                buf.extend(x.iter().flat_map(|v| v.to_le_bytes()));
                let from_bytes = row_sums_le(&q, &buf[shift..]).expect("whole row");
                assert_eq!(from_bytes, s, "{n} at offset {shift}");
            }
        }
    }

    #[test]
    fn two_element_rows_sum_as_written_and_wrong_lengths_are_refused() {
        let q = [3.0f32, 4.0];
        let x = [1.5f32, -2.0];
        let s = row_sums(&q, &x);
        assert_eq!(s.dot, 3.0 * 1.5 + 4.0 * -2.0);
        assert_eq!(s.norm2, 1.5 * 1.5 + 2.0 * 2.0);
        assert_eq!(s.l2sq, 1.5 * 1.5 + 6.0 * 6.0);
        assert_eq!(row_sums_le(&q, &[0u8; 7]), None);
        assert_eq!(row_sums_le(&q, &[0u8; 12]), None);
    }
}
