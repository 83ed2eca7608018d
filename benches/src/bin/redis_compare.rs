//! Side-by-side throughput: `redis-benchmark` against redis-server and against
//! pion-server in one run, same settings, and the Pion/Redis ratio.
//!
//! ```text
//! cargo build --release -p pion-server
//! cargo run --release -p pion-benches --bin redis_compare -- [--requests N] [--threads T] [--rounds R]
//! ```

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or(0)
}

fn wait_port(port: u16) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("server on port {port} did not start");
}

struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
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
    let requests = arg("--requests", 1_000_000);
    let threads = arg("--threads", 1);
    let exe_dir = std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(|d| d.to_path_buf()));
    let pion_bin = exe_dir
        .map(|d| d.join("pion-server"))
        .filter(|p| p.exists())
        .expect("build pion-server in the same profile first");

    let redis_port = free_port();
    let _redis = Proc(
        Command::new("redis-server")
            .args([
                "--port",
                &redis_port.to_string(),
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .stdout(Stdio::null())
            .spawn()
            .expect("redis-server must be installed"),
    );
    let pion_port = free_port();
    let data = std::env::temp_dir().join(format!("pion-bench-{pion_port}"));
    let _pion = Proc(
        Command::new(&pion_bin)
            .args([
                "--port",
                &pion_port.to_string(),
                "--threads",
                &threads.to_string(),
                "--dir",
            ])
            .arg(&data)
            .stderr(Stdio::null())
            .spawn()
            .expect("start pion-server"),
    );
    wait_port(redis_port);
    wait_port(pion_port);
    let rounds = arg("--rounds", 3).max(1) as usize;
    println!(
        "redis-benchmark -t set,get -c 50 -n {requests} -r 100000; pion --threads {threads}; \
         median of {rounds} rounds, servers alternating first"
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
                redis_runs.push(bench(redis_port, "set,get", 50, pipeline, requests));
                pion_runs.push(bench(pion_port, "set,get", 50, pipeline, requests));
            } else {
                pion_runs.push(bench(pion_port, "set,get", 50, pipeline, requests));
                redis_runs.push(bench(redis_port, "set,get", 50, pipeline, requests));
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
