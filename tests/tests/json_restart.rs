//! JSON keys survive restarts: after SIGKILL (the log replayed), after a snapshot
//! plus the log written after it, and through `DEBUG RELOAD`, every document reads
//! back byte for byte (floats whose text RedisJSON's parser reads inexactly
//! included), with its type and its deadline.

use pion_tests::dump::{bulk, ok};
use pion_tests::{temp_dir, Client, PionProcess, RespValue};

/// `DEBUG RELOAD` is refused unless the server allows `DEBUG`.
const DEBUG: &[&str] = &["--enable-debug-command", "yes"];

/// Documents that exercise member order, integers beyond `i64`, floats in every
/// notation and edits in place.
const DOCS: &[&str] = &[
    r#"{"z":1,"a":[1,2.0,3.5,1e20,-0.0],"m":{"k":"v","n":null,"t":true}}"#,
    r#"[12345678901234567890,123456789012345678901234,0.1,9.172242298944002e299]"#,
    r#""a string with \"quotes\" and \u00e9""#,
    "42",
    r#"{"deep":[[[[{"x":[1,{"y":2}]}]]]]}"#,
];

/// Writes the documents (some with deadlines) and edits them in place.
fn populate(c: &mut Client, tag: &str) {
    for (i, d) in DOCS.iter().enumerate() {
        let key = format!("json:{tag}:{i}");
        ok(c, &["JSON.SET", &key, "$", d]);
        if i % 2 == 0 {
            ok(c, &["PEXPIRE", &key, "100000000"]);
        }
    }
    let k0 = format!("json:{tag}:0");
    ok(c, &["JSON.NUMINCRBY", &k0, "$.z", "0.5"]);
    ok(c, &["JSON.ARRAPPEND", &k0, "$.a", "\"x\"", "{\"q\":[]}"]);
    ok(c, &["JSON.DEL", &k0, "$.m.n"]);
    ok(c, &["JSON.MERGE", &k0, "$.m", r#"{"k":null,"new":[1]}"#]);
    ok(c, &["JSON.SET", &format!("json:{tag}:4"), "$..y", "[3,4]"]);
}

/// Every JSON key's type, document and deadline.
fn snapshot_of(c: &mut Client) -> Vec<(String, String, Vec<u8>, String)> {
    let RespValue::Agg(_, Some(keys)) = ok(c, &["KEYS", "json:*"]) else {
        panic!("KEYS failed");
    };
    let mut names: Vec<String> = keys
        .iter()
        .map(|k| String::from_utf8_lossy(&bulk(k)).into_owned())
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|k| {
            let t = ok(c, &["TYPE", &k]).render();
            let doc = bulk(&ok(c, &["JSON.GET", &k]));
            let at = ok(c, &["PEXPIRETIME", &k]).render();
            (k, t, doc, at)
        })
        .collect()
}

#[test]
fn json_keys_survive_sigkill_snapshots_and_reload() {
    let dir = temp_dir("json-restart");
    let mut server = PionProcess::start(dir.path(), &[]);
    let mut c = server.client();
    populate(&mut c, "log");
    let before = snapshot_of(&mut c);
    assert_eq!(before.len(), DOCS.len());
    assert!(before.iter().all(|(_, t, _, _)| t == "+ReJSON-RL"));

    server.kill9();
    let mut server = PionProcess::start(dir.path(), &[]);
    let mut c = server.client();
    assert_eq!(snapshot_of(&mut c), before, "after SIGKILL (log replay)");

    ok(&mut c, &["SAVE"]);
    populate(&mut c, "tail");
    let before = snapshot_of(&mut c);
    assert_eq!(before.len(), 2 * DOCS.len());
    server.kill9();
    let server = PionProcess::start(dir.path(), DEBUG);
    let mut c = server.client();
    assert_eq!(
        snapshot_of(&mut c),
        before,
        "after SAVE, more writes, SIGKILL"
    );

    assert_eq!(
        ok(&mut c, &["DEBUG", "RELOAD"]),
        RespValue::Line(b'+', b"OK".to_vec())
    );
    assert_eq!(snapshot_of(&mut c), before, "after DEBUG RELOAD");
}
