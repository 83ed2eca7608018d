//! The one error type of the kernels: a shape, a layout or a buffer that does not fit.

use std::fmt;

/// Why a kernel refused its inputs (the text says what did not fit), or why a device
/// could not run it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelError(pub String);

impl KernelError {
    pub(crate) fn new(text: impl Into<String>) -> KernelError {
        KernelError(text.into())
    }
}

impl fmt::Display for KernelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for KernelError {}

/// `Err(KernelError)` with a formatted text.
macro_rules! refuse {
    ($($arg:tt)*) => {
        return Err($crate::error::KernelError::new(format!($($arg)*)))
    };
}
pub(crate) use refuse;
