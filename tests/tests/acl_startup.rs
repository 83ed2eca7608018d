//! Users and configuration across real server processes: the ACL file survives a
//! SIGKILL and restart, `ACL LOAD` is all or nothing, configuration-file errors stop
//! start-up naming file and line, `CONFIG REWRITE` round-trips, a deleted user's
//! connections close, protected mode refuses outside clients, and start-up prints the
//! line tools wait for.

use std::io::{Read, Write};
use std::net::{IpAddr, TcpStream, UdpSocket};
use std::process::Command;
use std::time::Duration;

use pion_tests::process::server_bin;
use pion_tests::{temp_dir, Client, PionProcess};

fn text(c: &mut Client, args: &[&str]) -> String {
    c.cmd(args).render()
}

#[test]
fn aclfile_survives_restart_and_load_is_all_or_nothing() {
    let data = temp_dir("acl-data");
    let conf = temp_dir("acl-conf");
    let aclfile = conf.path().join("users.acl");
    std::fs::write(
        &aclfile,
        "# users\nuser default on nopass ~* &* +@all\nuser alice on >pw ~a* +@string\n",
    )
    .expect("write aclfile");
    let acl = aclfile.to_str().expect("utf-8 path");
    let mut server = PionProcess::start(data.path(), &["--aclfile", acl, "--wal", "off"]);
    let mut c = server.client();
    assert_eq!(text(&mut c, &["AUTH", "alice", "pw"]), "+OK");
    assert_eq!(text(&mut c, &["SET", "a1", "v"]), "+OK");
    assert!(text(&mut c, &["SET", "b1", "v"]).starts_with("-NOPERM"));
    let mut admin = server.client();
    assert_eq!(
        text(
            &mut admin,
            &["ACL", "SETUSER", "bob", "on", ">bpw", "+ping"]
        ),
        "+OK"
    );
    assert_eq!(text(&mut admin, &["ACL", "SAVE"]), "+OK");
    let saved = std::fs::read_to_string(&aclfile).expect("read saved");
    assert!(saved.contains("user bob on #"), "{saved}");
    let before = text(&mut admin, &["ACL", "LIST"]);
    server.kill9();

    let server = PionProcess::start(data.path(), &["--aclfile", acl, "--wal", "off"]);
    let mut c = server.client();
    assert_eq!(text(&mut c, &["ACL", "LIST"]), before);
    assert_eq!(text(&mut c, &["AUTH", "bob", "bpw"]), "+OK");
    assert_eq!(text(&mut c, &["PING"]), "+PONG");

    // A broken file changes nothing, and the error names the file and line.
    std::fs::write(&aclfile, "user carol on +get\nuser dave on +nosuch\n").expect("write");
    let mut admin = server.client();
    let err = text(&mut admin, &["ACL", "LOAD"]);
    assert!(
        err.contains(&format!("{acl}:2:")) && err.contains("+nosuch"),
        "{err}"
    );
    assert_eq!(text(&mut admin, &["ACL", "LIST"]), before);
    // A good one replaces every user, and closes the connections of replaced users.
    std::fs::write(&aclfile, "user carol on nopass +@all ~*\n").expect("write");
    assert_eq!(text(&mut admin, &["ACL", "LOAD"]), "+OK");
    assert_eq!(
        text(&mut admin, &["ACL", "USERS"]),
        "*[\"carol\", \"default\"]"
    );
    c.set_read_timeout(Duration::from_secs(5)).expect("timeout");
    assert!(c.call(&["PING"]).is_err(), "bob's connection is closed");
}

#[test]
fn a_bad_aclfile_stops_start_up() {
    let data = temp_dir("acl-bad");
    let aclfile = data.path().join("bad.acl");
    std::fs::write(&aclfile, "user ok on\nuser broken on %X~a\n").expect("write");
    let acl = aclfile.to_str().expect("utf-8 path");
    let err = PionProcess::try_start(data.path(), &["--aclfile", acl]).err();
    let err = err.expect("start-up must fail");
    assert!(err.contains(&format!("{acl}:2:")), "{err}");
}

#[test]
fn deleting_a_user_closes_its_connections() {
    let data = temp_dir("acl-del");
    let server = PionProcess::start(data.path(), &["--wal", "off"]);
    let mut admin = server.client();
    assert_eq!(
        text(
            &mut admin,
            &["ACL", "SETUSER", "eve", "on", ">x", "+@all", "~*"]
        ),
        "+OK"
    );
    let mut eve = server.client();
    assert_eq!(text(&mut eve, &["AUTH", "eve", "x"]), "+OK");
    assert_eq!(text(&mut eve, &["ACL", "WHOAMI"]), "\"eve\"");
    let list = text(&mut admin, &["CLIENT", "LIST"]);
    assert!(list.contains("user=eve"), "{list}");
    assert_eq!(text(&mut admin, &["ACL", "DELUSER", "eve"]), ":1");
    eve.set_read_timeout(Duration::from_secs(5))
        .expect("timeout");
    assert!(eve.call(&["PING"]).is_err(), "the connection is closed");
    assert_eq!(text(&mut admin, &["PING"]), "+PONG");
}

fn run_to_exit(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(server_bin())
        .args(args)
        .output()
        .expect("run pion-server");
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn config_file_errors_name_file_and_line() {
    let dir = temp_dir("conf-err");
    let conf = dir.path().join("pion.conf");
    std::fs::write(&conf, "# comment\nport 7000\nno-such-directive yes\n").expect("write");
    let path = conf.to_str().expect("utf-8 path");
    let (code, err) = run_to_exit(&[path]);
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains(path) && err.contains("line 3") && err.contains("no-such-directive"),
        "{err}"
    );
    std::fs::write(&conf, "maxmemory lots\n").expect("write");
    let (code, err) = run_to_exit(&[path]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("line 1") && err.contains("maxmemory"), "{err}");
    std::fs::write(&conf, "requirepass \"unterminated\n").expect("write");
    let (code, err) = run_to_exit(&[path]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("line 1"), "{err}");
    let (code, err) = run_to_exit(&["--no-such-flag", "1"]);
    assert_eq!(code, Some(1), "{err}");
    let (code, err) = run_to_exit(&[dir.path().join("missing.conf").to_str().expect("utf-8")]);
    assert_eq!(code, Some(1), "{err}");
    assert!(err.contains("missing.conf"), "{err}");
}

#[test]
fn config_rewrite_round_trip() {
    let data = temp_dir("rewrite-data");
    let dir = temp_dir("rewrite-conf");
    let conf = dir.path().join("pion.conf");
    let included = dir.path().join("extra.conf");
    std::fs::write(&included, "hz 15\n").expect("write");
    std::fs::write(
        &conf,
        "# Operators' notes stay.\nmaxmemory 1mb\ndaemonize no\nsave \"\"\nappendonly no\ninclude extra.conf\nloglevel notice\n",
    )
    .expect("write");
    let mut server = PionProcess::try_start_with_config(&conf, data.path(), &["--timeout", "300"])
        .expect("start with a config file");
    let log = server.stderr_text();
    assert!(log.contains("Ready to accept connections tcp"), "{log}");
    assert!(log.contains(&format!("pid={}", server.pid())), "{log}");
    let mut c = server.client();
    assert_eq!(text(&mut c, &["CONFIG", "GET", "hz"]), "*[\"hz\", \"15\"]");
    assert_eq!(
        text(&mut c, &["CONFIG", "GET", "timeout"]),
        "*[\"timeout\", \"300\"]"
    );
    assert_eq!(text(&mut c, &["CONFIG", "SET", "maxmemory", "10mb"]), "+OK");
    assert_eq!(
        text(
            &mut c,
            &["ACL", "SETUSER", "ops", "on", ">secret", "+@all", "~*"]
        ),
        "+OK"
    );
    assert_eq!(text(&mut c, &["CONFIG", "REWRITE"]), "+OK");
    let written = std::fs::read_to_string(&conf).expect("read");
    let lines: Vec<&str> = written.lines().collect();
    assert_eq!(lines[0], "# Operators' notes stay.");
    assert_eq!(lines[1], "maxmemory 10485760");
    assert_eq!(lines[2], "daemonize no");
    assert!(written.contains("include extra.conf"), "{written}");
    assert!(written.contains("\ntimeout 300\n"), "{written}");
    assert!(written.contains("\nuser ops on #"), "{written}");
    server.kill9();

    let server = PionProcess::try_start_with_config(&conf, data.path(), &[]).expect("restart");
    let mut c = server.client();
    assert_eq!(
        text(&mut c, &["CONFIG", "GET", "maxmemory"]),
        "*[\"maxmemory\", \"10485760\"]"
    );
    assert_eq!(
        text(&mut c, &["CONFIG", "GET", "timeout"]),
        "*[\"timeout\", \"300\"]"
    );
    assert_eq!(text(&mut c, &["AUTH", "ops", "secret"]), "+OK");
}

/// A local address that is not loopback, if the machine has one.
fn outside_address() -> Option<IpAddr> {
    let s = UdpSocket::bind("0.0.0.0:0").ok()?;
    s.connect("10.255.255.255:9").ok()?;
    let ip = s.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

#[test]
fn protected_mode_refuses_outside_clients() {
    let data = temp_dir("protected");
    let server = PionProcess::start(data.path(), &["--bind", "0.0.0.0", "--wal", "off"]);
    // Loopback clients are always served.
    assert_eq!(text(&mut server.client(), &["PING"]), "+PONG");
    let Some(ip) = outside_address() else {
        eprintln!("no non-loopback address here: the decision is unit-tested in pion-core");
        return;
    };
    let mut s = TcpStream::connect((ip, server.port())).expect("connect from outside");
    s.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    let _ = s.write_all(b"PING\r\n");
    let mut reply = String::new();
    let _ = s.read_to_string(&mut reply);
    assert!(
        reply.starts_with("-DENIED Redis is running in protected mode"),
        "{reply}"
    );
    // With protected mode off the same client is served.
    assert_eq!(
        text(
            &mut server.client(),
            &["CONFIG", "SET", "protected-mode", "no"]
        ),
        "+OK"
    );
    let mut s = TcpStream::connect((ip, server.port())).expect("connect from outside");
    s.set_read_timeout(Some(Duration::from_secs(5)))
        .expect("timeout");
    s.write_all(b"PING\r\n").expect("send");
    let mut buf = [0u8; 7];
    s.read_exact(&mut buf).expect("reply");
    assert_eq!(&buf, b"+PONG\r\n");
}
