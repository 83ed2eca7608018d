//! Copying a large payload into a fresh shared buffer (a prompt-cache layer): the
//! fresh pages are asked of the kernel in one call (`MADV_POPULATE_WRITE`) before the
//! copy, instead of one page fault per 4 KiB page during it — measured as the
//! largest single cost of storing a large block.

use std::mem::MaybeUninit;
use std::sync::Arc;

/// Below this a plain copy is as fast (few pages to fault).
const POPULATE_FROM: usize = 64 << 10;

/// `bytes` in a new shared buffer.
pub fn shared_copy(bytes: &[u8]) -> Arc<[u8]> {
    if bytes.len() < POPULATE_FROM {
        return Arc::from(bytes);
    }
    let mut buf: Arc<[MaybeUninit<u8>]> = Arc::new_uninit_slice(bytes.len());
    // Just made, so not shared: `get_mut` cannot fail.
    let Some(slots) = Arc::get_mut(&mut buf) else {
        return Arc::from(bytes);
    };
    populate(slots.as_mut_ptr().cast(), slots.len());
    // SAFETY: `slots` and `bytes` have the same length and do not overlap (`slots`
    // was just allocated); after the copy every element is initialised.
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), slots.as_mut_ptr().cast::<u8>(), bytes.len());
        buf.assume_init()
    }
}

/// Asks the kernel to back the whole pages inside `[ptr, ptr + len)` now (Linux 5.14+;
/// elsewhere, or when it refuses, the pages fault in as they are written).
fn populate(ptr: *mut u8, len: usize) {
    #[cfg(target_os = "linux")]
    {
        const PAGE: usize = 4096;
        let start = (ptr as usize).next_multiple_of(PAGE);
        let end = (ptr as usize + len) & !(PAGE - 1);
        if end > start {
            // SAFETY: the range lies inside an allocation this process owns and has
            // not handed out; MADV_POPULATE_WRITE only faults its pages in (their
            // contents stay whatever they are), and a failure is harmless.
            unsafe {
                libc::madvise(
                    start as *mut libc::c_void,
                    end - start,
                    libc::MADV_POPULATE_WRITE,
                );
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (ptr, len);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn copies_small_and_large_payloads_exactly() {
        for len in [
            0,
            1,
            4095,
            POPULATE_FROM - 1,
            POPULATE_FROM,
            3 * POPULATE_FROM + 17,
        ] {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 31 % 251) as u8).collect();
            assert_eq!(&shared_copy(&bytes)[..], &bytes[..], "{len}");
        }
    }
}
