//! The keyspace's listeners, hooked to Pub/Sub when an engine is built: the `new` and
//! `expired` keyspace events, and the client-side caching invalidation of expired
//! keys.

use std::sync::Arc;

use super::Engine;
use crate::pubsub::notify;

/// Hooks the hub to key creation: the `new` keyspace event.
pub(super) fn listen_for_creation(engine: &Engine) {
    let hub = Arc::clone(engine.pubsub());
    engine
        .keyspace()
        .set_creation_listener(Box::new(move |db, key| {
            hub.keyspace_event(notify::NEW, "new", key, db);
        }));
}

/// Hooks the hub to the keyspace's expiry: `expired` events and invalidations.
pub(super) fn listen_for_expiry(engine: &Engine) {
    let hub = Arc::clone(engine.pubsub());
    let weak = engine.downgrade();
    engine
        .keyspace()
        .set_expiry_listener(Box::new(move |db, key| {
            hub.keyspace_event(notify::EXPIRED, "expired", key, db);
            if hub.tracking.active() {
                if let Some(engine) = weak.upgrade() {
                    hub.tracking.invalidate(engine.clients(), &hub, key, 0);
                }
            }
        }));
}
