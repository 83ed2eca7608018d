//! Pion's compute kernels: attention over a stored K/V prefix, the per-block summaries
//! and query-aware block selection that let a long context attend a small part of its
//! prefix, the storage tiers' (de)quantisation, and the sentence encoder's dense
//! layers and attention ([`encoder`], CPU only).
//!
//! Everything here works on the prefix store's block layout as it is stored (see
//! [`layout`]): per layer, per block, K then V, each `[kv_heads, tokens, head_dim]` in
//! the namespace's dtype (`as-given`) or in a quantised tier (`int8`, `q4`), which the
//! kernels dequantise as they load a row, never into a copy of the prefix.
//!
//! Each kernel exists three times:
//! - as WGSL compute shaders driven by wgpu ([`gpu`]), for Vulkan, Metal and DX12;
//! - as an optimised CPU path (SIMD where the CPU has it, every core), used when no
//!   adapter is present or when the CPU is faster for the size;
//! - as a plain f64 reference that only the tests use.
//!
//! [`Kernels`] picks the device per call; the results agree within the tolerances
//! `doc/kernels.md` lists, and each path's reduction order is fixed by the inputs
//! alone, never by the thread count, so a path gives the same bits on every run.
//!
//! The crate knows nothing of namespaces, keys or commands: `pion-core` hands it
//! borrowed block bytes and gets states back.

pub mod attend;
pub mod distance;
pub mod encoder;
mod error;
pub mod gpu;
pub mod int8_dot;
pub mod layout;
pub mod quant;
pub mod select;
mod simd;
pub mod state;
pub mod summary;

#[cfg(test)]
mod reference;
#[cfg(test)]
mod tests;

pub use attend::{decode_partial, sparse_partial, Queries};
pub use error::KernelError;
pub use gpu::{Device, DevicePolicy, Gpu, Kernels};
pub use layout::{BlockKv, KvLayout};
pub use select::{block_select, Score, SelectOptions, Selection};
pub use simd::{prefetch, prefetch_line};
pub use state::{merge_states, AttnState};
pub use summary::{block_summary, BlockSummary};
