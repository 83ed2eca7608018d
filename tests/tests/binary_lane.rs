//! The binary lane (port + 1) against a real `pion-server`: what it stores and fetches
//! is byte for byte what RESP's `KV.*` commands store and fetch, bad frames get clear
//! errors without disturbing anything stored, and a password applies to it too.

use std::io::Read;
use std::time::Duration;

use pion_core::prefix::BlockId;
use pion_server::binary::codec::{self, encode_request, op, Request};
use pion_tests::lane::{lane_error, resp_error, start, Lane};
use pion_tests::RespValue;

const MANIFEST: &str = r#"{"model":"lane","block_tokens":8,"dtype":"f16","layers":[{"kind":"attention","kv_heads":2,"head_dim":32},{"kind":"recurrent","state_bytes":16}]}"#;

/// Waits until the server counts exactly `n` connected clients.
fn wait_for_clients(resp: &mut pion_tests::Client, n: usize) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let RespValue::Bulk(_, Some(list)) = resp.cmd(&["CLIENT", "LIST"]) else {
            panic!("CLIENT LIST");
        };
        if String::from_utf8_lossy(&list).lines().count() == n {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "clients never settled at {n}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn layer0(tokens: &[u32]) -> Vec<u8> {
    let n = 2 * 2 * tokens.len() * 32 * 2;
    (0..n)
        .map(|i| (i as u32 ^ tokens[0].wrapping_mul(2654435761)) as u8)
        .collect()
}

#[test]
fn lane_and_resp_agree_byte_for_byte() {
    let (_dir, server, lane_port) = start(&[]);
    let mut resp = server.client();
    assert!(!resp.cmd(&["KV.REGISTER", "m", MANIFEST]).is_error());
    let mut lane = Lane::connect(lane_port);
    assert_eq!(
        lane.call(&Request::Ping(b"x".to_vec())),
        (op::PING | 0x80, b"x".to_vec())
    );
    // Store three blocks through the lane (the middle one without recurrent state).
    let tokens: Vec<u32> = (100..124).collect();
    let mut parent = 0u128;
    let mut ids = Vec::new();
    for (i, chunk) in tokens.chunks(8).enumerate() {
        let state = if i == 1 {
            Vec::new()
        } else {
            vec![i as u8; 16]
        };
        let (opc, body) = lane.call(&Request::Put {
            ns: "m".into(),
            parent,
            tokens: chunk.to_vec(),
            layers: vec![layer0(chunk).into(), state.into()],
        });
        assert_eq!(opc, op::PUT | 0x80, "{}", String::from_utf8_lossy(&body));
        let mut id = [0u8; 16];
        id.copy_from_slice(&body);
        parent = u128::from_le_bytes(id);
        ids.push(parent);
    }
    assert_eq!(
        ids,
        BlockId::chain_all(&tokens, 8)
            .iter()
            .map(|b| b.0)
            .collect::<Vec<_>>(),
        "the server's ids are the client's"
    );
    // MATCH over both lanes: the hybrid rule stops at block 1 (no state)… but block 2
    // has state, so the usable prefix is all 24 tokens.
    let (opc, body) = lane.call(&Request::Match {
        ns: "m".into(),
        tokens: tokens.clone(),
    });
    assert_eq!(opc, op::MATCH | 0x80);
    assert_eq!(
        u64::from_le_bytes(body[..8].try_into().expect("8 bytes")),
        24
    );
    let le: Vec<u8> = tokens.iter().flat_map(|t| t.to_le_bytes()).collect();
    let RespValue::Agg(_, Some(m)) = resp.cmd(&[b"KV.MATCH".as_slice(), b"m", &le]) else {
        panic!("KV.MATCH");
    };
    assert_eq!(m[0], RespValue::Line(b':', b"24".to_vec()));
    // FETCH of every block, batch and single, against KV.GET.
    let (opc, body) = lane.call(&Request::Fetch {
        ns: "m".into(),
        ids: ids.clone(),
        layers: None,
        batch: true,
    });
    assert_eq!(opc, op::BATCH_FETCH | 0x80);
    let mut at = 4;
    assert_eq!(u32::from_le_bytes(body[..4].try_into().expect("4")), 3);
    for id in &ids {
        let RespValue::Agg(_, Some(v)) =
            resp.cmd(&[b"KV.GET".as_slice(), b"m", BlockId(*id).hex().as_bytes()])
        else {
            panic!("KV.GET");
        };
        let tokens = u32::from_le_bytes(body[at..at + 4].try_into().expect("4"));
        let layers = u32::from_le_bytes(body[at + 4..at + 8].try_into().expect("4"));
        assert_eq!((tokens, layers), (8, 2));
        at += 8;
        for l in 0..2 {
            let present = body[at];
            at += 1;
            let lane_bytes = if present == 1 {
                let len = u64::from_le_bytes(body[at..at + 8].try_into().expect("8")) as usize;
                at += 8;
                let b = body[at..at + len].to_vec();
                at += len;
                Some(b)
            } else {
                None
            };
            let resp_bytes = match &v[l + 1] {
                RespValue::Bulk(_, b) => b.clone(),
                other => panic!("{}", other.render()),
            };
            assert_eq!(
                lane_bytes,
                resp_bytes,
                "block {} layer {l}",
                BlockId(*id).hex()
            );
        }
    }
    assert_eq!(at, body.len());
    let (opc, single) = lane.call(&Request::Fetch {
        ns: "m".into(),
        ids: vec![ids[0]],
        layers: Some(vec![0]),
        batch: false,
    });
    assert_eq!(opc, op::FETCH | 0x80);
    assert_eq!(&single[..8], &[8, 0, 0, 0, 1, 0, 0, 0]);
}

#[test]
fn bad_frames_get_errors_and_change_nothing() {
    let (_dir, server, lane_port) = start(&[]);
    let mut resp = server.client();
    assert!(!resp.cmd(&["KV.REGISTER", "m", MANIFEST]).is_error());
    let mut lane = Lane::connect(lane_port);
    let err = |(opc, body): (u8, Vec<u8>)| {
        assert_eq!(opc, codec::ERROR);
        String::from_utf8(body).expect("utf-8 error")
    };
    // Unknown namespace, wrong layer count, wrong sizes, unknown block, bad opcode.
    let e = err(lane.call(&Request::Match {
        ns: "nope".into(),
        tokens: vec![1],
    }));
    assert!(e.contains("unknown namespace"), "{e}");
    let e = err(lane.call(&Request::Put {
        ns: "m".into(),
        parent: 0,
        tokens: vec![1; 8],
        layers: vec![vec![0; 10].into()],
    }));
    assert!(e.contains("has 2 layers"), "{e}");
    let e = err(lane.call(&Request::Put {
        ns: "m".into(),
        parent: 0,
        tokens: vec![1; 8],
        layers: vec![vec![0; 10].into(), Vec::<u8>::new().into()],
    }));
    assert!(e.contains("layer 0: expected"), "{e}");
    let e = err(lane.call(&Request::Fetch {
        ns: "m".into(),
        ids: vec![42],
        layers: None,
        batch: false,
    }));
    assert!(e.contains("not stored"), "{e}");
    let mut frame = codec::header(0x66, 0).to_vec();
    lane.send_raw(&frame);
    assert!(err(lane.reply()).contains("unknown binary-lane opcode"));
    // A truncated body inside a complete frame.
    frame = codec::header(op::FETCH, 3).to_vec();
    frame.extend_from_slice(&[1, 0, b'm']);
    lane.send_raw(&frame);
    assert!(err(lane.reply()).contains("truncated"));
    // The connection is still in step and nothing was stored.
    assert_eq!(lane.call(&Request::Ping(vec![])).0, op::PING | 0x80);
    let RespValue::Agg(_, Some(info)) = resp.cmd(&["KV.INFO", "m"]) else {
        panic!("KV.INFO");
    };
    assert_eq!(
        info[1],
        RespValue::Line(b':', b"0".to_vec()),
        "no block stored"
    );
    // A frame over the limit, and a wrong magic: an error, then the lane closes.
    assert!(!resp
        .cmd(&["CONFIG", "SET", "client-query-buffer-limit", "1048576"])
        .is_error());
    let mut big = Lane::connect(lane_port);
    big.send_raw(&codec::header(op::PUT, 2 << 20));
    assert!(err(big.reply()).contains("over the limit"));
    let mut bad = Lane::connect(lane_port);
    bad.send_raw(b"*1\r\n$4\r\nPING\r\n");
    assert!(err(bad.reply()).contains("magic"));
}

#[test]
fn a_password_applies_to_the_lane() {
    let (_dir, _server, lane_port) = start(&["--requirepass", "s3cret"]);
    let mut lane = Lane::connect(lane_port);
    let (opc, body) = lane.call(&Request::Match {
        ns: "m".into(),
        tokens: vec![1],
    });
    assert_eq!(
        (opc, body.as_slice()),
        (codec::ERROR, &b"NOAUTH Authentication required."[..])
    );
    let (opc, _) = lane.call(&Request::Auth(None, b"wrong".to_vec()));
    assert_eq!(opc, codec::ERROR);
    assert_eq!(
        lane.call(&Request::Auth(None, b"s3cret".to_vec())).0,
        op::AUTH | 0x80
    );
    let (opc, body) = lane.call(&Request::Match {
        ns: "m".into(),
        tokens: vec![1],
    });
    assert_eq!(opc, codec::ERROR);
    assert!(String::from_utf8_lossy(&body).contains("unknown namespace"));
}

#[test]
fn the_client_limit_applies_to_the_lane() {
    let (_dir, server, lane_port) = start(&["--maxclients", "2"]);
    // One RESP client and one lane client fill the limit (once the server has seen
    // the start-up probe's connection close).
    let mut resp = server.client();
    wait_for_clients(&mut resp, 1);
    let mut first = Lane::connect(lane_port);
    assert_eq!(first.call(&Request::Ping(vec![])).0, op::PING | 0x80);
    let mut second = Lane::connect(lane_port);
    let (opc, body) = second.reply();
    assert_eq!(opc, codec::ERROR);
    assert_eq!(body, b"ERR max number of clients reached");
    // The admitted connection is unaffected.
    assert_eq!(first.call(&Request::Ping(b"ok".to_vec())).1, b"ok");
}

/// Stores one full block of namespace `ns` over RESP; returns its id.
fn store_block(resp: &mut pion_tests::Client, ns: &str, tokens: &[u32]) -> BlockId {
    let le: Vec<u8> = tokens.iter().flat_map(|t| t.to_le_bytes()).collect();
    let reply = resp.cmd(&[
        b"KV.PUT".as_slice(),
        ns.as_bytes(),
        b"root",
        &le,
        &layer0(tokens),
        &[7u8; 16],
    ]);
    let RespValue::Bulk(_, Some(hex)) = reply else {
        panic!("KV.PUT: {}", reply.render());
    };
    BlockId::parse(&hex).expect("a block id")
}

#[test]
fn acl_refusals_are_the_same_over_the_lane_and_resp() {
    let (_dir, server, lane_port) = start(&[]);
    let mut admin = server.client();
    for ns in ["ns:a1", "ns:b1"] {
        assert!(resp_error(&admin.cmd(&["KV.REGISTER", ns, MANIFEST])).is_none());
    }
    let tokens: Vec<u32> = (1..=8).collect();
    let a_id = store_block(&mut admin, "ns:a1", &tokens);
    let b_id = store_block(&mut admin, "ns:b1", &tokens);
    for rule in [
        "ACL SETUSER nofetch on >pw ~* +@all -kv.get -kv.mget",
        "ACL SETUSER only_a on >pw ~ns:a* +@all",
    ] {
        let args: Vec<&str> = rule.split(' ').collect();
        assert_eq!(admin.cmd(&args), RespValue::Line(b'+', b"OK".to_vec()));
    }
    let le: Vec<u8> = tokens.iter().flat_map(|t| t.to_le_bytes()).collect();
    let fetch = |ns: &str, id: BlockId, batch: bool| Request::Fetch {
        ns: ns.into(),
        ids: vec![id.0],
        layers: None,
        batch,
    };
    // (user, what it asks, over RESP, over the lane, refused?)
    type Case<'a> = (&'a str, Vec<&'a [u8]>, Request, bool);
    let a_hex = a_id.hex();
    let b_hex = b_id.hex();
    let cases: Vec<Case> = vec![
        (
            "nofetch",
            vec![b"KV.GET", b"ns:a1", a_hex.as_bytes()],
            fetch("ns:a1", a_id, false),
            true,
        ),
        (
            "nofetch",
            vec![b"KV.MGET", b"ns:a1", a_hex.as_bytes()],
            fetch("ns:a1", a_id, true),
            true,
        ),
        (
            "nofetch",
            vec![b"KV.MATCH", b"ns:a1", &le],
            Request::Match {
                ns: "ns:a1".into(),
                tokens: tokens.clone(),
            },
            false,
        ),
        (
            "only_a",
            vec![b"KV.GET", b"ns:a1", a_hex.as_bytes()],
            fetch("ns:a1", a_id, false),
            false,
        ),
        (
            "only_a",
            vec![b"KV.GET", b"ns:b1", b_hex.as_bytes()],
            fetch("ns:b1", b_id, false),
            true,
        ),
        (
            "only_a",
            vec![b"KV.MGET", b"ns:b1", b_hex.as_bytes()],
            fetch("ns:b1", b_id, true),
            true,
        ),
        (
            "only_a",
            vec![b"KV.MATCH", b"ns:b1", &le],
            Request::Match {
                ns: "ns:b1".into(),
                tokens: tokens.clone(),
            },
            true,
        ),
        (
            "only_a",
            vec![b"KV.PUT", b"ns:b1", b"root", &le, &[0u8; 8]],
            Request::Put {
                ns: "ns:b1".into(),
                parent: 0,
                tokens: tokens.clone(),
                layers: vec![vec![0; 8].into()],
            },
            true,
        ),
    ];
    for (user, resp_args, lane_req, refused) in cases {
        let mut resp = server.client();
        assert_eq!(
            resp.cmd(&["AUTH", user, "pw"]),
            RespValue::Line(b'+', b"OK".to_vec())
        );
        let mut lane = Lane::connect(lane_port);
        assert_eq!(
            lane.call(&Request::Auth(
                Some(user.as_bytes().to_vec()),
                b"pw".to_vec()
            ))
            .0,
            op::AUTH | 0x80
        );
        let over_resp = resp_error(&resp.cmd(&resp_args));
        let over_lane = lane_error(&lane.call(&lane_req));
        let what = String::from_utf8_lossy(resp_args[0]);
        if refused {
            let text = over_resp.unwrap_or_else(|| panic!("{user}: {what} allowed over RESP"));
            assert!(text.starts_with("NOPERM"), "{user} {what}: {text}");
            assert_eq!(
                over_lane.as_deref(),
                Some(text.as_str()),
                "{user} {what} over the lane"
            );
        } else {
            assert_eq!(over_resp, None, "{user} {what} over RESP");
            assert_eq!(over_lane, None, "{user} {what} over the lane");
        }
    }
    // The refusals are in the ACL log, from both ports.
    let RespValue::Agg(_, Some(log)) = admin.cmd(&["ACL", "LOG"]) else {
        panic!("ACL LOG");
    };
    assert!(log.len() >= 2, "{} entries", log.len());
}

/// A lane store's layers travel beside its command: one refused before it runs (here
/// by ACL) leaves nothing behind for the next store on the connection, which stores
/// exactly its own bytes.
#[test]
fn a_refused_lane_store_leaves_no_layers_for_the_next() {
    let (_dir, server, lane_port) = start(&[]);
    let mut admin = server.client();
    for ns in ["ns:a1", "ns:b1"] {
        assert!(resp_error(&admin.cmd(&["KV.REGISTER", ns, MANIFEST])).is_none());
    }
    let args: Vec<&str> = "ACL SETUSER only_a on >pw ~ns:a* +@all"
        .split(' ')
        .collect();
    assert_eq!(admin.cmd(&args), RespValue::Line(b'+', b"OK".to_vec()));
    let mut lane = Lane::connect(lane_port);
    let auth = Request::Auth(Some(b"only_a".to_vec()), b"pw".to_vec());
    assert_eq!(lane.call(&auth).0, op::AUTH | 0x80);
    let tokens: Vec<u32> = (1..=8).collect();
    let put = |ns: &str, seed: u32| Request::Put {
        ns: ns.into(),
        parent: 0,
        tokens: tokens.clone(),
        layers: vec![
            layer0(&[seed]).repeat(8).into(),
            vec![seed as u8; 16].into(),
        ],
    };
    let refused = lane_error(&lane.call(&put("ns:b1", 1))).expect("refused by ACL");
    assert!(refused.starts_with("NOPERM"), "{refused}");
    let (opc, body) = lane.call(&put("ns:a1", 2));
    assert_eq!(opc, op::PUT | 0x80, "{}", String::from_utf8_lossy(&body));
    let id = BlockId(u128::from_le_bytes(
        body[..16].try_into().expect("16-byte id"),
    ));
    let RespValue::Agg(_, Some(got)) = admin.cmd(&["KV.GET", "ns:a1", &id.hex()]) else {
        panic!("KV.GET");
    };
    assert_eq!(got[1], RespValue::Bulk(b'$', Some(layer0(&[2]).repeat(8))));
    assert_eq!(got[2], RespValue::Bulk(b'$', Some(vec![2u8; 16])));
}

#[test]
fn lane_commands_are_counted_logged_and_monitored() {
    let (_dir, server, lane_port) = start(&[]);
    let mut resp = server.client();
    assert!(resp_error(&resp.cmd(&["KV.REGISTER", "m", MANIFEST])).is_none());
    assert!(resp_error(&resp.cmd(&["CONFIG", "SET", "slowlog-log-slower-than", "0"])).is_none());
    let mut monitor = server.client();
    assert_eq!(
        monitor.cmd(&["MONITOR"]),
        RespValue::Line(b'+', b"OK".to_vec())
    );
    let mut lane = Lane::connect(lane_port);
    let tokens: Vec<u32> = (1..=8).collect();
    let (opc, id) = lane.call(&Request::Put {
        ns: "m".into(),
        parent: 0,
        tokens: tokens.clone(),
        layers: vec![layer0(&tokens).into(), vec![1; 16].into()],
    });
    assert_eq!(opc, op::PUT | 0x80);
    let id = u128::from_le_bytes(id.try_into().expect("16 bytes"));
    assert_eq!(
        lane.call(&Request::Match {
            ns: "m".into(),
            tokens
        })
        .0,
        op::MATCH | 0x80
    );
    for batch in [false, true] {
        let (opc, _) = lane.call(&Request::Fetch {
            ns: "m".into(),
            ids: vec![id],
            layers: None,
            batch,
        });
        assert_ne!(opc, codec::ERROR);
    }
    let RespValue::Bulk(_, Some(stats)) = resp.cmd(&["INFO", "commandstats"]) else {
        panic!("INFO");
    };
    let stats = String::from_utf8_lossy(&stats).into_owned();
    for cmd in ["kv.put", "kv.match", "kv.get", "kv.mget"] {
        assert!(
            stats.contains(&format!("cmdstat_{cmd}:calls=1,")),
            "{cmd} not counted once:\n{stats}"
        );
    }
    let RespValue::Agg(_, Some(slow)) = resp.cmd(&["SLOWLOG", "GET", "100"]) else {
        panic!("SLOWLOG");
    };
    let logged: String = slow.iter().map(|e| e.render()).collect();
    for cmd in ["KV.PUT", "KV.MATCH", "KV.GET", "KV.MGET"] {
        assert!(logged.contains(cmd), "{cmd} not in the slow log");
    }
    // MONITOR shows each lane command as it ran (the block id as its 16 bytes).
    let mut seen = Vec::new();
    while seen.len() < 4 {
        let (line, _) = monitor.read_reply().expect("a monitor line");
        if let RespValue::Line(b'+', text) = line {
            let text = String::from_utf8_lossy(&text).into_owned();
            if let Some(cmd) = ["KV.PUT", "KV.MATCH", "KV.GET", "KV.MGET"]
                .iter()
                .find(|c| text.contains(&format!("\"{c}\"")))
            {
                seen.push(*cmd);
            }
        }
    }
    assert_eq!(seen, ["KV.PUT", "KV.MATCH", "KV.GET", "KV.MGET"]);
}

#[test]
fn before_auth_the_lane_takes_only_small_frames_and_idle_lanes_time_out() {
    let (_dir, server, lane_port) = start(&["--requirepass", "s3cret"]);
    // Frames declaring 900 MB bodies are refused at their header, and the
    // connections closed, before AUTH.
    let mut lanes: Vec<Lane> = (0..8).map(|_| Lane::connect(lane_port)).collect();
    for lane in &mut lanes {
        lane.send_raw(&codec::header(op::PUT, 900 << 20));
        let e = lane_error(&lane.reply()).expect("refused");
        assert!(e.contains("over the limit of 16384 bytes"), "{e}");
        let mut rest = Vec::new();
        assert_eq!(lane.0.read_to_end(&mut rest).expect("closed"), 0);
    }
    // After AUTH the usual limit applies.
    let mut lane = Lane::connect(lane_port);
    assert_eq!(
        lane.call(&Request::Auth(None, b"s3cret".to_vec())).0,
        op::AUTH | 0x80
    );
    let mut body = codec::header(op::PING, 20_000).to_vec();
    body.extend_from_slice(&[b'x'; 20_000]);
    lane.send_raw(&body);
    assert_eq!(lane.reply(), (op::PING | 0x80, vec![b'x'; 20_000]));
    // An idle lane connection is closed after `timeout`, like a RESP one.
    let mut resp = server.client();
    assert_eq!(
        resp.cmd(&["AUTH", "s3cret"]),
        RespValue::Line(b'+', b"OK".to_vec())
    );
    assert_eq!(
        resp.cmd(&["CONFIG", "SET", "timeout", "1"]),
        RespValue::Line(b'+', b"OK".to_vec())
    );
    let idle = Lane::connect(lane_port);
    let started = std::time::Instant::now();
    let mut rest = Vec::new();
    let mut stream = idle.0;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    assert_eq!(
        stream.read_to_end(&mut rest).expect("closed by the server"),
        0
    );
    assert!(started.elapsed() < Duration::from_secs(8));
}

#[test]
fn client_pause_holds_lane_stores_until_it_ends() {
    let (_dir, server, lane_port) = start(&[]);
    let mut resp = server.client();
    assert!(resp_error(&resp.cmd(&["KV.REGISTER", "m", MANIFEST])).is_none());
    let mut lane = Lane::connect(lane_port);
    assert_eq!(lane.call(&Request::Ping(vec![])).0, op::PING | 0x80);
    assert_eq!(
        resp.cmd(&["CLIENT", "PAUSE", "100000", "WRITE"]),
        RespValue::Line(b'+', b"OK".to_vec())
    );
    // A read passes; a store waits for the pause to end.
    let tokens: Vec<u32> = (1..=8).collect();
    assert_eq!(
        lane.call(&Request::Match {
            ns: "m".into(),
            tokens: tokens.clone()
        })
        .0,
        op::MATCH | 0x80
    );
    lane.send_raw(&encode_request(&Request::Put {
        ns: "m".into(),
        parent: 0,
        tokens: tokens.clone(),
        layers: vec![layer0(&tokens).into(), Vec::<u8>::new().into()],
    }));
    lane.0
        .set_read_timeout(Some(Duration::from_millis(300)))
        .expect("timeout");
    let mut one = [0u8; 1];
    assert!(
        lane.0.read(&mut one).is_err(),
        "the store ran during the pause"
    );
    assert_eq!(
        resp.cmd(&["CLIENT", "UNPAUSE"]),
        RespValue::Line(b'+', b"OK".to_vec())
    );
    lane.0
        .set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    assert_eq!(lane.reply().0, op::PUT | 0x80);
}

#[test]
fn a_failing_log_refuses_lane_stores_and_holds_their_replies() {
    let server = pion_tests::PionServer::start(1);
    let mut resp = pion_tests::Client::connect(server.port).expect("connect");
    assert!(resp_error(&resp.cmd(&["KV.REGISTER", "m", MANIFEST])).is_none());
    let mut lane = Lane::connect(server.lane_port);
    let put = |first: u32| {
        let tokens: Vec<u32> = (first..first + 8).collect();
        Request::Put {
            ns: "m".into(),
            parent: 0,
            tokens: tokens.clone(),
            layers: vec![layer0(&tokens).into(), Vec::<u8>::new().into()],
        }
    };
    // The log's disk fails (EIO); the block files' does not.
    server.faults.only_paths_containing("wal-");
    server.faults.fail_all(Some(5));
    // The store that meets the failure: in memory, but its reply waits for the log.
    lane.send_raw(&encode_request(&put(1)));
    lane.0
        .set_read_timeout(Some(Duration::from_millis(400)))
        .expect("timeout");
    let mut one = [0u8; 1];
    assert!(
        lane.0.read(&mut one).is_err(),
        "a store was acknowledged without its log record"
    );
    // Further stores are refused with MISCONF over the lane as over RESP.
    let mut other = Lane::connect(server.lane_port);
    let e = lane_error(&other.call(&put(100))).expect("refused");
    assert!(e.starts_with("MISCONF"), "{e}");
    let reply = resp.cmd(&["KV.PUT", "m", "root", "\x01\0\0\0", "x", ""]);
    let over_resp = resp_error(&reply);
    assert!(
        over_resp.as_ref().is_some_and(|t| t.starts_with("MISCONF")),
        "{over_resp:?}"
    );
    // Reads go on.
    assert_eq!(
        other
            .call(&Request::Match {
                ns: "m".into(),
                tokens: vec![1]
            })
            .0,
        op::MATCH | 0x80
    );
    server.faults.fail_all(None);
    lane.0
        .set_read_timeout(Some(Duration::from_secs(20)))
        .expect("timeout");
    let (opc, id) = lane.reply();
    assert_eq!(
        opc,
        op::PUT | 0x80,
        "the held reply goes out once the server healed"
    );
    // What it stored is there, and stores are accepted again.
    let id = u128::from_le_bytes(id.try_into().expect("16 bytes"));
    let (opc, _) = other.call(&Request::Fetch {
        ns: "m".into(),
        ids: vec![id],
        layers: None,
        batch: false,
    });
    assert_eq!(opc, op::FETCH | 0x80);
    assert_eq!(other.call(&put(100)).0, op::PUT | 0x80);
}
