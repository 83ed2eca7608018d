//! Randomized differential run: long random command sequences over a small key set,
//! sent to redis-server and to Pion, replies compared. Seeded; the seed is printed on
//! failure (`PION_DIFF_SEED=<seed>` replays it).

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use pion_tests::{Client, PionServer, RedisServer};

#[path = "random_differential/geo.rs"]
mod geo;
#[path = "random_differential/streams.rs"]
mod streams;

/// Commands whose aggregate replies have no defined order for large values.
const UNORDERED: &[&str] = &[
    "SMEMBERS", "HGETALL", "HKEYS", "HVALS", "SUNION", "SINTER", "SDIFF", "KEYS",
];

/// Float arguments that exercise long-double and %.17g formatting.
const FLOATS: &[&str] = &["0.1", "0.2", "-1.5", "1e3", "3", "2.5e-3", "100.25"];

fn pick<'a>(rng: &mut SmallRng, items: &[&'a str]) -> &'a str {
    items[rng.gen_range(0..items.len())]
}

fn gen_command(rng: &mut SmallRng) -> Vec<String> {
    let k = |rng: &mut SmallRng| format!("k{}", rng.gen_range(0..6));
    let field = |rng: &mut SmallRng| format!("f{}", rng.gen_range(0..5));
    let member = |rng: &mut SmallRng| format!("m{}", rng.gen_range(0..8));
    let int = |rng: &mut SmallRng| rng.gen_range(-20i64..20).to_string();
    let float = |rng: &mut SmallRng| FLOATS[rng.gen_range(0..FLOATS.len())].to_string();
    match rng.gen_range(0..66) {
        0 => vec!["SET".into(), k(rng), int(rng)],
        1 => vec!["GET".into(), k(rng)],
        2 => vec!["APPEND".into(), k(rng), member(rng)],
        3 => vec!["INCR".into(), k(rng)],
        4 => vec!["INCRBY".into(), k(rng), int(rng)],
        5 => vec!["DEL".into(), k(rng), k(rng)],
        6 => vec!["EXISTS".into(), k(rng), k(rng)],
        7 => vec!["TYPE".into(), k(rng)],
        8 => vec!["HSET".into(), k(rng), field(rng), int(rng)],
        9 => vec!["HGET".into(), k(rng), field(rng)],
        10 => vec!["HDEL".into(), k(rng), field(rng)],
        11 => vec!["HGETALL".into(), k(rng)],
        12 => vec!["HINCRBY".into(), k(rng), field(rng), int(rng)],
        13 => vec![
            pick(rng, &["LPUSH", "RPUSH"]).into(),
            k(rng),
            member(rng),
            member(rng),
        ],
        14 => vec![pick(rng, &["LPOP", "RPOP"]).into(), k(rng)],
        15 => vec!["LRANGE".into(), k(rng), int(rng), int(rng)],
        16 => vec!["LLEN".into(), k(rng)],
        17 => vec!["LREM".into(), k(rng), int(rng), member(rng)],
        18 => vec!["SADD".into(), k(rng), member(rng), int(rng)],
        19 => vec!["SREM".into(), k(rng), member(rng)],
        20 => vec!["SISMEMBER".into(), k(rng), member(rng)],
        21 => vec!["SCARD".into(), k(rng)],
        22 => vec!["SMEMBERS".into(), k(rng)],
        23 => vec!["ZADD".into(), k(rng), int(rng), member(rng)],
        24 => vec!["ZREM".into(), k(rng), member(rng)],
        25 => vec!["ZSCORE".into(), k(rng), member(rng)],
        26 => vec![
            "ZRANGE".into(),
            k(rng),
            int(rng),
            int(rng),
            "WITHSCORES".into(),
        ],
        27 => vec!["ZINCRBY".into(), k(rng), int(rng), member(rng)],
        28 => vec!["ZRANK".into(), k(rng), member(rng)],
        29 => vec!["ZCARD".into(), k(rng)],
        30 => vec!["EXPIRE".into(), k(rng), "1000".into()],
        31 => vec!["PERSIST".into(), k(rng)],
        32 => vec!["RENAME".into(), k(rng), k(rng)],
        33 => vec!["STRLEN".into(), k(rng)],
        34 => vec![
            "SETRANGE".into(),
            k(rng),
            rng.gen_range(0..8).to_string(),
            member(rng),
        ],
        35 => vec!["GETRANGE".into(), k(rng), int(rng), int(rng)],
        36 => vec!["MSET".into(), k(rng), int(rng), k(rng), member(rng)],
        37 => vec!["MGET".into(), k(rng), k(rng), k(rng)],
        38 => vec!["INCRBYFLOAT".into(), k(rng), float(rng)],
        39 => vec!["HINCRBYFLOAT".into(), k(rng), field(rng), float(rng)],
        40 => vec![
            "LINSERT".into(),
            k(rng),
            pick(rng, &["BEFORE", "AFTER"]).into(),
            member(rng),
            member(rng),
        ],
        41 => vec!["LINDEX".into(), k(rng), int(rng)],
        42 => vec!["LSET".into(), k(rng), int(rng), member(rng)],
        43 => vec!["LTRIM".into(), k(rng), int(rng), int(rng)],
        44 => vec![
            "LPOS".into(),
            k(rng),
            member(rng),
            "RANK".into(),
            pick(rng, &["1", "-1", "2"]).into(),
        ],
        45 => vec![
            "LMOVE".into(),
            k(rng),
            k(rng),
            pick(rng, &["LEFT", "RIGHT"]).into(),
            pick(rng, &["LEFT", "RIGHT"]).into(),
        ],
        46 => vec!["HSETNX".into(), k(rng), field(rng), int(rng)],
        47 => vec!["HMGET".into(), k(rng), field(rng), field(rng)],
        48 => vec!["HLEN".into(), k(rng)],
        49 => vec!["SMOVE".into(), k(rng), k(rng), member(rng)],
        50 => vec!["SINTERSTORE".into(), k(rng), k(rng), k(rng)],
        51 => vec!["SUNIONSTORE".into(), k(rng), k(rng), k(rng)],
        52 => vec!["SMISMEMBER".into(), k(rng), member(rng), int(rng)],
        53 => vec![
            "ZRANGEBYSCORE".into(),
            k(rng),
            "-inf".into(),
            int(rng),
            "WITHSCORES".into(),
        ],
        54 => vec!["ZREVRANGE".into(), k(rng), int(rng), int(rng)],
        55 => vec!["ZCOUNT".into(), k(rng), int(rng), "+inf".into()],
        56 => vec![
            "ZUNIONSTORE".into(),
            k(rng),
            "2".into(),
            k(rng),
            k(rng),
            "WEIGHTS".into(),
            "2".into(),
            float(rng),
        ],
        57 => vec!["ZPOPMIN".into(), k(rng)],
        58 => vec!["ZINCRBY".into(), k(rng), float(rng), member(rng)],
        59 => vec!["COPY".into(), k(rng), k(rng), "REPLACE".into()],
        60 => vec!["RENAMENX".into(), k(rng), k(rng)],
        61 => vec!["OBJECT".into(), "ENCODING".into(), k(rng)],
        62 => vec!["GETDEL".into(), k(rng)],
        63 => vec!["GETSET".into(), k(rng), int(rng)],
        64 => vec![
            "SORT".into(),
            k(rng),
            pick(rng, &["ALPHA", "DESC", "LIMIT"]).into(),
            "0".into(),
            "3".into(),
        ],
        _ => vec!["ZREMRANGEBYRANK".into(), k(rng), int(rng), int(rng)],
    }
}

/// Bitmap commands over a few keys, with the string and list writes that give them
/// short, long, integer-encoded and wrong-typed values to work on. Offsets stay small
/// so strings cross word boundaries without growing large.
fn gen_bitmap_command(rng: &mut SmallRng) -> Vec<String> {
    let k = |rng: &mut SmallRng| format!("k{}", rng.gen_range(0..4));
    let bit_offset = |rng: &mut SmallRng| rng.gen_range(0..300).to_string();
    let index = |rng: &mut SmallRng| rng.gen_range(-45i64..45).to_string();
    let unit = |rng: &mut SmallRng| pick(rng, &["BYTE", "BIT", "bit"]).to_string();
    let bit = |rng: &mut SmallRng| pick(rng, &["0", "1"]).to_string();
    let ty = |rng: &mut SmallRng| {
        let signed = rng.gen_bool(0.5);
        let width = if signed {
            rng.gen_range(1..=64)
        } else {
            rng.gen_range(1..=63)
        };
        format!("{}{width}", if signed { "i" } else { "u" })
    };
    let field_offset = |rng: &mut SmallRng| {
        if rng.gen_bool(0.2) {
            format!("#{}", rng.gen_range(0..6))
        } else {
            rng.gen_range(0..200).to_string()
        }
    };
    let value = |rng: &mut SmallRng| match rng.gen_range(0..4) {
        0 => pick(
            rng,
            &[
                "9223372036854775807",
                "-9223372036854775808",
                "4611686018427387904",
                "-1",
                "0",
            ],
        )
        .to_string(),
        1 => rng.gen::<i64>().to_string(),
        _ => rng.gen_range(-300i64..300).to_string(),
    };
    match rng.gen_range(0..14) {
        0 | 1 => vec!["SETBIT".into(), k(rng), bit_offset(rng), bit(rng)],
        2 => vec!["GETBIT".into(), k(rng), bit_offset(rng)],
        3 => vec!["BITCOUNT".into(), k(rng)],
        4 => {
            let mut c = vec!["BITCOUNT".into(), k(rng), index(rng), index(rng)];
            if rng.gen_bool(0.6) {
                c.push(unit(rng));
            }
            c
        }
        5 | 6 => {
            let mut c = vec!["BITPOS".into(), k(rng), bit(rng)];
            let extra = rng.gen_range(0..4);
            if extra >= 1 {
                c.push(index(rng));
            }
            if extra >= 2 {
                c.push(index(rng));
            }
            if extra >= 3 {
                c.push(unit(rng));
            }
            c
        }
        7 => {
            let op = pick(rng, &["AND", "OR", "XOR", "NOT"]);
            let sources = if op == "NOT" { 1 } else { rng.gen_range(1..4) };
            let mut c = vec!["BITOP".into(), op.into(), k(rng)];
            c.extend((0..sources).map(|_| k(rng)));
            c
        }
        8..=10 => {
            let mut c = vec!["BITFIELD".into(), k(rng)];
            for _ in 0..rng.gen_range(1..5) {
                match rng.gen_range(0..4) {
                    0 => c.extend(["GET".into(), ty(rng), field_offset(rng)]),
                    1 => c.extend(["SET".into(), ty(rng), field_offset(rng), value(rng)]),
                    2 => c.extend(["INCRBY".into(), ty(rng), field_offset(rng), value(rng)]),
                    _ => c.extend([
                        "OVERFLOW".into(),
                        pick(rng, &["WRAP", "SAT", "FAIL"]).into(),
                    ]),
                }
            }
            c
        }
        11 => vec![
            "BITFIELD_RO".into(),
            k(rng),
            "GET".into(),
            ty(rng),
            field_offset(rng),
        ],
        12 => match rng.gen_range(0..5) {
            0 => vec![
                "SET".into(),
                k(rng),
                rng.gen_range(-999i64..99999).to_string(),
            ],
            1 => vec!["APPEND".into(), k(rng), "\u{0}\u{7f}-ab\u{1}".into()],
            2 => vec![
                "SETRANGE".into(),
                k(rng),
                rng.gen_range(0..40).to_string(),
                "xyz".into(),
            ],
            3 => vec!["DEL".into(), k(rng)],
            _ => vec!["RPUSH".into(), k(rng), "x".into()],
        },
        _ => match rng.gen_range(0..4) {
            0 => vec!["GET".into(), k(rng)],
            1 => vec!["STRLEN".into(), k(rng)],
            2 => vec!["TYPE".into(), k(rng)],
            _ => vec!["OBJECT".into(), "ENCODING".into(), k(rng)],
        },
    }
}

/// One step of the HyperLogLog run: a command for both servers, or a copy of a value
/// from one server into both (`SET` of the bytes `GET` returned, perhaps damaged).
enum HllStep {
    Command(Vec<Vec<u8>>),
    Copy {
        from_redis: bool,
        src: String,
        dst: String,
        damage: Option<(usize, u8)>,
        cut: Option<usize>,
    },
}

/// HyperLogLog commands over a few keys: PFADD of up to 300 elements from a pool of
/// 20,000 (so values stay sparse, cross the promotion or are dense), PFCOUNT of one
/// or several keys, PFMERGE, PFDEBUG, GET, changes of hll-sparse-max-bytes, copies of
/// values between servers (some damaged), and string or list writes for wrong types.
fn gen_hll_step(rng: &mut SmallRng) -> HllStep {
    let k = |rng: &mut SmallRng| format!("k{}", rng.gen_range(0..5));
    let b = |s: &str| s.as_bytes().to_vec();
    let command =
        |words: Vec<String>| HllStep::Command(words.into_iter().map(String::into_bytes).collect());
    match rng.gen_range(0..100) {
        0..=34 => {
            let mut cmd = vec!["PFADD".to_string(), k(rng)];
            let n = match rng.gen_range(0..10) {
                0 => 0,
                1..=6 => rng.gen_range(1..10),
                _ => rng.gen_range(10..300),
            };
            let pool = if rng.gen_bool(0.5) { 300 } else { 20_000 };
            for _ in 0..n {
                cmd.push(format!("e{}", rng.gen_range(0..pool)));
            }
            command(cmd)
        }
        35..=54 => {
            let n = if rng.gen_bool(0.6) {
                1
            } else {
                rng.gen_range(2..4)
            };
            let mut cmd = vec!["PFCOUNT".to_string()];
            cmd.extend((0..n).map(|_| k(rng)));
            command(cmd)
        }
        55..=64 => {
            let mut cmd = vec!["PFMERGE".to_string(), k(rng)];
            let n = rng.gen_range(0..4);
            cmd.extend((0..n).map(|_| k(rng)));
            command(cmd)
        }
        65..=72 => {
            let sub = pick(
                rng,
                &["ENCODING", "DECODE", "TODENSE", "GETREG", "encoding"],
            );
            if sub == "GETREG" && rng.gen_bool(0.7) {
                return command(vec!["PFDEBUG".into(), "ENCODING".into(), k(rng)]);
            }
            command(vec!["PFDEBUG".into(), sub.into(), k(rng)])
        }
        73..=80 => command(vec!["GET".into(), k(rng)]),
        81..=88 => {
            let damage = rng.gen_bool(0.3).then(|| (rng.gen_range(0..40), rng.gen()));
            let cut = rng.gen_bool(0.1).then(|| rng.gen_range(0..30));
            HllStep::Copy {
                from_redis: rng.gen_bool(0.7),
                src: k(rng),
                dst: k(rng),
                damage,
                cut,
            }
        }
        89..=92 => {
            let v = pick(rng, &["0", "20", "60", "300", "3000"]);
            command(vec![
                "CONFIG".into(),
                "SET".into(),
                "hll-sparse-max-bytes".into(),
                v.into(),
            ])
        }
        93..=94 => command(vec!["DEL".into(), k(rng)]),
        95..=96 => command(vec!["SET".into(), k(rng), "plain".into()]),
        97 => command(vec!["RPUSH".into(), k(rng), "x".into()]),
        _ => HllStep::Command(vec![b("APPEND"), b(&k(rng)), b("xyz")]),
    }
}

#[test]
fn random_hll_sequences_match_redis() {
    let redis = RedisServer::start();
    for (i, seed) in seeds().into_iter().enumerate() {
        println!("random HyperLogLog differential: seed {seed}");
        run_hll(seed, 1500, if i % 2 == 0 { 1 } else { 4 }, &redis);
    }
}

/// Replays random HyperLogLog steps on both servers and compares every reply.
fn run_hll(seed: u64, steps: usize, threads: usize, redis: &RedisServer) {
    let pion = PionServer::start(threads);
    let mut r = Client::connect(redis.port).expect("redis");
    let mut p = Client::connect(pion.port).expect("pion");
    r.cmd(&["FLUSHALL"]);
    r.cmd(&["CONFIG", "SET", "hll-sparse-max-bytes", "3000"]);
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut history: Vec<String> = Vec::new();
    for i in 0..steps {
        let cmd = match gen_hll_step(&mut rng) {
            HllStep::Command(cmd) => cmd,
            HllStep::Copy {
                from_redis,
                src,
                dst,
                damage,
                cut,
            } => {
                let source = if from_redis { &mut r } else { &mut p };
                let Ok((pion_tests::RespValue::Bulk(_, Some(mut bytes)), _)) =
                    source.call(&["GET", src.as_str()])
                else {
                    continue;
                };
                if let Some((at, byte)) = damage {
                    // Past the magic and encoding: the opcodes, registers or cache.
                    let at = 5 + at;
                    if at < bytes.len() {
                        bytes[at] = byte;
                    }
                }
                if let Some(n) = cut {
                    bytes.truncate(bytes.len().saturating_sub(n));
                }
                vec![b"SET".to_vec(), dst.into_bytes(), bytes]
            }
        };
        history.push(
            cmd.iter()
                .map(|a| String::from_utf8_lossy(&a[..a.len().min(24)]).into_owned())
                .collect::<Vec<_>>()
                .join(" "),
        );
        let (rv, rraw) = r.call(&cmd).expect("redis reply");
        let (pv, praw) = p.call(&cmd).expect("pion reply");
        if rraw != praw {
            let tail = &history[history.len().saturating_sub(40)..];
            panic!(
                "seed {seed} (PION_DIFF_SEED={seed}), step #{i}:\n  redis: {}\n  pion:  {}\nlast steps:\n  {}",
                shorten(&rv.render()),
                shorten(&pv.render()),
                tail.join("\n  ")
            );
        }
    }
    r.cmd(&["CONFIG", "SET", "hll-sparse-max-bytes", "3000"]);
}

/// A reply's rendering cut to a readable length.
fn shorten(s: &str) -> String {
    s.chars().take(400).collect()
}

fn run(seed: u64, commands: usize, threads: usize, redis: &RedisServer) {
    run_with(seed, commands, threads, redis, gen_command);
}

fn run_with(
    seed: u64,
    commands: usize,
    threads: usize,
    redis: &RedisServer,
    gen: fn(&mut SmallRng) -> Vec<String>,
) {
    let pion = PionServer::start(threads);
    let mut r = Client::connect(redis.port).expect("redis");
    let mut p = Client::connect(pion.port).expect("pion");
    r.cmd(&["FLUSHALL"]);
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut history: Vec<Vec<String>> = Vec::new();
    for i in 0..commands {
        let cmd = gen(&mut rng);
        history.push(cmd.clone());
        let (rv, rraw) = r.call(&cmd).expect("redis reply");
        let (pv, praw) = p.call(&cmd).expect("pion reply");
        let same = if UNORDERED.contains(&cmd[0].as_str()) {
            rv.normalized() == pv.normalized()
        } else {
            rraw == praw
        };
        if !same {
            // The commands that touched the same keys, to make the failure reproducible by hand.
            let related: Vec<String> = history
                .iter()
                .filter(|h| {
                    h.iter()
                        .skip(1)
                        .any(|a| cmd.iter().skip(1).any(|c| c == a && c.starts_with('k')))
                })
                .map(|h| h.join(" "))
                .collect();
            let tail = &related[related.len().saturating_sub(40)..];
            panic!(
                "seed {seed} (PION_DIFF_SEED={seed}), command #{i} {:?}:\n  redis: {}\n  pion:  {}\nearlier commands on these keys:\n  {}",
                cmd,
                rv.render(),
                pv.render(),
                tail.join("\n  ")
            );
        }
    }
}

/// The seeds to run: `PION_DIFF_SEED`'s alone, else three fixed ones and the clock's.
fn seeds() -> Vec<u64> {
    match std::env::var("PION_DIFF_SEED") {
        Ok(s) => vec![s.parse().expect("PION_DIFF_SEED must be a number")],
        Err(_) => {
            let base = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_secs());
            vec![1, 2, 3, base]
        }
    }
}

#[test]
fn random_sequences_match_redis() {
    let redis = RedisServer::start();
    for (i, seed) in seeds().into_iter().enumerate() {
        println!("random differential: seed {seed}");
        run(seed, 3000, if i % 2 == 0 { 1 } else { 4 }, &redis);
    }
}

#[test]
fn random_bitmap_sequences_match_redis() {
    let redis = RedisServer::start();
    for (i, seed) in seeds().into_iter().enumerate() {
        println!("random bitmap differential: seed {seed}");
        let threads = if i % 2 == 0 { 1 } else { 4 };
        run_with(seed, 3000, threads, &redis, gen_bitmap_command);
    }
}
