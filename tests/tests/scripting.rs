//! Scripts in a running server: a runaway script is stopped by `SCRIPT KILL` from
//! another connection (and a script that wrote cannot be), and what scripts and
//! function libraries wrote survives a SIGKILL, replayed from the write-ahead log as
//! the commands' effects.

use std::time::{Duration, Instant};

use pion_tests::{temp_dir, Client, PionProcess, RespValue};

fn line(v: &RespValue) -> String {
    match v {
        RespValue::Line(_, b) => String::from_utf8_lossy(b).into_owned(),
        RespValue::Bulk(_, Some(b)) => String::from_utf8_lossy(b).into_owned(),
        other => format!("{other:?}"),
    }
}

/// Two workers (a connection on the other one can reach the running script), no log,
/// and a short busy threshold so other clients are answered `-BUSY` quickly.
const BUSY_SERVER: &[&str] = &[
    "--threads",
    "2",
    "--wal",
    "off",
    "--busy-reply-threshold",
    "200",
];

/// Sends `SCRIPT KILL` (or `FUNCTION KILL`) from fresh connections until one is
/// answered `OK`; a connection served by the busy thread is left waiting and skipped.
fn kill_from_other_connections(port: u16, cmd: &[&str]) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut replies = Vec::new();
    while Instant::now() < deadline {
        let mut c = Client::connect(port).expect("connect");
        c.set_read_timeout(Duration::from_millis(500))
            .expect("timeout");
        if let Ok((reply, _)) = c.call(cmd) {
            let text = line(&reply);
            replies.push(text.clone());
            if text == "OK" || text.starts_with("UNKILLABLE") {
                return replies;
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("no kill was accepted: {replies:?}");
}

#[test]
fn runaway_script_is_killed_from_another_connection() {
    let dir = temp_dir("script-kill");
    let server = PionProcess::start(dir.path(), BUSY_SERVER);
    let mut runner = Client::connect(server.port()).expect("connect");
    runner
        .send_raw(&Client::encode(&["EVAL", "while true do end", "0"]))
        .expect("send");
    let replies = kill_from_other_connections(server.port(), &["SCRIPT", "KILL"]);
    assert_eq!(replies.last().map(String::as_str), Some("OK"));
    runner
        .set_read_timeout(Duration::from_secs(10))
        .expect("timeout");
    let (reply, _) = runner.read_reply().expect("the script's reply");
    assert!(reply.is_error());
    assert!(
        line(&reply).starts_with("ERR Script killed by user with SCRIPT KILL..."),
        "{reply:?}"
    );
    // The server and the runner's connection go on.
    assert_eq!(line(&runner.cmd(&["EVAL", "return 'after'", "0"])), "after");
    assert_eq!(
        line(&runner.cmd(&["SCRIPT", "KILL"])),
        "NOTBUSY No scripts in execution right now."
    );
}

#[test]
fn a_script_that_wrote_cannot_be_killed() {
    let dir = temp_dir("script-unkillable");
    let server = PionProcess::start(dir.path(), BUSY_SERVER);
    let mut runner = Client::connect(server.port()).expect("connect");
    // Writes once, then loops for about two seconds: a kill must be refused.
    let script = "redis.call('set','w','1') local t0 = tonumber(redis.call('time')[1]) \
                  for i = 1, 5e8 do if i % 100000 == 0 and \
                  tonumber(redis.call('time')[1]) - t0 >= 2 then break end end return 'done'";
    runner
        .send_raw(&Client::encode(&["EVAL", script, "0"]))
        .expect("send");
    std::thread::sleep(Duration::from_millis(200));
    let replies = kill_from_other_connections(server.port(), &["SCRIPT", "KILL"]);
    assert!(
        replies.last().is_some_and(
            |r| r.starts_with("UNKILLABLE Sorry the script already executed write commands")
        ),
        "{replies:?}"
    );
    runner
        .set_read_timeout(Duration::from_secs(30))
        .expect("timeout");
    let (reply, _) = runner.read_reply().expect("the script's reply");
    assert_eq!(line(&reply), "done");
}

#[test]
fn script_and_function_writes_survive_sigkill() {
    let dir = temp_dir("script-restart");
    let mut server = PionProcess::start(dir.path(), &["--threads", "2"]);
    let mut c = server.client();
    let r = c.cmd(&[
        "EVAL",
        "redis.call('set', KEYS[1], ARGV[1]) redis.call('incrby', KEYS[2], 5) \
         redis.call('rpush', KEYS[3], 'a', 'b') return redis.call('spop', KEYS[4])",
        "4",
        "s",
        "n",
        "l",
        "set",
        "v",
    ]);
    assert!(matches!(r, RespValue::Bulk(_, None)), "{r:?}");
    c.cmd(&["SADD", "set", "x", "y", "z"]);
    let popped = line(&c.cmd(&["EVAL", "return redis.call('spop', KEYS[1])", "1", "set"]));
    let lib = "#!lua name=counter\n\
               redis.register_function('bump', function(keys, args) \
               return redis.call('incrby', keys[1], args[1]) end)";
    assert_eq!(line(&c.cmd(&["FUNCTION", "LOAD", lib])), "counter");
    assert_eq!(
        c.cmd(&["FCALL", "bump", "1", "n", "10"]),
        RespValue::Line(b':', b"15".to_vec())
    );
    let sha = line(&c.cmd(&["SCRIPT", "LOAD", "return 1"]));
    server.kill9();

    let server = PionProcess::start(dir.path(), &["--threads", "2"]);
    let mut c = server.client();
    assert_eq!(line(&c.cmd(&["GET", "s"])), "v");
    assert_eq!(line(&c.cmd(&["GET", "n"])), "15");
    assert_eq!(
        c.cmd(&["SCARD", "set"]),
        RespValue::Line(b':', b"2".to_vec())
    );
    assert_eq!(
        c.cmd(&["SISMEMBER", "set", &popped]),
        RespValue::Line(b':', b"0".to_vec())
    );
    // Libraries come back; cached scripts do not (as in Redis).
    assert_eq!(
        c.cmd(&["FCALL", "bump", "1", "n", "1"]),
        RespValue::Line(b':', b"16".to_vec())
    );
    let exists = c.cmd(&["SCRIPT", "EXISTS", &sha]);
    assert_eq!(
        exists,
        RespValue::Agg(b'*', Some(vec![RespValue::Line(b':', b"0".to_vec())]))
    );
}

#[test]
fn function_libraries_survive_a_snapshot_that_replaced_the_log() {
    let dir = temp_dir("function-snapshot");
    let mut server = PionProcess::start(dir.path(), &["--threads", "2"]);
    let mut c = server.client();
    let lib = "#!lua name=kept\n\
               redis.register_function('twice', function(keys, args) \
               return redis.call('incrby', keys[1], 2 * args[1]) end)";
    assert_eq!(line(&c.cmd(&["FUNCTION", "LOAD", lib])), "kept");
    // The snapshot covers the FUNCTION LOAD: the log before it may be dropped, so
    // the library must be in the snapshot itself.
    assert_eq!(line(&c.cmd(&["SAVE"])), "OK");
    assert_eq!(
        c.cmd(&["FCALL", "twice", "1", "k", "3"]),
        RespValue::Line(b':', b"6".to_vec())
    );
    server.kill9();
    let wal_files = std::fs::read_dir(dir.path())
        .expect("data dir")
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".log"))
        .count();
    let server = PionProcess::start(dir.path(), &["--threads", "2"]);
    let mut c = server.client();
    assert_eq!(
        c.cmd(&["FCALL", "twice", "1", "k", "1"]),
        RespValue::Line(b':', b"8".to_vec()),
        "library lost after restart ({wal_files} log files)"
    );
    assert_eq!(line(&c.cmd(&["FUNCTION", "DELETE", "kept"])), "OK");
}
