//! Who may run what, applied to clients: the user a client runs as, the dispatcher's
//! permission check and its log, protected mode for a new peer, and the connections
//! closed when users change. The users and their rules are [`acl`](crate::acl)'s.

use std::net::IpAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::acl::{self, User};
use crate::clients::ClientState;
use crate::command::CommandSpec;
use crate::engine::Engine;
use crate::error::OpError;

/// The user a client runs as.
pub fn client_user<'a>(engine: &'a Engine, client: &'a ClientState) -> &'a Arc<User> {
    client
        .acl_user
        .as_ref()
        .unwrap_or_else(|| engine.acl().default_user())
}

/// Makes `user` the client's user (after `AUTH`, `HELLO … AUTH`, `RESET`).
pub fn set_client_user(client: &mut ClientState, user: Option<Arc<User>>) {
    let name = user.as_ref().map_or("default", |u| u.name()).to_string();
    client.shared.text.lock().user = name.clone().into_bytes();
    client.user = name;
    client.acl_user = user;
}

/// The dispatcher's check: may the client's user run this command with these
/// arguments? A refusal is logged and becomes the `NOPERM` error.
pub fn permit(
    engine: &Engine,
    client: &ClientState,
    spec: &'static CommandSpec,
    full_name: &'static str,
    slot: usize,
    argv: &[Vec<u8>],
) -> Result<(), OpError> {
    let user = client_user(engine, client);
    if user.unrestricted() {
        return Ok(());
    }
    match acl::check(user, spec, full_name, slot, argv) {
        Ok(()) => Ok(()),
        Err(denial) => {
            // The log's client line names the refused command, as Redis's does.
            client.shared.last_cmd.store(slot, Ordering::Relaxed);
            let (reason, object) = denial.reason();
            let info = crate::clients::client_line(&client.shared, engine.now_ms());
            let context = match &client.nested {
                Some(n) if n.in_script => "lua",
                Some(_) => "multi",
                None if client.multi.is_some() => "multi",
                None => "toplevel",
            };
            let entry = acl::log::Denied {
                reason,
                context,
                object,
                username: user.name().to_string(),
                client_info: info,
            };
            engine
                .acl()
                .log(entry, engine.config().with(|c| c.acllog_max_len));
            Err(denial.error())
        }
    }
}

/// Whether the client's user may run `argv` (resolved as `spec`), without logging a
/// refusal: `redis.acl_check_cmd` in scripts.
pub fn may_run(
    engine: &Engine,
    client: &ClientState,
    spec: &'static CommandSpec,
    full_name: &'static str,
    slot: usize,
    argv: &[Vec<u8>],
) -> bool {
    let user = client_user(engine, client);
    user.unrestricted() || acl::check(user, spec, full_name, slot, argv).is_ok()
}

/// Kills the connections of these users (deleted or replaced), as Redis does.
pub fn disconnect(engine: &Engine, users: &[Arc<User>], me: &mut ClientState) {
    if users.is_empty() {
        return;
    }
    for c in engine.clients().snapshot() {
        let name = c.text.lock().user.clone();
        if users.iter().any(|u| u.name().as_bytes() == name.as_slice()) {
            if c.id == me.id() {
                me.close_after_reply = true;
            } else {
                c.kill();
            }
        }
    }
}

/// After `user`'s rules changed: closes its connections subscribed to a channel or
/// pattern it may no longer use, as Redis does (they would keep receiving what the
/// user is now refused).
pub fn kill_revoked_subscribers(engine: &Engine, user: &User, me: &mut ClientState) {
    if user.all_channels() {
        return;
    }
    let name = user.name().as_bytes();
    for (client, channel, kind) in engine.pubsub().subscriptions() {
        let is_pattern = kind == crate::pubsub::Kind::Pattern;
        if client.text.lock().user.as_slice() != name
            || acl::check_channel(user, &channel, is_pattern).is_ok()
        {
            continue;
        }
        if client.id == me.id() {
            me.close_after_reply = true;
        } else {
            client.kill();
        }
    }
}

/// Whether `engine` refuses a client connecting from `peer`.
pub fn refuses_peer(engine: &Engine, peer: IpAddr) -> bool {
    let protected = engine.config().with(|c| c.protected_mode);
    protected && acl::protected::refuses(true, engine.acl().default_user().rules().nopass, peer)
}
