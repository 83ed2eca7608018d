//! What running commands does for Pub/Sub: client-side cache invalidation and `MONITOR` lines after a command, the commands a
//! subscribed RESP2 client or a monitor may not run, and `RESET`. The hub itself is
//! [`pubsub`](crate::pubsub)'s.

use std::sync::atomic::Ordering;

use crate::clients::ClientState;
use crate::command::ctx::Ctx;
use crate::command::{flags, CommandSpec};
use crate::engine::Engine;
use crate::pubsub::notify;
use crate::reply::Reply;

/// Pub/Sub's `INFO stats` lines (Redis 7.0's names).
pub fn info_fields(engine: &Engine) -> [(&'static str, usize); 3] {
    let hub = engine.pubsub();
    [
        ("pubsub_channels", hub.channel_count()),
        ("pubsub_patterns", hub.pattern_count()),
        ("pubsubshard_channels", hub.shard_channel_count()),
    ]
}

/// `RESET`: leaves every subscription, tracking and `MONITOR` mode.
pub fn reset_client(engine: &Engine, client: &mut ClientState) {
    let hub = engine.pubsub();
    hub.unsubscribe_all(client);
    hub.tracking.forget_client(client.id());
    hub.monitors.remove(client.id());
}

/// Refuses a command a RESP2 client in subscribed mode (or a monitor) may not run,
/// with Redis's text; `None` when it may run.
pub fn refuse_in_subscribed_mode(
    client: &ClientState,
    spec: &CommandSpec,
    full_name: &str,
) -> Option<Reply> {
    if let Some(refused) = refuse_for_monitor(client, spec) {
        return Some(refused);
    }
    if client.resp != 2 || !client.subs.active() || spec.has(flags::PUBSUB_CONTEXT) {
        return None;
    }
    Some(Reply::error(format!(
        "ERR Can't execute '{full_name}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context"
    )))
}

/// After a write command settled one of its keys (`removed`: it was an emptied
/// collection, now deleted): the `del` event and client-side cache invalidation.
pub(crate) fn key_settled(ctx: &mut Ctx<'_>, key: &[u8], removed: bool) {
    if removed {
        ctx.notify(notify::GENERIC, "del", key);
    }
    let hub = ctx.pubsub();
    if hub.tracking.active() {
        hub.tracking
            .invalidate(ctx.clients(), hub, key, ctx.client.id());
    }
}

/// `FLUSHDB` / `FLUSHALL` ran: tracking clients drop their whole cache, and the
/// table forgets every key (those of clients that stopped tracking too), as in Redis.
pub(crate) fn flushed(ctx: &Ctx<'_>) {
    let hub = ctx.pubsub();
    hub.tracking.flush(ctx.clients(), hub, ctx.client.id());
}

/// After any command ran: the keys a tracking client read, and the `MONITOR` line.
pub(crate) fn after_command(
    engine: &Engine,
    client: &ClientState,
    spec: &CommandSpec,
    argv: &[Vec<u8>],
    keys: &[usize],
) {
    let hub = engine.pubsub();
    if hub.tracking.active() {
        let read = spec.has(flags::READONLY);
        // The transaction or script itself (EXEC, EVAL: exclusive, no keys of its
        // own) is the client's command; those it runs are nested. A read inside a
        // script remembers the keys the script declared, and the nested commands
        // leave `CLIENT CACHING` in force for the rest of the outer one.
        let outermost = client.nested.is_none() || spec.has(flags::EXCLUSIVE);
        let names: Vec<&[u8]> = match &client.nested {
            Some(n) if n.in_script && !outermost => {
                n.script_keys.iter().map(Vec::as_slice).collect()
            }
            _ => keys.iter().map(|&i| argv[i].as_slice()).collect(),
        };
        hub.tracking
            .after_command(client.id(), read, &names, outermost);
    }
    // A served blocking command was shown when it was sent; Redis does not show it
    // again when it is served.
    if !client.retrying_block
        && hub.monitors.any()
        && !spec.has(flags::SKIP_MONITOR)
        && !spec.has(flags::ADMIN)
    {
        let shown = crate::command::handlers::dump::shown_args(spec, argv);
        hub.monitors
            .feed(client, &shown, spec.has(flags::REDACTS_AUTH));
    }
}

/// Refuses what a client in `MONITOR` mode may not run, as Redis refuses a replica.
fn refuse_for_monitor(client: &ClientState, spec: &CommandSpec) -> Option<Reply> {
    use flags::{MAY_REPLICATE, READONLY, WRITE};
    if client.shared.pubsub.monitor.load(Ordering::Relaxed)
        && (spec.has(WRITE) || spec.has(READONLY) || spec.has(MAY_REPLICATE))
    {
        return Some(Reply::error("ERR Replica can't interact with the keyspace"));
    }
    None
}
