//! Fuzzes the geo commands' argument parser: token streams built from the input
//! (every GEOSEARCH and GEORADIUS keyword, units in any case, coordinates at and
//! past the limits, NaN, infinities, huge and negative radii, counts, members,
//! junk) run as GEOADD, GEOPOS, GEODIST, GEOHASH, the GEORADIUS family, GEOSEARCH
//! and GEOSEARCHSTORE against an engine holding points at the poles and the
//! antimeridian. No input may panic, and GEORADIUS without STORE must reply what
//! GEORADIUS_RO replies.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pion_core::{Engine, EngineOptions};

const WORDS: &[&str] = &[
    "FROMMEMBER",
    "FROMLONLAT",
    "BYRADIUS",
    "BYBOX",
    "ASC",
    "DESC",
    "COUNT",
    "ANY",
    "WITHDIST",
    "WITHCOORD",
    "WITHHASH",
    "STORE",
    "STOREDIST",
    "NX",
    "XX",
    "CH",
    "m",
    "KM",
    "ft",
    "Mi",
    "yd",
];

const NUMBERS: &[&str] = &[
    "0",
    "-0",
    "1",
    "-1",
    "180",
    "-180",
    "180.0000001",
    "85.05112878",
    "-85.05112878",
    "85.05112879",
    "90",
    "1e308",
    "-1e308",
    "inf",
    "-inf",
    "nan",
    "1e-320",
    "20037726.37",
    "9223372036854775807",
    "-9223372036854775808",
    "0x10",
    " 1",
    "",
];

/// One argument made from the input's next bytes.
fn token(first: u8, rest: &mut impl Iterator<Item = u8>) -> Vec<u8> {
    let mut next = || rest.next().unwrap_or(0);
    match first % 8 {
        0 | 1 => WORDS[usize::from(next()) % WORDS.len()].as_bytes().to_vec(),
        2 => NUMBERS[usize::from(next()) % NUMBERS.len()]
            .as_bytes()
            .to_vec(),
        3 => format!("{:.4}", f64::from(next() as i8) * 1.4).into_bytes(),
        4 => {
            let bytes: [u8; 8] = std::array::from_fn(|_| next());
            f64::from_le_bytes(bytes).to_string().into_bytes()
        }
        5 => format!("m{}", next() % 6).into_bytes(),
        6 => format!("k{}", next() % 3).into_bytes(),
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
    let mut bytes = rest.iter().copied();
    let mut tokens = Vec::new();
    while let Some(b) = bytes.next() {
        tokens.push(token(b, &mut bytes));
    }
    let key = format!("k{}", head % 3).into_bytes();
    let argv = |words: &[&[u8]]| -> Vec<Vec<u8>> {
        let mut v: Vec<Vec<u8>> = words.iter().map(|w| w.to_vec()).collect();
        v.extend(tokens.iter().cloned());
        v
    };
    ENGINE.with(|engine| {
        let mut session = engine.session();
        if head & 0x80 != 0 {
            let points: &[&[u8]] = &[
                b"GEOADD",
                &key,
                b"180",
                b"85.05112878",
                b"m0",
                b"-180",
                b"-85.05112878",
                b"m1",
                b"0",
                b"0",
                b"m2",
                b"179.99",
                b"-85",
                b"m3",
                b"13.36",
                b"38.11",
                b"m4",
            ];
            let _ = session.execute_argv(&points.iter().map(|w| w.to_vec()).collect::<Vec<_>>());
        }
        if head & 0x40 != 0 {
            let _ = session.execute_argv(&[
                b"ZADD".to_vec(),
                key.clone(),
                b"1e300".to_vec(),
                b"m5".to_vec(),
            ]);
        }
        for cmd in [
            &b"GEOADD"[..],
            b"GEOPOS",
            b"GEODIST",
            b"GEOHASH",
            b"GEORADIUSBYMEMBER",
            b"GEORADIUSBYMEMBER_RO",
            b"GEOSEARCH",
        ] {
            let _ = session.execute_argv(&argv(&[cmd, &key]));
        }
        let _ = session.execute_argv(&argv(&[b"GEOSEARCHSTORE", b"dst", &key]));
        let radius = argv(&[b"GEORADIUS", &key]);
        let stores = tokens
            .iter()
            .any(|t| t.eq_ignore_ascii_case(b"store") || t.eq_ignore_ascii_case(b"storedist"));
        let rw = session.execute_argv(&radius);
        // Past the arity check, the two parse and search alike.
        if tokens.len() >= 4 && !stores {
            let ro = session.execute_argv(&argv(&[b"GEORADIUS_RO", &key]));
            assert_eq!(rw, ro);
        }
        if head % 8 == 0 {
            let _ = session.execute_argv(&[b"FLUSHALL".to_vec()]);
        }
    });
});
