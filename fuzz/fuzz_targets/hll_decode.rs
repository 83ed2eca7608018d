//! Fuzzes the HyperLogLog representation: arbitrary bytes behind a valid (or nearly
//! valid) `HYLL` header, stored with SET, then read and edited by PFCOUNT (one key
//! and several), PFADD, PFMERGE (as destination and as source) and every PFDEBUG
//! subcommand, under small and default `hll-sparse-max-bytes`. No input may panic;
//! every reply is a value or one of Redis's HyperLogLog errors, and a value that PFCOUNT accepts
//! must still be a HyperLogLog afterwards.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pion_core::reply::Reply;
use pion_core::{Engine, EngineOptions};

fuzz_target!(|data: &[u8]| {
    thread_local! {
        static ENGINE: Engine = Engine::in_memory(EngineOptions {
            disable_active_expiry: true,
            ..EngineOptions::default()
        });
    }
    let Some((&head, body)) = data.split_first() else {
        return;
    };
    // The header: the magic kept (mostly), the encoding and cache bytes from the input.
    let mut value = if head & 0x40 == 0 {
        b"HYLL".to_vec()
    } else {
        Vec::new()
    };
    value.extend_from_slice(body);
    if head & 0x20 != 0 && value.len() > 4 {
        // Sparse and dense in turn, whatever the input said.
        value[4] = head & 1;
    }
    let limit = ["3000", "0", "25", "300"][usize::from(head >> 1) % 4];
    ENGINE.with(|engine| {
        let _ = engine.config().set_many(&[("hll-sparse-max-bytes", limit)]);
        let mut session = engine.session();
        let argv = |words: &[&[u8]]| words.iter().map(|w| w.to_vec()).collect::<Vec<_>>();
        let _ = session.execute_argv(&argv(&[b"SET", b"h", &value]));
        let _ = session.execute_argv(&argv(&[b"SET", b"g", &value]));
        let counted = session.execute_argv(&argv(&[b"PFCOUNT", b"h"]));
        for cmd in [
            &[&b"PFCOUNT"[..], b"h", b"g", b"missing"][..],
            &[b"PFADD", b"h", b"a", b"b", b"c", &body[..body.len().min(8)]],
            &[b"PFDEBUG", b"DECODE", b"h"],
            &[b"PFDEBUG", b"ENCODING", b"h"],
            &[b"PFMERGE", b"m", b"h", b"g"],
            &[b"PFMERGE", b"g", b"m"],
            &[b"PFDEBUG", b"GETREG", b"g"],
            &[b"PFDEBUG", b"TODENSE", b"h"],
            &[b"PFADD", b"h", b"zz"],
            &[b"PFCOUNT", b"h"],
            &[b"PFCOUNT", b"m"],
        ] {
            let reply = session.execute_argv(&argv(cmd));
            if let Reply::Error(e) = &reply {
                let text = e.to_string();
                let known = text.starts_with("WRONGTYPE")
                    || text.starts_with("INVALIDOBJ")
                    || text == "ERR HLL encoding is not sparse";
                assert!(known, "{cmd:?}: {text}");
            }
        }
        if matches!(counted, Reply::Integer(_)) {
            let again = session.execute_argv(&argv(&[b"PFDEBUG", b"ENCODING", b"h"]));
            assert!(matches!(again, Reply::Status(_)), "{again:?}");
        }
        let _ = session.execute_argv(&argv(&[b"FLUSHALL"]));
    });
});
