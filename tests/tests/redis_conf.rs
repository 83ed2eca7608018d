//! pion-server started the way tools start redis-server: from a redis.conf that also
//! sets directives for machinery Pion does not have, logging to a file with the banner
//! they wait for (`PID: `), listening on a Unix socket too, snapshotting on a `save`
//! schedule, and answering DEBUG to local clients.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::time::{Duration, Instant};

use pion_tests::process::server_bin;
use pion_tests::{temp_dir, Client, PionProcess};

fn text(c: &mut Client, args: &[&str]) -> String {
    c.cmd(args).render()
}

/// `INFO persistence`'s field `name`.
fn info_field(c: &mut Client, name: &str) -> String {
    // The rendered bulk string shows its line breaks escaped.
    let info = text(c, &["INFO", "persistence"]).replace("\\r\\n", "\n");
    info.split(['\r', '\n', '"'])
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .unwrap_or_default()
        .to_string()
}

#[test]
fn redis_conf_with_log_file_unix_socket_save_schedule_and_debug() {
    let data = temp_dir("conf-data");
    let conf_dir = temp_dir("conf");
    let socket = conf_dir.path().join("pion.sock");
    let log = conf_dir.path().join("server.log");
    let conf = conf_dir.path().join("redis.conf");
    std::fs::write(
        &conf,
        format!(
            "# what a test harness writes for redis-server\n\
             always-show-logo yes\n\
             notify-keyspace-events KEA\n\
             daemonize no\n\
             loglevel verbose\n\
             logfile {log}\n\
             databases 16\n\
             save 1 1\n\
             rdbcompression yes\n\
             dbfilename dump.rdb\n\
             slave-serve-stale-data yes\n\
             repl-diskless-sync-delay 0\n\
             activerehashing yes\n\
             enable-protected-configs yes\n\
             enable-debug-command local\n\
             enable-module-command yes\n\
             propagation-error-behavior panic\n\
             unixsocket {socket}\n\
             unixsocketperm 700\n",
            log = log.display(),
            socket = socket.display()
        ),
    )
    .expect("write conf");
    let server = PionProcess::try_start_with_config(&conf, data.path(), &[]).expect("start");
    let logged = std::fs::read_to_string(&log).expect("log file");
    assert!(
        logged.contains(&format!("PID: {}", server.pid())),
        "{logged}"
    );
    assert!(
        logged.contains("Ready to accept connections tcp"),
        "{logged}"
    );
    assert!(
        logged.contains("Ready to accept connections unix"),
        "{logged}"
    );
    // loglevel verbose: each directive kept for compatibility says it changes nothing.
    assert!(
        logged.contains("'activerehashing' is kept for compatibility and changes nothing"),
        "{logged}"
    );
    // Redis's line format: pid:role day month year time level message.
    assert!(
        logged
            .lines()
            .any(|l| l.starts_with(&format!("{}:M ", server.pid())) && l.contains(" * ")),
        "{logged}"
    );

    let mut c = server.client();
    assert_eq!(
        text(&mut c, &["CONFIG", "GET", "rdbcompression"]),
        "*[\"rdbcompression\", \"yes\"]"
    );
    assert_eq!(
        text(&mut c, &["CONFIG", "GET", "unixsocket"]),
        format!("*[\"unixsocket\", \"{}\"]", socket.display())
    );
    assert_eq!(
        text(&mut c, &["CONFIG", "GET", "save"]),
        "*[\"save\", \"1 1\"]"
    );

    // The Unix socket serves the same keyspace, and names its clients `path:0`.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&socket)
        .expect("socket")
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o700);
    let mut unix = UnixStream::connect(&socket).expect("connect to the Unix socket");
    unix.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    unix.write_all(b"*3\r\n$3\r\nSET\r\n$4\r\nviaU\r\n$1\r\n1\r\nCLIENT INFO\r\n")
        .expect("send");
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !got.ends_with(b"\r\n") || !String::from_utf8_lossy(&got).contains("addr=") {
        let n = unix.read(&mut buf).expect("read");
        assert!(n > 0, "closed: {}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&buf[..n]);
    }
    let reply = String::from_utf8_lossy(&got);
    assert!(reply.starts_with("+OK\r\n"), "{reply}");
    assert!(
        reply.contains(&format!("addr={}:0", socket.display())),
        "{reply}"
    );
    assert_eq!(text(&mut c, &["GET", "viaU"]), "\"1\"");

    // `save 1 1`: a write older than a second is snapshotted without SAVE.
    let deadline = Instant::now() + Duration::from_secs(10);
    while info_field(&mut c, "rdb_changes_since_last_save") != "0" {
        assert!(
            Instant::now() < deadline,
            "no scheduled snapshot: {}",
            text(&mut c, &["INFO", "persistence"])
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let snapshots: u64 = info_field(&mut c, "snapshot_count")
        .parse()
        .expect("INFO persistence has snapshot_count");
    assert!(snapshots >= 1, "{snapshots} snapshots");

    // DEBUG, allowed for local clients.
    assert!(text(&mut c, &["DEBUG", "OBJECT", "viaU"]).contains("encoding:int"));
    assert_eq!(
        text(&mut c, &["DEBUG", "OBJECT", "nosuch"]),
        "-ERR no such key"
    );
    assert_eq!(text(&mut c, &["SADD", "s1", "a", "b", "c"]), ":3");
    assert_eq!(text(&mut c, &["SADD", "s2", "c", "b", "a"]), ":3");
    let digests = text(&mut c, &["DEBUG", "DIGEST-VALUE", "s1", "s2", "nosuch"]);
    let parts: Vec<&str> = digests
        .trim_start_matches("*[")
        .trim_end_matches(']')
        .split(", ")
        .collect();
    assert_eq!(parts.len(), 3, "{digests}");
    assert_eq!(parts[0], parts[1], "equal sets, equal digests");
    assert_eq!(parts[2], format!("+{}", "0".repeat(40)));
    let full = text(&mut c, &["DEBUG", "DIGEST"]);
    assert_ne!(full, format!("+{}", "0".repeat(40)));
    assert_eq!(text(&mut c, &["DEL", "s2"]), ":1");
    assert_ne!(text(&mut c, &["DEBUG", "DIGEST"]), full);
    assert_eq!(text(&mut c, &["FLUSHALL"]), "+OK");
    assert_eq!(
        text(&mut c, &["DEBUG", "DIGEST"]),
        format!("+{}", "0".repeat(40))
    );
    // SLEEP stops every client, as on Redis's single thread.
    let started = Instant::now();
    assert_eq!(text(&mut c, &["DEBUG", "SLEEP", "0.2"]), "+OK");
    assert!(started.elapsed() >= Duration::from_millis(200));
    assert!(text(&mut c, &["DEBUG", "NOSUCH"]).starts_with("-ERR unknown subcommand"));
}

#[test]
fn start_up_refusals_name_their_cause() {
    let data = temp_dir("refusal-data");
    let busy = PionProcess::start(data.path(), &["--wal", "off"]);
    let other = temp_dir("refusal-other");
    let out = std::process::Command::new(server_bin())
        .args([
            "--port",
            &busy.port().to_string(),
            "--kvcache",
            "off",
            "--wal",
            "off",
        ])
        .arg("--dir")
        .arg(other.path())
        .output()
        .expect("run");
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains(&format!("Failed listening on port {}", busy.port())),
        "{said}"
    );
    let out = std::process::Command::new(server_bin())
        .args(["--user", "foo", "--user", "foo"])
        .output()
        .expect("run");
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("Duplicate user"), "{said}");
}
