//! Fuzzes the bitmap commands' argument languages: token streams built from the input
//! (BITFIELD subcommands, `i`/`u` types of any width, plain, `#N`, negative, huge and
//! near-limit offsets, extreme values, junk) run as BITFIELD, BITFIELD_RO, SETBIT,
//! GETBIT, BITCOUNT, BITPOS and BITOP against an engine. No input may panic, and a
//! BITFIELD of GETs must read what BITFIELD_RO reads.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pion_core::{Engine, EngineOptions};

/// Values at the edges of the field widths and of `i64`.
const EDGES: &[&str] = &[
    "0",
    "-1",
    "1",
    "127",
    "-128",
    "255",
    "9223372036854775807",
    "-9223372036854775808",
    "4611686018427387904",
    "9223372036854775808",
    "18446744073709551615",
];

/// One argument made from the input's next bytes.
fn token(first: u8, rest: &mut impl Iterator<Item = u8>) -> Vec<u8> {
    let mut next = || rest.next().unwrap_or(0);
    match first % 16 {
        0 => b"GET".to_vec(),
        1 => b"SET".to_vec(),
        2 => b"INCRBY".to_vec(),
        3 => b"OVERFLOW".to_vec(),
        4 => b"WRAP".to_vec(),
        5 => b"SAT".to_vec(),
        6 => b"FAIL".to_vec(),
        7 => {
            let b = next();
            let sign = if b & 0x80 != 0 { "i" } else { "u" };
            format!("{sign}{}", b % 66).into_bytes()
        }
        8 => next().to_string().into_bytes(),
        9 => format!("#{}", next() % 12).into_bytes(),
        10 => {
            let bytes: [u8; 8] = std::array::from_fn(|_| next());
            i64::from_le_bytes(bytes).to_string().into_bytes()
        }
        11 => EDGES[usize::from(next()) % EDGES.len()].as_bytes().to_vec(),
        // Offsets around proto-max-bulk-len (set to 1 MiB: 8,388,608 bits).
        12 => (8_388_600 + u32::from(next() % 16))
            .to_string()
            .into_bytes(),
        13 => vec![next(), next()],
        14 => (-i64::from(next())).to_string().into_bytes(),
        _ => {
            [b"BIT", &b"BYTE"[..], b"AND", b"OR", b"XOR", b"NOT"][usize::from(next()) % 6].to_vec()
        }
    }
}

fuzz_target!(|data: &[u8]| {
    thread_local! {
        static ENGINE: Engine = {
            let e = Engine::in_memory(EngineOptions {
                disable_active_expiry: true,
                ..EngineOptions::default()
            });
            // Keeps every write under a megabyte.
            let _ = e.config().set_many(&[("proto-max-bulk-len", "1mb")]);
            e
        };
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
    ENGINE.with(|engine| {
        let mut session = engine.session();
        if head & 0x80 != 0 {
            let seed: Vec<u8> = rest.iter().take(40).copied().collect();
            let _ = session.execute_argv(&[b"SET".to_vec(), key.clone(), seed]);
        }
        for cmd in ["BITFIELD", "SETBIT", "GETBIT", "BITCOUNT", "BITPOS"] {
            let mut argv = vec![cmd.as_bytes().to_vec(), key.clone()];
            argv.extend(tokens.iter().cloned());
            let _ = session.execute_argv(&argv);
        }
        let mut bitop = vec![b"BITOP".to_vec()];
        bitop.extend(tokens.iter().take(5).cloned());
        let _ = session.execute_argv(&bitop);
        // Only GETs: BITFIELD and BITFIELD_RO read the same.
        let gets: Vec<Vec<u8>> = tokens
            .chunks(2)
            .filter(|pair| pair.len() == 2)
            .flat_map(|pair| [b"GET".to_vec(), pair[0].clone(), pair[1].clone()])
            .collect();
        let mut rw = vec![b"BITFIELD".to_vec(), key.clone()];
        rw.extend(gets.iter().cloned());
        let mut ro = vec![b"BITFIELD_RO".to_vec(), key.clone()];
        ro.extend(gets);
        assert_eq!(session.execute_argv(&rw), session.execute_argv(&ro));
        if head % 8 == 0 {
            let _ = session.execute_argv(&[b"FLUSHALL".to_vec()]);
        }
    });
});
