//! The two hot loops written with AVX2 intrinsics: scoring query rows against keys
//! (up to four rows against two tokens at once, or fewer rows against more tokens,
//! eight accumulators and one transposing reduction), and accumulating values into up
//! to four query rows held in registers. Both read a tile of f32 rows or the stored
//! rows themselves (f16, or int8 and 4-bit affine codes), converted in registers as
//! they are loaded.

use std::arch::x86_64::*;

use super::{Columns, Tile};

/// Whether `rows` (R × dim), a tile of `tokens` rows and `matrix` (R × stride, the tile
/// in columns `at..at + tokens`) have the shapes these kernels need, with `dim` a
/// non-zero multiple of 8.
pub(super) fn fits(rows: &[f32], tokens: usize, dim: usize, matrix: &[f32], cols: Columns) -> bool {
    dim > 0
        && dim.is_multiple_of(8)
        && rows.len().is_multiple_of(dim)
        && cols.at + tokens <= cols.stride
        && Some(matrix.len()) == (rows.len() / dim).checked_mul(cols.stride)
}

/// Where a tile's elements are and how they are stored (`FMT` of [`load8`]).
#[derive(Clone, Copy)]
struct Source {
    /// The first element (or code).
    base: *const u8,
    /// Per group of 32 elements, for affine codes.
    scales: *const f32,
    biases: *const f32,
}

/// `FMT` values: the element formats [`load8`] reads.
const F32: u8 = 0;
const F16: u8 = 1;
const INT8: u8 = 2;
const Q4: u8 = 3;

/// A tile's [`Source`] and format.
fn source(tile: Tile<'_>) -> (Source, u8) {
    let plain = |base: *const u8| Source {
        base,
        scales: std::ptr::null(),
        biases: std::ptr::null(),
    };
    match tile {
        Tile::F32(x) => (plain(x.as_ptr().cast::<u8>()), F32),
        Tile::F16(x) => (plain(x.as_ptr()), F16),
        Tile::Affine {
            codes,
            bits,
            scales,
            biases,
        } => (
            Source {
                base: codes.as_ptr(),
                scales: scales.as_ptr(),
                biases: biases.as_ptr(),
            },
            if bits == 8 { INT8 } else { Q4 },
        ),
    }
}

/// Eight elements from element `index` (a multiple of 8) of a tile, as f32. Affine
/// codes become `scale * q + bias`, not fused: the value the store decodes.
///
/// # Safety
/// AVX2 and F16C; elements `index..index + 8` are inside the tile `src` describes
/// (and, for codes, their group's scale and bias).
#[inline]
#[target_feature(enable = "avx2,fma,f16c")]
unsafe fn load8<const FMT: u8>(src: Source, index: usize) -> __m256 {
    // SAFETY: the caller keeps the eight elements, and for codes group `index / 32`'s
    // parameters, inside the tile; every load is an unaligned one.
    unsafe {
        let affine = |codes: __m128i| {
            let q = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(codes));
            let g = index / 32;
            let scaled = _mm256_mul_ps(q, _mm256_set1_ps(*src.scales.add(g)));
            _mm256_add_ps(scaled, _mm256_set1_ps(*src.biases.add(g)))
        };
        match FMT {
            F16 => _mm256_cvtph_ps(_mm_loadu_si128(src.base.add(2 * index).cast::<__m128i>())),
            INT8 => affine(_mm_loadl_epi64(src.base.add(index).cast::<__m128i>())),
            Q4 => {
                // Four bytes, low nibble first: spread into eight bytes in order.
                let packed = src.base.add(index / 2).cast::<i32>().read_unaligned();
                let v = _mm_cvtsi32_si128(packed);
                let mask = _mm_set1_epi8(0x0f);
                let low = _mm_and_si128(v, mask);
                let high = _mm_and_si128(_mm_srli_epi16::<4>(v), mask);
                affine(_mm_unpacklo_epi8(low, high))
            }
            _ => _mm256_loadu_ps(src.base.cast::<f32>().add(index)),
        }
    }
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

/// See [`super::scores`].
///
/// # Safety
/// The CPU has AVX2, FMA and F16C; `keys` holds exactly `tokens` rows of `dim`, and
/// [`fits`]`(queries, tokens, dim, scores, cols)` holds.
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn scores(
    queries: &[f32],
    keys: Tile<'_>,
    tokens: usize,
    dim: usize,
    scores: &mut [f32],
    cols: Columns,
    ahead: &[u8],
) {
    let (k, format) = source(keys);
    let job = ScoreJob {
        q: queries.as_ptr(),
        k,
        s: scores.as_mut_ptr(),
        dim,
        cols,
    };
    let rows = queries.len() / dim;
    let mut lines = Ahead::new(ahead, rows.div_ceil(4) * tokens.div_ceil(2));
    let mut r = 0;
    while r < rows {
        let group = (rows - r).min(4);
        // SAFETY: rows `r..r + group` are inside `queries` and `scores`, and every
        // block's tokens inside the tile (`score_rows` keeps `t + T <= tokens`).
        unsafe {
            match format {
                F16 => job.group::<F16>(group, r, tokens, &mut lines),
                INT8 => job.group::<INT8>(group, r, tokens, &mut lines),
                Q4 => job.group::<Q4>(group, r, tokens, &mut lines),
                _ => job.group::<F32>(group, r, tokens, &mut lines),
            }
        }
        r += group;
    }
    lines.rest();
}

/// The pointers and shape one [`scores`] call works on.
struct ScoreJob {
    q: *const f32,
    k: Source,
    s: *mut f32,
    dim: usize,
    cols: Columns,
}

impl ScoreJob {
    /// [`ScoreJob::rows`] for a group of `group` (1..=4) rows, blocked to fit eight
    /// accumulators.
    ///
    /// # Safety
    /// As for [`ScoreJob::rows`].
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn group<const FMT: u8>(
        &self,
        group: usize,
        r: usize,
        tokens: usize,
        lines: &mut Ahead<'_>,
    ) {
        // SAFETY: passed on from the caller.
        unsafe {
            match group {
                4 => self.rows::<FMT, 4, 2>(r, tokens, lines),
                3 => self.rows::<FMT, 3, 2>(r, tokens, lines),
                2 => self.rows::<FMT, 2, 4>(r, tokens, lines),
                _ => self.rows::<FMT, 1, 8>(r, tokens, lines),
            }
        }
    }

    /// Rows `r..r + R` against every token, `T` tokens at a time, the last few one at
    /// a time.
    ///
    /// # Safety
    /// AVX2, FMA and F16C; rows `r..r + R` and `tokens` inside the slices [`scores`]
    /// checked.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn rows<const FMT: u8, const R: usize, const T: usize>(
        &self,
        r: usize,
        tokens: usize,
        lines: &mut Ahead<'_>,
    ) {
        let mut t = 0;
        while t + T <= tokens {
            lines.step();
            // SAFETY: as the caller promised, with `t + T <= tokens`.
            unsafe { self.block::<FMT, R, T>(r, t) };
            t += T;
        }
        while t < tokens {
            // SAFETY: as above, with `t < tokens`.
            unsafe { self.block::<FMT, R, 1>(r, t) };
            t += 1;
        }
    }

    /// The `R × T` scores of rows `r..r + R` and tokens `t..t + T` (`R * T <= 8`).
    ///
    /// # Safety
    /// AVX2, FMA and F16C; those rows and tokens are inside the slices.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn block<const FMT: u8, const R: usize, const T: usize>(&self, r: usize, t: usize) {
        let dim = self.dim;
        let mut acc = [_mm256_setzero_ps(); 8];
        let mut j = 0;
        while j < dim {
            let mut ks = [_mm256_setzero_ps(); T];
            for (u, kv) in ks.iter_mut().enumerate() {
                // SAFETY: token `t + u` of the tile, elements `j..j + 8` of its row.
                *kv = unsafe { load8::<FMT>(self.k, (t + u) * dim + j) };
            }
            for g in 0..R {
                // SAFETY: row `r + g` of `queries`, elements `j..j + 8`.
                let qv = unsafe { _mm256_loadu_ps(self.q.add((r + g) * dim + j)) };
                for (u, kv) in ks.iter().enumerate() {
                    acc[g * T + u] = _mm256_fmadd_ps(qv, *kv, acc[g * T + u]);
                }
            }
            j += 8;
        }
        let mut sums = [0f32; 8];
        // SAFETY: `sums` holds eight floats.
        unsafe { _mm256_storeu_ps(sums.as_mut_ptr(), hsum8(acc)) };
        let Columns { stride, at } = self.cols;
        for g in 0..R {
            for u in 0..T {
                // SAFETY: `scores` is rows × stride, row `r + g`, column
                // `at + t + u < at + tokens <= stride`.
                unsafe { *self.s.add((r + g) * stride + at + t + u) = sums[g * T + u] };
            }
        }
    }
}

/// See [`super::accumulate`]. Sixteen columns at a time, for up to four query rows at
/// once: eight accumulators in registers, each value load serving every row of the
/// group.
///
/// # Safety
/// The CPU has AVX2, FMA and F16C; `values` holds exactly `tokens` rows of `dim`, and
/// [`fits`]`(out, tokens, dim, weights, cols)` holds.
#[target_feature(enable = "avx2,fma,f16c")]
pub(super) unsafe fn accumulate(
    weights: &[f32],
    cols: Columns,
    values: Tile<'_>,
    tokens: usize,
    dim: usize,
    out: &mut [f32],
    ahead: &[u8],
) {
    let (v, format) = source(values);
    let job = AccumulateJob {
        w: weights.as_ptr(),
        v,
        o: out.as_mut_ptr(),
        dim,
        cols,
        tokens,
    };
    let rows = out.len() / dim;
    let mut lines = Ahead::new(ahead, rows.div_ceil(4) * dim.div_ceil(16));
    let mut r = 0;
    while r < rows {
        let group = (rows - r).min(4);
        let mut c = 0;
        while c < dim {
            lines.step();
            let wide = c + 16 <= dim;
            // SAFETY: rows `r..r + group` are inside `out` and `weights` (rows ×
            // stride), columns `c..c + 16` (or `c..c + 8` at an odd last 8) inside
            // `dim`, tokens inside the tile.
            unsafe {
                match format {
                    F16 => job.group::<F16>(group, wide, r, c),
                    INT8 => job.group::<INT8>(group, wide, r, c),
                    Q4 => job.group::<Q4>(group, wide, r, c),
                    _ => job.group::<F32>(group, wide, r, c),
                }
            }
            c += if wide { 16 } else { 8 };
        }
        r += group;
    }
    lines.rest();
}

/// The pointers and shape one [`accumulate`] call works on.
struct AccumulateJob {
    w: *const f32,
    v: Source,
    o: *mut f32,
    dim: usize,
    cols: Columns,
    tokens: usize,
}

impl AccumulateJob {
    /// [`AccumulateJob::columns`] for a group of `group` (1..=4) rows, sixteen columns
    /// (`wide`) or eight.
    ///
    /// # Safety
    /// As for [`AccumulateJob::columns`].
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn group<const FMT: u8>(&self, group: usize, wide: bool, r: usize, c: usize) {
        // SAFETY: passed on from the caller.
        unsafe {
            match (group, wide) {
                (4, true) => self.columns::<FMT, 4, 2>(r, c),
                (3, true) => self.columns::<FMT, 3, 2>(r, c),
                (2, true) => self.columns::<FMT, 2, 2>(r, c),
                (_, true) => self.columns::<FMT, 1, 2>(r, c),
                (4, false) => self.columns::<FMT, 4, 1>(r, c),
                (3, false) => self.columns::<FMT, 3, 1>(r, c),
                (2, false) => self.columns::<FMT, 2, 1>(r, c),
                (_, false) => self.columns::<FMT, 1, 1>(r, c),
            }
        }
    }

    /// Rows `r..r + ROWS`, columns `c..c + 8 * VECS` of `out`, accumulated over every
    /// token of the tile in token order.
    ///
    /// # Safety
    /// AVX2, FMA and F16C; the rows, columns and tokens are inside the slices as
    /// [`accumulate`] checked.
    #[inline]
    #[target_feature(enable = "avx2,fma,f16c")]
    unsafe fn columns<const FMT: u8, const ROWS: usize, const VECS: usize>(
        &self,
        r: usize,
        c: usize,
    ) {
        let (dim, o) = (self.dim, self.o);
        let mut acc = [[_mm256_setzero_ps(); VECS]; ROWS];
        for (g, row) in acc.iter_mut().enumerate() {
            for (x, a) in row.iter_mut().enumerate() {
                // SAFETY: row `r + g` and columns `c + 8x..c + 8x + 8` are inside `out`.
                *a = unsafe { _mm256_loadu_ps(o.add((r + g) * dim + c + 8 * x)) };
            }
        }
        for t in 0..self.tokens {
            let mut vs = [_mm256_setzero_ps(); VECS];
            for (x, vx) in vs.iter_mut().enumerate() {
                // SAFETY: token `t < tokens` of the tile, columns inside `dim`.
                *vx = unsafe { load8::<FMT>(self.v, t * dim + c + 8 * x) };
            }
            for (g, row) in acc.iter_mut().enumerate() {
                // SAFETY: `weights` is rows × stride and `at + t < stride`.
                let p = unsafe {
                    _mm256_broadcast_ss(&*self.w.add((r + g) * self.cols.stride + self.cols.at + t))
                };
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
            unsafe { _mm_prefetch::<_MM_HINT_T1>(self.bytes.as_ptr().add(self.at).cast::<i8>()) };
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
