//! A client's mailbox: what travels to its connection from other threads (Pub/Sub
//! messages, keyspace notifications, client-side caching invalidations, `MONITOR`
//! lines) and the counts `CLIENT LIST` shows. The hub that fills it is
//! [`pubsub`](crate::pubsub)'s.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, AtomicUsize, Ordering};

use parking_lot::Mutex;

use crate::reply::Reply;

/// `CLIENT TRACKING`'s state bits, as [`Mailbox::tracking_flags`] holds them.
pub mod tracking_bits {
    /// Tracking is on.
    pub const ON: u32 = 1;
    /// `BCAST`: invalidations for every key of the prefixes.
    pub const BCAST: u32 = 1 << 1;
    /// `OPTIN`: keys are remembered only after `CLIENT CACHING yes`.
    pub const OPTIN: u32 = 1 << 2;
    /// `OPTOUT`: keys are remembered unless `CLIENT CACHING no`.
    pub const OPTOUT: u32 = 1 << 3;
    /// `NOLOOP`: no invalidation for the client's own writes.
    pub const NOLOOP: u32 = 1 << 4;
    /// `CLIENT CACHING yes` is in force for the next command.
    pub const CACHING_YES: u32 = 1 << 5;
    /// `CLIENT CACHING no` is in force for the next command.
    pub const CACHING_NO: u32 = 1 << 6;
    /// The redirect client is gone (`CLIENT LIST`'s `R`).
    pub const BROKEN_REDIR: u32 = 1 << 7;
}

/// What travels to one connection and the counts `CLIENT LIST` shows; lives in
/// [`ClientShared`](super::ClientShared) so publishers on other threads can reach
/// it.
#[derive(Default)]
pub struct Mailbox {
    queue: Mutex<Queued>,
    /// Bytes of payload queued and not yet taken by the connection.
    pub bytes: AtomicUsize,
    /// The bell was rung and the connection has not emptied the mailbox since.
    rung: AtomicBool,
    bell: Mutex<Option<Box<dyn Fn() + Send + Sync>>>,
    /// Channel subscriptions (`sub=`).
    pub channels: AtomicUsize,
    /// Pattern subscriptions (`psub=`).
    pub patterns: AtomicUsize,
    /// Shard-channel subscriptions (`ssub=`).
    pub shard_channels: AtomicUsize,
    /// When the output first passed the soft limit (Unix ms; 0: it has not).
    pub soft_since_ms: AtomicI64,
    /// The client is in `MONITOR` mode.
    pub monitor: AtomicBool,
    /// `CLIENT TRACKING` is on (for `CLIENT LIST`'s `t` flag and `redir=`).
    pub tracking_redirect: AtomicI64,
    /// `CLIENT TRACKING`'s state bits ([`tracking_bits`]).
    pub tracking_flags: AtomicU32,
}

#[derive(Default)]
struct Queued {
    now: VecDeque<Reply>,
    after_reply: Vec<Reply>,
}

impl Mailbox {
    /// Sets what rings the connection's bell (its event loop's waker).
    pub fn set_bell(&self, bell: Box<dyn Fn() + Send + Sync>) {
        *self.bell.lock() = Some(bell);
    }

    /// Queues a message and wakes the connection.
    pub fn push(&self, msg: Reply, size: usize) {
        self.queue.lock().now.push_back(msg);
        self.bytes.fetch_add(size, Ordering::Relaxed);
        self.ring();
    }

    /// Queues a message to follow the reply of the command the client is running.
    pub fn push_after_reply(&self, msg: Reply, size: usize) {
        self.queue.lock().after_reply.push(msg);
        self.bytes.fetch_add(size, Ordering::Relaxed);
        self.ring();
    }

    fn ring(&self) {
        if !self.rung.swap(true, Ordering::AcqRel) {
            if let Some(bell) = self.bell.lock().as_ref() {
                bell();
            }
        }
    }

    /// Whether something was queued since the connection last emptied the mailbox
    /// (one atomic load: the connection's per-command check).
    #[inline]
    pub fn pending(&self) -> bool {
        self.rung.load(Ordering::Acquire)
    }

    /// Takes every queued message (in order) and rearms the bell.
    pub fn take(&self) -> Vec<Reply> {
        self.rung.store(false, Ordering::Release);
        let mut q = self.queue.lock();
        let mut out: Vec<Reply> = q.now.drain(..).collect();
        out.append(&mut q.after_reply);
        self.bytes.store(0, Ordering::Relaxed);
        out
    }

    /// Takes the queued messages that may precede the current reply.
    pub fn take_before_reply(&self) -> Vec<Reply> {
        if !self.pending() {
            return Vec::new();
        }
        let mut q = self.queue.lock();
        if q.now.is_empty() {
            return Vec::new();
        }
        q.now.drain(..).collect()
    }

    /// Whether anything waits.
    pub fn is_empty(&self) -> bool {
        let q = self.queue.lock();
        q.now.is_empty() && q.after_reply.is_empty()
    }

    /// Whether the client holds any subscription.
    pub fn subscribed(&self) -> bool {
        self.channels.load(Ordering::Relaxed)
            + self.patterns.load(Ordering::Relaxed)
            + self.shard_channels.load(Ordering::Relaxed)
            > 0
    }
}

/// `CLIENT LIST` flags for a client's tracking state.
pub fn tracking_list_flags(m: &Mailbox) -> String {
    let f = m.tracking_flags.load(Ordering::Relaxed);
    let mut s = String::new();
    if f & tracking_bits::ON != 0 {
        s.push('t');
    }
    if f & tracking_bits::BROKEN_REDIR != 0 {
        s.push('R');
    }
    if f & tracking_bits::BCAST != 0 {
        s.push('B');
    }
    s
}
