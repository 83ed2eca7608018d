//! A script past `busy-reply-threshold`, against a real redis-server: the same steps
//! on both, transcripts compared. Other clients (old connections and new ones) are
//! answered `-BUSY`, a transaction that meets the busy script is doomed, `SCRIPT KILL`
//! stops a script that has not written (`pcall` cannot swallow the kill) and is
//! refused for one that has, a client blocked on a key the script pushes to is served
//! only once the script ends, and `SHUTDOWN NOSAVE` stops even a script that wrote.
//! Pion runs at one worker thread (the default: the busy script holds the only
//! thread, and the others are served from inside it) and at four.

use std::time::Duration;

use pion_tests::{temp_dir, Client, PionProcess, RedisServer, RespValue};

/// The busy threshold the scenarios set, and how long they wait for it to pass.
const THRESHOLD_MS: &str = "100";
const PAST_THRESHOLD: Duration = Duration::from_millis(400);

fn connect(port: u16) -> Client {
    let c = Client::connect(port).expect("connect");
    c.set_read_timeout(Duration::from_secs(20))
        .expect("read timeout");
    c
}

/// A reply as the transcript records it.
fn show(v: &RespValue) -> String {
    v.render()
}

/// Sets the short busy threshold the scenarios use; its reply for the transcript.
fn lower_threshold(admin: &mut Client) -> String {
    show(&admin.cmd(&["CONFIG", "SET", "busy-reply-threshold", THRESHOLD_MS]))
}

/// Sends a command without waiting for its reply.
fn send(c: &mut Client, args: &[&str]) {
    c.send_raw(&Client::encode(args)).expect("send");
}

fn read(c: &mut Client) -> String {
    match c.read_reply() {
        Ok((v, _)) => show(&v),
        Err(e) => format!("io error: {:?}", e.kind()),
    }
}

/// A read-only runaway script: old and new connections are refused, a transaction
/// started before it is doomed, `SCRIPT KILL` ends it and everyone goes on.
fn killable_scenario(port: u16) -> Vec<String> {
    let mut log = Vec::new();
    let mut admin = connect(port);
    let mut r2 = connect(port);
    let mut runner = connect(port);
    log.push(lower_threshold(&mut admin));
    log.push(show(&admin.cmd(&["SET", "xx", "1"])));
    log.push(show(&r2.cmd(&["MULTI"])));
    log.push(show(&r2.cmd(&["INCR", "xx"])));
    send(&mut runner, &["EVAL", "while true do end", "0"]);
    std::thread::sleep(PAST_THRESHOLD);
    log.push(show(&admin.cmd(&["PING"])));
    log.push(show(&r2.cmd(&["INCR", "xx"])));
    let mut late = connect(port);
    log.push(show(&late.cmd(&["PING"])));
    log.push(show(&late.cmd(&["EVAL", "return 1", "0"])));
    log.push(show(&late.cmd(&["GET", "xx"])));
    log.push(show(&late.cmd(&["SHUTDOWN"])));
    log.push(show(&late.cmd(&["FUNCTION", "KILL"])));
    log.push(show(&r2.cmd(&["EXEC"])));
    log.push(show(&late.cmd(&["SCRIPT", "KILL"])));
    log.push(read(&mut runner));
    log.push(show(&late.cmd(&["PING"])));
    // The transaction was discarded: the connection is out of MULTI.
    log.push(show(&r2.cmd(&["PING", "after"])));
    log.push(show(&admin.cmd(&["GET", "xx"])));
    log.push(show(&runner.cmd(&["EVAL", "return 'again'", "0"])));
    log.push(show(&admin.cmd(&["SCRIPT", "KILL"])));
    log
}

/// A runaway script that catches errors with `pcall` around its loop: the kill must
/// not be swallowed.
fn pcall_scenario(port: u16) -> Vec<String> {
    let mut log = Vec::new();
    let mut admin = connect(port);
    let mut runner = connect(port);
    log.push(lower_threshold(&mut admin));
    let script = "local f = function() while 1 do redis.call('ping') end end \
                  while 1 do pcall(f) end";
    send(&mut runner, &["EVAL", script, "0"]);
    std::thread::sleep(PAST_THRESHOLD);
    log.push(show(&admin.cmd(&["PING"])));
    log.push(show(&admin.cmd(&["SCRIPT", "KILL"])));
    log.push(read(&mut runner));
    log.push(show(&admin.cmd(&["PING"])));
    log
}

/// A script that pushes to a list a client is blocked on, then runs past the
/// threshold, then pushes again: `SCRIPT KILL` is refused (it wrote), and the
/// blocked client is served after the script, seeing its last push. The script runs
/// for three seconds so that the four commands sent meanwhile still meet it on a
/// loaded machine.
fn unkillable_scenario(port: u16) -> Vec<String> {
    let mut log = Vec::new();
    let mut admin = connect(port);
    let mut blocked = connect(port);
    let mut runner = connect(port);
    log.push(lower_threshold(&mut admin));
    send(&mut blocked, &["BLPOP", "q", "0"]);
    std::thread::sleep(Duration::from_millis(100));
    let script = "redis.call('lpush', KEYS[1], 'first') \
                  local t0 = redis.call('time') \
                  local start = t0[1] * 1000000 + t0[2] \
                  while true do \
                    local t = redis.call('time') \
                    if t[1] * 1000000 + t[2] - start > 3000000 then break end \
                  end \
                  redis.call('lpush', KEYS[1], 'last') return 'done'";
    send(&mut runner, &["EVAL", script, "1", "q"]);
    std::thread::sleep(PAST_THRESHOLD);
    let mut other = connect(port);
    log.push(show(&other.cmd(&["SCRIPT", "KILL"])));
    log.push(show(&other.cmd(&["MULTI"])));
    log.push(show(&other.cmd(&["DISCARD"])));
    log.push(show(&other.cmd(&["LLEN", "q"])));
    log.push(read(&mut runner));
    log.push(read(&mut blocked));
    log.push(show(&admin.cmd(&["LRANGE", "q", "0", "-1"])));
    log
}

/// `SHUTDOWN NOSAVE` while a script that wrote runs: the server goes away, and the
/// runner sees its connection close without a reply.
fn shutdown_scenario(port: u16) -> Vec<String> {
    let mut log = Vec::new();
    let mut admin = connect(port);
    let mut runner = connect(port);
    log.push(lower_threshold(&mut admin));
    send(
        &mut runner,
        &[
            "EVAL",
            "redis.call('set', KEYS[1], 'v') while true do end",
            "1",
            "w",
        ],
    );
    std::thread::sleep(PAST_THRESHOLD);
    log.push(show(&admin.cmd(&["SCRIPT", "KILL"])));
    log.push(show(&admin.cmd(&["SHUTDOWN", "SAVE"])));
    let _ = admin.call(&["SHUTDOWN", "NOSAVE"]);
    log.push(read(&mut runner));
    let mut refused = false;
    for _ in 0..100 {
        if Client::connect(port).is_err() {
            refused = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    log.push(format!("connections refused: {refused}"));
    log
}

fn pion_transcript(threads: &str, scenario: fn(u16) -> Vec<String>) -> Vec<String> {
    let dir = temp_dir("busy-script");
    let server = PionProcess::start(dir.path(), &["--threads", threads, "--wal", "off"]);
    scenario(server.port())
}

fn compare(name: &str, scenario: fn(u16) -> Vec<String>) {
    let redis = RedisServer::start();
    let expected = scenario(redis.port);
    for threads in ["1", "4"] {
        let got = pion_transcript(threads, scenario);
        assert_eq!(
            got, expected,
            "{name} at --threads {threads}: Pion's transcript differs from Redis's"
        );
    }
}

#[test]
fn a_killable_busy_script_matches_redis() {
    compare("killable", killable_scenario);
}

#[test]
fn a_kill_is_not_swallowed_by_pcall() {
    compare("pcall", pcall_scenario);
}

#[test]
fn an_unkillable_busy_script_matches_redis() {
    compare("unkillable", unkillable_scenario);
}

#[test]
fn shutdown_nosave_stops_a_busy_script_as_redis_does() {
    let redis = RedisServer::start();
    let expected = shutdown_scenario(redis.port);
    for threads in ["1", "4"] {
        let dir = temp_dir("busy-shutdown");
        let mut server = PionProcess::start(
            dir.path(),
            &["--threads", threads, "--appendfsync", "always"],
        );
        let got = shutdown_scenario(server.port());
        assert_eq!(got, expected, "at --threads {threads}");
        assert!(
            server.wait_exit(Duration::from_secs(10)).is_some(),
            "the server did not exit"
        );
        // What the killed script wrote never reached the log, as it never reaches
        // Redis's append-only file.
        let server = PionProcess::start(dir.path(), &["--threads", threads]);
        let mut c = server.client();
        assert_eq!(
            c.cmd(&["EXISTS", "w"]),
            RespValue::Line(b':', b"0".to_vec())
        );
    }
}
