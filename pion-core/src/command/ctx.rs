//! The context a command handler runs in: the engine, the calling client, and the
//! keyspace shards locked for this command.

use crate::clients::ClientState;
use crate::engine::Engine;
use crate::keyspace::Locked;
use crate::value::EncodingLimits;

/// Everything a handler may touch while it runs.
pub struct Ctx<'a> {
    /// The engine.
    pub engine: &'a Engine,
    /// The calling client.
    pub client: &'a mut ClientState,
    /// The shards this command holds.
    pub ks: Locked<'a>,
    /// What the write-ahead log records for this command.
    pub effect: Effect,
    /// Argument positions of keys a write command named but left as they were
    /// (`SMOVE`'s destination that already held the member): their watchers and
    /// tracking clients are not told, as Redis signals only keys it modified.
    pub unmodified_keys: Vec<usize>,
}

/// What a write command leaves in the write-ahead log.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Effect {
    /// The command as it was sent: replaying it at the same time reproduces it.
    #[default]
    AsSent,
    /// These commands instead (a random or machine-dependent outcome, stated as the
    /// deterministic commands that reproduce it: `SPOP` becomes `SREM` of what it
    /// popped).
    Rewritten(Vec<Vec<Vec<u8>>>),
    /// Nothing: the command changed nothing.
    Nothing,
}

impl Ctx<'_> {
    /// Appends these commands to the write-ahead log now, as the effect of the running
    /// command (which then logs nothing more). For state outside the keyspace's
    /// shards (the prefix store): call it while holding that state's lock, so the log
    /// order is the order the changes were made in.
    pub fn log_now(&mut self, commands: &[Vec<Vec<u8>>]) {
        self.effect = Effect::Nothing;
        if commands.is_empty() {
            return;
        }
        if let Some(d) = self.engine.durability() {
            let db = self.client.db;
            let seq = d
                .wal()
                .append(self.now_ms(), commands.iter().map(|c| (db, c.as_slice())));
            self.client.wal_seq = seq;
        }
    }

    /// Logs these commands instead of the one that ran (see [`Effect::Rewritten`]).
    pub fn log_as(&mut self, commands: Vec<Vec<Vec<u8>>>) {
        self.effect = if commands.is_empty() {
            Effect::Nothing
        } else {
            Effect::Rewritten(commands)
        };
    }

    /// The client's selected database.
    pub fn db(&self) -> usize {
        self.client.db
    }

    /// The command's time (Unix milliseconds), fixed for the whole command.
    pub fn now_ms(&self) -> i64 {
        self.ks.now_ms()
    }

    /// Emits a keyspace notification for `key` (`class`: a
    /// [`notify`](crate::pubsub::notify) bit such as `notify::LIST`). Costs one atomic
    /// load when notifications are off.
    #[inline]
    pub fn notify(&self, class: u32, event: &str, key: &[u8]) {
        self.notify_db(class, event, key, self.client.db);
    }

    /// [`notify`](Self::notify) for a key of another database (`MOVE`, `COPY … DB`).
    #[inline]
    pub fn notify_db(&self, class: u32, event: &str, key: &[u8], db: usize) {
        let hub = self.engine.pubsub();
        if hub.notify_flags() & class != 0 {
            hub.keyspace_event(class, event, key, db);
        }
    }

    /// The current encoding thresholds (`hash-max-listpack-entries` …).
    pub fn limits(&self) -> EncodingLimits {
        self.engine.config().encoding_limits()
    }
}
