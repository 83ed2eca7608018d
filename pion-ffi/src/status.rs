//! What every call returns, and the message behind a failure: a status code the
//! caller branches on, and a text kept per thread ([`pion_last_error`]) so that
//! concurrent callers never read each other's messages. Every entry point runs its
//! body through [`guard`], so a panic inside the engine becomes `PION_ERR_PANIC`
//! instead of unwinding into C.

use std::cell::RefCell;
use std::ffi::{c_char, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// The outcome of a call.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(non_camel_case_types)]
pub enum PionStatus {
    /// The call did what it was asked (a command's error reply is still `PION_OK`:
    /// the reply says the error).
    PION_OK = 0,
    /// A required pointer was null.
    PION_ERR_NULL = 1,
    /// An argument is invalid (an unknown options version, a path that is not
    /// UTF-8, a length that does not fit).
    PION_ERR_INVALID = 2,
    /// The engine handle is not open (never opened, or already closed).
    PION_ERR_CLOSED = 3,
    /// The engine could not be opened (the message names the file and why).
    PION_ERR_OPEN = 4,
    /// The engine failed unexpectedly; the message says where. The engine stays
    /// usable, the failed call had no effect the caller can rely on.
    PION_ERR_PANIC = 5,
    /// The engine could not write to its data directory (closing flushes the log).
    PION_ERR_IO = 6,
    /// A typed call's command was refused (an unknown namespace, a wrong layer
    /// size, a key of another type …); the message is its error reply.
    PION_ERR_COMMAND = 7,
}

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// Records `message` as this thread's last error and returns `status`.
pub(crate) fn fail(status: PionStatus, message: impl Into<String>) -> PionStatus {
    let text = message.into().replace('\0', " ");
    // The NULs were replaced just above.
    let text = CString::new(text).unwrap_or_default();
    LAST_ERROR.with(|e| *e.borrow_mut() = text);
    status
}

/// Runs an entry point's body, turning a panic into `PION_ERR_PANIC`.
pub(crate) fn guard(body: impl FnOnce() -> PionStatus) -> PionStatus {
    match catch_unwind(AssertUnwindSafe(body)) {
        Ok(status) => status,
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic".into());
            fail(
                PionStatus::PION_ERR_PANIC,
                format!("internal error: {what}"),
            )
        }
    }
}

/// Runs an entry point whose body stops at its first failure (`?`), as [`guard`].
pub(crate) fn guarded(body: impl FnOnce() -> Result<(), PionStatus>) -> PionStatus {
    guard(|| body().err().unwrap_or(PionStatus::PION_OK))
}

/// The message of the last failed call on this thread (empty if none failed). The
/// text is owned by the library and stays valid until this thread's next failed
/// call; it must not be freed.
#[no_mangle]
pub extern "C" fn pion_last_error() -> *const c_char {
    LAST_ERROR.with(|e| e.borrow().as_ptr())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    fn last() -> String {
        // SAFETY: the pointer is this thread's message, live until the next failure.
        unsafe { CStr::from_ptr(pion_last_error()) }
            .to_string_lossy()
            .into_owned()
    }

    #[test]
    fn a_panic_is_a_status_with_its_message() {
        let status = guard(|| panic!("boom"));
        assert_eq!(status, PionStatus::PION_ERR_PANIC);
        assert_eq!(last(), "internal error: boom");
        assert_eq!(
            fail(PionStatus::PION_ERR_NULL, "a\0b"),
            PionStatus::PION_ERR_NULL
        );
        assert_eq!(last(), "a b");
    }

    #[test]
    fn messages_are_per_thread() {
        fail(PionStatus::PION_ERR_INVALID, "here");
        std::thread::spawn(|| assert_eq!(last(), ""))
            .join()
            .expect("thread");
        assert_eq!(last(), "here");
    }
}
