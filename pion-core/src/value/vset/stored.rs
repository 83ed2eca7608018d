//! The pieces of a vector set: how a vector is stored (`Q8`, `NOQUANT`, `BIN`) and
//! compared with Redis's formulas, the `REDUCE` projection, elements and search hits.

use crate::vector::Quantization;

/// How a vector set stores its vectors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VQuant {
    /// Full-precision f32 (`NOQUANT`).
    NoQuant,
    /// 8-bit codes and a per-vector range (`Q8`, the default).
    Q8,
    /// One bit per dimension (`BIN`).
    Bin,
}

impl VQuant {
    /// The name `VINFO` and `VEMB … RAW` report.
    pub fn name(self) -> &'static str {
        match self {
            VQuant::NoQuant => "f32",
            VQuant::Q8 => "int8",
            VQuant::Bin => "bin",
        }
    }

    pub(super) fn index_quantization(self) -> Quantization {
        match self {
            VQuant::NoQuant => Quantization::None,
            VQuant::Q8 => Quantization::Int8,
            VQuant::Bin => Quantization::Binary,
        }
    }
}

/// A unit vector as stored.
#[derive(Debug, Clone, PartialEq)]
pub enum Stored {
    /// f32 components.
    F32(Vec<f32>),
    /// Codes in -127..=127 and the largest absolute component (`range`).
    Q8 {
        /// The codes.
        codes: Vec<i8>,
        /// The largest absolute component of the unit vector.
        range: f32,
    },
    /// Bit `j` set when component `j` is positive.
    Bin(Vec<u64>),
}

impl Stored {
    /// Stores a unit vector as `quant` asks.
    pub fn quantize(unit: &[f32], quant: VQuant) -> Stored {
        match quant {
            VQuant::NoQuant => Stored::F32(unit.to_vec()),
            VQuant::Q8 => {
                let range = unit.iter().fold(0f32, |m, &x| m.max(x.abs()));
                if range == 0.0 {
                    return Stored::Q8 {
                        codes: vec![0; unit.len()],
                        range: 0.0,
                    };
                }
                let scale = 127.0 / range;
                let codes = unit.iter().map(|&x| (x * scale).round() as i8).collect();
                Stored::Q8 { codes, range }
            }
            VQuant::Bin => {
                let mut bits = vec![0u64; unit.len().div_ceil(64)];
                for (j, &x) in unit.iter().enumerate() {
                    if x > 0.0 {
                        bits[j / 64] |= 1 << (j % 64);
                    }
                }
                Stored::Bin(bits)
            }
        }
    }

    /// The unit vector back (approximate for codes; ±1 per dimension for bits).
    pub fn dequantize(&self, dim: usize) -> Vec<f32> {
        match self {
            Stored::F32(v) => v.clone(),
            Stored::Q8 { codes, range } => codes
                .iter()
                .map(|&c| f32::from(c) * range / 127.0)
                .collect(),
            Stored::Bin(bits) => (0..dim)
                .map(|j| {
                    if bits[j / 64] >> (j % 64) & 1 == 1 {
                        1.0
                    } else {
                        -1.0
                    }
                })
                .collect(),
        }
    }

    /// Redis's distance between two stored unit vectors of the same kind: `1 - cos`,
    /// in `[0, 2]`. Mixed kinds never meet (a set has one kind).
    pub fn distance(&self, other: &Stored, dim: usize) -> f32 {
        match (self, other) {
            (Stored::F32(a), Stored::F32(b)) => 1.0 - dot_f32(a, b),
            (
                Stored::Q8 {
                    codes: a,
                    range: ra,
                },
                Stored::Q8 {
                    codes: b,
                    range: rb,
                },
            ) => {
                if *ra == 0.0 || *rb == 0.0 {
                    return 1.0;
                }
                let scale = (ra / 127.0) * (rb / 127.0);
                let dot: i32 = a
                    .iter()
                    .zip(b)
                    .map(|(&x, &y)| i32::from(x) * i32::from(y))
                    .sum();
                (1.0 - dot as f32 * scale).clamp(0.0, 2.0)
            }
            (Stored::Bin(a), Stored::Bin(b)) => {
                let opposite: u32 = a.iter().zip(b).map(|(x, y)| (x ^ y).count_ones()).sum();
                opposite as f32 * 2.0 / dim as f32
            }
            _ => 1.0,
        }
    }

    /// The bytes `VEMB … RAW` shows: f32 or u64 words little-endian, or the codes.
    pub fn raw_bytes(&self) -> Vec<u8> {
        match self {
            Stored::F32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
            Stored::Q8 { codes, .. } => codes.iter().map(|&c| c as u8).collect(),
            Stored::Bin(bits) => bits.iter().flat_map(|w| w.to_le_bytes()).collect(),
        }
    }
}

/// The dot product summed as Redis sums it (eight at a time into two accumulators,
/// then the rest), so f32 rounding matches.
fn dot_f32(x: &[f32], y: &[f32]) -> f32 {
    let n = x.len().min(y.len());
    let (mut d0, mut d1) = (0f32, 0f32);
    let mut i = 0;
    while i + 7 < n {
        d0 += x[i] * y[i] + x[i + 1] * y[i + 1] + x[i + 2] * y[i + 2] + x[i + 3] * y[i + 3];
        d1 += x[i + 4] * y[i + 4] + x[i + 5] * y[i + 5] + x[i + 6] * y[i + 6] + x[i + 7] * y[i + 7];
        i += 8;
    }
    while i < n {
        d0 += x[i] * y[i];
        i += 1;
    }
    d0 + d1
}

/// Normalises `v` in place; returns its original length (1 for a zero vector, as
/// Redis reports it).
pub fn normalize(v: &mut [f32]) -> f32 {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm == 0.0 {
        return 1.0;
    }
    for x in v.iter_mut() {
        *x /= norm;
    }
    norm
}

/// The largest `REDUCE` projection (input × output dimensions) a set may hold: 64 Mi
/// cells, 256 MiB of matrix. Larger ones are refused, never allocated.
pub const MAX_PROJECTION_CELLS: usize = 1 << 26;

/// A `REDUCE` random projection from `input` to `output` dimensions.
#[derive(Debug, Clone, PartialEq)]
pub struct Projection {
    /// Input dimensions.
    pub input: usize,
    /// Row-major `output × input` matrix.
    pub(super) matrix: Vec<f32>,
}

impl Projection {
    /// The projection for these dimensions: Gaussian entries scaled by
    /// `1/sqrt(output)`, from a SplitMix64 generator seeded by the dimensions only, so
    /// it is the same on every replay and every platform.
    pub fn new(input: usize, output: usize) -> Projection {
        let mut state = 0x5645_4354_5345_5453 ^ ((input as u64) << 32) ^ output as u64;
        let mut uniform = move || {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            // 53 random bits into (0, 1].
            ((z >> 11) as f64 + 1.0) / (1u64 << 53) as f64
        };
        let scale = 1.0 / (output as f64).sqrt();
        let matrix = (0..input * output)
            .map(|_| {
                // Box-Muller: a standard normal from two uniforms.
                let (u1, u2) = (uniform(), uniform());
                ((-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos() * scale) as f32
            })
            .collect();
        Projection { input, matrix }
    }

    /// Projects one input vector.
    pub fn apply(&self, v: &[f32]) -> Vec<f32> {
        self.matrix
            .chunks_exact(self.input)
            .map(|row| row.iter().zip(v).map(|(a, b)| a * b).sum())
            .collect()
    }

    fn output(&self) -> usize {
        self.matrix.len() / self.input.max(1)
    }
}

/// One element of a set.
#[derive(Debug, Clone, PartialEq)]
pub struct Element {
    /// Its name.
    pub name: Vec<u8>,
    /// Its unit vector as stored. Inside a set, a `Q8` element's codes may be held by
    /// the set's index instead (an empty list here), so it is read through
    /// [`super::VectorSetValue::vector`].
    pub(super) vector: Stored,
    /// The length of the vector it was added with (after projection).
    pub norm: f32,
    /// JSON attributes, as sent.
    pub attr: Option<Vec<u8>>,
}

impl Element {
    /// An element with its unit vector as stored.
    pub fn new(name: Vec<u8>, vector: Stored, norm: f32, attr: Option<Vec<u8>>) -> Element {
        Element {
            name,
            vector,
            norm,
            attr,
        }
    }
}

/// One similarity result.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hit {
    /// The element's label.
    pub label: u64,
    /// Redis's distance, `1 - cos` in `[0, 2]`.
    pub distance: f32,
}

impl Hit {
    /// The similarity `VSIM` reports: `1 - distance/2`, computed in double.
    pub fn score(&self) -> f64 {
        1.0 - f64::from(self.distance) / 2.0
    }
}

impl Projection {
    /// Output dimensions.
    pub fn output_dim(&self) -> usize {
        self.output()
    }
}
