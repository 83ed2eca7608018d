//! Memory per key, side by side: each shape of data is loaded into redis-server and
//! pion-server (`--threads 1`, both in memory only) in one run, and the harness prints
//! what each key costs in resident memory (RSS) and in `used_memory`, the Pion/Redis
//! ratios, and how much of Pion's RSS growth its `used_memory` accounts for; after the
//! last shape it flushes both and prints how much RSS each gives back. Each shape runs
//! on a freshly started pair of servers, so no shape reuses pages an earlier one freed.
//!
//! ```text
//! cargo build --release -p pion-server
//! cargo run --release -p pion-benches --bin memory_compare -- [--scale F] [--only TEXT]
//! ```
//!
//! The shapes are the sizes where Redis 7 uses its compact encodings (embstr and int
//! strings, listpack hashes, lists and sorted sets, intsets) and the sizes past its
//! switch points (hashtable, quicklist, skiplist). `--scale` multiplies every key
//! count (default 1: about two million commands per server); `--only` runs the shapes
//! whose name contains TEXT. Every shape holds tens of MiB, so that costs paid once
//! (an allocator's first page of each size class, a table's first block) do not read
//! as costs per key.

use pion_benches::resp::{encode, Conn, Value};
use pion_benches::{
    free_port, pion_in_memory, pion_server_beside_exe, redis_in_memory, wait_port, Proc,
};
use std::time::Duration;

/// One shape: its name, how many keys, and the command that writes key `i`.
struct Shape {
    name: &'static str,
    keys: usize,
    command: fn(usize) -> Vec<Vec<u8>>,
}

fn words(parts: &[&str]) -> Vec<Vec<u8>> {
    parts.iter().map(|p| p.as_bytes().to_vec()).collect()
}

/// `[cmd, key, member/field …]` with `n` generated elements after the key.
fn collection(
    cmd: &str,
    key: String,
    n: usize,
    element: impl Fn(usize) -> Vec<String>,
) -> Vec<Vec<u8>> {
    let mut out = vec![cmd.as_bytes().to_vec(), key.into_bytes()];
    for e in 0..n {
        out.extend(element(e).into_iter().map(String::into_bytes));
    }
    out
}

fn shapes() -> Vec<Shape> {
    vec![
        Shape {
            name: "string, 3 B value",
            keys: 400_000,
            command: |i| words(&["SET", &format!("key:{i:010}"), "abc"]),
        },
        Shape {
            // A key with a time to live: Redis adds an `expires` dictionary entry,
            // Pion a heap block for the key and an entry in the deadline index.
            name: "string, 3 B value, with a TTL",
            keys: 400_000,
            command: |i| words(&["SET", &format!("key:{i:010}"), "abc", "EX", "100000"]),
        },
        Shape {
            name: "string, 100 B value",
            keys: 300_000,
            command: |i| words(&["SET", &format!("key:{i:010}"), &format!("{i:0>100}")]),
        },
        Shape {
            // Past Redis's shared integers (0..9999), so each is its own object.
            name: "integer",
            keys: 400_000,
            command: |i| words(&["SET", &format!("key:{i:010}"), &(1_000_000 + i).to_string()]),
        },
        Shape {
            name: "hash, 5 fields (listpack)",
            keys: 100_000,
            command: |i| {
                collection("HSET", format!("hash:{i:08}"), 5, |f| {
                    vec![format!("field{f}"), format!("value{f}")]
                })
            },
        },
        Shape {
            // Under `hash-max-listpack-entries` (512): still a listpack in both.
            name: "hash, 200 fields (listpack)",
            keys: 10_000,
            command: |i| {
                collection("HSET", format!("big-hash:{i:06}"), 200, |f| {
                    vec![format!("field{f}"), format!("value{f}")]
                })
            },
        },
        Shape {
            name: "hash, 1000 fields (hashtable)",
            keys: 2_000,
            command: |i| {
                collection("HSET", format!("huge-hash:{i:06}"), 1000, |f| {
                    vec![format!("field{f}"), format!("value{f}")]
                })
            },
        },
        Shape {
            name: "list, 5 items (listpack)",
            keys: 100_000,
            command: |i| {
                collection("RPUSH", format!("list:{i:08}"), 5, |e| {
                    vec![format!("item{e}")]
                })
            },
        },
        Shape {
            name: "list, 1000 items (quicklist)",
            keys: 4_000,
            command: |i| {
                collection("RPUSH", format!("big-list:{i:06}"), 1000, |e| {
                    vec![format!("item{e}")]
                })
            },
        },
        Shape {
            name: "set, 5 integers (intset)",
            keys: 100_000,
            command: |i| {
                collection("SADD", format!("set:{i:08}"), 5, |e| {
                    vec![(1000 + e).to_string()]
                })
            },
        },
        Shape {
            name: "set, 200 strings (hashtable)",
            keys: 10_000,
            command: |i| {
                collection("SADD", format!("big-set:{i:06}"), 200, |e| {
                    vec![format!("member{e}")]
                })
            },
        },
        Shape {
            name: "sorted set, 5 members (listpack)",
            keys: 100_000,
            command: |i| {
                collection("ZADD", format!("zset:{i:08}"), 5, |e| {
                    vec![e.to_string(), format!("member{e}")]
                })
            },
        },
        Shape {
            name: "sorted set, 200 members (skiplist)",
            keys: 10_000,
            command: |i| {
                collection("ZADD", format!("big-zset:{i:06}"), 200, |e| {
                    vec![e.to_string(), format!("member{e}")]
                })
            },
        },
    ]
}

/// `used_memory` and `used_memory_rss` from `INFO memory`.
fn memory(c: &mut Conn) -> (u64, u64) {
    let text = c.call_str(&["INFO", "memory"]).expect("INFO").text();
    let field = |name: &str| -> u64 {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    };
    (field("used_memory"), field("used_memory_rss"))
}

/// Writes `keys` keys of `shape` through one pipelined connection.
fn load(c: &mut Conn, shape: &Shape, keys: usize) {
    let mut buf = Vec::new();
    for start in (0..keys).step_by(1000) {
        let end = (start + 1000).min(keys);
        buf.clear();
        for i in start..end {
            let args = (shape.command)(i);
            let refs: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
            encode(&mut buf, &refs);
        }
        c.send(&buf).expect("send");
        for _ in start..end {
            if let Value::Error(e) = c.read().expect("reply") {
                panic!("{}: {}", shape.name, String::from_utf8_lossy(&e));
            }
        }
    }
}

/// Empties the server and lets it give memory back (Redis: `MEMORY PURGE` asks
/// jemalloc; Pion purges on its own after a large fall, and on `MEMORY PURGE`).
fn empty(c: &mut Conn) {
    c.call_str(&["FLUSHALL"]).expect("FLUSHALL");
    c.call_str(&["MEMORY", "PURGE"]).expect("MEMORY PURGE");
    std::thread::sleep(Duration::from_millis(500));
}

/// Bytes per key of one shape on one server: (RSS, used_memory).
fn per_key(c: &mut Conn, shape: &Shape, keys: usize) -> (f64, f64) {
    empty(c);
    let (used0, rss0) = memory(c);
    load(c, shape, keys);
    // Past a second idle, so that neither side still holds the input buffer the
    // pipelined load grew (Pion gives an idle client's back after a second).
    std::thread::sleep(Duration::from_millis(3000));
    let (used1, rss1) = memory(c);
    let n = keys as f64;
    (
        (rss1 as f64 - rss0 as f64) / n,
        (used1 as f64 - used0 as f64) / n,
    )
}

/// A redis-server and a pion-server started fresh, with a connection to each.
struct Servers {
    redis: Conn,
    pion: Conn,
    /// RSS of each right after it started and was emptied.
    redis_empty: u64,
    pion_empty: u64,
    dir: std::path::PathBuf,
    // Dropped last: the servers outlive the connections.
    _redis_proc: Proc,
    _pion_proc: Proc,
}

impl Servers {
    fn start(pion_bin: &std::path::Path, run: usize) -> Servers {
        let redis_port = free_port();
        let redis_proc = redis_in_memory(redis_port);
        let pion_port = free_port();
        let dir =
            std::env::temp_dir().join(format!("pion-memory-bench-{}-{run}", std::process::id()));
        let pion_proc = pion_in_memory(pion_bin, pion_port, &dir);
        wait_port(redis_port);
        wait_port(pion_port);
        let timeout = Duration::from_secs(120);
        let mut redis = Conn::connect(redis_port, timeout).expect("connect to redis-server");
        let mut pion = Conn::connect(pion_port, timeout).expect("connect to pion-server");
        empty(&mut redis);
        empty(&mut pion);
        let (_, redis_empty) = memory(&mut redis);
        let (_, pion_empty) = memory(&mut pion);
        Servers {
            redis,
            pion,
            redis_empty,
            pion_empty,
            dir,
            _redis_proc: redis_proc,
            _pion_proc: pion_proc,
        }
    }
}

impl Drop for Servers {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let scale: f64 = args
        .iter()
        .position(|a| a == "--scale")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(1.0);
    let only: Option<String> = args
        .iter()
        .position(|a| a == "--only")
        .and_then(|i| args.get(i + 1))
        .cloned();
    let pion_bin = pion_server_beside_exe();

    println!(
        "memory per key, {}; pion-server --threads 1 --wal off vs redis-server --save '', \
         both started fresh for each shape",
        pion_benches::cpu_summary()
    );
    println!(
        "| shape | keys | Redis RSS/key | Pion RSS/key | RSS ratio | Redis used/key | Pion used/key | used ratio | Pion used/RSS growth |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut last = None;
    let chosen = shapes()
        .into_iter()
        .filter(|s| only.as_ref().is_none_or(|o| s.name.contains(o.as_str())));
    for (run, shape) in chosen.enumerate() {
        // Fresh servers for every shape: pages one shape freed and the allocator kept
        // would otherwise absorb the next shape's growth, on either side, and the
        // ratio would read that reuse rather than the shape's cost.
        drop(last.take());
        let mut s = Servers::start(&pion_bin, run);
        let keys = ((shape.keys as f64 * scale) as usize).max(1);
        let (r_rss, r_used) = per_key(&mut s.redis, &shape, keys);
        let (p_rss, p_used) = per_key(&mut s.pion, &shape, keys);
        println!(
            "| {} | {} | {:.0} | {:.0} | {:.2} | {:.0} | {:.0} | {:.2} | {:.2} |",
            shape.name,
            keys,
            r_rss,
            p_rss,
            p_rss / r_rss.max(1.0),
            r_used,
            p_used,
            p_used / r_used.max(1.0),
            p_used / p_rss.max(1.0)
        );
        last = Some(s);
    }
    // What each gives back: the last shape's data flushed, then a few seconds idle.
    let Some(mut s) = last else { return };
    let (_, redis_full) = memory(&mut s.redis);
    let (_, pion_full) = memory(&mut s.pion);
    for c in [&mut s.redis, &mut s.pion] {
        c.call_str(&["FLUSHALL"]).expect("FLUSHALL");
    }
    std::thread::sleep(Duration::from_secs(3));
    let (_, redis_after) = memory(&mut s.redis);
    let (_, pion_after) = memory(&mut s.pion);
    let mb = |b: u64| b as f64 / (1 << 20) as f64;
    println!(
        "RSS empty / loaded / 3 s after FLUSHALL (no MEMORY PURGE): Redis {:.1} / {:.1} / {:.1} MiB, Pion {:.1} / {:.1} / {:.1} MiB",
        mb(s.redis_empty),
        mb(redis_full),
        mb(redis_after),
        mb(s.pion_empty),
        mb(pion_full),
        mb(pion_after)
    );
}
