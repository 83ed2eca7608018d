//! Pion's engine behind a C ABI, declared in `include/pion.h` (generated from this
//! crate by cbindgen; the test command fails when the checked-in header is stale).
//!
//! A C program opens an engine (in memory, or durable on a data directory), runs any
//! command on it as an argument vector of byte strings, walks the reply tree it gets
//! back and frees it, and closes the engine. The prompt cache (`kv.rs`) and vector
//! sets (`vectors.rs`) also have calls with C types, over pion-core's typed API, and
//! a session (`session.rs`) keeps a client's state between calls (`SELECT`, `MULTI`).
//! Every command goes through the engine's one admission path (ACL, limits,
//! statistics), as it does from the server and from Python.
//!
//! Rules every function keeps:
//! - it returns a [`PionStatus`] (or a plain value where nothing can fail) and, on
//!   failure, leaves a message for [`pion_last_error`] on the calling thread;
//! - it never unwinds into C: a panic is caught and reported as `PION_ERR_PANIC`;
//! - it checks what it can: null pointers, the options' version, handles that are
//!   not open (use after close is an error, not undefined behaviour);
//! - it may be called from any number of threads at once, on one engine or several.
//!
//! An engine or session handle is a token, never dereferenced (`handles.rs`): the
//! library keeps the engines and sessions the caller opened, and nothing else.

mod handles;
mod kv;
mod reply;
mod session;
mod status;
mod vectors;

use std::ffi::{c_char, CStr};

use pion_core::{Engine, EngineOptions};

use handles::Handles;
pub use kv::{
    pion_kv_block_layer, pion_kv_block_layers, pion_kv_block_tokens, pion_kv_blocks_free,
    pion_kv_blocks_len, pion_kv_fetch, pion_kv_match, pion_kv_put, pion_kv_register, PionBlockId,
    PionKvBlocks,
};
pub use reply::{
    pion_reply_bytes, pion_reply_double, pion_reply_element, pion_reply_free, pion_reply_integer,
    pion_reply_kind, pion_reply_len, PionReply, PionReplyKind,
};
pub use session::{pion_session_close, pion_session_execute, pion_session_open, PionSession};
use status::{fail, guard, guarded};
pub use status::{pion_last_error, PionStatus};
pub use vectors::{
    pion_neighbors_element, pion_neighbors_free, pion_neighbors_len, pion_neighbors_score,
    pion_vector_add, pion_vector_remove, pion_vector_search, PionNeighbors, PION_VECTOR_BIN,
    PION_VECTOR_NOQUANT, PION_VECTOR_Q8,
};

/// The version of `pion_options` this library reads.
pub const PION_OPTIONS_VERSION: u32 = 1;

/// How to open an engine.
#[repr(C)]
pub struct PionOptions {
    /// `PION_OPTIONS_VERSION`: the layout of this struct the caller was built with.
    pub version: u32,
    /// The data directory (created if missing): everything acknowledged survives a
    /// restart or a crash. Null for an engine in memory only.
    pub dir: *const c_char,
}

/// An open engine (opaque: a token the library looks up, never a pointer to read).
pub struct PionEngine {
    _private: [u8; 0],
}

/// The engines the caller opened.
static ENGINES: Handles<Engine> = Handles::new("engine");

/// The engine behind a handle, as a reference of its own for this call.
pub(crate) fn engine_of(engine: *const PionEngine) -> Result<Engine, PionStatus> {
    ENGINES.get(engine)
}

/// A command's arguments from C: `argc` entries of `argv`/`argvlen`, copied.
///
/// # Safety
/// `argv` and `argvlen` hold `argc` entries; each `argv[i]` is valid for
/// `argvlen[i]` bytes (null allowed when 0).
pub(crate) unsafe fn args_of(
    argc: usize,
    argv: *const *const u8,
    argvlen: *const usize,
) -> Result<Vec<Vec<u8>>, PionStatus> {
    if argc == 0 {
        return Err(fail(PionStatus::PION_ERR_INVALID, "argc is 0: no command"));
    }
    // SAFETY: the caller's contract: `argc` entries in each array.
    let ptrs = unsafe { slice_arg(argv, argc, "argv") }?;
    // SAFETY: as above.
    let lens = unsafe { slice_arg(argvlen, argc, "argvlen") }?;
    ptrs.iter()
        .zip(lens)
        .enumerate()
        // SAFETY: the caller's contract: `p` holds `n` bytes.
        .map(|(i, (&p, &n))| unsafe { slice_arg(p, n, &format!("argv[{i}]")) }.map(<[u8]>::to_vec))
        .collect()
}

/// Opens an engine and writes its handle to `*out`.
///
/// `options` may be null (an engine in memory). A durable engine recovers what its
/// directory holds; opening fails with `PION_ERR_OPEN` when another process has the
/// directory open or its files are damaged.
///
/// # Safety
/// `options` is null or points to a `pion_options` whose `dir` is null or a
/// NUL-terminated string; `out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn pion_open(
    options: *const PionOptions,
    out: *mut *mut PionEngine,
) -> PionStatus {
    guard(|| {
        if out.is_null() {
            return fail(PionStatus::PION_ERR_NULL, "out is null");
        }
        // SAFETY: the caller's contract; null means defaults.
        let dir = match unsafe { options.as_ref() } {
            None => None,
            Some(o) if o.version != PION_OPTIONS_VERSION => {
                return fail(
                    PionStatus::PION_ERR_INVALID,
                    format!(
                        "options version {} (this library reads {PION_OPTIONS_VERSION})",
                        o.version
                    ),
                )
            }
            Some(o) if o.dir.is_null() => None,
            // SAFETY: the caller's contract: a NUL-terminated string.
            Some(o) => match unsafe { CStr::from_ptr(o.dir) }.to_str() {
                Ok(d) => Some(d.to_string()),
                Err(_) => return fail(PionStatus::PION_ERR_INVALID, "dir is not UTF-8"),
            },
        };
        let engine = match dir {
            None => Engine::in_memory(EngineOptions::default()),
            Some(d) => match Engine::open(&d) {
                Ok(e) => e,
                Err(e) => return fail(PionStatus::PION_ERR_OPEN, format!("{d}: {e}")),
            },
        };
        // SAFETY: checked non-null above; the caller's contract makes it writable.
        unsafe { *out = ENGINES.insert(engine) };
        PionStatus::PION_OK
    })
}

/// Closes an engine: a durable one's log is flushed, and its directory released
/// when the last call running on it returns. Null is allowed and does nothing; closing a
/// handle twice is `PION_ERR_CLOSED`.
#[no_mangle]
pub extern "C" fn pion_close(engine: *mut PionEngine) -> PionStatus {
    guarded(|| match ENGINES.remove(engine)? {
        Some(e) => e
            .flush_log()
            .map_err(|err| fail(PionStatus::PION_ERR_IO, err.to_string())),
        None => Ok(()),
    })
}

/// Runs one command on database `db` and writes its reply tree to `*reply` (free it
/// with `pion_reply_free`). `argv[i]` holds `argvlen[i]` bytes (binary-safe, no NUL
/// needed). A command that fails still returns `PION_OK`, with an `ERROR` reply.
///
/// # Safety
/// `argv` and `argvlen` point to `argc` entries each; every `argv[i]` is valid for
/// `argvlen[i]` bytes (it may be null when its length is 0); `reply` is valid for a
/// write.
#[no_mangle]
pub unsafe extern "C" fn pion_execute(
    engine: *mut PionEngine,
    db: u32,
    argc: usize,
    argv: *const *const u8,
    argvlen: *const usize,
    reply: *mut *mut PionReply,
) -> PionStatus {
    guarded(|| {
        // SAFETY: the caller's contract, which is `execute_into`'s.
        unsafe {
            execute_into(argc, argv, argvlen, reply, |args| {
                Ok(engine_of(engine)?.execute(db as usize, args))
            })
        }
    })
}

/// What both execute calls do around running a command: check `reply`, read the
/// arguments, run them with `run`, and write the reply tree to `*reply`.
///
/// # Safety
/// `argv` and `argvlen` hold `argc` entries; every `argv[i]` is valid for
/// `argvlen[i]` bytes (null allowed when 0); `reply` is null or valid for a write.
pub(crate) unsafe fn execute_into(
    argc: usize,
    argv: *const *const u8,
    argvlen: *const usize,
    reply: *mut *mut PionReply,
    run: impl FnOnce(&[Vec<u8>]) -> Result<pion_core::Reply, PionStatus>,
) -> Result<(), PionStatus> {
    if reply.is_null() {
        return Err(fail(PionStatus::PION_ERR_NULL, "reply is null"));
    }
    // SAFETY: the caller's contract.
    let args = unsafe { args_of(argc, argv, argvlen) }?;
    let out = run(&args)?;
    // SAFETY: checked non-null above; the caller's contract makes it writable.
    unsafe { *reply = reply::into_raw(out) };
    Ok(())
}

/// A typed call's refusal: `PION_ERR_COMMAND`, its error reply as the message.
pub(crate) fn refused(e: pion_core::OpError) -> PionStatus {
    fail(PionStatus::PION_ERR_COMMAND, e.wire_text())
}

/// A NUL-terminated C string argument as UTF-8 text (`name` says which).
///
/// # Safety
/// `s` is null or a NUL-terminated string.
pub(crate) unsafe fn c_text(s: *const c_char, name: &str) -> Result<String, PionStatus> {
    // SAFETY: the caller's contract.
    let bytes = unsafe { c_arg(s, name) }?;
    String::from_utf8(bytes)
        .map_err(|_| fail(PionStatus::PION_ERR_INVALID, format!("{name} is not UTF-8")))
}

/// A NUL-terminated C string argument as bytes (`name` says which, for the message).
///
/// # Safety
/// `s` is null or a NUL-terminated string.
pub(crate) unsafe fn c_arg(s: *const c_char, name: &str) -> Result<Vec<u8>, PionStatus> {
    if s.is_null() {
        return Err(fail(PionStatus::PION_ERR_NULL, format!("{name} is null")));
    }
    // SAFETY: the caller's contract.
    Ok(unsafe { CStr::from_ptr(s) }.to_bytes().to_vec())
}

/// `len` items at `p`, borrowed (null allowed when `len` is 0).
///
/// # Safety
/// `p` is valid for `len` items when `len` > 0, and stays so for `'a`.
pub(crate) unsafe fn slice_arg<'a, T>(
    p: *const T,
    len: usize,
    name: &str,
) -> Result<&'a [T], PionStatus> {
    if len == 0 {
        return Ok(&[]);
    }
    if p.is_null() {
        return Err(fail(PionStatus::PION_ERR_NULL, format!("{name} is null")));
    }
    if len
        .checked_mul(std::mem::size_of::<T>())
        .is_none_or(|n| n > isize::MAX as usize)
    {
        return Err(fail(
            PionStatus::PION_ERR_INVALID,
            format!("{name} is too long"),
        ));
    }
    // SAFETY: the caller's contract: `p` holds `len` readable items.
    Ok(unsafe { std::slice::from_raw_parts(p, len) })
}

/// Writes `value` through an out pointer that may be null (then nothing is written).
///
/// # Safety
/// `out` is null or valid for a write.
pub(crate) unsafe fn put_out<T>(out: *mut T, value: T) {
    // SAFETY: the caller's contract; null is skipped.
    if let Some(slot) = unsafe { out.as_mut() } {
        *slot = value;
    }
}

#[cfg(test)]
mod tests;
