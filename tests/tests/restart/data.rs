//! What the restart tests write: every type and encoding boundary over several
//! databases (`populate`), more of it after a first restart (`more_writes`), and the
//! commands whose log entry must not be the command itself.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use pion_tests::dump::{ok, Batch};
use pion_tests::Client;

/// Far-future relative expiries (milliseconds): nothing expires during a test.
const FAR_MS: u64 = 1_000_000_000;

pub(crate) fn ascii(rng: &mut SmallRng, max: usize) -> String {
    let len = rng.gen_range(1..=max);
    (0..len)
        .map(|_| char::from(rng.gen_range(b' '..=b'~')))
        .collect()
}

fn binary(rng: &mut SmallRng, max: usize) -> Vec<u8> {
    let len = rng.gen_range(0..=max);
    (0..len).map(|_| rng.gen::<u8>()).collect()
}

/// Fractional, tiny, huge and integral scores, as text a client would send.
fn score(rng: &mut SmallRng) -> String {
    match rng.gen_range(0..6) {
        0 => rng.gen_range(-1000..1000).to_string(),
        1 => format!("{}", rng.gen_range(-1.0e6..1.0e6f64)),
        2 => format!("{:e}", rng.gen_range(1.0e-300..1.0e-290f64)),
        3 => [
            "0.1",
            "-0.25",
            "3.141592653589793",
            "1.7976931348623157e308",
        ][rng.gen_range(0..4)]
        .to_string(),
        _ => format!("{}", f64::from(rng.gen_range(-100i32..100)) / 8.0),
    }
}

/// Fills database `db` with every type at both sides of the encoding thresholds;
/// `scale` divides the key counts. Some keys get far-future expiries.
fn populate_db(client: &mut Client, db: usize, rng: &mut SmallRng, scale: usize) {
    ok(client, &["SELECT", &db.to_string()]);
    let n = |count: usize| (count / scale).max(1);
    let mut batch = Batch::default();
    for i in 0..n(600) {
        batch.push(&["SET", &format!("str:{i}"), &ascii(rng, 60)]);
    }
    for i in 0..n(200) {
        let v = rng.gen_range(i64::MIN / 2..i64::MAX / 2).to_string();
        batch.push(&["SET", &format!("int:{i}"), &v]);
    }
    for (k, v) in [
        ("int:max", i64::MAX.to_string()),
        ("int:min", i64::MIN.to_string()),
        ("int:zero", "0".into()),
        ("int:lead0", "007".into()),
        ("int:neg", "-17".into()),
    ] {
        batch.push(&["SET", k, &v]);
    }
    for i in 0..n(64) {
        batch.push(&[
            b"SET".to_vec(),
            format!("bin:{i}").into_bytes(),
            binary(rng, 200),
        ]);
    }
    batch.push(&[b"SET".to_vec(), b"bin:all".to_vec(), (0..=255u8).collect()]);
    batch.push(&[
        b"SET".to_vec(),
        b"key\0with\r\nbinary\xff".to_vec(),
        b"value".to_vec(),
    ]);
    batch.push(&["SET", "big:str", &"x".repeat(200_000 / scale)]);
    for i in 0..n(150) {
        let mut cmd = vec!["HSET".to_string(), format!("hash:{i}")];
        for f in 0..rng.gen_range(1..10) {
            cmd.push(format!("f{f}"));
            cmd.push(ascii(rng, 20));
        }
        batch.push(&cmd);
    }
    for j in 0..2 {
        let key = format!("hash:big{j}");
        for chunk in 0..7 {
            let mut cmd = vec!["HSET".to_string(), key.clone()];
            for f in 0..100 {
                cmd.push(format!("field{}", chunk * 100 + f));
                cmd.push(ascii(rng, 30));
            }
            batch.push(&cmd);
        }
    }
    batch.push(&["HSET", "hash:longval", "a", &"v".repeat(100), "b", "short"]);
    for i in 0..n(150) {
        let mut cmd = vec!["RPUSH".to_string(), format!("list:{i}")];
        cmd.extend((0..rng.gen_range(1..20)).map(|_| ascii(rng, 15)));
        batch.push(&cmd);
        batch.push(&["LPUSH", &format!("list:{i}"), "head"]);
    }
    for chunk in 0..30 {
        let mut cmd = vec!["RPUSH".to_string(), "list:big".to_string()];
        cmd.extend((0..100).map(|e| format!("e{}", chunk * 100 + e)));
        batch.push(&cmd);
    }
    for i in 0..n(150) {
        let mut cmd = vec!["SADD".to_string(), format!("iset:{i}")];
        cmd.extend((0..rng.gen_range(1..20)).map(|_| rng.gen_range(-500..500).to_string()));
        batch.push(&cmd);
    }
    for chunk in 0..10 {
        let mut cmd = vec!["SADD".to_string(), "iset:big".to_string()];
        cmd.extend((0..100).map(|e| (chunk * 100 + e).to_string()));
        batch.push(&cmd);
    }
    for i in 0..n(100) {
        let mut cmd = vec!["SADD".to_string(), format!("sset:{i}")];
        cmd.extend((0..rng.gen_range(3..20)).map(|_| ascii(rng, 10)));
        batch.push(&cmd);
    }
    for chunk in 0..7 {
        let mut cmd = vec!["SADD".to_string(), "sset:big".to_string()];
        cmd.extend((0..100).map(|e| format!("member-{}", chunk * 100 + e)));
        batch.push(&cmd);
    }
    for i in 0..n(150) {
        let mut cmd = vec!["ZADD".to_string(), format!("zset:{i}")];
        for m in 0..rng.gen_range(1..15) {
            cmd.push(score(rng));
            cmd.push(format!("m{m}"));
        }
        batch.push(&cmd);
    }
    batch.push(&[
        "ZADD", "zset:inf", "-inf", "low", "+inf", "high", "0", "zero", "-0.5", "neg", "1e-300",
        "tiny",
    ]);
    for chunk in 0..6 {
        let mut cmd = vec!["ZADD".to_string(), "zset:big".to_string()];
        for m in 0..100 {
            cmd.push(score(rng));
            cmd.push(format!("member{}", chunk * 100 + m));
        }
        batch.push(&cmd);
    }
    batch.run(client);

    // Far-future deadlines on about a tenth of the keys, of every type.
    let mut batch = Batch::default();
    for (prefix, count) in [
        ("str", 600),
        ("int", 200),
        ("hash", 150),
        ("list", 150),
        ("iset", 150),
        ("sset", 100),
        ("zset", 150),
    ] {
        for i in (0..n(count)).step_by(10) {
            let ms = FAR_MS + rng.gen_range(0..1_000_000u64);
            batch.push(&["PEXPIRE", &format!("{prefix}:{i}"), &ms.to_string()]);
        }
    }
    batch.push(&["PEXPIRE", "hash:big0", &FAR_MS.to_string()]);
    batch.push(&["PEXPIRE", "zset:big", &(FAR_MS + 7).to_string()]);
    batch.run(client);
}

/// Commands whose effect depends on randomness or on the clock, and commands over
/// whole databases: the log must record what they did, not replay them blindly.
fn nondeterministic(client: &mut Client, db: usize, rng: &mut SmallRng) {
    ok(client, &["SELECT", &db.to_string()]);
    let mut batch = Batch::default();
    for i in 0..20 {
        batch.push(&["SPOP", &format!("sset:{i}"), "2"]);
        batch.push(&["SPOP", &format!("iset:{i}")]);
    }
    batch.push(&["SPOP", "iset:big", "5"]);
    batch.push(&["SPOP", "sset:big", "3"]);
    for i in 0..30 {
        for _ in 0..3 {
            let by = ["0.1", "1.5e3", "-2.25", "3.0000000000000004", "1e-7"][rng.gen_range(0..5)];
            batch.push(&["INCRBYFLOAT", &format!("float:{i}"), by]);
            batch.push(&["HINCRBYFLOAT", &format!("hash:{i}"), "ff", by]);
        }
    }
    batch.push(&["INCRBYFLOAT", "int:zero", "0.1"]);
    for i in 0..30 {
        batch.push(&["SETEX", &format!("setex:{i}"), "100000", &ascii(rng, 10)]);
        batch.push(&[
            "EXPIRE",
            &format!("str:{}", 100 + i),
            &(200_000 + i).to_string(),
        ]);
        batch.push(&["GETEX", &format!("str:{}", 200 + i), "EX", "300000"]);
        batch.push(&["GETEX", &format!("str:{}", 300 + i), "PX", "400000000"]);
    }
    // PERSIST through GETEX on keys that had deadlines.
    for i in (0..100).step_by(10) {
        batch.push(&["GETEX", &format!("str:{i}"), "PERSIST"]);
    }
    // More mutations of every type.
    for i in 30..50 {
        batch.push(&["APPEND", &format!("str:{i}"), "-appended"]);
        batch.push(&["SETRANGE", &format!("str:{}", i + 20), "3", "XYZ"]);
        batch.push(&["LPOP", &format!("list:{i}")]);
        batch.push(&["LSET", &format!("list:{}", i + 20), "0", "replaced"]);
        batch.push(&["HDEL", &format!("hash:{i}"), "f0", "f1"]);
        batch.push(&["SREM", &format!("iset:{}", i + 30), "1", "2", "3"]);
        batch.push(&["ZINCRBY", &format!("zset:{i}"), "0.5", "m0"]);
        batch.push(&["ZREM", &format!("zset:{}", i + 20), "m1"]);
        batch.push(&["ZPOPMIN", &format!("zset:{}", i + 40)]);
        batch.push(&["SMOVE", &format!("sset:{i}"), "sset:big", "nonexistent"]);
        batch.push(&["LMOVE", &format!("list:{i}"), "list:big", "LEFT", "RIGHT"]);
        batch.push(&["PERSIST", &format!("str:{}", i * 10)]);
        batch.push(&["DEL", &format!("int:{i}")]);
    }
    // Bitmaps: in-place edits of new and existing strings, a BITFIELD whose only effect
    // is to create its key, BITOP results and a BITOP that deletes its destination.
    for i in 0..10 {
        let bits = format!("bits:{i}");
        batch.push(&["SETBIT", &bits, &(i * 37).to_string(), "1"]);
        batch.push(&["SETBIT", &format!("str:{}", 80 + i), "3", "1"]);
        batch.push(&[
            "BITFIELD", &bits, "SET", "i12", "#3", "-100", "INCRBY", "u7", "50", "99",
        ]);
    }
    batch.push(&[
        "BITFIELD",
        "bits:failed",
        "OVERFLOW",
        "FAIL",
        "INCRBY",
        "u2",
        "100",
        "9",
    ]);
    batch.push(&["BITOP", "XOR", "bits:xor", "bits:1", "bits:2", "str:85"]);
    batch.push(&["BITOP", "NOT", "bits:not", "bits:3"]);
    batch.push(&["SET", "bits:gone", "x"]);
    batch.push(&["BITOP", "AND", "bits:gone", "no-such-key"]);
    // HyperLogLogs: sparse and dense values, a PFCOUNT that caches its estimate in the
    // value (logged though it is a read), merges, PFDEBUG's conversion, and a PFADD
    // that edits a corrupt value before it fails.
    for i in 0..6 {
        let hll = format!("hll:{i}");
        let elements: Vec<String> = (0..(i * i * 60)).map(|e| format!("e{e}")).collect();
        let mut pfadd = vec!["PFADD", hll.as_str()];
        pfadd.extend(elements.iter().map(String::as_str));
        batch.push(&pfadd);
        if i % 2 == 0 {
            batch.push(&["PFCOUNT", &hll]);
        }
    }
    batch.push(&["PFMERGE", "hll:merged", "hll:1", "hll:2"]);
    batch.push(&["PFMERGE", "hll:dense", "hll:1", "hll:5"]);
    batch.push(&["PFCOUNT", "hll:merged", "hll:dense"]);
    batch.push(&["PFDEBUG", "TODENSE", "hll:2"]);
    // Geo indexes: GEOADD's scores, and the stores of the GEORADIUS family and of
    // GEOSEARCHSTORE (scores and distances), a store that deletes its destination.
    batch.push(&[
        "GEOADD",
        "geo:1",
        "13.361389",
        "38.115556",
        "Palermo",
        "15.087269",
        "37.502669",
        "Catania",
    ]);
    batch.push(&[
        "GEOADD",
        "geo:1",
        "CH",
        "180",
        "85.05112878",
        "ne",
        "-180",
        "-85.05112878",
        "sw",
    ]);
    batch.push(&[
        "GEORADIUS",
        "geo:1",
        "15",
        "37",
        "200",
        "km",
        "STORE",
        "geo:store",
    ]);
    batch.push(&[
        "GEORADIUSBYMEMBER",
        "geo:1",
        "Palermo",
        "300",
        "km",
        "COUNT",
        "1",
        "DESC",
        "STOREDIST",
        "geo:dist",
    ]);
    batch.push(&[
        "GEOSEARCHSTORE",
        "geo:box",
        "geo:1",
        "FROMLONLAT",
        "15",
        "37",
        "BYBOX",
        "400",
        "400",
        "mi",
        "STOREDIST",
    ]);
    batch.push(&["SET", "geo:gone", "x"]);
    batch.push(&[
        "GEOSEARCHSTORE",
        "geo:gone",
        "geo:1",
        "FROMLONLAT",
        "0",
        "0",
        "BYRADIUS",
        "1",
        "m",
    ]);
    // Streams with consumer groups: generated ids, trims, deletions, pending
    // entries delivered, re-delivered, claimed and acknowledged, read counters.
    batch.push(&["XADD", "stream:1", "5-*", "f", "1"]);
    batch.push(&["XADD", "stream:1", "5-*", "f", "2"]);
    batch.push(&[
        "XADD", "stream:1", "MAXLEN", "~", "1", "*", "f", "3", "g", "4",
    ]);
    for i in 0..150 {
        batch.push(&[
            "XADD",
            "stream:2",
            "MAXLEN",
            "~",
            "120",
            "*",
            "n",
            &i.to_string(),
        ]);
    }
    batch.push(&["XTRIM", "stream:2", "MINID", "~", "0-1"]);
    batch.push(&["XGROUP", "CREATE", "stream:2", "g1", "0"]);
    batch.push(&[
        "XGROUP",
        "CREATE",
        "stream:2",
        "g2",
        "$",
        "ENTRIESREAD",
        "3",
    ]);
    batch.push(&["XGROUP", "CREATECONSUMER", "stream:2", "g2", "idle"]);
    batch.push(&[
        "XREADGROUP",
        "GROUP",
        "g1",
        "alice",
        "COUNT",
        "30",
        "STREAMS",
        "stream:2",
        ">",
    ]);
    batch.push(&[
        "XREADGROUP",
        "GROUP",
        "g1",
        "bob",
        "COUNT",
        "5",
        "NOACK",
        "STREAMS",
        "stream:2",
        ">",
    ]);
    batch.push(&[
        "XREADGROUP",
        "GROUP",
        "g1",
        "alice",
        "COUNT",
        "3",
        "STREAMS",
        "stream:2",
        "0",
    ]);
    batch.push(&[
        "XAUTOCLAIM",
        "stream:2",
        "g1",
        "carol",
        "0",
        "0",
        "COUNT",
        "4",
    ]);
    batch.push(&["XACK", "stream:2", "g1", "0-1"]);
    batch.push(&["XGROUP", "CREATE", "stream:3", "g", "$", "MKSTREAM"]);
    batch.push(&["XSETID", "stream:3", "1-1"]);
    batch.push(&["XADD", "stream:3", "7-7", "a", "b"]);
    batch.push(&["XDEL", "stream:3", "7-7"]);
    batch.push(&["SET", "str:61", "kept-ttl", "KEEPTTL"]);
    batch.push(&["RENAME", "str:1", "renamed:1"]);
    batch.push(&["RENAME", "hash:big1", "renamed:hash"]);
    batch.push(&["RENAMENX", "zset:inf", "renamed:zset"]);
    batch.run(client);
    // Registers 0 to 9999 covered: "hello" is added, then "a" fails (the reply is an
    // error, and the edit before it must still come back).
    let part: &[&[u8]] = &[
        b"SET",
        b"hll:part",
        b"HYLL\x01\0\0\0\0\0\0\0\0\0\0\x80\x67\x0f",
    ];
    client.cmd(part);
    let failed = client.cmd(&["PFADD", "hll:part", "hello", "a"]);
    assert!(failed.is_error(), "{}", failed.render());
}

/// Uses databases 2–4 as scratch space for SWAPDB and FLUSHDB.
fn scratch_databases(client: &mut Client, rng: &mut SmallRng) {
    for (db, count) in [(2, 50), (3, 30), (4, 40)] {
        ok(client, &["SELECT", &db.to_string()]);
        let mut batch = Batch::default();
        for i in 0..count {
            batch.push(&["SET", &format!("scratch{db}:{i}"), &ascii(rng, 20)]);
            batch.push(&["RPUSH", &format!("scratchlist{db}:{i}"), "a", "b"]);
        }
        batch.push(&["PEXPIRE", &format!("scratch{db}:0"), &FAR_MS.to_string()]);
        batch.run(client);
    }
    ok(client, &["SWAPDB", "2", "3"]);
    ok(client, &["SELECT", "4"]);
    ok(client, &["FLUSHDB"]);
    ok(client, &["SET", "after-flush", "1"]);
    ok(client, &["SELECT", "2"]);
    ok(client, &["SET", "after-swap", "in db 2 (was db 3)"]);
    ok(client, &["SELECT", "0"]);
}

/// A few thousand keys over databases 0 and 1 (plus scratch use of 2–4), every type,
/// expiries, and the non-deterministic and whole-database commands.
pub(crate) fn populate(client: &mut Client, seed: u64) {
    let mut rng = SmallRng::seed_from_u64(seed);
    populate_db(client, 0, &mut rng, 1);
    populate_db(client, 1, &mut rng, 2);
    nondeterministic(client, 0, &mut rng);
    nondeterministic(client, 1, &mut rng);
    scratch_databases(client, &mut rng);
}

/// A round of writes after a snapshot: new keys, overwrites, deletes, expiries and
/// random pops, so recovery needs the snapshot and the log after it.
pub(crate) fn more_writes(client: &mut Client, seed: u64) {
    let mut rng = SmallRng::seed_from_u64(seed);
    for db in [0, 1] {
        ok(client, &["SELECT", &db.to_string()]);
        let mut batch = Batch::default();
        for i in 0..300 {
            match rng.gen_range(0..8) {
                0 => batch.push(&["SET", &format!("str:{i}"), &ascii(&mut rng, 30)]),
                1 => batch.push(&["SET", &format!("new:{i}"), &ascii(&mut rng, 30)]),
                2 => batch.push(&["DEL", &format!("hash:{i}")]),
                3 => batch.push(&["RPUSH", &format!("list:{i}"), "tail"]),
                4 => batch.push(&["ZADD", &format!("zset:{i}"), &score(&mut rng), "added"]),
                5 => batch.push(&["SPOP", &format!("iset:{i}")]),
                6 => batch.push(&["EXPIRE", &format!("list:{i}"), "500000"]),
                _ => batch.push(&["INCRBYFLOAT", &format!("float:{i}"), "0.3"]),
            }
        }
        batch.run(client);
    }
    ok(client, &["SELECT", "0"]);
}
