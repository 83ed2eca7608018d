//! A client's subscriptions (`SUBSCRIBE`, `PSUBSCRIBE`, `SSUBSCRIBE`), kept with the
//! client so that `RESET` and a closed connection leave every channel. The registers
//! of subscribers by channel are the hub's ([`pubsub`](crate::pubsub)).

/// The three kinds of subscription.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `SUBSCRIBE`: an exact channel name.
    Channel,
    /// `PSUBSCRIBE`: a glob pattern over channel names.
    Pattern,
    /// `SSUBSCRIBE`: a shard channel (`SPUBLISH`).
    Shard,
}

impl Kind {
    /// The reply word of subscribing (`subscribe`, `psubscribe`, `ssubscribe`).
    pub fn subscribe_word(self) -> &'static str {
        match self {
            Kind::Channel => "subscribe",
            Kind::Pattern => "psubscribe",
            Kind::Shard => "ssubscribe",
        }
    }

    /// The reply word of unsubscribing.
    pub fn unsubscribe_word(self) -> &'static str {
        match self {
            Kind::Channel => "unsubscribe",
            Kind::Pattern => "punsubscribe",
            Kind::Shard => "sunsubscribe",
        }
    }
}

/// What leaves the hub's registers when a client's subscriptions are dropped.
pub type Leave = Box<dyn FnOnce(&mut Subscriptions) + Send>;

/// A client's own subscriptions, in the order made; dropping it (the connection
/// closed) removes them from the hub, through what the hub set when the client
/// attached.
#[derive(Default)]
pub struct Subscriptions {
    leave: Option<Leave>,
    channels: Vec<Vec<u8>>,
    patterns: Vec<Vec<u8>>,
    shard: Vec<Vec<u8>>,
}

impl Subscriptions {
    /// Whether the hub attached (set what leaves it on drop).
    pub fn attached(&self) -> bool {
        self.leave.is_some()
    }

    /// Sets what leaves the hub's registers on drop (once, when the client attaches).
    pub fn attach(&mut self, leave: Leave) {
        self.leave = Some(leave);
    }

    /// The names of one kind, in the order subscribed.
    pub fn list(&mut self, kind: Kind) -> &mut Vec<Vec<u8>> {
        match kind {
            Kind::Channel => &mut self.channels,
            Kind::Pattern => &mut self.patterns,
            Kind::Shard => &mut self.shard,
        }
    }

    /// Channels plus patterns: the count `SUBSCRIBE` and `PSUBSCRIBE` replies carry.
    pub fn classic_count(&self) -> i64 {
        (self.channels.len() + self.patterns.len()) as i64
    }

    /// The count a (un)subscribe reply of `kind` carries.
    pub fn count_for(&self, kind: Kind) -> i64 {
        match kind {
            Kind::Shard => self.shard.len() as i64,
            _ => self.classic_count(),
        }
    }

    /// Whether the client holds any subscription (RESP2 clients are then in
    /// subscribed mode).
    pub fn active(&self) -> bool {
        !(self.channels.is_empty() && self.patterns.is_empty() && self.shard.is_empty())
    }
}

impl Drop for Subscriptions {
    fn drop(&mut self) {
        if let Some(leave) = self.leave.take() {
            leave(self);
        }
    }
}
