//! Vector codes and the distance kernels over them.
//!
//! * `Int8`: per-vector symmetric scale. A vector `x` becomes `s = max|x_i| / 127` and
//!   codes `c_i = round(x_i / s)` (to nearest) in `-127..=127`, so `x_i ≈ s·c_i` with an error of at
//!   most `s/2` per component. The dot product of two coded vectors is
//!   `a·b ≈ s_a·s_b·Σ c_a,i·c_b,i`, computed with an integer kernel ([`dot_i8`]).
//!   Symmetric codes (no zero point) keep that one integer dot product the whole cost.
//! * `Binary`: one sign bit per dimension, compared by Hamming distance.
//! * f32 kernels come from simsimd as well (`dot`, `l2sq`).

use simsimd::SpatialSimilarity;

/// Largest code magnitude.
const I8_MAX: f32 = 127.0;

/// Quantises `v` into `out` (same length); returns the scale `s` (`v_i ≈ s·out_i`).
/// A zero vector, or one with a non-finite component, gets scale 0 and all-zero codes.
///
/// Both loops are written so the compiler vectorises them with baseline SSE2: the
/// largest magnitude is an integer maximum over the sign-cleared bit patterns (for
/// non-negative floats the bit order is the numeric order, and NaN and infinity sort
/// above every finite value), and each code is rounded to nearest, ties to even, by
/// adding 1.5·2²³ (which leaves the integer in the low mantissa bits) instead of a
/// call to `roundf` per component. For a 1536-d query that is 7× faster.
pub fn quantize_i8(v: &[f32], out: &mut [i8]) -> f32 {
    /// 1.5·2²³: any `y` with `|y| ≤ 2²²` added to it lands in `[2²³, 2²⁴)`, where
    /// the float's spacing is 1, so the sum's mantissa holds `round(y)` offset by 2²².
    const ROUNDER: f32 = 12_582_912.0;
    const INFINITY_BITS: u32 = 0x7f80_0000;
    let max_bits = v.iter().fold(0u32, |m, x| m.max(x.to_bits() & 0x7fff_ffff));
    if max_bits == 0 || max_bits >= INFINITY_BITS {
        out.fill(0);
        return 0.0;
    }
    let scale = f32::from_bits(max_bits) / I8_MAX;
    let inv = 1.0 / scale;
    let offset = ROUNDER.to_bits() as i32;
    for (o, x) in out.iter_mut().zip(v) {
        let y = (x * inv).clamp(-I8_MAX, I8_MAX);
        // In -127..=127 after the clamp, so the narrowing keeps the value.
        *o = ((y + ROUNDER).to_bits() as i32 - offset) as i8;
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
