//! Vector search from C with C types: a vector set (Redis 8's `V*` commands, an HNSW
//! index under one key) filled from `float` arrays and searched for the `k` nearest
//! elements with a chosen search effort. The set is created by its first element,
//! with the quantisation that call asks for; each call is the command it stands for
//! (`VADD`, `VSIM … WITHSCORES`, `VREM`) through the engine's admission.

use std::ffi::c_char;
use std::ptr;

use pion_core::Reply;

use crate::status::{fail, guard, PionStatus};
use crate::{bytes_arg, c_arg, put_out, typed_command, PionEngine};

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

/// A vector's `dim` floats as `FP32` bytes.
///
/// # Safety
/// `v` is valid for `dim` floats when `dim` > 0.
unsafe fn vector_arg(v: *const f32, dim: usize) -> Result<Vec<u8>, PionStatus> {
    if dim == 0 {
        return Err(fail(PionStatus::PION_ERR_INVALID, "dim is 0"));
    }
    if v.is_null() {
        return Err(fail(PionStatus::PION_ERR_NULL, "vector is null"));
    }
    // SAFETY: the caller's contract: `dim` readable floats.
    let floats = unsafe { std::slice::from_raw_parts(v, dim) };
    Ok(floats.iter().flat_map(|x| x.to_le_bytes()).collect())
}

fn quantisation(flags: u32) -> Result<Option<&'static [u8]>, PionStatus> {
    match flags {
        0 => Ok(None),
        PION_VECTOR_NOQUANT => Ok(Some(b"NOQUANT")),
        PION_VECTOR_Q8 => Ok(Some(b"Q8")),
        PION_VECTOR_BIN => Ok(Some(b"BIN")),
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
    guard(|| {
        let run = || -> Result<(), PionStatus> {
            // SAFETY: the caller's contract.
            let key = unsafe { c_arg(key, "key") }?;
            // SAFETY: the caller's contract.
            let element = unsafe { bytes_arg(element, element_len, "element") }?;
            // SAFETY: the caller's contract.
            let blob = unsafe { vector_arg(vector, dim) }?;
            let mut argv = vec![b"VADD".to_vec(), key, b"FP32".to_vec(), blob, element];
            if let Some(q) = quantisation(flags)? {
                argv.push(q.to_vec());
            }
            let (reply, _) = typed_command(engine, db, &argv)?;
            let new = matches!(reply, Reply::Integer(1) | Reply::Bool(true));
            // SAFETY: the caller's contract: null or writable.
            unsafe { put_out(added, i32::from(new)) };
            Ok(())
        };
        run().err().unwrap_or(PionStatus::PION_OK)
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
    guard(|| {
        let run = || -> Result<(), PionStatus> {
            if out.is_null() {
                return Err(fail(PionStatus::PION_ERR_NULL, "out is null"));
            }
            if k == 0 {
                return Err(fail(PionStatus::PION_ERR_INVALID, "k is 0"));
            }
            // SAFETY: the caller's contract.
            let key = unsafe { c_arg(key, "key") }?;
            // SAFETY: the caller's contract.
            let blob = unsafe { vector_arg(query, dim) }?;
            let mut argv = vec![b"VSIM".to_vec(), key, b"FP32".to_vec(), blob];
            argv.extend([
                b"WITHSCORES".to_vec(),
                b"COUNT".to_vec(),
                k.to_string().into_bytes(),
            ]);
            if ef > 0 {
                argv.extend([b"EF".to_vec(), ef.to_string().into_bytes()]);
            }
            let items = match typed_command(engine, db, &argv)?.0 {
                Reply::Map(pairs) | Reply::Pairs(pairs) => pairs
                    .into_iter()
                    .filter_map(|(e, s)| Some((e.as_bytes()?.to_vec(), score_of(&s)?)))
                    .collect(),
                Reply::Array(items) if items.is_empty() => Vec::new(),
                Reply::Null | Reply::NullArray => Vec::new(),
                other => {
                    return Err(fail(
                        PionStatus::PION_ERR_PANIC,
                        format!("internal error: VSIM replied {other:?}"),
                    ))
                }
            };
            // SAFETY: checked non-null above; the caller's contract makes it writable.
            unsafe { *out = Box::into_raw(Box::new(PionNeighbors { items })) };
            Ok(())
        };
        run().err().unwrap_or(PionStatus::PION_OK)
    })
}

fn score_of(r: &Reply) -> Option<f64> {
    match r {
        Reply::Double(x) | Reply::ShortDouble(x) | Reply::HumanDouble(x) => Some(*x),
        other => std::str::from_utf8(other.as_bytes()?).ok()?.parse().ok(),
    }
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
    guard(|| {
        let run = || -> Result<(), PionStatus> {
            // SAFETY: the caller's contract.
            let key = unsafe { c_arg(key, "key") }?;
            // SAFETY: the caller's contract.
            let element = unsafe { bytes_arg(element, element_len, "element") }?;
            let (reply, _) = typed_command(engine, db, &[b"VREM".to_vec(), key, element])?;
            let gone = matches!(reply, Reply::Integer(1) | Reply::Bool(true));
            // SAFETY: the caller's contract: null or writable.
            unsafe { put_out(removed, i32::from(gone)) };
            Ok(())
        };
        run().err().unwrap_or(PionStatus::PION_OK)
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
