//! Side-by-side throughput: `redis-benchmark` against redis-server and against
//! pion-server in one run, same settings, and the Pion/Redis ratio.
//!
//! ```text
//! cargo build --release -p pion-server
//! cargo run --release -p pion-benches --bin redis_compare -- [--requests N] [--threads T] [--rounds R]
//!     [--persistence off|everysec|always]
//! ```
//!
//! `--persistence` (default `off`: both servers in memory only) compares the cost of
//! durability: redis-server with its append-only file and pion-server with its
//! write-ahead log, both at the given fsync policy and each in a fresh data directory
//! (removed afterwards). Only writes pay for it, so then only SET is measured.

use pion_benches::{free_port, wait_port, Proc};
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// A fresh data directory for one server, removed on drop (after the server: declare
/// it before the `Proc` that uses it).
struct DataDir(PathBuf);

impl DataDir {
    fn new(name: &str) -> DataDir {
        let path = std::env::temp_dir().join(format!("pion-bench-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", path.display()));
        DataDir(path)
    }
}

impl Drop for DataDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs redis-benchmark and returns requests per second for each test.
fn bench(port: u16, tests: &str, clients: u32, pipeline: u32, requests: u64) -> Vec<(String, f64)> {
    let out = Command::new("redis-benchmark")
        .args([
            "-p",
            &port.to_string(),
            "-t",
            tests,
            "-c",
            &clients.to_string(),
            "-P",
            &pipeline.to_string(),
            "-n",
            &requests.to_string(),
            "-r",
            "100000",
            "--csv",
        ])
        .output()
        .expect("redis-benchmark (package redis-tools) must be installed");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .skip(1)
        .filter_map(|l| {
            let cols: Vec<&str> = l.split(',').map(|c| c.trim_matches('"')).collect();
            Some((cols.first()?.to_string(), cols.get(1)?.parse().ok()?))
        })
        .collect()
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
    let persistence = args
        .iter()
        .position(|a| a == "--persistence")
        .and_then(|i| args.get(i + 1))
        .map_or("off", String::as_str);
    if !["off", "everysec", "always"].contains(&persistence) {
        eprintln!("--persistence takes off, everysec or always, not '{persistence}'");
        std::process::exit(2);
    }
    // With persistence only writes differ; reads would measure the same thing twice.
    let tests = if persistence == "off" {
        "set,get"
    } else {
        "set"
    };
    let requests = arg("--requests", 1_000_000);
    let threads = arg("--threads", 1);
    let exe_dir = std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(|d| d.to_path_buf()));
    let pion_bin = exe_dir
        .map(|d| d.join("pion-server"))
        .filter(|p| p.exists())
        .expect("build pion-server in the same profile first");

    // Declared before the servers, so they are removed after the servers stop.
    let redis_dir = DataDir::new("redis");
    let pion_dir = DataDir::new("pion");
    let mut redis_cmd = Command::new("redis-server");
    let mut pion_cmd = Command::new(&pion_bin);
    if persistence == "off" {
        redis_cmd.args(["--appendonly", "no"]);
        pion_cmd.args(["--wal", "off"]);
    } else {
        redis_cmd.args(["--appendonly", "yes", "--appendfsync", persistence]);
        pion_cmd.args(["--wal", "on", "--appendfsync", persistence]);
    }
    let redis_port = free_port();
    let _redis = Proc(
        redis_cmd
            .args(["--port", &redis_port.to_string(), "--save", "", "--dir"])
            .arg(&redis_dir.0)
            .stdout(Stdio::null())
            .spawn()
            .expect("redis-server must be installed"),
    );
    let pion_port = free_port();
    let _pion = Proc(
        pion_cmd
            .args([
                "--port",
                &pion_port.to_string(),
                "--threads",
                &threads.to_string(),
                "--dir",
            ])
            .arg(&pion_dir.0)
            .stderr(Stdio::null())
            .spawn()
            .expect("start pion-server"),
    );
    wait_port(redis_port);
    wait_port(pion_port);
    let rounds = arg("--rounds", 3).max(1) as usize;
    let mode = match persistence {
        "off" => "persistence off (in memory only)".to_string(),
        p => format!("persistence appendfsync {p} (redis AOF, pion WAL)"),
    };
    println!(
        "redis-benchmark -t {tests} -c 50 -n {requests} -r 100000; pion --threads {threads}; \
         {mode}; median of {rounds} rounds, servers alternating first"
    );
    println!(
        "{:<6} {:>9} {:>14} {:>14} {:>7}",
        "test", "pipeline", "redis ops/s", "pion ops/s", "ratio"
    );
    for pipeline in [1u32, 16] {
        let mut redis_runs: Vec<Vec<(String, f64)>> = Vec::new();
        let mut pion_runs: Vec<Vec<(String, f64)>> = Vec::new();
        for round in 0..rounds {
            // Alternate which server goes first so neither always gets the warmer machine.
            if round % 2 == 0 {
                redis_runs.push(bench(redis_port, tests, 50, pipeline, requests));
                pion_runs.push(bench(pion_port, tests, 50, pipeline, requests));
            } else {
                pion_runs.push(bench(pion_port, tests, 50, pipeline, requests));
                redis_runs.push(bench(redis_port, tests, 50, pipeline, requests));
            }
        }
        for (i, (name, _)) in redis_runs[0].iter().enumerate() {
            let median = |runs: &[Vec<(String, f64)>]| {
                let mut v: Vec<f64> = runs
                    .iter()
                    .filter_map(|r| r.get(i).map(|(_, x)| *x))
                    .collect();
                v.sort_by(f64::total_cmp);
                v.get(v.len() / 2).copied().unwrap_or(0.0)
            };
            let (rv, pv) = (median(&redis_runs), median(&pion_runs));
            println!(
                "{name:<6} {pipeline:>9} {rv:>14.0} {pv:>14.0} {:>7.2}",
                pv / rv
            );
        }
    }
}
