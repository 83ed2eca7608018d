//! The binary lane (port + 1) against a real `pion-server`: what it stores and fetches
//! is byte for byte what RESP's `KV.*` commands store and fetch, bad frames get clear
//! errors without disturbing anything stored, and a password applies to it too.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use pion_core::prefix::BlockId;
use pion_server::binary::codec::{self, encode_request, op, Request, HEADER_LEN};
use pion_tests::process::{temp_dir, PionProcess};
use pion_tests::RespValue;

const MANIFEST: &str = r#"{"model":"lane","block_tokens":8,"dtype":"f16","layers":[{"kind":"attention","kv_heads":2,"head_dim":32},{"kind":"recurrent","state_bytes":16}]}"#;

struct Lane(TcpStream);

impl Lane {
    fn connect(port: u16) -> Lane {
        let s = TcpStream::connect(("127.0.0.1", port)).expect("connect to the binary lane");
        s.set_read_timeout(Some(Duration::from_secs(20)))
            .expect("timeout");
        Lane(s)
    }

    fn send_raw(&mut self, bytes: &[u8]) {
        self.0.write_all(bytes).expect("send");
    }

    fn reply(&mut self) -> (u8, Vec<u8>) {
        let mut h = [0u8; HEADER_LEN];
        self.0.read_exact(&mut h).expect("reply header");
        let hd = codec::parse_header(&h).expect("reply magic");
        let mut body = vec![0u8; hd.len as usize];
        self.0.read_exact(&mut body).expect("reply body");
        (hd.opcode, body)
    }

    fn call(&mut self, req: &Request) -> (u8, Vec<u8>) {
        self.send_raw(&encode_request(req));
        self.reply()
    }
}

fn layer0(tokens: &[u32]) -> Vec<u8> {
    let n = 2 * 2 * tokens.len() * 32 * 2;
    (0..n)
        .map(|i| (i as u32 ^ tokens[0].wrapping_mul(2654435761)) as u8)
        .collect()
}

fn start(extra: &[&str]) -> (pion_tests::process::TempDir, PionProcess, u16) {
    let dir = temp_dir("binary-lane");
    let lane_port = pion_tests::free_port();
    let port_arg = lane_port.to_string();
    let mut args = vec!["--kvcache-port", port_arg.as_str()];
    args.extend_from_slice(extra);
    let server = PionProcess::start(dir.path(), &args);
    (dir, server, lane_port)
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
            layers: vec![layer0(chunk), state],
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
        layers: vec![vec![0; 10]],
    }));
    assert!(e.contains("has 2 layers"), "{e}");
    let e = err(lane.call(&Request::Put {
        ns: "m".into(),
        parent: 0,
        tokens: vec![1; 8],
        layers: vec![vec![0; 10], vec![]],
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
    // One RESP client and one lane client fill the limit.
    let _resp = server.client();
    let mut first = Lane::connect(lane_port);
    assert_eq!(first.call(&Request::Ping(vec![])).0, op::PING | 0x80);
    let mut second = Lane::connect(lane_port);
    let (opc, body) = second.reply();
    assert_eq!(opc, codec::ERROR);
    assert_eq!(body, b"ERR max number of clients reached");
    // The admitted connection is unaffected.
    assert_eq!(first.call(&Request::Ping(b"ok".to_vec())).1, b"ok");
}
