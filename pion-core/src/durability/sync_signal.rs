//! How an event loop asks for an fsync without waiting for it, and hears that it is
//! done (`appendfsync always`).

use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::{Condvar, Mutex};

/// How the event loop asks for an fsync without waiting for it, and hears that it
/// is done: the log's sync thread waits here, fsyncs, and calls every listener.
#[derive(Default)]
pub struct SyncSignal {
    wanted: Mutex<u64>,
    ready: Condvar,
    listeners: Mutex<Vec<Box<dyn Fn() + Send + Sync>>>,
    /// The sync thread is fsyncing now.
    busy: AtomicBool,
}

impl SyncSignal {
    /// Asks for the log to be fsynced up to `seq`.
    pub fn request(&self, seq: u64) {
        let mut w = self.wanted.lock();
        if *w < seq {
            *w = seq;
            self.busy.store(true, Ordering::Release);
            self.ready.notify_one();
        }
    }

    /// Waits (at most `timeout`) until an fsync beyond `done` is wanted; returns the
    /// sequence number wanted.
    pub fn wait(&self, done: u64, timeout: std::time::Duration) -> u64 {
        let mut w = self.wanted.lock();
        if *w <= done {
            self.ready.wait_for(&mut w, timeout);
        }
        *w
    }

    /// Whether the sync thread has an fsync under way (or about to start).
    pub fn in_flight(&self) -> bool {
        self.busy.load(Ordering::Acquire)
    }

    /// Marks the sync thread busy or idle.
    pub fn set_in_flight(&self, busy: bool) {
        self.busy.store(busy, Ordering::Release);
    }

    /// Registers a callback run after each background fsync (an event loop's waker).
    pub fn listen(&self, f: Box<dyn Fn() + Send + Sync>) {
        self.listeners.lock().push(f);
    }

    /// Runs every listener.
    pub fn notify(&self) {
        for f in self.listeners.lock().iter() {
            f();
        }
    }
}
