//! Point-in-time snapshots without stopping the server: copy-on-first-touch per shard.
//!
//! A snapshot begins with a *cut*, taken while every shard is locked: each shard is
//! marked pending. From then on, whoever locks a pending shard first — a command, the
//! expiry cycle, or the snapshot thread walking the shards — serializes it before doing
//! anything else, so every shard is captured exactly as it was at the cut. The pause
//! the server sees is the cut itself; the serialization is spread over the first
//! touches (one shard, 1/64 of the keys, at a time) and the snapshot thread.

use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;

use super::shard::Shard;
use super::SHARDS;

/// A shard serialized at the cut.
#[derive(Debug)]
pub struct DumpedShard {
    /// Shard index.
    pub shard: usize,
    /// Number of keys.
    pub keys: usize,
    /// The keys in snapshot section format.
    pub body: Vec<u8>,
}

/// The state of the snapshot in progress, if any.
pub(crate) struct Cut {
    active: AtomicBool,
    pending: Box<[AtomicBool]>,
    dumped: Mutex<Vec<DumpedShard>>,
}

impl Cut {
    pub(crate) fn new() -> Cut {
        Cut {
            active: AtomicBool::new(false),
            pending: (0..SHARDS).map(|_| AtomicBool::new(false)).collect(),
            dumped: Mutex::new(Vec::new()),
        }
    }

    /// Marks every shard pending. The caller holds every shard lock, so no command
    /// sees a shard between the cut and its capture.
    pub(crate) fn begin(&self) {
        for p in self.pending.iter() {
            p.store(true, Ordering::Relaxed);
        }
        self.dumped.lock().clear();
        self.active.store(true, Ordering::Release);
    }

    /// Called with shard `idx` locked, before anything reads or changes it: captures it
    /// if the snapshot in progress has not yet.
    #[inline]
    pub(crate) fn before_use(&self, idx: usize, shard: &Shard) {
        if !self.active.load(Ordering::Acquire) {
            return;
        }
        if self.pending[idx].swap(false, Ordering::AcqRel) {
            let (keys, body) = dump(shard);
            self.dumped.lock().push(DumpedShard {
                shard: idx,
                keys,
                body,
            });
        }
    }

    /// Takes the shards captured so far.
    pub(crate) fn take(&self) -> Vec<DumpedShard> {
        std::mem::take(&mut *self.dumped.lock())
    }

    /// Ends the snapshot (done or abandoned): no more captures.
    pub(crate) fn end(&self) {
        self.active.store(false, Ordering::Release);
        for p in self.pending.iter() {
            p.store(false, Ordering::Relaxed);
        }
        self.dumped.lock().clear();
    }
}

fn dump(shard: &Shard) -> (usize, Vec<u8>) {
    let mut body = Vec::with_capacity(shard.used_memory + 64);
    let mut keys = 0;
    for (db, d) in shard.dbs.iter().enumerate() {
        let Some(d) = d else { continue };
        for slot in d.slots.iter() {
            for (k, e) in slot {
                crate::keyspace::dump::encode_entry(db, k.as_slice(), e, k.deadline(), &mut body);
                keys += 1;
            }
        }
    }
    (keys, body)
}
