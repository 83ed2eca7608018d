//! One lock shard: for each database, the shard's slots (small hash tables) and an
//! index of deadlines for active expiry.

use std::collections::BTreeSet;

use super::key::StoredKey;
use super::table::{Pair, SlotTable};
use super::SLOTS_PER_SHARD;
use crate::value::Value;

/// The hasher of every slot table: ahash under keys drawn once per process. It is
/// zero-sized, so a table carries no hasher state (a shard has 256 slots per
/// database, and 16,384 in all).
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct SlotHasher;

impl std::hash::BuildHasher for SlotHasher {
    type Hasher = ahash::AHasher;

    #[inline]
    fn build_hasher(&self) -> ahash::AHasher {
        static KEYS: std::sync::OnceLock<ahash::RandomState> = std::sync::OnceLock::new();
        KEYS.get_or_init(ahash::RandomState::new).build_hasher()
    }
}

/// A stored key's value and metadata, kept small: the slot tables hold entries
/// beside their keys, so every byte here is paid per key and on each lookup's cache
/// lines. (A key's deadline is kept with the key: see [`StoredKey`].)
#[derive(Debug, Clone)]
pub struct Entry {
    /// The value.
    pub value: Value,
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

/// A key's entry out of its table, with the deadline the table keeps with the key:
/// what `RENAME`, `MOVE` and a script's rollback carry from one place to another.
#[derive(Debug, Clone)]
pub struct DetachedEntry {
    /// The entry.
    pub entry: Entry,
    /// Its absolute deadline in Unix ms, if any.
    pub deadline: Option<i64>,
}

/// A deadline as stored: `i64::MIN` is the snapshot formats' "none" marker, and a
/// deadline that far in the past means the same as the next one up.
pub(crate) fn stored_deadline(at: Option<i64>) -> Option<i64> {
    at.map(|t| t.max(i64::MIN + 1))
}

/// Whether a key with deadline `at` has expired at `now_ms`.
#[inline]
pub(crate) fn is_due(at: Option<i64>, now_ms: i64) -> bool {
    at.is_some_and(|t| t <= now_ms)
}

impl Entry {
    pub(crate) fn new(value: Value, now_ms: i64) -> Entry {
        Entry {
            value,
            accounted: 0,
            lru_secs: lru_clock(now_ms),
        }
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
}

pub(crate) fn lru_clock(now_ms: i64) -> u32 {
    (now_ms / 1000) as u32
}

/// A database's slot tables in one shard: only the slots that hold keys have one,
/// made when the first key arrives and dropped with the last (as Redis 8's per-slot
/// dictionaries are). The tables sit together, inline, and a small index maps a slot
/// to its table: a lookup is one index read and the table's header, and a database's
/// part of a shard costs half a KiB until its slots fill, not 256 tables.
#[derive(Debug)]
pub(crate) struct Slots {
    /// Per slot: its table's position in `tables` plus one (0: no table).
    index: [u16; SLOTS_PER_SHARD],
    tables: Vec<SlotTable>,
    /// The slot of each table, by position (to fix the index when a table moves).
    owners: Vec<u16>,
}

impl Slots {
    fn new() -> Slots {
        Slots {
            index: [0; SLOTS_PER_SHARD],
            tables: Vec::new(),
            owners: Vec::new(),
        }
    }

    /// Where slot `local`'s table is, if it has one.
    #[inline]
    fn position(&self, local: usize) -> Option<usize> {
        match self.index.get(local) {
            Some(&at) if at > 0 => Some(usize::from(at) - 1),
            _ => None,
        }
    }

    /// The table of slot `local`, if it holds a key.
    #[inline]
    pub fn table(&self, local: usize) -> Option<&SlotTable> {
        self.tables.get(self.position(local)?)
    }

    /// Every table that holds a key (in no particular order).
    pub fn iter(&self) -> impl Iterator<Item = &SlotTable> {
        self.tables.iter()
    }

    /// The entry of `key` in slot `local`.
    #[cfg(test)]
    pub fn get(&self, local: usize, key: &[u8]) -> Option<&Entry> {
        self.table(local)?.get(key)
    }

    /// Where `key` is in slot `local`'s table (see [`SlotTable::position`]).
    #[inline]
    pub fn position_of(&self, local: usize, key: &[u8]) -> Option<usize> {
        self.table(local)?.position(key)
    }

    /// The entry at a position [`Slots::position_of`] gave.
    #[inline]
    pub fn at(&self, local: usize, position: usize) -> Option<&Entry> {
        self.table(local)?.at(position)
    }

    /// The key at a position [`Slots::position_of`] gave.
    #[inline]
    pub fn key_at(&self, local: usize, position: usize) -> Option<&StoredKey> {
        self.table(local)?.key_at(position)
    }

    /// The deadline of `key` in slot `local`: `None` if the key is missing,
    /// `Some(None)` if it has no time to live.
    pub fn deadline_of(&self, local: usize, key: &[u8]) -> Option<Option<i64>> {
        let table = self.table(local)?;
        Some(table.key_at(table.position(key)?)?.deadline())
    }

    /// Sets (or clears) the deadline of the key at a position [`Slots::position_of`]
    /// gave; returns the old one.
    pub fn set_deadline(&mut self, local: usize, position: usize, at: Option<i64>) -> Option<i64> {
        let table = self.position(local)?;
        self.tables.get_mut(table)?.set_deadline(position, at)
    }

    /// The entry at a position [`Slots::position_of`] gave, for writing.
    #[inline]
    pub fn at_mut(&mut self, local: usize, position: usize) -> Option<&mut Entry> {
        let at = self.position(local)?;
        self.tables.get_mut(at)?.at_mut(position)
    }

    /// The entry of `key` in slot `local`, for writing.
    #[inline]
    pub fn get_mut(&mut self, local: usize, key: &[u8]) -> Option<&mut Entry> {
        let at = self.position(local)?;
        self.tables.get_mut(at)?.get_mut(key)
    }

    /// Stores `entry` under `key` in slot `local`, making the slot's table if needed;
    /// returns the pair it replaced.
    pub fn insert(&mut self, local: usize, key: StoredKey, entry: Entry) -> Option<Pair> {
        let at = match self.position(local) {
            Some(at) => at,
            None => {
                debug_assert!(local < SLOTS_PER_SHARD, "slot {local} is not in a shard");
                self.tables.push(SlotTable::default());
                self.owners.push(local as u16);
                // At most SLOTS_PER_SHARD (256) tables: positions fit a u16.
                self.index[local] = self.tables.len() as u16;
                self.tables.len() - 1
            }
        };
        // `at` is a table's position: the index only holds positions of tables.
        self.tables[at].insert(key, entry)
    }

    /// Removes `key` from slot `local`, dropping the slot's table once it is empty
    /// (the last table takes its place).
    pub fn remove(&mut self, local: usize, key: &[u8]) -> Option<Pair> {
        let at = self.position(local)?;
        let table = self.tables.get_mut(at)?;
        let removed = table.remove(key);
        if table.is_empty() {
            self.tables.swap_remove(at);
            self.owners.swap_remove(at);
            self.index[local] = 0;
            if let Some(&moved) = self.owners.get(at) {
                self.index[usize::from(moved)] = at as u16 + 1;
            }
        }
        removed
    }
}

/// One database's part of a shard.
#[derive(Debug)]
pub(crate) struct DbShard {
    pub slots: Slots,
    /// The volatile keys by deadline (short keys inline: no heap block each).
    pub expires: BTreeSet<(i64, StoredKey)>,
    pub keys: usize,
    /// Sum of the indexed deadlines, for `INFO keyspace`'s `avg_ttl`.
    pub deadline_sum: i128,
}

impl DbShard {
    fn new() -> DbShard {
        DbShard {
            slots: Slots::new(),
            expires: BTreeSet::new(),
            keys: 0,
            deadline_sum: 0,
        }
    }
}

impl DbShard {
    /// Adds a key's deadline to the expiry index.
    pub fn index_deadline(&mut self, at: i64, key: &[u8]) {
        if self.expires.insert((at, StoredKey::from(key))) {
            self.deadline_sum += i128::from(at);
        }
    }

    /// Removes a key's deadline from the expiry index.
    pub fn unindex_deadline(&mut self, at: i64, key: &[u8]) {
        if self.expires.remove(&(at, StoredKey::from(key))) {
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
    pub fn remove(&mut self, db: usize, local: usize, key: &[u8]) -> Option<DetachedEntry> {
        let d = self.db_mut(db)?;
        let (stored, entry) = d.slots.remove(local, key)?;
        d.keys -= 1;
        let deadline = stored.deadline();
        if let Some(at) = deadline {
            d.unindex_deadline(at, key);
        }
        self.used_memory = self.used_memory.saturating_sub(entry.accounted as usize);
        Some(DetachedEntry { entry, deadline })
    }

    /// Calls `visit` for every live key of one slot; returns how many keys it holds.
    pub fn visit_slot(
        &mut self,
        db: usize,
        local: usize,
        now_ms: i64,
        visit: &mut impl FnMut(&[u8], &Entry, Option<i64>),
    ) -> usize {
        let Some(slot) = self.db(db).and_then(|d| d.slots.table(local)) else {
            return 0;
        };
        for (k, e) in slot {
            let deadline = k.deadline();
            if !is_due(deadline, now_ms) {
                visit(k.as_slice(), e, deadline);
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
                    due.push((*at, key.as_slice().to_vec()));
                }
            }
            for (at, key) in due {
                let local = super::locate(&key).local;
                // Only a key that is really due: the index and the entry agree, but a
                // removal must never rest on the index alone.
                let due_now = self
                    .db(db)
                    .and_then(|d| d.slots.deadline_of(local, key.as_slice()))
                    .is_some_and(|at| is_due(at, now_ms));
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

    /// Slot tables hold entries beside their keys: a bigger entry means more memory
    /// per key and more cache misses per lookup (measured: 160-byte entries made GET about twice as slow at 100K keys).
    #[test]
    fn entries_stay_small() {
        assert!(
            std::mem::size_of::<Value>() <= 32,
            "Value grew to {}",
            std::mem::size_of::<Value>()
        );
        assert!(
            std::mem::size_of::<Entry>() <= 40,
            "Entry grew to {}",
            std::mem::size_of::<Entry>()
        );
        // Small hashes, lists, sets and sorted sets sit in the entry itself, with no
        // box of their own: each is one buffer, small enough to leave room for the
        // value's tag beside a string's bytes.
        use crate::value::{HashValue, ListValue, SetValue, StrValue, ZSetValue};
        assert_eq!(std::mem::size_of::<StrValue>(), 32);
        assert!(std::mem::size_of::<HashValue>() <= 24);
        assert!(std::mem::size_of::<ListValue>() <= 24);
        assert!(std::mem::size_of::<SetValue>() <= 24);
        assert!(std::mem::size_of::<ZSetValue>() <= 24);
    }

    #[test]
    fn deadlines_are_due_at_their_millisecond_and_keep_off_the_marker() {
        assert!(is_due(Some(1000), 1000) && !is_due(Some(1000), 999));
        assert!(!is_due(None, i64::MAX));
        assert_eq!(stored_deadline(Some(i64::MIN)), Some(i64::MIN + 1));
        assert_eq!(stored_deadline(Some(7)), Some(7));
        assert_eq!(stored_deadline(None), None);
    }
}

#[cfg(test)]
mod slot_tests {
    use super::*;

    #[test]
    fn slot_tables_come_and_go_with_their_keys() {
        let mut slots = Slots::new();
        let entry = |n: i64| {
            Entry::new(
                Value::Str(crate::value::StrValue::new(n.to_string().into_bytes())),
                0,
            )
        };
        // Slots out of order, across the bitmap's words, one twice.
        for (i, local) in [200usize, 3, 64, 255, 0, 3, 130].iter().enumerate() {
            let key = format!("k{i}");
            assert!(slots
                .insert(*local, StoredKey::from(key.as_bytes()), entry(i as i64))
                .is_none());
        }
        assert_eq!(slots.tables.len(), 6);
        let mut sizes: Vec<usize> = slots.iter().map(|t| t.len()).collect();
        sizes.sort_unstable();
        assert_eq!(sizes, [1, 1, 1, 1, 1, 2]);
        assert!(slots.get(3, b"k1").is_some() && slots.get(3, b"k5").is_some());
        assert!(slots.get(64, b"k2").is_some() && slots.get(130, b"k6").is_some());
        assert!(slots.get(4, b"k1").is_none() && slots.table(199).is_none());
        let at = slots.position_of(255, b"k3").expect("k3");
        assert_eq!(slots.set_deadline(255, at, Some(7)), None);
        assert_eq!(slots.deadline_of(255, b"k3"), Some(Some(7)));
        assert_eq!(
            slots.key_at(255, at).map(StoredKey::as_slice),
            Some(&b"k3"[..])
        );
        assert_eq!(slots.deadline_of(255, b"k9"), None);
        // A replaced key keeps its table; the last key leaving drops it.
        assert!(slots
            .insert(0, StoredKey::from(&b"k4"[..]), entry(9))
            .is_some());
        assert!(slots.remove(3, b"k1").is_some());
        assert!(slots.table(3).is_some());
        assert!(slots.remove(3, b"k5").is_some());
        assert!(slots.table(3).is_none());
        assert!(slots.remove(3, b"k5").is_none());
        assert_eq!(slots.tables.len(), 5);
        for (local, key) in [(0, "k4"), (64, "k2"), (130, "k6"), (200, "k0"), (255, "k3")] {
            assert!(slots.remove(local, key.as_bytes()).is_some(), "{key}");
        }
        assert!(slots.tables.is_empty() && slots.index.iter().all(|i| *i == 0));
    }
}
