//! Where the engine reads the time: the system's clocks, or a manual clock a test
//! moves forward, so that expiry, idle times for eviction and the snapshot schedule
//! can be tested without sleeping. Durations of work (command latency, a busy script,
//! progress reports) are always measured on the real monotonic clock.

use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The engine's clock (the system's unless a test gives a manual one).
#[derive(Clone, Default)]
pub enum Clock {
    /// The system's wall and monotonic clocks.
    #[default]
    System,
    /// A clock that moves only when told to.
    Manual(Arc<ManualClock>),
}

impl std::fmt::Debug for Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Clock::System => f.write_str("Clock::System"),
            Clock::Manual(m) => write!(f, "Clock::Manual({} ms)", m.unix_ms()),
        }
    }
}

/// A clock that stands still until [`advance`](Self::advance)d: its monotonic and
/// wall readings move together.
#[derive(Debug)]
pub struct ManualClock {
    base: Instant,
    base_unix_us: i64,
    offset_us: AtomicI64,
    /// How far the wall clock was stepped apart from the monotonic one.
    wall_step_us: AtomicI64,
}

impl ManualClock {
    /// Moves the clock forward.
    pub fn advance(&self, by: Duration) {
        self.offset_us
            .fetch_add(by.as_micros() as i64, Ordering::SeqCst);
    }

    fn now(&self) -> Instant {
        self.base + Duration::from_micros(self.offset_us.load(Ordering::SeqCst) as u64)
    }

    /// Steps the wall clock alone, as an NTP correction does: the monotonic clock
    /// does not move.
    pub fn step_wall(&self, by: Duration) {
        self.wall_step_us
            .fetch_add(by.as_micros() as i64, Ordering::SeqCst);
    }

    fn unix_us(&self) -> i64 {
        self.base_unix_us
            + self.offset_us.load(Ordering::SeqCst)
            + self.wall_step_us.load(Ordering::SeqCst)
    }

    fn unix_ms(&self) -> i64 {
        self.unix_us().div_euclid(1000)
    }
}

impl Clock {
    /// A manual clock reading `start_unix_ms`, and the handle that moves it.
    pub fn manual(start_unix_ms: i64) -> (Clock, Arc<ManualClock>) {
        let m = Arc::new(ManualClock {
            base: Instant::now(),
            base_unix_us: start_unix_ms * 1000,
            offset_us: AtomicI64::new(0),
            wall_step_us: AtomicI64::new(0),
        });
        (Clock::Manual(Arc::clone(&m)), m)
    }

    /// The monotonic time.
    #[inline]
    pub fn now(&self) -> Instant {
        match self {
            Clock::System => Instant::now(),
            Clock::Manual(m) => m.now(),
        }
    }

    /// The wall time in Unix microseconds.
    pub fn unix_us(&self) -> i64 {
        match self {
            Clock::System => system_unix_us(),
            Clock::Manual(m) => m.unix_us(),
        }
    }

    /// The wall time in Unix milliseconds.
    pub fn unix_ms(&self) -> i64 {
        self.unix_us().div_euclid(1000)
    }
}

/// The system's wall time in Unix microseconds.
pub fn system_unix_us() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as i64)
}

/// The system's wall time in Unix milliseconds.
pub fn system_unix_ms() -> i64 {
    system_unix_us().div_euclid(1000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_moves_only_when_told_and_both_readings_together() {
        let (clock, hand) = Clock::manual(1_000_000);
        let (t0, w0) = (clock.now(), clock.unix_ms());
        std::thread::sleep(Duration::from_millis(5));
        assert_eq!((clock.now(), clock.unix_ms()), (t0, w0));
        hand.advance(Duration::from_millis(1500));
        assert_eq!(clock.now() - t0, Duration::from_millis(1500));
        assert_eq!(clock.unix_ms() - w0, 1500);
        let system = Clock::System;
        assert!((system.unix_ms() - system_unix_us() / 1000).abs() < 1000);
    }
}
