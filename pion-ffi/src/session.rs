//! Sessions: a client of an engine that keeps its state between calls, as a
//! connection does (the selected database, `MULTI` … `EXEC`, `WATCH`, the protocol,
//! `CLIENT SETNAME`), listed by `CLIENT LIST`. A session is one client: calls on it
//! run one at a time (a second thread waits for the first).
//!
//! A session holds its engine: closing the engine while sessions are open stops new
//! calls on the engine's handle, and the engine itself (a durable one's directory
//! included) is released when its last session closes.

use std::sync::{Arc, Mutex};

use pion_core::Session;

use crate::handles::Handles;
use crate::status::{fail, guarded, PionStatus};
use crate::{engine_of, execute_into, PionEngine, PionReply};

/// An open session (opaque: a token the library looks up, never a pointer to read).
pub struct PionSession {
    _private: [u8; 0],
}

/// The sessions the caller opened.
static SESSIONS: Handles<Arc<Mutex<Session>>> = Handles::new("session");

/// Opens a session on an engine and writes its handle to `*out`.
///
/// # Safety
/// `out` is valid for a write.
#[no_mangle]
pub unsafe extern "C" fn pion_session_open(
    engine: *mut PionEngine,
    out: *mut *mut PionSession,
) -> PionStatus {
    guarded(|| {
        if out.is_null() {
            return Err(fail(PionStatus::PION_ERR_NULL, "out is null"));
        }
        let session = Arc::new(Mutex::new(engine_of(engine)?.session()));
        // SAFETY: checked non-null above; the caller's contract makes it writable.
        unsafe { *out = SESSIONS.insert(session) };
        Ok(())
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
    guarded(|| {
        // SAFETY: the caller's contract, which is `execute_into`'s.
        unsafe {
            execute_into(argc, argv, argvlen, reply, |args| {
                let session = SESSIONS.get(session)?;
                let mut session = session.lock().unwrap_or_else(|e| e.into_inner());
                Ok(session.execute_argv(args))
            })
        }
    })
}

/// Closes a session (its transaction, if one was open, is discarded). Null is
/// allowed and does nothing; closing twice is `PION_ERR_CLOSED`.
#[no_mangle]
pub extern "C" fn pion_session_close(session: *mut PionSession) -> PionStatus {
    guarded(|| SESSIONS.remove(session).map(drop))
}
