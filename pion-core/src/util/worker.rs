//! Which worker thread this is. The server runs one event loop per thread, and the
//! allocator gives each thread its own pages: a block freed by the thread that
//! allocated it is reused at once, one freed by another thread only once the owner
//! next sweeps that page, and not while the page stays nearly full. Keys remember
//! the worker that wrote them, so that a worker evicting under `maxmemory` can free
//! memory it will reuse itself (two workers evicting each other's keys held the
//! process 10–20 % over the limit).

use std::cell::Cell;

thread_local! {
    static WORKER: Cell<u8> = const { Cell::new(0) };
}

/// Marks the calling thread as worker `index` (by its low 8 bits: a tag that only
/// steers a preference, so workers past 256 sharing one is harmless).
pub fn enter(index: usize) {
    WORKER.set((index & 0xFF) as u8);
}

/// The calling thread's worker tag: 0 unless [`enter`] said otherwise (embedded
/// use, background threads).
pub fn current() -> u8 {
    WORKER.get()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_thread_has_its_own_tag() {
        enter(3);
        assert_eq!(current(), 3);
        let other = std::thread::spawn(|| {
            let before = current();
            enter(257);
            (before, current())
        })
        .join()
        .expect("thread runs");
        assert_eq!(other, (0, 1));
        assert_eq!(current(), 3);
        enter(0);
    }
}
