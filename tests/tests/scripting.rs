//! Scripts in a running server: what scripts and function libraries wrote survives a
//! SIGKILL, replayed from the write-ahead log as the commands' effects. (Busy scripts
//! and `SCRIPT KILL` are in `busy_script.rs`.)

use pion_tests::{temp_dir, PionProcess, RespValue};

fn line(v: &RespValue) -> String {
    match v {
        RespValue::Line(_, b) => String::from_utf8_lossy(b).into_owned(),
        RespValue::Bulk(_, Some(b)) => String::from_utf8_lossy(b).into_owned(),
        other => format!("{other:?}"),
    }
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
