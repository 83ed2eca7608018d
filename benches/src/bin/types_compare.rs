//! Bitmaps, HyperLogLog, geo and streams side by side: the same `redis-benchmark`
//! commands against redis-server and pion-server (`--threads 1`, both in memory only)
//! in one run, at pipeline 1 and 16, and the Pion/Redis ratio.
//!
//! ```text
//! cargo build --release -p pion-server
//! cargo run --release -p pion-benches --bin types_compare -- [--requests N] [--rounds R]
//! ```
//!
//! Each server is seeded the same way first (through `redis-cli --pipe`): a 16 MiB
//! bitmap, a dense HyperLogLog, 100,000 geo points around Sicily, and a stream of
//! explicit ids `0-1 …` with a consumer group, so `XREADGROUP … >` always finds new
//! entries and `XACK` acknowledges ids that exist.

use pion_benches::{free_port, pion_in_memory, pion_server_beside_exe, redis_in_memory, wait_port};
use std::io::Write;
use std::process::{Command, Stdio};

fn resp(args: &[String]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// The seed commands, as one RESP stream, with a stream of `entries` entries.
fn seed(entries: u64) -> Vec<u8> {
    let mut out = Vec::new();
    let cmd = |words: &[&str]| words.iter().map(|w| w.to_string()).collect::<Vec<_>>();
    // 16 MiB: the last bit of 2^27 bits.
    out.extend(resp(&cmd(&["SETBIT", "big", "134217727", "1"])));
    let mut rng = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    for chunk in 0..50 {
        let mut words = vec!["PFADD".to_string(), "hll".to_string()];
        words.extend((0..1000).map(|i| format!("e{chunk}:{i}")));
        out.extend(resp(&words));
    }
    for chunk in 0..100 {
        let mut words = vec!["GEOADD".to_string(), "geo".to_string()];
        for i in 0..1000 {
            let lon = 12.0 + (next() % 3_000_000) as f64 / 1e6;
            let lat = 36.8 + (next() % 1_500_000) as f64 / 1e6;
            words.extend([
                format!("{lon:.6}"),
                format!("{lat:.6}"),
                format!("p{chunk}:{i}"),
            ]);
        }
        out.extend(resp(&words));
    }
    for id in 1..=entries {
        out.extend(resp(&cmd(&["XADD", "s", &format!("0-{id}"), "f", "v"])));
    }
    out.extend(resp(&cmd(&["XGROUP", "CREATE", "s", "g", "0"])));
    out
}

fn load(port: u16, data: &[u8]) {
    let mut child = Command::new("redis-cli")
        .args(["-p", &port.to_string(), "--pipe"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .expect("redis-cli (package redis-tools) must be installed");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(data)
        .expect("seed");
    let status = child.wait().expect("redis-cli");
    assert!(status.success(), "seeding port {port} failed");
}

/// Requests per second of one command.
fn bench(port: u16, clients: u32, pipeline: u32, requests: u64, command: &[&str]) -> f64 {
    let out = Command::new("redis-benchmark")
        .args(["-p", &port.to_string(), "-c", &clients.to_string()])
        .args(["-P", &pipeline.to_string(), "-n", &requests.to_string()])
        .args(["-r", "134217727", "--csv"])
        .args(command)
        .output()
        .expect("redis-benchmark (package redis-tools) must be installed");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .skip(1)
        .find_map(|l| l.split(',').nth(1)?.trim_matches('"').parse().ok())
        .unwrap_or(0.0)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |name: &str, default: u64| -> u64 {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let requests = arg("--requests", 100_000);
    let rounds = arg("--rounds", 3).max(1) as usize;
    let pion_bin = pion_server_beside_exe();
    let redis_port = free_port();
    let _redis = redis_in_memory(redis_port);
    let pion_port = free_port();
    let dir = std::env::temp_dir().join(format!("pion-types-bench-{}", std::process::id()));
    let _pion = pion_in_memory(&pion_bin, pion_port, &dir);
    wait_port(redis_port);
    wait_port(pion_port);
    // Enough stream entries for every XREADGROUP request (a tenth of the requests,
    // COUNT 10, at two pipeline depths, every round) and more.
    let data = seed(requests * rounds as u64 * 2 + 1000);
    load(redis_port, &data);
    load(pion_port, &data);

    // (name, clients, requests divided by, command)
    let cases: &[(&str, u32, u64, &[&str])] = &[
        // One offset: redis-benchmark writes `__rand_int__` with leading zeros, which
        // a bit offset may not have (both servers refuse every request).
        (
            "SETBIT big 99999999 1",
            50,
            1,
            &["SETBIT", "big", "99999999", "1"],
        ),
        ("BITCOUNT big (16 MiB)", 1, 200, &["BITCOUNT", "big"]),
        ("PFADD hll rand", 50, 1, &["PFADD", "hll", "__rand_int__"]),
        ("PFCOUNT hll", 50, 1, &["PFCOUNT", "hll"]),
        (
            "GEOADD geo",
            50,
            1,
            &[
                "GEOADD",
                "geo",
                "13.__rand_int__",
                "37.__rand_int__",
                "m:__rand_int__",
            ],
        ),
        (
            "GEOSEARCH 20 km COUNT 10",
            50,
            100,
            &[
                "GEOSEARCH",
                "geo",
                "FROMLONLAT",
                "13.4",
                "37.6",
                "BYRADIUS",
                "20",
                "km",
                "COUNT",
                "10",
                "ASC",
            ],
        ),
        ("XADD x *", 50, 1, &["XADD", "x", "*", "f", "v"]),
        (
            "XREADGROUP COUNT 10 >",
            50,
            10,
            &[
                "XREADGROUP",
                "GROUP",
                "g",
                "c",
                "COUNT",
                "10",
                "STREAMS",
                "s",
                ">",
            ],
        ),
        ("XACK s g id", 50, 1, &["XACK", "s", "g", "0-__rand_int__"]),
    ];
    println!(
        "redis-benchmark -n {requests}; pion --threads 1; both in memory only; median of \
         {rounds} rounds, servers alternating first"
    );
    println!(
        "{:<26} {:>3} {:>8} {:>13} {:>13} {:>6}",
        "command", "P", "clients", "redis ops/s", "pion ops/s", "ratio"
    );
    for &(name, clients, divisor, command) in cases {
        let requests = (requests / divisor).max(100);
        for pipeline in [1u32, 16] {
            let mut redis = Vec::new();
            let mut pion = Vec::new();
            for round in 0..rounds {
                if round % 2 == 0 {
                    redis.push(bench(redis_port, clients, pipeline, requests, command));
                    pion.push(bench(pion_port, clients, pipeline, requests, command));
                } else {
                    pion.push(bench(pion_port, clients, pipeline, requests, command));
                    redis.push(bench(redis_port, clients, pipeline, requests, command));
                }
            }
            let median = |v: &mut Vec<f64>| {
                v.sort_by(f64::total_cmp);
                v[v.len() / 2]
            };
            let (r, p) = (median(&mut redis), median(&mut pion));
            println!(
                "{name:<26} {pipeline:>3} {clients:>8} {r:>13.0} {p:>13.0} {:>6.2}",
                p / r
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
