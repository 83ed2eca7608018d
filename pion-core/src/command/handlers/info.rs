//! `INFO`: the sections operators and client libraries read.

use std::fmt::Write as _;
use std::sync::atomic::Ordering;

use crate::command::ctx::Ctx;
use crate::command::handlers::util::text;
use crate::command::table;
use crate::config::percentile_label;
use crate::error::OpResult;
use crate::reply::Reply;

const DEFAULT: &[&str] = &[
    "server",
    "clients",
    "memory",
    "persistence",
    "stats",
    "replication",
    "cpu",
    "modules",
    "errorstats",
    "cluster",
    "keyspace",
];
const ALL_EXTRA: &[&str] = &[
    "commandstats",
    "latencystats",
    "prompt_cache",
    "attention",
    "search",
    "ai",
];

/// The `INFO [section …]` handler.
pub fn info(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let mut wanted: Vec<String> = Vec::new();
    for a in &argv[1..] {
        let s = text(a).to_ascii_lowercase();
        match s.as_str() {
            "default" => wanted.extend(DEFAULT.iter().map(|s| s.to_string())),
            "all" | "everything" => {
                wanted.extend(DEFAULT.iter().map(|s| s.to_string()));
                wanted.extend(ALL_EXTRA.iter().map(|s| s.to_string()));
            }
            _ => wanted.push(s),
        }
    }
    if argv.len() == 1 {
        wanted.extend(DEFAULT.iter().map(|s| s.to_string()));
    }
    // The memory figures are read before the reply is built, so that they do not
    // count the reply itself (Redis's maxmemory tests read INFO within 4 KiB).
    let memory = wanted
        .iter()
        .any(|w| w == "memory")
        .then(|| ctx.engine().memory_report());
    let mut out = String::new();
    let order = DEFAULT.iter().chain(ALL_EXTRA);
    for section in order {
        if !wanted.iter().any(|w| w == section) {
            continue;
        }
        if !out.is_empty() {
            out.push_str("\r\n");
        }
        render(ctx, section, &mut out, memory.as_ref());
    }
    Ok(Reply::Verbatim("txt", out.into_bytes()))
}

fn render(
    ctx: &mut Ctx<'_>,
    section: &str,
    out: &mut String,
    memory: Option<&crate::monitor::memstats::MemoryReport>,
) {
    let e = ctx.engine();
    let now = e.now_ms();
    let cfg = e.config().snapshot();
    let mut line = |k: &str, v: &dyn std::fmt::Display| {
        if k.starts_with('#') {
            let _ = write!(out, "{k}\r\n");
        } else {
            let _ = write!(out, "{k}:{v}\r\n");
        }
    };
    macro_rules! header {
        ($h:expr) => {
            line($h, &"")
        };
    }
    match section {
        "server" => {
            header!("# Server");
            line("redis_version", &crate::REDIS_VERSION);
            line("pion_version", &crate::VERSION);
            line("redis_git_sha1", &"00000000");
            line("redis_git_dirty", &0);
            line("redis_mode", &"standalone");
            line("os", &std::env::consts::OS);
            line("arch_bits", &(usize::BITS));
            line(
                "multiplexing_api",
                &if cfg!(target_os = "linux") {
                    "epoll"
                } else {
                    "kqueue"
                },
            );
            line("process_id", &std::process::id());
            line("run_id", &e.run_id());
            line("tcp_port", &cfg.port);
            line("server_time_usec", &crate::util::clock::system_unix_us());
            let up = (now - e.started_ms()).max(0) / 1000;
            line("uptime_in_seconds", &up);
            line("uptime_in_days", &(up / 86400));
            line("hz", &cfg.hz);
            line("io_threads_active", &u8::from(cfg.threads > 1));
            line("pion_threads", &cfg.threads);
            line(
                "executable",
                &std::env::current_exe()
                    .map(|p| p.display().to_string())
                    .unwrap_or_default(),
            );
        }
        "clients" => {
            header!("# Clients");
            line("connected_clients", &e.clients().len());
            line("maxclients", &cfg.maxclients);
            // Clients held by CLIENT PAUSE count as blocked, as in Redis.
            line(
                "blocked_clients",
                &(e.blocking().blocked_clients() + e.operator().pause.held_clients()),
            );
            line("tracking_clients", &e.pubsub().tracking.stats().clients);
            line("clients_in_timeout_table", &e.blocking().blocked_clients());
        }
        "memory" => {
            header!("# Memory");
            let report = memory.cloned().unwrap_or_else(|| e.memory_report());
            for (k, v) in report.info_fields() {
                line(k, &v);
            }
            line("maxmemory", &cfg.maxmemory);
            line(
                "maxmemory_human",
                &crate::util::num::human_bytes(cfg.maxmemory),
            );
            line("maxmemory_policy", &cfg.maxmemory_policy.name());
            for (k, v) in report.info_tail() {
                line(k, &v);
            }
            for (name, value) in e.scripting().info_memory() {
                line(name, &value);
            }
        }
        "persistence" => {
            header!("# Persistence");
            line("loading", &0);
            line("async_loading", &0);
            match e.durability() {
                Some(d) => {
                    for (name, value) in d.info_fields(e.now_ms()) {
                        line(name, &value);
                    }
                }
                None => {
                    line("rdb_bgsave_in_progress", &0);
                    line("aof_enabled", &0);
                    line("aof_rewrite_in_progress", &0);
                    line("wal_enabled", &0);
                    line(
                        "wal_note",
                        &"persistence off (--wal off): nothing survives a restart",
                    );
                }
            }
        }
        "stats" => {
            header!("# Stats");
            let s = e.server_stats();
            let ks = e.keyspace().stats();
            line(
                "total_connections_received",
                &e.clients().total_connections.load(Ordering::Relaxed),
            );
            let total: u64 = (0..table().stat_slots())
                .map(|i| e.command_stats().get(i).calls)
                .sum();
            line("total_commands_processed", &total);
            line(
                "total_net_input_bytes",
                &s.net_input_bytes.load(Ordering::Relaxed),
            );
            line(
                "total_net_output_bytes",
                &s.net_output_bytes.load(Ordering::Relaxed),
            );
            line(
                "total_error_replies",
                &e.error_stats().iter().map(|(_, n)| n).sum::<u64>(),
            );
            line(
                "rejected_connections",
                &s.rejected_connections.load(Ordering::Relaxed),
            );
            line("expired_keys", &ks.expired_keys.load(Ordering::Relaxed));
            line("evicted_keys", &e.operator().evictor.evicted_keys());
            line("evicted_clients", &0);
            line("keyspace_hits", &ks.keyspace_hits());
            line("keyspace_misses", &ks.keyspace_misses());
            for (name, value) in crate::command::pubsub::info_fields(e) {
                line(name, &value);
            }
            line("migrate_cached_sockets", &e.links().len());
            let tracking = e.pubsub().tracking.stats();
            line("tracking_total_keys", &tracking.keys);
            line("tracking_total_items", &tracking.items);
            line("tracking_total_prefixes", &tracking.prefixes);
        }
        "replication" => {
            header!("# Replication");
            // A primary without replicas, as Redis reports one.
            line("role", &"master");
            line("connected_slaves", &0);
            line("master_failover_state", &"no-failover");
            line("master_replid", &e.repl_id());
            line("master_replid2", &"0".repeat(40));
            line("master_repl_offset", &0);
            line("second_repl_offset", &-1);
            line("repl_backlog_active", &0);
            line("repl_backlog_size", &1_048_576);
            line("repl_backlog_first_byte_offset", &0);
            line("repl_backlog_histlen", &0);
        }
        "cpu" => {
            header!("# CPU");
            let (user, sys) = cpu_times();
            line("used_cpu_sys", &format!("{sys:.6}"));
            line("used_cpu_user", &format!("{user:.6}"));
            // No child processes: snapshots are threads.
            line("used_cpu_sys_children", &"0.000000");
            line("used_cpu_user_children", &"0.000000");
        }
        "modules" => header!("# Modules"),
        "errorstats" => {
            header!("# Errorstats");
            for (code, count) in e.error_stats() {
                line(&format!("errorstat_{code}"), &format!("count={count}"));
            }
        }
        "cluster" => {
            header!("# Cluster");
            line("cluster_enabled", &0);
        }
        "prompt_cache" => {
            header!("# Prompt_cache");
            let store = e.prefix().lock();
            let names = store.names();
            let mut total = crate::prefix::NamespaceStats::default();
            for n in &names {
                if let Ok(s) = store.stats(n) {
                    total.blocks += s.blocks;
                    total.hits += s.hits;
                    total.misses += s.misses;
                    total.hit_tokens += s.hit_tokens;
                    total.evictions += s.evictions;
                }
            }
            line("kv_namespaces", &names.len());
            line("kv_blocks", &total.blocks);
            line("kv_bytes", &store.bytes());
            line("kv_budget", &store.budget());
            line("kv_hits", &total.hits);
            line("kv_misses", &total.misses);
            line("kv_hit_tokens", &total.hit_tokens);
            line("kv_evictions", &total.evictions);
            let files = store.files().map(|f| f.stats()).unwrap_or_default();
            line("kv_block_files", &files.files);
            line("kv_block_file_bytes", &files.bytes);
            line("kv_block_live_bytes", &files.live);
            line("kv_compacted_bytes", &files.compacted);
            line(
                "kv_mapped_bytes",
                &store.files().map_or(0, |f| f.mapped_bytes()),
            );
        }
        "attention" => {
            header!("# Attention");
            let a = e.attention();
            let n = |c: &std::sync::atomic::AtomicU64| c.load(std::sync::atomic::Ordering::Relaxed);
            line("attend_views", &a.views());
            line("attend_queries", &n(&a.stats.queries));
            line("attend_layer_queries", &n(&a.stats.layer_queries));
            line("attend_sparse_queries", &n(&a.stats.sparse_queries));
            line("attend_blocks_read", &n(&a.stats.blocks_read));
            line("attend_bytes_read", &n(&a.stats.bytes_read));
            line("attend_on_cpu", &n(&a.stats.on_cpu));
            line("attend_on_gpu", &n(&a.stats.on_gpu));
            line("attend_device_policy", &e.attend_policy().name());
            line("attend_device", &a.device());
        }
        "search" => {
            header!("# Search");
            let indexes = e.search().all();
            let (mut docs, mut vectors, mut pending, mut bytes) = (0, 0, 0, 0);
            let mut scanning = 0;
            for index in &indexes {
                let d = index.docs.read();
                docs += d.len();
                for f in &d.fields {
                    if let crate::index::FieldIndex::Vector(v) = f {
                        let st = v.index().stats();
                        vectors += st.vectors;
                        pending += st.pending;
                        bytes += st.memory_bytes;
                    }
                }
                scanning += usize::from(index.scanning.load(std::sync::atomic::Ordering::Relaxed));
            }
            line("search_indexes", &indexes.len());
            line("search_documents", &docs);
            line("search_vectors", &vectors);
            line("search_vectors_pending_graph", &pending);
            line("search_vector_index_bytes", &bytes);
            line("search_indexes_scanning", &scanning);
            let stats = e.search().stats();
            line(
                "search_graphs_loaded",
                &stats
                    .graphs_loaded
                    .load(std::sync::atomic::Ordering::Relaxed),
            );
            line(
                "search_graphs_rebuilt",
                &stats
                    .graphs_rebuilt
                    .load(std::sync::atomic::Ordering::Relaxed),
            );
        }
        "ai" => {
            header!("# AI");
            match e.embedder() {
                None => line("embedding_model", &""),
                Some(s) => {
                    let st = s.stats();
                    let n = |c: &std::sync::atomic::AtomicU64| {
                        c.load(std::sync::atomic::Ordering::Relaxed)
                    };
                    line("embedding_model", &s.model());
                    line("embedding_dim", &s.dim());
                    line("embedding_max_tokens", &s.max_tokens());
                    line("embed_requests", &n(&st.requests));
                    line("embed_texts", &n(&st.texts));
                    line("embed_batches", &n(&st.batches));
                    line("embed_tokens", &n(&st.tokens));
                    line("embed_busy_usec", &n(&st.busy_us));
                    line("semantic_cache_hits", &n(&st.cache_hits));
                    line("semantic_cache_misses", &n(&st.cache_misses));
                }
            }
        }
        "keyspace" => {
            header!("# Keyspace");
            for db in 0..e.keyspace().databases() {
                let (keys, expires, avg_ttl) = e.keyspace().db_counts(db, now);
                if keys > 0 {
                    line(
                        &format!("db{db}"),
                        &format!("keys={keys},expires={expires},avg_ttl={avg_ttl}"),
                    );
                }
            }
        }
        "commandstats" => {
            header!("# Commandstats");
            let t = table();
            for slot in 0..t.stat_slots() {
                let st = e.command_stats().get(slot);
                if st.calls == 0 && st.rejected == 0 {
                    continue;
                }
                let per = if st.calls > 0 {
                    st.usec as f64 / st.calls as f64
                } else {
                    0.0
                };
                line(
                    &format!("cmdstat_{}", t.full_name(slot)),
                    &format!(
                        "calls={},usec={},usec_per_call={per:.2},rejected_calls={},failed_calls={}",
                        st.calls, st.usec, st.rejected, st.failed
                    ),
                );
            }
        }
        "latencystats" => {
            header!("# Latencystats");
            let t = table();
            for slot in 0..t.stat_slots() {
                let Some(h) = e.command_stats().histogram(slot) else {
                    continue;
                };
                let values: Vec<String> = cfg
                    .latency_tracking_info_percentiles
                    .iter()
                    .map(|&p| {
                        let usec = h.value_at_percentile(p) as f64 / 1000.0;
                        format!("p{}={usec:.3}", percentile_label(p))
                    })
                    .collect();
                line(
                    &format!("latency_percentiles_usec_{}", t.full_name(slot)),
                    &values.join(","),
                );
            }
        }
        _ => {}
    }
}

fn cpu_times() -> (f64, f64) {
    // /proc/self/stat fields 14 and 15 are user and system time in clock ticks.
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let tick = 100.0;
    let get = |i: usize| {
        fields
            .get(i)
            .and_then(|v| v.parse::<f64>().ok())
            .unwrap_or(0.0)
            / tick
    };
    (get(11), get(12))
}

#[cfg(test)]
mod tests {
    use crate::{Engine, EngineOptions, Reply};

    fn info(engine: &Engine, section: &str) -> String {
        match engine.execute(0, &["INFO", section]) {
            Reply::Verbatim(_, text) => String::from_utf8(text).expect("ascii"),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn errorstats_count_error_replies_by_code() {
        let engine = Engine::in_memory(EngineOptions::default());
        engine.execute(0, &["NOSUCHCOMMAND"]);
        engine.execute(0, &["RPUSH", "l", "x"]);
        engine.execute(0, &["GET", "l"]);
        engine.execute(0, &["GET", "l"]);
        let text = info(&engine, "errorstats");
        assert!(text.contains("errorstat_ERR:count=1\r\n"), "{text}");
        assert!(text.contains("errorstat_WRONGTYPE:count=2\r\n"), "{text}");
        assert!(info(&engine, "stats").contains("total_error_replies:3\r\n"));
        engine.execute(0, &["CONFIG", "RESETSTAT"]);
        assert!(!info(&engine, "errorstats").contains("errorstat_"));
    }

    #[test]
    fn keyspace_and_commandstats_sections() {
        let engine = Engine::in_memory(EngineOptions::default());
        engine.execute(0, &["SET", "a", "1"]);
        engine.execute(0, &["SET", "b", "2", "EX", "100"]);
        engine.execute(3, &["SET", "c", "3"]);
        let text = info(&engine, "keyspace");
        assert!(text.starts_with("# Keyspace\r\n"), "{text}");
        let db0 = text
            .lines()
            .find(|l| l.starts_with("db0:"))
            .expect("db0 line");
        let avg: i64 = db0
            .rsplit('=')
            .next()
            .and_then(|v| v.parse().ok())
            .expect("avg_ttl");
        assert!(db0.starts_with("db0:keys=2,expires=1,avg_ttl="), "{db0}");
        assert!(
            (99_000..=100_000).contains(&avg),
            "avg_ttl {avg} for EX 100"
        );
        assert!(
            text.contains("db3:keys=1,expires=0,avg_ttl=0\r\n"),
            "{text}"
        );
        assert!(info(&engine, "commandstats").contains("cmdstat_set:calls=3,"));
        assert!(info(&engine, "server").contains("redis_version:7.0.15\r\n"));
    }
}
