//! The Lua debugger (`SCRIPT DEBUG YES|SYNC`), against a real redis-server: the same
//! sessions (stepping, breakpoints, `print`, `eval`, `redis`, `trace`, `maxlen`,
//! `list`, `whole`, `help`, `abort`, protocol errors, the infinite-loop guard, a client
//! that leaves) are run on both, and every byte the client receives must match, as
//! must the data afterwards (`SYNC` keeps what the script wrote, `YES` rolls it
//! back). Pion alone: `SCRIPT KILL` ends a stopped session, an embedded client cannot
//! debug, and `YES` refuses what it could not roll back.

use std::time::Duration;

use pion_core::EngineOptions;
use pion_tests::{Client, PionServer, RedisServer};

/// The replies that arrive: the first within `wait`, more while they follow closely
/// (the end of a session sends its last lines and then the script's reply). A
/// function's address, which differs between runs, reads as `0x…`.
fn drain(c: &mut Client, wait: Duration) -> Vec<String> {
    let mut out = Vec::new();
    let mut timeout = wait;
    loop {
        c.set_read_timeout(timeout).expect("timeout");
        let Ok((_, raw)) = c.read_reply() else { break };
        let text = String::from_utf8_lossy(&raw).into_owned();
        out.push(hide_addresses(&text));
        timeout = Duration::from_millis(60);
    }
    out
}

fn hide_addresses(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("@0x") {
        out.push_str(&rest[..at + 3]);
        rest = rest[at + 3..].trim_start_matches(|c: char| c.is_ascii_hexdigit());
        out.push('…');
    }
    out.push_str(rest);
    out
}

/// Runs `script` under `SCRIPT DEBUG <mode>` and sends each of `commands` (split on
/// spaces) once the previous one was answered; returns everything received, per step.
fn session(port: u16, mode: &str, eval: &[&str], commands: &[&str]) -> Vec<Vec<String>> {
    let mut c = Client::connect(port).expect("connect");
    let mut steps = vec![vec![c.cmd(&["SCRIPT", "DEBUG", mode]).render()]];
    let mut argv = vec!["EVAL"];
    argv.extend_from_slice(eval);
    c.send_raw(&Client::encode(&argv)).expect("send");
    steps.push(drain(&mut c, Duration::from_secs(2)));
    for cmd in commands {
        let args: Vec<&str> = cmd.split(' ').collect();
        if c.send_raw(&Client::encode(&args)).is_err() {
            break;
        }
        steps.push(drain(&mut c, Duration::from_secs(2)));
    }
    steps
}

/// Both servers, the same sessions, the same bytes.
struct Pair {
    redis: RedisServer,
    pion: PionServer,
}

impl Pair {
    fn start() -> Pair {
        Pair {
            redis: RedisServer::start(),
            pion: PionServer::start(2),
        }
    }

    fn both(&self, f: impl Fn(u16) -> Vec<Vec<String>>) {
        let expected = f(self.redis.port);
        let got = f(self.pion.port);
        for (i, (e, g)) in expected.iter().zip(&got).enumerate() {
            assert_eq!(g, e, "step {i} differs from Redis's");
        }
        assert_eq!(got.len(), expected.len());
    }

    fn cmd(&self, args: &[&str]) -> (String, String) {
        let mut r = Client::connect(self.redis.port).expect("redis");
        let mut p = Client::connect(self.pion.port).expect("pion");
        (r.cmd(args).render(), p.cmd(args).render())
    }

    fn same(&self, args: &[&str]) -> String {
        let (r, p) = self.cmd(args);
        assert_eq!(p, r, "{args:?}");
        p
    }
}

const SCRIPT: &str = "local a = 1
local t = {1, 2, 'x', {k = 'v'}}
redis.call('set', KEYS[1], ARGV[1])
redis.debug('hello', a, t)
local function double(x)
  local y = x * 2
  redis.breakpoint()
  return y
end
local big = string.rep('b', 300)
redis.pcall('lpush', KEYS[1], 'x')
local v = double(21)
redis.call('set', 'big', big)
return v";

#[test]
fn stepping_inspecting_and_running_commands_match_redis() {
    let pair = Pair::start();
    pair.same(&["SET", "counter", "10"]);
    pair.both(|port| {
        session(
            port,
            "sync",
            &[SCRIPT, "1", "mykey", "myval"],
            &[
                "help",
                "step",
                "next",
                "n",
                "print",
                "print t",
                "p a",
                "p nosuch",
                "p KEYS",
                "p ARGV",
                "list",
                "list 6 1",
                "l 0",
                "whole",
                "b",
                "b 13",
                "b 13",
                "b 100",
                "b x",
                "b -13",
                "b -13",
                "b 11",
                "b",
                "eval a + 1",
                "eval local z = 3",
                "e error('boom')",
                "e a +",
                "e redis.call('get', KEYS[1])",
                "redis incr counter",
                "r get nosuch",
                "r hgetall counter",
                "r nosuchcommand x",
                "trace",
                "maxlen",
                "maxlen 10",
                "e big",
                "maxlen 0",
                "e big",
                "maxlen 5",
                "xyz",
                "redis",
                "continue",
                "trace",
                "print",
                "c",
                "step",
                "s",
                "s",
            ],
        )
    });
    pair.same(&["GET", "mykey"]);
    pair.same(&["GET", "counter"]);
    pair.same(&["STRLEN", "big"]);
}

#[test]
fn forked_sessions_roll_back_and_sync_sessions_keep() {
    let pair = Pair::start();
    let script = "redis.call('set', 'a', 'changed')
redis.call('del', 'b')
redis.call('rpush', 'l', 'x', 'y')
redis.call('incr', 'n')
return redis.call('get', 'a')";
    for mode in ["yes", "sync"] {
        for setup in [
            &["FLUSHALL"][..],
            &["SET", "a", "orig"],
            &["SET", "b", "keep"],
            &["SET", "n", "5"],
        ] {
            pair.same(setup);
        }
        pair.same(&["EXPIRE", "b", "1000"]);
        pair.both(|port| session(port, mode, &[script, "0"], &["n", "n", "c"]));
        pair.same(&["MGET", "a", "b", "n"]);
        pair.same(&["LRANGE", "l", "0", "-1"]);
        // YES restored the key with its time to live; SYNC kept the deletion.
        let (_, ttl) = pair.cmd(&["TTL", "b"]);
        let ttl: i64 = ttl.trim_start_matches(':').parse().expect("ttl");
        if mode == "yes" {
            assert!((990..=1000).contains(&ttl), "{ttl}");
        } else {
            assert_eq!(ttl, -2);
        }
    }
}

#[test]
fn abort_errors_and_a_client_that_leaves_match_redis() {
    let pair = Pair::start();
    let script = "redis.call('set', 'before', '1')
redis.call('set', 'after', '1')
return 1";
    // abort: the script stops with an error; under SYNC what ran is kept.
    pair.same(&["DEL", "before", "after"]);
    pair.both(|port| session(port, "sync", &[script, "0"], &["n", "abort"]));
    pair.same(&["MGET", "before", "after"]);
    // The client goes away while stopped: the script runs to its end.
    pair.same(&["DEL", "before", "after"]);
    pair.both(|port| session(port, "sync", &[script, "0"], &[]));
    std::thread::sleep(Duration::from_millis(200));
    pair.same(&["MGET", "before", "after"]);
    // Protocol errors in what the client sends, and bad options.
    pair.both(|port| {
        let mut c = Client::connect(port).expect("connect");
        let mut steps = vec![vec![c.cmd(&["SCRIPT", "DEBUG", "maybe"]).render()]];
        steps.push(vec![c.cmd(&["SCRIPT", "DEBUG"]).render()]);
        steps.push(vec![c.cmd(&["SCRIPT", "DEBUG", "no"]).render()]);
        steps.push(vec![c.cmd(&["SCRIPT", "DEBUG", "sync"]).render()]);
        steps.push(vec![c.cmd(&["EVALSHA", "abc", "0"]).render()]);
        steps.push(vec![c.cmd(&["EVALSHA", &"a".repeat(40), "0"]).render()]);
        c.send_raw(&Client::encode(&["EVAL", "return 'hello'", "0"]))
            .expect("send");
        steps.push(drain(&mut c, Duration::from_secs(2)));
        for raw in [
            &b"*1\r\n$11\r\nhello\0world\r\n"[..],
            b"*1\r\n$1\r\n\0\r\n",
            b"*101\r\n$5\r\nredis\r\n",
        ] {
            let mut bytes = raw.to_vec();
            if raw.starts_with(b"*101") {
                for _ in 0..100 {
                    bytes.extend_from_slice(b"$4\r\ntest\r\n");
                }
            }
            c.send_raw(&bytes).expect("send");
            steps.push(drain(&mut c, Duration::from_secs(2)));
        }
        // Not the request protocol: the session ends with a protocol error.
        c.send_raw(b"list\r\n").expect("send");
        steps.push(drain(&mut c, Duration::from_secs(2)));
        steps
    });
}

#[test]
fn an_endless_loop_is_stopped_and_can_be_aborted() {
    let pair = Pair::start();
    pair.same(&["CONFIG", "SET", "busy-reply-threshold", "200"]);
    pair.both(|port| {
        let mut steps = session(
            port,
            "sync",
            &["local i = 0\nwhile true do\n  i = i + 1\nend", "0"],
            &["c"],
        );
        // The guard stops it at a line of the loop; which one depends on timing.
        for step in steps.iter_mut() {
            for reply in step.iter_mut() {
                if reply.contains("timeout reached") {
                    *reply = "stopped by the loop guard".into();
                }
            }
        }
        steps
    });
}

#[test]
fn script_kill_ends_a_stopped_session() {
    let mut options = EngineOptions::default();
    options.config.busy_reply_threshold = 100;
    let pion = PionServer::start_with(2, options);
    let mut debugger = Client::connect(pion.port).expect("connect");
    assert_eq!(debugger.cmd(&["SCRIPT", "DEBUG", "sync"]).render(), "+OK");
    debugger
        .send_raw(&Client::encode(&["EVAL", "local x = 1\nreturn x", "0"]))
        .expect("send");
    let first = drain(&mut debugger, Duration::from_secs(2));
    assert!(first[0].contains("Stopped at 1"), "{first:?}");
    std::thread::sleep(Duration::from_millis(200));
    let mut other = Client::connect(pion.port).expect("connect");
    assert!(other.cmd(&["GET", "x"]).render().starts_with("-BUSY"));
    assert_eq!(other.cmd(&["SCRIPT", "KILL"]).render(), "+OK");
    let end = drain(&mut debugger, Duration::from_millis(500));
    assert!(end.iter().any(|r| r.contains("<endsession>")), "{end:?}");
    assert!(
        end.iter().any(|r| r.contains("Script killed by user")),
        "{end:?}"
    );
    assert_eq!(other.cmd(&["PING"]).render(), "+PONG");
}

#[test]
fn forked_sessions_refuse_what_they_cannot_roll_back() {
    let pion = PionServer::start(1);
    let mut c = Client::connect(pion.port).expect("connect");
    c.cmd(&["SET", "k", "v"]);
    assert_eq!(c.cmd(&["SCRIPT", "DEBUG", "yes"]).render(), "+OK");
    c.send_raw(&Client::encode(&[
        "EVAL",
        "redis.call('flushall')\nreturn 1",
        "0",
    ]))
    .expect("send");
    drain(&mut c, Duration::from_secs(2));
    c.send_raw(&Client::encode(&["c"])).expect("send");
    let end = drain(&mut c, Duration::from_secs(2)).join("");
    assert!(end.contains("cannot be rolled back"), "{end}");
    let mut c = Client::connect(pion.port).expect("connect");
    assert_eq!(c.cmd(&["GET", "k"]).render(), "\"v\"");
}

#[test]
fn an_embedded_client_cannot_debug() {
    let engine = pion_core::Engine::in_memory(EngineOptions::default());
    let reply = engine.execute(0, &["SCRIPT", "DEBUG", "sync"]);
    assert!(
        matches!(&reply, pion_core::Reply::Error(e) if e.contains("needs a client connection")),
        "{reply:?}"
    );
}
