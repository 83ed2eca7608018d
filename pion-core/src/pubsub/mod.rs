//! Pub/Sub: the engine-wide registry of channel, pattern and shard-channel
//! subscribers, delivering into the per-client mailbox
//! ([`clients::mailbox`](crate::clients::mailbox)) that carries messages to a
//! connection on whatever worker thread serves it.
//!
//! A publisher never touches another connection's socket: it appends the message to
//! each subscriber's [`Mailbox`] and rings the mailbox's bell (the subscriber's event
//! loop waker). The subscriber's connection moves what its mailbox holds into its
//! output between commands and when woken, so messages to one connection keep the
//! order they were published in. Keyspace notifications, client-side caching
//! invalidations and `MONITOR` lines travel the same way.

pub mod limits;
pub mod monitor;
pub mod notify;
pub mod tracking;

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::RwLock;

use crate::clients::mailbox::Mailbox;
use crate::clients::{ClientShared, ClientState};
use crate::reply::Reply;
use crate::util::glob::glob_match;

pub use crate::clients::subscriptions::{Kind, Subscriptions};

/// Subscribers of one channel (or pattern), in subscription order.
type Subscribers = Vec<Arc<ClientShared>>;

/// The engine-wide Pub/Sub state.
#[derive(Default)]
pub struct Hub {
    channels: RwLock<HashMap<Vec<u8>, Subscribers>>,
    patterns: RwLock<Vec<(Vec<u8>, Subscribers)>>,
    shard: RwLock<HashMap<Vec<u8>, Subscribers>>,
    /// `notify-keyspace-events` as [`notify`] class bits (0: off).
    notify_flags: AtomicU32,
    /// `client-output-buffer-limit` for the pubsub class.
    limits: RwLock<limits::OutputLimits>,
    /// Client-side caching (`CLIENT TRACKING`).
    pub(crate) tracking: tracking::Table,
    /// Clients in `MONITOR` mode.
    pub(crate) monitors: monitor::Monitors,
}

/// The counter of a client's subscriptions of `kind` (`CLIENT LIST`'s `sub=` …).
fn mailbox_count(m: &Mailbox, kind: Kind) -> &AtomicUsize {
    match kind {
        Kind::Channel => &m.channels,
        Kind::Pattern => &m.patterns,
        Kind::Shard => &m.shard_channels,
    }
}

/// A published message's approximate memory, for the output-buffer limits.
fn message_size(parts: &[&[u8]]) -> usize {
    parts.iter().map(|p| p.len() + 16).sum::<usize>() + 16
}

impl Hub {
    /// Every subscriber with what it is subscribed to: (client, channel or pattern,
    /// kind), for checking subscriptions against changed permissions.
    pub fn subscriptions(&self) -> Vec<(Arc<ClientShared>, Vec<u8>, Kind)> {
        let mut out = Vec::new();
        for (name, who) in self.channels.read().iter() {
            out.extend(
                who.iter()
                    .map(|c| (Arc::clone(c), name.clone(), Kind::Channel)),
            );
        }
        for (name, who) in self.patterns.read().iter() {
            out.extend(
                who.iter()
                    .map(|c| (Arc::clone(c), name.clone(), Kind::Pattern)),
            );
        }
        for (name, who) in self.shard.read().iter() {
            out.extend(
                who.iter()
                    .map(|c| (Arc::clone(c), name.clone(), Kind::Shard)),
            );
        }
        out
    }

    /// Registers `client` with the hub so its subscriptions and tracking state are
    /// removed when it goes away.
    pub(crate) fn attach(self: &Arc<Self>, client: &mut ClientState) {
        if !client.subs.attached() {
            let hub = Arc::clone(self);
            let id = client.id();
            client
                .subs
                .attach(Box::new(move |subs: &mut Subscriptions| {
                    for kind in [Kind::Channel, Kind::Pattern, Kind::Shard] {
                        for name in std::mem::take(subs.list(kind)) {
                            hub.remove(kind, &name, id);
                        }
                    }
                    hub.tracking.forget_client(id);
                    hub.monitors.remove(id);
                }));
        }
    }

    /// Subscribes a client to names of one kind; one confirmation per name.
    pub fn subscribe(
        self: &Arc<Self>,
        client: &mut ClientState,
        kind: Kind,
        names: &[Vec<u8>],
    ) -> Reply {
        self.attach(client);
        let mut replies = Vec::with_capacity(names.len());
        for name in names {
            if !client.subs.list(kind).contains(name) {
                client.subs.list(kind).push(name.clone());
                self.add(kind, name, &client.shared);
                mailbox_count(&client.shared.pubsub, kind).fetch_add(1, Ordering::Relaxed);
            }
            replies.push(Reply::Push(vec![
                Reply::bulk(kind.subscribe_word()),
                Reply::bulk(name),
                Reply::Integer(client.subs.count_for(kind)),
            ]));
        }
        Reply::Several(replies)
    }

    /// Unsubscribes a client from names of one kind (all of them when `names` is
    /// empty); one confirmation per name, or one with a null name when there was
    /// nothing to leave.
    pub fn unsubscribe(&self, client: &mut ClientState, kind: Kind, names: &[Vec<u8>]) -> Reply {
        let targets: Vec<Vec<u8>> = if names.is_empty() {
            client.subs.list(kind).clone()
        } else {
            names.to_vec()
        };
        let mut replies = Vec::with_capacity(targets.len().max(1));
        for name in &targets {
            let list = client.subs.list(kind);
            if let Some(i) = list.iter().position(|n| n == name) {
                list.remove(i);
                self.remove(kind, name, client.id());
                mailbox_count(&client.shared.pubsub, kind).fetch_sub(1, Ordering::Relaxed);
            }
            replies.push(Reply::Push(vec![
                Reply::bulk(kind.unsubscribe_word()),
                Reply::bulk(name),
                Reply::Integer(client.subs.count_for(kind)),
            ]));
        }
        if replies.is_empty() {
            replies.push(Reply::Push(vec![
                Reply::bulk(kind.unsubscribe_word()),
                Reply::Null,
                Reply::Integer(client.subs.count_for(kind)),
            ]));
        }
        Reply::Several(replies)
    }

    /// Drops every subscription of a client (`RESET`).
    pub fn unsubscribe_all(&self, client: &mut ClientState) {
        for kind in [Kind::Channel, Kind::Pattern, Kind::Shard] {
            for name in std::mem::take(client.subs.list(kind)) {
                self.remove(kind, &name, client.id());
            }
            mailbox_count(&client.shared.pubsub, kind).store(0, Ordering::Relaxed);
        }
    }

    fn add(&self, kind: Kind, name: &[u8], who: &Arc<ClientShared>) {
        match kind {
            Kind::Channel => self
                .channels
                .write()
                .entry(name.to_vec())
                .or_default()
                .push(Arc::clone(who)),
            Kind::Shard => self
                .shard
                .write()
                .entry(name.to_vec())
                .or_default()
                .push(Arc::clone(who)),
            Kind::Pattern => {
                let mut patterns = self.patterns.write();
                match patterns.iter_mut().find(|(p, _)| p == name) {
                    Some((_, subs)) => subs.push(Arc::clone(who)),
                    None => patterns.push((name.to_vec(), vec![Arc::clone(who)])),
                }
            }
        }
    }

    fn remove(&self, kind: Kind, name: &[u8], id: u64) {
        let drop_from = |map: &mut HashMap<Vec<u8>, Subscribers>| {
            if let Some(subs) = map.get_mut(name) {
                subs.retain(|s| s.id != id);
                if subs.is_empty() {
                    map.remove(name);
                }
            }
        };
        match kind {
            Kind::Channel => drop_from(&mut self.channels.write()),
            Kind::Shard => drop_from(&mut self.shard.write()),
            Kind::Pattern => {
                let mut patterns = self.patterns.write();
                if let Some(i) = patterns.iter().position(|(p, _)| p == name) {
                    patterns[i].1.retain(|s| s.id != id);
                    if patterns[i].1.is_empty() {
                        patterns.remove(i);
                    }
                }
            }
        }
    }

    /// `PUBLISH`: delivers to the channel's subscribers, then to every matching
    /// pattern's; returns how many deliveries were made.
    pub fn publish(&self, channel: &[u8], message: &[u8]) -> usize {
        let mut n = 0;
        let size = message_size(&[channel, message]);
        if let Some(subs) = self.channels.read().get(channel) {
            for s in subs {
                self.deliver(
                    s,
                    Reply::Push(vec![
                        Reply::bulk("message"),
                        Reply::bulk(channel),
                        Reply::bulk(message),
                    ]),
                    size,
                );
                n += 1;
            }
        }
        for (pattern, subs) in self.patterns.read().iter() {
            if !glob_match(pattern, channel, false) {
                continue;
            }
            for s in subs {
                self.deliver(
                    s,
                    Reply::Push(vec![
                        Reply::bulk("pmessage"),
                        Reply::bulk(pattern),
                        Reply::bulk(channel),
                        Reply::bulk(message),
                    ]),
                    size + pattern.len(),
                );
                n += 1;
            }
        }
        n
    }

    /// `SPUBLISH`: delivers to the shard channel's subscribers.
    pub fn spublish(&self, channel: &[u8], message: &[u8]) -> usize {
        let size = message_size(&[channel, message]);
        let map = self.shard.read();
        let Some(subs) = map.get(channel) else {
            return 0;
        };
        for s in subs {
            self.deliver(
                s,
                Reply::Push(vec![
                    Reply::bulk("smessage"),
                    Reply::bulk(channel),
                    Reply::bulk(message),
                ]),
                size,
            );
        }
        subs.len()
    }

    /// Queues a message for a client unless it is being closed; closes a client
    /// that passed its output-buffer limit.
    pub(crate) fn deliver(&self, to: &ClientShared, msg: Reply, size: usize) {
        if to.killed.load(Ordering::Relaxed) {
            return;
        }
        to.pubsub.push(msg, size);
        let limit = *self.limits.read();
        limits::enforce(&limit, to);
    }

    /// Active channels matching a pattern (all with none).
    pub fn channel_names(&self, kind: Kind, pattern: Option<&[u8]>) -> Vec<Vec<u8>> {
        let map = match kind {
            Kind::Shard => self.shard.read(),
            _ => self.channels.read(),
        };
        map.keys()
            .filter(|c| pattern.is_none_or(|p| glob_match(p, c, false)))
            .cloned()
            .collect()
    }

    /// Subscribers of a channel (not counting patterns).
    pub fn subscriber_count(&self, kind: Kind, channel: &[u8]) -> usize {
        let map = match kind {
            Kind::Shard => self.shard.read(),
            _ => self.channels.read(),
        };
        map.get(channel).map_or(0, Vec::len)
    }

    /// Channels with at least one subscriber.
    pub fn channel_count(&self) -> usize {
        self.channels.read().len()
    }

    /// Shard channels with at least one subscriber.
    pub fn shard_channel_count(&self) -> usize {
        self.shard.read().len()
    }

    /// Patterns with at least one subscriber.
    pub fn pattern_count(&self) -> usize {
        self.patterns.read().len()
    }

    /// The `notify-keyspace-events` class bits in force.
    #[inline]
    pub fn notify_flags(&self) -> u32 {
        self.notify_flags.load(Ordering::Relaxed)
    }

    /// Applies the configuration (after `CONFIG SET` or at start).
    pub fn configure(&self, notify_flags: u32, limits: limits::OutputLimits) {
        self.notify_flags.store(notify_flags, Ordering::Relaxed);
        *self.limits.write() = limits;
    }
}

/// Applies the configuration parameters this module reads.
pub fn configure(hub: &Hub, c: &crate::config::ConfigValues) {
    hub.configure(
        notify::effective(c.notify_keyspace_events),
        c.client_output_buffer_limit,
    );
}
