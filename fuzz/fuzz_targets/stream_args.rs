//! Fuzzes the stream commands' argument and id parsers: token streams built from
//! the input (every XADD/XTRIM/XREAD/XREADGROUP/XCLAIM/XAUTOCLAIM/XPENDING/XINFO
//! keyword, `=` and `~`, ids at and past the limits, `-`, `+`, `$`, `>`, `(`
//! bounds, `ms-*`, counts, junk) run as every stream command against an engine
//! holding a stream with a consumer group and pending entries. No input may panic,
//! and an id the parser accepts prints back as the id it parsed.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pion_core::command::handlers::streams::parse::strict_id;
use pion_core::{Engine, EngineOptions};

const WORDS: &[&str] = &[
    "MAXLEN", "MINID", "LIMIT", "NOMKSTREAM", "=", "~", "*", "COUNT", "BLOCK", "STREAMS",
    "GROUP", "NOACK", "IDLE", "TIME", "RETRYCOUNT", "FORCE", "JUSTID", "LASTID", "MKSTREAM",
    "ENTRIESREAD", "ENTRIESADDED", "MAXDELETEDID", "FULL", "$", ">", "-", "+", "g", "c", "f",
];

const IDS: &[&str] = &[
    "0", "0-0", "0-1", "1", "1-*", "5-5", "(5-5", "(0-0", "(-", "(+",
    "18446744073709551615", "18446744073709551615-18446744073709551615",
    "(18446744073709551615-18446744073709551615", "18446744073709551616", "1-18446744073709551616",
    "-1", "1--1", "1-2-3", " 1", "", "9223372036854775807", "-9223372036854775808",
];

/// One argument made from the input's next bytes.
fn token(first: u8, rest: &mut impl Iterator<Item = u8>) -> Vec<u8> {
    let mut next = || rest.next().unwrap_or(0);
    match first % 6 {
        0 | 1 => WORDS[usize::from(next()) % WORDS.len()].as_bytes().to_vec(),
        2 | 3 => IDS[usize::from(next()) % IDS.len()].as_bytes().to_vec(),
        4 => format!("{}-{}", next() % 12, next() % 4).into_bytes(),
        _ => vec![next(), next()],
    }
}

fuzz_target!(|data: &[u8]| {
    thread_local! {
        static ENGINE: Engine = Engine::in_memory(EngineOptions {
            disable_active_expiry: true,
            ..EngineOptions::default()
        });
    }
    let Some((&head, rest)) = data.split_first() else {
        return;
    };
    if let Ok(id) = strict_id(rest) {
        let printed = id.to_string();
        assert_eq!(strict_id(printed.as_bytes()).ok(), Some(id));
    }
    let mut bytes = rest.iter().copied();
    let mut tokens = Vec::new();
    while let Some(b) = bytes.next() {
        tokens.push(token(b, &mut bytes));
    }
    let key = format!("s{}", head % 3).into_bytes();
    let with = |words: &[&[u8]]| -> Vec<Vec<u8>> {
        let mut v: Vec<Vec<u8>> = words.iter().map(|w| w.to_vec()).collect();
        v.extend(tokens.iter().cloned());
        v
    };
    ENGINE.with(|engine| {
        let mut session = engine.session();
        if head & 0x80 != 0 {
            for setup in [
                &[&b"XADD"[..], &key, b"1-1", b"f", b"v"][..],
                &[b"XADD", &key, b"2-0", b"f", b"v", b"g", b"w"],
                &[b"XADD", &key, b"5-5", b"f", b"v"],
                &[b"XGROUP", b"CREATE", &key, b"g", b"0"],
                &[b"XREADGROUP", b"GROUP", b"g", b"c", b"COUNT", b"2", b"STREAMS", &key, b">"],
            ] {
                let _ = session.execute_argv(&setup.iter().map(|w| w.to_vec()).collect::<Vec<_>>());
            }
        }
        for prefix in [
            &[&b"XADD"[..], &key][..],
            &[b"XTRIM", &key],
            &[b"XRANGE", &key],
            &[b"XREVRANGE", &key],
            &[b"XDEL", &key],
            &[b"XSETID", &key],
            &[b"XREAD"],
            &[b"XREADGROUP"],
            &[b"XGROUP", b"CREATE", &key],
            &[b"XGROUP", b"SETID", &key],
            &[b"XGROUP", b"CREATECONSUMER", &key],
            &[b"XGROUP", b"DELCONSUMER", &key],
            &[b"XGROUP", b"DESTROY", &key],
            &[b"XACK", &key],
            &[b"XPENDING", &key],
            &[b"XCLAIM", &key],
            &[b"XAUTOCLAIM", &key],
            &[b"XINFO", b"STREAM", &key],
            &[b"XINFO", b"CONSUMERS", &key],
        ] {
            let _ = session.execute_argv(&with(prefix));
        }
        if head % 8 == 0 {
            let _ = session.execute_argv(&[b"FLUSHALL".to_vec()]);
        }
    });
});
