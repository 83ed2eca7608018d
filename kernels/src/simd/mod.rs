//! The CPU paths' inner loops, compiled twice: for AVX2 + FMA + F16C where the CPU has
//! them (chosen at run time, once per call of a coarse loop, so the check costs
//! nothing), and for the baseline target. The bodies are the same Rust; the
//! `#[target_feature]` copies let the compiler vectorise them 8 lanes wide and fuse
//! the multiply-adds. Every loop's summation order is fixed by the data's shape, so
//! a copy gives the same bits on every run (the two copies differ only by the
//! rounding of a fused multiply-add).

use half::{bf16, f16};

/// Whether this CPU runs the AVX2 copies.
#[inline]
pub(crate) fn fast() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("fma")
            && std::arch::is_x86_feature_detected!("f16c")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

/// Defines `$vis fn $name(args)` that runs `$body::<true>` (fused multiply-add) in an
/// AVX2 + FMA + F16C copy where the CPU has them, `$body::<false>` otherwise; the
/// caller has `fast` (this module's) in scope.
macro_rules! dispatched {
    ($(#[$doc:meta])* $vis:vis $name:ident => $body:ident ($($arg:ident : $ty:ty),* $(,)?)) => {
        $(#[$doc])*
        $vis fn $name($($arg: $ty),*) {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx2,fma,f16c")]
                fn avx2($($arg: $ty),*) {
                    $body::<true>($($arg),*)
                }
                if fast() {
                    // SAFETY: `fast()` has just checked that this CPU has every
                    // feature the copy was compiled for.
                    unsafe { avx2($($arg),*) };
                    return;
                }
            }
            $body::<false>($($arg),*)
        }
    };
}
pub(crate) use dispatched;

/// `a * b + c`, fused where the copy has FMA.
#[inline(always)]
pub(crate) fn madd<const FMA: bool>(a: f32, b: f32, c: f32) -> f32 {
    if FMA {
        a.mul_add(b, c)
    } else {
        a * b + c
    }
}

/// The dot product of two equal-length rows, in 16 interleaved partial sums reduced
/// pairwise (a fixed order).
#[inline(always)]
pub(crate) fn dot<const FMA: bool>(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; 16];
    let (ca, cb) = (a.chunks_exact(16), b.chunks_exact(16));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for j in 0..16 {
            acc[j] = madd::<FMA>(x[j], y[j], acc[j]);
        }
    }
    for (j, (x, y)) in ra.iter().zip(rb).enumerate() {
        acc[j] = madd::<FMA>(*x, *y, acc[j]);
    }
    let mut width = 8;
    while width > 0 {
        for j in 0..width {
            acc[j] += acc[j + width];
        }
        width /= 2;
    }
    acc[0]
}

/// Where a tile of tokens sits in a rows × `stride` matrix of scores or weights: row
/// `r`'s entry for the tile's token `u` is at `r * stride + at + u`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Columns {
    /// The matrix's row length (the block's tokens).
    pub stride: usize,
    /// The tile's first column.
    pub at: usize,
}

#[inline(always)]
fn scores_body<const FMA: bool>(
    queries: &[f32],
    keys: &[f32],
    dim: usize,
    scores: &mut [f32],
    cols: Columns,
) {
    for (t, k) in keys.chunks_exact(dim).enumerate() {
        for (r, q) in queries.chunks_exact(dim).enumerate() {
            scores[r * cols.stride + cols.at + t] = dot::<FMA>(q, k);
        }
    }
}

dispatched! {
    /// `scores[r * stride + at + t] = queries[r] · keys[t]` for rows of `dim` elements,
    /// the loop every copy compiles.
    pub(crate) scores_any => scores_body(queries: &[f32], keys: &[f32], dim: usize, scores: &mut [f32], cols: Columns)
}

/// A tile of K or V rows as the kernels read it: decoded into f32, or the stored
/// little-endian f16 itself, which the AVX2 copies convert in registers (one pass over
/// each stored byte, no f32 copy).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Tile<'a> {
    /// Rows decoded into f32.
    F32(&'a [f32]),
    /// Rows of little-endian f16 as stored.
    F16(&'a [u8]),
    /// Rows of affine codes as stored (8 or 4 bits, groups of 32 elements, low
    /// nibble first), with each group's scale and bias decoded: element `i` is
    /// `scales[i / 32] * code_i + biases[i / 32]`.
    Affine {
        codes: &'a [u8],
        bits: u32,
        scales: &'a [f32],
        biases: &'a [f32],
    },
}

impl Tile<'_> {
    /// Whole rows of `dim` elements in the tile, or `None` when its length is not a
    /// whole number of them.
    fn rows(&self, dim: usize) -> Option<usize> {
        let whole = |len: usize, per_row: usize| {
            (per_row > 0 && len.is_multiple_of(per_row)).then(|| len / per_row)
        };
        match *self {
            Tile::F32(x) => whole(x.len(), dim),
            Tile::F16(x) => whole(x.len(), 2 * dim),
            Tile::Affine {
                codes,
                bits,
                scales,
                biases,
            } => {
                if !matches!(bits, 4 | 8) || !dim.is_multiple_of(32) {
                    return None;
                }
                let rows = whole(codes.len(), dim * bits as usize / 8)?;
                let groups = rows * dim / 32;
                (scales.len() == groups && biases.len() == groups).then_some(rows)
            }
        }
    }
}

/// Whether the AVX2 copies read f16 and affine tiles in place for rows of `dim`
/// elements (else a caller decodes them into f32 first).
pub(crate) fn reads_in_place(dim: usize) -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        fast() && dim > 0 && dim.is_multiple_of(8)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = dim;
        false
    }
}

/// Runs `f` over `tile` as f32 rows, converting an f16 tile into a scratch buffer.
fn with_f32<R>(tile: Tile<'_>, f: impl FnOnce(&[f32]) -> R) -> R {
    match tile {
        Tile::F32(x) => f(x),
        Tile::F16(bytes) => {
            let mut decoded = vec![0f32; bytes.len() / 2];
            f16_to_f32(bytes, &mut decoded);
            f(&decoded)
        }
        Tile::Affine {
            codes,
            bits,
            scales,
            biases,
        } => {
            let mut decoded = vec![0f32; scales.len() * 32];
            affine_to_f32(codes, bits, scales, biases, &mut decoded);
            f(&decoded)
        }
    }
}

/// `scores[r * stride + at + t] = queries[r] · keys[t]` for rows of `dim` elements (a
/// tile of keys, its columns `cols` of the rows × stride `scores`): [`x86::scores`]
/// where the CPU has AVX2 and `dim` is a multiple of 8, the plain loop otherwise.
/// `ahead` (the next bytes the caller will read) is prefetched a few lines per group
/// of tokens, so memory keeps streaming while this computes.
pub(crate) fn scores(
    queries: &[f32],
    keys: Tile<'_>,
    dim: usize,
    scores: &mut [f32],
    cols: Columns,
    ahead: &[u8],
) {
    #[cfg(target_arch = "x86_64")]
    if let Some(tokens) = keys.rows(dim) {
        if fast() && x86::fits(queries, tokens, dim, scores, cols) {
            // SAFETY: `fast()` checked the CPU's features, `rows` the tile's length
            // and `fits` the other slices' shapes.
            unsafe { x86::scores(queries, keys, tokens, dim, scores, cols, ahead) };
            return;
        }
    }
    prefetch(ahead);
    with_f32(keys, |keys| scores_any(queries, keys, dim, scores, cols))
}

#[inline(always)]
fn accumulate_body<const FMA: bool>(
    weights: &[f32],
    cols: Columns,
    values: &[f32],
    dim: usize,
    out: &mut [f32],
) {
    let tokens = values.len() / dim;
    for (r, acc) in out.chunks_exact_mut(dim).enumerate() {
        let first = r * cols.stride + cols.at;
        let w = &weights[first..first + tokens];
        for (&p, v) in w.iter().zip(values.chunks_exact(dim)) {
            for (a, &x) in acc.iter_mut().zip(v) {
                *a = madd::<FMA>(p, x, *a);
            }
        }
    }
}

dispatched! {
    /// `out[r] += Σ_t weights[r * stride + at + t] * values[t]`, rows of `dim`
    /// elements, in token order, the loop every copy compiles.
    pub(crate) accumulate_any => accumulate_body(weights: &[f32], cols: Columns, values: &[f32], dim: usize, out: &mut [f32])
}

/// `out[r] += Σ_t weights[r * stride + at + t] * values[t]`, rows of `dim` elements
/// (a tile of values, its columns `cols` of the rows × stride `weights`), in token
/// order: [`x86::accumulate`] where the CPU has AVX2 and `dim` is a multiple of 8,
/// the plain loop otherwise. `ahead` is prefetched along the way, as for [`scores`].
pub(crate) fn accumulate(
    weights: &[f32],
    cols: Columns,
    values: Tile<'_>,
    dim: usize,
    out: &mut [f32],
    ahead: &[u8],
) {
    #[cfg(target_arch = "x86_64")]
    if let Some(tokens) = values.rows(dim) {
        if fast() && x86::fits(out, tokens, dim, weights, cols) {
            // SAFETY: `fast()` checked the CPU's features, `rows` the tile's length
            // and `fits` the other slices' shapes.
            unsafe { x86::accumulate(weights, cols, values, tokens, dim, out, ahead) };
            return;
        }
    }
    prefetch(ahead);
    with_f32(values, |values| {
        accumulate_any(weights, cols, values, dim, out)
    })
}

#[inline(always)]
fn max_body<const FAST: bool>(values: &[f32], max: &mut f32) {
    // Eight lanes with a comparison the compiler turns into `maxps` (no NaN
    // propagation rules to keep), folded in a fixed order.
    let mut lanes = [f32::NEG_INFINITY; 8];
    let mut chunks = values.chunks_exact(8);
    for c in &mut chunks {
        for j in 0..8 {
            lanes[j] = if c[j] > lanes[j] { c[j] } else { lanes[j] };
        }
    }
    for (j, &x) in chunks.remainder().iter().enumerate() {
        lanes[j] = if x > lanes[j] { x } else { lanes[j] };
    }
    *max = lanes
        .iter()
        .copied()
        .fold(*max, |m, x| if x > m { x } else { m });
}

dispatched! {
    /// `max` raised to the largest of `values` (NaNs are passed over).
    pub(crate) raise_max => max_body(values: &[f32], max: &mut f32)
}

#[cfg(target_arch = "x86_64")]
mod x86;

#[inline(always)]
fn f16_body<const FAST: bool>(src: &[u8], dst: &mut [f32]) {
    let mut done = 0;
    #[cfg(target_arch = "x86_64")]
    if FAST {
        use std::arch::x86_64::{__m128i, _mm256_cvtph_ps, _mm256_storeu_ps, _mm_loadu_si128};
        let lanes = dst.len().min(src.len() / 2) / 8;
        for i in 0..lanes {
            // SAFETY: `i < lanes` keeps the 16 bytes read (from `16 * i`) inside `src`
            // and the 8 floats written (from `8 * i`) inside `dst`; both accesses are
            // unaligned ones. This copy runs only where F16C is present.
            unsafe {
                let h = _mm_loadu_si128(src.as_ptr().add(16 * i).cast::<__m128i>());
                _mm256_storeu_ps(dst.as_mut_ptr().add(8 * i), _mm256_cvtph_ps(h));
            }
        }
        done = lanes * 8;
    }
    for (d, s) in dst[done..].iter_mut().zip(src[2 * done..].chunks_exact(2)) {
        *d = f16::from_le_bytes([s[0], s[1]]).to_f32();
    }
}

dispatched! {
    /// Little-endian f16 elements to f32 (`dst.len()` of them).
    pub(crate) f16_to_f32 => f16_body(src: &[u8], dst: &mut [f32])
}

/// Little-endian bf16 elements to f32 (`dst.len()` of them).
pub(crate) fn bf16_to_f32(src: &[u8], dst: &mut [f32]) {
    for (d, s) in dst.iter_mut().zip(src.chunks_exact(2)) {
        *d = bf16::from_le_bytes([s[0], s[1]]).to_f32();
    }
}

/// Little-endian f32 elements (`dst.len()` of them).
pub(crate) fn f32_from_le(src: &[u8], dst: &mut [f32]) {
    for (d, s) in dst.iter_mut().zip(src.chunks_exact(4)) {
        *d = f32::from_le_bytes([s[0], s[1], s[2], s[3]]);
    }
}

#[inline(always)]
fn affine_body<const FAST: bool>(
    codes: &[u8],
    bits: u32,
    scales: &[f32],
    biases: &[f32],
    dst: &mut [f32],
) {
    // Groups of 32 elements: 32 bytes of int8 codes, or 16 bytes of 4-bit ones (low
    // nibble first). `scale * q + bias`, not fused: the value the store decodes.
    let group_bytes = if bits == 8 { 32 } else { 16 };
    let groups = dst
        .chunks_exact_mut(32)
        .zip(codes.chunks_exact(group_bytes));
    for ((out, c), (&s, &b)) in groups.zip(scales.iter().zip(biases)) {
        if bits == 8 {
            for (o, &q) in out.iter_mut().zip(c) {
                *o = s * f32::from(q) + b;
            }
        } else {
            for (pair, &q) in out.chunks_exact_mut(2).zip(c) {
                pair[0] = s * f32::from(q & 0x0f) + b;
                pair[1] = s * f32::from(q >> 4) + b;
            }
        }
    }
}

dispatched! {
    /// Affine codes (8 or 4 bits, groups of 32 with one scale and bias each) to f32:
    /// `scale * q + bias`, as the store's decoder computes it.
    pub(crate) affine_to_f32 => affine_body(codes: &[u8], bits: u32, scales: &[f32], biases: &[f32], dst: &mut [f32])
}

/// `e^x` for `x ≤ 0` within 2 ulp (inputs under -87 give ~1e-38 rather than 0): a
/// range reduction by ln 2 and a degree-6 polynomial, in arithmetic every copy
/// vectorises (the rounding to an integer is the 1.5·2²³ trick, not a libm call).
#[inline(always)]
pub(crate) fn exp_neg(x: f32) -> f32 {
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    const LN2_HI: f32 = 0.693_145_75;
    const LN2_LO: f32 = 1.428_606_8e-6;
    const ROUND: f32 = 12_582_912.0;
    let x = x.max(-87.0);
    let shifted = x * LOG2E + ROUND;
    let n = shifted - ROUND;
    let r = x - n * LN2_HI - n * LN2_LO;
    let p = 1.0
        + r * (1.0
            + r * (0.5
                + r * (1.0 / 6.0 + r * (1.0 / 24.0 + r * (1.0 / 120.0 + r * (1.0 / 720.0))))));
    // `shifted` is 1.5·2²³ + n exactly, so its bits are ROUND's plus `n` (in -126..=0
    // here): integer arithmetic on them gives 2ⁿ's exponent field (a normal one)
    // without a float-to-int conversion, which would not vectorise.
    let n_bits = shifted.to_bits().wrapping_sub(ROUND.to_bits());
    p * f32::from_bits(n_bits.wrapping_add(127) << 23)
}

#[inline(always)]
fn softmax_body<const FAST: bool>(scores: &mut [f32], shift: f32, sum: &mut f32) {
    let mut acc = [0f32; 8];
    let mut chunks = scores.chunks_exact_mut(8);
    for c in &mut chunks {
        for j in 0..8 {
            c[j] = exp_neg(c[j] - shift);
            acc[j] += c[j];
        }
    }
    for (j, x) in chunks.into_remainder().iter_mut().enumerate() {
        *x = exp_neg(*x - shift);
        acc[j] += *x;
    }
    *sum = ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
}

dispatched! {
    /// `scores[i] = e^(scores[i] - shift)` (every score ≤ `shift`), and their sum in
    /// `sum`.
    pub(crate) softmax_weights => softmax_body(scores: &mut [f32], shift: f32, sum: &mut f32)
}

/// Asks the CPU to start loading `bytes` into its caches (one hint per 64-byte line),
/// so that data read next (a block's K/V, a graph walk's next vectors) streams in from
/// memory while what is at hand is computed on.
#[inline]
pub fn prefetch(bytes: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T1};
        for line in bytes.chunks(64) {
            // SAFETY: SSE is part of the x86_64 baseline, and a prefetch is a hint: it
            // never faults and reads nothing into the program (the address is inside
            // `bytes` anyway).
            unsafe { _mm_prefetch::<_MM_HINT_T1>(line.as_ptr().cast::<i8>()) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = bytes;
}

/// Asks the CPU to start loading the cache line that holds `item` into every level of
/// its caches: for a lookup that will read `item` after a load it cannot overlap
/// otherwise (a table's index probe, say).
#[inline]
pub fn prefetch_line<T>(item: &T) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: SSE is part of the x86_64 baseline, and a prefetch is a hint: it
        // never faults and reads nothing into the program (the address is a live
        // reference anyway).
        unsafe { _mm_prefetch::<_MM_HINT_T0>((item as *const T).cast::<i8>()) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = item;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefetching_a_line_reads_and_changes_nothing() {
        // A hint on any live reference, a zero-sized one and the last byte of a
        // buffer included, never faults and leaves the data as it was.
        let boxed: Box<[u64; 3]> = Box::new([1, 2, 3]);
        let bytes = vec![7u8; 4096];
        prefetch_line(&boxed);
        prefetch_line(&*boxed);
        prefetch_line(&());
        prefetch_line(&bytes[4095]);
        assert_eq!(*boxed, [1, 2, 3]);
        assert!(bytes.iter().all(|&b| b == 7));
    }

    #[test]
    fn both_copies_agree_with_plain_arithmetic() {
        let dim = 72; // not a multiple of 16: the remainder path runs too
        let q: Vec<f32> = (0..2 * dim).map(|i| (i as f32 * 0.37).sin()).collect();
        let k: Vec<f32> = (0..3 * dim).map(|i| (i as f32 * 0.11).cos()).collect();
        let mut s = vec![0f32; 6];
        let cols = Columns { stride: 3, at: 0 };
        scores(&q, Tile::F32(&k), dim, &mut s, cols, &[1u8; 300]);
        for r in 0..2 {
            for t in 0..3 {
                let want: f64 = (0..dim)
                    .map(|j| f64::from(q[r * dim + j]) * f64::from(k[t * dim + j]))
                    .sum();
                assert!((f64::from(s[r * 3 + t]) - want).abs() < 1e-4, "{r} {t}");
            }
        }
        let mut out = vec![1f32; 2 * dim];
        accumulate(&s, cols, Tile::F32(&k), dim, &mut out, &[]);
        for r in 0..2 {
            for j in 0..dim {
                let want: f64 = 1.0
                    + (0..3)
                        .map(|t| f64::from(s[r * 3 + t]) * f64::from(k[t * dim + j]))
                        .sum::<f64>();
                assert!((f64::from(out[r * dim + j]) - want).abs() < 1e-4);
            }
        }
        // The baseline copy's dot product is bit-identical to the fused one up to
        // FMA rounding; both are deterministic.
        assert_eq!(dot::<false>(&q, &q), dot::<false>(&q, &q));
        assert!((dot::<true>(&q, &q) - dot::<false>(&q, &q)).abs() < 1e-4);
    }

    #[test]
    fn f16_tiles_read_in_place_give_what_decoded_tiles_give() {
        let dim = 40; // five 8-float vectors: the odd last 8 of the 16-column loop
        let tokens = 7; // not a multiple of the token blocking
        let rows = 5; // a group of four rows and one of one
        let k: Vec<f16> = (0..tokens * dim)
            .map(|i| f16::from_f32((i as f32 * 0.13).sin()))
            .collect();
        let bytes: Vec<u8> = k.iter().flat_map(|v| v.to_le_bytes()).collect();
        let decoded: Vec<f32> = k.iter().map(|v| v.to_f32()).collect();
        let q: Vec<f32> = (0..rows * dim).map(|i| (i as f32 * 0.29).cos()).collect();
        let cols = Columns {
            stride: tokens + 3,
            at: 2,
        };
        let mut from_f16 = vec![0f32; rows * cols.stride];
        let mut from_f32 = vec![0f32; rows * cols.stride];
        let mut baseline = vec![0f32; rows * cols.stride];
        scores(&q, Tile::F16(&bytes), dim, &mut from_f16, cols, &[]);
        scores(&q, Tile::F32(&decoded), dim, &mut from_f32, cols, &[]);
        with_f32(Tile::F16(&bytes), |k| {
            scores_body::<false>(&q, k, dim, &mut baseline, cols)
        });
        assert_eq!(from_f16, from_f32);
        for (a, b) in from_f16.iter().zip(&baseline) {
            assert!((a - b).abs() < 1e-4, "{a} vs {b}");
        }
        // The columns outside the tile are left alone.
        assert!(from_f16.iter().step_by(cols.stride).all(|&x| x == 0.0));
        let (mut out16, mut out32) = (vec![0.5f32; rows * dim], vec![0.5f32; rows * dim]);
        accumulate(&from_f32, cols, Tile::F16(&bytes), dim, &mut out16, &[]);
        accumulate(&from_f32, cols, Tile::F32(&decoded), dim, &mut out32, &[]);
        assert_eq!(out16, out32);
    }

    #[test]
    fn exp_is_close_to_libm_over_the_softmax_range() {
        let mut worst = 0f64;
        for i in 0..=200_000 {
            let x = -(i as f32) * 0.0005; // 0 down to -100
            let got = f64::from(exp_neg(x));
            let want = f64::from(x).exp();
            if want > 1e-30 {
                worst = worst.max((got - want).abs() / want);
            }
        }
        assert!(worst < 3e-7, "relative error {worst}");
        let mut s = vec![0.0f32, -1.0, -2.0, -0.5, -3.0, -4.0, -5.0, -6.0, -7.0, -8.0];
        let mut sum = 0.0;
        softmax_weights(&mut s, 0.0, &mut sum);
        let want: f32 = [0.0f32, -1.0, -2.0, -0.5, -3.0, -4.0, -5.0, -6.0, -7.0, -8.0]
            .iter()
            .map(|x| x.exp())
            .sum();
        assert!((sum - want).abs() < 1e-5);
        assert!((s[1] - (-1f32).exp()).abs() < 1e-6);
    }

    #[test]
    fn f16_conversion_matches_half_on_every_length() {
        let values: Vec<f16> = (0..37)
            .map(|i| f16::from_f32(i as f32 * -1.25 + 0.5))
            .collect();
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        for n in 0..=values.len() {
            let mut fast = vec![0f32; n];
            f16_to_f32(&bytes[..2 * n], &mut fast);
            let mut plain = vec![0f32; n];
            f16_body::<false>(&bytes[..2 * n], &mut plain);
            let want: Vec<f32> = values[..n].iter().map(|v| v.to_f32()).collect();
            assert_eq!(fast, want);
            assert_eq!(plain, want);
        }
    }
}
