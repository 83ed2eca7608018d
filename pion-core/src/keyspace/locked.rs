//! The view a running command has of the keyspace: the shards it locked, and the key
//! operations (with lazy expiry, memory accounting and the deadline counts kept right).

use std::sync::atomic::Ordering;

use parking_lot::MutexGuard;

use super::key::StoredKey;
use super::shard::{is_due, lru_clock, stored_deadline, DetachedEntry, Entry, Shard};
use super::{locate, Keyspace, Location, LockSet, SHARDS};
use crate::error::{OpError, OpResult};
use crate::value::Value;

enum Guards<'a> {
    None,
    One(usize, MutexGuard<'a, Shard>),
    /// Sorted by shard index; for [`LockSet::All`] index `i` holds shard `i`.
    Many(Vec<(usize, MutexGuard<'a, Shard>)>),
}

/// How many key locations a command remembers (most commands name at most this many).
const MEMO: usize = 4;

/// The shards a command holds while it runs, and the key operations on them.
pub struct Locked<'a> {
    ks: &'a Keyspace,
    guards: Guards<'a>,
    all: bool,
    now_ms: i64,
    /// Locations of the command's declared keys, by slice address and length, so the
    /// key's CRC16 is computed once per command rather than once per operation: the
    /// location as (shard, index within it). Kept small: the whole lock set is moved
    /// into each command's context.
    memo: [(usize, u32, u16, u16); MEMO],
    memo_len: u8,
    /// `CLIENT NO-TOUCH`: reads leave keys' access times alone.
    no_touch: bool,
    /// An LFU `maxmemory-policy` is selected: accesses count frequency, not time.
    lfu: bool,
}

fn not_locked() -> OpError {
    OpError::custom("ERR internal error: key outside the command's declared keys")
}

impl<'a> Locked<'a> {
    #[inline]
    pub(super) fn acquire(ks: &'a Keyspace, set: &LockSet, now_ms: i64) -> Locked<'a> {
        let (guards, all) = match set {
            LockSet::None => (Guards::None, false),
            LockSet::All => (
                Guards::Many(
                    ks.shards
                        .iter()
                        .enumerate()
                        .map(|(i, _)| (i, ks.lock_shard(i)))
                        .collect(),
                ),
                true,
            ),
            LockSet::Shard(shard) => (Guards::One(*shard, ks.lock_shard(*shard)), false),
            LockSet::Keys(shards) if shards.len() == 1 => {
                (Guards::One(shards[0], ks.lock_shard(shards[0])), false)
            }
            LockSet::Keys(shards) => {
                let mut order: Vec<usize> = shards.to_vec();
                order.sort_unstable();
                order.dedup();
                if order.len() == 1 {
                    (Guards::One(order[0], ks.lock_shard(order[0])), false)
                } else {
                    (
                        Guards::Many(order.into_iter().map(|i| (i, ks.lock_shard(i))).collect()),
                        false,
                    )
                }
            }
        };
        let empty = (0, 0, 0, 0);
        Locked {
            ks,
            guards,
            all,
            now_ms,
            memo: [empty; MEMO],
            memo_len: 0,
            no_touch: false,
            lfu: false,
        }
    }

    /// Tracks access frequency (LFU) instead of access time for this command.
    pub(crate) fn set_lfu(&mut self, lfu: bool) {
        self.lfu = lfu;
    }

    /// Leaves access times alone for this command (`CLIENT NO-TOUCH ON`).
    pub(crate) fn set_no_touch(&mut self, no_touch: bool) {
        self.no_touch = no_touch;
    }

    /// Records where a declared key lives (the dispatcher already hashed it).
    pub(crate) fn remember(&mut self, key: &[u8], loc: Location) {
        // Shard and index within it fit 16 bits each (`SHARDS` × slots per shard is
        // the cluster's 16,384 slots); a key too long for the memo is hashed again.
        let (Ok(len), Ok(shard), Ok(local)) = (
            u32::try_from(key.len()),
            u16::try_from(loc.shard),
            u16::try_from(loc.local),
        ) else {
            return;
        };
        let at = usize::from(self.memo_len);
        if at < MEMO {
            self.memo[at] = (key.as_ptr() as usize, len, shard, local);
            self.memo_len += 1;
        }
    }

    /// The location of a key: from the memo when it is the same slice, else hashed.
    fn locate(&self, key: &[u8]) -> Location {
        let addr = key.as_ptr() as usize;
        for &(a, len, shard, local) in &self.memo[..usize::from(self.memo_len)] {
            if a == addr && len as usize == key.len() {
                return Location {
                    shard: usize::from(shard),
                    local: usize::from(local),
                };
            }
        }
        locate(key)
    }

    /// The time this command runs at (Unix milliseconds), fixed for the whole command.
    pub fn now_ms(&self) -> i64 {
        self.now_ms
    }

    /// The keyspace these locks belong to.
    pub fn keyspace(&self) -> &'a Keyspace {
        self.ks
    }

    fn check_db(&self, db: usize) -> OpResult<()> {
        if db < self.ks.databases {
            Ok(())
        } else {
            Err(OpError::DbIndexOutOfRange)
        }
    }

    fn shard(&mut self, idx: usize) -> OpResult<&mut Shard> {
        match &mut self.guards {
            Guards::One(i, g) if *i == idx => Ok(g),
            Guards::Many(v) => {
                if self.all {
                    return Ok(&mut v[idx].1);
                }
                let pos = v
                    .binary_search_by_key(&idx, |(i, _)| *i)
                    .map_err(|_| not_locked())?;
                Ok(&mut v[pos].1)
            }
            _ => Err(not_locked()),
        }
    }

    /// Drops the key if its time to live has passed; returns whether it still exists.
    fn expire_if_due(&mut self, db: usize, key: &[u8], loc: Location) -> OpResult<bool> {
        Ok(self.live_position(db, key, loc)?.is_some())
    }

    /// Where the key is in its slot's table if it is live (see
    /// [`super::table::SlotTable::position`]); a key past its time to live is dropped
    /// and reads as missing. One lookup serves the check and the read that follows.
    fn live_position(&mut self, db: usize, key: &[u8], loc: Location) -> OpResult<Option<usize>> {
        let now = self.now_ms;
        let ks = self.ks;
        let shard = self.shard(loc.shard)?;
        let Some(d) = shard.db(db) else {
            return Ok(None);
        };
        let Some(at) = d.slots.position_of(loc.local, key) else {
            return Ok(None);
        };
        match d.slots.key_at(loc.local, at).map(StoredKey::deadline) {
            None => Ok(None),
            // Under CLIENT PAUSE it reads as missing but stays (Redis's rule).
            Some(deadline) if is_due(deadline, now) && ks.expiry_held(now) => Ok(None),
            Some(deadline) if is_due(deadline, now) => {
                shard.remove(db, loc.local, key);
                self.ks.stats.expired_keys.fetch_add(1, Ordering::Relaxed);
                self.ks.expired(db, key);
                Ok(None)
            }
            Some(_) => Ok(Some(at)),
        }
    }

    /// The entry of a live key, touching its access time.
    pub fn entry(&mut self, db: usize, key: &[u8]) -> OpResult<Option<&mut Entry>> {
        let Some((loc, at)) = self.touch(db, key)? else {
            return Ok(None);
        };
        let shard = self.shard(loc.shard)?;
        Ok(shard.db_mut(db).and_then(|d| d.slots.at_mut(loc.local, at)))
    }

    /// The deadline of a live key, touching its access time as [`entry`](Self::entry)
    /// does (`EXPIRE`, `PERSIST`): `None` if the key is missing, `Some(None)` if it
    /// has no time to live.
    pub fn touched_deadline(&mut self, db: usize, key: &[u8]) -> OpResult<Option<Option<i64>>> {
        let Some((loc, at)) = self.touch(db, key)? else {
            return Ok(None);
        };
        self.deadline_at(db, loc, at)
    }

    /// The deadline of the key at a position [`live_position`](Self::live_position)
    /// gave.
    fn deadline_at(
        &mut self,
        db: usize,
        loc: Location,
        at: usize,
    ) -> OpResult<Option<Option<i64>>> {
        let shard = self.shard(loc.shard)?;
        Ok(shard
            .db(db)
            .and_then(|d| d.slots.key_at(loc.local, at))
            .map(StoredKey::deadline))
    }

    /// Finds a live key and records the access (unless `no_touch`); returns where
    /// it is.
    fn touch(&mut self, db: usize, key: &[u8]) -> OpResult<Option<(Location, usize)>> {
        self.check_db(db)?;
        let loc = self.locate(key);
        let Some(at) = self.live_position(db, key, loc)? else {
            return Ok(None);
        };
        let lru = lru_clock(self.now_ms);
        let touch = !self.no_touch;
        let (lfu, now) = (self.lfu, self.now_ms);
        let params = self.ks.lfu_params();
        let shard = self.shard(loc.shard)?;
        let Some(e) = shard.db_mut(db).and_then(|d| d.slots.at_mut(loc.local, at)) else {
            return Ok(None);
        };
        if touch && lfu {
            e.lfu_touch(now, rand::random::<f64>(), params);
        } else if touch {
            e.set_access(lru);
        }
        Ok(Some((loc, at)))
    }

    /// The entry of a live key without touching its access time (`OBJECT`, `TTL`).
    pub fn peek(&mut self, db: usize, key: &[u8]) -> OpResult<Option<&Entry>> {
        self.check_db(db)?;
        let loc = self.locate(key);
        let Some(at) = self.live_position(db, key, loc)? else {
            return Ok(None);
        };
        let shard = self.shard(loc.shard)?;
        Ok(shard.db(db).and_then(|d| d.slots.at(loc.local, at)))
    }

    /// The entry stored under a key and its deadline, even one past its time to live
    /// that nothing has removed yet (`DEBUG OBJECT` looks at the dictionary itself, as
    /// in Redis).
    pub fn stored(&mut self, db: usize, key: &[u8]) -> OpResult<Option<(&Entry, Option<i64>)>> {
        self.check_db(db)?;
        let loc = self.locate(key);
        let shard = self.shard(loc.shard)?;
        let Some(d) = shard.db(db) else {
            return Ok(None);
        };
        let found = d.slots.position_of(loc.local, key).and_then(|at| {
            let deadline = d.slots.key_at(loc.local, at)?.deadline();
            Some((d.slots.at(loc.local, at)?, deadline))
        });
        Ok(found)
    }

    /// A copy of a live key's entry with its deadline, for putting back later
    /// ([`put_entry`](Self::put_entry)) without touching its access time.
    pub fn detached(&mut self, db: usize, key: &[u8]) -> OpResult<Option<DetachedEntry>> {
        self.check_db(db)?;
        let loc = self.locate(key);
        let Some(at) = self.live_position(db, key, loc)? else {
            return Ok(None);
        };
        let shard = self.shard(loc.shard)?;
        Ok(shard.db(db).and_then(|d| {
            Some(DetachedEntry {
                entry: d.slots.at(loc.local, at)?.clone(),
                deadline: d.slots.key_at(loc.local, at)?.deadline(),
            })
        }))
    }

    /// The value of a live key, for reading. Counts a keyspace hit or miss.
    pub fn get(&mut self, db: usize, key: &[u8]) -> OpResult<Option<&Value>> {
        let stats = &self.ks.stats;
        let found = self.entry(db, key)?;
        stats.count_lookup(found.is_some());
        Ok(found.map(|e| &e.value))
    }

    /// The value of a live key, for a command that reads it and may update it: a
    /// keyspace hit or miss is counted, as [`get`](Self::get) counts it.
    pub fn get_mut_counted(&mut self, db: usize, key: &[u8]) -> OpResult<Option<&mut Value>> {
        let stats = &self.ks.stats;
        let found = self.entry(db, key)?;
        stats.count_lookup(found.is_some());
        Ok(found.map(|e| &mut e.value))
    }

    /// The value of a live key, for writing.
    pub fn get_mut(&mut self, db: usize, key: &[u8]) -> OpResult<Option<&mut Value>> {
        Ok(self.entry(db, key)?.map(|e| &mut e.value))
    }

    /// Whether a live key exists (no access-time update, no hit/miss count).
    pub fn exists(&mut self, db: usize, key: &[u8]) -> OpResult<bool> {
        Ok(self.peek(db, key)?.is_some())
    }

    /// The value of a key, inserting `make()` first if the key is missing.
    pub fn get_or_insert_with(
        &mut self,
        db: usize,
        key: &[u8],
        make: impl FnOnce() -> Value,
    ) -> OpResult<&mut Value> {
        if self.entry(db, key)?.is_none() {
            self.set(db, key, make())?;
        }
        let loc = self.locate(key);
        let shard = self.shard(loc.shard)?;
        shard
            .db_mut(db)
            .and_then(|d| d.slots.get_mut(loc.local, key))
            .map(|e| &mut e.value)
            .ok_or_else(not_locked)
    }

    /// Stores a value, replacing any old one and clearing its time to live.
    pub fn set(&mut self, db: usize, key: &[u8], value: Value) -> OpResult<()> {
        self.store(db, key, value, false)
    }

    /// Stores a value, keeping the old key's time to live if it had one (`KEEPTTL`).
    pub fn set_keep_ttl(&mut self, db: usize, key: &[u8], value: Value) -> OpResult<()> {
        self.store(db, key, value, true)
    }

    fn store(&mut self, db: usize, key: &[u8], value: Value, keep_ttl: bool) -> OpResult<()> {
        self.check_db(db)?;
        let loc = self.locate(key);
        self.expire_if_due(db, key, loc)?;
        let (now, lfu) = (self.now_ms, self.lfu);
        let shard = self.shard(loc.shard)?;
        let mut entry = Entry::new(value, now);
        if lfu {
            entry.lfu_init(now);
        }
        entry.set_accounted(entry.value.mem_usage() + key.len());
        let d = shard.db_or_create(db);
        let old = d.slots.position_of(loc.local, key);
        let mut created = false;
        match old {
            Some(at) => {
                if !keep_ttl {
                    d.slots.set_deadline(loc.local, at, None);
                }
                let Some(old) = d.slots.at_mut(loc.local, at) else {
                    return Err(not_locked());
                };
                let freed = old.accounted as usize;
                if lfu {
                    // Redis keeps the old value's frequency when a key is overwritten.
                    entry.set_access(old.access());
                }
                let added = entry.accounted as usize;
                *old = entry;
                shard.used_memory = shard.used_memory.saturating_sub(freed) + added;
            }
            None => {
                let added = entry.accounted as usize;
                d.slots.insert(loc.local, StoredKey::from(key), entry);
                d.keys += 1;
                shard.used_memory += added;
                created = true;
            }
        }
        if created {
            self.ks.created(db, key);
        }
        Ok(())
    }

    /// Removes a key; returns its value if it was live.
    pub fn remove(&mut self, db: usize, key: &[u8]) -> OpResult<Option<Value>> {
        self.check_db(db)?;
        let loc = self.locate(key);
        if !self.expire_if_due(db, key, loc)? {
            return Ok(None);
        }
        let shard = self.shard(loc.shard)?;
        Ok(shard.remove(db, loc.local, key).map(|e| e.entry.value))
    }

    /// Removes a key with its metadata; returns the entry if it was live.
    pub fn take_entry(&mut self, db: usize, key: &[u8]) -> OpResult<Option<DetachedEntry>> {
        self.check_db(db)?;
        let loc = self.locate(key);
        if !self.expire_if_due(db, key, loc)? {
            return Ok(None);
        }
        let shard = self.shard(loc.shard)?;
        Ok(shard.remove(db, loc.local, key))
    }

    /// Inserts a whole entry (value and deadline), replacing any old key.
    pub fn put_entry(&mut self, db: usize, key: &[u8], detached: DetachedEntry) -> OpResult<()> {
        self.set(db, key, detached.entry.value)?;
        self.set_expire_at(db, key, detached.deadline)?;
        Ok(())
    }

    /// The absolute deadline of a live key: `None` if the key is missing,
    /// `Some(None)` if it has no time to live.
    pub fn expire_at(&mut self, db: usize, key: &[u8]) -> OpResult<Option<Option<i64>>> {
        self.check_db(db)?;
        let loc = self.locate(key);
        let Some(at) = self.live_position(db, key, loc)? else {
            return Ok(None);
        };
        self.deadline_at(db, loc, at)
    }

    /// Sets (or with `None` clears) a live key's deadline; returns false if the key is
    /// missing. A deadline in the past is stored as given: the caller decides whether
    /// to delete instead, as Redis's `EXPIRE` does.
    pub fn set_expire_at(&mut self, db: usize, key: &[u8], at: Option<i64>) -> OpResult<bool> {
        self.check_db(db)?;
        let loc = self.locate(key);
        let Some(position) = self.live_position(db, key, loc)? else {
            return Ok(false);
        };
        let shard = self.shard(loc.shard)?;
        let d = shard.db_or_create(db);
        d.slots
            .set_deadline(loc.local, position, stored_deadline(at));
        Ok(true)
    }

    /// After a write: re-estimates the key's memory and deletes it if it became an
    /// empty collection (Redis never keeps empty hashes, lists, sets or sorted sets).
    /// Returns whether it deleted the key.
    pub fn settle(&mut self, db: usize, key: &[u8]) -> OpResult<bool> {
        if db >= self.ks.databases {
            return Ok(false);
        }
        let loc = self.locate(key);
        let shard = self.shard(loc.shard)?;
        let Some(d) = shard.db_mut(db) else {
            return Ok(false);
        };
        let Some(entry) = d.slots.get_mut(loc.local, key) else {
            return Ok(false);
        };
        if entry.value.is_empty_collection() {
            shard.remove(db, loc.local, key);
            return Ok(true);
        }
        let now = entry.value.mem_usage() + key.len();
        let before = entry.set_accounted(now);
        shard.used_memory = shard.used_memory.saturating_sub(before) + now;
        Ok(false)
    }

    fn all_shards(&mut self) -> OpResult<impl Iterator<Item = &mut Shard> + use<'_, 'a>> {
        if !self.all {
            return Err(not_locked());
        }
        match &mut self.guards {
            Guards::Many(v) => Ok(v.iter_mut().map(|(_, g)| &mut **g)),
            _ => Err(not_locked()),
        }
    }

    /// Every live key of a database (needs all shards). Expired keys are skipped.
    pub fn keys(&mut self, db: usize) -> OpResult<Vec<Vec<u8>>> {
        self.check_db(db)?;
        let now = self.now_ms;
        let mut out = Vec::new();
        for shard in self.all_shards()? {
            if let Some(d) = shard.db(db) {
                for slot in d.slots.iter() {
                    out.extend(
                        slot.iter()
                            .filter(|(k, _)| !is_due(k.deadline(), now))
                            .map(|(k, _)| k.as_slice().to_vec()),
                    );
                }
            }
        }
        Ok(out)
    }

    /// Number of keys in a database (needs all shards).
    pub fn db_len(&mut self, db: usize) -> OpResult<usize> {
        self.check_db(db)?;
        Ok(self.all_shards()?.map(|s| s.db_len(db)).sum())
    }

    /// Deletes every key of a database (needs all shards).
    pub fn flush_db(&mut self, db: usize) -> OpResult<()> {
        self.check_db(db)?;
        for shard in self.all_shards()? {
            if let Some(d) = shard.dbs[db].take() {
                let freed: usize = d
                    .slots
                    .iter()
                    .flat_map(|s| s.values())
                    .map(|e| e.accounted as usize)
                    .sum();
                shard.used_memory = shard.used_memory.saturating_sub(freed);
            }
        }
        Ok(())
    }

    /// Swaps two databases (needs all shards).
    pub fn swap_db(&mut self, a: usize, b: usize) -> OpResult<()> {
        self.check_db(a)?;
        self.check_db(b)?;
        for shard in self.all_shards()? {
            shard.dbs.swap(a, b);
        }
        Ok(())
    }

    /// A uniformly chosen live key of a database, if any (needs all shards).
    pub fn random_key(&mut self, db: usize, rng: &mut impl rand::Rng) -> OpResult<Option<Vec<u8>>> {
        self.check_db(db)?;
        let now = self.now_ms;
        // Retry a few times when the pick is an expired key, as Redis does.
        for _ in 0..100 {
            let total = self.db_len(db)?;
            if total == 0 {
                return Ok(None);
            }
            let mut pick = rng.gen_range(0..total);
            let mut found = None;
            for shard in self.all_shards()? {
                let len = shard.db_len(db);
                if pick >= len {
                    pick -= len;
                    continue;
                }
                if let Some(d) = shard.db(db) {
                    for slot in d.slots.iter() {
                        if pick < slot.len() {
                            found = slot
                                .iter()
                                .nth(pick)
                                .map(|(k, _)| (k.as_slice().to_vec(), is_due(k.deadline(), now)));
                            break;
                        }
                        pick -= slot.len();
                    }
                }
                break;
            }
            match found {
                Some((key, false)) => return Ok(Some(key)),
                Some((key, true)) => {
                    self.remove(db, &key)?;
                }
                None => return Ok(None),
            }
        }
        Ok(None)
    }
}

const _: () = assert!(SHARDS.is_power_of_two());
