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

use std::thread;
use std::time::Duration;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use pion_tests::crash_model::*;
use pion_tests::{temp_dir, Client, PionProcess, RespValue};

/// The seed when `PION_CRASH_SEED` is not set.
const DEFAULT_SEED: u64 = 20_240_611;

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
            // A snapshot runs: another BGSAVE, or a rewrite the log's growth started.
            Ok((RespValue::Line(b'-', e), _))
                if e.windows(8).any(|w| w == b"progress")
                    || e.starts_with(b"ERR Another child process is active") =>
            {
                busy += 1
            }
            Ok((other, _)) => return Err(format!("BGSAVE replied {}", other.render())),
            Err(_) => return Ok((started, busy)),
        }
    }
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
        text.contains("rdb_bgsave_in_progress:1") || text.contains("aof_rewrite_in_progress:1")
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
