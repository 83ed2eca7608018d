//! The prefix store's block layout as the kernels read it.
//!
//! One layer of one block is stored as K then V. Each is `[kv_heads, tokens,
//! head_dim]`, row-major (per KV head, token-major rows of `head_dim`):
//! - `as-given`: the elements in the namespace's dtype (f16, bf16 or f32, little-endian);
//! - `int8` / `q4`: mlx's affine layout: every row's packed codes (8 or 4 bits, groups
//!   of 32 along `head_dim`, low bits first), then every row's scales, then every
//!   row's biases, in the dtype (see [`crate::quant`]).
//!
//! [`KvLayout::load_rows`] turns rows of one head of one block into f32 as a kernel
//! loads them: the prefix is never decoded as a whole.

use crate::error::{refuse, KernelError};
use crate::quant::{self, DType, Role, Shape, Tier};
use crate::simd;

/// The largest `head_dim` the kernels take (the GPU shaders keep a row per thread
/// group in registers).
pub const MAX_HEAD_DIM: usize = 256;

/// The shape and format of one attention layer's stored K/V.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KvLayout {
    /// K/V heads.
    pub kv_heads: usize,
    /// Elements per head per token.
    pub head_dim: usize,
    /// The element type K/V was given in (and the scales' type for quantised tiers).
    pub dtype: DType,
    /// How it is stored.
    pub tier: Tier,
}

/// How one row of a stored tensor is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RowFormat {
    /// Elements in a dtype.
    Plain(DType),
    /// Affine codes with one scale and bias per group of 32.
    Affine {
        bits: u32,
        code_bytes: usize,
        param_bytes: usize,
        param_dtype: DType,
    },
}

/// One layer of one stored block: its token count and its K and V bytes as stored.
#[derive(Debug, Clone, Copy)]
pub struct BlockKv<'a> {
    /// Tokens the block covers.
    pub tokens: usize,
    /// The stored keys.
    pub keys: &'a [u8],
    /// The stored values.
    pub values: &'a [u8],
}

impl KvLayout {
    /// A layout the kernels can read: `head_dim` 1..=[`MAX_HEAD_DIM`] (a multiple of 32
    /// for a quantised tier), at least one KV head, and a tier of `as-given`, `int8` or
    /// `q4` (`q2` groups keys over a whole block, which no row-wise load can read).
    pub fn new(
        kv_heads: usize,
        head_dim: usize,
        dtype: DType,
        tier: Tier,
    ) -> Result<KvLayout, KernelError> {
        if kv_heads == 0 || kv_heads > 4096 {
            refuse!("kv_heads must be 1..4096, got {kv_heads}");
        }
        if head_dim == 0 || head_dim > MAX_HEAD_DIM {
            refuse!("head_dim must be 1..{MAX_HEAD_DIM} for attention, got {head_dim}");
        }
        match tier {
            Tier::AsGiven => {}
            Tier::Int8 | Tier::Q4 if head_dim.is_multiple_of(32) => {}
            Tier::Int8 | Tier::Q4 => {
                refuse!("tier {} needs head_dim a multiple of 32", tier.name())
            }
            Tier::Q2 => refuse!("attention does not read the q2 tier"),
        }
        Ok(KvLayout {
            kv_heads,
            head_dim,
            dtype,
            tier,
        })
    }

    /// Bytes of one stored tensor (K or V) of a block of `tokens`.
    pub fn tensor_bytes(&self, tokens: usize) -> usize {
        let shape = Shape {
            heads: self.kv_heads,
            tokens,
            head_dim: self.head_dim,
        };
        quant::encoded_len(self.tier, self.dtype, shape, Role::Keys)
    }

    /// A block from one stored layer (K then V), checked for length.
    pub fn split<'a>(&self, tokens: usize, stored: &'a [u8]) -> Result<BlockKv<'a>, KernelError> {
        let each = self.tensor_bytes(tokens);
        if each.checked_mul(2) != Some(stored.len()) {
            refuse!(
                "a stored layer of {tokens} tokens is {} bytes in this layout, got {}",
                each.saturating_mul(2),
                stored.len()
            );
        }
        let (keys, values) = stored.split_at(each);
        Ok(BlockKv {
            tokens,
            keys,
            values,
        })
    }

    /// Checks that a block's K and V have this layout's lengths.
    pub fn check(&self, block: &BlockKv<'_>) -> Result<(), KernelError> {
        let each = self.tensor_bytes(block.tokens);
        if block.keys.len() != each || block.values.len() != each {
            refuse!(
                "a block of {} tokens needs {each} bytes each of K and V in this layout, got {} and {}",
                block.tokens,
                block.keys.len(),
                block.values.len()
            );
        }
        Ok(())
    }

    pub(crate) fn row_format(&self) -> RowFormat {
        match quant::row_layout(self.tier, self.dtype, self.head_dim, Role::Keys) {
            Some(r) => RowFormat::Affine {
                bits: r.bits,
                code_bytes: r.code_bytes,
                param_bytes: r.param_bytes,
                param_dtype: r.param_dtype,
            },
            None => RowFormat::Plain(self.dtype),
        }
    }

    /// The stored bytes of KV head `head`'s rows (codes only, for a quantised tier) of
    /// a block's K and V: what a kernel is about to read.
    pub(crate) fn head_bytes<'a>(&self, block: &BlockKv<'a>, head: usize) -> (&'a [u8], &'a [u8]) {
        let row_bytes = match self.row_format() {
            RowFormat::Plain(dtype) => self.head_dim * dtype.size(),
            RowFormat::Affine { code_bytes, .. } => code_bytes,
        };
        let range = head * block.tokens * row_bytes..(head + 1) * block.tokens * row_bytes;
        (
            block.keys.get(range.clone()).unwrap_or_default(),
            block.values.get(range).unwrap_or_default(),
        )
    }

    /// Decodes every row of KV head `head` of one stored tensor (checked by
    /// [`KvLayout::check`]) of `tokens` rows into `out` (`tokens * head_dim` floats).
    pub(crate) fn load_head(
        &self,
        tensor: &[u8],
        tokens: usize,
        head: usize,
        params: &mut Vec<f32>,
        out: &mut [f32],
    ) {
        self.load_rows(tensor, tokens, head, 0..tokens, params, out);
    }

    /// The stored bytes of rows `rows` (token indices within the block) of KV head
    /// `head` of a stored tensor of `tokens` rows, when the layout stores plain f16
    /// (which the kernels can read without decoding).
    pub(crate) fn stored_f16_rows<'a>(
        &self,
        tensor: &'a [u8],
        tokens: usize,
        head: usize,
        rows: std::ops::Range<usize>,
    ) -> Option<&'a [u8]> {
        if self.row_format() != RowFormat::Plain(DType::F16) {
            return None;
        }
        let row_bytes = 2 * self.head_dim;
        tensor.get((head * tokens + rows.start) * row_bytes..(head * tokens + rows.end) * row_bytes)
    }

    /// The stored codes of rows `rows` of KV head `head` of a stored tensor of `tokens`
    /// rows and their bits, when the layout stores affine codes; each group's scale
    /// then bias are decoded into `params` (scales in its first half, biases in its
    /// second).
    pub(crate) fn stored_codes<'a>(
        &self,
        tensor: &'a [u8],
        tokens: usize,
        head: usize,
        rows: std::ops::Range<usize>,
        params: &mut Vec<f32>,
    ) -> Option<(&'a [u8], u32)> {
        let RowFormat::Affine {
            bits,
            code_bytes,
            param_bytes,
            param_dtype,
        } = self.row_format()
        else {
            return None;
        };
        let rows = head * tokens + rows.start..head * tokens + rows.end;
        let all_rows = self.kv_heads * tokens;
        let codes = tensor.get(rows.start * code_bytes..rows.end * code_bytes)?;
        let scales_at = all_rows * code_bytes;
        let biases_at = scales_at + all_rows * param_bytes;
        let section =
            |at: usize| tensor.get(at + rows.start * param_bytes..at + rows.end * param_bytes);
        let (scales, biases) = (section(scales_at)?, section(biases_at)?);
        let groups = rows.len() * self.head_dim / 32;
        params.resize(2 * groups, 0.0);
        let (s, b) = params.split_at_mut(groups);
        convert(param_dtype, scales, s);
        convert(param_dtype, biases, b);
        Some((codes, bits))
    }

    /// Decodes rows `rows` (token indices within the block) of KV head `head` of one
    /// stored tensor (checked by [`KvLayout::check`]) of `tokens` rows into `out`
    /// (`rows.len() * head_dim` floats): the kernels load a block a tile at a time,
    /// so the f32 copy stays in the L1 cache.
    pub(crate) fn load_rows(
        &self,
        tensor: &[u8],
        tokens: usize,
        head: usize,
        rows: std::ops::Range<usize>,
        params: &mut Vec<f32>,
        out: &mut [f32],
    ) {
        let d = self.head_dim;
        let rows = head * tokens + rows.start..head * tokens + rows.end;
        match self.row_format() {
            RowFormat::Plain(dtype) => {
                let size = dtype.size();
                let bytes = &tensor[rows.start * d * size..rows.end * d * size];
                convert(dtype, bytes, out);
            }
            RowFormat::Affine {
                bits,
                code_bytes,
                param_bytes,
                param_dtype,
            } => {
                let all_rows = self.kv_heads * tokens;
                let codes = &tensor[rows.start * code_bytes..rows.end * code_bytes];
                let scales_at = all_rows * code_bytes;
                let biases_at = scales_at + all_rows * param_bytes;
                let groups = rows.len() * d / 32;
                params.resize(2 * groups, 0.0);
                let (scales, biases) = params.split_at_mut(groups);
                let section =
                    |at: usize| &tensor[at + rows.start * param_bytes..at + rows.end * param_bytes];
                convert(param_dtype, section(scales_at), scales);
                convert(param_dtype, section(biases_at), biases);
                simd::affine_to_f32(codes, bits, scales, biases, out);
            }
        }
    }
}

/// Little-endian `dtype` elements to f32.
fn convert(dtype: DType, bytes: &[u8], out: &mut [f32]) {
    match dtype {
        DType::F16 => simd::f16_to_f32(bytes, out),
        DType::BF16 => simd::bf16_to_f32(bytes, out),
        DType::F32 => simd::f32_from_le(bytes, out),
    }
}
