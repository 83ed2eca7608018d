//! Copying a large payload into a fresh shared buffer (a prompt-cache layer): the
//! fresh pages are asked of the kernel in one call (`MADV_POPULATE_WRITE`) before the
//! copy, instead of one page fault per 4 KiB page during it — measured as the
//! largest single cost of storing a large block.

use bytes::Bytes;

/// Below this a plain copy is as fast (few pages to fault).
const POPULATE_FROM: usize = 64 << 10;

/// `bytes` in a new shared buffer.
pub fn shared_copy(bytes: &[u8]) -> Bytes {
    if bytes.len() < POPULATE_FROM {
        return Bytes::copy_from_slice(bytes);
    }
    let mut buf: Vec<u8> = Vec::with_capacity(bytes.len());
    populate(buf.as_mut_ptr(), bytes.len());
    buf.extend_from_slice(bytes);
    // Length equals capacity: the conversion keeps the allocation as it is.
    Bytes::from(buf)
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
