//! Crash harness: the durability promise under SIGKILL. Client threads write through
//! their own connections, one command at a time, each in its own key namespace and each
//! keeping a model of its keys; the server is SIGKILLed at a random moment (automatic
//! snapshots, WAL segment rolls and BGSAVEs running meanwhile) and restarted on the same
//! data directory. After every restart each thread's keys must equal its model after all
//! acknowledged writes, or after those plus the one write that was in flight when the
//! connection broke: nothing acknowledged is lost, and what survives of a connection's
//! writes is a prefix of what it sent. State accumulates across cycles.
//!
//! `PION_CRASH_SEED` (decimal), `PION_CRASH_CYCLES` and `PION_CRASH_FSYNC`
//! (always|everysec|no) tune the main test; a failure names its cycle and seed.

use std::collections::{BTreeMap, BTreeSet};
use std::thread;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use pion_tests::{temp_dir, Client, PionProcess, RespValue};

/// The seed when `PION_CRASH_SEED` is not set.
const DEFAULT_SEED: u64 = 20_240_611;

/// How far a key's absolute deadline may be from the model's (the model stamps the
/// deadline when it sends EXPIRE; the server when it executes it).
const TTL_TOLERANCE_MS: i64 = 3_000;

/// Keys of each kind in a thread's namespace.
const KEYS_PER_KIND: usize = 4;

/// Key kinds; each key holds one type for its whole life, so no write is a WRONGTYPE.
const KINDS: [&str; 6] = ["str", "cnt", "hash", "list", "zset", "set"];

/// Scores ZADD uses besides multiples of 0.25 (exact in binary and in text).
const SPECIAL_SCORES: [&str; 2] = ["+inf", "-inf"];

/// One key's value.
#[derive(Clone, Debug, PartialEq)]
enum Value {
    Str(Vec<u8>),
    Hash(BTreeMap<Vec<u8>, Vec<u8>>),
    List(Vec<Vec<u8>>),
    Set(BTreeSet<Vec<u8>>),
    ZSet(BTreeMap<Vec<u8>, f64>),
}

/// One key: value and absolute expiry deadline in Unix milliseconds.
#[derive(Clone, Debug)]
struct Entry {
    value: Value,
    deadline: Option<i64>,
}

/// A thread's view of its namespace.
type Model = BTreeMap<String, Entry>;

/// One write a client thread sends.
#[derive(Clone, Debug)]
enum Op {
    Set(String, Vec<u8>),
    Incr(String),
    HSet(String, Vec<u8>, Vec<u8>),
    RPush(String, Vec<Vec<u8>>),
    ZAdd(String, String, Vec<u8>),
    SAdd(String, Vec<Vec<u8>>),
    /// Key, seconds, and the absolute deadline stamped when it was sent.
    Expire(String, u64, i64),
    Del(String),
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

fn int(n: i64) -> RespValue {
    RespValue::Line(b':', n.to_string().into_bytes())
}

fn b(s: &str) -> Vec<u8> {
    s.as_bytes().to_vec()
}

fn show(bytes: &[u8]) -> String {
    format!("{:?}", String::from_utf8_lossy(bytes))
}

impl Op {
    fn key(&self) -> &str {
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

    fn args(&self) -> Vec<Vec<u8>> {
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

    fn describe(&self) -> String {
        self.args()
            .iter()
            .map(|a| String::from_utf8_lossy(a).into_owned())
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// Applies the write to `model`; returns the reply the server must give.
    fn apply(&self, model: &mut Model) -> RespValue {
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

fn random_bytes(rng: &mut SmallRng) -> Vec<u8> {
    let len = match rng.gen_range(0..10) {
        // Now and then a large value, so segments roll and snapshots trigger sooner.
        0 => rng.gen_range(500..3000),
        _ => rng.gen_range(0..40),
    };
    // Any byte, CR, LF and NUL included: values are binary-safe.
    (0..len).map(|_| rng.gen::<u8>()).collect()
}

fn gen_op(rng: &mut SmallRng, thread: usize) -> Op {
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

/// What a writer thread hands back when its connection breaks.
struct WriterOutcome {
    model: Model,
    /// Acknowledged writes, in order, this cycle.
    acked: Vec<Op>,
    /// The write sent when the connection broke, if one was.
    in_flight: Option<Op>,
    /// A reply that disagreed with the model (the run fails on it).
    error: Option<String>,
}

fn run_writer(port: u16, thread: usize, mut model: Model, mut rng: SmallRng) -> WriterOutcome {
    let mut out = WriterOutcome {
        model: Model::new(),
        acked: Vec::new(),
        in_flight: None,
        error: None,
    };
    let Ok(mut client) = Client::connect(port) else {
        out.model = model;
        return out;
    };
    loop {
        let mut op = gen_op(&mut rng, thread);
        if let Op::Expire(_, secs, deadline) = &mut op {
            *deadline = now_ms() + *secs as i64 * 1000;
        }
        match client.call(&op.args()) {
            Ok((reply, _)) => {
                let expected = op.apply(&mut model);
                if reply != expected {
                    out.error = Some(format!(
                        "`{}` replied {} but the model expects {}",
                        op.describe(),
                        reply.render(),
                        expected.render()
                    ));
                    break;
                }
                out.acked.push(op);
            }
            Err(_) => {
                out.in_flight = Some(op);
                break;
            }
        }
    }
    out.model = model;
    out
}

/// Sends BGSAVE at random moments until the connection breaks; returns how many
/// started and how many found a snapshot already running.
fn run_bgsaver(port: u16, mut rng: SmallRng) -> Result<(u64, u64), String> {
    let (mut started, mut busy) = (0, 0);
    let Ok(mut client) = Client::connect(port) else {
        return Ok((started, busy));
    };
    loop {
        thread::sleep(Duration::from_millis(rng.gen_range(20..150)));
        match client.call(&["BGSAVE"]) {
            Ok((RespValue::Line(b'+', _), _)) => started += 1,
            Ok((RespValue::Line(b'-', e), _)) if e.windows(8).any(|w| w == b"progress") => {
                busy += 1
            }
            Ok((other, _)) => return Err(format!("BGSAVE replied {}", other.render())),
            Err(_) => return Ok((started, busy)),
        }
    }
}

fn bulk(v: &RespValue) -> Option<Vec<u8>> {
    match v {
        RespValue::Bulk(_, Some(bytes)) => Some(bytes.clone()),
        _ => None,
    }
}

fn items(v: &RespValue) -> Result<Vec<Vec<u8>>, String> {
    match v {
        RespValue::Agg(_, Some(items)) => items
            .iter()
            .map(|i| bulk(i).ok_or_else(|| format!("non-bulk item in {}", v.render())))
            .collect(),
        other => Err(format!("expected an array, got {}", other.render())),
    }
}

fn integer(v: &RespValue) -> Result<i64, String> {
    match v {
        RespValue::Line(b':', n) => String::from_utf8_lossy(n)
            .parse()
            .map_err(|_| format!("bad integer {}", v.render())),
        other => Err(format!("expected an integer, got {}", other.render())),
    }
}

fn call(client: &mut Client, args: &[&[u8]]) -> Result<RespValue, String> {
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
fn read_key(client: &mut Client, key: &str) -> Result<Option<Entry>, String> {
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
fn read_namespace(
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

fn describe_entry(entry: Option<&Entry>) -> String {
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

fn same_entry(a: &Entry, b: &Entry) -> bool {
    a.value == b.value
        && match (a.deadline, b.deadline) {
            (None, None) => true,
            (Some(x), Some(y)) => (x - y).abs() <= TTL_TOLERANCE_MS,
            _ => false,
        }
}

/// The first key where `got` differs from `expected`, described.
fn first_difference(expected: &Model, got: &Model) -> Option<String> {
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

/// One harness run's configuration.
struct Harness {
    name: &'static str,
    seed: u64,
    cycles: usize,
    writers: usize,
    /// The `--appendfsync` policy, which INFO must report back.
    policy: String,
    args: Vec<String>,
}

/// Counters for the summary line.
#[derive(Default)]
struct Stats {
    kills: u64,
    kills_during_snapshot: u64,
    acked_verified: u64,
    in_flight_applied: u64,
    in_flight_not_applied: u64,
    in_flight_indistinct: u64,
    bgsave_started: u64,
    bgsave_busy: u64,
}

/// Per-thread state carried across cycles.
struct Thread {
    model: Model,
    in_flight: Option<Op>,
    /// Writes acknowledged since the last verification (the failure report's history).
    acked: Vec<Op>,
}

impl Harness {
    fn fail(&self, cycle: usize, server: &PionProcess, what: String) -> ! {
        let log = server.stderr_text();
        let tail: Vec<&str> = log.lines().rev().take(30).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        panic!(
            "[{}] cycle {cycle}, seed {} (rerun with PION_CRASH_SEED={}): {what}\n\
             server stderr (tail):\n{}",
            self.name,
            self.seed,
            self.seed,
            tail.join("\n")
        );
    }

    /// Checks every thread's namespace on a freshly restarted server against its model
    /// (with and without the write in flight) and adopts what the server holds.
    fn verify(
        &self,
        cycle: usize,
        server: &PionProcess,
        threads: &mut [Thread],
        stats: &mut Stats,
    ) {
        let mut client = server.client();
        for (t, th) in threads.iter_mut().enumerate() {
            let with_op = th.in_flight.as_ref().map(|op| {
                let mut m = th.model.clone();
                op.apply(&mut m);
                m
            });
            let names = th
                .model
                .keys()
                .chain(with_op.iter().flat_map(|m| m.keys()))
                .cloned()
                .collect::<Vec<_>>();
            let got = match read_namespace(&mut client, t, names.into_iter()) {
                Ok(got) => got,
                Err(e) => self.fail(cycle, server, format!("thread {t}: reading back: {e}")),
            };
            let acked_diff = first_difference(&th.model, &got);
            let op_diff = with_op.as_ref().and_then(|m| first_difference(m, &got));
            match (&th.in_flight, acked_diff, op_diff) {
                (None, None, _) => {}
                (Some(_), None, None) => stats.in_flight_indistinct += 1,
                (Some(_), None, Some(_)) => stats.in_flight_not_applied += 1,
                (Some(_), Some(_), None) => stats.in_flight_applied += 1,
                (in_flight, Some(acked_diff), op_diff) => {
                    let key = in_flight.as_ref().map(Op::key);
                    let history: Vec<String> = th
                        .acked
                        .iter()
                        .filter(|op| acked_diff.starts_with(&format!("key {}:", op.key())))
                        .rev()
                        .take(8)
                        .map(Op::describe)
                        .collect();
                    self.fail(
                        cycle,
                        server,
                        format!(
                            "thread {t}: state after restart matches neither the acknowledged \
                             writes nor those plus the write in flight.\n  \
                             vs acknowledged writes: {acked_diff}\n  \
                             write in flight: {}\n  \
                             vs acknowledged + in flight: {}\n  \
                             last acknowledged writes to that key (newest first): {history:?}\n  \
                             (in-flight key: {key:?}; {} writes acknowledged since last check)",
                            in_flight
                                .as_ref()
                                .map(Op::describe)
                                .unwrap_or_else(|| "none".into()),
                            op_diff.unwrap_or_else(|| "n/a".into()),
                            th.acked.len()
                        ),
                    )
                }
            }
            stats.acked_verified += th.acked.len() as u64;
            // Adopt the server's exact state (same values, exact deadlines).
            th.model = got;
            th.in_flight = None;
            th.acked.clear();
        }
    }

    /// Checks that INFO reports the log on, at the policy asked for.
    fn check_config(&self, server: &PionProcess) {
        let Ok((RespValue::Bulk(_, Some(text)), _)) =
            server.client().call(&["INFO", "persistence"])
        else {
            self.fail(0, server, "INFO persistence gave no text".into());
        };
        let text = String::from_utf8_lossy(&text);
        for field in [
            "wal_enabled:1".to_string(),
            format!("wal_fsync_policy:{}", self.policy),
        ] {
            if !text.contains(&field) {
                self.fail(
                    0,
                    server,
                    format!("INFO persistence lacks {field}:\n{text}"),
                );
            }
        }
    }

    /// Reads `INFO persistence`: whether a snapshot is running. Fails the run if the
    /// last one failed.
    fn snapshot_running(&self, cycle: usize, server: &PionProcess) -> bool {
        let Ok(mut client) = Client::connect(server.port()) else {
            return false;
        };
        let Ok((RespValue::Bulk(_, Some(text)), _)) = client.call(&["INFO", "persistence"]) else {
            return false;
        };
        let text = String::from_utf8_lossy(&text).into_owned();
        if text.contains("rdb_last_bgsave_status:err") {
            self.fail(cycle, server, format!("a snapshot failed:\n{text}"));
        }
        text.contains("rdb_bgsave_in_progress:1")
    }

    fn run(&self) {
        let dir = temp_dir(self.name);
        let args: Vec<&str> = self.args.iter().map(String::as_str).collect();
        let mut rng = SmallRng::seed_from_u64(self.seed);
        let mut stats = Stats::default();
        let mut threads: Vec<Thread> = (0..self.writers)
            .map(|_| Thread {
                model: Model::new(),
                in_flight: None,
                acked: Vec::new(),
            })
            .collect();
        for cycle in 0..self.cycles {
            let mut server = PionProcess::start(dir.path(), &args);
            if cycle == 0 {
                self.check_config(&server);
            }
            self.verify(cycle, &server, &mut threads, &mut stats);
            let port = server.port();
            let writers: Vec<_> = threads
                .iter_mut()
                .enumerate()
                .map(|(t, th)| {
                    let model = std::mem::take(&mut th.model);
                    let seed = self.seed ^ ((cycle as u64 + 1) << 32) ^ (t as u64 + 1);
                    let rng = SmallRng::seed_from_u64(seed);
                    thread::spawn(move || run_writer(port, t, model, rng))
                })
                .collect();
            let saver_rng = SmallRng::seed_from_u64(self.seed ^ ((cycle as u64 + 1) << 40));
            let saver = thread::spawn(move || run_bgsaver(port, saver_rng));
            thread::sleep(Duration::from_millis(rng.gen_range(50..=400)));
            if self.snapshot_running(cycle, &server) {
                stats.kills_during_snapshot += 1;
            }
            server.kill9();
            stats.kills += 1;
            let mut errors = Vec::new();
            for (t, (w, th)) in writers.into_iter().zip(threads.iter_mut()).enumerate() {
                let out = w.join().expect("writer thread panicked");
                th.model = out.model;
                th.in_flight = out.in_flight;
                th.acked.extend(out.acked);
                if let Some(e) = out.error {
                    errors.push(format!("thread {t}: {e}"));
                }
            }
            match saver.join().expect("BGSAVE thread panicked") {
                Ok((started, busy)) => {
                    stats.bgsave_started += started;
                    stats.bgsave_busy += busy;
                }
                Err(e) => errors.push(e),
            }
            if !errors.is_empty() {
                self.fail(cycle, &server, errors.join("\n"));
            }
        }
        // After the last kill: recover and verify, then stop cleanly, restart and verify
        // once more (a recovered data directory must itself recover).
        let mut server = PionProcess::start(dir.path(), &args);
        self.verify(self.cycles, &server, &mut threads, &mut stats);
        let status = server.shutdown();
        assert!(
            status.success(),
            "clean stop failed ({status}):\n{}",
            server.stderr_text()
        );
        let server = PionProcess::start(dir.path(), &args);
        self.verify(self.cycles + 1, &server, &mut threads, &mut stats);
        println!(
            "crash[{}]: seed {} cycles {} kills {} (during a snapshot: {}), acked writes \
             verified {}, in-flight writes applied {} / not applied {} / indistinguishable {}, \
             BGSAVE started {} / already running {}",
            self.name,
            self.seed,
            self.cycles,
            stats.kills,
            stats.kills_during_snapshot,
            stats.acked_verified,
            stats.in_flight_applied,
            stats.in_flight_not_applied,
            stats.in_flight_indistinct,
            stats.bgsave_started,
            stats.bgsave_busy
        );
        assert!(stats.acked_verified > 0, "no write was acknowledged at all");
    }
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    match std::env::var(name) {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v} does not parse")),
        Err(_) => default,
    }
}

/// Small snapshot threshold and segment size, so automatic snapshots and segment rolls
/// happen many times per cycle and kills land in the middle of them.
fn durability_args(policy: &str) -> Vec<String> {
    [
        "--wal",
        "on",
        "--appendfsync",
        policy,
        "--snapshot-wal-size",
        "64K",
        "--wal-segment-size",
        "32K",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

#[test]
fn sigkill_loses_no_acknowledged_write() {
    let policy: String = env_or("PION_CRASH_FSYNC", "everysec".to_string());
    Harness {
        name: "crash",
        seed: env_or("PION_CRASH_SEED", DEFAULT_SEED),
        cycles: env_or("PION_CRASH_CYCLES", 20),
        writers: 4,
        args: durability_args(&policy),
        policy,
    }
    .run();
}

#[test]
fn sigkill_loses_no_acknowledged_write_fsync_always_two_threads() {
    let mut args = durability_args("always");
    args.extend(["--threads".to_string(), "2".to_string()]);
    Harness {
        name: "crash-always",
        seed: env_or("PION_CRASH_SEED", DEFAULT_SEED),
        cycles: 5,
        writers: 4,
        policy: "always".into(),
        args,
    }
    .run();
}
