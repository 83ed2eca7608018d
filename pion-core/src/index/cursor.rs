//! Cursors over paused queries (`FT.AGGREGATE … WITHCURSOR`, read by `FT.CURSOR`).
//! Cursor ids are random and global (a read names an index, but RediSearch finds the
//! cursor by id alone). A cursor idle for longer than its `MAXIDLE` is gone;
//! RediSearch collects idle cursors from time to time, Pion as soon as any cursor
//! command runs.

use std::any::Any;
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rand::Rng;

use super::SearchIndex;

/// One open cursor.
pub struct Cursor {
    /// The index it reads.
    pub index: Arc<SearchIndex>,
    /// The paused query (`FT.AGGREGATE`'s pipeline: opaque here).
    pub paused: Box<dyn Any + Send>,
    /// Rows per read: the last `COUNT` given (`None`: all).
    pub count: Option<usize>,
    max_idle: Duration,
    last_used: Instant,
}

impl Cursor {
    fn expired(&self, now: Instant) -> bool {
        now.duration_since(self.last_used) > self.max_idle
    }
}

/// Every open cursor of the engine, by id.
#[derive(Default)]
pub struct Cursors {
    map: Mutex<HashMap<u64, Cursor>>,
}

impl Cursors {
    /// Removes the cursors idle past their `MAXIDLE`; returns how many.
    pub fn collect_idle(&self) -> usize {
        let now = Instant::now();
        let mut map = self.map.lock();
        let before = map.len();
        map.retain(|_, c| !c.expired(now));
        before - map.len()
    }

    /// Keeps a paused query for later reads of `count` rows, until it is idle for
    /// `max_idle_ms`; returns its new id.
    pub fn open(
        &self,
        index: Arc<SearchIndex>,
        paused: Box<dyn Any + Send>,
        count: usize,
        max_idle_ms: u64,
    ) -> u64 {
        self.collect_idle();
        let mut map = self.map.lock();
        let mut rng = rand::thread_rng();
        let id = loop {
            let id = rng.gen_range(1..(1u64 << 31));
            if !map.contains_key(&id) {
                break id;
            }
        };
        map.insert(
            id,
            Cursor {
                index,
                paused,
                count: Some(count),
                max_idle: Duration::from_millis(max_idle_ms),
                last_used: Instant::now(),
            },
        );
        id
    }

    /// Takes a cursor out while it is read (a concurrent read does not find it).
    pub fn take(&self, id: u64) -> Option<Cursor> {
        self.collect_idle();
        self.map.lock().remove(&id)
    }

    /// Puts a cursor back after a read that did not finish it.
    pub fn put_back(&self, id: u64, mut cursor: Cursor) {
        cursor.last_used = Instant::now();
        self.map.lock().insert(id, cursor);
    }

    /// Forgets every cursor (the indexes were all dropped).
    pub fn clear(&self) {
        self.map.lock().clear();
    }
}
