//! The stream family of the randomized differential run: XADD, ranges, trims,
//! consumer groups and their pending entries, with ids that collide and fall between
//! entries.

use rand::rngs::SmallRng;
use rand::Rng;

use pion_tests::RedisServer;

use super::{pick, run_with, seeds};

/// A random stream id: small milliseconds and sequences so ids collide, order and
/// fall between entries; sometimes `ms-*`, an incomplete id or a range bound.
fn stream_id(rng: &mut SmallRng) -> String {
    match rng.gen_range(0..10) {
        0 => format!("{}", rng.gen_range(0..40)),
        1 => format!("{}-*", rng.gen_range(0..40)),
        _ => format!("{}-{}", rng.gen_range(0..40), rng.gen_range(0..3)),
    }
}

fn stream_bound(rng: &mut SmallRng) -> String {
    match rng.gen_range(0..8) {
        0 => "-".into(),
        1 => "+".into(),
        2 => format!("({}", stream_id(rng).replace("-*", "")),
        _ => stream_id(rng).replace("-*", ""),
    }
}

/// Streams and consumer groups with explicit ids (no clock in the replies): XADD
/// with trims, XDEL, XTRIM, XSETID, range reads, XREAD, group creation and moves,
/// XREADGROUP of new entries and of history, XACK, XPENDING's summary, XCLAIM and
/// XAUTOCLAIM with JUSTID or entries, and XINFO GROUPS with lag and entries-read,
/// on a few keys (one of them a string), with a small node size now and then.
fn gen_stream_command(rng: &mut SmallRng) -> Vec<String> {
    let key = pick(rng, &["ks0", "ks1", "ks2", "kstr"]).to_string();
    let group = pick(rng, &["g1", "g2", "g3"]).to_string();
    let consumer = pick(rng, &["c1", "c2", "c3"]).to_string();
    let mut cmd: Vec<String> = match rng.gen_range(0..24) {
        0..=5 => {
            let mut c = vec!["XADD".to_string(), key];
            match rng.gen_range(0..8) {
                0 => c.extend([
                    "MAXLEN".into(),
                    pick(rng, &["=", "~", ""]).into(),
                    rng.gen_range(0..6).to_string(),
                ]),
                1 => c.extend([
                    "MINID".into(),
                    pick(rng, &["=", "~"]).into(),
                    stream_id(rng).replace("-*", ""),
                ]),
                2 => c.push("NOMKSTREAM".into()),
                _ => {}
            }
            c.retain(|a| !a.is_empty());
            c.push(stream_id(rng));
            for _ in 0..rng.gen_range(1..3) {
                c.push(pick(rng, &["f", "g", "h"]).into());
                c.push(rng.gen_range(0..100).to_string());
            }
            c
        }
        6 => vec![
            "XDEL".into(),
            key,
            stream_id(rng).replace("-*", ""),
            stream_id(rng).replace("-*", ""),
        ],
        7 => {
            let mut c = vec!["XTRIM".into(), key];
            if rng.gen_bool(0.5) {
                c.extend([
                    "MAXLEN".into(),
                    pick(rng, &["=", "~"]).into(),
                    rng.gen_range(0..6).to_string(),
                ]);
            } else {
                c.extend([
                    "MINID".into(),
                    pick(rng, &["=", "~"]).into(),
                    stream_id(rng).replace("-*", ""),
                ]);
            }
            if c[2] == "~" && rng.gen_bool(0.3) {
                c.extend(["LIMIT".into(), rng.gen_range(0..5).to_string()]);
            }
            c
        }
        8 => {
            let mut c = vec!["XRANGE".into(), key, stream_bound(rng), stream_bound(rng)];
            if rng.gen_bool(0.5) {
                c.extend(["COUNT".into(), rng.gen_range(0..4).to_string()]);
            }
            c
        }
        9 => vec![
            "XREVRANGE".into(),
            key,
            stream_bound(rng),
            stream_bound(rng),
        ],
        10 => vec!["XLEN".into(), key],
        11 => vec![
            "XREAD".into(),
            "COUNT".into(),
            rng.gen_range(1..4).to_string(),
            "STREAMS".into(),
            key,
            pick(rng, &["0", "$", "3-0", "20"]).into(),
        ],
        12 | 13 => {
            let id = match rng.gen_range(0..4) {
                0 => "$".into(),
                1 => "0".into(),
                _ => stream_id(rng).replace("-*", ""),
            };
            let mut c = vec!["XGROUP".into(), "CREATE".into(), key, group, id];
            if rng.gen_bool(0.5) {
                c.push("MKSTREAM".into());
            }
            if rng.gen_bool(0.2) {
                c.extend(["ENTRIESREAD".into(), rng.gen_range(-1..6).to_string()]);
            }
            c
        }
        14 => vec![
            "XGROUP".into(),
            "SETID".into(),
            key,
            group,
            pick(rng, &["0", "$", "5-0", "12-1"]).into(),
        ],
        15 => match rng.gen_range(0..3) {
            0 => vec!["XGROUP".into(), "DESTROY".into(), key, group],
            1 => vec![
                "XGROUP".into(),
                "CREATECONSUMER".into(),
                key,
                group,
                consumer,
            ],
            _ => vec!["XGROUP".into(), "DELCONSUMER".into(), key, group, consumer],
        },
        16 | 17 => {
            let mut c = vec![
                "XREADGROUP".into(),
                "GROUP".into(),
                group,
                consumer,
                "COUNT".into(),
                rng.gen_range(1..4).to_string(),
            ];
            if rng.gen_bool(0.2) {
                c.push("NOACK".into());
            }
            c.extend([
                "STREAMS".into(),
                key,
                pick(rng, &[">", ">", "0", "5"]).into(),
            ]);
            c
        }
        18 => vec![
            "XACK".into(),
            key,
            group,
            stream_id(rng).replace("-*", ""),
            stream_id(rng).replace("-*", ""),
        ],
        19 => vec!["XPENDING".into(), key, group],
        20 => {
            let mut c = vec![
                "XCLAIM".into(),
                key,
                group,
                consumer,
                "0".into(),
                stream_id(rng).replace("-*", ""),
                stream_id(rng).replace("-*", ""),
            ];
            if rng.gen_bool(0.5) {
                c.push("JUSTID".into());
            }
            if rng.gen_bool(0.2) {
                c.push("FORCE".into());
            }
            c
        }
        21 => {
            let mut c = vec![
                "XAUTOCLAIM".into(),
                key,
                group,
                consumer,
                "0".into(),
                stream_bound(rng).replace(['-', '+'], "0"),
                "COUNT".into(),
                rng.gen_range(1..4).to_string(),
            ];
            if rng.gen_bool(0.5) {
                c.push("JUSTID".into());
            }
            c
        }
        22 => vec!["XINFO".into(), "GROUPS".into(), key],
        _ => match rng.gen_range(0..6) {
            0 => vec![
                "CONFIG".into(),
                "SET".into(),
                "stream-node-max-entries".into(),
                pick(rng, &["2", "3", "100"]).into(),
            ],
            1 => vec!["XSETID".into(), key, stream_id(rng).replace("-*", "")],
            2 => vec!["SET".into(), "kstr".into(), "x".into()],
            3 => vec!["DEL".into(), key],
            _ => vec!["XLEN".into(), key],
        },
    };
    cmd.shrink_to_fit();
    cmd
}

#[test]
fn random_stream_sequences_match_redis() {
    let redis = RedisServer::start();
    for (i, seed) in seeds().into_iter().enumerate() {
        println!("random stream differential: seed {seed}");
        let threads = if i % 2 == 0 { 1 } else { 4 };
        run_with(seed, 3000, threads, &redis, gen_stream_command);
    }
}
