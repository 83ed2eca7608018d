//! Transactions and scripts are atomic on a multi-threaded server, live and after a
//! crash: clients on four worker threads move units between counters with
//! `MULTI`/`EXEC` and with `EVAL`, while auditors read every counter in one
//! transaction or one script. The total never changes, and a SIGKILL in the middle
//! of it all (with a snapshot taken meanwhile) recovers a state whose total is intact.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use pion_tests::{temp_dir, Client, PionProcess, PionServer, RespValue};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

const ACCOUNTS: usize = 8;
const START: i64 = 1000;

const TRANSFER: &str = "local n = tonumber(ARGV[1]) \
    redis.call('decrby', KEYS[1], n) redis.call('incrby', KEYS[2], n) return n";
const SUM: &str = "local s = 0 for _, k in ipairs(KEYS) do \
    s = s + tonumber(redis.call('get', k) or '0') end return s";

fn keys() -> Vec<String> {
    (0..ACCOUNTS).map(|i| format!("acct:{{x}}{i}")).collect()
}

fn int(v: &RespValue) -> i64 {
    match v {
        RespValue::Line(b':', n) => String::from_utf8_lossy(n).parse().expect("integer"),
        other => panic!("expected an integer, got {}", other.render()),
    }
}

fn setup(c: &mut Client) {
    let mut args = vec!["MSET".to_string()];
    for k in keys() {
        args.push(k);
        args.push(START.to_string());
    }
    assert_eq!(c.cmd(&args), RespValue::Line(b'+', b"OK".to_vec()));
}

/// One random transfer, as a transaction or as a script. Returns false when the
/// connection failed (the server was killed).
fn transfer(c: &mut Client, rng: &mut SmallRng) -> bool {
    let ks = keys();
    let a = rng.gen_range(0..ACCOUNTS);
    let b = (a + rng.gen_range(1..ACCOUNTS)) % ACCOUNTS;
    let n = rng.gen_range(1..10).to_string();
    if rng.gen_bool(0.5) {
        let batch = [
            vec!["MULTI".to_string()],
            vec!["DECRBY".into(), ks[a].clone(), n.clone()],
            vec!["INCRBY".into(), ks[b].clone(), n.clone()],
            vec!["EXEC".to_string()],
        ];
        let mut bytes = Vec::new();
        for cmd in &batch {
            bytes.extend(Client::encode(cmd));
        }
        if c.send_raw(&bytes).is_err() {
            return false;
        }
        (0..batch.len()).all(|_| c.read_reply().is_ok())
    } else {
        c.call(&["EVAL", TRANSFER, "2", &ks[a], &ks[b], &n]).is_ok()
    }
}

/// The total as one transaction sees it, and as one script sees it.
fn audited_totals(c: &mut Client) -> (i64, i64) {
    let ks = keys();
    let mut mget = vec!["MGET".to_string()];
    mget.extend(ks.iter().cloned());
    c.cmd(&["MULTI"]);
    c.cmd(&mget);
    let in_tx = match c.cmd(&["EXEC"]) {
        RespValue::Agg(_, Some(items)) => match &items[0] {
            RespValue::Agg(_, Some(values)) => values
                .iter()
                .map(|v| match v {
                    RespValue::Bulk(_, Some(b)) => {
                        String::from_utf8_lossy(b).parse::<i64>().expect("number")
                    }
                    other => panic!("counter: {}", other.render()),
                })
                .sum(),
            other => panic!("MGET in EXEC: {}", other.render()),
        },
        other => panic!("EXEC: {}", other.render()),
    };
    let mut eval = vec!["EVAL".to_string(), SUM.to_string(), ACCOUNTS.to_string()];
    eval.extend(ks);
    let in_script = int(&c.cmd(&eval));
    (in_tx, in_script)
}

#[test]
fn transactions_and_scripts_are_atomic_across_four_threads() {
    let seed: u64 = rand::random();
    println!("seed {seed}");
    let server = PionServer::start(4);
    let port = server.port;
    setup(&mut Client::connect(port).expect("connect"));
    let stop = Arc::new(AtomicBool::new(false));
    let mut auditors = Vec::new();
    for _ in 0..2 {
        let stop = Arc::clone(&stop);
        auditors.push(std::thread::spawn(move || {
            let mut c = Client::connect(port).expect("connect");
            let mut audits = 0;
            while !stop.load(Ordering::SeqCst) {
                let (tx, script) = audited_totals(&mut c);
                assert_eq!(tx, START * ACCOUNTS as i64, "MULTI/EXEC saw a torn state");
                assert_eq!(script, START * ACCOUNTS as i64, "a script saw a torn state");
                audits += 1;
            }
            audits
        }));
    }
    let movers: Vec<_> = (0..6)
        .map(|t| {
            std::thread::spawn(move || {
                let mut rng = SmallRng::seed_from_u64(seed ^ t);
                let mut c = Client::connect(port).expect("connect");
                for _ in 0..400 {
                    assert!(transfer(&mut c, &mut rng));
                }
            })
        })
        .collect();
    for m in movers {
        m.join().expect("mover");
    }
    stop.store(true, Ordering::SeqCst);
    for a in auditors {
        assert!(a.join().expect("auditor") > 0);
    }
    let (tx, script) = audited_totals(&mut Client::connect(port).expect("connect"));
    assert_eq!((tx, script), (START * 8, START * 8));
}

#[test]
fn a_crash_never_recovers_half_a_transaction_or_script() {
    let seed: u64 = rand::random();
    println!("seed {seed}");
    let dir = temp_dir("atomic-crash");
    let mut server = PionProcess::start(dir.path(), &["--threads", "4"]);
    setup(&mut server.client());
    let port = server.port();
    let movers: Vec<_> = (0..4)
        .map(|t| {
            std::thread::spawn(move || {
                let mut rng = SmallRng::seed_from_u64(seed ^ t);
                let mut c = Client::connect(port).expect("connect");
                c.set_read_timeout(Duration::from_secs(5)).expect("timeout");
                let mut done = 0;
                while transfer(&mut c, &mut rng) {
                    done += 1;
                }
                done
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(400));
    // A snapshot's cut must not land inside a transaction either.
    let mut admin = server.client();
    admin.cmd(&["SAVE"]);
    std::thread::sleep(Duration::from_millis(300));
    server.kill9();
    let moved: usize = movers.into_iter().map(|m| m.join().expect("mover")).sum();
    assert!(moved > 0, "no transfer ran before the kill");
    let server = PionProcess::start(dir.path(), &["--threads", "4"]);
    let (tx, script) = audited_totals(&mut server.client());
    assert_eq!(tx, START * ACCOUNTS as i64, "recovered a torn transfer");
    assert_eq!(script, START * ACCOUNTS as i64);
}
