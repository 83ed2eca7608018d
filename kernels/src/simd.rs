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
fn fast() -> bool {
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

/// Defines `pub(crate) fn $name(args)` that runs `$body::<true>` (fused multiply-add)
/// in an AVX2 + FMA + F16C copy where the CPU has them, `$body::<false>` otherwise.
macro_rules! dispatched {
    ($(#[$doc:meta])* $name:ident => $body:ident ($($arg:ident : $ty:ty),* $(,)?)) => {
        $(#[$doc])*
        pub(crate) fn $name($($arg: $ty),*) {
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

/// `a * b + c`, fused where the copy has FMA.
#[inline(always)]
fn madd<const FMA: bool>(a: f32, b: f32, c: f32) -> f32 {
    if FMA {
        a.mul_add(b, c)
    } else {
        a * b + c
    }
}

/// The dot product of two equal-length rows, in 16 interleaved partial sums reduced
/// pairwise (a fixed order).
#[inline(always)]
fn dot<const FMA: bool>(a: &[f32], b: &[f32]) -> f32 {
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
    scores_any => scores_body(queries: &[f32], keys: &[f32], dim: usize, scores: &mut [f32], cols: Columns)
}

/// `scores[r * stride + at + t] = queries[r] · keys[t]` for rows of `dim` elements (a
/// tile of keys, its columns `cols` of the rows × stride `scores`): [`x86::scores`]
/// where the CPU has AVX2 and `dim` is a multiple of 8, the plain loop otherwise.
/// `ahead` (the next bytes the caller will read) is prefetched a few lines per group
/// of tokens, so memory keeps streaming while this computes.
pub(crate) fn scores(
    queries: &[f32],
    keys: &[f32],
    dim: usize,
    scores: &mut [f32],
    cols: Columns,
    ahead: &[u8],
) {
    #[cfg(target_arch = "x86_64")]
    if fast() && x86::fits(queries, keys, dim, scores, cols) {
        // SAFETY: `fast()` checked the CPU's features and `fits` the slices' shapes.
        unsafe { x86::scores(queries, keys, dim, scores, cols, ahead) };
        return;
    }
    prefetch(ahead);
    scores_any(queries, keys, dim, scores, cols)
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
    accumulate_any => accumulate_body(weights: &[f32], cols: Columns, values: &[f32], dim: usize, out: &mut [f32])
}

/// `out[r] += Σ_t weights[r * stride + at + t] * values[t]`, rows of `dim` elements
/// (a tile of values, its columns `cols` of the rows × stride `weights`), in token
/// order: [`x86::accumulate`] where the CPU has AVX2 and `dim` is a multiple of 8,
/// the plain loop otherwise. `ahead` is prefetched along the way, as for [`scores`].
pub(crate) fn accumulate(
    weights: &[f32],
    cols: Columns,
    values: &[f32],
    dim: usize,
    out: &mut [f32],
    ahead: &[u8],
) {
    #[cfg(target_arch = "x86_64")]
    if fast() && x86::fits(out, values, dim, weights, cols) {
        // SAFETY: `fast()` checked the CPU's features and `fits` the slices' shapes.
        unsafe { x86::accumulate(weights, cols, values, dim, out, ahead) };
        return;
    }
    prefetch(ahead);
    accumulate_any(weights, cols, values, dim, out)
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
    raise_max => max_body(values: &[f32], max: &mut f32)
}

/// The two hot loops written with AVX2 intrinsics: scoring pairs of query rows
/// against four tokens at once with a single transposing reduction, and accumulating
/// values into up to four query rows held in registers.
#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::*;

    use super::Columns;

    /// Whether `rows` (R × dim), `tokens` (T × dim) and `matrix` (R × stride, the
    /// tile in columns `at..at + T`) have the shapes these kernels need, with `dim` a
    /// non-zero multiple of 8.
    pub(super) fn fits(
        rows: &[f32],
        tokens: &[f32],
        dim: usize,
        matrix: &[f32],
        cols: Columns,
    ) -> bool {
        dim > 0
            && dim.is_multiple_of(8)
            && rows.len().is_multiple_of(dim)
            && tokens.len().is_multiple_of(dim)
            && cols.at + tokens.len() / dim <= cols.stride
            && Some(matrix.len()) == (rows.len() / dim).checked_mul(cols.stride)
    }

    /// The sums of eight vectors, as one vector: lane `u` is the sum of `acc[u]`.
    #[inline]
    #[target_feature(enable = "avx2")]
    fn hsum8(acc: [__m256; 8]) -> __m256 {
        let a = _mm256_hadd_ps(acc[0], acc[1]);
        let b = _mm256_hadd_ps(acc[2], acc[3]);
        let c = _mm256_hadd_ps(acc[4], acc[5]);
        let d = _mm256_hadd_ps(acc[6], acc[7]);
        let ab = _mm256_hadd_ps(a, b);
        let cd = _mm256_hadd_ps(c, d);
        let lo = _mm256_permute2f128_ps::<0x20>(ab, cd);
        let hi = _mm256_permute2f128_ps::<0x31>(ab, cd);
        _mm256_add_ps(lo, hi)
    }

    /// See [`super::scores`]. Query rows are taken two at a time against four tokens
    /// at a time: eight accumulators, and each 8-float load of a key or a query
    /// serves two or four multiply-adds; one transposing reduction turns the eight
    /// into the block's eight scores.
    ///
    /// # Safety
    /// The CPU has AVX2 and FMA, and [`fits`]`(queries, keys, dim, scores, cols)`
    /// holds.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn scores(
        queries: &[f32],
        keys: &[f32],
        dim: usize,
        scores: &mut [f32],
        cols: Columns,
        ahead: &[u8],
    ) {
        let tokens = keys.len() / dim;
        let rows = queries.len() / dim;
        let Columns { stride, at } = cols;
        let (q, k, s) = (queries.as_ptr(), keys.as_ptr(), scores.as_mut_ptr());
        let mut lines = Ahead::new(ahead, tokens.div_ceil(4));
        let mut t = 0;
        while t + 4 <= tokens {
            lines.step();
            let mut r = 0;
            while r < rows {
                // The second row of the pair, or the first again when `rows` is odd
                // (its sums are then not stored).
                let r2 = if r + 1 < rows { r + 1 } else { r };
                let mut acc = [_mm256_setzero_ps(); 8];
                let mut j = 0;
                while j < dim {
                    // SAFETY: `r, r2 < rows`, `t + 3 < tokens` and `j + 8 <= dim` keep
                    // every 8-float load inside its slice (`fits` checked the lengths).
                    unsafe {
                        let qa = _mm256_loadu_ps(q.add(r * dim + j));
                        let qb = _mm256_loadu_ps(q.add(r2 * dim + j));
                        for u in 0..4 {
                            let kv = _mm256_loadu_ps(k.add((t + u) * dim + j));
                            acc[u] = _mm256_fmadd_ps(qa, kv, acc[u]);
                            acc[4 + u] = _mm256_fmadd_ps(qb, kv, acc[4 + u]);
                        }
                    }
                    j += 8;
                }
                let sums = hsum8(acc);
                // SAFETY: `scores` is rows × stride and `at + t + 4 <= at + tokens <=
                // stride`, for row `r` and (when it is a second row) `r2`.
                unsafe {
                    _mm_storeu_ps(s.add(r * stride + at + t), _mm256_castps256_ps128(sums));
                    if r2 != r {
                        _mm_storeu_ps(
                            s.add(r2 * stride + at + t),
                            _mm256_extractf128_ps::<1>(sums),
                        );
                    }
                }
                r += 2;
            }
            t += 4;
        }
        lines.rest();
        for t in t..tokens {
            for r in 0..rows {
                let qr = &queries[r * dim..(r + 1) * dim];
                let kt = &keys[t * dim..(t + 1) * dim];
                scores[r * stride + at + t] =
                    qr.iter().zip(kt).fold(0.0, |a, (x, y)| x.mul_add(*y, a));
            }
        }
    }

    /// See [`super::accumulate`]. Sixteen columns at a time, for up to four query rows
    /// at once: eight accumulators in registers, each value load serving every row of
    /// the group.
    ///
    /// # Safety
    /// The CPU has AVX2 and FMA, and [`fits`]`(out, values, dim, weights, cols)`
    /// holds.
    #[target_feature(enable = "avx2,fma")]
    pub(super) unsafe fn accumulate(
        weights: &[f32],
        cols: Columns,
        values: &[f32],
        dim: usize,
        out: &mut [f32],
        ahead: &[u8],
    ) {
        let tokens = values.len() / dim;
        let rows = out.len() / dim;
        let mut lines = Ahead::new(ahead, rows.div_ceil(4) * dim.div_ceil(16));
        let mut r = 0;
        while r < rows {
            let group = (rows - r).min(4);
            let mut c = 0;
            while c < dim {
                lines.step();
                // SAFETY: rows `r..r + group` are inside `out` and `weights` (rows ×
                // stride), columns `c..c + 16` (or `c..c + 8` at an odd last 8) inside
                // `dim`, tokens inside `values`.
                unsafe {
                    if c + 16 <= dim {
                        match group {
                            4 => columns::<4, 2>(weights, cols, values, dim, out, r, c, tokens),
                            3 => columns::<3, 2>(weights, cols, values, dim, out, r, c, tokens),
                            2 => columns::<2, 2>(weights, cols, values, dim, out, r, c, tokens),
                            _ => columns::<1, 2>(weights, cols, values, dim, out, r, c, tokens),
                        }
                    } else {
                        match group {
                            4 => columns::<4, 1>(weights, cols, values, dim, out, r, c, tokens),
                            3 => columns::<3, 1>(weights, cols, values, dim, out, r, c, tokens),
                            2 => columns::<2, 1>(weights, cols, values, dim, out, r, c, tokens),
                            _ => columns::<1, 1>(weights, cols, values, dim, out, r, c, tokens),
                        }
                    }
                }
                c += if c + 16 <= dim { 16 } else { 8 };
            }
            r += group;
        }
        lines.rest();
    }

    /// Rows `r..r + ROWS`, columns `c..c + 8 * VECS` of `out`, accumulated over every
    /// token of `values` in token order.
    ///
    /// # Safety
    /// AVX2 and FMA; the rows, columns and tokens are inside the slices as
    /// [`accumulate`] checks before calling.
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    #[allow(clippy::too_many_arguments)]
    unsafe fn columns<const ROWS: usize, const VECS: usize>(
        weights: &[f32],
        cols: Columns,
        values: &[f32],
        dim: usize,
        out: &mut [f32],
        r: usize,
        c: usize,
        tokens: usize,
    ) {
        let (w, v, o) = (weights.as_ptr(), values.as_ptr(), out.as_mut_ptr());
        let mut acc = [[_mm256_setzero_ps(); VECS]; ROWS];
        for (g, row) in acc.iter_mut().enumerate() {
            for (x, a) in row.iter_mut().enumerate() {
                // SAFETY: row `r + g` and columns `c + 8x..c + 8x + 8` are inside `out`.
                *a = unsafe { _mm256_loadu_ps(o.add((r + g) * dim + c + 8 * x)) };
            }
        }
        for t in 0..tokens {
            let mut vs = [_mm256_setzero_ps(); VECS];
            for (x, vx) in vs.iter_mut().enumerate() {
                // SAFETY: token `t < tokens`, columns inside `dim`.
                *vx = unsafe { _mm256_loadu_ps(v.add(t * dim + c + 8 * x)) };
            }
            for (g, row) in acc.iter_mut().enumerate() {
                // SAFETY: `weights` is rows × stride and `at + t < stride`.
                let p =
                    unsafe { _mm256_broadcast_ss(&*w.add((r + g) * cols.stride + cols.at + t)) };
                for (a, vx) in row.iter_mut().zip(vs) {
                    *a = _mm256_fmadd_ps(p, vx, *a);
                }
            }
        }
        for (g, row) in acc.iter().enumerate() {
            for (x, a) in row.iter().enumerate() {
                // SAFETY: as for the loads above.
                unsafe { _mm256_storeu_ps(o.add((r + g) * dim + c + 8 * x), *a) };
            }
        }
    }

    /// Prefetch hints for `bytes`, spread evenly over `steps` calls of [`Ahead::step`].
    struct Ahead<'a> {
        bytes: &'a [u8],
        per_step: usize,
        at: usize,
    }

    impl<'a> Ahead<'a> {
        fn new(bytes: &'a [u8], steps: usize) -> Ahead<'a> {
            let lines = bytes.len().div_ceil(64);
            Ahead {
                bytes,
                per_step: lines.div_ceil(steps.max(1)),
                at: 0,
            }
        }

        /// The next few lines.
        #[inline]
        fn step(&mut self) {
            for _ in 0..self.per_step {
                if self.at >= self.bytes.len() {
                    return;
                }
                // SAFETY: SSE is part of the x86_64 baseline, and a prefetch is a hint
                // that never faults (the address is inside `bytes` anyway).
                unsafe {
                    _mm_prefetch::<_MM_HINT_T1>(self.bytes.as_ptr().add(self.at).cast::<i8>())
                };
                self.at += 64;
            }
        }

        /// Whatever is left.
        fn rest(&mut self) {
            while self.at < self.bytes.len() {
                self.step();
            }
        }
    }
}

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
    f16_to_f32 => f16_body(src: &[u8], dst: &mut [f32])
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
    affine_to_f32 => affine_body(codes: &[u8], bits: u32, scales: &[f32], biases: &[f32], dst: &mut [f32])
}

/// `e^x` for `x ≤ 0` within 2 ulp (inputs under -87 give ~1e-38 rather than 0): a
/// range reduction by ln 2 and a degree-6 polynomial, in arithmetic every copy
/// vectorises (the rounding to an integer is the 1.5·2²³ trick, not a libm call).
#[inline(always)]
fn exp_neg(x: f32) -> f32 {
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
    softmax_weights => softmax_body(scores: &mut [f32], shift: f32, sum: &mut f32)
}

/// Asks the CPU to start loading `bytes` into its caches (one hint per 64-byte line),
/// so that a block's K/V streams in from memory while the one before is computed on.
pub(crate) fn prefetch(bytes: &[u8]) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_copies_agree_with_plain_arithmetic() {
        let dim = 72; // not a multiple of 16: the remainder path runs too
        let q: Vec<f32> = (0..2 * dim).map(|i| (i as f32 * 0.37).sin()).collect();
        let k: Vec<f32> = (0..3 * dim).map(|i| (i as f32 * 0.11).cos()).collect();
        let mut s = vec![0f32; 6];
        let cols = Columns { stride: 3, at: 0 };
        scores(&q, &k, dim, &mut s, cols, &[1u8; 300]);
        for r in 0..2 {
            for t in 0..3 {
                let want: f64 = (0..dim)
                    .map(|j| f64::from(q[r * dim + j]) * f64::from(k[t * dim + j]))
                    .sum();
                assert!((f64::from(s[r * 3 + t]) - want).abs() < 1e-4, "{r} {t}");
            }
        }
        let mut out = vec![1f32; 2 * dim];
        accumulate(&s, cols, &k, dim, &mut out, &[]);
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
