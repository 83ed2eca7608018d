//! `DEBUG PROTOCOL` (one reply of each RESP type) and `DEBUG SET-DISABLE-DENY-SCRIPTS`
//! (scripts calling it), against a real redis-server with DEBUG enabled on both: the
//! raw bytes of every reply must match, in RESP2 and RESP3 and for each protocol a
//! script asks for with `redis.setresp`.

use pion_tests::{temp_dir, Client, PionProcess, RedisServer};

const TYPES: &[&str] = &[
    "string", "integer", "double", "bignum", "null", "array", "set", "map", "attrib", "push",
    "verbatim", "true", "false", "bogus",
];

/// Every reply's raw bytes, in order (a RESP3 `push` is followed by a second reply).
fn transcript(port: u16) -> Vec<Vec<u8>> {
    let mut c = Client::connect(port).expect("connect");
    let mut out = Vec::new();
    let mut call = |c: &mut Client, args: &[&str], replies: usize| {
        c.send_raw(&Client::encode(args)).expect("send");
        for _ in 0..replies {
            out.push(c.read_reply().expect("reply").1);
        }
    };
    call(&mut c, &["DEBUG", "SET-DISABLE-DENY-SCRIPTS", "1"], 1);
    for proto in ["2", "3"] {
        call(&mut c, &["HELLO", proto, "SETNAME", "x"], 0);
        c.read_reply().expect("hello");
        for t in TYPES {
            let replies = if proto == "3" && *t == "push" { 2 } else { 1 };
            call(&mut c, &["DEBUG", "PROTOCOL", t], replies);
        }
        for lua_resp in [2, 3] {
            for t in TYPES.iter().filter(|t| !["push", "bogus"].contains(t)) {
                let script = format!(
                    "redis.setresp({lua_resp}); return redis.call('debug', 'protocol', '{t}')"
                );
                call(&mut c, &["EVAL", &script, "0"], 1);
            }
        }
        call(
            &mut c,
            &["EVAL", "return {big_number='123\\r\\n123'}", "0"],
            1,
        );
    }
    call(&mut c, &["DEBUG", "SET-DISABLE-DENY-SCRIPTS", "0"], 1);
    call(
        &mut c,
        &[
            "EVAL",
            "return redis.call('debug', 'protocol', 'string')",
            "0",
        ],
        1,
    );
    out
}

#[test]
fn debug_protocol_replies_match_redis_byte_for_byte() {
    let redis = RedisServer::start_with(&["--enable-debug-command", "yes"]);
    let expected = transcript(redis.port);
    let dir = temp_dir("debug-protocol");
    let pion = PionProcess::start(
        dir.path(),
        &["--wal", "off", "--enable-debug-command", "yes"],
    );
    let got = transcript(pion.port());
    assert_eq!(got.len(), expected.len());
    for (i, (g, e)) in got.iter().zip(&expected).enumerate() {
        assert_eq!(
            String::from_utf8_lossy(g),
            String::from_utf8_lossy(e),
            "reply {i} differs from Redis's"
        );
    }
}
