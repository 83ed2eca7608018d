//! The encoder's dense layers, `y = x · Wᵀ + b`, over weights packed once at load.
//!
//! A sentence is a few dozen token rows, so every product is short and wide: a
//! general SGEMM spends as long packing the weights on each call as it does
//! multiplying them, and its thread split is made for large matrices. Here the
//! weights are laid out once, when the model loads, in panels of [`PANEL`] output
//! columns (for each input `k`, the panel's 16 weights side by side), and a small
//! register-blocked tile computes up to [`TILE_ROWS`] rows × 16 columns from a panel
//! with the bias as its starting value. The panels are shared out over rayon's pool,
//! so the cores divide the weights (each reads its own share once per row block)
//! rather than each reading all of them.
//!
//! The tile exists twice: with AVX2 + FMA intrinsics where the CPU has them (chosen
//! at run time), and as plain Rust for every other CPU. Both sum in input order from
//! the bias, so a row's result does not depend on the rows beside it or the threads.

use rayon::prelude::*;

/// Output columns per packed panel.
pub const PANEL: usize = 16;

/// Rows one tile computes at a time.
pub const TILE_ROWS: usize = 6;

/// Work (multiply-adds) below which a product runs on the calling thread alone.
const PARALLEL_MIN_MACS: usize = 1 << 20;

/// Rows a task takes at once: enough to reuse each panel many times, few enough
/// that the rows stay in the core's L2 while every panel passes over them.
const ROW_CHUNK: usize = 8 * TILE_ROWS;

/// A dense layer with its weights packed in panels.
pub struct PackedLinear {
    /// `panels × inputs × PANEL` weights; columns past `outputs` are zero.
    panels: Vec<f32>,
    /// `panels × PANEL` biases, zero-padded like the weights.
    bias: Vec<f32>,
    inputs: usize,
    outputs: usize,
}

impl PackedLinear {
    /// Packs `weight` (`outputs × inputs`, row-major, as PyTorch stores it) and `bias`.
    ///
    /// # Panics
    /// If the lengths do not match the dimensions (the loader checks the shapes).
    pub fn pack(weight: &[f32], bias: &[f32], inputs: usize, outputs: usize) -> PackedLinear {
        assert_eq!(weight.len(), inputs * outputs, "weight shape");
        assert_eq!(bias.len(), outputs, "bias shape");
        let count = outputs.div_ceil(PANEL);
        let mut panels = vec![0f32; count * inputs * PANEL];
        let mut padded_bias = vec![0f32; count * PANEL];
        for (o, row) in weight.chunks_exact(inputs).enumerate() {
            let (p, j) = (o / PANEL, o % PANEL);
            let panel = &mut panels[p * inputs * PANEL..(p + 1) * inputs * PANEL];
            for (k, &w) in row.iter().enumerate() {
                panel[k * PANEL + j] = w;
            }
        }
        padded_bias[..outputs].copy_from_slice(bias);
        PackedLinear {
            panels,
            bias: padded_bias,
            inputs,
            outputs,
        }
    }

    /// Width of an input row.
    pub fn inputs(&self) -> usize {
        self.inputs
    }

    /// Width of an output row.
    pub fn outputs(&self) -> usize {
        self.outputs
    }

    /// `x · Wᵀ + b` for the rows of `x` (`rows × inputs`), as `rows × outputs`.
    ///
    /// # Panics
    /// If `x` is not a whole number of input rows.
    pub fn forward(&self, x: &[f32]) -> Vec<f32> {
        assert!(
            x.len().is_multiple_of(self.inputs),
            "input is not whole rows"
        );
        let rows = x.len() / self.inputs;
        let mut y = vec![0f32; rows * self.outputs];
        if rows == 0 {
            return y;
        }
        let count = self.panels.len() / (self.inputs * PANEL);
        let out = OutPtr(y.as_mut_ptr());
        // Few rows (one sentence): the cores share out the panels, each reading only
        // its own weights. Many rows (a batch): they share out chunks of rows, each
        // passing every panel over rows that stay in its cache.
        let chunks = rows.div_ceil(ROW_CHUNK);
        let run = |task: usize| {
            if chunks == 1 {
                self.panel(task, x, 0..rows, out);
            } else {
                let span = task * ROW_CHUNK..rows.min((task + 1) * ROW_CHUNK);
                for p in 0..count {
                    self.panel(p, x, span.clone(), out);
                }
            }
        };
        let tasks = if chunks == 1 { count } else { chunks };
        if rows * self.inputs * self.outputs < PARALLEL_MIN_MACS {
            (0..tasks).for_each(run);
        } else {
            (0..tasks).into_par_iter().for_each(run);
        }
        y
    }

    /// The columns of panel `p` in the rows `span`, written through `out`.
    fn panel(&self, p: usize, x: &[f32], span: std::ops::Range<usize>, out: OutPtr) {
        let k = self.inputs;
        let panel = &self.panels[p * k * PANEL..(p + 1) * k * PANEL];
        let bias: &[f32; PANEL] = self.bias[p * PANEL..(p + 1) * PANEL]
            .try_into()
            .expect("a panel's bias is PANEL wide"); // sliced to exactly PANEL above
        let first = p * PANEL;
        let cols = PANEL.min(self.outputs - first);
        let mut tile = [[0f32; PANEL]; TILE_ROWS];
        for start in span.clone().step_by(TILE_ROWS) {
            let n = TILE_ROWS.min(span.end - start);
            let a = &x[start * k..(start + n) * k];
            tile_dispatch(a, n, k, panel, bias, &mut tile);
            for (r, row) in tile.iter().enumerate().take(n) {
                let at = (start + r) * self.outputs + first;
                // SAFETY: `at + cols` is within row `start + r` of `y`, which has
                // `rows × outputs` elements (`span` lies within the rows); a call
                // writes only panel `p`'s columns `first..first + cols` of `span`'s
                // rows, and `forward` makes each (panel, row) pair once, so no two
                // writers share an element while it holds `y` borrowed.
                unsafe {
                    std::ptr::copy_nonoverlapping(row.as_ptr(), out.0.add(at), cols);
                }
            }
        }
    }
}

/// The output's base pointer, shared by the panels' tasks (each writes its own
/// columns; see [`PackedLinear::panel`]).
#[derive(Clone, Copy)]
struct OutPtr(*mut f32);

// SAFETY: the pointer is only written at disjoint positions by the tasks of one
// `forward` call, which outlives them (rayon's `for_each` returns when all are done).
unsafe impl Send for OutPtr {}
// SAFETY: as above: shared only to write disjoint elements.
unsafe impl Sync for OutPtr {}

/// `tile[r] = bias + a[r] · panel` for the first `n` rows of `a` (`n × k`).
fn tile_dispatch(
    a: &[f32],
    n: usize,
    k: usize,
    panel: &[f32],
    bias: &[f32; PANEL],
    tile: &mut [[f32; PANEL]; TILE_ROWS],
) {
    debug_assert!(a.len() == n * k && panel.len() == k * PANEL && n <= TILE_ROWS);
    #[cfg(target_arch = "x86_64")]
    if crate::simd::fast() {
        // SAFETY: `fast` has checked the CPU has AVX2 and FMA; the slices'
        // lengths are what the tile reads (asserted in debug, built so by `panel`).
        unsafe { x86::tile(a, n, k, panel, bias, tile) };
        return;
    }
    portable_tile(a, n, k, panel, bias, tile);
}

/// The tile in plain Rust, for CPUs without AVX2 + FMA (and the tests' reference
/// for the intrinsics).
fn portable_tile(
    a: &[f32],
    n: usize,
    k: usize,
    panel: &[f32],
    bias: &[f32; PANEL],
    tile: &mut [[f32; PANEL]; TILE_ROWS],
) {
    for (r, acc) in tile.iter_mut().enumerate().take(n) {
        *acc = *bias;
        let row = &a[r * k..(r + 1) * k];
        for (&xv, w) in row.iter().zip(panel.chunks_exact(PANEL)) {
            for (s, &wv) in acc.iter_mut().zip(w) {
                *s += xv * wv;
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{PANEL, TILE_ROWS};
    use std::arch::x86_64::*;

    /// The tile with `n` rows, as [`super::portable_tile`] computes it but with fused
    /// multiply-adds: the rows' 2 × n accumulators stay in registers over all of `k`.
    ///
    /// # Safety
    /// The CPU must have AVX2 and FMA; `a` must hold `n × k` values and `panel`
    /// `k × PANEL`.
    #[target_feature(enable = "avx2,fma")]
    pub unsafe fn tile(
        a: &[f32],
        n: usize,
        k: usize,
        panel: &[f32],
        bias: &[f32; PANEL],
        tile: &mut [[f32; PANEL]; TILE_ROWS],
    ) {
        // SAFETY (for each arm): the caller's contract, passed on unchanged.
        unsafe {
            match n {
                1 => rows::<1>(a, k, panel, bias, tile),
                2 => rows::<2>(a, k, panel, bias, tile),
                3 => rows::<3>(a, k, panel, bias, tile),
                4 => rows::<4>(a, k, panel, bias, tile),
                5 => rows::<5>(a, k, panel, bias, tile),
                _ => rows::<6>(a, k, panel, bias, tile),
            }
        }
    }

    /// # Safety
    /// As [`tile`], with `R` rows.
    #[target_feature(enable = "avx2,fma")]
    #[inline]
    unsafe fn rows<const R: usize>(
        a: &[f32],
        k: usize,
        panel: &[f32],
        bias: &[f32; PANEL],
        tile: &mut [[f32; PANEL]; TILE_ROWS],
    ) {
        assert!(a.len() >= R * k && panel.len() >= k * PANEL && R <= TILE_ROWS);
        let (ap, wp) = (a.as_ptr(), panel.as_ptr());
        // SAFETY: the assert above bounds every read: row r's element kk is at
        // r·k + kk < R·k, and the panel's 16 weights for kk end at (kk + 1)·16 ≤ k·16;
        // the stores go to `tile`'s first R rows of 16.
        unsafe {
            let b0 = _mm256_loadu_ps(bias.as_ptr());
            let b1 = _mm256_loadu_ps(bias.as_ptr().add(8));
            let mut acc = [[b0, b1]; R];
            for kk in 0..k {
                let w0 = _mm256_loadu_ps(wp.add(kk * PANEL));
                let w1 = _mm256_loadu_ps(wp.add(kk * PANEL + 8));
                for (r, row) in acc.iter_mut().enumerate() {
                    let xv = _mm256_set1_ps(*ap.add(r * k + kk));
                    row[0] = _mm256_fmadd_ps(xv, w0, row[0]);
                    row[1] = _mm256_fmadd_ps(xv, w1, row[1]);
                }
            }
            for (r, row) in acc.iter().enumerate() {
                _mm256_storeu_ps(tile[r].as_mut_ptr(), row[0]);
                _mm256_storeu_ps(tile[r].as_mut_ptr().add(8), row[1]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `x · Wᵀ + b` in f64, row by row.
    fn reference(x: &[f32], w: &[f32], b: &[f32], inputs: usize, outputs: usize) -> Vec<f32> {
        let rows = x.len() / inputs;
        let mut y = Vec::with_capacity(rows * outputs);
        for r in 0..rows {
            for o in 0..outputs {
                let mut s = f64::from(b[o]);
                for k in 0..inputs {
                    s += f64::from(x[r * inputs + k]) * f64::from(w[o * inputs + k]);
                }
                y.push(s as f32);
            }
        }
        y
    }

    fn values(n: usize, seed: u32) -> Vec<f32> {
        let mut s = seed.wrapping_mul(2_654_435_761).max(1);
        (0..n)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 17;
                s ^= s << 5;
                (s % 2001) as f32 / 1000.0 - 1.0
            })
            .collect()
    }

    #[test]
    fn products_match_the_f64_reference_for_every_shape() {
        // Odd widths exercise the padded last panel, row counts every tile height
        // and the parallel split (the last shape is past PARALLEL_MIN_MACS).
        for (rows, inputs, outputs) in [
            (1, 1, 1),
            (1, 7, 5),
            (5, 33, 17),
            (6, 16, 16),
            (7, 40, 48),
            (13, 64, 100),
            (34, 384, 1152),
            (3 * ROW_CHUNK + 5, 96, 80),
        ] {
            let x = values(rows * inputs, 1);
            let w = values(inputs * outputs, 2);
            let b = values(outputs, 3);
            let layer = PackedLinear::pack(&w, &b, inputs, outputs);
            let got = layer.forward(&x);
            let want = reference(&x, &w, &b, inputs, outputs);
            assert_eq!(got.len(), want.len());
            for (i, (g, e)) in got.iter().zip(&want).enumerate() {
                assert!(
                    (g - e).abs() <= 1e-5 * (1.0 + inputs as f32),
                    "{rows}×{inputs}→{outputs}: element {i} is {g}, want {e}"
                );
            }
        }
    }

    #[test]
    fn a_row_does_not_depend_on_its_neighbours() {
        let (inputs, outputs) = (48, 40);
        let x = values(9 * inputs, 4);
        let w = values(inputs * outputs, 5);
        let b = values(outputs, 6);
        let layer = PackedLinear::pack(&w, &b, inputs, outputs);
        let all = layer.forward(&x);
        for r in 0..9 {
            let one = layer.forward(&x[r * inputs..(r + 1) * inputs]);
            assert_eq!(one, all[r * outputs..(r + 1) * outputs], "row {r}");
        }
    }

    #[test]
    fn the_intrinsics_tile_equals_the_portable_one_within_rounding() {
        let k = 37;
        let a = values(TILE_ROWS * k, 7);
        let panel = values(k * PANEL, 8);
        let mut bias = [0f32; PANEL];
        bias.copy_from_slice(&values(PANEL, 9));
        for n in 1..=TILE_ROWS {
            let mut want = [[0f32; PANEL]; TILE_ROWS];
            portable_tile(&a[..n * k], n, k, &panel, &bias, &mut want);
            let mut got = [[0f32; PANEL]; TILE_ROWS];
            tile_dispatch(&a[..n * k], n, k, &panel, &bias, &mut got);
            for r in 0..n {
                for c in 0..PANEL {
                    assert!((got[r][c] - want[r][c]).abs() < 1e-4, "n {n} r {r} c {c}");
                }
            }
        }
    }

    #[test]
    fn no_rows_give_no_output() {
        let layer = PackedLinear::pack(&[1.0, 2.0], &[0.5], 2, 1);
        assert!(layer.forward(&[]).is_empty());
        assert_eq!(layer.forward(&[1.0, 1.0]), vec![3.5]);
    }
}
