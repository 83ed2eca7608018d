//! The keyspace: logical databases (16 by default) of keys to [`Value`](crate::value::Value)s, shared by every thread.
//!
//! Keys hash to the 16,384 cluster slots ([`key_slot`]); a fixed number of shards each
//! own a stripe of slots behind their own mutex. A command locks the shards of the keys
//! it declares in the command table, in ascending shard order, so any number of
//! executing threads see one coherent keyspace and multi-key commands are atomic.
//!
//! Each slot is its own small hash table: resizing never stalls the whole keyspace, and
//! `SCAN` cursors walk slots, which gives Redis's guarantee (every key present for the
//! whole iteration is returned) without Redis's reverse-binary cursor trick.

mod cut;
pub mod dump;
mod dump_stream;
mod evict;
mod expiry;
mod key;
mod locked;
mod pairs;
mod positions;
mod shard;
mod slot;
mod table;

pub use cut::DumpedShard;
pub use evict::Candidate;
pub use key::StoredKey;
pub use locked::Locked;
pub use shard::{DetachedEntry, Entry, LfuParams};
pub use slot::{crc16, key_slot, SLOTS};

use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;
use smallvec::SmallVec;

use shard::Shard;

/// Number of lock shards; a power of two that divides [`SLOTS`].
pub const SHARDS: usize = 64;

/// Slots owned by each shard.
const SLOTS_PER_SHARD: usize = SLOTS / SHARDS;

/// Counters the keyspace keeps for `INFO stats`.
#[derive(Debug)]
pub struct KeyspaceStats {
    /// Keys removed because their time to live passed.
    pub expired_keys: AtomicU64,
    /// Key lookups by read commands, successful ([`HITS`]) and failed ([`MISSES`]):
    /// nearly every command adds to one, so they are striped by thread.
    lookups: crate::util::striped::StripedCounters,
}

const HITS: usize = 0;
const MISSES: usize = 1;

impl Default for KeyspaceStats {
    fn default() -> KeyspaceStats {
        KeyspaceStats {
            expired_keys: AtomicU64::new(0),
            lookups: crate::util::striped::StripedCounters::new(2),
        }
    }
}

impl KeyspaceStats {
    /// Counts a read command's key lookup: a hit when `found`, else a miss.
    #[inline]
    pub fn count_lookup(&self, found: bool) {
        self.lookups.add(if found { HITS } else { MISSES }, 1);
    }

    /// Successful key lookups by read commands (`keyspace_hits`).
    pub fn keyspace_hits(&self) -> u64 {
        self.lookups.get(HITS)
    }

    /// Failed key lookups by read commands (`keyspace_misses`).
    pub fn keyspace_misses(&self) -> u64 {
        self.lookups.get(MISSES)
    }

    /// Sets every counter back to zero (`CONFIG RESETSTAT`).
    pub fn reset(&self) {
        self.expired_keys.store(0, Ordering::Relaxed);
        self.lookups.reset();
    }
}

/// Called with (database, key) for every key removed because its time to live passed,
/// while the key's shard is still locked (search indexes drop the key's document).
pub type ExpiryListener = Box<dyn Fn(usize, &[u8]) + Send + Sync>;

/// The shared keyspace.
pub struct Keyspace {
    shards: Box<[Mutex<Shard>]>,
    databases: usize,
    stats: KeyspaceStats,
    cut: cut::Cut,
    expiry_listeners: parking_lot::RwLock<Vec<ExpiryListener>>,
    /// Told of every key a write creates, while `creations_wanted` (the `new`
    /// keyspace event is on): off, creating a key costs one relaxed load more.
    creation_listener: parking_lot::RwLock<Option<ExpiryListener>>,
    creations_wanted: std::sync::atomic::AtomicBool,
    /// `lfu-log-factor` (high half) and `lfu-decay-time` (low half).
    lfu: AtomicU64,
    /// Until when (Unix ms) keys past their time to live are kept (a `CLIENT PAUSE`):
    /// they read as missing but are neither removed nor counted.
    expiry_held_until: std::sync::atomic::AtomicI64,
}

/// Which shards a command must hold while it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockSet {
    /// No keyspace access.
    None,
    /// One shard (a command with one key: most of them).
    Shard(usize),
    /// The shards of these keys (inline for the usual handful).
    Keys(SmallVec<[usize; 4]>),
    /// Every shard (commands that read or write the whole keyspace).
    All,
}

/// Where a key lives: its shard and its slot's index within that shard.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Location {
    /// Lock shard.
    pub shard: usize,
    /// Index of the key's slot within the shard.
    pub local: usize,
}

fn pack_lfu(p: LfuParams) -> u64 {
    (u64::from(p.log_factor) << 32) | u64::from(p.decay_minutes)
}

/// Where a key lives.
pub fn locate(key: &[u8]) -> Location {
    let slot = key_slot(key);
    Location {
        shard: slot % SHARDS,
        local: slot / SHARDS,
    }
}

/// The shard index a key belongs to.
pub fn shard_of(key: &[u8]) -> usize {
    locate(key).shard
}

impl Keyspace {
    /// An empty keyspace with `databases` logical databases.
    pub fn new(databases: usize) -> Keyspace {
        let shards = (0..SHARDS)
            .map(|_| Mutex::new(Shard::new(databases)))
            .collect();
        Keyspace {
            shards,
            databases,
            stats: KeyspaceStats::default(),
            cut: cut::Cut::new(),
            expiry_listeners: parking_lot::RwLock::new(Vec::new()),
            creation_listener: parking_lot::RwLock::new(None),
            creations_wanted: std::sync::atomic::AtomicBool::new(false),
            lfu: AtomicU64::new(pack_lfu(LfuParams::default())),
            expiry_held_until: std::sync::atomic::AtomicI64::new(0),
        }
    }

    /// Keeps expired keys until `until_ms` (0: no longer), for `CLIENT PAUSE`.
    pub fn hold_expiry_until(&self, until_ms: i64) {
        self.expiry_held_until.store(until_ms, Ordering::Relaxed);
    }

    /// Whether expired keys are kept at `now_ms`.
    pub fn expiry_held(&self, now_ms: i64) -> bool {
        now_ms < self.expiry_held_until.load(Ordering::Relaxed)
    }

    /// The LFU tuning accesses and `OBJECT FREQ` use.
    pub fn lfu_params(&self) -> LfuParams {
        let v = self.lfu.load(Ordering::Relaxed);
        LfuParams {
            log_factor: (v >> 32) as u32,
            decay_minutes: v as u32,
        }
    }

    /// Changes the LFU tuning (`CONFIG SET lfu-log-factor` / `lfu-decay-time`).
    pub fn set_lfu_params(&self, params: LfuParams) {
        self.lfu.store(pack_lfu(params), Ordering::Relaxed);
    }

    /// Adds a listener told about expired keys (search indexes, keyspace
    /// notifications, client-side caching); each is called in the order added.
    pub fn set_expiry_listener(&self, listener: ExpiryListener) {
        self.expiry_listeners.write().push(listener);
    }

    /// Sets who is told of created keys (database, key), and whether it wants them now.
    pub fn set_creation_listener(&self, listener: ExpiryListener) {
        *self.creation_listener.write() = Some(listener);
    }

    /// Turns telling the creation listener on or off.
    pub fn want_creations(&self, on: bool) {
        self.creations_wanted.store(on, Ordering::Relaxed);
    }

    /// Tells the creation listener that a write created a key (call holding the key's
    /// shard).
    pub(crate) fn created(&self, db: usize, key: &[u8]) {
        if self.creations_wanted.load(Ordering::Relaxed) {
            if let Some(listen) = self.creation_listener.read().as_ref() {
                listen(db, key);
            }
        }
    }

    /// Tells the listeners that a key expired (call holding the key's shard).
    pub(crate) fn expired(&self, db: usize, key: &[u8]) {
        for listen in self.expiry_listeners.read().iter() {
            listen(db, key);
        }
    }

    /// Number of logical databases.
    pub fn databases(&self) -> usize {
        self.databases
    }

    /// The keyspace counters.
    pub fn stats(&self) -> &KeyspaceStats {
        &self.stats
    }

    /// Locks one shard for use. A snapshot in progress captures the shard first if it
    /// has not yet (see [`cut`]).
    fn lock_shard(&self, idx: usize) -> parking_lot::MutexGuard<'_, Shard> {
        let guard = self.shards[idx].lock();
        self.cut.before_use(idx, &guard);
        guard
    }

    /// Begins a snapshot: call while holding every shard (a [`LockSet::All`] lock), so
    /// the snapshot is the state at this instant.
    pub(crate) fn begin_cut(&self, _all: &Locked<'_>) {
        self.cut.begin();
    }

    /// Captures shard `idx` if the snapshot has not yet, and returns the shards captured
    /// since the last call.
    pub(crate) fn capture(&self, idx: usize) -> Vec<DumpedShard> {
        drop(self.lock_shard(idx));
        self.cut.take()
    }

    /// Ends the snapshot in progress.
    pub(crate) fn end_cut(&self) {
        self.cut.end();
    }

    /// Locks the shards a command needs, in ascending order (deadlock-free).
    pub fn lock(&self, set: &LockSet, now_ms: i64) -> Locked<'_> {
        Locked::acquire(self, set, now_ms)
    }

    /// Locks the shards of the given keys.
    pub fn lock_keys<K: AsRef<[u8]>>(&self, keys: &[K], now_ms: i64) -> Locked<'_> {
        let shards = keys.iter().map(|k| shard_of(k.as_ref())).collect();
        self.lock(&LockSet::Keys(shards), now_ms)
    }

    /// Number of keys in a database (expired keys not yet reclaimed included, as in Redis).
    pub fn db_size(&self, db: usize) -> usize {
        self.shards.iter().map(|s| s.lock().db_len(db)).sum()
    }

    /// Number of keys, number of keys with a time to live, and their average time to
    /// live in milliseconds at `now_ms` (0 when none), for one database.
    pub fn db_counts(&self, db: usize, now_ms: i64) -> (usize, usize, i64) {
        let (keys, volatile, sum) = self.shards.iter().fold((0, 0, 0i128), |(k, e, sum), s| {
            let s = s.lock();
            (
                k + s.db_len(db),
                e + s.db_expires(db),
                sum + s.db_deadline_sum(db),
            )
        });
        let avg_ttl = if volatile == 0 {
            0
        } else {
            let avg_deadline = sum / volatile as i128;
            i64::try_from(avg_deadline - i128::from(now_ms))
                .unwrap_or(0)
                .max(0)
        };
        (keys, volatile, avg_ttl)
    }

    /// The keyspace's estimate of the bytes its keys and values take (each key's
    /// figure is refreshed after every write to it; `MEMORY USAGE` computes the same).
    pub fn estimated_memory(&self) -> usize {
        self.shards.iter().map(|s| s.lock().used_memory()).sum()
    }

    /// One step of a `SCAN`-style walk over the slots of a database. `cursor` 0 starts;
    /// the returned cursor is 0 when the walk is complete. Visits whole slots until at
    /// least `count` keys were seen, and calls `visit` for each live key (with its
    /// entry and deadline).
    pub fn scan(
        &self,
        db: usize,
        cursor: u64,
        count: usize,
        now_ms: i64,
        mut visit: impl FnMut(&[u8], &shard::Entry, Option<i64>),
    ) -> u64 {
        let total = SLOTS as u64;
        let mut pos = cursor;
        if pos >= total {
            return 0;
        }
        let mut seen = 0usize;
        while pos < total && seen < count.max(1) {
            let shard_idx = (pos as usize) / SLOTS_PER_SHARD;
            let mut shard = self.shards[shard_idx].lock();
            while pos < total
                && (pos as usize) / SLOTS_PER_SHARD == shard_idx
                && seen < count.max(1)
            {
                let local = (pos as usize) % SLOTS_PER_SHARD;
                seen += shard.visit_slot(db, local, now_ms, &mut visit);
                pos += 1;
            }
        }
        if pos >= total {
            0
        } else {
            pos
        }
    }

    /// Removes up to `budget` keys per shard whose time to live has passed; returns how
    /// many were removed. This is the active half of expiry (reads expire lazily too).
    /// `after_shard` is called after each shard, while that shard is still locked: what
    /// it records is in place before any client can see the shard's keys gone.
    pub fn expire_cycle(&self, now_ms: i64, budget: usize, after_shard: &mut dyn FnMut()) -> usize {
        if self.expiry_held(now_ms) {
            return 0;
        }
        let mut removed = 0;
        for i in 0..SHARDS {
            let mut shard = self.lock_shard(i);
            removed += shard.expire_due(now_ms, budget, &mut |db, key| self.expired(db, key));
            after_shard();
            drop(shard);
        }
        if removed > 0 {
            self.stats
                .expired_keys
                .fetch_add(removed as u64, Ordering::Relaxed);
        }
        removed
    }
}
