//! Eviction through the command path of an in-memory engine.

use crate::reply::Reply;
use crate::{Engine, EngineOptions};

fn engine(policy: &str, maxmemory: u64) -> Engine {
    let e = Engine::in_memory(EngineOptions {
        disable_active_expiry: true,
        ..EngineOptions::default()
    });
    assert_eq!(
        e.execute(0, &["CONFIG", "SET", "maxmemory-policy", policy]),
        Reply::ok()
    );
    assert_eq!(
        e.execute(0, &["CONFIG", "SET", "maxmemory", &maxmemory.to_string()]),
        Reply::ok()
    );
    e
}

#[test]
fn noeviction_refuses_denyoom_commands_but_not_deletes() {
    let e = engine("noeviction", 20_000);
    let big = "x".repeat(1000);
    let mut refused = 0;
    for i in 0..40 {
        if e.execute(0, &["SET", &format!("k{i}"), &big]) == Reply::error(super::OOM_ERROR) {
            refused += 1;
        }
    }
    assert!(refused > 0);
    assert_eq!(e.operator().evictor.evicted_keys(), 0);
    assert_eq!(e.execute(0, &["DEL", "k0"]), Reply::Integer(1));
}

#[test]
fn allkeys_policies_stay_near_the_limit() {
    for policy in ["allkeys-lru", "allkeys-lfu", "allkeys-random"] {
        let e = engine(policy, 100_000);
        let big = "x".repeat(500);
        for i in 0..2000 {
            assert_eq!(e.execute(0, &["SET", &format!("k{i}"), &big]), Reply::ok());
        }
        let used = e.keyspace().estimated_memory() as u64;
        assert!(used <= 100_000 + 2000, "{policy}: used {used}");
        let evicted = e.operator().evictor.evicted_keys();
        let left = e.keyspace().db_size(0) as u64;
        assert_eq!(evicted + left, 2000, "{policy}");
        assert!(left > 50, "{policy}: only {left} keys left");
    }
}

#[test]
fn volatile_policies_evict_only_keys_with_a_ttl() {
    for policy in [
        "volatile-lru",
        "volatile-lfu",
        "volatile-random",
        "volatile-ttl",
    ] {
        let e = engine(policy, 100_000);
        let big = "x".repeat(500);
        let mut oom = false;
        for i in 0..2000 {
            let k = format!("k{i}");
            let r = if i % 2 == 0 {
                e.execute(0, &["SET", &k, &big, "EX", &(10_000 + i).to_string()])
            } else {
                e.execute(0, &["SET", &k, &big])
            };
            if r == Reply::error(super::OOM_ERROR) {
                oom = true;
                break;
            }
            assert_eq!(r, Reply::ok(), "{policy}");
        }
        // Persistent keys alone eventually fill the limit: then writes are refused.
        assert!(oom, "{policy}: never ran out of volatile keys");
        for i in (1..2000).step_by(2) {
            let k = format!("k{i}");
            if e.execute(0, &["EXISTS", &k]) == Reply::Integer(0) {
                // Only keys never written (after the OOM) may be missing.
                assert_eq!(
                    e.execute(0, &["SET", &k, "v"]),
                    Reply::error(super::OOM_ERROR)
                );
            }
        }
    }
}

/// An engine on a manual clock, starting at a fixed instant.
fn engine_on_clock() -> (Engine, std::sync::Arc<crate::util::clock::ManualClock>) {
    let (clock, hand) = crate::util::clock::Clock::manual(1_700_000_000_000);
    let e = Engine::in_memory(EngineOptions {
        disable_active_expiry: true,
        clock,
        ..EngineOptions::default()
    });
    (e, hand)
}

#[test]
fn idle_times_follow_the_engine_clock_and_lru_evicts_the_idlest() {
    use std::time::Duration;
    let (e, hand) = engine_on_clock();
    assert_eq!(e.execute(0, &["SET", "{s}old", "v"]), Reply::ok());
    hand.advance(Duration::from_secs(3600));
    assert_eq!(
        e.execute(0, &["OBJECT", "IDLETIME", "{s}old"]),
        Reply::Integer(3600)
    );
    let big = "x".repeat(1000);
    for i in 0..10 {
        assert_eq!(
            e.execute(0, &["SET", &format!("{{s}}k{i}"), &big]),
            Reply::ok()
        );
        hand.advance(Duration::from_secs(1));
    }
    // Reading a key makes it young again; TOUCH too.
    e.execute(0, &["GET", "{s}k0"]);
    assert_eq!(
        e.execute(0, &["OBJECT", "IDLETIME", "{s}k0"]),
        Reply::Integer(0)
    );
    assert_eq!(
        e.execute(0, &["OBJECT", "IDLETIME", "{s}k1"]),
        Reply::Integer(9)
    );
    // The keys share a hash tag, so a shard's sample sees all of them: allkeys-lru
    // then takes the idlest first (`old`), and keeps the one just read.
    for (k, v) in [
        ("maxmemory-samples", "64"),
        ("maxmemory-policy", "allkeys-lru"),
    ] {
        assert_eq!(e.execute(0, &["CONFIG", "SET", k, v]), Reply::ok());
    }
    let Reply::Verbatim(_, info) = e.execute(0, &["INFO", "memory"]) else {
        panic!("INFO memory");
    };
    let used: u64 = String::from_utf8_lossy(&info)
        .lines()
        .find_map(|l| l.strip_prefix("used_memory:")?.trim().parse().ok())
        .expect("used_memory");
    let limit = used - 1;
    assert_eq!(
        e.execute(0, &["CONFIG", "SET", "maxmemory", &limit.to_string()]),
        Reply::ok()
    );
    e.execute(0, &["SET", "{s}trigger", "x"]);
    assert_eq!(e.execute(0, &["EXISTS", "{s}old"]), Reply::Integer(0));
    assert_eq!(
        e.execute(0, &["EXISTS", "{s}k0"]),
        Reply::Integer(1),
        "recently read"
    );
}

#[test]
fn keys_expire_when_the_engine_clock_passes_their_deadline() {
    use std::time::Duration;
    let (e, hand) = engine_on_clock();
    assert_eq!(e.execute(0, &["SET", "k", "v", "PX", "1500"]), Reply::ok());
    assert_eq!(e.execute(0, &["SET", "at", "v"]), Reply::ok());
    assert_eq!(
        e.execute(0, &["PEXPIREAT", "at", "1700000010000"]),
        Reply::Integer(1)
    );
    hand.advance(Duration::from_millis(1499));
    assert_eq!(e.execute(0, &["PTTL", "k"]), Reply::Integer(1));
    assert_eq!(e.execute(0, &["GET", "k"]), Reply::bulk("v"));
    hand.advance(Duration::from_millis(1));
    assert_eq!(e.execute(0, &["GET", "k"]), Reply::Null);
    assert_eq!(e.execute(0, &["TTL", "at"]), Reply::Integer(9));
    hand.advance(Duration::from_secs(9));
    assert_eq!(e.execute(0, &["EXISTS", "at"]), Reply::Integer(0));
    assert_eq!(
        e.execute(0, &["TIME"]),
        Reply::Array(vec![Reply::bulk("1700000010"), Reply::bulk("500000")])
    );
}

/// A worker evicts the keys it wrote while it has some (their memory is its own
/// allocator's); one that wrote none evicts others'.
#[test]
fn a_worker_evicts_its_own_keys_first() {
    let e = engine("allkeys-lru", 200_000);
    let big = "x".repeat(500);
    // Runs commands on a thread tagged as `worker`.
    let as_worker = |worker: usize, commands: Vec<Vec<String>>| {
        std::thread::scope(|s| {
            s.spawn(|| {
                crate::util::worker::enter(worker);
                for c in &commands {
                    let args: Vec<&str> = c.iter().map(String::as_str).collect();
                    assert_eq!(e.execute(0, &args), Reply::ok(), "{c:?}");
                }
            });
        });
    };
    let sets = |prefix: &str, n: usize| -> Vec<Vec<String>> {
        (0..n)
            .map(|i| vec!["SET".into(), format!("{prefix}{i}"), big.clone()])
            .collect()
    };
    let limit = |bytes: &str| {
        vec![
            "CONFIG".into(),
            "SET".into(),
            "maxmemory".into(),
            bytes.into(),
        ]
    };
    let left = |prefix: &str, n: usize| {
        (0..n)
            .filter(|i| e.execute(0, &["EXISTS", &format!("{prefix}{i}")]) == Reply::Integer(1))
            .count()
    };
    as_worker(1, sets("a", 150));
    assert_eq!(e.operator().evictor.evicted_keys(), 0, "the first 150 fit");
    // The limit is lifted by the same worker, so that the counting evicts nothing
    // (a command over the limit evicts before it runs).
    let mut commands = sets("b", 400);
    commands.push(limit("0"));
    as_worker(2, commands);
    let evicted = e.operator().evictor.evicted_keys();
    assert!(evicted > 100, "evicted {evicted}");
    assert_eq!(left("a", 150), 150, "worker 2 evicted worker 1's keys");
    assert_eq!(left("b", 400) as u64, 400 - evicted);
    // Worker 3 wrote nothing: under a lower limit, its first command evicts others'.
    as_worker(3, vec![limit("100000"), limit("0")]);
    assert!(e.keyspace().estimated_memory() <= 100_000);
    assert!(e.operator().evictor.evicted_keys() > evicted);
}
