//! Authentication against `requirepass`, compared with redis-server configured the same.

use pion_core::EngineOptions;
use pion_tests::{Client, PionServer, RedisServer};

#[test]
fn requirepass_flow_matches_redis() {
    let redis = RedisServer::start_with(&["--requirepass", "s3cret"]);
    let mut options = EngineOptions::default();
    options.config.requirepass = "s3cret".into();
    let pion = PionServer::start_with(1, options);
    let script: &[&[&str]] = &[
        &["GET", "k"],
        &["PING"],
        &["AUTH", "wrong"],
        &["AUTH", "nobody", "s3cret"],
        &["HELLO", "3"],
        &["HELLO", "2", "AUTH", "default", "bad"],
        &["AUTH", "a", "b", "c"],
        &["AUTH", "s3cret"],
        &["SET", "k", "v"],
        &["GET", "k"],
        &["AUTH", "default", "s3cret"],
        &["RESET"],
        &["GET", "k"],
        &["HELLO", "2", "AUTH", "default", "s3cret", "SETNAME", "me"],
        &["CLIENT", "GETNAME"],
        &["GET", "k"],
    ];
    let mut r = Client::connect(redis.port).expect("redis");
    let mut p = Client::connect(pion.port).expect("pion");
    for cmd in script {
        let (rv, rraw) = r.call(cmd).expect("redis reply");
        let (pv, praw) = p.call(cmd).expect("pion reply");
        if cmd[0] == "HELLO" && !rv.is_error() {
            // Server identity fields differ (id, version); both must answer a map/array.
            assert_eq!(rv.shape(), pv.shape(), "{cmd:?}");
            continue;
        }
        assert_eq!(
            rraw,
            praw,
            "{cmd:?}: redis {} pion {}",
            rv.render(),
            pv.render()
        );
    }
}

#[test]
fn unauthenticated_clients_get_small_request_limits() {
    let mut options = EngineOptions::default();
    options.config.requirepass = "pw".into();
    let pion = PionServer::start_with(1, options);
    let mut c = Client::connect(pion.port).expect("connect");
    let big: Vec<String> = (0..11).map(|i| i.to_string()).collect();
    c.send_raw(&Client::encode(&big)).expect("send");
    let (reply, _) = c.read_reply().expect("reply");
    assert_eq!(
        reply.render(),
        "-ERR Protocol error: invalid multibulk length"
    );
}
