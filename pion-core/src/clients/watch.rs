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

use crate::command::ctx::Ctx;
use crate::command::CommandSpec;

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
            Ok(Some(e)) if e.is_expired(now) => Presence::Stale,
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

/// The databases a command over the whole keyspace replaces: `FLUSHALL` every one,
/// `FLUSHDB` the selected one, `SWAPDB` its two.
fn replaced_dbs(ctx: &Ctx<'_>, spec: &CommandSpec, argv: &[Vec<u8>]) -> Vec<usize> {
    match spec.name {
        "flushall" => (0..ctx.engine.keyspace().databases()).collect(),
        "swapdb" => argv[1..3]
            .iter()
            .filter_map(|a| crate::util::num::parse_i64(a))
            .filter_map(|d| usize::try_from(d).ok())
            .collect(),
        _ => vec![ctx.db()],
    }
}

/// What a write's watchers need from before it runs: for a command over the whole
/// keyspace, every watched key of the databases it replaces with its presence there
/// (nothing removed on the way); otherwise the command's watched keys that exist (a
/// write touches a key that existed before or exists after it, never one that stays
/// absent: `DEL` of a missing key changes nothing).
pub(crate) fn existing_watched(
    ctx: &mut Ctx<'_>,
    spec: &CommandSpec,
    argv: &[Vec<u8>],
    keys: &[usize],
) -> Vec<(usize, Vec<u8>, Presence)> {
    let registry = ctx.engine.watches();
    if !registry.any() {
        return Vec::new();
    }
    if spec.whole_keyspace {
        let dbs = replaced_dbs(ctx, spec, argv);
        return registry
            .watched_keys()
            .into_iter()
            .filter(|(db, _)| dbs.contains(db))
            .map(|(db, k)| {
                let before = Presence::of(&mut ctx.ks, db, &k);
                (db, k, before)
            })
            .collect();
    }
    let db = ctx.db();
    keys.iter()
        .filter(|&&i| registry.is_watched(db, &argv[i]))
        .filter(|&&i| matches!(ctx.ks.peek(db, &argv[i]), Ok(Some(_))))
        .map(|&i| (db, argv[i].clone(), Presence::Live))
        .collect()
}

/// After a write that changed something: marks the watchers of every key it wrote
/// (not those it reported unmodified), as [`WatchRegistry::touch`] and
/// [`WatchRegistry::replaced`] say.
pub(crate) fn touch_written(
    ctx: &mut Ctx<'_>,
    spec: &CommandSpec,
    argv: &[Vec<u8>],
    keys: &[usize],
    before: &[(usize, Vec<u8>, Presence)],
) {
    let registry = Arc::clone(ctx.engine.watches());
    if !registry.any() {
        return;
    }
    if spec.whole_keyspace {
        for (db, k, was) in before {
            let now = Presence::of(&mut ctx.ks, *db, k);
            registry.replaced(*db, k, *was, now);
        }
        return;
    }
    let db = ctx.db();
    let unmodified = |k: &[u8]| ctx.unmodified_keys.iter().any(|&i| argv[i] == k);
    let mut written: Vec<&[u8]> = before
        .iter()
        .map(|(_, k, _)| k.as_slice())
        .filter(|k| !unmodified(k))
        .collect();
    for &i in keys {
        if !ctx.unmodified_keys.contains(&i)
            && !written.contains(&argv[i].as_slice())
            && matches!(ctx.ks.peek(db, &argv[i]), Ok(Some(_)))
        {
            written.push(&argv[i]);
        }
    }
    for k in written {
        let present = Presence::of(&mut ctx.ks, db, k) != Presence::Absent;
        registry.touch(db, k, present);
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
