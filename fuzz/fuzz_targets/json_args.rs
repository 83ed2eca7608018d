//! Fuzzes the JSON commands: the input's first part is a path (JSONPath or legacy,
//! filters and all) parsed and evaluated over a fixed document; the rest becomes
//! JSON.SET, JSON.MERGE, JSON.ARRINSERT and JSON.GET arguments (documents, paths,
//! options, junk) run against an engine holding a document. No input may panic,
//! and a path that parses must evaluate to locations that exist.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pion_core::value::json::{select, Path};
use pion_core::{Engine, EngineOptions};

const DOC: &str = r#"{"a":[1,2.5,{"b":"x","c":[true,null]}],"s":"str","o":{"a":{"a":1}},"n":-3}"#;

const WORDS: &[&str] = &[
    "$", ".", "$..*", "$.a[*]", "$..a", "a", ".o.a", "$.a[-1]", "$.a[0:2]", "$['s','n']",
    "$.a[?(@.b == 'x')]", "NX", "XX", "INDENT", "NEWLINE", "SPACE", "null", "{}", "[]",
    "{\"z\":null}", "1e400", "-0", "\"\\ud800\"", "[[[[[[", "0", "-1", "99999999999999999999",
];

/// One argument made from the input's next bytes.
fn token(first: u8, rest: &mut impl Iterator<Item = u8>) -> Vec<u8> {
    let mut next = || rest.next().unwrap_or(0);
    match first % 4 {
        0 | 1 => WORDS[usize::from(next()) % WORDS.len()].as_bytes().to_vec(),
        2 => {
            let n = usize::from(next() % 12);
            (0..n).map(|_| next()).collect()
        }
        _ => format!("$.a[{}]", next() as i8).into_bytes(),
    }
}

fuzz_target!(|data: &[u8]| {
    thread_local! {
        static ENGINE: Engine = Engine::in_memory(EngineOptions {
            disable_active_expiry: true,
            ..EngineOptions::default()
        });
    }
    let split = data.iter().position(|&b| b == 0xff).unwrap_or(data.len());
    let (path_bytes, rest) = data.split_at(split);
    let Ok(doc) = pion_core::value::json::parse(DOC.as_bytes()) else {
        return;
    };
    if let Ok(p) = Path::parse(path_bytes) {
        for ptr in p.select(&doc) {
            assert!(select::get(&doc, &ptr).is_some(), "a match that does not resolve");
        }
    }
    let mut bytes = rest.iter().copied().skip(1);
    let mut tokens = Vec::new();
    while let Some(b) = bytes.next() {
        tokens.push(token(b, &mut bytes));
    }
    ENGINE.with(|engine| {
        let mut session = engine.session();
        let _ = session.execute_argv(&[
            b"JSON.SET".to_vec(),
            b"k".to_vec(),
            b"$".to_vec(),
            DOC.as_bytes().to_vec(),
        ]);
        let mut with_path = tokens.clone();
        with_path.insert(0, path_bytes.to_vec());
        for cmd in [&b"JSON.SET"[..], b"JSON.MERGE", b"JSON.ARRINSERT", b"JSON.GET", b"JSON.DEL"] {
            let mut argv = vec![cmd.to_vec(), b"k".to_vec()];
            argv.extend(with_path.iter().cloned());
            let _ = session.execute_argv(&argv);
        }
        let _ = session.execute_argv(&[b"JSON.GET".to_vec(), b"k".to_vec()]);
    });
});
