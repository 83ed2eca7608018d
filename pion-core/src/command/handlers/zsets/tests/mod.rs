//! Behaviour of the sorted-set commands, with replies checked against Redis 7.0.15.

mod transcripts;

use crate::value::{EncodingLimits, SetValue, Value};
use crate::{Engine, EngineOptions, Reply};

fn engine() -> Engine {
    Engine::in_memory(EngineOptions::default())
}

/// A compact, protocol-neutral rendering of a reply that keeps the RESP3 distinctions
/// (doubles `,1.5`, pairs `(m ,1)`, nulls `nil` / `nil*`).
fn show(r: &Reply) -> String {
    let list = |v: &[Reply]| v.iter().map(show).collect::<Vec<_>>().join(" ");
    match r {
        Reply::Status(s) => format!("+{s}"),
        Reply::Error(s) => format!("-{s}"),
        Reply::Integer(i) => format!(":{i}"),
        Reply::Bulk(b) | Reply::Verbatim(_, b) => {
            let text: String = b
                .iter()
                .flat_map(|c| std::ascii::escape_default(*c))
                .map(char::from)
                .collect();
            format!("\"{text}\"")
        }
        Reply::BigNumber(digits) => format!("({digits}"),
        Reply::Attributed(_, inner) => show(inner),
        Reply::Null => "nil".into(),
        Reply::NullArray => "nil*".into(),
        Reply::Array(v) => format!("[{}]", list(v)),
        Reply::Set(v) => format!("~[{}]", list(v)),
        Reply::Push(v) => format!(">[{}]", list(v)),
        Reply::Several(v) => format!("+[{}]", list(v)),
        Reply::Map(v) | Reply::PairsMap(v) => format!(
            "%[{}]",
            v.iter()
                .map(|(a, b)| format!("{} {}", show(a), show(b)))
                .collect::<Vec<_>>()
                .join(" ")
        ),
        Reply::Pairs(v) => format!(
            "[{}]",
            v.iter()
                .map(|(a, b)| format!("({} {})", show(a), show(b)))
                .collect::<Vec<_>>()
                .join(" ")
        ),
        Reply::Double(d) => format!(",{}", crate::util::num::fmt_g17(*d)),
        Reply::ShortDouble(d) => format!(",{}", crate::util::num::fmt_shortest(*d)),
        Reply::HumanDouble(d) => format!(",{}", crate::util::num::fmt_human(*d)),
        Reply::Bool(b) => format!("#{b}"),
    }
}

/// Runs `command args -> expected` lines (arguments split on single spaces) in one
/// session and checks each reply's [`show`] rendering. The expected replies were
/// taken from Redis 7.0.15.
fn transcript(e: &Engine, script: &str) {
    let mut s = e.session();
    for line in script.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let (cmd, want) = line.split_once(" -> ").unwrap_or((line, "?"));
        let args: Vec<&str> = cmd.split(' ').collect();
        assert_eq!(show(&s.execute(&args)), want, "{cmd}");
    }
}

/// Stores a plain set directly (the set commands live in another family).
fn plain_set(e: &Engine, key: &str, members: &[&str]) {
    let limits = EncodingLimits::default();
    let mut set = SetValue::new();
    for m in members {
        set.insert(m.as_bytes(), &limits);
    }
    let mut ks = e.keyspace().lock_keys(&[key], 0);
    assert_eq!(ks.set(0, key.as_bytes(), Value::Set(set)), Ok(()));
}

/// The encoding of the sorted set at `key`.
fn encoding(e: &Engine, key: &str) -> Option<&'static str> {
    let mut ks = e.keyspace().lock_keys(&[key], 0);
    let found = ks.peek(0, key.as_bytes()).ok().flatten();
    found.map(|entry| entry.value.encoding())
}

fn bulk(s: &str) -> Reply {
    Reply::Bulk(s.as_bytes().to_vec())
}

#[test]
fn reply_shapes_follow_resp3() {
    let e = engine();
    assert_eq!(
        e.execute(0, &["ZADD", "z", "1.5", "a", "2", "b", "3", "c"]),
        Reply::Integer(3)
    );
    assert_eq!(e.execute(0, &["ZSCORE", "z", "a"]), Reply::Double(1.5));
    assert_eq!(
        e.execute(0, &["ZRANGE", "z", "0", "0", "WITHSCORES"]),
        Reply::Pairs(vec![(bulk("a"), Reply::Double(1.5))])
    );
    assert_eq!(
        e.execute(0, &["ZRANGE", "z", "0", "0"]),
        Reply::Array(vec![bulk("a")])
    );
    assert_eq!(
        e.execute(0, &["ZMSCORE", "z", "b", "x"]),
        Reply::Array(vec![Reply::Double(2.0), Reply::Null])
    );
    assert_eq!(
        e.execute(0, &["ZINCRBY", "z", "1", "a"]),
        Reply::Double(2.5)
    );
    assert_eq!(
        e.execute(0, &["ZADD", "z", "NX", "INCR", "1", "a"]),
        Reply::Null
    );
    // ZPOPMIN without a count is one flat couple; with a count, pairs.
    assert_eq!(
        e.execute(0, &["ZPOPMIN", "z"]),
        Reply::Array(vec![bulk("b"), Reply::Double(2.0)])
    );
    assert_eq!(
        e.execute(0, &["ZPOPMAX", "z", "1"]),
        Reply::Pairs(vec![(bulk("c"), Reply::Double(3.0))])
    );
    // ZMPOP nests its pairs in both protocols.
    assert_eq!(
        e.execute(0, &["ZMPOP", "1", "z", "MIN"]),
        Reply::Array(vec![
            bulk("z"),
            Reply::Array(vec![Reply::Array(vec![bulk("a"), Reply::Double(2.5)])])
        ])
    );
    assert_eq!(e.execute(0, &["ZMPOP", "1", "z", "MIN"]), Reply::NullArray);
    assert_eq!(e.execute(0, &["ZRANDMEMBER", "z"]), Reply::Null);
    assert_eq!(e.execute(0, &["ZPOPMIN", "z"]), Reply::Array(vec![]));
}

#[test]
fn wrong_arity_is_reported_by_name() {
    let e = engine();
    for (args, name) in [
        (&["ZCARD"][..], "zcard"),
        (&["ZADD", "z", "1"][..], "zadd"),
        (&["ZRANGESTORE", "d", "z", "0"][..], "zrangestore"),
        (&["ZINCRBY", "z", "1"][..], "zincrby"),
        (&["ZUNIONSTORE", "d", "1"][..], "zunionstore"),
        (&["ZMPOP", "1", "z"][..], "zmpop"),
        (&["ZSCAN", "z"][..], "zscan"),
    ] {
        assert_eq!(
            e.execute(0, args),
            Reply::error(format!(
                "ERR wrong number of arguments for '{name}' command"
            ))
        );
    }
}

#[test]
fn members_are_binary_safe() {
    let e = engine();
    let odd: &[u8] = b"a\x00b\xff\r\n";
    let args: [&[u8]; 6] = [b"ZADD", b"z", b"0", odd, b"0", b""];
    assert_eq!(e.execute(0, &args), Reply::Integer(2));
    assert_eq!(
        e.execute(0, &[&b"ZSCORE"[..], b"z", odd]),
        Reply::Double(0.0)
    );
    assert_eq!(e.execute(0, &[&b"ZRANK"[..], b"z", b""]), Reply::Integer(0));
    assert_eq!(
        e.execute(0, &["ZRANGEBYLEX", "z", "-", "+"]),
        Reply::Array(vec![Reply::Bulk(Vec::new()), Reply::Bulk(odd.to_vec())])
    );
    let lex_min: Vec<u8> = [b"[".as_slice(), odd].concat();
    assert_eq!(
        e.execute(0, &[&b"ZLEXCOUNT"[..], b"z", &lex_min, b"+"]),
        Reply::Integer(1)
    );
    assert_eq!(
        e.execute(0, &["ZLEXCOUNT", "z", "[", "(a"]),
        Reply::Integer(1)
    );
    assert_eq!(e.execute(0, &[&b"ZREM"[..], b"z", odd]), Reply::Integer(1));
}

#[test]
fn encodings_follow_redis_thresholds() {
    let e = engine();
    let mut dup: Vec<String> = vec!["ZADD".into(), "dup".into()];
    for _ in 0..129 {
        dup.extend(["1".to_string(), "a".to_string()]);
    }
    assert_eq!(e.execute(0, &dup), Reply::Integer(1));
    assert_eq!(encoding(&e, "dup"), Some("listpack"));
    let long = "x".repeat(65);
    assert_eq!(
        e.execute(0, &["ZADD", "long", "1", &long]),
        Reply::Integer(1)
    );
    assert_eq!(encoding(&e, "long"), Some("skiplist"));
    let edge = "x".repeat(64);
    assert_eq!(
        e.execute(0, &["ZADD", "edge", "1", &edge]),
        Reply::Integer(1)
    );
    assert_eq!(encoding(&e, "edge"), Some("listpack"));
    let mut many: Vec<String> = vec!["ZADD".into(), "many".into()];
    for i in 0..128 {
        many.extend([i.to_string(), format!("m{i}")]);
    }
    assert_eq!(e.execute(0, &many), Reply::Integer(128));
    assert_eq!(encoding(&e, "many"), Some("listpack"));
    assert_eq!(
        e.execute(0, &["ZADD", "many", "200", "extra"]),
        Reply::Integer(1)
    );
    assert_eq!(encoding(&e, "many"), Some("skiplist"));
    // Removing members never converts back...
    assert_eq!(
        e.execute(0, &["ZREM", "many", "extra", "m1", "m2"]),
        Reply::Integer(3)
    );
    assert_eq!(encoding(&e, "many"), Some("skiplist"));
    // ...but a stored result that fits is a listpack again.
    assert_eq!(
        e.execute(0, &["ZRANGESTORE", "small", "many", "0", "9"]),
        Reply::Integer(10)
    );
    assert_eq!(encoding(&e, "small"), Some("listpack"));
    assert_eq!(
        e.execute(0, &["ZUNIONSTORE", "u", "1", "many"]),
        Reply::Integer(126)
    );
    assert_eq!(encoding(&e, "u"), Some("listpack"));
    assert_eq!(
        e.execute(0, &["ZUNIONSTORE", "u2", "2", "many", "long"]),
        Reply::Integer(127)
    );
    assert_eq!(encoding(&e, "u2"), Some("skiplist"));
}

#[test]
fn large_sets_answer_rank_queries_like_a_sorted_model() {
    let e = engine();
    // Scores collide on purpose so ties order by member.
    let mut model: Vec<(i64, String)> = (0..2000)
        .map(|i| ((i * 7919) % 97, format!("m{i:04}")))
        .collect();
    for chunk in model.chunks(100) {
        let mut args = vec!["ZADD".to_string(), "big".to_string()];
        for (s, m) in chunk {
            args.extend([s.to_string(), m.clone()]);
        }
        assert_eq!(e.execute(0, &args), Reply::Integer(100));
    }
    model.sort();
    assert_eq!(encoding(&e, "big"), Some("skiplist"));
    for i in [0usize, 1, 500, 1234, 1999] {
        let (s, m) = &model[i];
        assert_eq!(e.execute(0, &["ZRANK", "big", m]), Reply::Integer(i as i64));
        assert_eq!(
            e.execute(0, &["ZREVRANK", "big", m]),
            Reply::Integer(1999 - i as i64)
        );
        let idx = i.to_string();
        assert_eq!(
            e.execute(0, &["ZRANGE", "big", &idx, &idx, "WITHSCORES"]),
            Reply::Pairs(vec![(bulk(m), Reply::Double(*s as f64))])
        );
    }
    let count = model.iter().filter(|(s, _)| (10..50).contains(s)).count();
    assert_eq!(
        e.execute(0, &["ZCOUNT", "big", "10", "(50"]),
        Reply::Integer(count as i64)
    );
    let want: Vec<Reply> = model
        .iter()
        .filter(|(s, _)| *s >= 10)
        .skip(5)
        .take(3)
        .map(|(_, m)| bulk(m))
        .collect();
    assert_eq!(
        e.execute(
            0,
            &["ZRANGEBYSCORE", "big", "10", "+inf", "LIMIT", "5", "3"]
        ),
        Reply::Array(want)
    );
    let want: Vec<Reply> = model
        .iter()
        .rev()
        .skip(10)
        .take(4)
        .map(|(_, m)| bulk(m))
        .collect();
    assert_eq!(
        e.execute(0, &["ZREVRANGE", "big", "10", "13"]),
        Reply::Array(want)
    );
    assert_eq!(
        e.execute(0, &["ZREMRANGEBYRANK", "big", "100", "-101"]),
        Reply::Integer(1800)
    );
    model.drain(100..1900);
    let want: Vec<Reply> = model.iter().map(|(_, m)| bulk(m)).collect();
    assert_eq!(
        e.execute(0, &["ZRANGE", "big", "0", "-1"]),
        Reply::Array(want)
    );
}

#[test]
fn random_members_come_from_the_set() {
    let e = engine();
    assert_eq!(
        e.execute(0, &["ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d"]),
        Reply::Integer(4)
    );
    let members = [bulk("a"), bulk("b"), bulk("c"), bulk("d")];
    let Reply::Array(picked) = e.execute(0, &["ZRANDMEMBER", "z", "-20"]) else {
        panic!("array expected");
    };
    assert_eq!(picked.len(), 20);
    assert!(picked.iter().all(|m| members.contains(m)));
    let Reply::Array(mut distinct) = e.execute(0, &["ZRANDMEMBER", "z", "3"]) else {
        panic!("array expected");
    };
    assert_eq!(distinct.len(), 3);
    distinct.sort_by_key(|r| r.as_bytes().map(<[u8]>::to_vec));
    distinct.dedup();
    assert_eq!(distinct.len(), 3);
    let Reply::Pairs(pairs) = e.execute(0, &["ZRANDMEMBER", "z", "-3", "WITHSCORES"]) else {
        panic!("pairs expected");
    };
    for (m, s) in pairs {
        assert_eq!(
            e.execute(
                0,
                &[b"ZSCORE".as_slice(), b"z", m.as_bytes().unwrap_or_default()]
            ),
            s
        );
    }
    assert!(members.contains(&e.execute(0, &["ZRANDMEMBER", "z"])));
}

#[test]
fn command_table_matches_redis() {
    use crate::command::flags::*;
    use crate::command::table;
    let t = table();
    let info = |name: &str| {
        t.get(name.as_bytes())
            .map(|s| (s.arity, s.flags, s.keys.first, s.keys.last, s.keys.step))
    };
    assert_eq!(info("zadd"), Some((-4, WRITE | DENYOOM | FAST, 1, 1, 1)));
    assert_eq!(info("zrangestore"), Some((-5, WRITE | DENYOOM, 1, 2, 1)));
    assert_eq!(info("zrange"), Some((-4, READONLY, 1, 1, 1)));
    assert_eq!(info("zmpop"), Some((-4, WRITE | MOVABLE_KEYS, 0, 0, 0)));
    assert_eq!(
        info("zunionstore"),
        Some((-4, WRITE | DENYOOM | MOVABLE_KEYS, 1, 1, 1))
    );
    assert_eq!(
        info("zintercard"),
        Some((-3, READONLY | MOVABLE_KEYS, 0, 0, 0))
    );
    let keys = |args: &[&str]| {
        let argv: Vec<Vec<u8>> = args.iter().map(|a| a.as_bytes().to_vec()).collect();
        let spec = t.get(&argv[0]).map(|s| s.keys.find);
        spec.flatten().map(|f| f(&argv))
    };
    assert_eq!(
        keys(&["zunionstore", "d", "2", "a", "b", "WEIGHTS", "1", "2"]),
        Some(Ok(vec![1, 3, 4]))
    );
    assert_eq!(keys(&["zinter", "2", "a", "b"]), Some(Ok(vec![2, 3])));
    assert_eq!(keys(&["zmpop", "2", "a", "b", "MIN"]), Some(Ok(vec![2, 3])));
    assert_eq!(
        keys(&["zmpop", "2", "a", "b"]),
        Some(Err(crate::error::OpError::Syntax))
    );
}
