//! Recovery and snapshot figures at a million keys, Pion beside Redis: how long a
//! background snapshot stops the server (Pion's cut), and how long a restart after
//! SIGKILL takes to serve again from snapshot plus log tail (Redis: an AOF with an RDB
//! preamble plus its tail).
//!
//! ```text
//! cargo build --release -p pion-server -p pion-benches
//! target/release/recovery_compare [--keys 1000000] [--tail 200000]
//! ```

use pion_benches::{free_port, Proc};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Sends one command and returns its reply line (bulk replies: the payload line).
fn call(port: u16, args: &[&str]) -> String {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return String::new();
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(60)));
    let mut req = format!("*{}\r\n", args.len());
    for a in args {
        req.push_str(&format!("${}\r\n{a}\r\n", a.len()));
    }
    if s.write_all(req.as_bytes()).is_err() {
        return String::new();
    }
    let mut r = BufReader::new(s);
    let mut line = String::new();
    let _ = r.read_line(&mut line);
    if let Some(n) = line
        .strip_prefix('$')
        .and_then(|n| n.trim().parse::<usize>().ok())
    {
        let mut body = vec![0u8; n + 2];
        let _ = r.read_exact(&mut body);
        return String::from_utf8_lossy(&body[..n]).into_owned();
    }
    line.trim_end().to_string()
}

/// Waits until the server answers PING with PONG (not -LOADING); returns how long.
fn wait_serving(port: u16, since: Instant) -> Duration {
    loop {
        if call(port, &["PING"]) == "+PONG" {
            return since.elapsed();
        }
        assert!(
            since.elapsed() < Duration::from_secs(600),
            "server never came up"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Writes `count` keys `key:{first..}` with 32-byte values, pipelined.
fn load(port: u16, first: u64, count: u64) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    let mut r = BufReader::new(s.try_clone().expect("clone"));
    let value = "v".repeat(32);
    let batch = 1000;
    let mut i = first;
    let end = first + count;
    let mut line = String::new();
    while i < end {
        let n = batch.min(end - i);
        let mut req = String::with_capacity(n as usize * 64);
        for k in i..i + n {
            let key = format!("key:{k}");
            req.push_str(&format!(
                "*3\r\n$3\r\nSET\r\n${}\r\n{key}\r\n${}\r\n{value}\r\n",
                key.len(),
                value.len()
            ));
        }
        s.write_all(req.as_bytes()).expect("write");
        for _ in 0..n {
            line.clear();
            r.read_line(&mut line).expect("reply");
            assert!(line.starts_with("+OK"), "unexpected reply {line}");
        }
        i += n;
    }
}

fn info_field(port: u16, field: &str) -> String {
    let info = call(port, &["INFO", "persistence"]);
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")))
        .unwrap_or("")
        .trim()
        .to_string()
}

fn pion(bin: &Path, dir: &Path, port: u16) -> Proc {
    Proc(
        Command::new(bin)
            .args([
                "--port",
                &port.to_string(),
                "--snapshot-wal-size",
                "0",
                "--dir",
            ])
            .arg(dir)
            .stderr(Stdio::null())
            .spawn()
            .expect("start pion-server"),
    )
}

fn redis(dir: &Path, port: u16) -> Proc {
    Proc(
        Command::new("redis-server")
            .args([
                "--port",
                &port.to_string(),
                "--save",
                "",
                "--appendonly",
                "yes",
                "--appendfsync",
                "everysec",
                "--auto-aof-rewrite-percentage",
                "0",
                "--dir",
            ])
            .arg(dir)
            .stdout(Stdio::null())
            .spawn()
            .expect("redis-server must be installed"),
    )
}

fn wait_until(port: u16, field: &str, value: &str) {
    let start = Instant::now();
    while info_field(port, field) != value {
        assert!(
            start.elapsed() < Duration::from_secs(600),
            "{field} never {value}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn fresh(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("pion-recovery-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
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
    let keys = arg("--keys", 1_000_000);
    let tail = arg("--tail", 200_000);
    let bin = pion_benches::pion_server_beside_exe();
    println!("{keys} keys of 32-byte values, snapshot (Redis: AOF rewrite) then {tail} more, SIGKILL, restart");

    // Pion: snapshot + log tail.
    let dir = fresh("pion");
    let port = free_port();
    let mut p = pion(&bin, &dir, port);
    wait_serving(port, Instant::now());
    load(port, 0, keys);
    assert_eq!(call(port, &["BGSAVE"]), "+Background saving started");
    wait_until(port, "rdb_bgsave_in_progress", "0");
    let pause_us = info_field(port, "snapshot_last_pause_us");
    let snap_ms = info_field(port, "snapshot_last_duration_ms");
    let snap_bytes = info_field(port, "snapshot_last_bytes");
    load(port, keys, tail);
    let _ = p.0.kill();
    let _ = p.0.wait();
    let start = Instant::now();
    let _p = pion(&bin, &dir, port);
    let pion_restart = wait_serving(port, start);
    let pion_keys = call(port, &["DBSIZE"]);
    drop(_p);

    // Pion: the log alone (no snapshot).
    let dir2 = fresh("pion-log");
    let port2 = free_port();
    let mut p = pion(&bin, &dir2, port2);
    wait_serving(port2, Instant::now());
    load(port2, 0, keys);
    let _ = p.0.kill();
    let _ = p.0.wait();
    let start = Instant::now();
    let _p = pion(&bin, &dir2, port2);
    let pion_log_restart = wait_serving(port2, start);
    drop(_p);

    // Redis: AOF rewrite (RDB preamble) + AOF tail.
    let rdir = fresh("redis");
    let rport = free_port();
    let mut r = redis(&rdir, rport);
    wait_serving(rport, Instant::now());
    load(rport, 0, keys);
    let started = Instant::now();
    call(rport, &["BGREWRITEAOF"]);
    wait_until(rport, "aof_rewrite_in_progress", "0");
    let redis_rewrite = started.elapsed();
    let fork_us = call(rport, &["INFO", "stats"])
        .lines()
        .find_map(|l| l.strip_prefix("latest_fork_usec:"))
        .unwrap_or("")
        .trim()
        .to_string();
    load(rport, keys, tail);
    let _ = r.0.kill();
    let _ = r.0.wait();
    let start = Instant::now();
    let _r = redis(&rdir, rport);
    let redis_restart = wait_serving(rport, start);
    let redis_keys = call(rport, &["DBSIZE"]);

    println!("snapshot: pion cut pause {pause_us} us, written in {snap_ms} ms ({snap_bytes} bytes); redis fork {fork_us} us, AOF rewrite {} ms", redis_rewrite.as_millis());
    println!(
        "restart to serving, snapshot + tail: pion {} ms ({pion_keys} keys), redis {} ms ({redis_keys} keys), ratio {:.2}",
        pion_restart.as_millis(),
        redis_restart.as_millis(),
        redis_restart.as_secs_f64() / pion_restart.as_secs_f64()
    );
    println!(
        "restart to serving, {keys} keys from the log alone: pion {} ms",
        pion_log_restart.as_millis()
    );
    for d in [dir, dir2, rdir] {
        let _ = std::fs::remove_dir_all(d);
    }
}
