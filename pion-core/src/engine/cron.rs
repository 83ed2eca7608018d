//! The engine's periodic work, Redis's `serverCron` for the keyspace: every `1/hz`
//! seconds it re-anchors the derived wall clock, keeps the client-side-caching table
//! within its limit, expires keys whose deadline passed (in a transaction's or a
//! script's absence, as Redis does), and gives memory freed in bulk back to the system.

use std::sync::atomic::Ordering;
use std::sync::Weak;
use std::time::Duration;

use super::EngineInner;

pub(super) fn spawn_expiry_cycle(engine: Weak<EngineInner>) {
    let spawned = std::thread::Builder::new()
        .name("pion-expire".into())
        .spawn(move || loop {
            let Some(inner) = engine.upgrade() else {
                return;
            };
            let hz = inner.config.with(|c| c.hz).clamp(1, 500);
            let since = inner
                .clock
                .now()
                .saturating_duration_since(inner.epoch)
                .as_micros() as i64;
            let now_us = inner.clock.unix_us();
            inner
                .wall_at_epoch_us
                .store(now_us - since, Ordering::Relaxed);
            let paused = inner.cron_paused.load(Ordering::Relaxed);
            inner.links.close_idle(now_us / 1000);
            if !paused && inner.pubsub.tracking.active() {
                let max = inner.config.with(|c| c.tracking_table_max_keys);
                inner
                    .pubsub
                    .tracking
                    .limit_keys(max, &inner.clients, &inner.pubsub);
            }
            if !paused && inner.active_expire.load(Ordering::Relaxed) {
                // Keys do not expire in the middle of a transaction or script.
                let _gate = inner.gate.enter_background();
                // The cycle's BCAST invalidations leave together, as Redis's do.
                let _batch = inner
                    .pubsub
                    .tracking
                    .open_batch(&inner.clients, &inner.pubsub, 0);
                // A slow pass (a big key deleted) is a latency event, as in Redis. It is
                // recorded after each shard, with that shard still locked (samples of
                // one second keep their maximum, so the last is the whole pass): in
                // Redis no command runs during the pass, and here too a client that
                // sees a key gone finds the event that its removal made slow.
                let started = std::time::Instant::now();
                let latency = &inner.operator.latency;
                inner.keyspace.expire_cycle(now_us / 1000, 200, &mut || {
                    latency.add_if_needed(
                        "expire-cycle",
                        started.elapsed().as_millis() as u64,
                        now_us / 1_000_000,
                    );
                });
            }
            // Memory freed in bulk goes back to the system within a tick.
            crate::util::alloc::purge_if_shrunk();
            drop(inner);
            std::thread::sleep(Duration::from_millis(1000 / hz));
        });
    // Without the thread, keys still expire lazily on access; nothing else depends on it.
    drop(spawned);
}
