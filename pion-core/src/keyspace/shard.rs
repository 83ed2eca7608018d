//! One lock shard: for each database, the shard's slots (small hash tables) and an
//! index of deadlines for active expiry.

use std::collections::{BTreeSet, HashMap};

use super::key::StoredKey;
use super::SLOTS_PER_SHARD;
use crate::value::Value;

type SlotMap = HashMap<StoredKey, Entry, ahash::RandomState>;

/// A stored key's value and metadata, kept small: the slot tables hold entries
/// inline, so every byte here is paid on each lookup's cache lines.
#[derive(Debug, Clone)]
pub struct Entry {
    /// The value.
    pub value: Value,
    /// Absolute deadline in Unix ms, or [`NO_DEADLINE`].
    deadline: i64,
    /// Bytes this entry adds to the shard's `used_memory` (an estimate, saturating).
    pub(crate) accounted: u32,
    /// Access data: under an LRU (or no) policy the last access in seconds; under an
    /// LFU policy, as in Redis, `minutes << 8 | counter` (a logarithmic access
    /// counter and the minute it was last decayed).
    pub(crate) lru_secs: u32,
}

/// The counter a new key starts with under an LFU policy (Redis's `LFU_INIT_VAL`).
pub const LFU_INIT_VAL: u8 = 5;

/// The LFU tuning (`lfu-log-factor`, `lfu-decay-time`), as Redis defines them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LfuParams {
    /// How slowly the counter grows (`lfu-log-factor`, default 10).
    pub log_factor: u32,
    /// Idle minutes per counter decrement (`lfu-decay-time`, default 1; 0: never).
    pub decay_minutes: u32,
}

impl Default for LfuParams {
    fn default() -> Self {
        LfuParams {
            log_factor: 10,
            decay_minutes: 1,
        }
    }
}

fn lfu_minutes(now_ms: i64) -> u32 {
    ((now_ms / 60_000) as u32) & 0xFFFF
}

/// The `deadline` of a key without a time to live.
const NO_DEADLINE: i64 = i64::MIN;

impl Entry {
    pub(crate) fn new(value: Value, now_ms: i64) -> Entry {
        Entry {
            value,
            deadline: NO_DEADLINE,
            accounted: 0,
            lru_secs: lru_clock(now_ms),
        }
    }

    /// The absolute expiry time in Unix milliseconds, if any.
    pub fn expire_at(&self) -> Option<i64> {
        (self.deadline != NO_DEADLINE).then_some(self.deadline)
    }

    /// Sets (or clears) the deadline; returns the previous one.
    pub(crate) fn set_deadline(&mut self, at: Option<i64>) -> Option<i64> {
        let old = self.expire_at();
        // i64::MIN is the "none" marker; a deadline that far in the past is equivalent.
        self.deadline = at.map_or(NO_DEADLINE, |t| t.max(NO_DEADLINE + 1));
        old
    }

    /// Records the estimated size of this entry.
    pub(crate) fn set_accounted(&mut self, bytes: usize) -> usize {
        let old = self.accounted as usize;
        self.accounted = u32::try_from(bytes).unwrap_or(u32::MAX);
        old
    }

    /// Seconds since the key was last accessed (`OBJECT IDLETIME`).
    pub fn idle_secs(&self, now_ms: i64) -> u64 {
        u64::from(lru_clock(now_ms).wrapping_sub(self.lru_secs))
    }

    /// The LFU counter after decay for the minutes since it was last touched
    /// (`OBJECT FREQ`; meaningful under an LFU policy).
    pub fn lfu_counter(&self, now_ms: i64, params: LfuParams) -> u8 {
        // After a policy switch the field may still hold an LRU time: the result is
        // then meaningless (as Redis warns) but never out of range.
        let last = (self.lru_secs >> 8) & 0xFFFF;
        let counter = (self.lru_secs & 0xFF) as u8;
        let now = lfu_minutes(now_ms);
        let elapsed = if now >= last {
            now - last
        } else {
            0xFFFF - last + now
        };
        let periods = elapsed.checked_div(params.decay_minutes).unwrap_or(0);
        counter.saturating_sub(u8::try_from(periods).unwrap_or(u8::MAX))
    }

    /// Records an access under an LFU policy: decay, then a logarithmic increment
    /// (`r` is a uniform random number in [0, 1)).
    pub(crate) fn lfu_touch(&mut self, now_ms: i64, r: f64, params: LfuParams) {
        let mut counter = self.lfu_counter(now_ms, params);
        if counter < u8::MAX {
            let base = f64::from(counter.saturating_sub(LFU_INIT_VAL));
            if r < 1.0 / (base * f64::from(params.log_factor) + 1.0) {
                counter += 1;
            }
        }
        self.lru_secs = (lfu_minutes(now_ms) << 8) | u32::from(counter);
    }

    /// Sets the access data as if the key was last accessed `idle_secs` ago
    /// (`RESTORE … IDLETIME`, under an LRU or no policy).
    pub(crate) fn set_idle(&mut self, idle_secs: u64, now_ms: i64) {
        let idle = u32::try_from(idle_secs).unwrap_or(u32::MAX);
        self.lru_secs = lru_clock(now_ms).wrapping_sub(idle);
    }

    /// Sets the LFU counter (`RESTORE … FREQ`, under an LFU policy).
    pub(crate) fn set_lfu_counter(&mut self, counter: u8, now_ms: i64) {
        self.lru_secs = (lfu_minutes(now_ms) << 8) | u32::from(counter);
    }

    /// Starts LFU tracking for a new key.
    pub(crate) fn lfu_init(&mut self, now_ms: i64) {
        self.lru_secs = (lfu_minutes(now_ms) << 8) | u32::from(LFU_INIT_VAL);
    }

    pub(crate) fn is_expired(&self, now_ms: i64) -> bool {
        self.deadline != NO_DEADLINE && self.deadline <= now_ms
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
    /// Sum of the indexed deadlines, for `INFO keyspace`'s `avg_ttl`.
    pub deadline_sum: i128,
}

impl DbShard {
    fn new() -> DbShard {
        DbShard {
            slots: (0..SLOTS_PER_SHARD).map(|_| SlotMap::default()).collect(),
            expires: BTreeSet::new(),
            keys: 0,
            deadline_sum: 0,
        }
    }
}

impl DbShard {
    /// Adds a key's deadline to the expiry index.
    pub fn index_deadline(&mut self, at: i64, key: &[u8]) {
        if self.expires.insert((at, key.to_vec())) {
            self.deadline_sum += i128::from(at);
        }
    }

    /// Removes a key's deadline from the expiry index.
    pub fn unindex_deadline(&mut self, at: i64, key: &[u8]) {
        if self.expires.remove(&(at, key.to_vec())) {
            self.deadline_sum -= i128::from(at);
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

    /// Sum of the deadlines of a database's volatile keys in this shard.
    pub fn db_deadline_sum(&self, db: usize) -> i128 {
        self.db(db).map_or(0, |d| d.deadline_sum)
    }

    pub fn used_memory(&self) -> usize {
        self.used_memory
    }

    /// Removes a key outright (no expiry check), keeping counters and indexes right.
    pub fn remove(&mut self, db: usize, local: usize, key: &[u8]) -> Option<Entry> {
        let d = self.db_mut(db)?;
        let entry = d.slots[local].remove(key)?;
        d.keys -= 1;
        if let Some(at) = entry.expire_at() {
            d.unindex_deadline(at, key);
        }
        self.used_memory = self.used_memory.saturating_sub(entry.accounted as usize);
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
    pub fn expire_due(
        &mut self,
        now_ms: i64,
        budget: usize,
        on_expired: &mut dyn FnMut(usize, &[u8]),
    ) -> usize {
        let mut removed = 0;
        for db in 0..self.dbs.len() {
            let mut due = Vec::new();
            if let Some(d) = self.db(db) {
                for (at, key) in d.expires.iter() {
                    if *at > now_ms || due.len() >= budget {
                        break;
                    }
                    due.push((*at, key.clone()));
                }
            }
            for (at, key) in due {
                let local = super::locate(&key).local;
                // Only a key that is really due: the index and the entry agree, but a
                // removal must never rest on the index alone.
                let due_now = self
                    .db(db)
                    .and_then(|d| d.slots[local].get(key.as_slice()))
                    .is_some_and(|e| e.is_expired(now_ms));
                if due_now && self.remove(db, local, &key).is_some() {
                    removed += 1;
                    on_expired(db, &key);
                } else if let Some(d) = self.db_mut(db) {
                    // A stale index entry (the key changed): drop it.
                    d.unindex_deadline(at, &key);
                }
            }
        }
        removed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Slot tables hold entries inline: a bigger entry means more cache misses per
    /// lookup (measured: 160-byte entries made GET about twice as slow at 100K keys).
    #[test]
    fn entries_stay_small() {
        assert!(
            std::mem::size_of::<Value>() <= 40,
            "Value grew to {}",
            std::mem::size_of::<Value>()
        );
        assert!(
            std::mem::size_of::<Entry>() <= 56,
            "Entry grew to {}",
            std::mem::size_of::<Entry>()
        );
    }

    #[test]
    fn deadlines_round_trip() {
        let mut e = Entry::new(Value::string(b"v".to_vec()), 0);
        assert_eq!(e.expire_at(), None);
        assert_eq!(e.set_deadline(Some(1000)), None);
        assert!(e.is_expired(1000) && !e.is_expired(999));
        assert_eq!(e.set_deadline(Some(i64::MIN)), Some(1000));
        assert_eq!(e.expire_at(), Some(i64::MIN + 1));
        assert_eq!(e.set_deadline(None), Some(i64::MIN + 1));
        assert!(!e.is_expired(i64::MAX));
    }
}
