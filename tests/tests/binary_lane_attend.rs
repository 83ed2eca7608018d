//! `ATTEND` over the binary lane against a real `pion-server`: the same answer bytes as
//! `ATTEND.QUERY` over RESP, the same errors, and the same ACL refusals.

use pion_server::binary::codec::{self, op, Request};
use pion_tests::lane::{lane_error, resp_error, start, Lane};
use pion_tests::RespValue;

const MANIFEST: &str = r#"{"model":"lane","block_tokens":8,"dtype":"f16","layers":[{"kind":"attention","kv_heads":2,"head_dim":32},{"kind":"recurrent","state_bytes":16}]}"#;

/// f16 K/V of `tokens` for the attention layer of [`MANIFEST`]: values in [-1, 1].
fn sane_layer0(tokens: &[u32]) -> Vec<u8> {
    (0..2 * 2 * tokens.len() * 32)
        .flat_map(|i| {
            let x = ((i as u32).wrapping_mul(2654435761) ^ tokens[0]) % 2001;
            half::f16::from_f32(x as f32 / 1000.0 - 1.0).to_le_bytes()
        })
        .collect()
}

#[test]
fn attend_over_the_lane_is_attend_query_over_resp() {
    let (_dir, server, lane_port) = start(&[]);
    let mut resp = server.client();
    assert!(resp_error(&resp.cmd(&["KV.REGISTER", "att", MANIFEST])).is_none());
    let mut parent = "root".to_string();
    let mut hex = Vec::new();
    for chunk in (0..24u32).collect::<Vec<_>>().chunks(8) {
        let le: Vec<u8> = chunk.iter().flat_map(|t| t.to_le_bytes()).collect();
        let reply = resp.cmd(&[
            b"KV.PUT".as_slice(),
            b"att",
            parent.as_bytes(),
            &le,
            &sane_layer0(chunk),
            &[7u8; 16],
        ]);
        let RespValue::Bulk(_, Some(id)) = reply else {
            panic!("KV.PUT: {}", reply.render());
        };
        parent = String::from_utf8(id).expect("hex");
        hex.push(parent.clone());
    }
    let mut view: Vec<&str> = vec!["ATTEND.VIEW", "att", "v", "BLOCKS"];
    view.extend(hex.iter().map(String::as_str));
    assert_eq!(resp.cmd(&view).render(), "*[:24, :3]");
    let q: Vec<f32> = (0..4 * 32)
        .map(|i| ((i * 7) % 13) as f32 / 6.0 - 1.0)
        .collect();
    let q_bytes: Vec<u8> = q.iter().flat_map(|x| x.to_le_bytes()).collect();
    let over_resp = resp.cmd(&[
        b"ATTEND.QUERY".as_slice(),
        b"att",
        b"v",
        b"LAYER",
        b"0",
        b"Q",
        &q_bytes,
        b"SPARSE",
        b"16",
    ]);
    let RespValue::Agg(b'*', Some(layers)) = &over_resp else {
        panic!("ATTEND.QUERY: {}", over_resp.render());
    };
    let RespValue::Agg(b'*', Some(parts)) = &layers[0] else {
        panic!("one layer");
    };
    let (RespValue::Bulk(_, Some(out)), RespValue::Bulk(_, Some(lse))) = (&parts[0], &parts[1])
    else {
        panic!("output and lse");
    };
    let mut lane = Lane::connect(lane_port);
    let attend = |view: &str, budget: Option<u32>, layer: u32| {
        Request::Attend(codec::Attend {
            ns: "att".into(),
            view: view.as_bytes().to_vec(),
            positions: 1,
            scale: None,
            budget,
            layers: vec![codec::LayerQueries {
                layer,
                queries: q.clone(),
            }],
        })
    };
    let (opc, body) = lane.call(&attend("v", Some(16), 0));
    assert_eq!(opc, op::ATTEND | 0x80, "{}", String::from_utf8_lossy(&body));
    let u32_at =
        |at: usize| u32::from_le_bytes([body[at], body[at + 1], body[at + 2], body[at + 3]]);
    let u64_at = |at: usize| u64::from_le_bytes(body[at..at + 8].try_into().expect("8 bytes"));
    assert_eq!(
        (u32_at(0), u32_at(4), u32_at(8)),
        (1, 4, 32),
        "layers, rows, head_dim"
    );
    // 16 tokens per KV head: the first block and the recent one.
    assert_eq!((u64_at(12), u64_at(20)), (16, 4));
    assert_eq!(
        &body[28..28 + 4 * 4 * 32],
        out.as_slice(),
        "the same output bytes"
    );
    assert_eq!(
        &body[28 + 4 * 4 * 32..],
        lse.as_slice(),
        "the same LSE bytes"
    );
    // Errors are RESP's, and the connection goes on.
    for (req, want) in [
        (attend("nope", None, 0), "no attention view"),
        (attend("v", None, 1), "recurrent"),
    ] {
        let reply = lane.call(&req);
        let text = lane_error(&reply).expect("an error");
        assert!(text.contains(want), "{text}");
    }
    let (opc, _) = lane.call(&attend("v", None, 0));
    assert_eq!(opc, op::ATTEND | 0x80);
    // A user who may not read the namespace is refused on the lane as over RESP.
    assert_eq!(
        resp.cmd(&[
            "ACL",
            "SETUSER",
            "other",
            "on",
            ">pw",
            "~elsewhere*",
            "+@all"
        ]),
        RespValue::Line(b'+', b"OK".to_vec())
    );
    let mut other_lane = Lane::connect(lane_port);
    let (opc, _) = other_lane.call(&Request::Auth(Some(b"other".to_vec()), b"pw".to_vec()));
    assert_eq!(opc, op::AUTH | 0x80);
    let text = lane_error(&other_lane.call(&attend("v", None, 0))).expect("refused");
    assert!(text.starts_with("NOPERM"), "{text}");
}
