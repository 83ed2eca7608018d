//! Vector codes and the distance kernels over them.
//!
//! * `Int8`: per-vector symmetric scale. A vector `x` becomes `s = max|x_i| / 127` and
//!   codes `c_i = round(x_i / s)` in `-127..=127`, so `x_i ≈ s·c_i` with an error of at
//!   most `s/2` per component. The dot product of two coded vectors is
//!   `a·b ≈ s_a·s_b·Σ c_a,i·c_b,i`, computed with an integer kernel ([`dot_i8`]).
//!   Symmetric codes (no zero point) keep that one integer dot product the whole cost.
//! * `Binary`: one sign bit per dimension, compared by Hamming distance.
//! * f32 kernels come from simsimd as well (`dot`, `l2sq`).

use simsimd::SpatialSimilarity;

/// Largest code magnitude.
const I8_MAX: f32 = 127.0;

/// Quantises `v` into `out` (same length); returns the scale `s` (`v_i ≈ s·out_i`).
/// A zero vector gets scale 0 and all-zero codes.
pub fn quantize_i8(v: &[f32], out: &mut [i8]) -> f32 {
    let max = v.iter().fold(0f32, |m, x| m.max(x.abs()));
    if max == 0.0 || !max.is_finite() {
        out.fill(0);
        return 0.0;
    }
    let scale = max / I8_MAX;
    let inv = 1.0 / scale;
    for (o, x) in out.iter_mut().zip(v) {
        *o = (x * inv).round().clamp(-I8_MAX, I8_MAX) as i8;
    }
    scale
}

/// The vector a code stands for, multiplied by `factor` (1 for plain codes).
pub fn dequantize_i8(codes: &[i8], scale: f32, factor: f32) -> Vec<f32> {
    let s = scale * factor;
    codes.iter().map(|&c| c as f32 * s).collect()
}

/// `Σ a_i·b_i` over int8 codes (exact: it accumulates in i32), with the kernels
/// crate's dot product: on AVX-512 VNNI one `vpdpbusd` per 64 codes, on AVX2 the
/// sign of `a` moved onto `b` instead of widening both rows to 16 bits: 1.7×
/// (AVX-512) and 2.7× (AVX2) as fast as simsimd's kernel for the same CPU
/// (doc/vector-index.md). Exact for the symmetric codes [`quantize_i8`] makes.
#[inline]
pub fn dot_i8(a: &[i8], b: &[i8]) -> f32 {
    kernels::int8_dot::dot(a, b) as f32
}

/// The same dot product with simsimd's kernel for this CPU.
#[inline]
pub fn dot_i8_simsimd(a: &[i8], b: &[i8]) -> f32 {
    match i8::dot(a, b) {
        Some(d) => d as f32,
        None => dot_i8_scalar(a, b) as f32,
    }
}

/// The same dot product in plain Rust (the reference the kernel is tested and
/// benchmarked against).
pub fn dot_i8_scalar(a: &[i8], b: &[i8]) -> i32 {
    kernels::int8_dot::dot_scalar(a, b)
}

/// `a·b` in f32 with simsimd's kernel.
#[inline]
pub fn dot_f32(a: &[f32], b: &[f32]) -> f32 {
    match f32::dot(a, b) {
        Some(d) => d as f32,
        None => super::dot(a, b),
    }
}

/// `|a - b|²` in f32 with simsimd's kernel.
#[inline]
pub fn l2sq_f32(a: &[f32], b: &[f32]) -> f32 {
    match f32::l2sq(a, b) {
        Some(d) => d as f32,
        None => a.iter().zip(b).map(|(x, y)| (x - y) * (x - y)).sum(),
    }
}

/// Number of u64 words that hold `dim` sign bits.
pub fn binary_words(dim: usize) -> usize {
    dim.div_ceil(64)
}

/// Sign bits of `v` (bit set where the component is > 0) into `out`.
pub fn binarize(v: &[f32], out: &mut [u64]) {
    out.fill(0);
    for (i, &x) in v.iter().enumerate() {
        if x > 0.0 {
            out[i / 64] |= 1 << (i % 64);
        }
    }
}

/// The ±1 vector a sign code stands for.
pub fn unbinarize(words: &[u64], dim: usize) -> Vec<f32> {
    (0..dim)
        .map(|i| {
            if words[i / 64] >> (i % 64) & 1 == 1 {
                1.0
            } else {
                -1.0
            }
        })
        .collect()
}

/// Number of differing bits.
#[inline]
pub fn hamming(a: &[u64], b: &[u64]) -> u32 {
    a.iter().zip(b).map(|(x, y)| (x ^ y).count_ones()).sum()
}

/// The L2 norm.
pub fn norm(v: &[f32]) -> f32 {
    super::dot(v, v).sqrt()
}
