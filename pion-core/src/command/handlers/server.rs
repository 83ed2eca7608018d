//! Server commands: DBSIZE, FLUSHDB, FLUSHALL, SWAPDB, TIME, CONFIG, INFO, COMMAND and
//! SHUTDOWN.

use crate::command::ctx::Ctx;
use crate::command::flags::*;
use crate::command::handlers::util::{int, is_kw, text};
use crate::command::introspect;
use crate::command::{CommandSpec, Group};
use crate::config::ConfigError;
use crate::error::{OpError, OpResult};
use crate::reply::Reply;

const INTRO: u64 = LOADING | STALE;

/// This family's part of the command table.
pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new(
        "dbsize",
        1,
        READONLY | FAST | KEYSPACE,
        Group::Server,
        dbsize,
    )
    .tips(&["request_policy:all_shards", "response_policy:agg_sum"])
    .doc("Returns the number of keys in the database.", "1.0.0"),
    CommandSpec::new(
        "flushdb",
        -1,
        WRITE | KEYSPACE | DANGEROUS,
        Group::Server,
        flushdb,
    )
    .tips(&["request_policy:all_shards", "response_policy:all_succeeded"])
    .whole_keyspace()
    .doc("Removes all keys from the current database.", "1.0.0"),
    CommandSpec::new(
        "flushall",
        -1,
        WRITE | KEYSPACE | DANGEROUS,
        Group::Server,
        flushall,
    )
    .tips(&["request_policy:all_shards", "response_policy:all_succeeded"])
    .whole_keyspace()
    .doc("Removes all keys from all databases.", "1.0.0"),
    CommandSpec::new(
        "swapdb",
        3,
        WRITE | FAST | KEYSPACE | DANGEROUS,
        Group::Server,
        swapdb,
    )
    .whole_keyspace()
    .doc("Swaps two Redis databases.", "4.0.0"),
    CommandSpec::new("time", 1, LOADING | STALE | FAST, Group::Server, time)
        .tips(&["nondeterministic_output"])
        .doc("Returns the server time.", "2.6.0"),
    CommandSpec::new(
        "shutdown",
        -1,
        ADMIN | NOSCRIPT | LOADING | STALE | NO_MULTI | ALLOW_BUSY,
        Group::Server,
        shutdown,
    )
    .doc(
        "Flushes the write-ahead log and shuts down the server (SAVE also takes a snapshot first).",
        "1.0.0",
    ),
    CommandSpec::new(
        "info",
        -1,
        LOADING | STALE | DANGEROUS,
        Group::Server,
        crate::command::handlers::info::info,
    )
    .tips(&[
        "nondeterministic_output",
        "request_policy:all_shards",
        "response_policy:special",
    ])
    .doc(
        "Returns information and statistics about the server.",
        "1.0.0",
    ),
    CommandSpec::container("memory", Group::Server, super::memory::SUBCOMMANDS)
        .doc("A container for memory diagnostics commands.", "4.0.0"),
    CommandSpec::container("slowlog", Group::Server, super::latency::SLOWLOG)
        .doc("A container for slow log commands.", "2.2.12"),
    CommandSpec::container("latency", Group::Server, super::latency::LATENCY)
        .doc("A container for latency diagnostics commands.", "2.8.13"),
    CommandSpec::container("config", Group::Server, CONFIG_SUBCOMMANDS)
        .doc("A container for server configuration commands.", "2.0.0"),
    CommandSpec::new("command", -1, INTRO, Group::Connection, introspect::command)
        .tips(&["nondeterministic_output_order"])
        .with_subcommands(introspect::SUBCOMMANDS)
        .doc("Returns detailed information about all commands.", "2.8.13"),
];

static CONFIG_SUBCOMMANDS: &[CommandSpec] = &[
    CommandSpec::new(
        "rewrite",
        2,
        ADMIN | NOSCRIPT | LOADING | STALE,
        Group::Server,
        config_rewrite,
    )
    .tips(&["request_policy:all_nodes", "response_policy:all_succeeded"])
    .doc("Persists the effective configuration to file.", "2.8.0"),
    CommandSpec::new(
        "get",
        -3,
        ADMIN | NOSCRIPT | LOADING | STALE,
        Group::Server,
        config_get,
    )
    .doc(
        "Returns the effective values of configuration parameters.",
        "2.0.0",
    ),
    CommandSpec::new(
        "set",
        -4,
        ADMIN | NOSCRIPT | LOADING | STALE,
        Group::Server,
        config_set,
    )
    .tips(&["request_policy:all_nodes", "response_policy:all_succeeded"])
    .doc("Sets configuration parameters in-flight.", "2.0.0"),
    CommandSpec::new(
        "resetstat",
        2,
        ADMIN | NOSCRIPT | LOADING | STALE,
        Group::Server,
        config_resetstat,
    )
    .doc("Resets the server's statistics.", "2.0.0"),
    CommandSpec::new("help", 2, LOADING | STALE, Group::Server, config_help).doc(
        "Returns helpful text about the different subcommands.",
        "5.0.0",
    ),
];

/// `DBSIZE` counts shard by shard (like `SCAN`) instead of stopping every thread.
fn dbsize(ctx: &mut Ctx<'_>, _: &[Vec<u8>]) -> OpResult<Reply> {
    Ok(Reply::Integer(ctx.keyspace().db_size(ctx.db()) as i64))
}

/// FLUSHDB/FLUSHALL accept one optional ASYNC or SYNC.
fn flush_mode(argv: &[Vec<u8>]) -> OpResult<()> {
    match argv.len() {
        1 => Ok(()),
        2 if is_kw(&argv[1], "async") || is_kw(&argv[1], "sync") => Ok(()),
        _ => Err(OpError::Syntax),
    }
}

fn flushdb(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    flush_mode(argv)?;
    let db = ctx.db();
    ctx.ks.flush_db(db)?;
    crate::command::pubsub::flushed(ctx);
    Ok(Reply::ok())
}

fn flushall(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    flush_mode(argv)?;
    for db in 0..ctx.keyspace().databases() {
        ctx.ks.flush_db(db)?;
    }
    crate::command::pubsub::flushed(ctx);
    Ok(Reply::ok())
}

fn swapdb(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let a = crate::util::num::parse_i64(&argv[1])
        .ok_or_else(|| OpError::custom("ERR invalid first DB index"))?;
    let b = crate::util::num::parse_i64(&argv[2])
        .ok_or_else(|| OpError::custom("ERR invalid second DB index"))?;
    let n = ctx.keyspace().databases() as i64;
    if a < 0 || a >= n || b < 0 || b >= n {
        return Err(OpError::DbIndexOutOfRange);
    }
    ctx.ks.swap_db(a as usize, b as usize)?;
    Ok(Reply::ok())
}

fn time(ctx: &mut Ctx<'_>, _: &[Vec<u8>]) -> OpResult<Reply> {
    // The engine's clock: the one its expiry and idle times follow.
    let now_us = ctx.engine().clock().unix_us();
    Ok(Reply::Array(vec![
        Reply::bulk(now_us.div_euclid(1_000_000).to_string()),
        Reply::bulk(now_us.rem_euclid(1_000_000).to_string()),
    ]))
}

fn shutdown(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let mut abort = false;
    let mut save = false;
    let mut nosave = false;
    for a in &argv[1..] {
        if is_kw(a, "abort") {
            abort = true;
        } else if is_kw(a, "save") {
            save = true;
        } else if is_kw(a, "nosave") {
            nosave = true;
        } else if !["now", "force"].iter().any(|k| is_kw(a, k)) {
            return Err(OpError::Syntax);
        }
    }
    if abort {
        return Err(OpError::custom("ERR No shutdown in progress."));
    }
    // Past the busy threshold a script can only be stopped with what it did so far
    // thrown away: `SHUTDOWN NOSAVE` does that (killing even a script that wrote),
    // any other `SHUTDOWN` is refused as the other commands are.
    if ctx.engine().script_busy() {
        if !nosave || save {
            return Err(OpError::custom(ctx.engine().gate().busy().refusal()));
        }
        ctx.scripting().busy().kill_for_shutdown();
    }
    if save && ctx.durability().is_some() {
        if let Err(e) = crate::engine::persistence::take_snapshot(
            ctx.engine(),
            crate::durability::Waiting::ForAny,
        ) {
            crate::log_warning!("SHUTDOWN SAVE: the snapshot failed ({e}); not shutting down");
            return Err(OpError::custom(
                "ERR Errors trying to SHUTDOWN. Check logs.",
            ));
        }
    }
    ctx.engine().request_shutdown();
    ctx.client.close_after_reply = true;
    ctx.client.suppress_reply = true;
    Ok(Reply::ok())
}

fn config_get(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let patterns: Vec<&[u8]> = argv[2..].iter().map(Vec::as_slice).collect();
    let pairs = ctx.config().get_matching(&patterns);
    Ok(Reply::Map(
        pairs
            .into_iter()
            .map(|(k, v)| (Reply::bulk(k), Reply::bulk(v)))
            .collect(),
    ))
}

fn config_set(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    if !argv.len().is_multiple_of(2) {
        return Err(OpError::Syntax);
    }
    let owned: Vec<(String, String)> = argv[2..]
        .chunks(2)
        .map(|p| (text(&p[0]), text(&p[1])))
        .collect();
    for (i, (name, _)) in owned.iter().enumerate() {
        if owned[..i].iter().any(|(n, _)| n.eq_ignore_ascii_case(name)) {
            return Err(OpError::custom(format!("ERR CONFIG SET failed (possibly related to argument '{name}') - duplicate parameter")));
        }
    }
    let pairs: Vec<(&str, &str)> = owned
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    ctx.config().set_many(&pairs).map_err(|e| match e {
        ConfigError::Unknown(n) => OpError::custom(format!("ERR Unknown option or number of arguments for CONFIG SET - '{n}'")),
        ConfigError::Immutable(n) => {
            OpError::custom(format!("ERR CONFIG SET failed (possibly related to argument '{n}') - can't set immutable config"))
        }
        ConfigError::Invalid(n, why) => OpError::custom(format!("ERR CONFIG SET failed (possibly related to argument '{n}') - {why}")),
    })?;
    ctx.engine().config_changed();
    // A lower maxmemory evicts now, as in Redis (not at the next command).
    let _ = crate::command::eviction::before_command(ctx.engine(), false);
    // `requirepass` is the default user's password (set only when named, so that
    // changing another parameter keeps what ACL SETUSER gave the default user).
    if let Some((_, pass)) = pairs
        .iter()
        .find(|(n, _)| crate::config::Config::param(n).is_some_and(|p| p.name == "requirepass"))
    {
        ctx.acl().set_default_password(pass);
    }
    Ok(Reply::ok())
}

fn config_rewrite(ctx: &mut Ctx<'_>, _: &[Vec<u8>]) -> OpResult<Reply> {
    let file = ctx
        .engine()
        .config_file()
        .ok_or_else(|| OpError::custom("ERR The server is running without a config file"))?;
    let values = ctx.config().snapshot();
    // Without an ACL file the users live in the configuration file, as in Redis.
    let users = ctx.acl().file().is_none().then(|| {
        ctx.acl()
            .list()
            .into_iter()
            .filter(|l| l != "user default on nopass ~* &* +@all")
            .collect()
    });
    crate::config::file::rewrite(file, &values, users).map_err(|e| {
        crate::log_notice!("CONFIG REWRITE of {}: {e}", file.path.display());
        OpError::custom(format!("ERR Rewriting config file: {e}"))
    })?;
    Ok(Reply::ok())
}

fn config_resetstat(ctx: &mut Ctx<'_>, _: &[Vec<u8>]) -> OpResult<Reply> {
    ctx.engine().reset_stats();
    Ok(Reply::ok())
}

fn config_help(_: &mut Ctx<'_>, _: &[Vec<u8>]) -> OpResult<Reply> {
    Ok(Reply::Array(
        [
            "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "GET <pattern>",
            "    Return parameters matching the glob-like <pattern> and their values.",
            "SET <directive> <value>",
            "    Set the configuration <directive> to <value>.",
            "RESETSTAT",
            "    Reset statistics reported by the INFO command.",
            "REWRITE",
            "    Rewrite the configuration file.",
            "HELP",
            "    Prints this help.",
        ]
        .iter()
        .map(|l| Reply::status(l))
        .collect(),
    ))
}

/// Parses a database index argument (`SELECT`, `MOVE`, `COPY … DB`).
pub(crate) fn db_index(ctx: &Ctx<'_>, arg: &[u8]) -> OpResult<usize> {
    let db = int(arg)?;
    if db < 0 || db as usize >= ctx.keyspace().databases() {
        return Err(OpError::DbIndexOutOfRange);
    }
    Ok(db as usize)
}
