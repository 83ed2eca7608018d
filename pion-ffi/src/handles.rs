//! The handles C holds for engines and sessions: tokens, never pointers the library
//! reads, each naming an object in a table of those the caller opened. Tokens are
//! never reused, so a closed handle stays closed (`PION_ERR_CLOSED`, not undefined
//! behaviour), and a call looks its object up and holds a reference of its own while
//! it runs, so a close from another thread cannot pull it away.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use crate::status::{fail, PionStatus};

/// The open objects of one kind, by token.
pub(crate) struct Handles<T> {
    open: Mutex<BTreeMap<u64, T>>,
    next: AtomicU64,
    /// What the handles are, for messages (`engine`, `session`).
    what: &'static str,
}

impl<T: Clone> Handles<T> {
    /// An empty table of `what`s.
    pub(crate) const fn new(what: &'static str) -> Handles<T> {
        Handles {
            open: Mutex::new(BTreeMap::new()),
            next: AtomicU64::new(1),
            what,
        }
    }

    fn table(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, T>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Keeps `value` and returns the handle C gets for it.
    pub(crate) fn insert<H>(&self, value: T) -> *mut H {
        let token = self.next.fetch_add(1, Ordering::Relaxed);
        self.table().insert(token, value);
        token as usize as *mut H
    }

    /// The object behind a handle, as a reference of the caller's own.
    pub(crate) fn get<H>(&self, handle: *const H) -> Result<T, PionStatus> {
        if handle.is_null() {
            return Err(fail(
                PionStatus::PION_ERR_NULL,
                format!("{} is null", self.what),
            ));
        }
        self.table()
            .get(&(handle as usize as u64))
            .cloned()
            .ok_or_else(|| self.closed())
    }

    /// Takes the object behind a handle out of the table (`Ok(None)` for null).
    pub(crate) fn remove<H>(&self, handle: *const H) -> Result<Option<T>, PionStatus> {
        if handle.is_null() {
            return Ok(None);
        }
        match self.table().remove(&(handle as usize as u64)) {
            Some(value) => Ok(Some(value)),
            None => Err(self.closed()),
        }
    }

    fn closed(&self) -> PionStatus {
        fail(
            PionStatus::PION_ERR_CLOSED,
            format!("{} is not open", self.what),
        )
    }
}
