//! Pub/Sub commands (SUBSCRIBE … PUBSUB), MONITOR, and the client-side caching
//! subcommands of CLIENT (TRACKING, TRACKINGINFO, GETREDIR, CACHING). The state they
//! act on lives in [`crate::pubsub`].

use crate::command::ctx::Ctx;
use crate::command::flags::*;
use crate::command::handlers::util::is_kw;
use crate::command::{CommandSpec, Group, KeySpecDoc};
use crate::error::{OpError, OpResult};
use crate::pubsub::tracking::TrackOptions;
use crate::pubsub::Kind;
use crate::reply::Reply;

const SUB: u64 = PUBSUB | NOSCRIPT | LOADING | STALE | PUBSUB_CONTEXT;
const SHARD_KEYS: &[KeySpecDoc] = &[KeySpecDoc::range(&["not_key"], 1, -1, 1, 0)];
const SPUBLISH_KEYS: &[KeySpecDoc] = &[KeySpecDoc::range(&["not_key"], 1, 0, 1, 0)];

/// This family's part of the command table.
pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("subscribe", -2, SUB, Group::PubSub, subscribe)
        .doc("Listens for messages published to channels.", "2.0.0"),
    CommandSpec::new("psubscribe", -2, SUB, Group::PubSub, psubscribe).doc(
        "Listens for messages published to channels that match one or more patterns.",
        "2.0.0",
    ),
    CommandSpec::new("ssubscribe", -2, SUB, Group::PubSub, ssubscribe)
        .keys(1, -1, 1)
        .key_specs(SHARD_KEYS)
        .doc("Listens for messages published to shard channels.", "7.0.0"),
    CommandSpec::new("unsubscribe", -1, SUB, Group::PubSub, unsubscribe)
        .doc("Stops listening to messages posted to channels.", "2.0.0"),
    CommandSpec::new("punsubscribe", -1, SUB, Group::PubSub, punsubscribe).doc(
        "Stops listening to messages published to channels that match one or more patterns.",
        "2.0.0",
    ),
    CommandSpec::new("sunsubscribe", -1, SUB, Group::PubSub, sunsubscribe)
        .keys(1, -1, 1)
        .key_specs(SHARD_KEYS)
        .doc(
            "Stops listening to messages posted to shard channels.",
            "7.0.0",
        ),
    CommandSpec::new(
        "publish",
        3,
        PUBSUB | LOADING | STALE | FAST | MAY_REPLICATE,
        Group::PubSub,
        publish,
    )
    .doc("Posts a message to a channel.", "2.0.0"),
    CommandSpec::new(
        "spublish",
        3,
        PUBSUB | LOADING | STALE | FAST | MAY_REPLICATE,
        Group::PubSub,
        spublish,
    )
    .keys(1, 1, 1)
    .key_specs(SPUBLISH_KEYS)
    .doc("Post a message to a shard channel", "7.0.0"),
    CommandSpec::container("pubsub", Group::PubSub, PUBSUB_SUBCOMMANDS)
        .doc("A container for Pub/Sub commands.", "2.8.0"),
    CommandSpec::new(
        "monitor",
        1,
        ADMIN | NOSCRIPT | LOADING | STALE,
        Group::Server,
        monitor,
    )
    .doc(
        "Listens for all requests received by the server in real-time.",
        "1.0.0",
    ),
];

const INTROSPECT: u64 = PUBSUB | LOADING | STALE;

static PUBSUB_SUBCOMMANDS: &[CommandSpec] = &[
    CommandSpec::new("channels", -2, INTROSPECT, Group::PubSub, channels)
        .doc("Returns the active channels.", "2.8.0"),
    CommandSpec::new("numsub", -2, INTROSPECT, Group::PubSub, numsub)
        .doc("Returns a count of subscribers to channels.", "2.8.0"),
    CommandSpec::new("numpat", 2, INTROSPECT, Group::PubSub, numpat)
        .doc("Returns a count of unique pattern subscriptions.", "2.8.0"),
    CommandSpec::new(
        "shardchannels",
        -2,
        INTROSPECT,
        Group::PubSub,
        shardchannels,
    )
    .doc("Returns the active shard channels.", "7.0.0"),
    CommandSpec::new("shardnumsub", -2, INTROSPECT, Group::PubSub, shardnumsub).doc(
        "Returns the count of subscribers of shard channels.",
        "7.0.0",
    ),
    CommandSpec::new("help", 2, LOADING | STALE, Group::PubSub, pubsub_help).doc(
        "Returns helpful text about the different subcommands.",
        "6.2.0",
    ),
];

const TRACK: u64 = NOSCRIPT | LOADING | STALE;

/// The client-side caching subcommands of `CLIENT`.
pub const CLIENT_TRACKING_SUBCOMMANDS: [CommandSpec; 4] = [
    CommandSpec::new("tracking", -3, TRACK, Group::Connection, client_tracking).doc(
        "Controls server-assisted client-side caching for the connection.",
        "6.0.0",
    ),
    CommandSpec::new(
        "trackinginfo",
        2,
        TRACK,
        Group::Connection,
        client_trackinginfo,
    )
    .doc(
        "Returns information about server-assisted client-side caching for the connection.",
        "6.2.0",
    ),
    CommandSpec::new("getredir", 2, TRACK, Group::Connection, client_getredir).doc(
        "Returns the client ID to which the connection's tracking notifications are redirected.",
        "6.0.0",
    ),
    CommandSpec::new("caching", 3, TRACK, Group::Connection, client_caching).doc(
        "Instructs the server whether to track the keys in the next request.",
        "6.0.0",
    ),
];

fn subscribe(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    Ok(ctx
        .pubsub()
        .subscribe(ctx.client, Kind::Channel, &argv[1..]))
}

fn psubscribe(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    Ok(ctx
        .pubsub()
        .subscribe(ctx.client, Kind::Pattern, &argv[1..]))
}

fn ssubscribe(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    Ok(ctx.pubsub().subscribe(ctx.client, Kind::Shard, &argv[1..]))
}

fn unsubscribe(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    Ok(ctx
        .pubsub()
        .unsubscribe(ctx.client, Kind::Channel, &argv[1..]))
}

fn punsubscribe(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    Ok(ctx
        .pubsub()
        .unsubscribe(ctx.client, Kind::Pattern, &argv[1..]))
}

fn sunsubscribe(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    Ok(ctx
        .pubsub()
        .unsubscribe(ctx.client, Kind::Shard, &argv[1..]))
}

fn publish(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    Ok(Reply::Integer(
        ctx.pubsub().publish(&argv[1], &argv[2]) as i64
    ))
}

fn spublish(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    Ok(Reply::Integer(
        ctx.pubsub().spublish(&argv[1], &argv[2]) as i64
    ))
}

/// Redis's reply to a known subcommand with the wrong number of arguments.
fn wrong_args(argv: &[Vec<u8>]) -> OpError {
    OpError::subcommand_syntax(argv)
}

fn list_channels(ctx: &mut Ctx<'_>, argv: &[Vec<u8>], kind: Kind) -> OpResult<Reply> {
    if argv.len() > 3 {
        return Err(wrong_args(argv));
    }
    let names = ctx
        .pubsub()
        .channel_names(kind, argv.get(2).map(Vec::as_slice));
    Ok(Reply::bulks(names))
}

fn channels(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    list_channels(ctx, argv, Kind::Channel)
}

fn shardchannels(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    list_channels(ctx, argv, Kind::Shard)
}

fn count_subscribers(ctx: &mut Ctx<'_>, argv: &[Vec<u8>], kind: Kind) -> OpResult<Reply> {
    let hub = ctx.pubsub();
    let mut out = Vec::with_capacity((argv.len() - 2) * 2);
    for c in &argv[2..] {
        out.push(Reply::bulk(c));
        out.push(Reply::Integer(hub.subscriber_count(kind, c) as i64));
    }
    Ok(Reply::Array(out))
}

fn numsub(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    count_subscribers(ctx, argv, Kind::Channel)
}

fn shardnumsub(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    count_subscribers(ctx, argv, Kind::Shard)
}

fn numpat(ctx: &mut Ctx<'_>, _: &[Vec<u8>]) -> OpResult<Reply> {
    Ok(Reply::Integer(ctx.pubsub().pattern_count() as i64))
}

fn pubsub_help(_: &mut Ctx<'_>, _: &[Vec<u8>]) -> OpResult<Reply> {
    Ok(Reply::Array(
        [
            "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "CHANNELS [<pattern>]",
            "    Return the currently active channels matching a <pattern> (default: '*').",
            "NUMPAT",
            "    Return number of subscriptions to patterns.",
            "NUMSUB [<channel> ...]",
            "    Return the number of subscribers for the specified channels, excluding",
            "    pattern subscriptions(default: no channels).",
            "SHARDCHANNELS [<pattern>]",
            "    Return the currently active shard level channels matching a <pattern> (default: '*').",
            "SHARDNUMSUB [<shardchannel> ...]",
            "    Return the number of subscribers for the specified shard level channel(s)",
            "HELP",
            "    Prints this help.",
        ]
        .iter()
        .map(|l| Reply::status(l))
        .collect(),
    ))
}

fn monitor(ctx: &mut Ctx<'_>, _: &[Vec<u8>]) -> OpResult<Reply> {
    let hub = ctx.pubsub();
    hub.attach(ctx.client);
    hub.monitors.add(&ctx.client.shared);
    Ok(Reply::ok())
}

fn client_tracking(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let mut opts = TrackOptions::default();
    let mut j = 3;
    while j < argv.len() {
        let more = j + 1 < argv.len();
        let a = &argv[j];
        if is_kw(a, "redirect") && more {
            j += 1;
            if opts.redirect != 0 {
                return Err(OpError::custom(
                    "ERR A client can only redirect to a single other client",
                ));
            }
            let id = crate::util::num::parse_i64(&argv[j]).ok_or(OpError::NotInteger)?;
            if id <= 0 || ctx.clients().get(id as u64).is_none() {
                return Err(OpError::custom(
                    "ERR The client ID you want redirect to does not exist",
                ));
            }
            opts.redirect = id as u64;
        } else if is_kw(a, "bcast") {
            opts.bcast = true;
        } else if is_kw(a, "optin") {
            opts.optin = true;
        } else if is_kw(a, "optout") {
            opts.optout = true;
        } else if is_kw(a, "noloop") {
            opts.noloop = true;
        } else if is_kw(a, "prefix") && more {
            j += 1;
            opts.prefixes.push(argv[j].clone());
        } else {
            return Err(OpError::Syntax);
        }
        j += 1;
    }
    let hub = ctx.pubsub();
    if is_kw(&argv[2], "off") {
        hub.tracking.forget_client(ctx.client.id());
        return Ok(Reply::ok());
    }
    if !is_kw(&argv[2], "on") {
        return Err(OpError::Syntax);
    }
    if !opts.bcast && !opts.prefixes.is_empty() {
        return Err(OpError::custom(
            "ERR PREFIX option requires BCAST mode to be enabled",
        ));
    }
    let current = hub.tracking.get(ctx.client.id());
    if let Some(t) = &current {
        if t.flag_names().contains(&"bcast") != opts.bcast {
            return Err(OpError::custom("ERR You can't switch BCAST mode on/off before disabling tracking for this client, and then re-enabling it with a different mode."));
        }
    }
    if opts.bcast && (opts.optin || opts.optout) {
        return Err(OpError::custom(
            "ERR OPTIN and OPTOUT are not compatible with BCAST",
        ));
    }
    if opts.optin && opts.optout {
        return Err(OpError::custom(
            "ERR You can't specify both OPTIN mode and OPTOUT mode",
        ));
    }
    if let Some(t) = &current {
        let names = t.flag_names();
        if (opts.optin && names.contains(&"optout")) || (opts.optout && names.contains(&"optin")) {
            return Err(OpError::custom("ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode."));
        }
    }
    if opts.bcast {
        let existing = current.as_ref().map_or(&[][..], |t| t.prefixes.as_slice());
        overlapping_prefix(existing, &opts.prefixes)?;
    }
    hub.attach(ctx.client);
    hub.tracking
        .enable(&ctx.client.shared, opts)
        .map_err(OpError::custom)?;
    Ok(Reply::ok())
}

/// Refuses `BCAST` prefixes of which one starts another, among those given and
/// against those the client has (the empty prefix of a client tracking every key
/// included), with Redis's texts.
fn overlapping_prefix(existing: &[Vec<u8>], given: &[Vec<u8>]) -> OpResult<()> {
    let overlap = |a: &[u8], b: &[u8]| a.starts_with(b) || b.starts_with(a);
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    for (i, p) in given.iter().enumerate() {
        if let Some(old) = existing.iter().find(|old| overlap(p, old)) {
            return Err(OpError::custom(format!(
                "ERR Prefix '{}' overlaps with an existing prefix '{}'. Prefixes for a single client must not overlap.",
                text(p),
                text(old)
            )));
        }
        if let Some(other) = given[i + 1..].iter().find(|other| overlap(p, other)) {
            return Err(OpError::custom(format!(
                "ERR Prefix '{}' overlaps with another provided prefix '{}'. Prefixes for a single client must not overlap.",
                text(p),
                text(other)
            )));
        }
    }
    Ok(())
}

fn client_trackinginfo(ctx: &mut Ctx<'_>, _: &[Vec<u8>]) -> OpResult<Reply> {
    let t = ctx.pubsub().tracking.get(ctx.client.id());
    let (flags, redirect, prefixes) = match &t {
        Some(t) => {
            // In Redis's order: its prefix table is sorted.
            let mut prefixes = t.prefixes.clone();
            prefixes.sort();
            (t.flag_names(), t.redirect as i64, prefixes)
        }
        None => (vec!["off"], -1, Vec::new()),
    };
    Ok(Reply::Map(vec![
        (
            Reply::bulk("flags"),
            Reply::Set(flags.into_iter().map(Reply::bulk).collect()),
        ),
        (Reply::bulk("redirect"), Reply::Integer(redirect)),
        (Reply::bulk("prefixes"), Reply::bulks(prefixes)),
    ]))
}

fn client_getredir(ctx: &mut Ctx<'_>, _: &[Vec<u8>]) -> OpResult<Reply> {
    let t = ctx.pubsub().tracking.get(ctx.client.id());
    Ok(Reply::Integer(t.map_or(-1, |t| t.redirect as i64)))
}

fn client_caching(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    if ctx.pubsub().tracking.get(ctx.client.id()).is_none() {
        return Err(OpError::custom("ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled"));
    }
    let yes = if is_kw(&argv[2], "yes") {
        true
    } else if is_kw(&argv[2], "no") {
        false
    } else {
        return Err(OpError::Syntax);
    };
    ctx.pubsub()
        .tracking
        .caching(ctx.client.id(), yes)
        .map_err(OpError::custom)?;
    Ok(Reply::ok())
}
