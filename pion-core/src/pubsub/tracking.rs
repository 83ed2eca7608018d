//! Client-side caching (`CLIENT TRACKING`): which clients read which keys, and the
//! invalidation messages sent when those keys change.
//!
//! In the default mode the table remembers, per key name (whatever the database, as
//! Redis does), the clients that read it; a write sends each of them one
//! `invalidate` message and forgets them. In `BCAST` mode a client hears about every
//! key written under its prefixes. RESP3 clients receive push messages; a RESP2
//! client redirects them to a connection subscribed to `__redis__:invalidate`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::{Hub, Mailbox};
use crate::client::{ClientRegistry, ClientShared};
use crate::reply::Reply;

/// `CLIENT LIST` / `CLIENT TRACKINGINFO` bits.
const ON: u32 = 1;
const BCAST: u32 = 1 << 1;
const OPTIN: u32 = 1 << 2;
const OPTOUT: u32 = 1 << 3;
const NOLOOP: u32 = 1 << 4;
const CACHING_YES: u32 = 1 << 5;
const CACHING_NO: u32 = 1 << 6;
const BROKEN_REDIR: u32 = 1 << 7;

/// The channel RESP2 redirect targets subscribe to.
pub const CHANNEL: &[u8] = b"__redis__:invalidate";

/// One tracking client's options.
#[derive(Clone)]
pub struct Tracker {
    shared: Arc<ClientShared>,
    /// Client that receives the invalidations (0: the client itself).
    pub redirect: u64,
    /// [`ON`] | … bits.
    flags: u32,
    /// `CLIENT CACHING` was just given: it applies to the next command.
    caching_fresh: bool,
    /// `BCAST` prefixes (none: every key).
    pub prefixes: Vec<Vec<u8>>,
}

/// The tracking table.
#[derive(Default)]
pub struct Table {
    keys: Mutex<HashMap<Vec<u8>, Vec<u64>>>,
    clients: Mutex<HashMap<u64, Tracker>>,
    active: AtomicUsize,
}

/// The options of `CLIENT TRACKING ON`.
#[derive(Debug, Default, Clone)]
pub struct TrackOptions {
    /// `REDIRECT id` (0: none).
    pub redirect: u64,
    /// `BCAST`.
    pub bcast: bool,
    /// `OPTIN`.
    pub optin: bool,
    /// `OPTOUT`.
    pub optout: bool,
    /// `NOLOOP`.
    pub noloop: bool,
    /// `PREFIX`es.
    pub prefixes: Vec<Vec<u8>>,
}

/// `CLIENT LIST` flags for a client's tracking state.
pub fn list_flags(m: &Mailbox) -> String {
    let f = m.tracking_flags.load(Ordering::Relaxed);
    let mut s = String::new();
    if f & ON != 0 {
        s.push('t');
    }
    if f & BROKEN_REDIR != 0 {
        s.push('R');
    }
    if f & BCAST != 0 {
        s.push('B');
    }
    s
}

impl Table {
    /// Whether any client tracks (the per-command fast path).
    #[inline]
    pub fn active(&self) -> bool {
        self.active.load(Ordering::Relaxed) > 0
    }

    /// Turns tracking on for a client (validated by the caller).
    pub fn enable(
        &self,
        shared: &Arc<ClientShared>,
        opts: TrackOptions,
    ) -> Result<(), &'static str> {
        let mut clients = self.clients.lock();
        let mut flags = ON;
        for (on, bit) in [
            (opts.bcast, BCAST),
            (opts.optin, OPTIN),
            (opts.optout, OPTOUT),
            (opts.noloop, NOLOOP),
        ] {
            if on {
                flags |= bit;
            }
        }
        if let Some(old) = clients.get(&shared.id) {
            if (old.flags & BCAST) != (flags & BCAST) {
                return Err("ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode.");
            }
        }
        let mut prefixes = clients
            .get(&shared.id)
            .map(|t| t.prefixes.clone())
            .unwrap_or_default();
        for p in opts.prefixes {
            if !prefixes.contains(&p) {
                prefixes.push(p);
            }
        }
        if clients
            .insert(
                shared.id,
                Tracker {
                    shared: Arc::clone(shared),
                    redirect: opts.redirect,
                    flags,
                    caching_fresh: false,
                    prefixes,
                },
            )
            .is_none()
        {
            self.active.fetch_add(1, Ordering::Relaxed);
        }
        shared.pubsub.tracking_flags.store(flags, Ordering::Relaxed);
        shared
            .pubsub
            .tracking_redirect
            .store(opts.redirect as i64, Ordering::Relaxed);
        Ok(())
    }

    /// Turns tracking off for a client (its keys are forgotten lazily).
    pub fn forget_client(&self, id: u64) {
        if let Some(t) = self.clients.lock().remove(&id) {
            self.active.fetch_sub(1, Ordering::Relaxed);
            t.shared.pubsub.tracking_flags.store(0, Ordering::Relaxed);
            t.shared
                .pubsub
                .tracking_redirect
                .store(0, Ordering::Relaxed);
        }
    }

    /// A client's options, if it tracks.
    pub fn get(&self, id: u64) -> Option<Tracker> {
        self.clients.lock().get(&id).cloned()
    }

    /// `CLIENT CACHING yes|no`.
    pub fn caching(&self, id: u64, yes: bool) -> Result<(), &'static str> {
        let mut clients = self.clients.lock();
        let Some(t) = clients.get_mut(&id) else {
            return Err("ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled");
        };
        if yes && t.flags & OPTIN == 0 {
            return Err(
                "ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.",
            );
        }
        if !yes && t.flags & OPTOUT == 0 {
            return Err(
                "ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.",
            );
        }
        t.flags |= if yes { CACHING_YES } else { CACHING_NO };
        t.caching_fresh = true;
        t.shared
            .pubsub
            .tracking_flags
            .store(t.flags, Ordering::Relaxed);
        Ok(())
    }

    /// After a command of a tracking client: remembers the keys a read command read
    /// (subject to `OPTIN`/`OPTOUT` and `CLIENT CACHING`), then lets a `CLIENT
    /// CACHING` given before this command lapse.
    pub fn after_command(&self, id: u64, read: bool, keys: &[&[u8]]) {
        let mut clients = self.clients.lock();
        let Some(t) = clients.get_mut(&id) else {
            return;
        };
        let wanted = read
            && t.flags & BCAST == 0
            && !(t.flags & OPTIN != 0 && t.flags & CACHING_YES == 0)
            && !(t.flags & OPTOUT != 0 && t.flags & CACHING_NO != 0);
        if t.caching_fresh {
            t.caching_fresh = false;
        } else if t.flags & (CACHING_YES | CACHING_NO) != 0 {
            t.flags &= !(CACHING_YES | CACHING_NO);
            t.shared
                .pubsub
                .tracking_flags
                .store(t.flags, Ordering::Relaxed);
        }
        drop(clients);
        if wanted && !keys.is_empty() {
            let mut table = self.keys.lock();
            for k in keys {
                let ids = table.entry(k.to_vec()).or_default();
                if !ids.contains(&id) {
                    ids.push(id);
                }
            }
        }
    }

    /// A key was written by client `writer` (0: by the server, as on expiry).
    pub fn invalidate(&self, registry: &ClientRegistry, hub: &Hub, key: &[u8], writer: u64) {
        let ids = self.keys.lock().remove(key).unwrap_or_default();
        let clients = self.clients.lock();
        for id in ids {
            if let Some(t) = clients.get(&id) {
                if !(t.flags & NOLOOP != 0 && id == writer) {
                    send(registry, hub, t, Some(key), writer);
                }
            }
        }
        for t in clients.values() {
            if t.flags & BCAST != 0
                && !(t.flags & NOLOOP != 0 && t.shared.id == writer)
                && (t.prefixes.is_empty() || t.prefixes.iter().any(|p| key.starts_with(p)))
            {
                send(registry, hub, t, Some(key), writer);
            }
        }
    }

    /// `FLUSHDB` / `FLUSHALL`: every tracking client is told to drop everything.
    pub fn flush(&self, registry: &ClientRegistry, hub: &Hub, writer: u64) {
        self.keys.lock().clear();
        let clients = self.clients.lock();
        for t in clients.values() {
            send(registry, hub, t, None, writer);
        }
    }
}

/// Sends one invalidation (of `key`, or of everything) for tracker `t`.
fn send(registry: &ClientRegistry, hub: &Hub, t: &Tracker, key: Option<&[u8]>, writer: u64) {
    let payload = match key {
        Some(k) => Reply::Array(vec![Reply::bulk(k)]),
        None => Reply::Null,
    };
    let size = key.map_or(0, <[u8]>::len) + 32;
    let target = if t.redirect != 0 {
        match registry.get(t.redirect) {
            Some(c) => c,
            None => {
                t.shared
                    .pubsub
                    .tracking_flags
                    .fetch_or(BROKEN_REDIR, Ordering::Relaxed);
                if t.shared.resp.load(Ordering::Relaxed) >= 3 {
                    let msg = Reply::Push(vec![
                        Reply::bulk("tracking-redir-broken"),
                        Reply::Integer(t.redirect as i64),
                    ]);
                    post(hub, &t.shared, msg, size, writer);
                }
                return;
            }
        }
    } else {
        Arc::clone(&t.shared)
    };
    let msg = if target.resp.load(Ordering::Relaxed) >= 3 {
        Reply::Push(vec![Reply::bulk("invalidate"), payload])
    } else if t.redirect != 0 && target.pubsub.subscribed() {
        Reply::Push(vec![Reply::bulk("message"), Reply::bulk(CHANNEL), payload])
    } else {
        return;
    };
    post(hub, &target, msg, size, writer);
}

/// Delivers to a client; to the writer itself only after its reply.
fn post(hub: &Hub, to: &ClientShared, msg: Reply, size: usize, writer: u64) {
    if to.id == writer {
        to.pubsub.push_after_reply(msg, size);
    } else {
        hub.deliver(to, msg, size);
    }
}

impl Tracker {
    /// The flag names `CLIENT TRACKINGINFO` lists.
    pub fn flag_names(&self) -> Vec<&'static str> {
        let mut out = vec!["on"];
        for (bit, name) in [
            (BCAST, "bcast"),
            (OPTIN, "optin"),
            (OPTOUT, "optout"),
            (CACHING_YES, "caching-yes"),
            (CACHING_NO, "caching-no"),
            (NOLOOP, "noloop"),
        ] {
            if self.flags & bit != 0 {
                out.push(name);
            }
        }
        if self.shared.pubsub.tracking_flags.load(Ordering::Relaxed) & BROKEN_REDIR != 0 {
            out.push("broken_redirect");
        }
        out
    }
}
