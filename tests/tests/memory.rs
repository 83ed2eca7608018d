//! Memory as the operator sees it, against the pion-server binary (whose global
//! allocator counts what it holds): `used_memory` follows what the process really
//! holds, `FLUSHALL` gives the memory back to the system, and under `maxmemory` a
//! sustained write load keeps used memory at the limit with every eviction policy
//! tried, the resident set close behind.

use std::time::{Duration, Instant};

use pion_tests::{temp_dir, Client, PionProcess, RespValue};

const VALUE_LEN: usize = 1000;

fn info(c: &mut Client, section: &str) -> String {
    match c.cmd(&["INFO", section]) {
        RespValue::Bulk(_, Some(t)) => String::from_utf8(t).expect("utf8"),
        other => panic!("INFO: {}", other.render()),
    }
}

fn field(text: &str, name: &str) -> String {
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .unwrap_or_else(|| panic!("INFO lacks {name}"))
        .trim()
        .to_string()
}

fn number(c: &mut Client, name: &str) -> u64 {
    field(&info(c, "memory"), name).parse().expect("a number")
}

fn ok(c: &mut Client, args: &[&str]) {
    let r = c.cmd(args);
    assert!(!r.is_error(), "{} failed: {}", args.join(" "), r.render());
}

/// Writes `count` keys `prefix:i` of `VALUE_LEN` bytes (with `extra` arguments after
/// the value), pipelined 500 at a time; returns how many replies were errors.
fn write(c: &mut Client, prefix: &str, count: usize, extra: &[&str]) -> usize {
    let value = "v".repeat(VALUE_LEN);
    let mut errors = 0;
    for start in (0..count).step_by(500) {
        let end = (start + 500).min(count);
        let mut batch = Vec::new();
        for i in start..end {
            let key = format!("{prefix}:{i}");
            let mut args = vec!["SET", key.as_str(), value.as_str()];
            args.extend_from_slice(extra);
            batch.extend(Client::encode(&args));
        }
        c.send_raw(&batch).expect("send");
        for _ in start..end {
            let (reply, _) = c.read_reply().expect("reply");
            errors += usize::from(reply.is_error());
        }
    }
    errors
}

#[test]
fn used_memory_is_what_the_process_holds() {
    let dir = temp_dir("memory-accounting");
    let server = PionProcess::start(dir.path(), &["--wal", "off", "--threads", "2"]);
    let mut c = server.client();
    let text = info(&mut c, "memory");
    assert!(
        field(&text, "mem_allocator").starts_with("mimalloc-"),
        "{text}"
    );
    let startup: u64 = field(&text, "used_memory_startup").parse().expect("number");
    assert!(startup > 0, "the start-up baseline is measured");
    let (used0, rss0) = (
        number(&mut c, "used_memory"),
        number(&mut c, "used_memory_rss"),
    );
    assert_eq!(write(&mut c, "k", 40_000, &[]), 0);
    let (used1, rss1) = (
        number(&mut c, "used_memory"),
        number(&mut c, "used_memory_rss"),
    );
    let grown = used1 - used0;
    // 40,000 values of 1,000 bytes, their keys and the tables that hold them.
    assert!(
        grown >= 40_000 * VALUE_LEN as u64,
        "used_memory grew by {grown}"
    );
    // What is counted is what the process holds: its resident growth within 15 %
    // (measured: 0.99).
    let resident = rss1.saturating_sub(rss0) as f64;
    let share = grown as f64 / resident;
    assert!(
        (0.85..=1.15).contains(&share),
        "used_memory grew by {grown}, RSS by {resident} (share {share:.2})"
    );
    // The keys' own estimate is part of it, the tables and buffers the rest.
    let dataset = number(&mut c, "used_memory_dataset");
    assert!(
        dataset > 0 && dataset <= used1,
        "dataset {dataset} of {used1}"
    );
    let stats = match c.cmd(&["MEMORY", "MALLOC-STATS"]) {
        RespValue::Bulk(_, Some(t)) => String::from_utf8(t).expect("utf8"),
        other => panic!("MEMORY MALLOC-STATS: {}", other.render()),
    };
    assert!(stats.contains("\"mimalloc_version\""), "{stats}");
}

#[test]
fn flushall_gives_the_memory_back() {
    let dir = temp_dir("memory-flushall");
    let server = PionProcess::start(dir.path(), &["--wal", "off", "--threads", "2"]);
    // Two connections, so both worker threads allocate (and their heaps hold pages).
    let mut a = server.client();
    let mut b = server.client();
    let empty = number(&mut a, "used_memory_rss");
    assert_eq!(write(&mut a, "a", 40_000, &[]), 0);
    assert_eq!(write(&mut b, "b", 40_000, &[]), 0);
    let loaded = number(&mut a, "used_memory_rss");
    assert!(loaded > empty + 60_000_000, "RSS {empty} -> {loaded}");
    ok(&mut a, &["FLUSHALL"]);
    // No MEMORY PURGE: the server gives the memory back by itself within seconds.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let rss = number(&mut a, "used_memory_rss");
        if rss <= 2 * empty {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "RSS {rss} after FLUSHALL, {empty} empty, {loaded} loaded"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // MEMORY PURGE does the same at once.
    assert_eq!(write(&mut a, "c", 20_000, &[]), 0);
    ok(&mut a, &["FLUSHALL"]);
    ok(&mut a, &["MEMORY", "PURGE"]);
    let rss = number(&mut a, "used_memory_rss");
    assert!(
        rss <= 2 * empty,
        "RSS {rss} after MEMORY PURGE, {empty} empty"
    );
}

/// `used_memory` growth a member after writing 2,000 keys of 200 members each with
/// `command` (`member(m)`: the arguments that add member `m`).
fn bytes_a_member(name: &str, command: &str, member: impl Fn(usize) -> Vec<String>) -> f64 {
    const KEYS: usize = 2_000;
    const MEMBERS: usize = 200;
    let dir = temp_dir(name);
    let server = PionProcess::start(dir.path(), &["--wal", "off", "--threads", "1"]);
    let mut c = server.client();
    let before = number(&mut c, "used_memory");
    let members: Vec<String> = (0..MEMBERS).flat_map(member).collect();
    for start in (0..KEYS).step_by(100) {
        let mut batch = Vec::new();
        for i in start..start + 100 {
            let key = format!("key:{i:06}");
            let mut args = vec![command, key.as_str()];
            args.extend(members.iter().map(String::as_str));
            batch.extend(Client::encode(&args));
        }
        c.send_raw(&batch).expect("send");
        for _ in 0..100 {
            let (reply, _) = c.read_reply().expect("reply");
            assert!(!reply.is_error(), "{command}: {}", reply.render());
        }
    }
    // Past the second after which an idle connection's input buffer is given back.
    std::thread::sleep(Duration::from_millis(1500));
    let grown = number(&mut c, "used_memory").saturating_sub(before);
    grown as f64 / (KEYS * MEMBERS) as f64
}

/// A set of 200 strings is a hash table grown by doubling from four buckets. Each
/// resize must leave an array of exactly its buckets: one that reused the block of
/// the vectors it was built from kept half as much again (64 bytes a member in all,
/// what Redis 7 pays; now 53).
#[test]
fn a_large_set_costs_less_than_redis_a_member() {
    let cost = bytes_a_member("memory-set", "SADD", |m| vec![format!("member{m}")]);
    assert!(cost <= 58.0, "{cost:.1} bytes a member (Redis 7: 64)");
}

/// A sorted set of 200 members keeps a member-to-score map whose buckets are a
/// boxed member and a score: with a vector for the member, 256 buckets passed the
/// 8 KiB size class (118 bytes a member, Redis 7: 116; now 103).
#[test]
fn a_large_sorted_set_costs_less_than_redis_a_member() {
    let cost = bytes_a_member("memory-zset", "ZADD", |m| {
        vec![m.to_string(), format!("member{m}")]
    });
    assert!(cost <= 110.0, "{cost:.1} bytes a member (Redis 7: 116)");
}

#[test]
fn a_long_pipeline_is_not_held_whole() {
    let dir = temp_dir("memory-pipeline");
    let server = PionProcess::start(dir.path(), &["--wal", "off", "--threads", "1"]);
    let mut c = server.client();
    let (used0, rss0) = (
        number(&mut c, "used_memory"),
        number(&mut c, "used_memory_rss"),
    );
    // 2,000 lists of 1,000 short items, about 26 MB of commands sent at once, as a
    // bulk loader does: the server reads and runs it a slice at a time.
    const LISTS: usize = 2_000;
    let items: Vec<String> = (0..1000).map(|e| format!("item{e}")).collect();
    let mut pipeline = Vec::new();
    for i in 0..LISTS {
        let key = format!("list:{i}");
        let mut args = vec!["RPUSH", key.as_str()];
        args.extend(items.iter().map(String::as_str));
        pipeline.extend(Client::encode(&args));
    }
    assert!(pipeline.len() > 20_000_000, "{} bytes", pipeline.len());
    c.send_raw(&pipeline).expect("send");
    for _ in 0..LISTS {
        let (reply, _) = c.read_reply().expect("reply");
        assert!(!reply.is_error(), "{}", reply.render());
    }
    std::thread::sleep(Duration::from_millis(300));
    let (used1, rss1) = (
        number(&mut c, "used_memory"),
        number(&mut c, "used_memory_rss"),
    );
    // About 9.5 KB a list packed (Redis's own is 9.2 KB). Read whole, the pipeline
    // passed through a buffer as large as itself, and the pages it touched stayed
    // resident: 1.4x the data.
    let used = used1 - used0;
    assert!(used < (LISTS * 11_000) as u64, "used_memory grew by {used}");
    let resident = rss1.saturating_sub(rss0);
    assert!(
        resident < used + used / 4,
        "RSS grew by {resident} for {used} used"
    );
}

/// Under `maxmemory` a write load four times the headroom keeps used memory at the
/// limit under `policy`, and the resident set within 10 % of what the limit allows
/// (measured: 1.05-1.08; 1.08-1.11 while aligned allocations over-allocated).
///
/// `writers` clients write at once, over two worker threads when there are more than
/// one: each worker evicts the keys it wrote, whose memory its own allocator reuses at
/// once. Several workers get more headroom and a looser bound, as a fixed cost per
/// thread weighs in at this scale: eight writers over two workers read 1.04-1.09 in
/// eighteen runs, where evicting each other's keys read 1.08-1.30 (the 10 % at scale,
/// 200 MB under redis-benchmark, is in doc/benchmarks.md).
fn bounded_under(policy: &str, extra: &[&str], writers: usize) {
    let dir = temp_dir("memory-maxmemory");
    let threads = writers.min(2).to_string();
    let server = PionProcess::start(dir.path(), &["--wal", "off", "--threads", &threads]);
    let mut c = server.client();
    let headroom: u64 = if writers > 1 { 64 << 20 } else { 24 << 20 };
    let (used0, rss0) = (
        number(&mut c, "used_memory"),
        number(&mut c, "used_memory_rss"),
    );
    let limit = used0 + headroom;
    ok(&mut c, &["CONFIG", "SET", "maxmemory-policy", policy]);
    ok(&mut c, &["CONFIG", "SET", "maxmemory", &limit.to_string()]);
    let per_writer = 4 * headroom as usize / VALUE_LEN / writers;
    let errors: usize = std::thread::scope(|s| {
        let handles: Vec<_> = (0..writers)
            .map(|w| {
                let mut c = server.client();
                s.spawn(move || write(&mut c, &format!("w{w}"), per_writer, extra))
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("writer")).sum()
    });
    assert_eq!(errors, 0, "{policy}: writes refused");
    let evicted: u64 = field(&info(&mut c, "stats"), "evicted_keys")
        .parse()
        .expect("number");
    assert!(evicted > 0, "{policy}: nothing evicted");
    let used = number(&mut c, "used_memory") - number(&mut c, "mem_not_counted_for_evict");
    assert!(
        used <= limit + 64 * 1024,
        "{policy}: used_memory {used} past maxmemory {limit}"
    );
    let rss = number(&mut c, "used_memory_rss");
    let grown = rss.saturating_sub(rss0) as f64;
    let bound = if writers > 1 { 1.15 } else { 1.1 };
    assert!(
        grown <= bound * headroom as f64,
        "{policy}: RSS grew by {grown} for {headroom} of headroom"
    );
}

#[test]
fn maxmemory_holds_under_a_sustained_write_load_allkeys_lru() {
    bounded_under("allkeys-lru", &[], 1);
}

#[test]
fn maxmemory_holds_under_a_sustained_write_load_from_two_workers() {
    bounded_under("allkeys-lru", &[], 8);
}

#[test]
fn maxmemory_holds_under_a_sustained_write_load_volatile_ttl() {
    bounded_under("volatile-ttl", &["EX", "100000"], 1);
}

#[test]
fn maxmemory_holds_under_a_sustained_write_load_from_two_workers_volatile_ttl() {
    bounded_under("volatile-ttl", &["EX", "100000"], 8);
}

/// `MEMORY STATS`'s integer field `name`.
fn stat(c: &mut Client, name: &str) -> u64 {
    let RespValue::Agg(_, Some(items)) = c.cmd(&["MEMORY", "STATS"]) else {
        panic!("MEMORY STATS");
    };
    items
        .chunks(2)
        .find_map(|kv| match kv {
            [RespValue::Bulk(_, Some(k)), RespValue::Line(b':', v)] if k == name.as_bytes() => {
                String::from_utf8_lossy(v).parse().ok()
            }
            _ => None,
        })
        .unwrap_or_else(|| panic!("MEMORY STATS lacks {name}"))
}

/// `INFO memory` and `MEMORY STATS` say where the memory beside the keys is: the
/// clients' buffers, the scripts, the prompt cache (mapped from its block files in a
/// durable server) and the search indexes' vectors.
#[test]
fn the_breakdown_names_clients_scripts_prompt_cache_and_indexes() {
    let dir = temp_dir("memory-breakdown");
    let server = PionProcess::start(dir.path(), &["--threads", "1"]);
    let mut c = server.client();
    // This client's own buffers, at least (their sizes move as it is answered).
    let clients0 = number(&mut c, "mem_clients_normal");
    assert!(clients0 > 0 && stat(&mut c, "clients.normal") > 0);
    // A client halfway through a 2 MB argument: its query buffer is sized for it.
    let mut slow = server.client();
    let mut partial = b"*3\r\n$3\r\nSET\r\n$4\r\nslow\r\n$2000000\r\n".to_vec();
    partial.extend(std::iter::repeat_n(b'x', 500_000));
    slow.send_raw(&partial).expect("send");
    let deadline = Instant::now() + Duration::from_secs(10);
    while number(&mut c, "mem_clients_normal") < clients0 + 1_500_000 {
        assert!(Instant::now() < deadline, "the query buffer is not counted");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(stat(&mut c, "clients.normal") >= clients0 + 1_500_000);
    // Scripts.
    assert_eq!(stat(&mut c, "lua.caches"), 0);
    ok(
        &mut c,
        &["SCRIPT", "LOAD", "return 'a script of some length'"],
    );
    assert!(stat(&mut c, "lua.caches") > 0);
    assert_eq!(stat(&mut c, "aof.buffer"), number(&mut c, "mem_aof_buffer"));
    // The prompt cache: one block of 2 layers of 8 KiB, kept as views of its file.
    let manifest = r#"{"model":"m","block_tokens":16,"dtype":"f16","layers":[{"kind":"attention","kv_heads":2,"head_dim":64},{"kind":"attention","kv_heads":2,"head_dim":64}]}"#;
    ok(&mut c, &["KV.REGISTER", "n", manifest]);
    let tokens: Vec<u8> = (0u32..16).flat_map(|t| t.to_le_bytes()).collect();
    let layer = vec![7u8; 2 * 2 * 16 * 64 * 2];
    let put: Vec<&[u8]> = vec![b"KV.PUT", b"n", b"root", &tokens, &layer, &layer];
    assert!(!c.cmd(&put).is_error());
    assert_eq!(number(&mut c, "mem_prompt_cache"), 2 * layer.len() as u64);
    assert_eq!(
        number(&mut c, "mem_prompt_cache_mapped"),
        2 * layer.len() as u64
    );
    // A vector index.
    assert_eq!(number(&mut c, "mem_vector_indexes"), 0);
    ok(
        &mut c,
        &[
            "FT.CREATE",
            "v",
            "SCHEMA",
            "e",
            "VECTOR",
            "HNSW",
            "6",
            "TYPE",
            "FLOAT32",
            "DIM",
            "4",
            "DISTANCE_METRIC",
            "L2",
        ],
    );
    let blob: Vec<u8> = [1f32, 2.0, 3.0, 4.0]
        .iter()
        .flat_map(|f| f.to_le_bytes())
        .collect();
    assert!(!c.cmd(&[b"HSET".as_slice(), b"doc", b"e", &blob]).is_error());
    assert!(number(&mut c, "mem_vector_indexes") > 0);
    // Each purge is counted (the cron may add its own meanwhile).
    let purges = number(&mut c, "mem_purges");
    ok(&mut c, &["MEMORY", "PURGE"]);
    assert!(number(&mut c, "mem_purges") > purges);
}
