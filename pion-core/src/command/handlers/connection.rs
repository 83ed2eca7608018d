//! Connection commands: PING, ECHO, SELECT, HELLO, AUTH, QUIT, RESET and CLIENT.

use std::sync::atomic::Ordering;

use crate::clients::client_line;
use crate::command::ctx::Ctx;
use crate::command::flags::*;
use crate::command::handlers::util::{int, is_kw, text};
use crate::command::{CommandSpec, Group};
use crate::error::{OpError, OpResult};
use crate::reply::Reply;

const CONN: u64 = NOSCRIPT | LOADING | STALE;

/// This family's part of the command table.
pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("ping", -1, FAST | PUBSUB_CONTEXT, Group::Connection, ping)
        .tips(&["request_policy:all_shards", "response_policy:all_succeeded"])
        .doc("Returns the server's liveliness response.", "1.0.0"),
    CommandSpec::new("echo", 2, LOADING | STALE | FAST, Group::Connection, echo)
        .doc("Returns the given string.", "1.0.0"),
    CommandSpec::new(
        "select",
        2,
        LOADING | STALE | FAST,
        Group::Connection,
        select,
    )
    .doc("Changes the selected database.", "1.0.0"),
    CommandSpec::new(
        "hello",
        -1,
        CONN | FAST | NO_AUTH | ALLOW_BUSY | REDACTS_AUTH,
        Group::Connection,
        hello,
    )
    .doc("Handshakes with the Redis server.", "6.0.0"),
    CommandSpec::new(
        "auth",
        -2,
        CONN | FAST | NO_AUTH | ALLOW_BUSY | REDACTS_AUTH,
        Group::Connection,
        auth,
    )
    .doc("Authenticates the connection.", "1.0.0"),
    CommandSpec::new(
        "quit",
        -1,
        CONN | FAST | NO_AUTH | ALLOW_BUSY | TX_CONTROL | PUBSUB_CONTEXT,
        Group::Connection,
        quit,
    )
    .doc("Closes the connection.", "1.0.0"),
    CommandSpec::new(
        "reset",
        1,
        CONN | FAST | NO_AUTH | ALLOW_BUSY | TX_CONTROL | PUBSUB_CONTEXT,
        Group::Connection,
        reset,
    )
    .doc("Resets the connection.", "6.2.0"),
    // Cluster replicas' read-only mode: Pion runs without cluster support, and says
    // so as redis-server does in that case.
    CommandSpec::new(
        "readonly",
        1,
        LOADING | STALE | FAST,
        Group::Connection,
        cluster_disabled,
    )
    .doc(
        "Enables read queries for a connection to a cluster replica node",
        "3.0.0",
    ),
    CommandSpec::new(
        "readwrite",
        1,
        LOADING | STALE | FAST,
        Group::Connection,
        cluster_disabled,
    )
    .doc(
        "Disables read queries for a connection to a cluster replica node",
        "3.0.0",
    ),
    CommandSpec::container("client", Group::Connection, CLIENT_SUBCOMMANDS)
        .doc("A container for client connection commands.", "2.4.0"),
];

fn cluster_disabled(_: &mut Ctx<'_>, _: &[Vec<u8>]) -> OpResult<Reply> {
    Err(OpError::custom(
        "ERR This instance has cluster support disabled",
    ))
}

static CLIENT_SUBCOMMANDS: &[CommandSpec] = &[
    CommandSpec::new("id", 2, CONN, Group::Connection, client_id)
        .doc("Returns the unique client ID of the connection.", "5.0.0"),
    CommandSpec::new("setname", 3, CONN, Group::Connection, client_setname)
        .doc("Sets the connection name.", "2.6.9"),
    CommandSpec::new("getname", 2, CONN, Group::Connection, client_getname)
        .doc("Returns the name of the connection.", "2.6.9"),
    CommandSpec::new("list", -2, ADMIN | CONN, Group::Connection, client_list)
        .tips(&["nondeterministic_output"])
        .doc("Lists open connections.", "2.4.0"),
    CommandSpec::new("info", 2, CONN, Group::Connection, client_info)
        .tips(&["nondeterministic_output"])
        .doc("Returns information about the connection.", "6.2.0"),
    CommandSpec::new("kill", -3, ADMIN | CONN, Group::Connection, client_kill)
        .doc("Terminates open connections.", "2.4.0"),
    CommandSpec::new("setinfo", 4, CONN, Group::Connection, client_setinfo).doc(
        "Sets information specific to the client or connection.",
        "7.2.0",
    ),
    CommandSpec::new(
        "no-evict",
        3,
        ADMIN | CONN,
        Group::Connection,
        client_no_evict,
    )
    .doc("Sets the client eviction mode of the connection.", "7.0.0"),
    CommandSpec::new("reply", 3, CONN, Group::Connection, client_reply)
        .doc("Instruct the server whether to reply to commands", "3.2.0"),
    CommandSpec::new(
        "unblock",
        -3,
        ADMIN | CONN,
        Group::Connection,
        client_unblock,
    )
    .doc(
        "Unblock a client blocked in a blocking command from a different connection",
        "5.0.0",
    ),
    CommandSpec::new("no-touch", 3, CONN, Group::Connection, client_no_touch).doc(
        "Controls whether commands sent by the client affect the LRU/LFU of accessed keys.",
        "7.2.0",
    ),
    CommandSpec::new(
        "pause",
        -3,
        ADMIN | CONN,
        Group::Connection,
        super::pause::client_pause,
    )
    .doc(
        "Suspends commands processing (all, or those that write).",
        "2.9.50",
    ),
    CommandSpec::new(
        "unpause",
        2,
        ADMIN | CONN,
        Group::Connection,
        super::pause::client_unpause,
    )
    .doc("Resumes processing of clients that were paused.", "6.2.0"),
    CommandSpec::new("help", 2, LOADING | STALE, Group::Connection, client_help).doc(
        "Returns helpful text about the different subcommands.",
        "5.0.0",
    ),
    crate::command::handlers::pubsub::CLIENT_TRACKING_SUBCOMMANDS[0],
    crate::command::handlers::pubsub::CLIENT_TRACKING_SUBCOMMANDS[1],
    crate::command::handlers::pubsub::CLIENT_TRACKING_SUBCOMMANDS[2],
    crate::command::handlers::pubsub::CLIENT_TRACKING_SUBCOMMANDS[3],
];

fn ping(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    if ctx.client.resp == 2 && ctx.client.subs.active() && argv.len() <= 2 {
        // A RESP2 subscriber gets the pong as a two-element array, as in Redis.
        let arg = argv.get(1).map_or(&[][..], Vec::as_slice);
        return Ok(Reply::Array(vec![Reply::bulk("pong"), Reply::bulk(arg)]));
    }
    match argv.len() {
        1 => Ok(Reply::status("PONG")),
        2 => Ok(Reply::bulk(&argv[1])),
        _ => Err(OpError::WrongArity("ping".into())),
    }
}

fn echo(_: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    Ok(Reply::bulk(&argv[1]))
}

fn select(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let db = int(&argv[1])?;
    if db < 0 || db as usize >= ctx.keyspace().databases() {
        return Err(OpError::DbIndexOutOfRange);
    }
    ctx.client.select(db as usize);
    Ok(Reply::ok())
}

/// Authenticates the client as `user` if `pass` opens it; a failure is logged in
/// `ACL LOG` and answered with `WRONGPASS`.
fn login(ctx: &mut Ctx<'_>, user: &[u8], pass: &[u8]) -> OpResult<()> {
    match ctx.acl().authenticate(user, pass) {
        Some(u) => {
            crate::command::access::set_client_user(ctx.client, Some(u));
            ctx.client.authenticated = true;
            Ok(())
        }
        None => {
            let info = client_line(&ctx.client.shared, ctx.engine().now_ms());
            let entry = crate::acl::log::Denied {
                reason: crate::acl::Reason::Auth,
                context: if ctx.client.nested.is_some() {
                    "multi"
                } else {
                    "toplevel"
                },
                object: "AUTH".into(),
                username: text(user),
                client_info: info,
            };
            let max = ctx.config().with(|c| c.acllog_max_len);
            ctx.acl().log(entry, max);
            Err(OpError::custom(WRONGPASS))
        }
    }
}

const WRONGPASS: &str = "WRONGPASS invalid username-password pair or user is disabled.";

fn auth(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    if argv.len() > 3 {
        return Err(OpError::Syntax);
    }
    let (user, pass): (&[u8], &[u8]) = if argv.len() == 2 {
        (b"default", &argv[1])
    } else {
        (&argv[1], &argv[2])
    };
    if argv.len() == 2 && ctx.acl().default_user().rules().nopass {
        return Err(OpError::custom(
            "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?",
        ));
    }
    login(ctx, user, pass)?;
    Ok(Reply::ok())
}

fn hello(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let mut proto = None;
    let mut j = 1;
    if argv.len() >= 2 {
        let v = crate::util::num::parse_i64(&argv[1]).ok_or_else(|| {
            OpError::custom("ERR Protocol version is not an integer or out of range")
        })?;
        if !(2..=3).contains(&v) {
            return Err(OpError::custom("NOPROTO unsupported protocol version"));
        }
        proto = Some(v as u8);
        j = 2;
    }
    let mut creds: Option<(&[u8], &[u8])> = None;
    let mut name: Option<&[u8]> = None;
    while j < argv.len() {
        let more = argv.len() - j - 1;
        if is_kw(&argv[j], "auth") && more >= 2 {
            creds = Some((&argv[j + 1], &argv[j + 2]));
            j += 3;
        } else if is_kw(&argv[j], "setname") && more >= 1 {
            name = Some(&argv[j + 1]);
            j += 2;
        } else {
            return Err(OpError::custom(format!(
                "ERR Syntax error in HELLO option '{}'",
                text(&argv[j])
            )));
        }
    }
    if let Some((user, pass)) = creds {
        login(ctx, user, pass)?;
    }
    if !ctx.client.authenticated {
        return Err(OpError::custom(
            "NOAUTH HELLO must be called with the client already authenticated, otherwise the HELLO AUTH <user> <pass> option can be used to authenticate the client and select the RESP protocol version at the same time",
        ));
    }
    if let Some(name) = name {
        set_name(ctx, name)?;
    }
    if let Some(p) = proto {
        ctx.client.set_resp(p);
    }
    let s = |t: &'static str| Reply::bulk(t);
    Ok(Reply::Map(vec![
        (s("server"), s("redis")),
        (s("version"), s(crate::REDIS_VERSION)),
        (s("proto"), Reply::Integer(i64::from(ctx.client.resp))),
        (s("id"), Reply::Integer(ctx.client.id() as i64)),
        (s("mode"), s("standalone")),
        (s("role"), s("master")),
        (s("modules"), Reply::Array(vec![])),
    ]))
}

fn quit(ctx: &mut Ctx<'_>, _: &[Vec<u8>]) -> OpResult<Reply> {
    ctx.client.close_after_reply = true;
    Ok(Reply::ok())
}

fn reset(ctx: &mut Ctx<'_>, _: &[Vec<u8>]) -> OpResult<Reply> {
    crate::command::pubsub::reset_client(ctx.engine(), ctx.client);
    ctx.client.select(0);
    ctx.client.set_resp(2);
    ctx.client.no_evict = false;
    ctx.client.no_touch = false;
    ctx.client.authenticated = !ctx.engine().requires_auth();
    crate::command::access::set_client_user(ctx.client, None);
    ctx.client.shared.text.lock().name.clear();
    ctx.client.multi = None;
    ctx.client.shared.multi.store(-1, Ordering::Relaxed);
    ctx.client.watches.clear();
    Ok(Reply::status("RESET"))
}

fn client_id(ctx: &mut Ctx<'_>, _: &[Vec<u8>]) -> OpResult<Reply> {
    Ok(Reply::Integer(ctx.client.id() as i64))
}

fn set_name(ctx: &mut Ctx<'_>, name: &[u8]) -> OpResult<()> {
    if name.iter().any(|&c| !(b'!'..=b'~').contains(&c)) {
        return Err(OpError::custom(
            "ERR Client names cannot contain spaces, newlines or special characters.",
        ));
    }
    ctx.client.shared.text.lock().name = name.to_vec();
    Ok(())
}

fn client_setname(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    set_name(ctx, &argv[2])?;
    Ok(Reply::ok())
}

fn client_getname(ctx: &mut Ctx<'_>, _: &[Vec<u8>]) -> OpResult<Reply> {
    let name = ctx.client.shared.text.lock().name.clone();
    Ok(if name.is_empty() {
        Reply::Null
    } else {
        Reply::Bulk(name)
    })
}

fn client_setinfo(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let value = &argv[3];
    if value.iter().any(|&c| !(b'!'..=b'~').contains(&c)) {
        return Err(OpError::custom(format!(
            "ERR {} cannot contain spaces, newlines or special characters.",
            text(&argv[2]).to_ascii_uppercase()
        )));
    }
    let mut t = ctx.client.shared.text.lock();
    if is_kw(&argv[2], "lib-name") {
        t.lib_name = value.clone();
    } else if is_kw(&argv[2], "lib-ver") {
        t.lib_ver = value.clone();
    } else {
        return Err(OpError::custom(format!(
            "ERR Unrecognized option '{}'",
            text(&argv[2])
        )));
    }
    Ok(Reply::ok())
}

fn on_off(arg: &[u8]) -> OpResult<bool> {
    if is_kw(arg, "on") {
        Ok(true)
    } else if is_kw(arg, "off") {
        Ok(false)
    } else {
        Err(OpError::Syntax)
    }
}

fn client_no_evict(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    ctx.client.no_evict = on_off(&argv[2])?;
    Ok(Reply::ok())
}

/// `CLIENT REPLY ON|OFF|SKIP`: OFF and SKIP are not answered themselves.
fn client_reply(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    use crate::clients::ReplyMode;
    let mode = if is_kw(&argv[2], "on") {
        ReplyMode::On
    } else if is_kw(&argv[2], "off") {
        ReplyMode::Off
    } else if is_kw(&argv[2], "skip") {
        ReplyMode::SkipNext
    } else {
        return Err(OpError::Syntax);
    };
    ctx.client.reply_mode = mode;
    ctx.client.suppress_reply = mode != ReplyMode::On;
    Ok(Reply::ok())
}

/// `CLIENT UNBLOCK id [TIMEOUT|ERROR]`: ends another client's wait on keys.
fn client_unblock(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let id = int(&argv[2])?;
    let how = match argv.get(3) {
        None => crate::clients::blocking::Unblock::Timeout,
        Some(a) if is_kw(a, "timeout") && argv.len() == 4 => {
            crate::clients::blocking::Unblock::Timeout
        }
        Some(a) if is_kw(a, "error") && argv.len() == 4 => crate::clients::blocking::Unblock::Error,
        Some(_) => {
            return Err(OpError::custom(
                "ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR",
            ))
        }
    };
    let Ok(id) = u64::try_from(id) else {
        return Ok(Reply::Integer(0));
    };
    let blocking = ctx.blocking();
    let command = blocking.blocked_command(id);
    let errs = matches!(how, crate::clients::blocking::Unblock::Error);
    let unblocked = blocking.unblock(id, how);
    if let (true, true, Some(command)) = (unblocked, errs, command) {
        // The blocked command ends with an error reply: counted as Redis counts it.
        ctx.engine().count_error("UNBLOCKED");
        if let Ok(resolved) = crate::command::resolve(&command) {
            ctx.engine().command_stats().fail(resolved.stat);
        }
    }
    Ok(Reply::Integer(i64::from(unblocked)))
}

fn client_no_touch(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    ctx.client.no_touch = on_off(&argv[2])?;
    Ok(Reply::ok())
}

fn client_list(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let mut ids: Option<Vec<u64>> = None;
    let mut j = 2;
    while j < argv.len() {
        if is_kw(&argv[j], "type") && j + 1 < argv.len() {
            let t = &argv[j + 1];
            if !["normal", "master", "replica", "slave", "pubsub"]
                .iter()
                .any(|k| is_kw(t, k))
            {
                return Err(OpError::custom(format!(
                    "ERR Unknown client type '{}'",
                    text(t)
                )));
            }
            // Pub/Sub: subscribers are the `pubsub` type, everyone else `normal`.
            let want = text(t).to_ascii_lowercase();
            let listed: Vec<u64> = ctx
                .clients()
                .snapshot()
                .iter()
                .filter(|c| crate::clients::client_type(c) == want)
                .map(|c| c.id)
                .collect();
            ids = Some(listed);
            j += 2;
        } else if is_kw(&argv[j], "id") && j + 1 < argv.len() {
            let mut v = ids.take().unwrap_or_default();
            for a in &argv[j + 1..] {
                let id = crate::util::num::parse_i64(a)
                    .filter(|&i| i > 0)
                    .ok_or_else(|| OpError::custom("ERR Invalid client ID"))?;
                v.push(id as u64);
            }
            ids = Some(v);
            j = argv.len();
        } else {
            return Err(OpError::Syntax);
        }
    }
    let now = ctx.now_ms();
    let mut out = String::new();
    for c in ctx.clients().snapshot() {
        if ids.as_ref().is_some_and(|v| !v.contains(&c.id)) {
            continue;
        }
        out.push_str(&client_line(&c, now));
        out.push('\n');
    }
    Ok(Reply::Verbatim("txt", out.into_bytes()))
}

fn client_info(ctx: &mut Ctx<'_>, _: &[Vec<u8>]) -> OpResult<Reply> {
    let mut line = client_line(&ctx.client.shared, ctx.now_ms());
    line.push('\n');
    Ok(Reply::Verbatim("txt", line.into_bytes()))
}

fn client_kill(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let clients = ctx.clients().snapshot();
    if argv.len() == 3 {
        // Old form: CLIENT KILL addr:port.
        let target = text(&argv[2]);
        let victim = clients
            .iter()
            .find(|c| c.addr == target)
            .ok_or_else(|| OpError::custom("ERR No such client"))?;
        victim.kill();
        return Ok(Reply::ok());
    }
    let (mut id, mut addr, mut laddr, mut skipme, mut user) = (None, None, None, true, None);
    let mut type_matches: Option<String> = None;
    let mut j = 2;
    while j < argv.len() {
        let Some(value) = argv.get(j + 1) else {
            return Err(OpError::Syntax);
        };
        let opt = &argv[j];
        if is_kw(opt, "id") {
            let v = crate::util::num::parse_i64(value)
                .filter(|&i| i > 0)
                .ok_or_else(|| OpError::custom("ERR client-id should be greater than 0"))?;
            id = Some(v as u64);
        } else if is_kw(opt, "addr") {
            addr = Some(text(value));
        } else if is_kw(opt, "laddr") {
            laddr = Some(text(value));
        } else if is_kw(opt, "user") {
            let name = text(value);
            if ctx.acl().user(&name).is_none() {
                return Err(OpError::custom(format!("ERR No such user '{name}'")));
            }
            user = Some(name);
        } else if is_kw(opt, "type") {
            if !["normal", "master", "replica", "slave", "pubsub"]
                .iter()
                .any(|k| is_kw(value, k))
            {
                return Err(OpError::custom(format!(
                    "ERR Unknown client type '{}'",
                    text(value)
                )));
            }
            type_matches = Some(text(value).to_ascii_lowercase());
        } else if is_kw(opt, "skipme") {
            skipme = if is_kw(value, "yes") {
                true
            } else if is_kw(value, "no") {
                false
            } else {
                return Err(OpError::Syntax);
            };
        } else {
            return Err(OpError::Syntax);
        }
        j += 2;
    }
    let me = ctx.client.id();
    let mut killed = 0;
    for c in clients {
        let matches = id.is_none_or(|i| i == c.id)
            && addr.as_ref().is_none_or(|a| *a == c.addr)
            && laddr.as_ref().is_none_or(|a| *a == c.laddr)
            && user.as_ref().is_none_or(|u| {
                let t = c.text.lock();
                let name: &[u8] = if t.user.is_empty() {
                    b"default"
                } else {
                    &t.user
                };
                u.as_bytes() == name
            })
            && type_matches
                .as_ref()
                .is_none_or(|t| crate::clients::client_type(&c) == t)
            && !(skipme && c.id == me);
        if matches {
            if c.id == me {
                ctx.client.close_after_reply = true;
            } else {
                c.kill();
            }
            killed += 1;
        }
    }
    Ok(Reply::Integer(killed))
}

fn client_help(_: &mut Ctx<'_>, _: &[Vec<u8>]) -> OpResult<Reply> {
    Ok(Reply::Array(
        [
            "CLIENT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "CACHING (YES|NO)",
            "    Enable/disable tracking of the keys for next command in OPTIN/OPTOUT modes.",
            "GETREDIR",
            "    Return the client ID we are redirecting to when tracking is enabled.",
            "GETNAME",
            "    Return the name of the current connection.",
            "ID",
            "    Return the ID of the current connection.",
            "INFO",
            "    Return information about the current client connection.",
            "KILL <ip:port>",
            "    Kill connection made from <ip:port>.",
            "KILL <option> <value> [<option> <value> [...]]",
            "    Kill connections. Options are:",
            "    * ADDR (<ip:port>|<unixsocket>:0)",
            "      Kill connections made from the specified address",
            "    * LADDR (<ip:port>|<unixsocket>:0)",
            "      Kill connections made to specified local address",
            "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
            "      Kill connections by type.",
            "    * USER <username>",
            "      Kill connections authenticated by <username>.",
            "    * SKIPME (YES|NO)",
            "      Skip killing current connection (default: yes).",
            "LIST [options ...]",
            "    Return information about client connections. Options:",
            "    * TYPE (NORMAL|MASTER|REPLICA|PUBSUB)",
            "      Return clients of specified type.",
            "UNPAUSE",
            "    Stop the current client pause, resuming traffic.",
            "PAUSE <timeout> [WRITE|ALL]",
            "    Suspend all, or just write, clients for <timeout> milliseconds.",
            "REPLY (ON|OFF|SKIP)",
            "    Control the replies sent to the current connection.",
            "SETNAME <name>",
            "    Assign the name <name> to the current connection.",
            "UNBLOCK <clientid> [TIMEOUT|ERROR]",
            "    Unblock the specified blocked client.",
            "TRACKING (ON|OFF) [REDIRECT <id>] [BCAST] [PREFIX <prefix> [...]]",
            "         [OPTIN] [OPTOUT] [NOLOOP]",
            "    Control server assisted client side caching.",
            "TRACKINGINFO",
            "    Report tracking status for the current connection.",
            "NO-EVICT (ON|OFF)",
            "    Protect current client connection from eviction.",
            // Two subcommands Redis added after 7.0, which Pion offers too.
            "NO-TOUCH (ON|OFF)",
            "    Commands of this client do not change keys' access time.",
            "SETINFO <LIB-NAME|LIB-VER> <value>",
            "    Set client library name or version.",
            "HELP",
            "    Prints this help.",
        ]
        .iter()
        .map(|l| Reply::status(l))
        .collect(),
    ))
}
