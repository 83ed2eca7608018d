//! Payloads redis-server 7.0 made, decoded and (where Redis's choice is fixed by the
//! data) reproduced byte for byte; round trips of every type; hostile payloads.

use super::*;
use crate::value::list::End;
use crate::value::stream::{Fields, StreamId, StreamValue};
use crate::value::{HashValue, ListValue, SetValue, ZSetValue};
use proptest::prelude::*;

fn limits() -> EncodingLimits {
    EncodingLimits::default()
}

fn round_trip(v: &Value) -> Value {
    let payload = dump(v, &DumpOptions::default());
    restore(&payload, &LoadOptions::default()).expect("restores")
}

/// Payloads from `redis-cli --no-raw DUMP` on redis-server 7.0.15.
const REDIS_STRING: &[u8] = b"\x00\x05hello\n\x00cr\xdfve4 \n";
const REDIS_INT: &[u8] = b"\x00\xc0{\n\x00H\xe2S\xe1\x00zg\xb9";
const REDIS_LIST: &[u8] =
    b"\x12\x01\x02\x11\x11\x00\x00\x00\x04\x00\x81a\x02\x81b\x02\x01\x01\x02\x01\xff\n\x00mrq>\x9bCH+";
const REDIS_ZSET: &[u8] = b"\x11\xc3(1\x121\x00\x00\x00\x08\x00\x81d\x02\x00\x01\x81c\x02\x930.10\xe0\x05\x00\x0f1\x14\x81a\x02\x831.5\x04\x81b\x02\x02\x01\xff\n\x00L\xf4/\xec\x8a=\n\xcb";
const REDIS_INTSET: &[u8] =
    b"\x0b\x0e\x02\x00\x00\x00\x03\x00\x00\x00\x01\x00\x02\x00\x03\x00\n\x00\xa5\x02\\\xe2mnM\x1b";
const REDIS_HASH: &[u8] =
    b"\x10\x12\x12\x00\x00\x00\x04\x00\x81f\x02\x81v\x02\x81n\x02\x01\x01\xff\n\x00\xfc\xe4\x08\xf1y\"\xe0\x16";

#[test]
fn reproduces_redis_payloads_byte_for_byte() {
    for payload in [
        REDIS_STRING,
        REDIS_INT,
        REDIS_LIST,
        REDIS_ZSET,
        REDIS_INTSET,
        REDIS_HASH,
    ] {
        let v = restore(payload, &LoadOptions::default()).expect("restores");
        assert_eq!(dump(&v, &DumpOptions::default()), payload, "{v:?}");
    }
    let z = restore(REDIS_ZSET, &LoadOptions::default()).expect("restores");
    let z = z.as_zset().expect("zset");
    assert_eq!(z.score(b"c"), Some(0.1));
    assert_eq!(z.score(b"d"), Some(0.0));
    assert_eq!(z.encoding(), "listpack");
}

#[test]
fn envelope_errors() {
    assert_eq!(
        restore(b"short", &LoadOptions::default()),
        Err(RdbError::Envelope)
    );
    let mut bad_crc = REDIS_STRING.to_vec();
    let n = bad_crc.len();
    bad_crc[n - 1] ^= 1;
    assert_eq!(
        restore(&bad_crc, &LoadOptions::default()),
        Err(RdbError::Envelope)
    );
    // A version newer than Pion reads, with a correct checksum.
    let mut newer = REDIS_STRING[..REDIS_STRING.len() - 10].to_vec();
    newer.extend_from_slice(&13u16.to_le_bytes());
    let crc = crc64(0, &newer);
    newer.extend_from_slice(&crc.to_le_bytes());
    assert_eq!(
        restore(&newer, &LoadOptions::default()),
        Err(RdbError::Envelope)
    );
}

/// A payload with a correct footer around `body`.
fn wrap(body: &[u8]) -> Vec<u8> {
    let mut p = body.to_vec();
    p.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = crc64(0, &p);
    p.extend_from_slice(&crc.to_le_bytes());
    p
}

#[test]
fn reads_legacy_encodings() {
    let opts = LoadOptions::default();
    // A linked list, a text-score sorted set, a hash table hash, a zipmap.
    let list = restore(&wrap(b"\x01\x02\x01a\xc0\x07"), &opts).expect("list");
    assert_eq!(
        list.as_list().expect("list").iter().collect::<Vec<_>>(),
        [&b"a"[..], &b"7"[..]]
    );
    let z = restore(&wrap(b"\x03\x02\x01a\x031.5\x01b\xfe"), &opts).expect("zset");
    assert_eq!(z.as_zset().expect("zset").score(b"b"), Some(f64::INFINITY));
    assert!(
        restore(&wrap(b"\x03\x01\x01a\xfd"), &opts).is_err(),
        "NaN score"
    );
    let h = restore(
        &wrap(b"\x09\x0e\x02\x01f\x01\x00v\x02ab\x02\x00cd\xff"),
        &opts,
    );
    let h = h.expect("zipmap");
    assert_eq!(h.as_hash().expect("hash").get(b"ab"), Some(&b"cd"[..]));
    // Redis 5's stream, from unit/type/stream-cgroups.tcl.
    let legacy = b"\x0F\x01\x10\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\xC3\x40\x4A\x40\x57\x16\x57\x00\x00\x00\x23\x00\x02\x01\x04\x01\x01\x01\x84\x64\x61\x74\x61\x05\x00\x01\x03\x01\x00\x20\x01\x03\x81\x61\x02\x04\x20\x0A\x00\x01\x40\x0A\x00\x62\x60\x0A\x00\x02\x40\x0A\x00\x63\x60\x0A\x40\x22\x01\x81\x64\x20\x0A\x40\x39\x20\x0A\x00\x65\x60\x0A\x00\x05\x40\x0A\x00\x66\x20\x0A\x00\xFF\x02\x06\x00\x02\x02\x67\x31\x05\x00\x04\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x3E\xF7\x83\x43\x7A\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00\x3E\xF7\x83\x43\x7A\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x04\x00\x00\x00\x00\x00\x00\x00\x00\x3E\xF7\x83\x43\x7A\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00\x00\x3E\xF7\x83\x43\x7A\x01\x00\x00\x01\x01\x03\x63\x31\x31\x3E\xF7\x83\x43\x7A\x01\x00\x00\x04\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x04\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x05\x00\x00\x00\x00\x00\x00\x00\x00\x02\x67\x32\x00\x00\x00\x00\x09\x00\x3D\x52\xEF\x68\x67\x52\x1D\xFA";
    let s = restore(legacy, &opts).expect("stream");
    let s = s.as_stream().expect("stream");
    assert_eq!(s.len(), 2);
    assert_eq!(s.entries_added, 2);
    let g1 = &s.groups[&b"g1".to_vec()];
    assert_eq!((g1.entries_read, g1.pel.len()), (1, 4));
    assert_eq!(s.groups[&b"g2".to_vec()].entries_read, 0);
}

#[test]
fn refuses_duplicates_and_empty_keys() {
    let opts = LoadOptions::default();
    assert!(restore(&wrap(b"\x02\x02\x01a\x01a"), &opts).is_err());
    assert!(restore(&wrap(b"\x04\x02\x01a\x01b\x01a\x01c"), &opts).is_err());
    assert!(restore(&wrap(b"\x01\x00"), &opts).is_err());
    assert!(restore(&wrap(b"\x63"), &opts).is_err());
}

#[test]
fn lists_split_into_nodes_as_rpush_fills_them() {
    let l: ListValue = (0..2000)
        .map(|i| format!("element-{i}").into_bytes())
        .collect();
    let v = Value::List(l);
    let payload = dump(&v, &DumpOptions::default());
    // Nodes of at most 8 KiB: more than one.
    assert_eq!(payload[0], types::LIST_QUICKLIST_2);
    assert!(payload[1] > 1);
    assert_eq!(round_trip(&v), v);
    let counted = DumpOptions {
        list_fill: 5,
        ..DumpOptions::default()
    };
    assert_eq!(dump(&v, &counted)[1..3], [0x41, 0x90]); // 400 nodes
    let compressed = DumpOptions {
        list_compress_depth: 1,
        ..DumpOptions::default()
    };
    let p = dump(&v, &compressed);
    assert_eq!(restore(&p, &LoadOptions::default()).expect("restores"), v);
}

fn stream_with_groups() -> StreamValue {
    let mut s = StreamValue::new();
    let limits = crate::value::stream::NodeLimits::default();
    for i in 1..=250u64 {
        let fields: Fields = if i % 7 == 0 {
            vec![b"other".to_vec(), i.to_string().into_bytes()].into_boxed_slice()
        } else {
            vec![
                b"f".to_vec(),
                b"v".to_vec(),
                b"n".to_vec(),
                i.to_string().into_bytes(),
            ]
            .into_boxed_slice()
        };
        s.append(StreamId::new(1000 + i, i % 3), fields, limits);
    }
    s.delete(StreamId::new(1005, 2));
    let mut g = crate::value::stream::ConsumerGroup::new(StreamId::new(1010, 1), 10);
    g.create_consumer(b"alice", 77);
    g.create_consumer(b"", 78);
    g.deliver(StreamId::new(1003, 0), b"alice", 99);
    g.deliver(StreamId::new(1004, 1), b"", 100);
    s.groups.insert(b"g".to_vec(), g);
    s
}

#[test]
fn streams_round_trip_with_their_groups() {
    let v = Value::Stream(Box::new(stream_with_groups()));
    let back = round_trip(&v);
    let (a, b) = (
        v.as_stream().expect("stream"),
        back.as_stream().expect("stream"),
    );
    assert_eq!(a.len(), b.len());
    let all = |s: &StreamValue| {
        s.range(StreamId::MIN, StreamId::MAX, false)
            .map(|(id, f)| (id, f.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(all(a), all(b));
    assert_eq!(a.groups, b.groups);
    assert_eq!(
        (a.last_id, a.first_id, a.max_deleted, a.entries_added),
        (b.last_id, b.first_id, b.max_deleted, b.entries_added)
    );
}

/// Any value of the core types, with their encodings.
fn any_value() -> impl Strategy<Value = Value> {
    let bytes = || {
        prop_oneof![
            proptest::collection::vec(any::<u8>(), 0..80),
            (-100_000i64..100_000).prop_map(|v| v.to_string().into_bytes()),
        ]
    };
    prop_oneof![
        bytes().prop_map(Value::string),
        proptest::collection::vec(bytes(), 1..60)
            .prop_map(|v| Value::List(v.into_iter().collect())),
        proptest::collection::vec(bytes(), 1..40).prop_map(|v| {
            let mut s = SetValue::new();
            for m in v {
                s.insert(&m, &limits());
            }
            Value::Set(s)
        }),
        proptest::collection::vec((bytes(), bytes()), 1..40).prop_map(|v| {
            let mut h = HashValue::new();
            for (f, x) in v {
                h.insert(f, x, &limits());
            }
            Value::Hash(h)
        }),
        proptest::collection::vec((bytes(), -1e6f64..1e6), 1..200).prop_map(|v| {
            let mut z = ZSetValue::new();
            for (m, s) in v {
                z.insert(&m, (s * 4.0).round() / 4.0, &limits());
            }
            Value::ZSet(z)
        }),
    ]
}

proptest! {
    #[test]
    fn every_value_round_trips(v in any_value(), compress in any::<bool>(), fill in -5i64..20) {
        let opts = DumpOptions { compress, list_fill: fill, list_compress_depth: 0 };
        let back = restore(&dump(&v, &opts), &LoadOptions::default()).expect("restores");
        prop_assert_eq!(back.encoding(), v.encoding());
        match (&v, &back) {
            (Value::Hash(a), Value::Hash(b)) => {
                let mut x: Vec<_> = a.iter().collect();
                let mut y: Vec<_> = b.iter().collect();
                if !a.is_compact() { x.sort(); y.sort(); }
                prop_assert_eq!(x, y);
            }
            (Value::Set(a), Value::Set(b)) => {
                let (mut x, mut y) = (a.members(), b.members());
                x.sort(); y.sort();
                prop_assert_eq!(x, y);
            }
            _ => prop_assert_eq!(&back, &v),
        }
    }

    #[test]
    fn hostile_bodies_never_panic(body in proptest::collection::vec(any::<u8>(), 0..300)) {
        let _ = load(&body, &LoadOptions::default());
    }

    #[test]
    fn damaged_payloads_never_panic(v in any_value(), at in any::<usize>(), x in 1u8..=255) {
        let p = dump(&v, &DumpOptions::default());
        let mut body = p[..p.len() - 10].to_vec();
        let i = at % body.len();
        body[i] ^= x;
        let _ = load(&body, &LoadOptions::default());
    }
}

/// A stream from arbitrary appends (ids increasing), deletions, and a group.
fn any_stream() -> impl Strategy<Value = StreamValue> {
    let entry = (
        1u64..4,
        0u64..3,
        proptest::collection::vec((0u8..4, any::<u16>()), 1..4),
    );
    (
        proptest::collection::vec(entry, 1..150),
        proptest::collection::vec(any::<prop::sample::Index>(), 0..20),
    )
        .prop_map(|(entries, deletions)| {
            let mut s = StreamValue::new();
            let limits = crate::value::stream::NodeLimits {
                max_entries: 10,
                max_bytes: 300,
            };
            let mut id = StreamId::new(1, 0);
            let mut ids = Vec::new();
            for (dms, seq, fields) in entries {
                id = StreamId::new(id.ms + dms, seq);
                let f: Fields = fields
                    .iter()
                    .flat_map(|(k, v)| [vec![b'f', b'0' + k], v.to_string().into_bytes()])
                    .collect::<Vec<_>>()
                    .into_boxed_slice();
                s.append(id, f, limits);
                ids.push(id);
            }
            for d in deletions {
                s.delete(ids[d.index(ids.len())]);
            }
            let mut g = crate::value::stream::ConsumerGroup::new(ids[0], 1);
            g.create_consumer(b"c", 5);
            g.deliver(ids[ids.len() / 2], b"c", 9);
            s.groups.insert(b"g".to_vec(), g);
            s
        })
}

proptest! {
    #[test]
    fn streams_round_trip(s in any_stream()) {
        let back = round_trip(&Value::Stream(Box::new(s.clone())));
        let b = back.as_stream().expect("stream");
        let all = |s: &StreamValue| s.range(StreamId::MIN, StreamId::MAX, false).map(|(id, f)| (id, f.clone())).collect::<Vec<_>>();
        prop_assert_eq!(all(&s), all(b));
        prop_assert_eq!(&s.groups, &b.groups);
        prop_assert_eq!((s.last_id, s.first_id, s.max_deleted, s.entries_added), (b.last_id, b.first_id, b.max_deleted, b.entries_added));
    }

    #[test]
    fn json_documents_round_trip(text in r#"\{"[a-z]{1,4}":(\[(-?[0-9]{1,3}(\.[0-9])?,?){0,4}\]|"[a-z ]{0,30}"|true|null)\}"#) {
        let Ok(root) = crate::value::json::parse(text.replace(",]", "]").as_bytes()) else { return Ok(()); };
        let v = Value::Json(Box::new(crate::value::JsonValue::new(root)));
        prop_assert_eq!(round_trip(&v), v);
    }
}

#[test]
fn list_end_pushes_keep_order() {
    let mut l = ListValue::new();
    l.push(End::Left, b"b".to_vec());
    l.push(End::Left, b"a".to_vec());
    let v = Value::List(l);
    assert_eq!(round_trip(&v), v);
}
