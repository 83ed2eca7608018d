//! The crash harness's model: the values a client thread writes, the writes
//! themselves (as commands, with the reply the model expects and their effect on it),
//! and reading a namespace back from a restarted server to compare with the model.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{SystemTime, UNIX_EPOCH};

use rand::rngs::SmallRng;
use rand::Rng;

use crate::{Client, RespValue};

/// How far a key's absolute deadline may be from the model's (the model stamps the
/// deadline when it sends EXPIRE; the server when it executes it).
pub const TTL_TOLERANCE_MS: i64 = 3_000;

/// Keys of each kind in a thread's namespace.
pub const KEYS_PER_KIND: usize = 4;

/// Key kinds; each key holds one type for its whole life, so no write is a WRONGTYPE.
pub const KINDS: [&str; 6] = ["str", "cnt", "hash", "list", "zset", "set"];

/// Scores ZADD uses besides multiples of 0.25 (exact in binary and in text).
pub const SPECIAL_SCORES: [&str; 2] = ["+inf", "-inf"];

/// One key's value.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// A string.
    Str(Vec<u8>),
    /// A hash.
    Hash(BTreeMap<Vec<u8>, Vec<u8>>),
    /// A list.
    List(Vec<Vec<u8>>),
    /// A set.
    Set(BTreeSet<Vec<u8>>),
    /// A sorted set: member to score.
    ZSet(BTreeMap<Vec<u8>, f64>),
}

/// One key: value and absolute expiry deadline in Unix milliseconds.
#[derive(Clone, Debug)]
pub struct Entry {
    /// The value.
    pub value: Value,
    /// Absolute deadline (Unix ms), if any.
    pub deadline: Option<i64>,
}

/// A thread's view of its namespace.
pub type Model = BTreeMap<String, Entry>;

/// One write a client thread sends.
#[derive(Clone, Debug)]
pub enum Op {
    /// `SET key value`.
    Set(String, Vec<u8>),
    /// `INCR key`.
    Incr(String),
    /// `HSET key field value`.
    HSet(String, Vec<u8>, Vec<u8>),
    /// `RPUSH key items…`.
    RPush(String, Vec<Vec<u8>>),
    /// `ZADD key score member`.
    ZAdd(String, String, Vec<u8>),
    /// `SADD key members…`.
    SAdd(String, Vec<Vec<u8>>),
    /// Key, seconds, and the absolute deadline stamped when it was sent.
    Expire(String, u64, i64),
    /// `DEL key`.
    Del(String),
}

/// The current time in Unix milliseconds.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// An integer reply.
pub fn int(n: i64) -> RespValue {
    RespValue::Line(b':', n.to_string().into_bytes())
}

/// A string's bytes.
pub fn b(s: &str) -> Vec<u8> {
    s.as_bytes().to_vec()
}

/// Bytes as readable text.
pub fn show(bytes: &[u8]) -> String {
    format!("{:?}", String::from_utf8_lossy(bytes))
}

impl Op {
    /// The key it writes.
    pub fn key(&self) -> &str {
        match self {
            Op::Set(k, _)
            | Op::Incr(k)
            | Op::HSet(k, _, _)
            | Op::RPush(k, _)
            | Op::ZAdd(k, _, _)
            | Op::SAdd(k, _)
            | Op::Expire(k, _, _)
            | Op::Del(k) => k,
        }
    }

    /// The command as sent.
    pub fn args(&self) -> Vec<Vec<u8>> {
        match self {
            Op::Set(k, v) => vec![b("SET"), b(k), v.clone()],
            Op::Incr(k) => vec![b("INCR"), b(k)],
            Op::HSet(k, f, v) => vec![b("HSET"), b(k), f.clone(), v.clone()],
            Op::RPush(k, items) => [vec![b("RPUSH"), b(k)], items.clone()].concat(),
            Op::ZAdd(k, score, m) => vec![b("ZADD"), b(k), b(score), m.clone()],
            Op::SAdd(k, members) => [vec![b("SADD"), b(k)], members.clone()].concat(),
            Op::Expire(k, secs, _) => vec![b("EXPIRE"), b(k), b(&secs.to_string())],
            Op::Del(k) => vec![b("DEL"), b(k)],
        }
    }

    /// The command as readable text.
    pub fn describe(&self) -> String {
        self.args()
            .iter()
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Applies the write to `model`; returns the reply the server must give.
    pub fn apply(&self, model: &mut Model) -> RespValue {
        let fresh = |value: Value| Entry {
            value,
            deadline: None,
        };
        match self {
            Op::Set(k, v) => {
                // SET replaces the value and clears any TTL.
                model.insert(k.clone(), fresh(Value::Str(v.clone())));
                RespValue::Line(b'+', b("OK"))
            }
            Op::Incr(k) => {
                let entry = model
                    .entry(k.clone())
                    .or_insert_with(|| fresh(Value::Str(b("0"))));
                let Value::Str(v) = &mut entry.value else {
                    unreachable!("counter keys hold strings")
                };
                let n: i64 = String::from_utf8_lossy(v).parse().unwrap_or(0) + 1;
                *v = b(&n.to_string());
                int(n)
            }
            Op::HSet(k, f, v) => {
                let entry = model
                    .entry(k.clone())
                    .or_insert_with(|| fresh(Value::Hash(BTreeMap::new())));
                let Value::Hash(h) = &mut entry.value else {
                    unreachable!("hash keys hold hashes")
                };
                int(i64::from(h.insert(f.clone(), v.clone()).is_none()))
            }
            Op::RPush(k, items) => {
                let entry = model
                    .entry(k.clone())
                    .or_insert_with(|| fresh(Value::List(Vec::new())));
                let Value::List(l) = &mut entry.value else {
                    unreachable!("list keys hold lists")
                };
                l.extend(items.iter().cloned());
                int(l.len() as i64)
            }
            Op::ZAdd(k, score, m) => {
                let entry = model
                    .entry(k.clone())
                    .or_insert_with(|| fresh(Value::ZSet(BTreeMap::new())));
                let Value::ZSet(z) = &mut entry.value else {
                    unreachable!("zset keys hold sorted sets")
                };
                let score: f64 = score.parse().expect("generated scores parse");
                int(i64::from(z.insert(m.clone(), score).is_none()))
            }
            Op::SAdd(k, members) => {
                let entry = model
                    .entry(k.clone())
                    .or_insert_with(|| fresh(Value::Set(BTreeSet::new())));
                let Value::Set(s) = &mut entry.value else {
                    unreachable!("set keys hold sets")
                };
                let added = members.iter().filter(|m| s.insert((*m).clone())).count();
                int(added as i64)
            }
            Op::Expire(k, _, deadline) => match model.get_mut(k) {
                Some(entry) => {
                    entry.deadline = Some(*deadline);
                    int(1)
                }
                None => int(0),
            },
            Op::Del(k) => int(i64::from(model.remove(k).is_some())),
        }
    }
}

/// Random value bytes: sometimes binary, sometimes long.
pub fn random_bytes(rng: &mut SmallRng) -> Vec<u8> {
    let len = match rng.gen_range(0..10) {
        // Now and then a large value, so segments roll and snapshots trigger sooner.
        0 => rng.gen_range(500..3000),
        _ => rng.gen_range(0..40),
    };
    // Any byte, CR, LF and NUL included: values are binary-safe.
    (0..len).map(|_| rng.gen::<u8>()).collect()
}

/// A random write to one of `thread`'s keys.
pub fn gen_op(rng: &mut SmallRng, thread: usize) -> Op {
    let key = |rng: &mut SmallRng, kind: &str| {
        format!("c{thread}:{kind}{}", rng.gen_range(0..KEYS_PER_KIND))
    };
    let member = |rng: &mut SmallRng, n: usize| b(&format!("m{}", rng.gen_range(0..n)));
    match rng.gen_range(0..100) {
        0..=17 => Op::Set(key(rng, "str"), random_bytes(rng)),
        18..=31 => Op::Incr(key(rng, "cnt")),
        32..=45 => {
            let field = b(&format!("f{}", rng.gen_range(0..16)));
            let value = b(&format!("v{}", rng.gen_range(0..1000)));
            Op::HSet(key(rng, "hash"), field, value)
        }
        46..=59 => {
            let items = (0..rng.gen_range(1..=3))
                .map(|_| b(&format!("i{}", rng.gen_range(0..100_000))))
                .collect();
            Op::RPush(key(rng, "list"), items)
        }
        60..=73 => {
            let score = if rng.gen_range(0..20) == 0 {
                SPECIAL_SCORES[rng.gen_range(0..SPECIAL_SCORES.len())].to_string()
            } else {
                (f64::from(rng.gen_range(-400i32..400)) * 0.25).to_string()
            };
            Op::ZAdd(key(rng, "zset"), score, member(rng, 20))
        }
        74..=87 => {
            let members = (0..rng.gen_range(1..=3)).map(|_| member(rng, 30)).collect();
            Op::SAdd(key(rng, "set"), members)
        }
        88..=95 => {
            let kind = KINDS[rng.gen_range(0..KINDS.len())];
            let secs = rng.gen_range(1000..=5000u64);
            // The deadline is stamped when the command is sent.
            Op::Expire(key(rng, kind), secs, 0)
        }
        _ => {
            let kind = KINDS[rng.gen_range(0..KINDS.len())];
            Op::Del(key(rng, kind))
        }
    }
}

/// The payload of a bulk reply, if it is one.
pub fn bulk(v: &RespValue) -> Option<Vec<u8>> {
    match v {
        RespValue::Bulk(_, Some(bytes)) => Some(bytes.clone()),
        _ => None,
    }
}

/// The bulk items of an array reply.
pub fn items(v: &RespValue) -> Result<Vec<Vec<u8>>, String> {
    match v {
        RespValue::Agg(_, Some(items)) => items
            .iter()
            .map(|i| bulk(i).ok_or_else(|| format!("non-bulk item in {}", v.render())))
            .collect(),
        other => Err(format!("expected an array, got {}", other.render())),
    }
}

/// The value of an integer reply.
pub fn integer(v: &RespValue) -> Result<i64, String> {
    match v {
        RespValue::Line(b':', n) => String::from_utf8_lossy(n)
            .parse()
            .map_err(|_| format!("bad integer {}", v.render())),
        other => Err(format!("expected an integer, got {}", other.render())),
    }
}

/// Sends a command; an I/O failure or an error reply becomes `Err`.
pub fn call(client: &mut Client, args: &[&[u8]]) -> Result<RespValue, String> {
    let (reply, _) = client
        .call(args)
        .map_err(|e| format!("connection error reading back: {e}"))?;
    if reply.is_error() {
        return Err(format!(
            "`{}` failed: {}",
            String::from_utf8_lossy(&args.concat()),
            reply.render()
        ));
    }
    Ok(reply)
}

/// Reads one key back: `None` when it does not exist.
pub fn read_key(client: &mut Client, key: &str) -> Result<Option<Entry>, String> {
    let k = key.as_bytes();
    let exists = integer(&call(client, &[b"EXISTS", k])?)?;
    let ty = call(client, &[b"TYPE", k])?;
    let ty = match &ty {
        RespValue::Line(b'+', t) => String::from_utf8_lossy(t).into_owned(),
        other => return Err(format!("TYPE {key}: {}", other.render())),
    };
    if exists == 0 {
        if ty != "none" {
            return Err(format!("{key}: EXISTS says 0 but TYPE says {ty}"));
        }
        return Ok(None);
    }
    let value = match ty.as_str() {
        "string" => {
            Value::Str(bulk(&call(client, &[b"GET", k])?).ok_or_else(|| format!("GET {key}: nil"))?)
        }
        "hash" => {
            let flat = items(&call(client, &[b"HGETALL", k])?)?;
            Value::Hash(
                flat.chunks(2)
                    .map(|p| (p[0].clone(), p.get(1).cloned().unwrap_or_default()))
                    .collect(),
            )
        }
        "list" => Value::List(items(&call(client, &[b"LRANGE", k, b"0", b"-1"])?)?),
        "set" => Value::Set(
            items(&call(client, &[b"SMEMBERS", k])?)?
                .into_iter()
                .collect(),
        ),
        "zset" => {
            let flat = items(&call(client, &[b"ZRANGE", k, b"0", b"-1", b"WITHSCORES"])?)?;
            let mut z = BTreeMap::new();
            for p in flat.chunks(2) {
                let score = p
                    .get(1)
                    .and_then(|s| String::from_utf8_lossy(s).parse::<f64>().ok())
                    .ok_or_else(|| format!("{key}: bad score in ZRANGE reply"))?;
                z.insert(p[0].clone(), score);
            }
            Value::ZSet(z)
        }
        other => return Err(format!("{key}: EXISTS says 1 but TYPE says {other}")),
    };
    let deadline = match integer(&call(client, &[b"PEXPIRETIME", k])?)? {
        -1 => None,
        -2 => return Err(format!("{key}: exists but PEXPIRETIME says missing")),
        ms => Some(ms),
    };
    Ok(Some(Entry { value, deadline }))
}

/// The server's view of a thread's namespace: every key SCAN finds under its prefix,
/// plus every key either model candidate names (so a key SCAN misses is still checked).
pub fn read_namespace(
    client: &mut Client,
    thread: usize,
    also: impl Iterator<Item = String>,
) -> Result<Model, String> {
    let pattern = format!("c{thread}:*");
    let mut keys: BTreeSet<String> = also.collect();
    let mut scanned = BTreeSet::new();
    let mut cursor = b"0".to_vec();
    loop {
        let reply = call(
            client,
            &[
                b"SCAN",
                &cursor,
                b"MATCH",
                pattern.as_bytes(),
                b"COUNT",
                b"100",
            ],
        )?;
        let RespValue::Agg(_, Some(parts)) = &reply else {
            return Err(format!("SCAN replied {}", reply.render()));
        };
        cursor = parts.first().and_then(bulk).unwrap_or_else(|| b("0"));
        for k in items(parts.get(1).unwrap_or(&RespValue::Agg(b'*', None)))? {
            scanned.insert(String::from_utf8_lossy(&k).into_owned());
        }
        if cursor == b"0" {
            break;
        }
    }
    keys.extend(scanned.iter().cloned());
    let mut model = Model::new();
    for key in keys {
        if let Some(entry) = read_key(client, &key)? {
            if !scanned.contains(&key) {
                return Err(format!("{key} exists but SCAN did not return it"));
            }
            model.insert(key, entry);
        }
    }
    Ok(model)
}

/// A key's model entry as readable text (for failure messages).
pub fn describe_entry(entry: Option<&Entry>) -> String {
    let Some(e) = entry else {
        return "(absent)".into();
    };
    let value = match &e.value {
        Value::Str(v) => format!("string {}", show(v)),
        Value::Hash(h) => format!(
            "hash {{{}}}",
            h.iter()
                .map(|(f, v)| format!("{}: {}", show(f), show(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Value::List(l) => format!(
            "list [{}]",
            l.iter().map(|i| show(i)).collect::<Vec<_>>().join(", ")
        ),
        Value::Set(s) => format!(
            "set {{{}}}",
            s.iter().map(|i| show(i)).collect::<Vec<_>>().join(", ")
        ),
        Value::ZSet(z) => format!(
            "zset {{{}}}",
            z.iter()
                .map(|(m, s)| format!("{}: {s}", show(m)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    match e.deadline {
        Some(d) => format!("{value}, deadline {d}"),
        None => format!("{value}, no TTL"),
    }
}

/// Whether two entries agree (deadlines within the tolerance).
pub fn same_entry(a: &Entry, b: &Entry) -> bool {
    a.value == b.value
        && match (a.deadline, b.deadline) {
            (None, None) => true,
            (Some(x), Some(y)) => (x - y).abs() <= TTL_TOLERANCE_MS,
            _ => false,
        }
}

/// The first key where `got` differs from `expected`, described.
pub fn first_difference(expected: &Model, got: &Model) -> Option<String> {
    let keys: BTreeSet<&String> = expected.keys().chain(got.keys()).collect();
    keys.into_iter().find_map(|key| {
        let (e, g) = (expected.get(key), got.get(key));
        let same = match (e, g) {
            (Some(e), Some(g)) => same_entry(e, g),
            (None, None) => true,
            _ => false,
        };
        (!same).then(|| {
            format!(
                "key {key}:\n      expected {}\n      got      {}",
                describe_entry(e),
                describe_entry(g)
            )
        })
    })
}
