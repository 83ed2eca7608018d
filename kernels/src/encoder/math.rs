//! The encoder's arithmetic between its dense layers: layer norm, GELU, softmax, and
//! self-attention within one sentence.
//!
//! Each loop is plain Rust written so the compiler can vectorise it (no calls into
//! libm, no data-dependent branches), and each public entry runs an AVX2 + FMA copy
//! of the same body where the CPU has them (chosen at run time, as the attention
//! kernels' loops are), the baseline copy elsewhere. The copies differ only by fused
//! rounding.

use rayon::prelude::*;

use crate::simd::{dispatched, dot, exp_neg, fast, madd};

/// Work (score multiply-adds) above which a sentence's heads are shared out over
/// rayon's pool.
const PARALLEL_HEADS_MIN_MACS: usize = 1 << 18;

/// A layer norm's gain and bias.
pub struct LayerNorm {
    /// Per-column gain.
    pub gain: Vec<f32>,
    /// Per-column bias.
    pub bias: Vec<f32>,
}

dispatched! {
    /// Normalises each row of `x` (rows as wide as `norm`) to mean 0 and variance 1
    /// (in f64), then scales by the gain and adds the bias.
    pub layer_norm => layer_norm_body(x: &mut [f32], norm: &LayerNorm, eps: f32)
}

dispatched! {
    /// BERT's exact GELU, `x·Φ(x)`, over a slice (erf from Abramowitz and Stegun
    /// 7.1.26, absolute error below 1.5e-7): within 4e-7 of the f64 form.
    pub gelu_in_place => gelu_body(xs: &mut [f32])
}

/// Self-attention of one sentence: `qkv` holds its `len` rows of query, key and
/// value (`3·hidden` wide), `context` receives `len` rows of `hidden`, each head's
/// softmax-weighted values in its own `hidden / heads` columns.
///
/// The heads are shared out over rayon's pool for long sentences. Each head runs
/// its own dispatched copy: a closure handed to rayon is compiled for the baseline
/// target, where a fused multiply-add is a libm call, not an instruction.
/// An empty sentence, or no heads, leaves `context` as it is.
pub fn attend(qkv: &[f32], len: usize, heads: usize, context: &mut [f32]) {
    let h = qkv.len() / len.max(1) / 3;
    let dh = h / heads.max(1);
    if len == 0 || dh == 0 {
        return;
    }
    let head = |hd: usize| {
        let mut out = vec![0f32; len * dh];
        attend_head(qkv, len, h, hd, &mut out);
        out
    };
    let outs: Vec<Vec<f32>> = if len * len * h < PARALLEL_HEADS_MIN_MACS {
        (0..heads).map(head).collect()
    } else {
        (0..heads).into_par_iter().map(head).collect()
    };
    for (hd, out) in outs.iter().enumerate() {
        for (i, row) in out.chunks_exact(dh).enumerate() {
            context[i * h + hd * dh..i * h + (hd + 1) * dh].copy_from_slice(row);
        }
    }
}

dispatched! {
    /// One head's output rows (`len × dh` into `out`): for each query, the softmax
    /// over the keys of the scaled scores, applied to the values.
    attend_head => attend_head_body(qkv: &[f32], len: usize, h: usize, head: usize, out: &mut [f32])
}

#[inline(always)]
fn layer_norm_body<const FMA: bool>(x: &mut [f32], norm: &LayerNorm, eps: f32) {
    let h = norm.gain.len();
    for row in x.chunks_exact_mut(h) {
        let mean = row.iter().map(|&v| f64::from(v)).sum::<f64>() / h as f64;
        let var = row
            .iter()
            .map(|&v| (f64::from(v) - mean).powi(2))
            .sum::<f64>()
            / h as f64;
        let inv = 1.0 / (var + f64::from(eps)).sqrt();
        for ((v, g), b) in row.iter_mut().zip(&norm.gain).zip(&norm.bias) {
            *v = ((f64::from(*v) - mean) * inv) as f32 * g + b;
        }
    }
}

#[inline(always)]
fn gelu_body<const FMA: bool>(xs: &mut [f32]) {
    const P: f32 = 0.327_591_1;
    const A: [f32; 5] = [
        0.254_829_6,
        -0.284_496_74,
        1.421_413_7,
        -1.453_152_1,
        1.061_405_4,
    ];
    for x in xs.iter_mut() {
        let v = *x;
        let z = (v * std::f32::consts::FRAC_1_SQRT_2).abs();
        let t = 1.0 / (1.0 + P * z);
        let poly = t * (A[0] + t * (A[1] + t * (A[2] + t * (A[3] + t * A[4]))));
        let erf_abs = 1.0 - poly * exp_neg(-z * z);
        let erf = erf_abs.copysign(v);
        *x = 0.5 * v * (1.0 + erf);
    }
}

/// A row's softmax in place.
#[inline(always)]
fn softmax(row: &mut [f32]) {
    let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0f32;
    for v in row.iter_mut() {
        *v = exp_neg(*v - max);
        sum += *v;
    }
    let inv = 1.0 / sum;
    row.iter_mut().for_each(|v| *v *= inv);
}

#[inline(always)]
fn attend_head_body<const FMA: bool>(
    qkv: &[f32],
    len: usize,
    h: usize,
    head: usize,
    out: &mut [f32],
) {
    let width = 3 * h;
    let dh = out.len() / len.max(1);
    let scale = 1.0 / (dh as f32).sqrt();
    let part = |row: usize, which: usize| {
        let at = row * width + which * h + head * dh;
        &qkv[at..at + dh]
    };
    let mut scores = vec![0f32; len];
    for (i, o) in out.chunks_exact_mut(dh).enumerate() {
        let q = part(i, 0);
        for (j, s) in scores.iter_mut().enumerate() {
            *s = dot::<FMA>(q, part(j, 1)) * scale;
        }
        softmax(&mut scores);
        for (j, &p) in scores.iter().enumerate() {
            for (acc, &v) in o.iter_mut().zip(part(j, 2)) {
                *acc = madd::<FMA>(p, v, *acc);
            }
        }
    }
}

/// GELU in f64 with the f64 erf below: the reference the fast form is tested against.
#[cfg(test)]
fn gelu_f64(x: f32) -> f32 {
    let x = f64::from(x);
    (0.5 * x * (1.0 + erf(x / std::f64::consts::SQRT_2))) as f32
}

/// The error function, from the complementary error function's Chebyshev-fitted
/// approximation (Numerical Recipes' `erfc`, relative error below 1.2e-7).
#[cfg(test)]
fn erf(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let erfc = t * poly.exp();
    if x >= 0.0 {
        1.0 - erfc
    } else {
        erfc - 1.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn erf_matches_known_values() {
        for (x, want) in [
            (0.0, 0.0),
            (0.5, 0.520_499_877_813_046_5),
            (1.0, 0.842_700_792_949_714_9),
            (-1.5, -0.966_105_146_475_310_7),
            (3.0, 0.999_977_909_503_001_4),
        ] {
            assert!((erf(x) - want).abs() < 2e-7, "erf({x}) = {}", erf(x));
        }
    }

    #[test]
    fn the_fast_gelu_matches_the_f64_one() {
        let xs: Vec<f32> = (-12_000..=12_000).map(|i| i as f32 / 1000.0).collect();
        let mut fast = xs.clone();
        gelu_in_place(&mut fast);
        for (x, got) in xs.iter().zip(&fast) {
            let want = gelu_f64(*x);
            assert!(
                (got - want).abs() <= 4e-7 * (1.0 + want.abs()),
                "gelu({x}) = {got}, want {want}"
            );
        }
    }

    #[test]
    fn softmax_and_layer_norm_are_normalised() {
        let mut r = [1.0f32, 2.0, 3.0, 1000.0];
        softmax(&mut r);
        assert!((r.iter().sum::<f32>() - 1.0).abs() < 1e-6);
        assert!(r[3] > 0.999);
        let norm = LayerNorm {
            gain: vec![1.0; 4],
            bias: vec![0.0; 4],
        };
        let mut x = [1.0f32, 2.0, 3.0, 4.0];
        layer_norm(&mut x, &norm, 1e-12);
        assert!(x.iter().sum::<f32>().abs() < 1e-5);
        let var: f32 = x.iter().map(|v| v * v).sum::<f32>() / 4.0;
        assert!((var - 1.0).abs() < 1e-4);
    }

    /// Attention in f64, straight from its definition.
    fn attention_reference(qkv: &[f32], len: usize, h: usize, heads: usize) -> Vec<f32> {
        let dh = h / heads;
        let at = |row: usize, which: usize, hd: usize, i: usize| {
            f64::from(qkv[row * 3 * h + which * h + hd * dh + i])
        };
        let mut out = vec![0f32; len * h];
        for hd in 0..heads {
            for q in 0..len {
                let s: Vec<f64> = (0..len)
                    .map(|k| {
                        (0..dh)
                            .map(|i| at(q, 0, hd, i) * at(k, 1, hd, i))
                            .sum::<f64>()
                    })
                    .map(|s| s / (dh as f64).sqrt())
                    .collect();
                let max = s.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                let e: Vec<f64> = s.iter().map(|v| (v - max).exp()).collect();
                let total: f64 = e.iter().sum();
                for i in 0..dh {
                    let v: f64 = (0..len).map(|k| e[k] / total * at(k, 2, hd, i)).sum();
                    out[q * h + hd * dh + i] = v as f32;
                }
            }
        }
        out
    }

    #[test]
    fn attention_over_nothing_leaves_the_context_alone() {
        let mut context = [7.0f32; 4];
        attend(&[], 0, 2, &mut context);
        attend(&[1.0; 12], 1, 0, &mut context);
        assert_eq!(context, [7.0; 4]);
    }

    #[test]
    fn attention_matches_its_definition_in_f64() {
        // The long sentence shares its heads out over the pool; the short ones not.
        for (len, h, heads) in [(1, 8, 2), (5, 12, 3), (17, 48, 4), (90, 64, 4)] {
            let mut s = 0x9e37_79b9u32;
            let qkv: Vec<f32> = (0..len * 3 * h)
                .map(|_| {
                    s ^= s << 13;
                    s ^= s >> 17;
                    s ^= s << 5;
                    (s % 4001) as f32 / 1000.0 - 2.0
                })
                .collect();
            let mut got = vec![0f32; len * h];
            attend(&qkv, len, heads, &mut got);
            let want = attention_reference(&qkv, len, h, heads);
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert!(
                    (g - w).abs() < 2e-5,
                    "len {len}: element {i} is {g}, want {w}"
                );
            }
        }
    }
}
