//! `WATCH`: which clients watch which keys, and the flag each watching client's `EXEC`
//! checks. A write to a watched key (by any client, on any thread), its expiry or a
//! flush of its database sets the flag of every client watching it, as Redis's
//! `touchWatchedKey` does.
//!
//! The registry costs writers one atomic load while nobody watches anything.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

/// A watching client's "a watched key changed" flag.
pub type DirtyFlag = Arc<AtomicBool>;

/// A key in a database.
type DbKey = (usize, Vec<u8>);

/// Whether a key is in its database's table, and live: what a flush or `SWAPDB` looks
/// at for each watched key, without removing a key past its time to live (as Redis
/// looks at its dictionary).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Presence {
    /// Not in the table.
    Absent,
    /// In the table, time to live not passed.
    Live,
    /// In the table, past its time to live, not removed yet.
    Stale,
}

impl Presence {
    /// The presence of `key` in `db` as stored now (no lazy expiry).
    pub(crate) fn of(ks: &mut crate::keyspace::Locked<'_>, db: usize, key: &[u8]) -> Presence {
        let now = ks.now_ms();
        match ks.stored(db, key) {
            Ok(Some((_, Some(at)))) if at <= now => Presence::Stale,
            Ok(Some(_)) => Presence::Live,
            _ => Presence::Absent,
        }
    }
}

/// One client watching one key.
struct Watcher {
    dirty: DirtyFlag,
    /// The key came under this watch already past its time to live (`SWAPDB` brought a
    /// stale key): its removal is not a change (Redis's `expired` flag of a watch).
    expired: bool,
}

/// Every watched key and its watchers.
#[derive(Default)]
pub struct WatchRegistry {
    /// Number of (key, watcher) pairs: writers skip the map while it is zero.
    watches: AtomicUsize,
    keys: Mutex<HashMap<DbKey, Vec<Watcher>>>,
}

impl WatchRegistry {
    /// Whether any key is watched at all.
    pub fn any(&self) -> bool {
        self.watches.load(Ordering::Acquire) > 0
    }

    /// Adds a watcher of `key` in `db` (`WATCH` removed the key first if it was past
    /// its time to live, so it starts as a plain watch).
    pub fn watch(&self, db: usize, key: &[u8], flag: &DirtyFlag) {
        let mut keys = self.keys.lock();
        let watchers = keys.entry((db, key.to_vec())).or_default();
        if !watchers.iter().any(|w| Arc::ptr_eq(&w.dirty, flag)) {
            watchers.push(Watcher {
                dirty: Arc::clone(flag),
                expired: false,
            });
            self.watches.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// Removes a watcher of `key` in `db`.
    pub fn unwatch(&self, db: usize, key: &[u8], flag: &DirtyFlag) {
        let mut keys = self.keys.lock();
        let k = (db, key.to_vec());
        if let Some(watchers) = keys.get_mut(&k) {
            let before = watchers.len();
            watchers.retain(|w| !Arc::ptr_eq(&w.dirty, flag));
            let removed = before - watchers.len();
            self.watches.fetch_sub(removed, Ordering::AcqRel);
            if watchers.is_empty() {
                keys.remove(&k);
            }
        }
    }

    /// Whether `key` in `db` has a watcher.
    pub fn is_watched(&self, db: usize, key: &[u8]) -> bool {
        self.any() && self.keys.lock().contains_key(&(db, key.to_vec()))
    }

    /// A write or a removal changed `key` in `db` (`present`: whether it is still in
    /// the table): every client watching it will fail its `EXEC`, except one that
    /// watched it already stale and now sees it removed.
    pub fn touch(&self, db: usize, key: &[u8], present: bool) {
        if !self.any() {
            return;
        }
        if let Some(watchers) = self.keys.lock().get_mut(&(db, key.to_vec())) {
            for w in watchers {
                if std::mem::take(&mut w.expired) && !present {
                    continue;
                }
                w.dirty.store(true, Ordering::Release);
            }
        }
    }

    /// A flush or `SWAPDB` replaced the whole of `db`, where `key` was `before` and is
    /// now `after`; Redis's rules: a stale key that disappears, or stays stale, or
    /// arrives where there was none, is no change (the last flags the watch).
    pub fn replaced(&self, db: usize, key: &[u8], before: Presence, after: Presence) {
        if before == Presence::Absent && after == Presence::Absent {
            return;
        }
        if let Some(watchers) = self.keys.lock().get_mut(&(db, key.to_vec())) {
            for w in watchers {
                if w.expired {
                    match after {
                        Presence::Absent => {
                            w.expired = false;
                            continue;
                        }
                        Presence::Stale => continue,
                        Presence::Live => {}
                    }
                } else if before == Presence::Absent && after == Presence::Stale {
                    w.expired = true;
                    continue;
                }
                w.dirty.store(true, Ordering::Release);
            }
        }
    }

    /// The watched keys, as (database, key) pairs.
    pub fn watched_keys(&self) -> Vec<(usize, Vec<u8>)> {
        if !self.any() {
            return Vec::new();
        }
        self.keys.lock().keys().cloned().collect()
    }
}

/// One client's watches (forgotten when the client goes away).
#[derive(Default)]
pub struct ClientWatches {
    /// Set when a watched key changed.
    pub dirty: DirtyFlag,
    /// The keys watched, as (database, key).
    pub keys: Vec<(usize, Vec<u8>)>,
    registry: Option<Arc<WatchRegistry>>,
}

impl ClientWatches {
    /// Watches one more key (a key already watched is not added twice).
    pub fn add(&mut self, registry: &Arc<WatchRegistry>, db: usize, key: &[u8]) {
        if self.keys.iter().any(|(d, k)| *d == db && k == key) {
            return;
        }
        registry.watch(db, key, &self.dirty);
        self.registry = Some(Arc::clone(registry));
        self.keys.push((db, key.to_vec()));
    }

    /// Forgets every watch (`UNWATCH`, `EXEC`, `DISCARD`, disconnect).
    pub fn clear(&mut self) {
        if let Some(registry) = &self.registry {
            for (db, key) in self.keys.drain(..) {
                registry.unwatch(db, &key, &self.dirty);
            }
        }
        self.keys.clear();
        self.dirty.store(false, Ordering::Release);
    }

    /// Whether a watched key changed since it was watched.
    pub fn is_dirty(&self) -> bool {
        self.dirty.load(Ordering::Acquire)
    }
}

impl Drop for ClientWatches {
    fn drop(&mut self) {
        self.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn touch_flags_only_watchers_of_that_key() {
        let reg = Arc::new(WatchRegistry::default());
        let mut a = ClientWatches::default();
        let mut b = ClientWatches::default();
        a.add(&reg, 0, b"k");
        a.add(&reg, 0, b"k");
        b.add(&reg, 1, b"k");
        reg.touch(0, b"other", true);
        assert!(!a.is_dirty() && !b.is_dirty());
        reg.touch(0, b"k", true);
        assert!(a.is_dirty() && !b.is_dirty());
        a.clear();
        assert!(!a.is_dirty());
        reg.touch(0, b"k", false);
        assert!(!a.is_dirty());
        drop(b);
        assert!(!reg.any());
        assert!(reg.watched_keys().is_empty());
    }
}
