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

use crate::command::CommandSpec;
use crate::exec::Ctx;

/// A watching client's "a watched key changed" flag.
pub type DirtyFlag = Arc<AtomicBool>;

/// A key in a database.
type DbKey = (usize, Vec<u8>);

/// Every watched key and its watchers.
#[derive(Default)]
pub struct WatchRegistry {
    /// Number of (key, watcher) pairs: writers skip the map while it is zero.
    watches: AtomicUsize,
    keys: Mutex<HashMap<DbKey, Vec<DirtyFlag>>>,
}

impl WatchRegistry {
    /// Whether any key is watched at all.
    pub fn any(&self) -> bool {
        self.watches.load(Ordering::Acquire) > 0
    }

    /// Adds a watcher of `key` in `db`.
    pub fn watch(&self, db: usize, key: &[u8], flag: &DirtyFlag) {
        let mut keys = self.keys.lock();
        let watchers = keys.entry((db, key.to_vec())).or_default();
        if !watchers.iter().any(|f| Arc::ptr_eq(f, flag)) {
            watchers.push(Arc::clone(flag));
            self.watches.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// Removes a watcher of `key` in `db`.
    pub fn unwatch(&self, db: usize, key: &[u8], flag: &DirtyFlag) {
        let mut keys = self.keys.lock();
        let k = (db, key.to_vec());
        if let Some(watchers) = keys.get_mut(&k) {
            let before = watchers.len();
            watchers.retain(|f| !Arc::ptr_eq(f, flag));
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

    /// A write changed `key` in `db`: every client watching it will fail its `EXEC`.
    pub fn touch(&self, db: usize, key: &[u8]) {
        if !self.any() {
            return;
        }
        if let Some(watchers) = self.keys.lock().get(&(db, key.to_vec())) {
            for f in watchers {
                f.store(true, Ordering::Release);
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

/// The command's watched keys that exist before a write runs (all watched keys for a
/// command over the whole keyspace, such as `FLUSHALL`): a write touches a key that
/// existed before or exists after it, never one that stays absent (`DEL` of a
/// missing key changes nothing).
pub(crate) fn existing_watched(
    ctx: &mut Ctx<'_>,
    spec: &CommandSpec,
    argv: &[Vec<u8>],
    keys: &[usize],
) -> Vec<(usize, Vec<u8>)> {
    let registry = ctx.engine.watches();
    if !registry.any() {
        return Vec::new();
    }
    let candidates: Vec<(usize, Vec<u8>)> = if spec.whole_keyspace {
        registry.watched_keys()
    } else {
        let db = ctx.db();
        keys.iter()
            .filter(|&&i| registry.is_watched(db, &argv[i]))
            .map(|&i| (db, argv[i].clone()))
            .collect()
    };
    candidates
        .into_iter()
        .filter(|(db, k)| matches!(ctx.ks.peek(*db, k), Ok(Some(_))))
        .collect()
}

/// After a write that changed something: marks the watchers of every key it wrote
/// (not those it reported unmodified).
pub(crate) fn touch_written(
    ctx: &mut Ctx<'_>,
    spec: &CommandSpec,
    argv: &[Vec<u8>],
    keys: &[usize],
    existed: &[(usize, Vec<u8>)],
) {
    let registry = Arc::clone(ctx.engine.watches());
    if !registry.any() {
        return;
    }
    let db = ctx.db();
    let unmodified =
        |kdb: usize, k: &[u8]| kdb == db && ctx.unmodified_keys.iter().any(|&i| argv[i] == k);
    for (kdb, k) in existed {
        if !unmodified(*kdb, k) {
            registry.touch(*kdb, k);
        }
    }
    let now_present: Vec<(usize, Vec<u8>)> = if spec.whole_keyspace {
        registry.watched_keys()
    } else {
        keys.iter()
            .filter(|i| !ctx.unmodified_keys.contains(i))
            .map(|&i| (db, argv[i].clone()))
            .collect()
    };
    for (db, k) in now_present {
        if matches!(ctx.ks.peek(db, &k), Ok(Some(_))) {
            registry.touch(db, &k);
        }
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
        reg.touch(0, b"other");
        assert!(!a.is_dirty() && !b.is_dirty());
        reg.touch(0, b"k");
        assert!(a.is_dirty() && !b.is_dirty());
        a.clear();
        assert!(!a.is_dirty());
        reg.touch(0, b"k");
        assert!(!a.is_dirty());
        drop(b);
        assert!(!reg.any());
        assert!(reg.watched_keys().is_empty());
    }
}
