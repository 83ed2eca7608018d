//! Connections the engine makes to other servers: `MIGRATE`'s link to its target.
//!
//! The engine opens no socket itself. Whoever runs it hands in a [`Dialer`]
//! (`pion-server` dials TCP; an embedder may hand in its own, or none, and `MIGRATE`
//! then fails to connect). What is dialed is kept in a [`LinkCache`] by `host:port`,
//! as Redis keeps its migration sockets: a link unused for ten seconds is closed, at
//! most 64 are kept, and a command takes a link out while it uses it, so two commands
//! never share one.

use std::collections::HashMap;
use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use parking_lot::Mutex;

/// A connection to another server, with a timeout on each read and write.
pub trait Link: io::Read + io::Write + Send {
    /// Sets the time a read or a write may wait.
    fn set_timeout(&mut self, timeout: Duration) -> io::Result<()>;
}

/// Opens connections to other servers.
pub trait Dialer: Send + Sync {
    /// Connects to `host:port` within `timeout`.
    fn dial(&self, host: &str, port: u16, timeout: Duration) -> io::Result<Box<dyn Link>>;
}

/// How long an unused link stays open (Redis's `MIGRATE_SOCKET_CACHE_TTL`).
pub const IDLE_CLOSE_MS: i64 = 10_000;
/// The most links kept (Redis's `MIGRATE_SOCKET_CACHE_ITEMS`).
pub const MAX_LINKS: usize = 64;

/// A link and what the last command left of it.
pub struct Cached {
    /// The connection.
    pub link: Box<dyn Link>,
    /// The database the target has selected for it (`None`: unknown).
    pub db: Option<i64>,
    /// When it was last used (Unix ms).
    pub last_use_ms: i64,
    /// Bytes read past the last reply.
    pub pending: Vec<u8>,
}

/// The links kept open, by `host:port`.
#[derive(Default)]
pub struct LinkCache {
    links: Mutex<HashMap<String, Cached>>,
    /// How many are kept (and in use): read by `INFO` without the lock.
    count: AtomicUsize,
    /// Links taken out by a running command.
    in_use: AtomicUsize,
}

impl LinkCache {
    /// Takes the link to `name` out for a command's use, if one is kept.
    pub fn take(&self, name: &str, now_ms: i64) -> Option<Cached> {
        let taken = self.links.lock().remove(name);
        if let Some(mut c) = taken {
            self.in_use.fetch_add(1, Ordering::Relaxed);
            c.last_use_ms = now_ms;
            return Some(c);
        }
        None
    }

    /// Marks a freshly dialed link as in use.
    pub fn dialed(&self) {
        self.in_use.fetch_add(1, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
    }

    /// Gives a link back after use (`keep`: it is still good). A link kept while
    /// another to the same place came back first replaces it; past [`MAX_LINKS`], one
    /// kept link is closed.
    pub fn give_back(&self, name: String, cached: Option<Cached>) {
        self.in_use.fetch_sub(1, Ordering::Relaxed);
        let mut links = self.links.lock();
        match cached {
            Some(c) => {
                if links.insert(name, c).is_some() {
                    self.count.fetch_sub(1, Ordering::Relaxed);
                }
                if links.len() > MAX_LINKS {
                    if let Some(victim) = links.keys().next().cloned() {
                        links.remove(&victim);
                        self.count.fetch_sub(1, Ordering::Relaxed);
                    }
                }
            }
            None => {
                self.count.fetch_sub(1, Ordering::Relaxed);
            }
        }
    }

    /// Closes the links unused for [`IDLE_CLOSE_MS`] (the engine's periodic work).
    pub fn close_idle(&self, now_ms: i64) {
        if self.count.load(Ordering::Relaxed) == self.in_use.load(Ordering::Relaxed) {
            return;
        }
        let mut links = self.links.lock();
        let before = links.len();
        links.retain(|_, c| now_ms - c.last_use_ms <= IDLE_CLOSE_MS);
        let closed = before - links.len();
        self.count.fetch_sub(closed, Ordering::Relaxed);
    }

    /// Links kept open (`INFO`'s `migrate_cached_sockets`).
    pub fn len(&self) -> usize {
        self.count.load(Ordering::Relaxed)
    }

    /// Whether no link is open.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Null;
    impl io::Read for Null {
        fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
            Ok(0)
        }
    }
    impl io::Write for Null {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    impl Link for Null {
        fn set_timeout(&mut self, _: Duration) -> io::Result<()> {
            Ok(())
        }
    }

    fn cached(at: i64) -> Cached {
        Cached {
            link: Box::new(Null),
            db: Some(0),
            last_use_ms: at,
            pending: Vec::new(),
        }
    }

    #[test]
    fn links_are_kept_reused_and_closed_when_idle() {
        let cache = LinkCache::default();
        assert!(cache.take("h:1", 0).is_none());
        cache.dialed();
        cache.give_back("h:1".into(), Some(cached(0)));
        assert_eq!(cache.len(), 1);
        let c = cache.take("h:1", 5_000).expect("kept");
        assert_eq!(cache.len(), 1);
        cache.give_back("h:1".into(), Some(c));
        cache.close_idle(14_000);
        assert_eq!(cache.len(), 1);
        cache.close_idle(15_001);
        assert_eq!(cache.len(), 0);
        // A link that failed is dropped.
        cache.dialed();
        cache.give_back("h:2".into(), None);
        assert!(cache.is_empty());
    }
}
