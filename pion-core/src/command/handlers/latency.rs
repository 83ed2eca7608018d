//! `SLOWLOG` and `LATENCY`: what ran slowly, from the engine's slow log and latency
//! monitor (fed by the dispatcher after every command).

use crate::command::ctx::Ctx;
use crate::command::flags::*;
use crate::command::handlers::util::text;
use crate::command::{CommandSpec, Group};
use crate::error::{OpError, OpResult};
use crate::reply::Reply;

const ADMIN_INTRO: u64 = ADMIN | LOADING | STALE;

/// `SLOWLOG`'s subcommands.
pub static SLOWLOG: &[CommandSpec] = &[
    CommandSpec::new("get", -2, ADMIN_INTRO, Group::Server, slowlog_get)
        .tips(&["request_policy:all_nodes", "nondeterministic_output"])
        .doc("Returns the slow log's entries.", "2.2.12"),
    CommandSpec::new("len", 2, ADMIN_INTRO, Group::Server, slowlog_len)
        .tips(&[
            "request_policy:all_nodes",
            "response_policy:agg_sum",
            "nondeterministic_output",
        ])
        .doc("Returns the number of entries in the slow log.", "2.2.12"),
    CommandSpec::new("reset", 2, ADMIN_INTRO, Group::Server, slowlog_reset)
        .tips(&["request_policy:all_nodes", "response_policy:all_succeeded"])
        .doc("Clears all entries from the slow log.", "2.2.12"),
    CommandSpec::new("help", 2, LOADING | STALE, Group::Server, slowlog_help)
        .doc("Show helpful text about the different subcommands", "6.2.0"),
];

const LATENCY_FLAGS: u64 = ADMIN | NOSCRIPT | LOADING | STALE;
const SPECIAL: &[&str] = &[
    "nondeterministic_output",
    "request_policy:all_nodes",
    "response_policy:special",
];

/// `LATENCY`'s subcommands.
pub static LATENCY: &[CommandSpec] = &[
    CommandSpec::new("latest", 2, LATENCY_FLAGS, Group::Server, latency_latest)
        .tips(SPECIAL)
        .doc(
            "Returns the latest latency samples for all events.",
            "2.8.13",
        ),
    CommandSpec::new("history", 3, LATENCY_FLAGS, Group::Server, latency_history)
        .tips(SPECIAL)
        .doc("Returns timestamp-latency samples for an event.", "2.8.13"),
    CommandSpec::new("graph", 3, LATENCY_FLAGS, Group::Server, latency_graph)
        .tips(SPECIAL)
        .doc("Returns a latency graph for an event.", "2.8.13"),
    CommandSpec::new("reset", -2, LATENCY_FLAGS, Group::Server, latency_reset)
        .tips(&["request_policy:all_nodes", "response_policy:all_succeeded"])
        .doc("Resets the latency data for one or more events.", "2.8.13"),
    CommandSpec::new("doctor", 2, LATENCY_FLAGS, Group::Server, latency_doctor)
        .tips(SPECIAL)
        .doc(
            "Returns a human-readable latency analysis report.",
            "2.8.13",
        ),
    CommandSpec::new(
        "histogram",
        -2,
        LATENCY_FLAGS,
        Group::Server,
        latency_histogram,
    )
    .tips(SPECIAL)
    .doc(
        "Returns the cumulative distribution of latencies of a subset or all commands.",
        "7.0.0",
    ),
    CommandSpec::new("help", 2, LOADING | STALE, Group::Server, latency_help).doc(
        "Returns helpful text about the different subcommands.",
        "2.8.13",
    ),
];

fn slowlog_get(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let count = match argv.len() {
        2 => Some(10),
        3 => match crate::util::num::parse_i64(&argv[2]) {
            Some(-1) => None,
            Some(n) if n >= 0 => Some(n as usize),
            _ => {
                return Err(OpError::custom(
                    "ERR count should be greater than or equal to -1",
                ))
            }
        },
        _ => return Err(OpError::subcommand_syntax(argv)),
    };
    let entries = ctx.operator().slowlog.get(count);
    Ok(Reply::Array(
        entries
            .into_iter()
            .map(|e| {
                Reply::Array(vec![
                    Reply::Integer(i64::try_from(e.id).unwrap_or(i64::MAX)),
                    Reply::Integer(e.timestamp),
                    Reply::Integer(i64::try_from(e.duration_us).unwrap_or(i64::MAX)),
                    Reply::Array(e.args.into_iter().map(Reply::Bulk).collect()),
                    Reply::bulk(e.addr),
                    Reply::Bulk(e.name),
                ])
            })
            .collect(),
    ))
}

fn slowlog_len(ctx: &mut Ctx<'_>, _: &[Vec<u8>]) -> OpResult<Reply> {
    Ok(Reply::Integer(ctx.operator().slowlog.len() as i64))
}

fn slowlog_reset(ctx: &mut Ctx<'_>, _: &[Vec<u8>]) -> OpResult<Reply> {
    ctx.operator().slowlog.reset();
    Ok(Reply::ok())
}

fn lines(text: &[&'static str]) -> Reply {
    Reply::Array(text.iter().map(|l| Reply::status(l)).collect())
}

fn slowlog_help(_: &mut Ctx<'_>, _: &[Vec<u8>]) -> OpResult<Reply> {
    Ok(lines(&[
        "SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "GET [<count>]",
        "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
        "    Entries are made of:",
        "    id, timestamp, time in microseconds, arguments array, client IP and port,",
        "    client name",
        "LEN",
        "    Return the length of the slowlog.",
        "RESET",
        "    Reset the slowlog.",
        "HELP",
        "    Prints this help.",
    ]))
}

fn latency_latest(ctx: &mut Ctx<'_>, _: &[Vec<u8>]) -> OpResult<Reply> {
    let latest = ctx.operator().latency.latest();
    Ok(Reply::Array(
        latest
            .into_iter()
            .map(|(name, t, ms, max)| {
                Reply::Array(vec![
                    Reply::bulk(name),
                    Reply::Integer(t),
                    Reply::Integer(i64::try_from(ms).unwrap_or(i64::MAX)),
                    Reply::Integer(i64::try_from(max).unwrap_or(i64::MAX)),
                ])
            })
            .collect(),
    ))
}

fn latency_history(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let samples = ctx.operator().latency.history(&text(&argv[2]));
    Ok(Reply::Array(
        samples
            .into_iter()
            .map(|(t, ms)| {
                Reply::Array(vec![
                    Reply::Integer(t),
                    Reply::Integer(i64::try_from(ms).unwrap_or(i64::MAX)),
                ])
            })
            .collect(),
    ))
}

/// `LATENCY GRAPH event`: the event's samples drawn as a chart.
fn latency_graph(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let event = text(&argv[2]);
    let monitor = &ctx.operator().latency;
    let samples = monitor.history(&event);
    let Some(max_ms) = monitor
        .latest()
        .into_iter()
        .find(|l| l.0 == event)
        .map(|l| l.3)
        .filter(|_| !samples.is_empty())
    else {
        return Err(OpError::NoLatencySamples(event));
    };
    let now_s = crate::util::clock::system_unix_ms() / 1000;
    let graph = crate::monitor::latency_graph::render(&event, &samples, max_ms, now_s);
    Ok(Reply::Verbatim("txt", graph.into_bytes()))
}

fn latency_reset(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let names: Vec<String> = argv[2..].iter().map(|a| text(a)).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    Ok(Reply::Integer(ctx.operator().latency.reset(&names) as i64))
}

/// `LATENCY DOCTOR`: a plain summary of each event's samples.
fn latency_doctor(ctx: &mut Ctx<'_>, _: &[Vec<u8>]) -> OpResult<Reply> {
    let monitor = &ctx.operator().latency;
    let mut out = String::new();
    if !monitor.enabled() {
        out.push_str("Latency monitoring is disabled: set latency-monitor-threshold (milliseconds) with CONFIG SET to enable it.\n");
    } else {
        let latest = monitor.latest();
        if latest.is_empty() {
            out.push_str("No latency spike was recorded since the monitor was enabled.\n");
        }
        for (i, (name, _, _, max)) in latest.iter().enumerate() {
            let history = monitor.history(name);
            let avg = history.iter().map(|s| s.1).sum::<u64>() / history.len().max(1) as u64;
            out.push_str(&format!(
                "{}. {name}: {} latency spikes (average {avg}ms, worst {max}ms).\n",
                i + 1,
                history.len()
            ));
        }
    }
    Ok(Reply::Verbatim("txt", out.into_bytes()))
}

/// `LATENCY HISTOGRAM [command …]`: for each command (and each subcommand of a named
/// container) with calls timed since the last reset, its calls and cumulative
/// microsecond buckets. Names that are no command are skipped, as in Redis.
fn latency_histogram(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let table = crate::command::table();
    let stats = ctx.engine().command_stats();
    let all: Vec<usize> = (0..table.stat_slots()).collect();
    let slots: Vec<usize> = if argv.len() == 2 {
        all
    } else {
        let mut wanted = Vec::new();
        for arg in &argv[2..] {
            let name = text(arg).to_ascii_lowercase();
            let subs = format!("{name}|");
            let known = all.iter().any(|&s| table.full_name(s) == name);
            if known {
                wanted.extend(all.iter().copied().filter(|&s| {
                    let full = table.full_name(s);
                    full == name || full.starts_with(&subs)
                }));
            }
        }
        wanted
    };
    let mut entries = Vec::new();
    for slot in slots {
        let Some(h) = stats.histogram(slot) else {
            continue;
        };
        let buckets = h
            .cumulative_buckets()
            .into_iter()
            .map(|(usec, count)| (int(usec), int(count)))
            .collect();
        entries.push((
            Reply::bulk(table.full_name(slot)),
            Reply::Map(vec![
                (Reply::bulk("calls"), int(h.total())),
                (Reply::bulk("histogram_usec"), Reply::Map(buckets)),
            ]),
        ));
    }
    Ok(Reply::Map(entries))
}

fn int(n: u64) -> Reply {
    Reply::Integer(i64::try_from(n).unwrap_or(i64::MAX))
}

fn latency_help(_: &mut Ctx<'_>, _: &[Vec<u8>]) -> OpResult<Reply> {
    Ok(lines(&[
        "LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "DOCTOR",
        "    Return a human readable latency analysis report.",
        "GRAPH <event>",
        "    Return an ASCII latency graph for the <event> class.",
        "HISTORY <event>",
        "    Return time-latency samples for the <event> class.",
        "LATEST",
        "    Return the latest latency samples for all events.",
        "RESET [<event> ...]",
        "    Reset latency data of one or more <event> classes.",
        "    (default: reset all data for all event classes)",
        "HISTOGRAM [COMMAND ...]",
        "    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
        "    If no commands are specified then all histograms are replied.",
        "HELP",
        "    Prints this help.",
    ]))
}
