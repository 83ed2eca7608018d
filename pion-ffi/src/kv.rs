//! The prompt cache from C with C types: register a namespace, store a block from the
//! caller's buffers, match a token sequence into the caller's array of block ids,
//! and fetch blocks as views of the store's own buffers (no copy), which stay valid,
//! even if the blocks are evicted meanwhile, until the caller frees them.
//!
//! Each call is pion-core's typed call (`Engine::kv_register`, `kv_put`, `kv_match`,
//! `kv_fetch`), so the `KV.*` command it stands for runs through the engine's
//! admission: ACL rules on namespaces, limits and statistics apply as over the wire.

use std::ffi::c_char;
use std::ptr;

use pion_core::prefix::block_id::BlockId;
use pion_core::prefix::ops::Fetched;

use crate::status::{fail, guarded, PionStatus};
use crate::{c_text, engine_of, put_out, refused, slice_arg, PionEngine};

/// A block's id: the 128-bit chain hash of its tokens and its parent's id, as 16
/// bytes little-endian (all zero is the parent of a sequence's first block).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PionBlockId {
    /// The id's bytes.
    pub bytes: [u8; 16],
}

/// Fetched blocks: views of the store's buffers, held until `pion_kv_blocks_free`.
pub struct PionKvBlocks {
    blocks: Vec<Fetched>,
}

impl From<BlockId> for PionBlockId {
    fn from(id: BlockId) -> PionBlockId {
        PionBlockId {
            bytes: id.0.to_le_bytes(),
        }
    }
}

impl From<PionBlockId> for BlockId {
    fn from(id: PionBlockId) -> BlockId {
        BlockId(u128::from_le_bytes(id.bytes))
    }
}

/// Registers namespace `ns` with its manifest (JSON: model, tokenizer, block size,
/// dtype, tier, layers); registering the same manifest again is allowed.
///
/// # Safety
/// `ns` and `manifest_json` are NUL-terminated strings.
#[no_mangle]
pub unsafe extern "C" fn pion_kv_register(
    engine: *mut PionEngine,
    ns: *const c_char,
    manifest_json: *const c_char,
) -> PionStatus {
    guarded(|| {
        // SAFETY: the caller's contract.
        let ns = unsafe { c_text(ns, "ns") }?;
        // SAFETY: the caller's contract.
        let manifest = unsafe { c_text(manifest_json, "manifest_json") }?;
        engine_of(engine)?
            .kv_register(&ns, &manifest)
            .map_err(refused)
    })
}

/// Stores one block of `ntokens` tokens after `parent` (null: the sequence's first
/// block) with `nlayers` layers, layer `i` being `layer_lens[i]` bytes at
/// `layers[i]` in the namespace's layout (a recurrent layer without state: length
/// 0). The block's id goes to `*id` (which may be null). The bytes are copied once,
/// into the store.
///
/// # Safety
/// `ns` is a NUL-terminated string; `parent` and `id` are null or valid; `tokens`
/// holds `ntokens` u32s; `layers` and `layer_lens` hold `nlayers` entries and each
/// `layers[i]` is valid for `layer_lens[i]` bytes.
#[no_mangle]
pub unsafe extern "C" fn pion_kv_put(
    engine: *mut PionEngine,
    ns: *const c_char,
    parent: *const PionBlockId,
    tokens: *const u32,
    ntokens: usize,
    nlayers: usize,
    layers: *const *const u8,
    layer_lens: *const usize,
    id: *mut PionBlockId,
) -> PionStatus {
    guarded(|| {
        // SAFETY: the caller's contract.
        let ns = unsafe { c_text(ns, "ns") }?;
        // SAFETY: the caller's contract: null or a valid id.
        let parent = unsafe { parent.as_ref() }.copied().unwrap_or_default();
        // SAFETY: the caller's contract.
        let tokens = unsafe { slice_arg(tokens, ntokens, "tokens") }?;
        // SAFETY: the caller's contract: `nlayers` entries in each array.
        let ptrs = unsafe { slice_arg(layers, nlayers, "layers") }?;
        // SAFETY: as above.
        let lens = unsafe { slice_arg(layer_lens, nlayers, "layer_lens") }?;
        let mut data = Vec::with_capacity(nlayers);
        for (i, (&p, &n)) in ptrs.iter().zip(lens).enumerate() {
            // SAFETY: the caller's contract: `p` holds `n` bytes for this call.
            data.push(unsafe { slice_arg(p, n, &format!("layers[{i}]")) }?);
        }
        let stored = engine_of(engine)?
            .kv_put(&ns, parent.into(), tokens, &data)
            .map_err(refused)?;
        // SAFETY: the caller's contract: null or writable.
        unsafe { put_out(id, stored.into()) };
        Ok(())
    })
}

/// Finds the longest stored usable prefix of `tokens`: the tokens it covers go to
/// `*matched_tokens`, its block count to `*nblocks`, and the first `max_ids` of its
/// block ids to `ids` (a caller array; `*nblocks` may exceed `max_ids`, then call
/// again with room for all). The out pointers may be null.
///
/// # Safety
/// `ns` is a NUL-terminated string; `tokens` holds `ntokens` u32s; `ids` is null or
/// holds `max_ids` writable ids; the other out pointers are null or writable.
#[no_mangle]
pub unsafe extern "C" fn pion_kv_match(
    engine: *mut PionEngine,
    ns: *const c_char,
    tokens: *const u32,
    ntokens: usize,
    matched_tokens: *mut u64,
    ids: *mut PionBlockId,
    max_ids: usize,
    nblocks: *mut usize,
) -> PionStatus {
    guarded(|| {
        // SAFETY: the caller's contract.
        let ns = unsafe { c_text(ns, "ns") }?;
        // SAFETY: the caller's contract.
        let tokens = unsafe { slice_arg(tokens, ntokens, "tokens") }?;
        let m = engine_of(engine)?.kv_match(&ns, tokens).map_err(refused)?;
        if !ids.is_null() {
            for (i, b) in m.blocks.iter().take(max_ids).enumerate() {
                // SAFETY: the caller's contract: `max_ids` writable ids.
                unsafe { *ids.add(i) = (*b).into() };
            }
        }
        // SAFETY: the caller's contract: null or writable.
        unsafe {
            put_out(matched_tokens, m.tokens);
            put_out(nblocks, m.blocks.len());
        }
        Ok(())
    })
}

/// Fetches `nids` blocks of `ns` (every one stored, or `PION_ERR_COMMAND`) with
/// their layers (all, or the `nlayer_indexes` listed in `layer_indexes`), as views
/// of the store's buffers written to `*out`; free them with `pion_kv_blocks_free`.
///
/// # Safety
/// `ns` is a NUL-terminated string; `ids` holds `nids` ids; `layer_indexes` is null
/// or holds `nlayer_indexes` entries; `out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn pion_kv_fetch(
    engine: *mut PionEngine,
    ns: *const c_char,
    ids: *const PionBlockId,
    nids: usize,
    layer_indexes: *const u32,
    nlayer_indexes: usize,
    out: *mut *mut PionKvBlocks,
) -> PionStatus {
    guarded(|| {
        if out.is_null() {
            return Err(fail(PionStatus::PION_ERR_NULL, "out is null"));
        }
        // SAFETY: the caller's contract.
        let ns = unsafe { c_text(ns, "ns") }?;
        if nids == 0 {
            return Err(fail(PionStatus::PION_ERR_INVALID, "nids is 0: no block"));
        }
        // SAFETY: the caller's contract: `nids` readable ids.
        let ids: Vec<BlockId> = unsafe { slice_arg(ids, nids, "ids") }?
            .iter()
            .map(|&id| id.into())
            .collect();
        let layers: Option<Vec<usize>> = if layer_indexes.is_null() || nlayer_indexes == 0 {
            None
        } else {
            // SAFETY: the caller's contract: `nlayer_indexes` readable entries.
            let list = unsafe { slice_arg(layer_indexes, nlayer_indexes, "layer_indexes") }?;
            Some(list.iter().map(|&l| l as usize).collect())
        };
        let blocks = engine_of(engine)?
            .kv_fetch(&ns, &ids, layers.as_deref())
            .map_err(refused)?;
        // SAFETY: checked non-null above; the caller's contract makes it writable.
        unsafe { *out = Box::into_raw(Box::new(PionKvBlocks { blocks })) };
        Ok(())
    })
}

/// The blocks behind a handle (`None` for null).
///
/// # Safety
/// `blocks` is null or a handle from `pion_kv_fetch` not yet freed.
unsafe fn fetched<'a>(blocks: *const PionKvBlocks) -> Option<&'a [Fetched]> {
    // SAFETY: the caller's contract.
    unsafe { blocks.as_ref() }.map(|b| b.blocks.as_slice())
}

/// How many blocks a fetch holds (0 for null).
///
/// # Safety
/// `blocks` is null or a handle from `pion_kv_fetch` not yet freed.
#[no_mangle]
pub unsafe extern "C" fn pion_kv_blocks_len(blocks: *const PionKvBlocks) -> usize {
    // SAFETY: the caller's contract.
    unsafe { fetched(blocks) }.map_or(0, <[Fetched]>::len)
}

/// The tokens block `i` covers (0 when out of range).
///
/// # Safety
/// `blocks` is null or a handle from `pion_kv_fetch` not yet freed.
#[no_mangle]
pub unsafe extern "C" fn pion_kv_block_tokens(blocks: *const PionKvBlocks, i: usize) -> u32 {
    // SAFETY: the caller's contract.
    unsafe { fetched(blocks) }
        .and_then(|b| b.get(i))
        .map_or(0, |b| b.tokens)
}

/// How many layers block `i` holds (those asked for; 0 when out of range).
///
/// # Safety
/// `blocks` is null or a handle from `pion_kv_fetch` not yet freed.
#[no_mangle]
pub unsafe extern "C" fn pion_kv_block_layers(blocks: *const PionKvBlocks, i: usize) -> usize {
    // SAFETY: the caller's contract.
    unsafe { fetched(blocks) }
        .and_then(|b| b.get(i))
        .map_or(0, |b| b.layers.len())
}

/// Layer `layer` of block `i` (the `layer`-th of those asked for): its bytes, as
/// stored, with their length in `*len` (which may be null). A view of the store's
/// buffer, valid until `pion_kv_blocks_free`; null (length 0) for a recurrent layer
/// without state at this block, or out of range.
///
/// # Safety
/// `blocks` is null or a handle from `pion_kv_fetch` not yet freed; `len` is null or
/// writable.
#[no_mangle]
pub unsafe extern "C" fn pion_kv_block_layer(
    blocks: *const PionKvBlocks,
    i: usize,
    layer: usize,
    len: *mut usize,
) -> *const u8 {
    // SAFETY: the caller's contract.
    let data = unsafe { fetched(blocks) }
        .and_then(|b| b.get(i))
        .and_then(|b| b.layers.get(layer))
        .and_then(|l| l.as_deref());
    // SAFETY: the caller's contract: null or writable.
    unsafe { put_out(len, data.map_or(0, <[u8]>::len)) };
    data.map_or(ptr::null(), <[u8]>::as_ptr)
}

/// Releases fetched blocks (null is allowed); their views must not be used after.
///
/// # Safety
/// `blocks` is null or a handle from `pion_kv_fetch`, freed once.
#[no_mangle]
pub unsafe extern "C" fn pion_kv_blocks_free(blocks: *mut PionKvBlocks) {
    if !blocks.is_null() {
        // SAFETY: the caller's contract: from `Box::into_raw`, freed once.
        drop(unsafe { Box::from_raw(blocks) });
    }
}
