//! Sessions: a client of an engine that keeps its state between calls, as a
//! connection does (the selected database, `MULTI` … `EXEC`, `WATCH`, the protocol,
//! `CLIENT SETNAME`), listed by `CLIENT LIST`. A session is one client: calls on it
//! run one at a time (a second thread waits for the first).
//!
//! A session holds its engine: closing the engine while sessions are open stops new
//! calls on the engine's handle, and the engine itself (a durable one's directory
//! included) is released when its last session closes.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use pion_core::Session;

use crate::status::{fail, guard, PionStatus};
use crate::{engine_of, reply, slice_arg, PionEngine, PionReply};

/// An open session (opaque: a token the library looks up, never a pointer to read).
pub struct PionSession {
    _private: [u8; 0],
}

/// The sessions the caller opened, by token.
fn sessions() -> &'static Mutex<HashMap<u64, Arc<Mutex<Session>>>> {
    static SESSIONS: OnceLock<Mutex<HashMap<u64, Arc<Mutex<Session>>>>> = OnceLock::new();
    SESSIONS.get_or_init(Default::default)
}

/// Session tokens are never reused, so a closed handle stays closed.
static NEXT_SESSION: AtomicU64 = AtomicU64::new(1);

fn session_of(session: *const PionSession) -> Result<Arc<Mutex<Session>>, PionStatus> {
    if session.is_null() {
        return Err(fail(PionStatus::PION_ERR_NULL, "session is null"));
    }
    sessions()
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .get(&(session as usize as u64))
        .cloned()
        .ok_or_else(|| fail(PionStatus::PION_ERR_CLOSED, "session is not open"))
}

/// Opens a session on an engine and writes its handle to `*out`.
///
/// # Safety
/// `out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn pion_session_open(
    engine: *mut PionEngine,
    out: *mut *mut PionSession,
) -> PionStatus {
    guard(|| {
        if out.is_null() {
            return fail(PionStatus::PION_ERR_NULL, "out is null");
        }
        let engine = match engine_of(engine) {
            Ok(e) => e,
            Err(status) => return status,
        };
        let token = NEXT_SESSION.fetch_add(1, Ordering::Relaxed);
        sessions()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(token, Arc::new(Mutex::new(engine.session())));
        // SAFETY: checked non-null above; the caller's contract makes it writable.
        unsafe { *out = token as usize as *mut PionSession };
        PionStatus::PION_OK
    })
}

/// Runs one command in a session (its database, its transaction) and writes its
/// reply tree to `*reply`, as `pion_execute` does.
///
/// # Safety
/// As `pion_execute`: `argv` and `argvlen` hold `argc` entries, each `argv[i]` valid
/// for `argvlen[i]` bytes; `reply` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn pion_session_execute(
    session: *mut PionSession,
    argc: usize,
    argv: *const *const u8,
    argvlen: *const usize,
    reply: *mut *mut PionReply,
) -> PionStatus {
    guard(|| {
        let run = || -> Result<(), PionStatus> {
            if reply.is_null() {
                return Err(fail(PionStatus::PION_ERR_NULL, "reply is null"));
            }
            if argc == 0 {
                return Err(fail(PionStatus::PION_ERR_INVALID, "argc is 0: no command"));
            }
            // SAFETY: the caller's contract: `argc` entries in each array.
            let ptrs = unsafe { slice_arg(argv, argc, "argv") }?;
            // SAFETY: as above.
            let lens = unsafe { slice_arg(argvlen, argc, "argvlen") }?;
            let mut args = Vec::with_capacity(argc);
            for (i, (&p, &n)) in ptrs.iter().zip(lens).enumerate() {
                // SAFETY: the caller's contract: `p` holds `n` bytes.
                args.push(unsafe { slice_arg(p, n, &format!("argv[{i}]")) }?.to_vec());
            }
            let session = session_of(session)?;
            let out = session
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .execute_argv(&args);
            // SAFETY: checked non-null above; the caller's contract makes it writable.
            unsafe { *reply = reply::into_raw(out) };
            Ok(())
        };
        run().err().unwrap_or(PionStatus::PION_OK)
    })
}

/// Closes a session (its transaction, if one was open, is discarded). Null is
/// allowed and does nothing; closing twice is `PION_ERR_CLOSED`.
#[no_mangle]
pub extern "C" fn pion_session_close(session: *mut PionSession) -> PionStatus {
    guard(|| {
        if session.is_null() {
            return PionStatus::PION_OK;
        }
        let removed = sessions()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&(session as usize as u64));
        match removed {
            Some(_) => PionStatus::PION_OK,
            None => fail(PionStatus::PION_ERR_CLOSED, "session is not open"),
        }
    })
}
