//! The prompt cache: a K/V-prefix block store. A model's prompt is prefilled once; its
//! K/V (and, for hybrid models, recurrent state) is stored in fixed-size token blocks
//! named by a chained hash, and any later request — another process, after a crash —
//! gets the longest stored prefix back instead of recomputing it.
//!
//! - [`manifest`]: a namespace's identity and layer layout, checked on every call;
//! - [`block_id`]: the stable chained hash that names blocks;
//! - [`store`]: blocks, sharing of common prefixes, longest-prefix match, the byte
//!   budget and its leaf-first LRU eviction;
//! - [`quant`] and `encode`: the storage tiers (as given, int8 and 4-bit in mlx's layout,
//!   2-bit);
//! - [`export`]: a stored prefix as a safetensors file for a client on the same machine;
//! - [`ops`]: the typed operations every caller goes through, with their log records;
//! - [`attend`]: attention over a stored prefix (`ATTEND.*`), with the kernels crate.

pub mod attend;
pub mod block_id;
pub mod blockfile;
mod encode;
pub mod export;
pub mod manifest;
pub mod ops;
pub mod persist;
pub mod store;

/// The storage tiers' encodings live with the kernels that read them.
pub use kernels::quant;

pub use block_id::BlockId;
pub use manifest::{Layer, Manifest};
pub use store::{Match, NamespaceStats, PrefixError, PrefixStore, Stored};

/// One stored layer back in the namespace's dtype (`KV.GET … DECODE`).
pub fn decode_layer(
    manifest: &Manifest,
    layer: usize,
    tokens: u32,
    stored: &[u8],
) -> Result<Vec<u8>, PrefixError> {
    let l = manifest
        .layers
        .get(layer)
        .ok_or_else(|| PrefixError::Refused(format!("ERR layer {layer} out of range")))?;
    encode::to_wire(manifest, l, tokens, stored)
}

#[cfg(test)]
mod tests;
