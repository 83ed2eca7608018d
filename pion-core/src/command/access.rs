//! Who may run what, applied to clients: the user a client runs as, the dispatcher's
//! permission check and its log, protected mode for a new peer, and the connections
//! closed when users change. The users and their rules are [`crate::acl`]'s.

use std::net::IpAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::acl::{self, Denial, User};
use crate::clients::ClientState;
use crate::command::{flags, key_indices, BeginSearch, CommandSpec};
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
    match check(user, spec, full_name, slot, argv) {
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
    check(client_user(engine, client), spec, full_name, slot, argv).is_ok()
}

/// Checks a command (resolved as `spec`) against a user's rules: the table's view of
/// it ([`acl::Request`]) judged by [`acl::check`]. `ACL DRYRUN` asks this too.
pub fn check(
    user: &User,
    spec: &'static CommandSpec,
    full_name: &'static str,
    slot: usize,
    argv: &[Vec<u8>],
) -> Result<(), Denial> {
    if user.unrestricted() {
        return Ok(());
    }
    let keys_are_channels =
        !spec.key_specs.is_empty() && spec.key_specs.iter().all(|k| k.flags.contains(&"not_key"));
    let keys = if keys_are_channels || !user.restricts_keys() {
        Vec::new()
    } else {
        let positions = key_indices(spec, argv).unwrap_or_default();
        key_access(spec, argv, &positions)
    };
    acl::check(
        user,
        &acl::Request {
            full_name,
            slot,
            no_auth: spec.has(flags::NO_AUTH),
            argv,
            keys: &keys,
            keys_are_channels,
        },
    )
}

/// The keys of a command with the access each needs (read, write), from the key
/// specifications: `access` reads, `insert`, `update` and `delete` write. A key is
/// attributed to the last specification that begins at or before it.
fn key_access(spec: &CommandSpec, argv: &[Vec<u8>], keys: &[usize]) -> Vec<(usize, bool, bool)> {
    let needs = |flags: &[&str]| {
        let has = |f: &str| flags.iter().any(|x| x.eq_ignore_ascii_case(f));
        let mut read = has("access");
        let write = has("insert") || has("update") || has("delete");
        let mut write = write;
        if has("variable_flags") {
            if spec.name == "bitfield" {
                // BITFIELD always reads; it writes only with SET or INCRBY.
                write = crate::command::handlers::strings::bitfield_writes(argv);
            } else {
                // SET reads its key only when asked to return the old value.
                read = argv.iter().skip(3).any(|a| a.eq_ignore_ascii_case(b"get"));
            }
        }
        (read, write)
    };
    let union = spec
        .key_specs
        .iter()
        .filter(|k| !k.flags.contains(&"not_key"))
        .map(|k| needs(k.flags))
        .fold(None, |acc: Option<(bool, bool)>, (r, w)| {
            Some(acc.map_or((r, w), |(ar, aw)| (ar | r, aw | w)))
        })
        .unwrap_or((!spec.has(flags::WRITE), spec.has(flags::WRITE)));
    keys.iter()
        .map(|&pos| {
            let by_index = spec
                .key_specs
                .iter()
                .filter_map(|k| match k.begin {
                    BeginSearch::Index(i) if i >= 0 && (i as usize) <= pos => Some((i, k)),
                    _ => None,
                })
                .max_by_key(|(i, _)| *i);
            let all_indexed = spec
                .key_specs
                .iter()
                .all(|k| matches!(k.begin, BeginSearch::Index(_)));
            // A key the command's own finder placed takes the flags of the spec it
            // belongs to (`SORT src … STORE dst`: the source reads, the destination
            // writes), as Redis's finders flag them.
            let (read, write) = match by_index {
                Some((_, k)) if all_indexed => needs(k.flags),
                _ if spec.keys.find.is_some() && !spec.key_specs.is_empty() => needs(
                    crate::command::introspect::flags_of_found_key(spec, argv, pos),
                ),
                _ => union,
            };
            (pos, read, write)
        })
        .collect()
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
