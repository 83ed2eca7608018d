//! Servers on free ports: the real `redis-server` used as the oracle, and Pion (in this
//! process on a background thread, or as a `pion-server` child process).

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use pion_core::durability::DurabilityOptions;
use pion_core::{Engine, EngineOptions};
use pion_server::{Server, StopHandle};

use crate::resp::{Client, RespValue};

/// A fresh, empty directory under the system's temporary directory.
pub fn unique_dir(prefix: &str) -> std::path::PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!(
        "{prefix}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("create a temporary directory");
    dir
}

/// A free TCP port on 127.0.0.1 (bound and released; good enough for tests).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or(0)
}

/// Whether the server on `port` is the process `pid` (its `INFO server` says so).
fn serves_pid(port: u16, pid: u32) -> bool {
    let Ok(mut c) = Client::connect(port) else {
        return false;
    };
    let Ok((reply, _)) = c.call(&["INFO", "server"]) else {
        return false;
    };
    let text = match reply {
        RespValue::Bulk(_, Some(b)) => String::from_utf8_lossy(&b).into_owned(),
        // A server with a password (NOAUTH) cannot be asked: take it as ours.
        reply if reply.is_error() => return true,
        _ => return false,
    };
    text.lines()
        .any(|l| l.trim() == format!("process_id:{pid}"))
}

fn wait_ready(port: u16) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if let Ok(mut c) = Client::connect(port) {
            // Any reply means the server is up (NOAUTH when a password is set).
            if c.call(&["PING"]).is_ok() {
                return true;
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// A real redis-server child process (the oracle). Killed on drop.
pub struct RedisServer {
    /// Its port.
    pub port: u16,
    child: Child,
    /// Its working directory (where `SAVE` writes; removed on drop).
    dir: std::path::PathBuf,
}

impl RedisServer {
    /// Starts `redis-server` (or `$PION_REDIS_SERVER`) with persistence off.
    pub fn start() -> RedisServer {
        RedisServer::start_with(&[])
    }

    /// Starts `redis-server` with extra configuration arguments (`--requirepass x`).
    pub fn start_with(extra: &[&str]) -> RedisServer {
        let bin = std::env::var("PION_REDIS_SERVER").unwrap_or_else(|_| "redis-server".into());
        RedisServer::spawn(&bin, extra)
    }

    /// Starts the search oracle: Redis 8 (vector sets built in) with the RediSearch and
    /// RedisJSON modules, assembled by `scripts/search-oracle.sh` into
    /// `$PION_SEARCH_ORACLE` (default: `.venv/search-oracle` in the workspace).
    pub fn start_search_oracle() -> RedisServer {
        let dir = std::env::var_os("PION_SEARCH_ORACLE")
            .map(std::path::PathBuf::from)
            .unwrap_or_else(|| {
                std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../.venv/search-oracle")
            });
        let bin = dir.join("redis-server");
        assert!(
            bin.exists(),
            "the search oracle is missing at {}: run scripts/search-oracle.sh {} (scripts/test.sh does)",
            dir.display(),
            dir.display()
        );
        let search = dir.join("redisearch.so");
        let json = dir.join("rejson.so");
        let (search, json) = (search.to_string_lossy(), json.to_string_lossy());
        RedisServer::spawn(
            &bin.to_string_lossy(),
            &["--loadmodule", &search, "--loadmodule", &json],
        )
    }

    fn spawn(bin: &str, extra: &[&str]) -> RedisServer {
        for _ in 0..5 {
            let port = free_port();
            let dir = unique_dir("pion-test-redis");
            let child = Command::new(bin)
                .args([
                    "--port",
                    &port.to_string(),
                    "--save",
                    "",
                    "--appendonly",
                    "no",
                    "--bind",
                    "127.0.0.1",
                    "--dir",
                ])
                .arg(&dir)
                .args(extra)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap_or_else(|e| {
                    panic!(
                        "cannot start {bin} (install redis-server, the differential oracle): {e}"
                    )
                });
            let mut server = RedisServer { port, child, dir };
            // A port handed out twice (free_port releases it before the server binds)
            // leaves this process unbound while another server answers: the reply
            // must come from the process started here.
            if wait_ready(port) && serves_pid(port, server.child.id()) {
                return server;
            }
            let _ = server.child.kill();
            let _ = server.child.wait();
        }
        panic!("redis-server did not become ready");
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Pion serving on a free port from a background thread of this process.
pub struct PionServer {
    /// Its port.
    pub port: u16,
    /// Its binary lane's port.
    pub lane_port: u16,
    /// The engine behind it.
    pub engine: Engine,
    /// Failures to inject into its disk (it stores through a fault-injecting layer
    /// over the local file system).
    pub faults: std::sync::Arc<pion_core::storage::FaultPlan>,
    /// Its data directory (removed when the server is dropped).
    pub dir: std::path::PathBuf,
    stop: StopHandle,
    thread: Option<JoinHandle<()>>,
}

impl PionServer {
    /// Starts Pion with `threads` worker threads and default options.
    pub fn start(threads: usize) -> PionServer {
        let mut options = EngineOptions::default();
        options.config.threads = threads;
        PionServer::start_with(threads, options)
    }

    /// Starts Pion with these engine options, durable (write-ahead log on, the
    /// default `everysec`) in a fresh data directory, so every test also runs every
    /// write through the log.
    pub fn start_with(threads: usize, options: EngineOptions) -> PionServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a test port");
        let port = listener.local_addr().expect("local addr").port();
        let lane = TcpListener::bind("127.0.0.1:0").expect("bind a test lane port");
        let lane_port = lane.local_addr().expect("local addr").port();
        let mut options = options;
        options.config.port = port;
        let dir = unique_dir("pion-test-server");
        let (storage, faults) = pion_core::storage::Faulty::wrap(pion_core::storage::local());
        let mut durability = DurabilityOptions::new(&dir);
        durability.storage = storage;
        let engine = Engine::open_with(options, durability).expect("open a fresh data directory");
        let server = Server::new(engine.clone(), listener, threads).with_lane_listeners(vec![lane]);
        let stop = server.stop_handle();
        let thread = std::thread::spawn(move || {
            if let Err(e) = server.run() {
                eprintln!("pion test server failed: {e}");
            }
        });
        assert!(wait_ready(port), "pion did not become ready");
        PionServer {
            port,
            lane_port,
            engine,
            faults,
            dir,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for PionServer {
    fn drop(&mut self) {
        self.stop.stop();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
