//! Client-side caching (`CLIENT TRACKING`): which clients read which keys, and the
//! invalidation messages sent when those keys change.
//!
//! In the default mode the table remembers, per key name (whatever the database, as
//! Redis does), the clients that read it; a write sends each of them one
//! `invalidate` message and forgets them. In `BCAST` mode a client hears about every
//! key written under its prefixes: the keys a command writes (a whole transaction or
//! script included) are gathered, and each prefix gets one message listing them in
//! order, as Redis gathers them over an event-loop pass. RESP3 clients receive push
//! messages; a RESP2 client redirects them to a connection subscribed to
//! `__redis__:invalidate`.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::Hub;
use crate::clients::{ClientRegistry, ClientShared};
use crate::reply::Reply;

/// `CLIENT LIST` / `CLIENT TRACKINGINFO` bits.
use crate::clients::mailbox::tracking_bits::*;

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
    /// `BCAST` prefixes, in the order given; the empty prefix for a client that
    /// turned `BCAST` on without one (every key), as Redis registers it.
    pub prefixes: Vec<Vec<u8>>,
}

/// The tracking table.
#[derive(Default)]
pub struct Table {
    keys: Mutex<HashMap<Vec<u8>, Vec<u64>>>,
    clients: Mutex<HashMap<u64, Tracker>>,
    active: AtomicUsize,
    /// How many of the tracking clients are in `BCAST` mode.
    broadcasting: AtomicUsize,
    /// Consecutive passes of [`Table::limit_keys`] that ended still over the limit:
    /// each does a hundred evictions more than the one before, as in Redis.
    over_limit_passes: AtomicU64,
}

/// The table's counters for `INFO`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableStats {
    /// Clients with tracking on (`tracking_clients`).
    pub clients: usize,
    /// Keys remembered in the default mode (`tracking_total_keys`).
    pub keys: usize,
    /// (key, client) pairs remembered (`tracking_total_items`).
    pub items: usize,
    /// Distinct `BCAST` prefixes, the empty one of a client without prefixes
    /// included (`tracking_total_prefixes`).
    pub prefixes: usize,
}

/// Keys written under `BCAST` tracking, each with the client that wrote it (0: the
/// server).
type Written = Vec<(Vec<u8>, u64)>;

thread_local! {
    /// What was written since this thread opened a batch; `None` when none is open.
    static BATCH: RefCell<Option<Written>> = const { RefCell::new(None) };
}

thread_local! {
    /// The client whose command this thread runs (0: none).
    static EXECUTING: Cell<u64> = const { Cell::new(0) };
}

/// Marks the client whose command this thread runs, until dropped: invalidations for
/// it (a key it read expiring under its own command, say) follow its reply instead of
/// coming before it, as Redis holds them for the executing client.
pub struct Executing {
    /// This mark is the thread's outermost (a nested command keeps the outer one).
    outermost: bool,
}

impl Drop for Executing {
    fn drop(&mut self) {
        if self.outermost {
            EXECUTING.with(|e| e.set(0));
        }
    }
}

/// Work that runs before the command of the executing client (eviction), until
/// dropped: its invalidations reach that client before the command's reply, as
/// Redis evicts before it calls the command.
pub struct BeforeCommand {
    /// The executing client's mark, put back when this ends.
    held: u64,
}

impl Drop for BeforeCommand {
    fn drop(&mut self) {
        EXECUTING.with(|e| e.set(self.held));
    }
}

/// An open batch of `BCAST` invalidations: closing it (dropping it, so a command that
/// fails halfway still closes it) sends them, one message per prefix.
pub struct Batch<'a> {
    registry: &'a ClientRegistry,
    hub: &'a Hub,
    /// The client whose command the batch covers (0: background work): messages to
    /// it follow its reply.
    owner: u64,
}

impl Drop for Batch<'_> {
    fn drop(&mut self) {
        let keys = BATCH.with(|b| b.borrow_mut().take()).unwrap_or_default();
        if !keys.is_empty() {
            self.hub
                .tracking
                .broadcast(self.registry, self.hub, &keys, self.owner);
        }
    }
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

impl Table {
    /// Whether any client tracks (the per-command fast path).
    #[inline]
    pub fn active(&self) -> bool {
        self.active.load(Ordering::Relaxed) > 0
    }

    /// Marks `id` as the client whose command this thread runs (see [`Executing`]).
    pub fn executing(&self, id: u64) -> Executing {
        EXECUTING.with(|e| {
            let outermost = e.get() == 0;
            if outermost {
                e.set(id);
            }
            Executing { outermost }
        })
    }

    /// Lifts the executing client's mark while work that precedes its command runs
    /// (see [`BeforeCommand`]).
    pub fn before_command(&self) -> BeforeCommand {
        BeforeCommand {
            held: EXECUTING.with(|e| e.replace(0)),
        }
    }

    /// Opens a batch of `BCAST` invalidations on this thread for the command of
    /// `owner` (`None` when no client broadcasts, or when a batch is already open:
    /// the command joins it, as a command a transaction runs does).
    pub fn open_batch<'a>(
        &self,
        registry: &'a ClientRegistry,
        hub: &'a Hub,
        owner: u64,
    ) -> Option<Batch<'a>> {
        if self.broadcasting.load(Ordering::Relaxed) == 0 {
            return None;
        }
        BATCH.with(|b| {
            let mut b = b.borrow_mut();
            if b.is_some() {
                return None;
            }
            *b = Some(Vec::new());
            Some(Batch {
                registry,
                hub,
                owner,
            })
        })
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
        let mut given = opts.prefixes;
        if opts.bcast && given.is_empty() {
            given.push(Vec::new());
        }
        for p in given {
            if !prefixes.contains(&p) {
                prefixes.push(p);
            }
        }
        let replaced = clients.insert(
            shared.id,
            Tracker {
                shared: Arc::clone(shared),
                redirect: opts.redirect,
                flags,
                caching_fresh: false,
                prefixes,
            },
        );
        // A client already tracking keeps its mode (checked above): counted once.
        if replaced.is_none() {
            self.active.fetch_add(1, Ordering::Relaxed);
            if flags & BCAST != 0 {
                self.broadcasting.fetch_add(1, Ordering::Relaxed);
            }
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
            if t.flags & BCAST != 0 {
                self.broadcasting.fetch_sub(1, Ordering::Relaxed);
            }
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
    /// (subject to `OPTIN`/`OPTOUT` and `CLIENT CACHING`), then, after the client's
    /// own command (`outermost`, not one a transaction or script runs), lets a
    /// `CLIENT CACHING` given before it lapse.
    pub fn after_command(&self, id: u64, read: bool, keys: &[&[u8]], outermost: bool) {
        let mut clients = self.clients.lock();
        let Some(t) = clients.get_mut(&id) else {
            return;
        };
        let wanted = read
            && t.flags & BCAST == 0
            && !(t.flags & OPTIN != 0 && t.flags & CACHING_YES == 0)
            && !(t.flags & OPTOUT != 0 && t.flags & CACHING_NO != 0);
        if outermost {
            if t.caching_fresh {
                t.caching_fresh = false;
            } else if t.flags & (CACHING_YES | CACHING_NO) != 0 {
                t.flags &= !(CACHING_YES | CACHING_NO);
                t.shared
                    .pubsub
                    .tracking_flags
                    .store(t.flags, Ordering::Relaxed);
            }
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

    /// The counters `INFO` shows.
    pub fn stats(&self) -> TableStats {
        let (keys, items) = {
            let table = self.keys.lock();
            (table.len(), table.values().map(Vec::len).sum())
        };
        let clients = self.clients.lock();
        let mut prefixes: Vec<&[u8]> = Vec::new();
        for t in clients.values().filter(|t| t.flags & BCAST != 0) {
            prefixes.extend(t.prefixes.iter().map(Vec::as_slice));
        }
        prefixes.sort_unstable();
        prefixes.dedup();
        TableStats {
            clients: clients.len(),
            keys,
            items,
            prefixes: prefixes.len(),
        }
    }

    /// Keeps the table within `max` keys (`tracking-table-max-keys`, 0: no limit):
    /// invalidates keys for the clients that read them, as if they had changed, a
    /// hundred more per pass for each pass before that ended still over (Redis's
    /// effort rule). Runs before commands and in the periodic tasks.
    pub fn limit_keys(&self, max: usize, registry: &ClientRegistry, hub: &Hub) {
        if max == 0 || !self.active() {
            return;
        }
        if self.keys.lock().len() <= max {
            self.over_limit_passes.store(0, Ordering::Relaxed);
            return;
        }
        let effort = 100 * (self.over_limit_passes.load(Ordering::Relaxed) + 1);
        for _ in 0..effort {
            let evicted = {
                let mut table = self.keys.lock();
                let Some(key) = table.keys().next().cloned() else {
                    break;
                };
                let ids = table.remove(&key).unwrap_or_default();
                (key, ids)
            };
            self.tell_readers(registry, hub, &evicted.0, evicted.1, 0);
            if self.keys.lock().len() <= max {
                self.over_limit_passes.store(0, Ordering::Relaxed);
                return;
            }
        }
        self.over_limit_passes.fetch_add(1, Ordering::Relaxed);
    }

    /// A key was written by client `writer` (0: by the server, as on expiry).
    pub fn invalidate(&self, registry: &ClientRegistry, hub: &Hub, key: &[u8], writer: u64) {
        let ids = self.keys.lock().remove(key).unwrap_or_default();
        self.tell_readers(registry, hub, key, ids, writer);
        if self.broadcasting.load(Ordering::Relaxed) == 0 {
            return;
        }
        let batched = BATCH.with(|b| match b.borrow_mut().as_mut() {
            Some(keys) => {
                keys.push((key.to_vec(), writer));
                true
            }
            None => false,
        });
        if !batched {
            // Written outside any command (no batch open): sent at once.
            self.broadcast(registry, hub, &[(key.to_vec(), writer)], writer);
        }
    }

    /// Sends the default-mode invalidation of `key` to the clients `ids` that read it.
    fn tell_readers(
        &self,
        registry: &ClientRegistry,
        hub: &Hub,
        key: &[u8],
        ids: Vec<u64>,
        writer: u64,
    ) {
        if ids.is_empty() {
            return;
        }
        let clients = self.clients.lock();
        for id in ids {
            // A client that read the key before switching to BCAST mode hears only
            // about its prefixes now, as in Redis.
            if let Some(t) = clients.get(&id).filter(|t| t.flags & BCAST == 0) {
                if !(t.flags & NOLOOP != 0 && id == writer) {
                    send(registry, hub, t, Some(&[key]), writer);
                }
            }
        }
    }

    /// Sends the `BCAST` invalidations of `written` (keys with their writers): for
    /// each broadcasting client, one message per prefix of its (in prefix order)
    /// listing the keys under it in order, each once, less those it wrote itself
    /// last when it asked for `NOLOOP`.
    fn broadcast(
        &self,
        registry: &ClientRegistry,
        hub: &Hub,
        written: &[(Vec<u8>, u64)],
        owner: u64,
    ) {
        let mut last_writer: BTreeMap<&[u8], u64> = BTreeMap::new();
        for (key, writer) in written {
            last_writer.insert(key, *writer);
        }
        let clients = self.clients.lock();
        for t in clients.values().filter(|t| t.flags & BCAST != 0) {
            let mut prefixes: Vec<&[u8]> = t.prefixes.iter().map(Vec::as_slice).collect();
            prefixes.sort_unstable();
            let own = |writer: u64| t.flags & NOLOOP != 0 && writer == t.shared.id;
            for prefix in prefixes {
                let keys: Vec<&[u8]> = last_writer
                    .iter()
                    .filter(|(k, w)| k.starts_with(prefix) && !own(**w))
                    .map(|(k, _)| *k)
                    .collect();
                if !keys.is_empty() {
                    send(registry, hub, t, Some(&keys), owner);
                }
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

/// Sends one invalidation (of `keys`, or of everything) for tracker `t`.
fn send(registry: &ClientRegistry, hub: &Hub, t: &Tracker, keys: Option<&[&[u8]]>, writer: u64) {
    let payload = match keys {
        Some(keys) => Reply::Array(keys.iter().copied().map(Reply::bulk).collect()),
        None => Reply::Null,
    };
    let size = keys.map_or(0, |keys| keys.iter().map(|k| k.len() + 16).sum()) + 32;
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

/// Delivers to a client; to the writer, or the client whose command runs on this
/// thread, only after its reply.
fn post(hub: &Hub, to: &ClientShared, msg: Reply, size: usize, writer: u64) {
    if to.id == writer || to.id == EXECUTING.with(Cell::get) {
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

#[cfg(test)]
mod tests {
    use crate::clients::ClientState;
    use crate::engine::{Engine, EngineOptions};
    use crate::reply::Reply;

    fn run(engine: &Engine, client: &mut ClientState, args: &[&str]) -> Reply {
        let argv: Vec<Vec<u8>> = args.iter().map(|a| a.as_bytes().to_vec()).collect();
        crate::command::execute(engine, client, &argv)
    }

    /// The keys of each `invalidate` push the client received, in order.
    fn invalidations(client: &ClientState) -> Vec<Vec<String>> {
        client
            .shared
            .pubsub
            .take()
            .into_iter()
            .filter_map(|m| match m {
                Reply::Push(items) => match items.get(1) {
                    Some(Reply::Array(keys)) => Some(
                        keys.iter()
                            .map(|k| match k {
                                Reply::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
                                other => format!("{other:?}"),
                            })
                            .collect(),
                    ),
                    _ => None,
                },
                _ => None,
            })
            .collect()
    }

    fn tracking_client(engine: &Engine, on: &[&str]) -> ClientState {
        let mut c = engine.client(String::new(), String::new(), -1);
        run(engine, &mut c, &["HELLO", "3"]);
        let mut args = vec!["CLIENT", "TRACKING", "ON"];
        args.extend_from_slice(on);
        assert_eq!(run(engine, &mut c, &args), Reply::ok());
        c
    }

    #[test]
    fn bcast_sends_one_message_per_prefix_for_a_command() {
        let engine = Engine::in_memory(EngineOptions::default());
        let reader = tracking_client(&engine, &["BCAST", "PREFIX", "b:", "PREFIX", "a:"]);
        let mut writer = engine.client(String::new(), String::new(), -1);
        run(
            &engine,
            &mut writer,
            &[
                "MSET", "b:2", "x", "a:2", "x", "c:1", "x", "a:1", "x", "a:2", "y",
            ],
        );
        assert_eq!(
            invalidations(&reader),
            vec![vec!["a:1", "a:2"], vec!["b:2"]],
            "sorted, each key once, one message per prefix in prefix order"
        );
        run(&engine, &mut writer, &["SET", "a:3", "x"]);
        run(&engine, &mut writer, &["SET", "a:4", "x"]);
        assert_eq!(invalidations(&reader), vec![vec!["a:3"], vec!["a:4"]]);
    }

    #[test]
    fn the_table_is_kept_within_its_limit_with_growing_effort() {
        let engine = Engine::in_memory(EngineOptions::default());
        let mut reader = tracking_client(&engine, &[]);
        for i in 0..250 {
            run(&engine, &mut reader, &["GET", &format!("k{i}")]);
        }
        assert_eq!(engine.pubsub().tracking.stats().keys, 250);
        let hub = engine.pubsub();
        // One pass evicts a hundred, the next two hundred: 249 in all.
        hub.tracking.limit_keys(1, engine.clients(), hub);
        assert_eq!(hub.tracking.stats().keys, 150);
        hub.tracking.limit_keys(1, engine.clients(), hub);
        assert_eq!(hub.tracking.stats().keys, 1);
        assert_eq!(invalidations(&reader).len(), 249);
        hub.tracking.limit_keys(0, engine.clients(), hub);
        assert_eq!(hub.tracking.stats().keys, 1, "0 is no limit");
    }
}
