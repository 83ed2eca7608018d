//! The numbers behind Redis's HyperLogLog: the hash of an element, the register and
//! count it selects, and the cardinality estimate from a register histogram.
//!
//! `PFCOUNT` must answer what redis-server answers for the same registers, to the
//! unit, so each step is Redis's: MurmurHash64A with seed `0xadc83b19` (blocks read
//! little-endian), the low 14 bits choosing the register and the run of zeros above
//! them (plus one) the count, and the estimator of Otmar Ertl's "New cardinality
//! estimation algorithms for HyperLogLog sketches" (the `tau`/`sigma` corrections
//! that Redis has used since 5.0), computed in the same order of `f64` operations
//! and rounded half away from zero.

use super::sketch::{Histogram, REGISTERS};

/// Redis's seed for the element hash.
const SEED: u64 = 0xadc8_3b19;
/// Bits of the hash that choose the register.
const P: u32 = 14;
/// Bits left for the run of zeros.
const Q: u32 = 64 - P;
/// `0.5 / ln 2`, the estimator's constant for an unbounded number of registers.
#[allow(clippy::excessive_precision)]
const ALPHA_INF: f64 = 0.721347520444481703680;

/// MurmurHash64A of `data` with `seed`, as Redis computes it on a little-endian
/// machine.
pub fn murmur64a(data: &[u8], seed: u64) -> u64 {
    const M: u64 = 0xc6a4_a793_5bd1_e995;
    const R: u32 = 47;
    // Redis passes the length as a C `int`: elements longer than 2 GiB would wrap
    // there, and cannot be sent to either server with the default limits.
    let len = data.len() as i32 as i64 as u64;
    let mut h = seed ^ len.wrapping_mul(M);
    let (blocks, tail) = data.as_chunks::<8>();
    for block in blocks {
        let mut k = u64::from_le_bytes(*block);
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    if !tail.is_empty() {
        for (i, &b) in tail.iter().enumerate() {
            h ^= u64::from(b) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h
}

/// The register an element falls in and the count it offers that register: one
/// more than the number of zero bits above the register bits (at most `Q + 1`).
pub fn pattern(element: &[u8]) -> (usize, u8) {
    let hash = murmur64a(element, SEED);
    let index = (hash & (REGISTERS as u64 - 1)) as usize;
    let rest = (hash >> P) | (1u64 << Q);
    (index, rest.trailing_zeros() as u8 + 1)
}

/// Ertl's sigma function (infinite at 1).
fn sigma(mut x: f64) -> f64 {
    if x == 1.0 {
        return f64::INFINITY;
    }
    let (mut y, mut z) = (1.0, x);
    // It converges within a few dozen rounds for every x in [0, 1); the bound only
    // guards against a NaN, which no histogram produces.
    for _ in 0..10_000 {
        x *= x;
        let before = z;
        z += x * y;
        y += y;
        if before == z {
            break;
        }
    }
    z
}

/// Ertl's tau function (0 at 0 and 1).
fn tau(mut x: f64) -> f64 {
    if x == 0.0 || x == 1.0 {
        return 0.0;
    }
    let (mut y, mut z) = (1.0, 1.0 - x);
    for _ in 0..10_000 {
        x = x.sqrt();
        let before = z;
        y *= 0.5;
        let d = 1.0 - x;
        z -= d * d * y;
        if before == z {
            break;
        }
    }
    z / 3.0
}

/// The cardinality estimate from a register histogram, as Redis's `hllCount`.
pub fn estimate(h: &Histogram) -> u64 {
    let m = REGISTERS as f64;
    let q = Q as usize;
    let mut z = m * tau((m - f64::from(h[q + 1])) / m);
    for j in (1..=q).rev() {
        z += f64::from(h[j]);
        z *= 0.5;
    }
    z += m * sigma(f64::from(h[0]) / m);
    // `llroundl`: halves round away from zero, as `f64::round` does.
    (ALPHA_INF * m * m / z).round() as u64
}
