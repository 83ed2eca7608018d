//! Fuzzes `FT.HYBRID`'s arguments (and `FT.AGGREGATE`'s, whose steps it shares) against
//! an engine holding a small text-and-vector index: the input becomes arguments made
//! of the commands' keywords, numbers, field names and junk. No input may panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pion_core::{Engine, EngineOptions};

const WORDS: &[&str] = &[
    "SEARCH", "VSIM", "@v", "$q", "q", "KNN", "RANGE", "K", "EF_RUNTIME", "RADIUS",
    "EPSILON", "FILTER", "POLICY", "ADHOC", "BATCHES", "BATCH_SIZE", "YIELD_SCORE_AS",
    "COMBINE", "RRF", "LINEAR", "ALPHA", "BETA", "WINDOW", "CONSTANT", "SCORER", "BM25STD",
    "BM25STD.TANH", "BM25STD.NORM", "TFIDF", "LOAD", "*", "@__key", "@__score", "@t",
    "@g", "AS", "GROUPBY", "REDUCE", "COUNT", "SUM", "TOLIST", "APPLY", "@__score*2",
    "SORTBY", "ASC", "DESC", "NOSORT", "LIMIT", "PARAMS", "TIMEOUT", "DIALECT", "FORMAT",
    "STRING", "WITHCURSOR", "hello", "@t:hello", "@g:{a}", "-1", "0", "1", "2", "4", "6",
    "1e400", "nan", "99999999999999999999", "@v:[VECTOR_RANGE 1 $q]", "(", "$",
];

/// One argument made from the input's next bytes.
fn token(first: u8, rest: &mut impl Iterator<Item = u8>) -> Vec<u8> {
    let mut next = || rest.next().unwrap_or(0);
    match first % 4 {
        0..=2 => WORDS[usize::from(next()) % WORDS.len()].as_bytes().to_vec(),
        _ => {
            let n = usize::from(next() % 12);
            (0..n).map(|_| next()).collect()
        }
    }
}

fn setup(engine: &Engine) {
    let mut session = engine.session();
    let create: Vec<Vec<u8>> = [
        "FT.CREATE", "idx", "SCHEMA", "t", "TEXT", "g", "TAG", "v", "VECTOR", "FLAT", "6",
        "TYPE", "FLOAT32", "DIM", "2", "DISTANCE_METRIC", "L2",
    ]
    .iter()
    .map(|w| w.as_bytes().to_vec())
    .collect();
    let _ = session.execute_argv(&create);
    for (i, text) in ["hello world", "hello there", "other words"].iter().enumerate() {
        let v: Vec<u8> = [i as f32, 1.0 - i as f32]
            .iter()
            .flat_map(|f| f.to_le_bytes())
            .collect();
        let _ = session.execute_argv(&[
            b"HSET".to_vec(),
            format!("d:{i}").into_bytes(),
            b"t".to_vec(),
            text.as_bytes().to_vec(),
            b"g".to_vec(),
            b"a".to_vec(),
            b"v".to_vec(),
            v,
        ]);
    }
}

fuzz_target!(|data: &[u8]| {
    thread_local! {
        static ENGINE: Engine = {
            let e = Engine::in_memory(EngineOptions {
                disable_active_expiry: true,
                ..EngineOptions::default()
            });
            setup(&e);
            e
        };
    }
    let mut bytes = data.iter().copied();
    let mut tokens = Vec::new();
    while let Some(b) = bytes.next() {
        tokens.push(token(b, &mut bytes));
    }
    ENGINE.with(|engine| {
        let mut session = engine.session();
        let vector: Vec<u8> = [0.5f32, 0.5].iter().flat_map(|f| f.to_le_bytes()).collect();
        let mut argv = vec![b"FT.HYBRID".to_vec(), b"idx".to_vec()];
        argv.extend(tokens.iter().cloned());
        argv.extend([b"PARAMS".to_vec(), b"2".to_vec(), b"q".to_vec(), vector]);
        let _ = session.execute_argv(&argv);
        argv.truncate(2 + tokens.len());
        let _ = session.execute_argv(&argv);
        let mut aggregate = vec![b"FT.AGGREGATE".to_vec(), b"idx".to_vec()];
        aggregate.extend(tokens);
        let _ = session.execute_argv(&aggregate);
    });
});
