//! Engine tests of the stream commands: seeded random arguments (the same
//! vocabulary as the `stream_args` fuzz target) never panic, and the state a
//! snapshot keeps of a stream with groups decodes to the same value.

const WORDS: &[&str] = &[
    "MAXLEN",
    "MINID",
    "LIMIT",
    "NOMKSTREAM",
    "=",
    "~",
    "*",
    "COUNT",
    "BLOCK",
    "STREAMS",
    "GROUP",
    "NOACK",
    "IDLE",
    "TIME",
    "RETRYCOUNT",
    "FORCE",
    "JUSTID",
    "LASTID",
    "MKSTREAM",
    "ENTRIESREAD",
    "ENTRIESADDED",
    "MAXDELETEDID",
    "FULL",
    "$",
    ">",
    "-",
    "+",
    "g",
    "c",
    "f",
    "0",
    "0-0",
    "0-1",
    "1",
    "1-*",
    "5-5",
    "(5-5",
    "(0-0",
    "(-",
    "18446744073709551615",
    "18446744073709551615-18446744073709551615",
    "18446744073709551616",
    "-1",
    "1-2-3",
    "",
    "3",
    "2-1",
    "9223372036854775807",
];

#[test]
fn random_arguments_never_panic() {
    let e = crate::Engine::in_memory(crate::EngineOptions::default());
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = |n: usize| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % n as u64) as usize
    };
    for round in 0..3000 {
        if round % 50 == 0 {
            e.execute(0, &["XADD", "s0", "*", "f", "v"]);
            e.execute(0, &["XGROUP", "CREATE", "s0", "g", "0"]);
            e.execute(0, &["XREADGROUP", "GROUP", "g", "c", "STREAMS", "s0", ">"]);
        }
        let args: Vec<&str> = (0..next(10)).map(|_| WORDS[next(WORDS.len())]).collect();
        let key = ["s0", "s1", "s2"][next(3)];
        for prefix in [
            &["XADD", key][..],
            &["XTRIM", key],
            &["XRANGE", key],
            &["XREVRANGE", key],
            &["XDEL", key],
            &["XSETID", key],
            &["XREAD"],
            &["XREADGROUP"],
            &["XGROUP", "CREATE", key],
            &["XGROUP", "SETID", key],
            &["XACK", key],
            &["XPENDING", key],
            &["XCLAIM", key],
            &["XAUTOCLAIM", key],
            &["XINFO", "STREAM", key],
        ] {
            let mut argv = prefix.to_vec();
            argv.extend(&args);
            let _ = e.execute(0, &argv);
        }
    }
}

#[test]
fn a_stream_with_groups_survives_the_snapshot_encoding() {
    use crate::value::stream::{NodeLimits, StreamId};
    use crate::value::{StreamValue, Value};
    let mut s = StreamValue::new();
    let limits = NodeLimits {
        max_entries: 3,
        max_bytes: 4096,
    };
    for i in 1..=10 {
        let fields = vec![b"f".to_vec(), i.to_string().into_bytes()].into_boxed_slice();
        s.append(StreamId::new(i, 0), fields, limits);
    }
    s.delete(StreamId::new(2, 0));
    s.delete(StreamId::new(5, 0));
    let mut g = crate::value::stream::ConsumerGroup::new(StreamId::new(6, 0), 5);
    g.create_consumer(b"alice", 100);
    g.create_consumer(b"idle", 50);
    g.deliver(StreamId::new(3, 0), b"alice", 120);
    g.deliver(StreamId::new(4, 0), b"alice", 130);
    s.groups.insert(b"g".to_vec(), g);
    let value = Value::Stream(Box::new(s));
    assert_eq!(crate::keyspace::dump::round_trip_for_tests(&value), value);
}

/// An `XACK` that acks nothing leaves its stream exactly as it was, so the key is not
/// settled again (its recorded size is not recomputed); one that acks is.
#[test]
fn an_xack_that_acks_nothing_does_not_settle_its_key() {
    use crate::keyspace::LockSet;
    use crate::reply::Reply;
    let e = crate::Engine::in_memory(crate::EngineOptions::default());
    e.execute(0, &["XADD", "s", "1-1", "f", "v"]);
    e.execute(0, &["XGROUP", "CREATE", "s", "g", "0"]);
    e.execute(0, &["XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"]);
    let recorded = |set: Option<u32>| {
        let mut ks = e.keyspace().lock(&LockSet::All, 0);
        let entry = ks.entry(0, b"s").ok().flatten().expect("the stream");
        if let Some(bytes) = set {
            entry.accounted = bytes;
        }
        entry.accounted
    };
    // A stale figure stands in for "not settled since".
    recorded(Some(1));
    assert_eq!(e.execute(0, &["XACK", "s", "g", "9-9"]), Reply::Integer(0));
    assert_eq!(
        e.execute(0, &["XACK", "s", "nogroup", "1-1"]),
        Reply::Integer(0)
    );
    assert_eq!(recorded(None), 1);
    assert_eq!(e.execute(0, &["XACK", "s", "g", "1-1"]), Reply::Integer(1));
    assert!(recorded(None) > 1, "an ack settles the key");
}
