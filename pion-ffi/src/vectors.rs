//! Vector search from C with C types: a vector set (Redis 8's `V*` commands, an HNSW
//! index under one key) filled from `float` arrays and searched for the `k` nearest
//! elements with a chosen search effort. The set is created by its first element,
//! with the quantisation that call asks for; each call is pion-core's typed call
//! (`Engine::vadd`, `vsim`, `vrem`), so the command it stands for runs through the
//! engine's admission.

use std::ffi::c_char;
use std::ptr;

use pion_core::Quantization;

use crate::status::{fail, guarded, PionStatus};
use crate::{c_arg, engine_of, put_out, refused, slice_arg, PionEngine};

/// `pion_vector_add` flag: keep full-precision vectors (no quantisation).
pub const PION_VECTOR_NOQUANT: u32 = 1;
/// `pion_vector_add` flag: 8-bit quantisation (the default when no flag is given).
pub const PION_VECTOR_Q8: u32 = 2;
/// `pion_vector_add` flag: binary quantisation.
pub const PION_VECTOR_BIN: u32 = 4;

/// A search's results, nearest first (freed with `pion_neighbors_free`).
pub struct PionNeighbors {
    items: Vec<(Vec<u8>, f64)>,
}

/// A vector's `dim` floats, borrowed.
///
/// # Safety
/// `v` is valid for `dim` floats when `dim` > 0.
unsafe fn vector_arg<'a>(v: *const f32, dim: usize) -> Result<&'a [f32], PionStatus> {
    if dim == 0 {
        return Err(fail(PionStatus::PION_ERR_INVALID, "dim is 0"));
    }
    // SAFETY: the caller's contract.
    unsafe { slice_arg(v, dim, "vector") }
}

fn quantisation(flags: u32) -> Result<Option<Quantization>, PionStatus> {
    match flags {
        0 => Ok(None),
        PION_VECTOR_NOQUANT => Ok(Some(Quantization::None)),
        PION_VECTOR_Q8 => Ok(Some(Quantization::Q8)),
        PION_VECTOR_BIN => Ok(Some(Quantization::Binary)),
        other => Err(fail(
            PionStatus::PION_ERR_INVALID,
            format!("flags {other}: at most one of NOQUANT, Q8, BIN"),
        )),
    }
}

/// Adds `element` (or moves it) with its `dim`-float vector to the vector set `key`
/// in database `db`, creating the set on its first element; `flags` picks the
/// quantisation then (0: the default). `*added` (may be null) is 1 when the element
/// is new.
///
/// # Safety
/// `key` is a NUL-terminated string; `element` is valid for `element_len` bytes;
/// `vector` holds `dim` floats; `added` is null or writable.
#[no_mangle]
pub unsafe extern "C" fn pion_vector_add(
    engine: *mut PionEngine,
    db: u32,
    key: *const c_char,
    element: *const u8,
    element_len: usize,
    vector: *const f32,
    dim: usize,
    flags: u32,
    added: *mut i32,
) -> PionStatus {
    guarded(|| {
        // SAFETY: the caller's contract.
        let key = unsafe { c_arg(key, "key") }?;
        // SAFETY: the caller's contract.
        let element = unsafe { slice_arg(element, element_len, "element") }?;
        // SAFETY: the caller's contract.
        let vector = unsafe { vector_arg(vector, dim) }?;
        let quantization = quantisation(flags)?;
        let new = engine_of(engine)?
            .vadd(db as usize, &key, element, vector, quantization)
            .map_err(refused)?;
        // SAFETY: the caller's contract: null or writable.
        unsafe { put_out(added, i32::from(new)) };
        Ok(())
    })
}

/// Searches the vector set `key` for the `k` elements nearest `query` (`dim`
/// floats), exploring `ef` candidates (0: the set's default); the results, nearest
/// first with their similarity (1 identical, 0 opposite), go to `*out`. A missing
/// key gives no results.
///
/// # Safety
/// `key` is a NUL-terminated string; `query` holds `dim` floats; `out` is writable.
#[no_mangle]
pub unsafe extern "C" fn pion_vector_search(
    engine: *mut PionEngine,
    db: u32,
    key: *const c_char,
    query: *const f32,
    dim: usize,
    k: usize,
    ef: usize,
    out: *mut *mut PionNeighbors,
) -> PionStatus {
    guarded(|| {
        if out.is_null() {
            return Err(fail(PionStatus::PION_ERR_NULL, "out is null"));
        }
        if k == 0 {
            return Err(fail(PionStatus::PION_ERR_INVALID, "k is 0"));
        }
        // SAFETY: the caller's contract.
        let key = unsafe { c_arg(key, "key") }?;
        // SAFETY: the caller's contract.
        let query = unsafe { vector_arg(query, dim) }?;
        let ef = (ef > 0).then_some(ef);
        let found = engine_of(engine)?
            .vsim(db as usize, &key, query, k, ef)
            .map_err(refused)?;
        let items = found
            .into_iter()
            .map(|n| (n.element, n.similarity))
            .collect();
        // SAFETY: checked non-null above; the caller's contract makes it writable.
        unsafe { *out = Box::into_raw(Box::new(PionNeighbors { items })) };
        Ok(())
    })
}

/// Removes `element` from the vector set `key`; `*removed` (may be null) is 1 when it
/// was there. The set goes with its last element.
///
/// # Safety
/// `key` is a NUL-terminated string; `element` is valid for `element_len` bytes;
/// `removed` is null or writable.
#[no_mangle]
pub unsafe extern "C" fn pion_vector_remove(
    engine: *mut PionEngine,
    db: u32,
    key: *const c_char,
    element: *const u8,
    element_len: usize,
    removed: *mut i32,
) -> PionStatus {
    guarded(|| {
        // SAFETY: the caller's contract.
        let key = unsafe { c_arg(key, "key") }?;
        // SAFETY: the caller's contract.
        let element = unsafe { slice_arg(element, element_len, "element") }?;
        let gone = engine_of(engine)?
            .vrem(db as usize, &key, element)
            .map_err(refused)?;
        // SAFETY: the caller's contract: null or writable.
        unsafe { put_out(removed, i32::from(gone)) };
        Ok(())
    })
}

/// The results behind a handle (`None` for null).
///
/// # Safety
/// `n` is null or a handle from `pion_vector_search` not yet freed.
unsafe fn items<'a>(n: *const PionNeighbors) -> Option<&'a [(Vec<u8>, f64)]> {
    // SAFETY: the caller's contract.
    unsafe { n.as_ref() }.map(|n| n.items.as_slice())
}

/// How many results a search gave (0 for null).
///
/// # Safety
/// `n` is null or a handle from `pion_vector_search` not yet freed.
#[no_mangle]
pub unsafe extern "C" fn pion_neighbors_len(n: *const PionNeighbors) -> usize {
    // SAFETY: the caller's contract.
    unsafe { items(n) }.map_or(0, <[(Vec<u8>, f64)]>::len)
}

/// Result `i`'s element (its bytes, length in `*len`, which may be null), borrowed
/// from the results; null when out of range.
///
/// # Safety
/// `n` is null or a handle from `pion_vector_search` not yet freed; `len` is null
/// or writable.
#[no_mangle]
pub unsafe extern "C" fn pion_neighbors_element(
    n: *const PionNeighbors,
    i: usize,
    len: *mut usize,
) -> *const u8 {
    // SAFETY: the caller's contract.
    let item = unsafe { items(n) }.and_then(|v| v.get(i));
    // SAFETY: the caller's contract: null or writable.
    unsafe { put_out(len, item.map_or(0, |(e, _)| e.len())) };
    item.map_or(ptr::null(), |(e, _)| e.as_ptr())
}

/// Result `i`'s similarity (NaN when out of range).
///
/// # Safety
/// `n` is null or a handle from `pion_vector_search` not yet freed.
#[no_mangle]
pub unsafe extern "C" fn pion_neighbors_score(n: *const PionNeighbors, i: usize) -> f64 {
    // SAFETY: the caller's contract.
    unsafe { items(n) }
        .and_then(|v| v.get(i))
        .map_or(f64::NAN, |(_, s)| *s)
}

/// Frees a search's results (null is allowed).
///
/// # Safety
/// `n` is null or a handle from `pion_vector_search`, freed once.
#[no_mangle]
pub unsafe extern "C" fn pion_neighbors_free(n: *mut PionNeighbors) {
    if !n.is_null() {
        // SAFETY: the caller's contract: from `Box::into_raw`, freed once.
        drop(unsafe { Box::from_raw(n) });
    }
}
