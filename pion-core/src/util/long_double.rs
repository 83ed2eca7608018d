//! FFI to the `long double` shim: Redis computes `INCRBYFLOAT` in C's `long double`, and
//! matching its replies byte for byte needs the same arithmetic.

use crate::error::{OpError, OpResult};

extern "C" {
    fn pion_ld_add(
        cur: *const u8,
        cur_len: usize,
        incr: *const u8,
        incr_len: usize,
        out: *mut u8,
        cap: usize,
    ) -> std::os::raw::c_long;
}

/// Adds two decimal texts in `long double` and formats the sum as Redis does.
pub(crate) fn add_and_format(current: &[u8], incr: &[u8]) -> OpResult<Vec<u8>> {
    let mut out = vec![0u8; 5120];
    // SAFETY: both inputs are valid for their lengths; the shim copies at most 5119
    // bytes of each into its own buffer and writes at most `out.len()` bytes to `out`.
    let n = unsafe {
        pion_ld_add(
            current.as_ptr(),
            current.len(),
            incr.as_ptr(),
            incr.len(),
            out.as_mut_ptr(),
            out.len(),
        )
    };
    match n {
        -1 | -2 => Err(OpError::NotFloat),
        n if n < 0 => Err(OpError::NanOrInfinity),
        n => {
            out.truncate(n as usize);
            Ok(out)
        }
    }
}
