//! Quantisation tiers for stored K/V blocks.
//!
//! A prompt cache is bounded by memory: one 256-token block of a 32-layer model with 8
//! KV heads of 128 dims is 32 MiB of f16 K/V. Storing it at 8, 4 or 2 bits per element
//! (plus scales and biases) holds about 1.8, 3.2 or 6 times as many prefixes in the
//! same memory, at a measured cost in accuracy (`doc/quantisation.md` has the layouts
//! and the error table). This module is the pure part of that: it turns one tensor (the
//! keys or the values of one layer of one block) into its stored bytes and back, with
//! no knowledge of namespaces, blocks or the keyspace.
//!
//! Every function is total: a byte string of the wrong length, a shape the tier cannot
//! hold or a shape whose size overflows is a [`QuantError`], never a panic. Values that
//! are not finite (NaN, infinities) are encoded without error but their group
//! reconstructs as garbage; K/V from a working model never holds them.
//!
//! All tiers but [`Tier::AsGiven`] share one layout: the codes, packed, then one scale
//! per group, then one bias per group. An element decodes as `scale * q + bias`.
//!
//! | tier   | bits | groups                                           | scales and biases |
//! |--------|------|--------------------------------------------------|-------------------|
//! | `int8` | 8    | 32 consecutive elements along `head_dim`         | the input dtype   |
//! | `q4`   | 4    | 32 consecutive elements along `head_dim`         | the input dtype   |
//! | `q2`   | 2    | keys: one per (head, channel) over all tokens; values: 32 along `head_dim` | f16 |
//!
//! Codes are packed least-significant-bits first into little-endian `u32` words in
//! row-major element order (`[heads, tokens, head_dim]`), so element `i` sits in word
//! `i / (32 / bits)` at bit `bits * (i % (32 / bits))`. For 8 bits that is simply one
//! byte per element in element order.
//!
//! `int8` and `q4` are mlx's affine quantisation, byte for byte: their stored bytes are
//! those of `mx.quantize(x, group_size=32, bits=8)` (or `bits=4`), the codes, scales and
//! biases one after the other, so mlx-lm's `QuantizedKVCache` (with `group_size=32`)
//! can take them as they are. `q2` chooses its scales by the group's minimum and
//! maximum, as KIVI does.

use std::fmt;

use half::{bf16, f16};

/// Elements per group along `head_dim` (every quantised tier needs `head_dim` to be a
/// multiple of it).
const GROUP: usize = 32;

/// Element type of K/V tensors as clients send them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    /// IEEE 754 half precision, little-endian.
    F16,
    /// bfloat16 (the top half of an f32), little-endian.
    BF16,
    /// IEEE 754 single precision, little-endian.
    F32,
}

impl DType {
    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            DType::F16 | DType::BF16 => 2,
            DType::F32 => 4,
        }
    }

    /// Parses a dtype name: `f16`/`float16`, `bf16`/`bfloat16`, `f32`/`float32`
    /// (ASCII case ignored).
    pub fn parse(s: &str) -> Option<Self> {
        const NAMES: [(&str, DType); 6] = [
            ("f16", DType::F16),
            ("float16", DType::F16),
            ("bf16", DType::BF16),
            ("bfloat16", DType::BF16),
            ("f32", DType::F32),
            ("float32", DType::F32),
        ];
        NAMES
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(s))
            .map(|&(_, d)| d)
    }

    /// The canonical name (`f16`, `bf16`, `f32`), as [`DType::parse`] accepts it.
    pub fn name(self) -> &'static str {
        match self {
            DType::F16 => "f16",
            DType::BF16 => "bf16",
            DType::F32 => "f32",
        }
    }
}

/// How a namespace stores K/V.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tier {
    /// The bytes exactly as the client sent them.
    AsGiven,
    /// 8-bit affine codes per group of 32 along `head_dim`, scale and bias in the
    /// input dtype: the bytes of `mx.quantize(x, group_size=32, bits=8)`.
    Int8,
    /// 4-bit affine codes per group of 32 along `head_dim`, scale and bias in the
    /// input dtype: the bytes of `mx.quantize(x, group_size=32, bits=4)`.
    Q4,
    /// KIVI-style 2-bit codes: keys per channel, values per group of 32 per token.
    Q2,
}

impl Tier {
    /// Parses a tier name: `as-given` (also `fp16`, `native`), `int8`, `q4`, `q2`
    /// (ASCII case ignored).
    pub fn parse(s: &str) -> Option<Self> {
        const NAMES: [(&str, Tier); 6] = [
            ("as-given", Tier::AsGiven),
            ("fp16", Tier::AsGiven),
            ("native", Tier::AsGiven),
            ("int8", Tier::Int8),
            ("q4", Tier::Q4),
            ("q2", Tier::Q2),
        ];
        NAMES
            .iter()
            .find(|(name, _)| name.eq_ignore_ascii_case(s))
            .map(|&(_, t)| t)
    }

    /// The canonical name (`as-given`, `int8`, `q4`, `q2`), as [`Tier::parse`] accepts it.
    pub fn name(self) -> &'static str {
        match self {
            Tier::AsGiven => "as-given",
            Tier::Int8 => "int8",
            Tier::Q4 => "q4",
            Tier::Q2 => "q2",
        }
    }

    /// Bits per stored code (`None` for [`Tier::AsGiven`]).
    fn bits(self) -> Option<u32> {
        match self {
            Tier::AsGiven => None,
            Tier::Int8 => Some(8),
            Tier::Q4 => Some(4),
            Tier::Q2 => Some(2),
        }
    }

    /// Element type of the per-group scales and biases.
    fn param_dtype(self, input: DType) -> DType {
        match self {
            Tier::AsGiven | Tier::Int8 | Tier::Q4 => input,
            Tier::Q2 => DType::F16,
        }
    }
}

/// Whether a tensor holds keys or values (`q2` groups them differently).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Role {
    /// The K tensor.
    Keys,
    /// The V tensor.
    Values,
}

impl Role {
    fn name(self) -> &'static str {
        match self {
            Role::Keys => "keys",
            Role::Values => "values",
        }
    }
}

/// The shape of one layer's K (or V) for one block: `[heads, tokens, head_dim]`,
/// row-major.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Shape {
    /// KV heads.
    pub heads: usize,
    /// Tokens in the block.
    pub tokens: usize,
    /// Elements per head per token.
    pub head_dim: usize,
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}, {}, {}]", self.heads, self.tokens, self.head_dim)
    }
}

/// Why a tensor could not be encoded or decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuantError(pub String);

impl fmt::Display for QuantError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for QuantError {}

/// How a tier groups the elements of a tensor for its scales and biases.
#[derive(Clone, Copy)]
enum Grouping {
    /// Groups of [`GROUP`] consecutive elements along `head_dim`.
    Rows,
    /// One group per (head, channel), spanning every token of the block.
    Channels,
}

fn grouping(tier: Tier, role: Role) -> Grouping {
    match (tier, role) {
        (Tier::Q2, Role::Keys) => Grouping::Channels,
        _ => Grouping::Rows,
    }
}

/// How a tier chooses the scale and bias of a group.
#[derive(Clone, Copy)]
enum Quantiser {
    /// mlx's affine quantiser, exactly as `mx.quantize` computes it on the CPU (see
    /// [`mlx_quantise`]): the bytes are those of `mx.quantize(x, group_size=32,
    /// bits)`. Always in groups of [`GROUP`] along `head_dim`.
    Mlx,
    /// `bias = lo`, `scale = (hi - lo) / levels`, both rounded to their stored type
    /// before coding.
    MinMax,
}

fn quantiser(tier: Tier) -> Quantiser {
    match tier {
        Tier::Q2 => Quantiser::MinMax,
        // `as-given` never quantises.
        Tier::AsGiven | Tier::Int8 | Tier::Q4 => Quantiser::Mlx,
    }
}

/// The byte counts of one encoded tensor: codes, then scales, then biases.
struct Layout {
    elements: usize,
    code_bytes: usize,
    param_bytes: usize,
}

impl Layout {
    fn total(&self) -> Option<usize> {
        self.code_bytes
            .checked_add(self.param_bytes.checked_mul(2)?)
    }
}

/// The element count of `shape`, checked for overflow and for what `tier` can hold.
fn elements(tier: Tier, shape: Shape) -> Result<usize, QuantError> {
    if tier != Tier::AsGiven && !shape.head_dim.is_multiple_of(GROUP) {
        return Err(QuantError(format!(
            "tier {} needs head_dim to be a multiple of {GROUP}, got shape {shape}",
            tier.name()
        )));
    }
    shape
        .heads
        .checked_mul(shape.tokens)
        .and_then(|n| n.checked_mul(shape.head_dim))
        .ok_or_else(|| QuantError(format!("shape {shape} is too large")))
}

/// The encoded layout of a quantised tier (`bits` is that tier's).
fn layout(
    tier: Tier,
    bits: u32,
    dtype: DType,
    shape: Shape,
    role: Role,
) -> Result<Layout, QuantError> {
    let elements = elements(tier, shape)?;
    let too_large = || QuantError(format!("shape {shape} is too large"));
    // `elements` is a multiple of 32, so the codes fill whole u32 words.
    let code_bytes = elements / 8 * bits as usize;
    let groups = match grouping(tier, role) {
        Grouping::Rows => elements / GROUP,
        // No tokens, no groups: an empty block encodes to nothing.
        Grouping::Channels if elements == 0 => 0,
        Grouping::Channels => shape
            .heads
            .checked_mul(shape.head_dim)
            .ok_or_else(too_large)?,
    };
    let param_bytes = groups
        .checked_mul(tier.param_dtype(dtype).size())
        .ok_or_else(too_large)?;
    let layout = Layout {
        elements,
        code_bytes,
        param_bytes,
    };
    layout.total().ok_or_else(too_large)?;
    Ok(layout)
}

/// Bytes of `shape` as the client sends it in `dtype`.
fn input_len(tier: Tier, dtype: DType, shape: Shape) -> Result<usize, QuantError> {
    elements(tier, shape)?
        .checked_mul(dtype.size())
        .ok_or_else(|| QuantError(format!("shape {shape} is too large")))
}

/// Decodes little-endian `dtype` elements to f32.
///
/// Fails when `bytes` is not a whole number of elements.
pub fn to_f32(dtype: DType, bytes: &[u8]) -> Result<Vec<f32>, QuantError> {
    if !bytes.len().is_multiple_of(dtype.size()) {
        return Err(QuantError(format!(
            "{} bytes is not a whole number of {} elements ({} bytes each)",
            bytes.len(),
            dtype.name(),
            dtype.size()
        )));
    }
    Ok(match dtype {
        DType::F16 => bytes
            .chunks_exact(2)
            .map(|b| f16::from_le_bytes([b[0], b[1]]).to_f32())
            .collect(),
        DType::BF16 => bytes
            .chunks_exact(2)
            .map(|b| bf16::from_le_bytes([b[0], b[1]]).to_f32())
            .collect(),
        DType::F32 => bytes
            .chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect(),
    })
}

/// Encodes f32 values as little-endian `dtype` elements, rounding to nearest even
/// (values beyond the range of f16 become infinities).
pub fn from_f32(dtype: DType, values: &[f32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(values.len() * dtype.size());
    match dtype {
        DType::F16 => {
            for &v in values {
                out.extend_from_slice(&f16::from_f32(v).to_le_bytes());
            }
        }
        DType::BF16 => {
            for &v in values {
                out.extend_from_slice(&bf16::from_f32(v).to_le_bytes());
            }
        }
        DType::F32 => {
            for &v in values {
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
    }
    out
}

/// Rounds `v` to the nearest value `dtype` can hold.
fn round_to(dtype: DType, v: f32) -> f32 {
    match dtype {
        DType::F16 => f16::from_f32(v).to_f32(),
        DType::BF16 => bf16::from_f32(v).to_f32(),
        DType::F32 => v,
    }
}

/// Encoded size in bytes of one tensor (K or V) of `shape` stored at `tier` for input
/// `dtype`.
///
/// This is the length [`encode`] returns and [`decode`] expects. For a shape that
/// [`encode`] rejects (`head_dim` not a multiple of 32 under a quantised tier, or a
/// size that overflows `usize`) it is 0.
pub fn encoded_len(tier: Tier, dtype: DType, shape: Shape, role: Role) -> usize {
    let len = match tier.bits() {
        None => input_len(tier, dtype, shape),
        Some(bits) => layout(tier, bits, dtype, shape, role).map(|l| l.total().unwrap_or(0)),
    };
    len.unwrap_or(0)
}

/// The stored layout of one `(head, token)` row under a tier that groups along
/// `head_dim`: what a reader needs to pick a row's codes, scales and biases out of the
/// stored bytes without decoding them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowLayout {
    /// Bits per code.
    pub bits: u32,
    /// Bytes of packed codes per row (`head_dim * bits / 8`, whole `u32` words).
    pub code_bytes: usize,
    /// Bytes of scales per row (and as many of biases): one per group of 32.
    pub param_bytes: usize,
    /// Element type of the scales and biases.
    pub param_dtype: DType,
}

/// The per-row layout of tensors that `tier` stores in row groups, for input `dtype`
/// and `head_dim` elements per row; `None` for [`Tier::AsGiven`] (no codes), for keys
/// under [`Tier::Q2`] (grouped per channel over a whole block, not per row), and for a
/// `head_dim` the tier cannot hold.
///
/// A stored tensor of shape `[heads, tokens, head_dim]` is then `heads * tokens` rows
/// of codes, then as many rows of scales, then of biases, each section row-major.
pub fn row_layout(tier: Tier, dtype: DType, head_dim: usize, role: Role) -> Option<RowLayout> {
    let bits = tier.bits()?;
    if matches!(grouping(tier, role), Grouping::Channels) || !head_dim.is_multiple_of(GROUP) {
        return None;
    }
    let param_dtype = tier.param_dtype(dtype);
    Some(RowLayout {
        bits,
        code_bytes: head_dim / 8 * bits as usize,
        param_bytes: head_dim / GROUP * param_dtype.size(),
        param_dtype,
    })
}

/// Encodes one tensor of `shape`, given as little-endian `dtype` bytes, at `tier`.
///
/// [`Tier::AsGiven`] returns the input unchanged. Fails when `input` is not exactly
/// `shape` in `dtype`, or when the tier cannot hold the shape.
pub fn encode(
    tier: Tier,
    dtype: DType,
    shape: Shape,
    role: Role,
    input: &[u8],
) -> Result<Vec<u8>, QuantError> {
    let expected = input_len(tier, dtype, shape)?;
    if input.len() != expected {
        return Err(QuantError(format!(
            "expected {expected} bytes for shape {shape} {}, got {}",
            dtype.name(),
            input.len()
        )));
    }
    let Some(bits) = tier.bits() else {
        return Ok(input.to_vec());
    };
    let layout = layout(tier, bits, dtype, shape, role)?;
    let x = to_f32(dtype, input)?;
    let levels = ((1u32 << bits) - 1) as f32;
    let pdtype = tier.param_dtype(dtype);
    let (codes, scales, biases) = match quantiser(tier) {
        Quantiser::Mlx => mlx_quantise(&x, levels),
        Quantiser::MinMax => {
            let (scales, biases) = match grouping(tier, role) {
                Grouping::Rows => row_params(&x, levels, pdtype),
                Grouping::Channels => channel_params(&x, shape, levels, pdtype),
            };
            let codes = quantise(
                &x,
                shape,
                grouping(tier, role),
                &scales,
                &biases,
                levels as u8,
            );
            (codes, scales, biases)
        }
    };
    let mut out = Vec::with_capacity(layout.total().unwrap_or(0));
    pack(&codes, bits, &mut out);
    out.extend_from_slice(&from_f32(pdtype, &scales));
    out.extend_from_slice(&from_f32(pdtype, &biases));
    Ok(out)
}

/// Decodes one tensor that [`encode`] produced for the same `tier`, `dtype`, `shape`
/// and `role`, back to little-endian `dtype` bytes.
///
/// Fails when `encoded` is not exactly [`encoded_len`] bytes, or when the tier cannot
/// hold the shape.
pub fn decode(
    tier: Tier,
    dtype: DType,
    shape: Shape,
    role: Role,
    encoded: &[u8],
) -> Result<Vec<u8>, QuantError> {
    let Some(bits) = tier.bits() else {
        let expected = input_len(tier, dtype, shape)?;
        if encoded.len() != expected {
            return Err(QuantError(format!(
                "expected {expected} bytes for shape {shape} {}, got {}",
                dtype.name(),
                encoded.len()
            )));
        }
        return Ok(encoded.to_vec());
    };
    let layout = layout(tier, bits, dtype, shape, role)?;
    let expected = layout.total().unwrap_or(0);
    if encoded.len() != expected {
        return Err(QuantError(format!(
            "expected {expected} bytes of {} {} for shape {shape} {}, got {}",
            tier.name(),
            role.name(),
            dtype.name(),
            encoded.len()
        )));
    }
    let (packed, params) = encoded.split_at(layout.code_bytes);
    let (scales, biases) = params.split_at(layout.param_bytes);
    let pdtype = tier.param_dtype(dtype);
    let scales = to_f32(pdtype, scales)?;
    let biases = to_f32(pdtype, biases)?;
    let codes = unpack(packed, bits, layout.elements);
    let x = dequantise(&codes, shape, grouping(tier, role), &scales, &biases);
    Ok(from_f32(dtype, &x))
}

/// The smallest and largest of `values`, ignoring NaN; `(0, 0)` when there is none.
fn min_max(values: impl Iterator<Item = f32>) -> (f32, f32) {
    let (lo, hi) = values.fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), v| {
        (lo.min(v), hi.max(v))
    });
    if lo > hi {
        (0.0, 0.0)
    } else {
        (lo, hi)
    }
}

/// Scale and bias of one group spanning `[lo, hi]`, both rounded to what `pdtype`
/// holds (so that encoding quantises against exactly the values decoding will use).
fn group_params(lo: f32, hi: f32, levels: f32, pdtype: DType) -> (f32, f32) {
    (round_to(pdtype, (hi - lo) / levels), round_to(pdtype, lo))
}

/// The `mx.quantize` floor on the magnitude of a scale.
const MLX_EPS: f32 = 1e-7;

/// mlx's affine quantiser over groups of [`GROUP`] consecutive elements: the codes,
/// and each group's scale and bias in f32 (to be rounded to the stored type).
///
/// This is the computation of mlx's CPU `quantize`, step for step in f32 (divisions,
/// not reciprocals; rounding half to even), so that codes and parameters are
/// bit-identical to `mx.quantize(x, group_size=32, bits)`.
///
/// It puts 0 on the grid of codes: the range is anchored at whichever end of the
/// group is larger in magnitude (`edge`, which becomes the bias, the value of code 0),
/// the scale is negative when that end is the maximum, and the scale is then adjusted
/// so that `edge` is a whole number of steps from 0. The codes are chosen against
/// that f32 scale and bias, not their rounded stored values. The cost is a worst-case
/// error of `(hi - lo) / 2^bits` instead of half a step (see the test
/// `every_element_within_its_error_bound`).
///
/// NaN is skipped by the minimum and maximum as in mlx; a group holding an infinity or
/// only NaN gets a scale or bias that is not finite, and codes that are garbage (never
/// a panic).
fn mlx_quantise(x: &[f32], levels: f32) -> (Vec<u8>, Vec<f32>, Vec<f32>) {
    let groups = x.len() / GROUP;
    let mut codes = Vec::with_capacity(x.len());
    let mut scales = Vec::with_capacity(groups);
    let mut biases = Vec::with_capacity(groups);
    for g in x.chunks_exact(GROUP) {
        // `std::min` / `std::max` in mlx's argument order: a NaN never replaces
        // the running value.
        let (mut lo, mut hi) = (f32::INFINITY, f32::NEG_INFINITY);
        for &v in g {
            if hi < v {
                hi = v;
            }
            if v < lo {
                lo = v;
            }
        }
        let anchor_lo = lo.abs() > hi.abs();
        let step = (hi - lo) / levels;
        let mut scale = if step < MLX_EPS { MLX_EPS } else { step };
        if !anchor_lo {
            scale = -scale;
        }
        let edge = if anchor_lo { lo } else { hi };
        let q0 = (edge / scale).round_ties_even();
        let mut bias = 0.0;
        if q0 != 0.0 {
            scale = edge / q0;
            bias = edge;
        }
        for &v in g {
            // `as u8` maps NaN to 0; the clamp keeps every other value in range.
            let q = ((v - bias) / scale).round_ties_even();
            codes.push(q.max(0.0).min(levels) as u8);
        }
        scales.push(scale);
        biases.push(bias);
    }
    (codes, scales, biases)
}

/// Per-group parameters for groups of [`GROUP`] consecutive elements.
fn row_params(x: &[f32], levels: f32, pdtype: DType) -> (Vec<f32>, Vec<f32>) {
    x.chunks_exact(GROUP)
        .map(|g| {
            let (lo, hi) = min_max(g.iter().copied());
            group_params(lo, hi, levels, pdtype)
        })
        .unzip()
}

/// Per-(head, channel) parameters over all tokens, in `[heads, head_dim]` order.
fn channel_params(x: &[f32], shape: Shape, levels: f32, pdtype: DType) -> (Vec<f32>, Vec<f32>) {
    if x.is_empty() {
        return (Vec::new(), Vec::new());
    }
    let d = shape.head_dim;
    let mut scales = Vec::with_capacity(shape.heads * d);
    let mut biases = Vec::with_capacity(shape.heads * d);
    let mut lo = vec![f32::INFINITY; d];
    let mut hi = vec![f32::NEG_INFINITY; d];
    let per_head = shape.tokens * d;
    for h in 0..shape.heads {
        lo.fill(f32::INFINITY);
        hi.fill(f32::NEG_INFINITY);
        let head = &x[h * per_head..(h + 1) * per_head];
        for row in head.chunks_exact(d) {
            for ((l, u), &v) in lo.iter_mut().zip(hi.iter_mut()).zip(row) {
                *l = l.min(v);
                *u = u.max(v);
            }
        }
        for (&l, &u) in lo.iter().zip(&hi) {
            let (l, u) = if l > u { (0.0, 0.0) } else { (l, u) };
            let (s, b) = group_params(l, u, levels, pdtype);
            scales.push(s);
            biases.push(b);
        }
    }
    (scales, biases)
}

/// `1 / scale`, or 0 when the group is constant (or its scale is not usable): every
/// element then gets code 0 and decodes to the bias.
fn inverse(scale: f32) -> f32 {
    if scale > 0.0 && scale.is_finite() {
        1.0 / scale
    } else {
        0.0
    }
}

/// The code of `v`: nearest level, clamped to `0..=levels`. `as u8` saturates, so a
/// negative or NaN quotient gives 0.
fn code(v: f32, bias: f32, inv: f32, levels: u8) -> u8 {
    (((v - bias) * inv + 0.5) as u8).min(levels)
}

/// One code per element, in element order.
fn quantise(
    x: &[f32],
    shape: Shape,
    grouping: Grouping,
    scales: &[f32],
    biases: &[f32],
    levels: u8,
) -> Vec<u8> {
    let mut codes = vec![0u8; x.len()];
    match grouping {
        Grouping::Rows => {
            let groups = x.chunks_exact(GROUP).zip(codes.chunks_exact_mut(GROUP));
            for ((g, c), (&s, &b)) in groups.zip(scales.iter().zip(biases)) {
                let inv = inverse(s);
                for (q, &v) in c.iter_mut().zip(g) {
                    *q = code(v, b, inv, levels);
                }
            }
        }
        Grouping::Channels => {
            let d = shape.head_dim;
            if x.is_empty() {
                return codes;
            }
            let per_head = shape.tokens * d;
            let inv: Vec<f32> = scales.iter().map(|&s| inverse(s)).collect();
            let heads = x
                .chunks_exact(per_head)
                .zip(codes.chunks_exact_mut(per_head));
            for (h, (xh, ch)) in heads.enumerate() {
                let inv = &inv[h * d..(h + 1) * d];
                let bias = &biases[h * d..(h + 1) * d];
                for (row, crow) in xh.chunks_exact(d).zip(ch.chunks_exact_mut(d)) {
                    for (((q, &v), &b), &i) in crow.iter_mut().zip(row).zip(bias).zip(inv) {
                        *q = code(v, b, i, levels);
                    }
                }
            }
        }
    }
    codes
}

/// Reconstructs `scale * q + bias` for every element.
fn dequantise(
    codes: &[u8],
    shape: Shape,
    grouping: Grouping,
    scales: &[f32],
    biases: &[f32],
) -> Vec<f32> {
    let mut x = vec![0f32; codes.len()];
    match grouping {
        Grouping::Rows => {
            let groups = codes.chunks_exact(GROUP).zip(x.chunks_exact_mut(GROUP));
            for ((c, g), (&s, &b)) in groups.zip(scales.iter().zip(biases)) {
                for (v, &q) in g.iter_mut().zip(c) {
                    *v = s * f32::from(q) + b;
                }
            }
        }
        Grouping::Channels => {
            let d = shape.head_dim;
            if codes.is_empty() {
                return x;
            }
            let per_head = shape.tokens * d;
            let heads = codes
                .chunks_exact(per_head)
                .zip(x.chunks_exact_mut(per_head));
            for (h, (ch, xh)) in heads.enumerate() {
                let scale = &scales[h * d..(h + 1) * d];
                let bias = &biases[h * d..(h + 1) * d];
                for (crow, row) in ch.chunks_exact(d).zip(xh.chunks_exact_mut(d)) {
                    for (((v, &q), &s), &b) in row.iter_mut().zip(crow).zip(scale).zip(bias) {
                        *v = s * f32::from(q) + b;
                    }
                }
            }
        }
    }
    x
}

/// Appends `codes` packed `bits` to a code, least significant bits first, into
/// little-endian u32 words. `codes.len()` is a multiple of 32.
fn pack(codes: &[u8], bits: u32, out: &mut Vec<u8>) {
    if bits == 8 {
        out.extend_from_slice(codes);
        return;
    }
    let per_word = (32 / bits) as usize;
    for chunk in codes.chunks_exact(per_word) {
        let word = chunk
            .iter()
            .enumerate()
            .fold(0u32, |w, (j, &q)| w | (u32::from(q) << (bits as usize * j)));
        out.extend_from_slice(&word.to_le_bytes());
    }
}

/// The inverse of [`pack`]: `elements` codes from `packed`.
fn unpack(packed: &[u8], bits: u32, elements: usize) -> Vec<u8> {
    if bits == 8 {
        return packed.to_vec();
    }
    let per_word = (32 / bits) as usize;
    let mask = (1u32 << bits) - 1;
    let mut codes = vec![0u8; elements];
    for (w, chunk) in packed.chunks_exact(4).zip(codes.chunks_exact_mut(per_word)) {
        let word = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
        for (j, q) in chunk.iter_mut().enumerate() {
            *q = ((word >> (bits as usize * j)) & mask) as u8;
        }
    }
    codes
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_mlx;
