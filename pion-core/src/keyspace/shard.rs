//! One lock shard: for each database, the shard's slots (small hash tables) and an
//! index of deadlines for active expiry.

use std::collections::{BTreeSet, HashMap};

use super::key::StoredKey;
use super::SLOTS_PER_SHARD;
use crate::value::Value;

type SlotMap = HashMap<StoredKey, Entry, ahash::RandomState>;

/// A stored key's value and metadata.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The value.
    pub value: Value,
    pub(crate) expire_at: Option<i64>,
    pub(crate) accounted: usize,
    pub(crate) lru_secs: u32,
}

impl Entry {
    pub(crate) fn new(value: Value, now_ms: i64) -> Entry {
        Entry {
            value,
            expire_at: None,
            accounted: 0,
            lru_secs: lru_clock(now_ms),
        }
    }

    /// The absolute expiry time in Unix milliseconds, if any.
    pub fn expire_at(&self) -> Option<i64> {
        self.expire_at
    }

    /// Seconds since the key was last accessed (`OBJECT IDLETIME`).
    pub fn idle_secs(&self, now_ms: i64) -> u64 {
        u64::from(lru_clock(now_ms).wrapping_sub(self.lru_secs))
    }

    pub(crate) fn is_expired(&self, now_ms: i64) -> bool {
        self.expire_at.is_some_and(|at| at <= now_ms)
    }
}

pub(crate) fn lru_clock(now_ms: i64) -> u32 {
    (now_ms / 1000) as u32
}

/// One database's part of a shard.
#[derive(Debug)]
pub(crate) struct DbShard {
    pub slots: Vec<SlotMap>,
    pub expires: BTreeSet<(i64, Vec<u8>)>,
    pub keys: usize,
}

impl DbShard {
    fn new() -> DbShard {
        DbShard {
            slots: (0..SLOTS_PER_SHARD).map(|_| SlotMap::default()).collect(),
            expires: BTreeSet::new(),
            keys: 0,
        }
    }
}

/// A lock shard.
#[derive(Debug)]
pub(crate) struct Shard {
    pub dbs: Vec<Option<Box<DbShard>>>,
    pub used_memory: usize,
}

impl Shard {
    pub fn new(databases: usize) -> Shard {
        Shard {
            dbs: (0..databases).map(|_| None).collect(),
            used_memory: 0,
        }
    }

    pub fn db(&self, db: usize) -> Option<&DbShard> {
        self.dbs.get(db).and_then(|d| d.as_deref())
    }

    pub fn db_mut(&mut self, db: usize) -> Option<&mut DbShard> {
        self.dbs.get_mut(db).and_then(|d| d.as_deref_mut())
    }

    pub fn db_or_create(&mut self, db: usize) -> &mut DbShard {
        self.dbs[db].get_or_insert_with(|| Box::new(DbShard::new()))
    }

    pub fn db_len(&self, db: usize) -> usize {
        self.db(db).map_or(0, |d| d.keys)
    }

    pub fn db_expires(&self, db: usize) -> usize {
        self.db(db).map_or(0, |d| d.expires.len())
    }

    pub fn used_memory(&self) -> usize {
        self.used_memory
    }

    /// Removes a key outright (no expiry check), keeping counters and indexes right.
    pub fn remove(&mut self, db: usize, local: usize, key: &[u8]) -> Option<Entry> {
        let d = self.db_mut(db)?;
        let entry = d.slots[local].remove(key)?;
        d.keys -= 1;
        if let Some(at) = entry.expire_at {
            d.expires.remove(&(at, key.to_vec()));
        }
        self.used_memory = self.used_memory.saturating_sub(entry.accounted);
        Some(entry)
    }

    /// Calls `visit` for every live key of one slot; returns how many keys it holds.
    pub fn visit_slot(
        &mut self,
        db: usize,
        local: usize,
        now_ms: i64,
        visit: &mut impl FnMut(&[u8], &Entry),
    ) -> usize {
        let Some(d) = self.db(db) else { return 0 };
        let slot = &d.slots[local];
        for (k, e) in slot {
            if !e.is_expired(now_ms) {
                visit(k.as_slice(), e);
            }
        }
        slot.len()
    }

    /// Removes keys whose deadline passed, at most `budget` per database.
    pub fn expire_due(&mut self, now_ms: i64, budget: usize) -> usize {
        let mut removed = 0;
        for db in 0..self.dbs.len() {
            let mut due = Vec::new();
            if let Some(d) = self.db(db) {
                for (at, key) in d.expires.iter() {
                    if *at > now_ms || due.len() >= budget {
                        break;
                    }
                    due.push(key.clone());
                }
            }
            for key in due {
                let local = super::locate(&key).local;
                if self.remove(db, local, &key).is_some() {
                    removed += 1;
                }
            }
        }
        removed
    }
}
