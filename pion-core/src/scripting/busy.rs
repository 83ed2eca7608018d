//! Which script is running right now, for `SCRIPT KILL`, `FUNCTION KILL` and
//! `FUNCTION STATS` from other connections, and the kill request the running script's
//! instruction hook polls. Kept apart from the Lua states' locks so that it can be read
//! while a script holds them.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use parking_lot::Mutex;

/// What is known about the script that runs now.
#[derive(Debug, Clone)]
pub struct Running {
    /// When it started.
    pub started: Instant,
    /// A function (`FCALL`) rather than an `EVAL` script.
    pub is_function: bool,
    /// The function's name (empty for `EVAL`).
    pub name: String,
    /// The command that started it, for `FUNCTION STATS`.
    pub command: Vec<Vec<u8>>,
    /// Whether it already wrote to the dataset (then it cannot be killed).
    pub wrote: bool,
}

/// The busy state of the scripting engine.
#[derive(Default)]
pub struct Busy {
    running: Mutex<Option<Running>>,
    kill: AtomicBool,
    /// The kill comes from `SHUTDOWN NOSAVE`: the script's effects are dropped.
    shutdown: AtomicBool,
}

/// Why a kill request was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KillRefused {
    /// Nothing runs.
    NotBusy,
    /// The script already wrote.
    Unkillable,
    /// The other kind runs: a function for `SCRIPT KILL`, an `EVAL` script for
    /// `FUNCTION KILL`.
    OtherKind,
}

impl Busy {
    /// Marks a script as started.
    pub fn begin_script(&self, running: Running) {
        self.kill.store(false, Ordering::SeqCst);
        self.shutdown.store(false, Ordering::SeqCst);
        *self.running.lock() = Some(running);
    }

    /// Marks the running script as finished.
    pub fn end_script(&self) {
        *self.running.lock() = None;
        self.kill.store(false, Ordering::SeqCst);
        self.shutdown.store(false, Ordering::SeqCst);
    }

    /// Stops the running script, written or not, for `SHUTDOWN NOSAVE`.
    pub fn kill_for_shutdown(&self) {
        self.shutdown.store(true, Ordering::SeqCst);
        self.kill.store(true, Ordering::SeqCst);
    }

    /// Whether the running script was stopped by `SHUTDOWN NOSAVE`.
    pub fn killed_for_shutdown(&self) -> bool {
        self.shutdown.load(Ordering::SeqCst)
    }

    /// Records that the running script wrote to the dataset.
    pub fn mark_wrote(&self) {
        if let Some(r) = self.running.lock().as_mut() {
            r.wrote = true;
        }
    }

    /// Whether a kill was requested for the running script.
    pub fn kill_requested(&self) -> bool {
        self.kill.load(Ordering::Relaxed)
    }

    /// The running script, if any.
    pub fn running(&self) -> Option<Running> {
        self.running.lock().clone()
    }

    /// Asks the running script to stop (`SCRIPT KILL` when `function` is false,
    /// `FUNCTION KILL` when true).
    pub fn request_kill(&self, function: bool) -> Result<(), KillRefused> {
        let guard = self.running.lock();
        let Some(r) = guard.as_ref() else {
            return Err(KillRefused::NotBusy);
        };
        // Redis's order: a script that wrote is unkillable whichever command asks.
        if r.wrote {
            return Err(KillRefused::Unkillable);
        }
        if r.is_function != function {
            return Err(KillRefused::OtherKind);
        }
        self.kill.store(true, Ordering::SeqCst);
        Ok(())
    }
}
