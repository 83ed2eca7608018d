//! The context a command handler runs in: the engine, the calling client, and the
//! keyspace shards locked for this command.

use crate::client::ClientState;
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
}

impl Ctx<'_> {
    /// The client's selected database.
    pub fn db(&self) -> usize {
        self.client.db
    }

    /// The command's time (Unix milliseconds), fixed for the whole command.
    pub fn now_ms(&self) -> i64 {
        self.ks.now_ms()
    }

    /// The current encoding thresholds (`hash-max-listpack-entries` …).
    pub fn limits(&self) -> EncodingLimits {
        self.engine.config().encoding_limits()
    }
}
