//! Benchmarks for Pion: criterion micro-benchmarks (`cargo bench -p pion-benches`) and
//! comparison harnesses that run Pion and its anchor side by side
//! (`cargo run --release -p pion-benches --bin redis_compare`). Method and figures are
//! in doc/benchmarks.md and doc/search-benchmarks.md.

pub mod drive;
pub mod knn;
pub mod resp;

use std::net::TcpListener;
use std::process::Child;

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
