//! The sentence encoder's kernels: a BERT's dense layers over weights packed once
//! ([`PackedLinear`]), and the arithmetic between them (layer norm, GELU, attention
//! within one sentence).
//!
//! They live here rather than beside the model in `pion-core` for the same reasons
//! the attention kernels do: they are the engine's hot arithmetic, they share this
//! crate's SIMD dispatch, and debug builds (the test suite embeds hundreds of texts
//! with the real model) compile this crate optimised. The model itself (weights,
//! tokenizer, pooling) stays in `pion-core`.

mod dense;
mod math;

pub use dense::{PackedLinear, PANEL, TILE_ROWS};
pub use math::{attend, gelu_in_place, layer_norm, LayerNorm};
