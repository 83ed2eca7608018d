//! `MEMORY USAGE | STATS | DOCTOR | MALLOC-STATS | PURGE | HELP`: how much memory keys
//! and the process use, under Redis's names.

use crate::command::ctx::Ctx;
use crate::command::flags::*;
use crate::command::handlers::util::{int, is_kw};
use crate::command::{CommandSpec, Group, KeySpecDoc};
use crate::error::{OpError, OpResult};
use crate::reply::Reply;

/// `MEMORY`'s subcommands.
pub static SUBCOMMANDS: &[CommandSpec] = &[
    CommandSpec::new("usage", -3, READONLY, Group::Server, usage)
        .keys(2, 2, 1)
        .key_specs(&[KeySpecDoc::range(&["RO"], 2, 0, 1, 0)])
        .doc("Estimates the memory usage of a key.", "4.0.0"),
    CommandSpec::new("stats", 2, 0, Group::Server, stats)
        .tips(&[
            "nondeterministic_output",
            "request_policy:all_shards",
            "response_policy:special",
        ])
        .doc("Returns details about memory usage.", "4.0.0"),
    CommandSpec::new("doctor", 2, 0, Group::Server, doctor)
        .tips(&[
            "nondeterministic_output",
            "request_policy:all_shards",
            "response_policy:special",
        ])
        .doc("Outputs a memory problems report.", "4.0.0"),
    CommandSpec::new("malloc-stats", 2, 0, Group::Server, malloc_stats)
        .tips(&[
            "nondeterministic_output",
            "request_policy:all_shards",
            "response_policy:special",
        ])
        .doc("Returns the allocator statistics.", "4.0.0"),
    CommandSpec::new("purge", 2, 0, Group::Server, purge)
        .tips(&["request_policy:all_shards", "response_policy:all_succeeded"])
        .doc("Asks the allocator to release memory.", "4.0.0"),
    CommandSpec::new("help", 2, LOADING | STALE, Group::Server, help).doc(
        "Returns helpful text about the different subcommands.",
        "4.0.0",
    ),
];

/// `MEMORY USAGE key [SAMPLES count]`: the estimated bytes of the key and its value
/// (collections extrapolate from `count` sampled elements, 5 by default, all for 0).
fn usage(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let mut samples = crate::value::DEFAULT_SAMPLES;
    let mut j = 3;
    while j < argv.len() {
        if is_kw(&argv[j], "samples") && j + 1 < argv.len() {
            let n = int(&argv[j + 1])?;
            if n < 0 {
                return Err(OpError::Syntax);
            }
            samples = if n == 0 { usize::MAX } else { n as usize };
            j += 2;
        } else {
            return Err(OpError::Syntax);
        }
    }
    let db = ctx.db();
    let key = &argv[2];
    Ok(match ctx.ks.peek(db, key)? {
        Some(entry) => Reply::Integer((entry.value.mem_usage_sampled(samples) + key.len()) as i64),
        None => Reply::Null,
    })
}

/// `MEMORY STATS`: Redis's fields, from the counting allocator (or the keyspace's
/// estimate without it) and the resident set.
fn stats(ctx: &mut Ctx<'_>, _: &[Vec<u8>]) -> OpResult<Reply> {
    let e = ctx.engine();
    let r = e.memory_report();
    let int = |n: u64| Reply::Integer(i64::try_from(n).unwrap_or(i64::MAX));
    let mut out: Vec<(Reply, Reply)> = Vec::new();
    let mut put = |k: &str, v: Reply| out.push((Reply::bulk(k), v));
    put("peak.allocated", int(r.peak));
    put("total.allocated", int(r.used));
    put("startup.allocated", int(r.startup));
    put("replication.backlog", int(0));
    put("clients.slaves", int(0));
    put("clients.normal", int(r.parts.clients));
    put("cluster.links", int(0));
    put("aof.buffer", int(r.parts.not_counted));
    let (lua_caches, functions_caches) = e.scripting().cache_bytes();
    put("lua.caches", int(lua_caches));
    put("functions.caches", int(functions_caches));
    for db in 0..e.keyspace().databases() {
        let (keys, volatile, _) = e.keyspace().db_counts(db, e.now_ms());
        if keys == 0 {
            continue;
        }
        // The table overhead Redis counts per key: a hash-table slot and entry.
        let per_entry = 8 + std::mem::size_of::<crate::keyspace::Entry>() as u64;
        put(
            &format!("db.{db}"),
            Reply::Map(vec![
                (
                    Reply::bulk("overhead.hashtable.main"),
                    int(keys as u64 * per_entry),
                ),
                (
                    Reply::bulk("overhead.hashtable.expires"),
                    int(volatile as u64 * 16),
                ),
                (Reply::bulk("overhead.hashtable.slot-to-keys"), int(0)),
            ]),
        );
    }
    put("overhead.total", int(r.overhead()));
    put("keys.count", int(r.keys));
    put(
        "keys.bytes-per-key",
        int(r
            .used
            .saturating_sub(r.startup)
            .checked_div(r.keys)
            .unwrap_or(0)),
    );
    put("dataset.bytes", int(r.dataset));
    put("dataset.percentage", Reply::Double(r.dataset_percentage()));
    put("peak.percentage", Reply::Double(r.peak_percentage()));
    put("allocator.allocated", int(r.used));
    put("allocator.active", int(r.used));
    put("allocator.resident", int(r.rss));
    put("allocator-fragmentation.ratio", Reply::Double(1.0));
    put("allocator-fragmentation.bytes", int(0));
    put("allocator-rss.ratio", Reply::Double(r.fragmentation()));
    put(
        "allocator-rss.bytes",
        Reply::Integer(r.rss as i64 - r.used as i64),
    );
    put("rss-overhead.ratio", Reply::Double(1.0));
    put("rss-overhead.bytes", int(0));
    put("fragmentation", Reply::Double(r.fragmentation()));
    put(
        "fragmentation.bytes",
        Reply::Integer(r.rss as i64 - r.used as i64),
    );
    Ok(Reply::Map(out))
}

/// `MEMORY DOCTOR`: a short report of what looks wrong.
fn doctor(ctx: &mut Ctx<'_>, _: &[Vec<u8>]) -> OpResult<Reply> {
    let r = ctx.engine().memory_report();
    let limit = ctx.engine().maxmemory();
    let text = if r.keys == 0 || r.used < 5 * 1024 * 1024 {
        "This instance holds little or no data: there is nothing to diagnose yet.".to_string()
    } else if limit > 0 && r.used > limit {
        format!(
            "Used memory ({}) is over maxmemory ({}): keys are being evicted or writes refused, as maxmemory-policy says.",
            crate::util::num::human_bytes(r.used),
            crate::util::num::human_bytes(limit)
        )
    } else {
        "No memory issue found.".to_string()
    };
    Ok(Reply::Verbatim("txt", text.into_bytes()))
}

/// `MEMORY MALLOC-STATS`: the allocator's own statistics (mimalloc's, as JSON), where
/// the counting allocator is installed.
fn malloc_stats(_: &mut Ctx<'_>, _: &[Vec<u8>]) -> OpResult<Reply> {
    let text = crate::util::alloc::stats_json()
        .unwrap_or_else(|| "Stats not supported for the current allocator".to_string());
    Ok(Reply::Verbatim("txt", text.into_bytes()))
}

/// `MEMORY PURGE`: gives the allocator's free pages back to the system now (with the
/// system allocator there is nothing to ask, and Redis answers OK too).
fn purge(_: &mut Ctx<'_>, _: &[Vec<u8>]) -> OpResult<Reply> {
    crate::util::alloc::purge();
    Ok(Reply::ok())
}

fn help(_: &mut Ctx<'_>, _: &[Vec<u8>]) -> OpResult<Reply> {
    Ok(Reply::Array(
        [
            "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "DOCTOR",
            "    Return memory problems reports.",
            "MALLOC-STATS",
            "    Return internal statistics report from the memory allocator.",
            "PURGE",
            "    Attempt to purge dirty pages for reclamation by the allocator.",
            "STATS",
            "    Return information about the memory usage of the server.",
            "USAGE <key> [SAMPLES <count>]",
            "    Return memory in bytes used by <key> and its value. Nested values are",
            "    sampled up to <count> times (default: 5, 0 means sample all).",
            "HELP",
            "    Prints this help.",
        ]
        .iter()
        .map(|l| Reply::status(l))
        .collect(),
    ))
}
