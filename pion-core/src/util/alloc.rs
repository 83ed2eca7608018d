//! The allocator Pion measures its memory with: mimalloc, wrapped so that every block it
//! hands out is counted at the size mimalloc rounds it to (as Redis's zmalloc counts
//! jemalloc's usable sizes). What the process really holds for data and overhead —
//! keys, values, indexes, client buffers, the log's buffers, Lua — is then one number,
//! which `used_memory`, `maxmemory` and eviction read, instead of a sum of per-key
//! estimates that misses most of it.
//!
//! A program opts in by naming [`CountingAlloc`] its global allocator (pion-server and
//! pion-py do):
//!
//! ```ignore
//! #[global_allocator]
//! static ALLOC: pion_core::util::alloc::CountingAlloc = pion_core::util::alloc::CountingAlloc;
//! ```
//!
//! Without it [`allocated`] is `None` and the engine falls back to its per-key
//! estimate. The count is per process: engines sharing one process share it.
//!
//! Counting costs a plain load and store per allocation and free: each thread owns a
//! counter (on its own cache line) that only it writes, and a reading sums them. A
//! reading is exact but for allocations in flight on other threads at that moment.

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;
use std::ffi::c_void;
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicU8, AtomicUsize, Ordering};

/// Threads with a counter of their own; any further thread counts into [`SHARED`]
/// with atomic adds (threads are never given their counter back: a thread's count
/// stays part of the total after it ends, as the blocks it allocated may).
pub const COUNTERS: usize = 256;

/// One thread's count, alone on its cache line so that no other thread's
/// allocations touch it.
#[repr(align(64))]
struct Counter(AtomicI64);

static COUNTS: [Counter; COUNTERS] = [const { Counter(AtomicI64::new(0)) }; COUNTERS];
/// Counters handed out so far (may run past [`COUNTERS`]).
static CLAIMED: AtomicUsize = AtomicUsize::new(0);
/// The count of threads past the first [`COUNTERS`].
static SHARED: AtomicI64 = AtomicI64::new(0);

/// Whether [`CountingAlloc`] is the global allocator: [`UNKNOWN`] until [`installed`]
/// has looked.
static INSTALLED: AtomicU8 = AtomicU8::new(UNKNOWN);
const UNKNOWN: u8 = 0;
const YES: u8 = 1;
const NO: u8 = 2;

/// A thread that has not asked for a counter yet.
const UNCLAIMED: usize = usize::MAX;

thread_local! {
    /// This thread's counter ([`COUNTERS`]: it counts into [`SHARED`]). A `Cell` of
    /// an integer needs no destructor, so reaching it never allocates (which an
    /// allocator must not do).
    static MINE: Cell<usize> = const { Cell::new(UNCLAIMED) };
}

/// mimalloc, counted. See the module's comment.
pub struct CountingAlloc;

/// This thread's counter, claimed on first use; `None` past [`COUNTERS`] threads or
/// while the thread is being torn down.
#[inline]
fn my_counter() -> Option<&'static AtomicI64> {
    let index = MINE
        .try_with(|m| {
            let mut i = m.get();
            if i == UNCLAIMED {
                i = CLAIMED.fetch_add(1, Ordering::Relaxed).min(COUNTERS);
                m.set(i);
            }
            i
        })
        .unwrap_or(COUNTERS);
    COUNTS.get(index).map(|c| &c.0)
}

#[inline]
fn note(delta: i64) {
    match my_counter() {
        // Only this thread writes its counter: a load and a store, no atomic add.
        Some(c) => c.store(c.load(Ordering::Relaxed) + delta, Ordering::Relaxed),
        None => {
            SHARED.fetch_add(delta, Ordering::Relaxed);
        }
    }
}

/// The calling thread's count so far (0 before its first counted allocation); for a
/// thread past [`COUNTERS`], the shared count it adds to.
fn own_count() -> Option<i64> {
    let index = MINE.try_with(Cell::get).ok()?;
    match index {
        UNCLAIMED => Some(0),
        i => Some(COUNTS.get(i).map_or_else(
            || SHARED.load(Ordering::Relaxed),
            |c| c.0.load(Ordering::Relaxed),
        )),
    }
}

/// Whether [`CountingAlloc`] is the global allocator: a box allocated through the
/// global allocator either moves this thread's count or does not (only
/// `CountingAlloc` moves any count). Calling `CountingAlloc` directly, as its tests
/// do, does not make it the global one.
pub fn installed() -> bool {
    match INSTALLED.load(Ordering::Relaxed) {
        YES => true,
        NO => false,
        _ => {
            let before = own_count();
            let probe = std::hint::black_box(Box::new(0u64));
            let counted = own_count() != before;
            drop(probe);
            INSTALLED.store(if counted { YES } else { NO }, Ordering::Relaxed);
            counted
        }
    }
}

/// What a block of `size` bytes takes: the size mimalloc rounds it to (its size
/// class), computed from the size alone, with no look at the block (a pointer lookup
/// per allocation would cost a cache miss). Counting the same function of the layout's
/// size at allocation, reallocation and free keeps the count consistent whatever
/// mimalloc does in place.
#[inline]
fn rounded(size: usize) -> i64 {
    // SAFETY: mi_good_size is pure arithmetic on its argument.
    unsafe { libmimalloc_sys::mi_good_size(size) as i64 }
}

/// The bytes a request for `size` really gets (mimalloc's size class) where
/// [`CountingAlloc`] is the global allocator, else `size`: a growing array asks for
/// exactly what its block holds instead of leaving the rounding unused.
pub fn good_size(size: usize) -> usize {
    if installed() {
        // SAFETY: mi_good_size is pure arithmetic on its argument.
        unsafe { libmimalloc_sys::mi_good_size(size) }
    } else {
        size
    }
}

/// The largest alignment every mimalloc block has without asking: the first block of
/// a page is 16-byte aligned and block sizes are multiples of 8.
const PLAIN_ALIGN: usize = 8;

/// Whether a layout can take mimalloc's plain entry points. They must be used where
/// they can: mimalloc 3's aligned entry points take a block from the size class only
/// when its free list happens to have one ready, and otherwise over-allocate into a
/// larger class, so a table's 320-byte chunks cost 20 % more resident memory
/// through them (measured: 100,000 chunks, 37.8 MB RSS against 31.5 MB).
#[inline]
fn plain(layout: &Layout) -> bool {
    layout.align() <= PLAIN_ALIGN
}

// SAFETY: every method forwards to mimalloc with the layout's size, through the plain
// entry points where every block mimalloc hands out already has the alignment asked
// for (`plain`) and through the aligned ones otherwise; the counting around them only
// computes a size and touches this thread's counter.
unsafe impl GlobalAlloc for CountingAlloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as GlobalAlloc::alloc requires, `layout` has a non-zero size.
        let p = unsafe {
            if plain(&layout) {
                libmimalloc_sys::mi_malloc(layout.size())
            } else {
                libmimalloc_sys::mi_malloc_aligned(layout.size(), layout.align())
            }
        };
        if !p.is_null() {
            note(rounded(layout.size()));
        }
        p as *mut u8
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let p = unsafe {
            if plain(&layout) {
                libmimalloc_sys::mi_zalloc(layout.size())
            } else {
                libmimalloc_sys::mi_zalloc_aligned(layout.size(), layout.align())
            }
        };
        if !p.is_null() {
            note(rounded(layout.size()));
        }
        p as *mut u8
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        note(-rounded(layout.size()));
        // SAFETY: `ptr` came from this allocator (GlobalAlloc::dealloc's contract).
        unsafe { libmimalloc_sys::mi_free(ptr as *mut c_void) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` came from this allocator with `layout` (GlobalAlloc::realloc's
        // contract); a plain block moves to another plain block, and mimalloc keeps
        // any other alignment it is given.
        let p = unsafe {
            if plain(&layout) {
                libmimalloc_sys::mi_realloc(ptr as *mut c_void, new_size)
            } else {
                libmimalloc_sys::mi_realloc_aligned(ptr as *mut c_void, new_size, layout.align())
            }
        };
        // On failure the old block stays allocated and counted.
        if !p.is_null() {
            note(rounded(new_size) - rounded(layout.size()));
        }
        p as *mut u8
    }
}

/// Bytes the process holds through [`CountingAlloc`]; `None` when it is not the
/// global allocator.
pub fn allocated() -> Option<u64> {
    if !installed() {
        return None;
    }
    let claimed = CLAIMED.load(Ordering::Relaxed).min(COUNTERS);
    let own: i64 = COUNTS[..claimed]
        .iter()
        .map(|c| c.0.load(Ordering::Relaxed))
        .sum();
    Some((own + SHARED.load(Ordering::Relaxed)).max(0) as u64)
}

/// What the calling thread has allocated less what it has freed, exactly (blocks
/// other threads free for it are theirs); `None` when [`CountingAlloc`] is not the
/// global allocator. The difference of two readings is what the thread's work in
/// between allocated or freed, whatever other threads did meanwhile — eviction
/// measures a key's removal this way.
pub fn thread_net() -> Option<i64> {
    if !installed() {
        return None;
    }
    // A thread without a counter of its own cannot tell its share apart.
    my_counter().map(|c| c.load(Ordering::Relaxed))
}

/// The allocator's name as `INFO`'s `mem_allocator` gives it.
pub fn name() -> String {
    if installed() {
        // SAFETY: mi_version has no preconditions.
        let v = unsafe { libmimalloc_sys::mi_version() };
        format!("mimalloc-{}.{}.{}", v / 10000, v / 100 % 100, v % 100)
    } else {
        "libc".to_string()
    }
}

/// Gives free memory back to the system now: the calling thread's free pages and
/// every page the allocator already holds free (`MEMORY PURGE`, and the engine's cron
/// after large frees). Returns false when the allocator is not [`CountingAlloc`].
pub fn purge() -> bool {
    if !installed() {
        return false;
    }
    // SAFETY: mi_collect has no preconditions; `force` also purges free pages whose
    // delay has not passed yet.
    unsafe { libmimalloc_sys::mi_collect(true) };
    HIGH_WATER.store(allocated().unwrap_or(0), Ordering::Relaxed);
    PURGES.fetch_add(1, Ordering::Relaxed);
    true
}

/// How many times free pages were given back to the system (`MEMORY PURGE` and the
/// cron's purges), for `INFO`'s `mem_purges`.
pub fn purges() -> u64 {
    PURGES.load(Ordering::Relaxed)
}

/// Collects the calling thread's heap when that is due: at once after each [`purge`]
/// made elsewhere, and otherwise every [`COLLECT_EVERY`] while the thread allocates.
/// A thread's empty pages stay in its own heap until it collects, and blocks another
/// thread freed reach it only then, so a purge gives back all it can only once every
/// thread that allocated has done this. Between purges mimalloc gives pages back only
/// when it is busy allocating: a load that ends leaves the pages it emptied on the way
/// (growing tables, reallocated buffers) resident until the next one, which the
/// periodic collection returns once their purge delay has passed. The server's
/// workers call this every tick: a thread-local read unless a collection is due.
pub fn collect_on_tick() {
    if !installed() {
        return;
    }
    let purges = PURGES.load(Ordering::Relaxed);
    let forced = COLLECTED.with(Cell::get) != purges;
    let net = thread_net().unwrap_or(0);
    let now = coarse_ms();
    let (last_ms, last_net, trailing) = LAST_COLLECT.with(Cell::get);
    let changed = net != last_net;
    // One more collection follows the last one that saw allocation: pages emptied
    // just before it were still within their purge delay.
    let due = now.saturating_sub(last_ms) >= COLLECT_EVERY.as_millis() as u64;
    if !forced && !(due && (changed || trailing)) {
        return;
    }
    COLLECTED.with(|c| c.set(purges));
    LAST_COLLECT.with(|c| c.set((now, net, changed)));
    // SAFETY: mi_collect has no preconditions.
    unsafe { libmimalloc_sys::mi_collect(forced) };
}

/// How often a thread that allocates collects its heap between purges.
pub const COLLECT_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// Milliseconds on a monotonic clock.
fn coarse_ms() -> u64 {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    START
        .get_or_init(std::time::Instant::now)
        .elapsed()
        .as_millis() as u64
}

/// How many purges there were: each thread that allocates much collects its own heap
/// once after each ([`collect_if_purged`]).
static PURGES: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// The purge this thread last collected its heap for.
    static COLLECTED: Cell<u64> = const { Cell::new(0) };
    /// When this thread last collected its heap, its net allocation count then, and
    /// whether that count had moved since the collection before.
    static LAST_COLLECT: Cell<(u64, i64, bool)> = const { Cell::new((0, 0, false)) };
}

/// The most bytes allocated since free pages were last given back.
static HIGH_WATER: AtomicU64 = AtomicU64::new(0);

/// How far allocated memory must fall below its high-water mark before
/// [`purge_if_shrunk`] gives pages back: this much, or an eighth of the mark.
pub const PURGE_AFTER_FALL: u64 = 8 << 20;

/// Gives free pages back to the system when allocated memory has fallen well below
/// the most it reached since the last purge (a `FLUSHALL`, deletes, expiry or eviction
/// freed much of it), or when the process holds far more resident memory than is
/// allocated (see [`purge_if_resident_excess`]). mimalloc returns pages on its own
/// only while it is busy allocating, so an idle server would otherwise keep its peak
/// resident. The engine's cron calls this every tick; it costs an atomic read (and
/// once a second a read of `/proc/self/statm`) unless it purges. Returns whether it
/// purged.
pub fn purge_if_shrunk() -> bool {
    let Some(now) = allocated() else {
        return false;
    };
    let high = HIGH_WATER.fetch_max(now, Ordering::Relaxed).max(now);
    if high - now >= PURGE_AFTER_FALL.max(high / 8) {
        return purge();
    }
    purge_if_resident_excess(now)
}

/// Resident memory the allocated bytes do not explain that is tolerated without a
/// purge: the binary's and libraries' pages, thread stacks and the allocator's own
/// metadata (an empty server is about 15 MiB resident). A sixteenth of what is
/// allocated is tolerated on top (free space inside pages still in use, which no
/// purge returns).
const RESIDENT_SLACK: u64 = 32 << 20;

/// The longest wait between purges that find resident memory still in excess.
const RESIDENT_BACKOFF_MAX_MS: u64 = 64_000;

/// When resident memory is next compared with allocated memory.
static NEXT_RESIDENT_CHECK_MS: AtomicU64 = AtomicU64::new(0);

/// How long to wait after a purge that leaves resident memory in excess (doubling up
/// to [`RESIDENT_BACKOFF_MAX_MS`]).
static RESIDENT_BACKOFF_MS: AtomicU64 = AtomicU64::new(RESIDENT_CHECK_EVERY_MS);

/// How often resident memory is compared with allocated memory.
const RESIDENT_CHECK_EVERY_MS: u64 = 1000;

/// Purges when the resident set exceeds `allocated` by more than [`RESIDENT_SLACK`]
/// and a sixteenth. The fall from the high-water mark misses memory freed in steps
/// smaller than an eighth: a vector index's build frees its pending rows and the
/// buffers its arrays outgrew (on 50,000 × 1,536 vectors, 739 MiB allocated stayed at
/// 885 MiB resident until a `MEMORY PURGE` brought it to 765). A purge that leaves
/// the excess (fragmentation inside pages in use, which only new allocations fill)
/// doubles the wait before the next, up to a minute, so a steady fragmented heap is
/// not collected over and over.
fn purge_if_resident_excess(allocated: u64) -> bool {
    let now = coarse_ms();
    if now < NEXT_RESIDENT_CHECK_MS.load(Ordering::Relaxed) {
        return false;
    }
    let step = resident_step(
        now,
        RESIDENT_BACKOFF_MS.load(Ordering::Relaxed),
        resident_bytes(),
        allocated,
    );
    RESIDENT_BACKOFF_MS.store(step.backoff_ms, Ordering::Relaxed);
    NEXT_RESIDENT_CHECK_MS.store(step.next_check_ms, Ordering::Relaxed);
    step.purge && purge()
}

/// What one comparison of resident with allocated memory decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ResidentStep {
    /// Purge now.
    purge: bool,
    /// When to compare again.
    next_check_ms: u64,
    /// The wait after the next purge that finds an excess.
    backoff_ms: u64,
}

/// The decision at `now_ms` for `rss` resident and `allocated` bytes, `backoff_ms`
/// being the wait the last purge set: within the slack, check again in a second and
/// forget the backoff; over it, purge and wait the backoff, doubled for the next time.
fn resident_step(now_ms: u64, backoff_ms: u64, rss: u64, allocated: u64) -> ResidentStep {
    let excess = rss.saturating_sub(allocated);
    if excess <= RESIDENT_SLACK + allocated / 16 {
        return ResidentStep {
            purge: false,
            next_check_ms: now_ms + RESIDENT_CHECK_EVERY_MS,
            backoff_ms: RESIDENT_CHECK_EVERY_MS,
        };
    }
    ResidentStep {
        purge: true,
        next_check_ms: now_ms + backoff_ms,
        backoff_ms: (backoff_ms * 2).min(RESIDENT_BACKOFF_MAX_MS),
    }
}

/// The process's resident set size, from `/proc/self/statm` (0 elsewhere).
pub fn resident_bytes() -> u64 {
    let Ok(text) = std::fs::read_to_string("/proc/self/statm") else {
        return 0;
    };
    let pages: u64 = text
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

/// The allocator's own statistics as JSON text (`MEMORY MALLOC-STATS`); `None` when
/// the allocator is not [`CountingAlloc`].
pub fn stats_json() -> Option<String> {
    if !installed() {
        return None;
    }
    // SAFETY: with a null buffer mimalloc allocates the text with its own malloc and
    // returns it (or null); it is copied out, then freed with mi_free.
    unsafe {
        let text = libmimalloc_sys::mi_stats_get_json(0, std::ptr::null_mut());
        if text.is_null() {
            return None;
        }
        let out = std::ffi::CStr::from_ptr(text)
            .to_string_lossy()
            .into_owned();
        libmimalloc_sys::mi_free(text as *mut c_void);
        Some(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Resident memory within the slack (32 MiB and a sixteenth of what is
    /// allocated) is left alone and looked at again a second later; past it, a purge,
    /// and each further purge that still finds an excess waits twice as long, up to a
    /// minute, until a check finds the excess gone.
    #[test]
    fn resident_excess_purges_with_a_doubling_wait() {
        const MIB: u64 = 1 << 20;
        let allocated = 739 * MIB;
        let slack = RESIDENT_SLACK + allocated / 16;
        let calm = resident_step(5_000, 8_000, allocated + slack, allocated);
        assert_eq!(
            calm,
            ResidentStep {
                purge: false,
                next_check_ms: 6_000,
                backoff_ms: 1_000
            }
        );
        let (mut now, mut backoff, mut waits) = (0, 1_000, Vec::new());
        for _ in 0..9 {
            let step = resident_step(now, backoff, allocated + slack + 1, allocated);
            assert!(step.purge);
            waits.push(step.next_check_ms - now);
            (now, backoff) = (step.next_check_ms, step.backoff_ms);
        }
        assert_eq!(
            waits,
            [1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 64_000, 64_000, 64_000]
        );
        let healed = resident_step(now, backoff, allocated, allocated);
        assert!(!healed.purge);
        assert_eq!(healed.backoff_ms, 1_000);
        // An empty server's own pages (about 15 MiB) are no excess.
        assert!(!resident_step(0, 1_000, 15 * MIB, MIB / 2).purge);
    }

    // The unit tests run under the system allocator; these drive CountingAlloc
    // directly (tests/tests/memory.rs checks it as pion-server's global allocator).

    /// The calling thread's count, through the counter it claims.
    fn count() -> i64 {
        own_count().expect("thread-locals")
    }

    #[test]
    fn every_block_has_its_alignment_on_either_path() {
        // Blocks are held a group at a time, well under the 1 MiB the per-thread
        // counting test allows other tests to hold.
        let a = CountingAlloc;
        for align in [1usize, 2, 4, 8, 16, 32, 64, 4096] {
            for size in [1usize, 3, 8, 24, 40, 48, 80, 100, 320, 1000, 5000] {
                let mut blocks = Vec::new();
                let layout = Layout::from_size_align(size, align).expect("layout");
                // SAFETY: a valid layout with a non-zero size; each block is freed once
                // below, with the layout it was allocated or reallocated with.
                unsafe {
                    for _ in 0..40 {
                        let p = if size % 2 == 0 {
                            a.alloc(layout)
                        } else {
                            a.alloc_zeroed(layout)
                        };
                        assert!(!p.is_null());
                        assert_eq!(p as usize % align, 0, "size {size}, align {align}");
                        blocks.push((p, layout));
                    }
                    let (p, old) = blocks.pop().expect("a block");
                    let q = a.realloc(p, old, size * 3);
                    assert!(!q.is_null());
                    assert_eq!(
                        q as usize % align,
                        0,
                        "realloc to {}, align {align}",
                        size * 3
                    );
                    blocks.push((q, Layout::from_size_align(size * 3, align).expect("layout")));
                }
                for (p, layout) in blocks {
                    // SAFETY: allocated above with this layout, freed once.
                    unsafe { a.dealloc(p, layout) };
                }
            }
        }
    }

    #[test]
    fn counts_size_classes_through_alloc_realloc_and_free() {
        let a = CountingAlloc;
        let before = count();
        let layout = Layout::from_size_align(100, 8).expect("layout");
        // SAFETY: a valid layout; each block is freed once with its layout.
        unsafe {
            let p = a.alloc(layout);
            assert!(!p.is_null());
            let size = libmimalloc_sys::mi_usable_size(p as *const c_void) as i64;
            assert!(size >= 100);
            assert_eq!(
                count() - before,
                size,
                "the size class is what the block takes"
            );
            let q = a.realloc(p, layout, 5000);
            let grown = libmimalloc_sys::mi_usable_size(q as *const c_void) as i64;
            assert!(grown >= 5000);
            assert_eq!(count() - before, grown);
            // Shrunk in place, the block is counted at its new size class.
            let r = a.realloc(q, Layout::from_size_align(5000, 8).expect("layout"), 4000);
            assert_eq!(count() - before, rounded(4000));
            let q = r;
            a.dealloc(q, Layout::from_size_align(4000, 8).expect("layout"));
            let z = a.alloc_zeroed(layout);
            assert!(std::slice::from_raw_parts(z, 100).iter().all(|&b| b == 0));
            a.dealloc(z, layout);
        }
        assert_eq!(count(), before);
        // The unit tests' global allocator is the system's.
        assert!(!installed());
        assert_eq!(allocated(), None);
        assert_eq!(thread_net(), None);
        assert_eq!(name(), "libc");
    }

    #[test]
    fn each_thread_counts_on_its_own_counter_and_the_sum_is_exact() {
        let a = CountingAlloc;
        let sum = || -> i64 {
            let claimed = CLAIMED.load(Ordering::Relaxed).min(COUNTERS);
            COUNTS[..claimed]
                .iter()
                .map(|c| c.0.load(Ordering::Relaxed))
                .sum::<i64>()
                + SHARED.load(Ordering::Relaxed)
        };
        let layout = Layout::from_size_align(1 << 20, 64).expect("layout");
        // SAFETY: a valid layout; the block is freed once, on another thread.
        let block = unsafe { a.alloc(layout) } as usize;
        assert!(block != 0);
        let mine = count();
        assert!(mine >= 1 << 20);
        let other = std::thread::spawn(move || {
            // A block allocated here and freed on another thread counts on each
            // side: this thread's count goes down, the allocating one's stays.
            // SAFETY: the block came from CountingAlloc with `layout`.
            unsafe { a.dealloc(block as *mut u8, layout) };
            count()
        })
        .join()
        .expect("thread");
        assert!(other <= -(1 << 20));
        assert_eq!(count(), mine);
        // Other tests allocate too, but only through their own counters and only
        // small blocks they free before they end: the sum is within their share.
        assert!(sum().abs() < 1 << 20, "the two sides cancel in the sum");
    }
}
