//! The dispatcher's memory check: over `maxmemory`, the [`Evictor`] frees memory
//! before a command runs, and each key it removes leaves the way a deleted one does
//! (a logged `DEL`, its search document dropped, the `evicted` event, client-side
//! caches and `WATCH` told).

use crate::engine::Engine;
use crate::error::{OpError, OpResult};
use crate::evict::{Evictor, OOM_ERROR};

/// The dispatcher's check before a command runs: over `maxmemory`, evict as the
/// policy says; a command that may grow memory (`deny_oom`) is refused if that did not
/// bring used memory under the limit (always so under `noeviction`).
pub fn before_command(engine: &Engine, deny_oom: bool) -> OpResult<()> {
    let limit = engine.maxmemory();
    if limit == 0 || engine.used_memory_for_eviction() <= limit {
        return Ok(());
    }
    // While writes are paused nothing is evicted either (that would be a write).
    let op = engine.operator();
    let freed = !op.pause.writes_paused() && free_memory(engine, &op.evictor, limit);
    if freed || !deny_oom {
        Ok(())
    } else {
        Err(OpError::custom(OOM_ERROR))
    }
}

/// Runs the evictor over the engine's keyspace down to `limit`.
fn free_memory(engine: &Engine, evictor: &Evictor, limit: u64) -> bool {
    let now = engine.now_ms();
    let mut on_removed = |db: usize, key: &[u8]| {
        let del = [b"DEL".to_vec(), key.to_vec()];
        if let Some(d) = engine.durability() {
            d.wal().append(now, std::iter::once((db, &del[..])));
        }
        engine.search().key_expired(db, key);
        notify_evicted(engine, db, key);
    };
    // Evicting comes before the command: what it tells the client that sent the
    // command (its tracked keys' invalidations) precedes the reply.
    let _before = engine.pubsub().tracking.before_command();
    let measured = || engine.memory_for_eviction();
    evictor.free_memory(engine.keyspace(), now, limit, &measured, &mut on_removed)
}

/// Tells the rest of the server that a key was evicted (called holding the key's
/// shard, right after its removal was logged and search indexes were told): the
/// `evicted` keyspace event, client-side caches, and `WATCH`, as Redis's
/// `signalModifiedKey` does.
fn notify_evicted(engine: &Engine, db: usize, key: &[u8]) {
    let hub = engine.pubsub();
    hub.keyspace_event(crate::pubsub::notify::EVICTED, "evicted", key, db);
    if hub.tracking.active() {
        hub.tracking.invalidate(engine.clients(), hub, key, 0);
    }
    engine.watches().touch(db, key, false);
}
