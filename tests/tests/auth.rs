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
    let redis = RedisServer::start_with(&["--requirepass", "pw"]);
    let mut options = EngineOptions::default();
    options.config.requirepass = "pw".into();
    let pion = PionServer::start_with(1, options);
    let eleven: Vec<String> = (0..11).map(|i| i.to_string()).collect();
    let requests: [Vec<u8>; 3] = [
        Client::encode(&eleven),
        b"*1\r\n$16385\r\n".to_vec(),
        // Within the limits: refused by NOAUTH, not by the protocol.
        Client::encode(&["GET".to_string(), "k".to_string()]),
    ];
    for request in &requests {
        let mut replies = Vec::new();
        for port in [redis.port, pion.port] {
            let mut c = Client::connect(port).expect("connect");
            c.send_raw(request).expect("send");
            let (reply, _) = c.read_reply().expect("reply");
            replies.push(reply.render());
        }
        assert_eq!(replies[0], replies[1], "{request:?}");
        assert!(replies[0].starts_with('-'), "{}", replies[0]);
    }
}
