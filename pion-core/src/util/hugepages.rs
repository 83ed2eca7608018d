//! Transparent huge pages only where they pay: over a vector index's large arrays,
//! never under the keyspace.
//!
//! A graph walk reads rows scattered over tens of megabytes: with 4 KiB pages nearly
//! every row read also misses the TLB, and the page walk costs as much as the row
//! (measured: FT.SEARCH KNN 45–65 % faster with huge pages). The keyspace is the
//! opposite case: mimalloc marks its arenas for huge pages, and the kernel then backs
//! a 2 MiB page whole for a few live blocks in it, so after deletes or under eviction
//! the resident set grows far past what is allocated (measured: RSS 1.53x
//! `maxmemory` with them, 1.27x without, two threads under an eviction load).
//!
//! So at start-up [`huge_pages_only_where_advised`] takes the advice off mimalloc's
//! arenas and stops it advising new ones, and leaves the system's setting to decide
//! the rest: under `madvise` (most distributions) only ranges given
//! [`advise_huge_pages`] get huge pages. Under `always` the process opts out of
//! everything but advised ranges where the kernel can (Linux 6.18's
//! `PR_THP_DISABLE_EXCEPT_ADVISED`), and out of huge pages altogether where it cannot,
//! as Redis's `disable-thp` does.

/// The size of a transparent huge page on x86_64 and most arm64 kernels.
pub const HUGE_PAGE: usize = 2 << 20;

/// mimalloc 3.x's `mi_option_allow_thp` (its position in `mi_option_t`, which the
/// bindings only spell out for mimalloc 2).
#[cfg(target_os = "linux")]
const MI_OPTION_ALLOW_THP: libmimalloc_sys::mi_option_t = 43;

/// The mimalloc release [`MI_OPTION_ALLOW_THP`] was read from (major, minor).
#[cfg(target_os = "linux")]
const MI_VERSION_WITH_ALLOW_THP_43: (i32, i32) = (3, 3);

/// What start-up did about huge pages, for the log and `INFO`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HugePagePolicy {
    /// Only advised ranges (the vector indexes' arrays) get huge pages.
    OnlyAdvised,
    /// The process has none (the system backs every mapping with huge pages and the
    /// kernel cannot exempt advised ranges).
    None,
    /// Nothing was changed: not Linux, or mimalloc is not the allocator.
    Untouched,
}

impl HugePagePolicy {
    /// The policy's name as `INFO` gives it.
    pub fn name(self) -> &'static str {
        match self {
            HugePagePolicy::OnlyAdvised => "advised",
            HugePagePolicy::None => "never",
            HugePagePolicy::Untouched => "system",
        }
    }
}

/// Sets the process's huge page policy (see the module's comment); call first thing
/// in `main`, before the keyspace allocates.
pub fn huge_pages_only_where_advised() -> HugePagePolicy {
    #[cfg(target_os = "linux")]
    {
        linux::apply()
    }
    #[cfg(not(target_os = "linux"))]
    {
        HugePagePolicy::Untouched
    }
}

/// Asks for huge pages under the whole 2 MiB pages of `buf`'s allocation, its spare
/// capacity included (a hint: nothing happens where the policy or the system does not
/// allow them, or off Linux). Call again after the vector grows into a new block.
pub fn advise_huge_pages<T>(buf: &Vec<T>) {
    let bytes = buf.capacity().saturating_mul(std::mem::size_of::<T>());
    if bytes < HUGE_PAGE {
        return;
    }
    #[cfg(target_os = "linux")]
    linux::advise(buf.as_ptr() as usize, bytes, libc::MADV_HUGEPAGE);
}

#[cfg(target_os = "linux")]
mod linux {
    use super::*;

    /// `prctl(PR_SET_THP_DISABLE, 1, PR_THP_DISABLE_EXCEPT_ADVISED)` (Linux 6.18).
    const PR_THP_DISABLE_EXCEPT_ADVISED: libc::c_ulong = 1 << 1;

    pub(super) fn apply() -> HugePagePolicy {
        if !crate::util::alloc::installed() || !mimalloc_has_allow_thp_43() {
            return HugePagePolicy::Untouched;
        }
        // SAFETY: mi_option_set takes plain integers; a known option of the linked
        // release (checked just above).
        unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_ALLOW_THP, 0) };
        for (start, len) in advised_ranges() {
            // SAFETY: the range is one of this process's own mappings as the kernel
            // listed it; MADV_NOHUGEPAGE changes no contents.
            unsafe { libc::madvise(start as *mut libc::c_void, len, libc::MADV_NOHUGEPAGE) };
        }
        if !system_always() {
            return HugePagePolicy::OnlyAdvised;
        }
        // SAFETY: PR_SET_THP_DISABLE takes plain integers and touches no memory.
        let except_advised = unsafe {
            libc::prctl(
                libc::PR_SET_THP_DISABLE,
                1 as libc::c_ulong,
                PR_THP_DISABLE_EXCEPT_ADVISED,
                0 as libc::c_ulong,
                0 as libc::c_ulong,
            )
        } == 0;
        if except_advised {
            return HugePagePolicy::OnlyAdvised;
        }
        // SAFETY: as above.
        unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) };
        HugePagePolicy::None
    }

    /// Whether the linked mimalloc is the release whose `allow_thp` option is 43.
    fn mimalloc_has_allow_thp_43() -> bool {
        // SAFETY: mi_version has no preconditions.
        let v = unsafe { libmimalloc_sys::mi_version() };
        (v / 10000, v / 100 % 100) == MI_VERSION_WITH_ALLOW_THP_43
    }

    /// Whether the system backs every anonymous mapping with huge pages.
    fn system_always() -> bool {
        std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled")
            .is_ok_and(|s| s.contains("[always]"))
    }

    /// This process's mappings marked for huge pages (`hg` in smaps' `VmFlags`).
    fn advised_ranges() -> Vec<(usize, usize)> {
        let Ok(text) = std::fs::read_to_string("/proc/self/smaps") else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let mut range = None;
        for line in text.lines() {
            if let Some(flags) = line.strip_prefix("VmFlags:") {
                if let Some(r) = range.take() {
                    if flags.split_whitespace().any(|f| f == "hg") {
                        out.push(r);
                    }
                }
                continue;
            }
            let Some((span, _)) = line.split_once(' ') else {
                continue;
            };
            if let Some((a, b)) = span.split_once('-') {
                if let (Ok(a), Ok(b)) = (usize::from_str_radix(a, 16), usize::from_str_radix(b, 16))
                {
                    range = (b > a).then_some((a, b - a));
                }
            }
        }
        out
    }

    /// Gives `advice` for the whole huge pages of the `len` bytes at `at`.
    pub(super) fn advise(at: usize, len: usize, advice: libc::c_int) {
        let start = at.next_multiple_of(HUGE_PAGE);
        let end = at.saturating_add(len) / HUGE_PAGE * HUGE_PAGE;
        if end > start {
            // SAFETY: [start, end) lies inside one allocation this process owns; the
            // advice changes how it is backed, never its contents.
            unsafe { libc::madvise(start as *mut libc::c_void, end - start, advice) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mimalloc_option_position_is_checked_against_the_linked_release() {
        // A new mimalloc release may move `allow_thp`: the policy then leaves
        // everything untouched instead of setting another option, and this test
        // says so, so that the constant is re-read from the new header.
        #[cfg(target_os = "linux")]
        {
            // SAFETY: mi_version has no preconditions.
            let v = unsafe { libmimalloc_sys::mi_version() };
            assert_eq!(
                (v / 10000, v / 100 % 100),
                MI_VERSION_WITH_ALLOW_THP_43,
                "mimalloc {v}: re-read mi_option_allow_thp's position from mimalloc.h"
            );
        }
    }

    #[test]
    fn advising_a_buffer_changes_nothing_in_it() {
        let mut v = vec![7u8; 3 * HUGE_PAGE];
        v[HUGE_PAGE] = 9;
        advise_huge_pages(&v);
        advise_huge_pages(&Vec::<u64>::with_capacity(10));
        assert_eq!(v[HUGE_PAGE], 9);
        assert!(v.iter().filter(|&&b| b == 7).count() == 3 * HUGE_PAGE - 1);
        assert_eq!(HugePagePolicy::OnlyAdvised.name(), "advised");
    }
}
