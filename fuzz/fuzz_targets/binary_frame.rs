//! Fuzzes the binary lane's parser: any header is accepted or refused without a panic,
//! and any body under any opcode is parsed or refused without a panic; what parses
//! encodes back to the same frame. The connection's reader takes any byte stream as
//! its input, under a small and a large body limit, without a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pion_server::binary::codec::{encode_request, parse_header, parse_request, HEADER_LEN};
use pion_server::binary::{next_request, Next};

fuzz_target!(|data: &[u8]| {
    for limit in [16, 1 << 20] {
        if let Next::Call { used, .. } | Next::Refused { used, .. } = next_request(data, limit) {
            assert!(used <= data.len());
        }
    }
    if data.len() >= HEADER_LEN {
        let mut h = [0u8; HEADER_LEN];
        h.copy_from_slice(&data[..HEADER_LEN]);
        let _ = parse_header(&h);
    }
    // The first byte picks the opcode (a few values map onto the real ones, so the
    // structured bodies get most of the runs); the rest is the body.
    let Some((&pick, body)) = data.split_first() else { return };
    let opcode = match pick % 8 {
        0 => 0x01,
        1 => 0x02,
        2 => 0x10,
        3 => 0x11,
        4 => 0x12,
        5 => 0x13,
        _ => pick,
    };
    if let Ok(req) = parse_request(opcode, body) {
        let frame = encode_request(&req);
        assert_eq!(&frame[HEADER_LEN..], body, "re-encoding gives the same body");
    }
});
