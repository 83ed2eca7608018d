//! The power-cut test. Random workloads (every kind of value, expiry, transactions,
//! scripts, prompt-cache blocks, snapshots in the foreground and the background, and
//! the compaction the keeper runs) go to a durable engine on a simulated disk that
//! fails writes and fsyncs now and then, and loses power at random points — between
//! commands or in the middle of a write, an fsync, a snapshot or a heal. After each cut
//! the engine recovers from what the disk kept, and its state must be the model's
//! state after some prefix of the commands it accepted that includes every command the
//! disk held when the power went (under `appendfsync always`: every acknowledged one;
//! under `everysec`: every one an fsync or a snapshot covered, and whenever the clock
//! moves on, every record more than a second old must reach that state within the
//! log keeper's next ticks). So nothing
//! acknowledged is lost beyond what the policy allows, nothing deleted comes back, and
//! recovery never takes a damaged file for a good one (it must start every time: the
//! disk only ever loses what no fsync covered).
//!
//! The model is an in-memory engine given the same commands at the same times. Each
//! run prints its seed. `PION_POWER_CUT_SEED=n` runs one seed, `PION_POWER_CUT_SEEDS=n`
//! runs seeds `0..n` (the test command runs six; thousands take a while:
//! `PION_POWER_CUT_SEEDS=2000 cargo test --release -p pion-core power_cut`).

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::durability::{DurabilityOptions, FsyncPolicy};
use crate::prefix::BlockId;
use crate::storage::{FaultPlan, Faulty, Simulated, Storage};
use crate::util::clock::{Clock, ManualClock};
use crate::{Engine, EngineOptions, Reply, Session};

const START_MS: i64 = 1_700_000_000_000;
const DATABASES: usize = 2;
const BLOCK_TOKENS: usize = 4;
/// K and V of 2 heads of 128 dims: 4 KiB a block, so the 64 KiB block files roll, and
/// deletions leave dead space for the keeper's compaction to reclaim.
const HEADS_DIMS: usize = 2 * 128;
const MANIFEST: &str = r#"{"model":"power-cut","block_tokens":4,"dtype":"f16","layers":[{"kind":"attention","kv_heads":2,"head_dim":128}]}"#;

/// One step of the workload that may change the state: commands run in order on one
/// session (a transaction is several), at a time, in a database.
#[derive(Clone, Debug)]
struct Op {
    time_ms: i64,
    db: usize,
    commands: Vec<Vec<Vec<u8>>>,
}

fn args(parts: &[&str]) -> Vec<Vec<u8>> {
    parts.iter().map(|p| p.as_bytes().to_vec()).collect()
}

/// Picks the workload's commands.
struct Workload {
    rng: SmallRng,
    /// Stored-or-not prompt-cache blocks as (id, parent, tokens), for extending chains.
    blocks: Vec<(BlockId, BlockId, Vec<u32>)>,
    /// Every block id ever stored (the digest reads them all).
    ids: BTreeSet<BlockId>,
}

impl Workload {
    fn key(&mut self, kind: &str, n: usize) -> String {
        format!("{kind}{}", self.rng.gen_range(0..n))
    }

    fn value(&mut self) -> String {
        let len = self.rng.gen_range(1..12);
        (0..len)
            .map(|_| char::from(b'a' + self.rng.gen_range(0..26)))
            .collect()
    }

    /// One plain write command.
    fn write(&mut self) -> Vec<Vec<u8>> {
        let v = self.value();
        let n = self.rng.gen_range(-50..50).to_string();
        match self.rng.gen_range(0..20) {
            0 | 1 => {
                let k = self.key("k", 12);
                if self.rng.gen_bool(0.3) {
                    let px = self.rng.gen_range(1..5000).to_string();
                    args(&["SET", &k, &v, "PX", &px])
                } else {
                    args(&["SET", &k, &v])
                }
            }
            2 => {
                let k = self.key("k", 12);
                args(&["APPEND", &k, &v])
            }
            3 => {
                let k = self.key("n", 3);
                args(&["INCRBY", &k, &n])
            }
            4 => {
                let (k, f) = (self.key("h", 4), self.key("f", 6));
                args(&["HSET", &k, &f, &v])
            }
            5 => {
                let (k, f) = (self.key("h", 4), self.key("f", 6));
                args(&["HDEL", &k, &f])
            }
            6 => {
                let k = self.key("l", 4);
                args(&["RPUSH", &k, &v, &n])
            }
            7 => {
                let k = self.key("l", 4);
                args(&["LPOP", &k])
            }
            8 => {
                let k = self.key("l", 4);
                args(&["LTRIM", &k, "0", "5"])
            }
            9 => {
                let (k, m) = (self.key("s", 4), self.key("m", 8));
                args(&["SADD", &k, &m])
            }
            10 => {
                let (k, m) = (self.key("s", 4), self.key("m", 8));
                args(&["SREM", &k, &m])
            }
            11 => {
                let (k, m) = (self.key("z", 4), self.key("m", 8));
                args(&["ZADD", &k, &n, &m])
            }
            12 => {
                let (k, m) = (self.key("z", 4), self.key("m", 8));
                args(&["ZINCRBY", &k, "1.5", &m])
            }
            13 => {
                let (k, m) = (self.key("z", 4), self.key("m", 8));
                args(&["ZREM", &k, &m])
            }
            14 => {
                let k = self.key("k", 12);
                let s = self.rng.gen_range(1..5).to_string();
                args(&["EXPIRE", &k, &s])
            }
            15 => {
                let k = self.key("k", 12);
                args(&["PERSIST", &k])
            }
            16 => {
                let (a, b) = (self.key("k", 12), self.key("k", 12));
                args(&["RENAME", &a, &b])
            }
            17 => {
                let k = self.key("h", 4);
                args(&["DEL", &k])
            }
            18 => {
                let (a, b) = (self.key("k", 12), self.key("n", 3));
                args(&[
                    "EVAL",
                    "redis.call('SET', KEYS[1], ARGV[1]); return redis.call('INCR', KEYS[2])",
                    "2",
                    &a,
                    &b,
                    &v,
                ])
            }
            _ => {
                let k = self.key("k", 12);
                args(&["DEL", &k])
            }
        }
    }

    /// A prompt-cache change: a block after a stored one (or a first block), or the
    /// deletion of a block and what follows it.
    fn prefix(&mut self) -> Vec<Vec<u8>> {
        if self.rng.gen_bool(0.05) {
            // Registered again (the same manifest: a no-op, unless a power cut took
            // the first registration).
            return args(&["KV.REGISTER", "pc", MANIFEST]);
        }
        if !self.blocks.is_empty() && self.rng.gen_bool(0.25) {
            let i = self.rng.gen_range(0..self.blocks.len());
            let (id, _, _) = self.blocks.swap_remove(i);
            return vec![b"KV.DEL".to_vec(), b"pc".to_vec(), id.hex().into_bytes()];
        }
        let parent = if self.blocks.is_empty() || self.rng.gen_bool(0.3) {
            BlockId::ROOT
        } else {
            self.blocks[self.rng.gen_range(0..self.blocks.len())].0
        };
        // A small vocabulary: conversations share prefixes, so stores deduplicate.
        let tokens: Vec<u32> = (0..BLOCK_TOKENS)
            .map(|_| self.rng.gen_range(0..3))
            .collect();
        let id = BlockId::chain(parent, &tokens);
        if self.blocks.len() < 24 && !self.blocks.iter().any(|b| b.0 == id) {
            self.blocks.push((id, parent, tokens.clone()));
        }
        self.ids.insert(id);
        let layer: Vec<u8> = (0..2 * BLOCK_TOKENS * HEADS_DIMS)
            .flat_map(|i| half::f16::from_f32((id.0 as u32 ^ i as u32) as f32 / 64.0).to_le_bytes())
            .collect();
        vec![
            b"KV.PUT".to_vec(),
            b"pc".to_vec(),
            parent.hex().into_bytes(),
            tokens.iter().flat_map(|t| t.to_le_bytes()).collect(),
            layer,
        ]
    }

    /// The next state-changing step.
    fn op(&mut self, time_ms: i64) -> Op {
        let db = usize::from(self.rng.gen_bool(0.2));
        let commands = match self.rng.gen_range(0..24) {
            0..=2 => vec![self.prefix()],
            3 => {
                let mut c = vec![args(&["MULTI"])];
                for _ in 0..self.rng.gen_range(1..4) {
                    c.push(self.write());
                }
                c.push(args(&["EXEC"]));
                c
            }
            4 if self.rng.gen_bool(0.1) => vec![args(&["FLUSHDB"])],
            _ => vec![self.write()],
        };
        Op {
            time_ms,
            db,
            commands,
        }
    }
}

/// Everything a restart must bring back, in a canonical text: every key of every
/// database with its type, deadline and content, and the prompt cache's blocks (their
/// bytes as a checksum), a line each.
/// A read of `e`'s memory. A read waits for the log to hold what it may have seen;
/// when the disk fails during that wait its reply is MISCONF, and the same read again
/// (the failure now known) answers from memory at once.
fn read(e: &Engine, db: usize, argv: &[&[u8]]) -> Reply {
    let mut reply = e.execute(db, argv);
    for _ in 0..3 {
        match &reply {
            Reply::Error(text) if text.starts_with("MISCONF") => reply = e.execute(db, argv),
            _ => break,
        }
    }
    reply
}

fn digest(e: &Engine, ids: &BTreeSet<BlockId>) -> String {
    let read = |db: usize, argv: &[&[u8]]| read(e, db, argv);
    let mut out = String::new();
    for db in 0..DATABASES {
        let keys = match read(db, &[b"KEYS", b"*"]) {
            Reply::Array(keys) => keys,
            other => panic!("KEYS answered {other:?}"),
        };
        let mut keys: Vec<Vec<u8>> = keys
            .into_iter()
            .filter_map(|k| k.as_bytes().map(<[u8]>::to_vec))
            .collect();
        keys.sort();
        for k in keys {
            let ty = read(db, &[b"TYPE".as_slice(), &k]);
            let value = match ty.as_bytes() {
                Some(b"string") => read(db, &[b"GET".as_slice(), &k]),
                Some(b"hash") => read(db, &[b"HGETALL".as_slice(), &k]),
                Some(b"list") => read(db, &[b"LRANGE".as_slice(), &k, b"0", b"-1"]),
                Some(b"set") => read(db, &[b"SMEMBERS".as_slice(), &k]),
                Some(b"zset") => read(db, &[b"ZRANGE".as_slice(), &k, b"0", b"-1", b"WITHSCORES"]),
                _ => Reply::Null,
            };
            let deadline = read(db, &[b"PEXPIRETIME".as_slice(), &k]);
            out += &format!(
                "{db} {} {} {} {}\n",
                String::from_utf8_lossy(&k),
                render(&ty),
                render(&deadline),
                render(&value)
            );
        }
    }
    out += &format!("namespaces {}", render(&read(0, &[b"KV.NAMESPACES"])));
    if let Reply::Map(fields) = read(0, &[b"KV.INFO", b"pc"]) {
        for (name, value) in fields {
            if matches!(name.as_bytes(), Some(b"blocks" | b"bytes")) {
                out += &format!(" {} {}", render(&name), render(&value));
            }
        }
    }
    for id in ids {
        let block = read(0, &[b"KV.GET", b"pc", id.hex().as_bytes()]);
        out += &format!("\n{} {}", &id.hex()[..8], render(&block));
    }
    out
}

/// A reply as short canonical text: unordered collections sorted, long bulk strings
/// as their length and checksum.
fn render(r: &Reply) -> String {
    let list = |items: &[Reply], sort: bool| {
        let mut v: Vec<String> = items.iter().map(render).collect();
        if sort {
            v.sort();
        }
        format!("[{}]", v.join(" "))
    };
    match r {
        Reply::Bulk(b) if b.len() > 24 => {
            format!("<{} bytes {:08x}>", b.len(), crate::util::codec::crc(b))
        }
        Reply::Bulk(b) => format!("{:?}", String::from_utf8_lossy(b)),
        Reply::Status(s) => s.to_string(),
        Reply::Error(e) => format!("-{e}"),
        Reply::Integer(n) => n.to_string(),
        Reply::Double(d) | Reply::ShortDouble(d) | Reply::HumanDouble(d) => d.to_string(),
        Reply::Null | Reply::NullArray => "nil".into(),
        Reply::Array(v) => list(v, false),
        Reply::Set(v) => list(v, true),
        Reply::Map(pairs) | Reply::Pairs(pairs) | Reply::PairsMap(pairs) => {
            let mut v: Vec<String> = pairs
                .iter()
                .map(|(k, v)| format!("{}={}", render(k), render(v)))
                .collect();
            if matches!(r, Reply::Map(_)) {
                v.sort();
            }
            format!("{{{}}}", v.join(" "))
        }
        other => format!("{other:?}"),
    }
}

/// The lines of two digests that differ.
fn difference(a: &str, b: &str) -> String {
    let (la, lb): (BTreeSet<&str>, BTreeSet<&str>) = (a.lines().collect(), b.lines().collect());
    let mut out = String::new();
    for l in la.difference(&lb) {
        out += &format!("  - {l}\n");
    }
    for l in lb.difference(&la) {
        out += &format!("  + {l}\n");
    }
    out
}

/// An op as the commands it sends (layer bytes shortened).
fn show_op(op: &Op) -> String {
    let cmds: Vec<String> = op
        .commands
        .iter()
        .map(|c| {
            c.iter()
                .map(|a| {
                    if a.len() > 24 {
                        format!("<{} bytes>", a.len())
                    } else {
                        String::from_utf8_lossy(a).into_owned()
                    }
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    format!("db {} at {}: {}", op.db, op.time_ms, cmds.join("; "))
}

/// Runs an op's commands on `session`; whether every reply was a success.
fn run(session: &mut Session, op: &Op) -> bool {
    let mut ok = true;
    session.client.select(op.db);
    for c in &op.commands {
        let reply = session.execute_argv(c);
        ok &= !reply.is_error() && !is_queued_error(&reply);
    }
    ok
}

/// An `EXEC` whose commands failed in part still ran the others: a reply with an
/// error inside counts as "not sure", as an error does.
fn is_queued_error(r: &Reply) -> bool {
    matches!(r, Reply::Array(items) if items.iter().any(Reply::is_error))
}

/// The model: an in-memory engine on its own manual clock.
struct Model {
    engine: Engine,
    session: Session,
    hand: Arc<ManualClock>,
    now_ms: i64,
}

impl Model {
    fn new() -> Model {
        let (clock, hand) = Clock::manual(START_MS);
        let engine = Engine::in_memory(EngineOptions {
            disable_active_expiry: true,
            clock,
            ..EngineOptions::default()
        });
        let session = engine.session();
        Model {
            engine,
            session,
            hand,
            now_ms: START_MS,
        }
    }

    fn advance_to(&mut self, ms: i64) {
        if ms > self.now_ms {
            self.hand
                .advance(Duration::from_millis((ms - self.now_ms) as u64));
            self.now_ms = ms;
        }
    }

    fn apply(&mut self, op: &Op) {
        self.advance_to(op.time_ms);
        run(&mut self.session, op);
    }

    fn replay(ops: &[Op]) -> Model {
        let mut m = Model::new();
        for op in ops {
            m.apply(op);
        }
        m
    }
}

/// The durable engine under test, on the simulated disk.
struct Subject {
    engine: Engine,
    session: Session,
    hand: Arc<ManualClock>,
    now_ms: i64,
}

impl Subject {
    fn open(storage: &Arc<dyn Storage>, policy: FsyncPolicy, now_ms: i64) -> Subject {
        let (clock, hand) = Clock::manual(now_ms);
        let mut d = DurabilityOptions::new(Path::new("/power-cut/data"));
        d.storage = Arc::clone(storage);
        d.fsync = policy;
        d.segment_bytes = 16 << 10;
        d.snapshot_after_bytes = 48 << 10;
        d.block_file_bytes = 64 << 10;
        let mut options = EngineOptions {
            disable_active_expiry: true,
            clock,
            ..EngineOptions::default()
        };
        options.config.databases = 16;
        let engine = match Engine::open_with(options, d) {
            Ok(e) => e,
            Err(e) => panic!("recovery refused the disk a power cut left: {e}"),
        };
        let session = engine.session();
        Subject {
            engine,
            session,
            hand,
            now_ms,
        }
    }

    fn advance(&mut self, ms: i64) {
        self.hand.advance(Duration::from_millis(ms as u64));
        self.now_ms += ms;
    }

    fn failed(&self) -> bool {
        self.engine
            .durability()
            .is_some_and(|d| d.health().is_failed())
    }

    /// The last log record the disk is sure to hold: fsynced, or covered by a
    /// snapshot that is in place.
    fn durable_seq(&self) -> u64 {
        self.engine.durability().map_or(0, |d| {
            d.wal().synced_seq().max(
                d.snapshots()
                    .last_seq
                    .load(std::sync::atomic::Ordering::SeqCst),
            )
        })
    }

    /// Under `everysec`: waits until log record `due` is durable, as the log keeper
    /// must make every record a second old (the disk failing or the power going
    /// excuses it). Panics if it takes ten seconds.
    fn wait_durable(&self, due: u64, plan: &FaultPlan, seed: u64) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.durable_seq() < due && !self.failed() && !plan.is_stopped() {
            assert!(
                Instant::now() < deadline,
                "seed {seed}: under everysec, log record {due} is over a second old on the \
                 engine's clock and still not fsynced (durable up to {})",
                self.durable_seq()
            );
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    fn appended_seq(&self) -> u64 {
        self.engine
            .durability()
            .map_or(0, |d| d.wal().appended_seq())
    }

    /// Drops the engine and waits until nothing of it runs any more (its background
    /// threads hold it for a moment).
    fn close(self) {
        let weak = self.engine.downgrade();
        drop(self.session);
        drop(self.engine);
        let deadline = Instant::now() + Duration::from_secs(30);
        while weak.upgrade().is_some() {
            assert!(Instant::now() < deadline, "the engine never went away");
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

/// A number of `INFO`.
fn info_field(e: &Engine, name: &str) -> u64 {
    let (Reply::Verbatim(_, text) | Reply::Bulk(text)) = e.execute(0, &["INFO", "everything"])
    else {
        return 0;
    };
    String::from_utf8_lossy(&text)
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(':')?.trim().parse().ok())
        .unwrap_or(0)
}

/// What one seed did.
#[derive(Debug, Default)]
struct Tally {
    cuts: u64,
    ops: u64,
    lost: u64,
    faults: u64,
    heals: u64,
    snapshots: u64,
    compacted: u64,
}

fn run_seed(seed: u64, cycles: usize) -> Tally {
    let mut rng = SmallRng::seed_from_u64(seed);
    let policy = if seed.is_multiple_of(2) {
        FsyncPolicy::Always
    } else {
        FsyncPolicy::EverySec
    };
    let sim = Simulated::new();
    let (faulty, plan): (Arc<Faulty>, Arc<FaultPlan>) = Faulty::wrap(Arc::new(sim.clone()));
    let storage: Arc<dyn Storage> = faulty;
    let mut work = Workload {
        rng: SmallRng::seed_from_u64(seed ^ 0x5EED),
        blocks: Vec::new(),
        ids: BTreeSet::new(),
    };
    let mut tally = Tally::default();
    // The ops the engine took, in order, each with the last log record it may need.
    let mut applied: Vec<(Op, u64)> = Vec::new();
    let mut subject = Subject::open(&storage, policy, START_MS);
    let register = Op {
        time_ms: START_MS,
        db: 0,
        commands: vec![args(&["KV.REGISTER", "pc", MANIFEST])],
    };
    assert!(
        run(&mut subject.session, &register),
        "seed {seed}: KV.REGISTER"
    );
    let mut model = Model::replay(std::slice::from_ref(&register));
    applied.push((register, subject.appended_seq()));
    for cycle in 0..cycles {
        // Ops of this cycle (earlier ones' sequence numbers belong to the log before the
        // last recovery).
        let cycle_start = applied.len();
        let faults_at_start = tally.faults;
        let cut_at = rng.gen_range(5..70);
        for step in 0.. {
            if step == cut_at {
                // The power goes after a few more changes to the disk: between two
                // commands, or inside whatever writes then.
                plan.stop_after(rng.gen_range(0..40));
            }
            if plan.is_stopped() || step > cut_at + 200 {
                break;
            }
            if subject.failed() {
                // Refused until healed: wait for the heal (or the power cut).
                let deadline = Instant::now() + Duration::from_secs(20);
                while subject.failed() && !plan.is_stopped() && Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(5));
                }
                if subject.failed() && !plan.is_stopped() {
                    panic!("seed {seed} cycle {cycle}: the engine never healed");
                }
                continue;
            }
            match rng.gen_range(0..100) {
                0..=5 => {
                    subject.advance(rng.gen_range(1..2500));
                    // (A fault in this cycle may have failed the disk and healed it,
                    // which renumbers what the log holds: only clean cycles are held to
                    // the second.)
                    if policy == FsyncPolicy::EverySec && tally.faults == faults_at_start {
                        let old = subject.now_ms - 1000;
                        let due = applied[cycle_start..]
                            .iter()
                            .filter(|(op, _)| op.time_ms <= old)
                            .map(|(_, seq)| *seq)
                            .max()
                            .unwrap_or(0);
                        subject.wait_durable(due, &plan, seed);
                    }
                }
                6 => {
                    let _ = subject.engine.execute(0, &["SAVE"]);
                    tally.snapshots += 1;
                }
                7 => {
                    let _ = subject.engine.execute(0, &["BGSAVE"]);
                    tally.snapshots += 1;
                }
                8 | 9 => {
                    // A disk fault: a write or an fsync fails, or a write is torn.
                    let errno = if rng.gen_bool(0.5) { 5 } else { 28 };
                    match rng.gen_range(0..3) {
                        0 => plan.fail_write(rng.gen_range(1..4), errno),
                        1 => plan.fail_sync(rng.gen_range(1..3), errno),
                        _ => plan.tear_write(rng.gen_range(1..4), rng.gen_range(1..40), errno),
                    }
                    tally.faults += 1;
                }
                _ => {
                    let op = work.op(subject.now_ms);
                    let ok = run(&mut subject.session, &op);
                    tally.ops += 1;
                    if ok {
                        model.apply(&op);
                        applied.push((op, subject.appended_seq()));
                        continue;
                    }
                    // An error: the op ran or it did not (a failed disk refuses it
                    // first, or takes it in memory and holds its reply); memory, which
                    // reads still reach, says which.
                    model.advance_to(subject.now_ms);
                    let live = digest(&subject.engine, &work.ids);
                    if live == digest(&model.engine, &work.ids) {
                        continue;
                    }
                    let before = digest(&model.engine, &work.ids);
                    model.apply(&op);
                    let after = digest(&model.engine, &work.ids);
                    assert!(
                        live == after,
                        "seed {seed} cycle {cycle}: memory is neither the state before nor \
                         after {}:\nfrom before:\n{}from after:\n{}",
                        show_op(&op),
                        difference(&before, &live),
                        difference(&after, &live)
                    );
                    applied.push((op, subject.appended_seq()));
                }
            }
        }
        // The power cut.
        plan.stop();
        let durable = subject.durable_seq();
        let now_ms = subject.now_ms;
        tally.compacted += info_field(&subject.engine, "kv_compacted_bytes");
        if let Some(d) = subject.engine.durability() {
            tally.heals += d
                .health()
                .info_fields()
                .iter()
                .find(|(k, _)| *k == "disk_heals")
                .and_then(|(_, v)| v.parse::<u64>().ok())
                .unwrap_or(0);
        }
        subject.close();
        sim.power_cut();
        plan.clear();
        tally.cuts += 1;
        subject = Subject::open(&storage, policy, now_ms);
        let recovered = digest(&subject.engine, &work.ids);
        // Every op the disk held must be there; later ones may be.
        let floor = applied
            .iter()
            .take_while(|(_, seq)| *seq <= durable)
            .count();
        let ops: Vec<Op> = applied.iter().map(|(op, _)| op.clone()).collect();
        // The model after the first `i` ops, each at its own time, then read now (a
        // fresh one each time: a clock does not run backwards). The first guess is
        // what the recovered log says: the ops whose records it holds.
        let at_now = |i: usize| {
            let mut m = Model::replay(&ops[..i]);
            m.advance_to(now_ms);
            digest(&m.engine, &work.ids)
        };
        let recovered_seq = subject
            .engine
            .durability()
            .map_or(0, |d| d.recovery().last_seq);
        let guess = applied
            .iter()
            .take_while(|(_, seq)| *seq <= recovered_seq)
            .count()
            .max(floor);
        let found = std::iter::once(guess)
            .chain(floor..=ops.len())
            .find(|&i| at_now(i) == recovered);
        let Some(kept) = found else {
            panic!(
                "seed {seed} cycle {cycle} ({policy:?}): after the power cut the state is no \
                 prefix of the accepted ops from {floor} (durable up to record {durable}) to \
                 {}.\nagainst the floor:\n{}against all ops:\n{}",
                ops.len(),
                difference(&at_now(floor), &recovered),
                difference(&at_now(ops.len()), &recovered),
            );
        };
        tally.lost += (ops.len() - kept) as u64;
        applied.truncate(kept);
        model = Model::replay(&ops[..kept]);
        model.advance_to(now_ms);
    }
    subject.close();
    tally
}

#[test]
fn power_cuts_lose_nothing_the_disk_held_and_resurrect_nothing() {
    let seeds: Vec<u64> = match (
        std::env::var("PION_POWER_CUT_SEED").ok(),
        std::env::var("PION_POWER_CUT_SEEDS").ok(),
    ) {
        (Some(one), _) => vec![one.parse().expect("PION_POWER_CUT_SEED")],
        (None, Some(n)) => (0..n.parse().expect("PION_POWER_CUT_SEEDS")).collect(),
        (None, None) => (0..6).collect(),
    };
    let cycles = std::env::var("PION_POWER_CUT_CYCLES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(5);
    let mut total = Tally::default();
    for seed in seeds {
        let t = run_seed(seed, cycles);
        eprintln!(
            "power-cut seed {seed}: {} cuts, {} ops, {} not yet durable at a cut and gone, \
             {} faults injected, {} heals, {} snapshots asked, {} bytes compacted",
            t.cuts, t.ops, t.lost, t.faults, t.heals, t.snapshots, t.compacted
        );
        total.cuts += t.cuts;
        total.ops += t.ops;
        total.lost += t.lost;
        total.faults += t.faults;
        total.heals += t.heals;
        total.compacted += t.compacted;
    }
    assert!(total.cuts > 0 && total.ops > 0);
}
