//! `CLIENT PAUSE`: while a pause lasts, clients' commands (all of them, or only those
//! that write or may replicate) are held, not run. The state lives here; a connection
//! asks [`command::pause`](crate::command::pause) before running a command and, when
//! held, keeps the command and stops reading until the pause ends (its worker
//! re-checks on its timer, and `CLIENT UNPAUSE` wakes every client).

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};

use parking_lot::Mutex;

/// The engine's pause: until when, and whether every command is held.
#[derive(Debug, Default)]
pub struct PauseState {
    /// Unix ms the pause ends at; 0 when there is none.
    until_ms: AtomicI64,
    /// `ALL` (every command held) rather than `WRITE`.
    all: AtomicBool,
    /// Serialises pause and unpause (the two fields change together).
    change: Mutex<()>,
    /// Clients whose command is held now: Redis counts them among `blocked_clients`.
    held_clients: AtomicUsize,
}

impl PauseState {
    /// Pauses until `until_ms`. As in Redis, a pause already under way only grows: the
    /// later end and the stricter mode win. Returns when the pause now ends.
    pub fn pause(&self, until_ms: i64, all: bool, now_ms: i64) -> i64 {
        let _g = self.change.lock();
        let active = self.until_ms.load(Ordering::Acquire) > now_ms;
        let all = all || (active && self.all.load(Ordering::Relaxed));
        let until = if active {
            until_ms.max(self.until_ms.load(Ordering::Relaxed))
        } else {
            until_ms
        };
        self.all.store(all, Ordering::Relaxed);
        self.until_ms.store(until.max(1), Ordering::Release);
        until.max(1)
    }

    /// A client's command is now held.
    pub fn client_held(&self) {
        self.held_clients.fetch_add(1, Ordering::Relaxed);
    }

    /// A held command ran, or its client went away.
    pub fn client_released(&self) {
        self.held_clients.fetch_sub(1, Ordering::Relaxed);
    }

    /// How many clients have a command held (part of `INFO`'s `blocked_clients`).
    pub fn held_clients(&self) -> usize {
        self.held_clients.load(Ordering::Relaxed)
    }

    /// Ends the pause now (`CLIENT UNPAUSE`).
    pub fn unpause(&self) {
        let _g = self.change.lock();
        self.until_ms.store(0, Ordering::Release);
        self.all.store(false, Ordering::Relaxed);
    }

    /// When a command is held at `now_ms` (`writes`: it writes or may replicate): the
    /// Unix ms the pause ends at.
    pub fn holds(&self, writes: bool, now_ms: i64) -> Option<i64> {
        let until = self.until_ms.load(Ordering::Acquire);
        if until == 0 || until <= now_ms {
            return None;
        }
        let held = self.all.load(Ordering::Relaxed) || writes;
        held.then_some(until)
    }

    /// Whether a pause is set at all (one atomic load: every command asks).
    pub fn any(&self) -> bool {
        self.until_ms.load(Ordering::Acquire) != 0
    }

    /// Whether a pause of everything is in force at `now_ms`.
    pub fn holds_everything(&self, now_ms: i64) -> bool {
        self.holds_writes(now_ms) && self.all.load(Ordering::Relaxed)
    }

    /// Whether a write pause (or a pause of everything) is in force at `now_ms`.
    pub fn holds_writes(&self, now_ms: i64) -> bool {
        let until = self.until_ms.load(Ordering::Acquire);
        until != 0 && until > now_ms
    }

    /// Whether writes are paused now (eviction and active expiry wait too).
    pub fn writes_paused(&self) -> bool {
        let until = self.until_ms.load(Ordering::Acquire);
        until != 0 && until > crate::util::clock::system_unix_ms()
    }
}
