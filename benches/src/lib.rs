//! Benchmarks for Pion: criterion micro-benchmarks (`cargo bench -p pion-benches`) and
//! comparison harnesses that run Pion and its anchor side by side
//! (`cargo run --release -p pion-benches --bin redis_compare`). Method and figures are
//! in doc/benchmarks.md and doc/search-benchmarks.md.

pub mod drive;
pub mod knn;
pub mod resp;

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// Deterministic pseudo-random values in [-1, 1) (xorshift), for benchmark inputs.
pub fn values(seed: u64, n: usize) -> Vec<f32> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 40) as f32 / (1u64 << 23) as f32 - 1.0
        })
        .collect()
}

/// A free TCP port on 127.0.0.1 (bound and released).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or(0)
}

/// Waits until something listens on `port` (10 s at most, then panics: the server
/// did not start).
pub fn wait_port(port: u16) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::time::Instant::now() < deadline {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    panic!("server on port {port} did not start");
}

/// A server process started by a harness, killed (and reaped) when dropped.
pub struct Proc(pub Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The `pion-server` built beside the running harness (same profile); panics with
/// what to build when it is missing.
pub fn pion_server_beside_exe() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.parent().map(|d| d.join("pion-server")))
        .filter(|p| p.exists())
        .expect("build pion-server in the same profile first")
}

/// `redis-server` on `port`, in memory only (no snapshots, no AOF), its log silenced.
pub fn redis_in_memory(port: u16) -> Proc {
    Proc(
        Command::new("redis-server")
            .args([
                "--port",
                &port.to_string(),
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .stdout(Stdio::null())
            .spawn()
            .expect("redis-server must be installed"),
    )
}

/// `pion-server` (`bin`) on `port` with one worker thread, in memory only (no log,
/// no prompt-cache files) with `dir` as its data directory, its log silenced.
pub fn pion_in_memory(bin: &Path, port: u16, dir: &Path) -> Proc {
    Proc(
        Command::new(bin)
            .args([
                "--port",
                &port.to_string(),
                "--threads",
                "1",
                "--wal",
                "off",
            ])
            .args(["--kvcache", "off", "--dir"])
            .arg(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start pion-server"),
    )
}

/// The CPU model and the SIMD levels the kernels can use on it, for the header of
/// every comparison table (figures from different CPUs do not compare).
pub fn cpu_summary() -> String {
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines().find_map(|l| {
                l.strip_prefix("model name")?
                    .split(':')
                    .nth(1)
                    .map(|s| s.trim().to_string())
            })
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_string());
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    format!("{model}, {threads} hardware threads, SIMD {}", simd_level())
}

/// The widest SIMD the x86_64 kernels can pick here (AVX-512 with VNNI for INT8 dot
/// products, else AVX2 + FMA, else SSE); NEON on aarch64.
fn simd_level() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512vnni")
            && std::arch::is_x86_feature_detected!("avx512bw")
        {
            "AVX-512 (BW, VNNI) + AVX2 + FMA"
        } else if std::arch::is_x86_feature_detected!("avx512f") {
            "AVX-512 (no VNNI) + AVX2 + FMA"
        } else if std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("fma")
        {
            "AVX2 + FMA (no AVX-512)"
        } else {
            "SSE only"
        }
    }
    #[cfg(target_arch = "aarch64")]
    {
        "NEON"
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        "portable"
    }
}
