use super::*;
use std::time::Duration;

#[test]
fn writes_that_grow_memory_are_refused_past_maxmemory() {
    let engine = Engine::in_memory(EngineOptions::default());
    assert_eq!(
        engine.execute(0, &["CONFIG", "SET", "maxmemory", "4000"]),
        Reply::ok()
    );
    let big = "x".repeat(1000);
    let oom = Reply::error("OOM command not allowed when used memory > 'maxmemory'.");
    let mut refused = false;
    for i in 0..20 {
        match engine.execute(0, &["SET", &format!("k{i}"), &big]) {
            r if r == oom => {
                refused = true;
                break;
            }
            r => assert_eq!(r, Reply::ok()),
        }
    }
    assert!(refused, "maxmemory was never enforced");
    // Reads and deletes still work, and freeing memory lets writes in again.
    assert_eq!(
        engine.execute(0, &["GET", "k0"]),
        Reply::Bulk(big.clone().into_bytes())
    );
    assert_eq!(engine.execute(0, &["FLUSHALL"]), Reply::ok());
    assert_eq!(engine.execute(0, &["SET", "k", &big]), Reply::ok());
    assert_eq!(
        engine.execute(0, &["CONFIG", "SET", "maxmemory", "0"]),
        Reply::ok()
    );
}

#[test]
fn no_touch_clients_leave_access_times_alone() {
    let engine = Engine::in_memory(EngineOptions::default());
    {
        // Written at the Unix epoch: idle for decades unless something touches it.
        let mut ks = engine.keyspace().lock_keys(&[b"k"], 0);
        ks.set(0, b"k", crate::value::Value::string(b"v".to_vec()))
            .expect("set");
    }
    let idle = |e: &Engine| match e.execute(0, &["OBJECT", "IDLETIME", "k"]) {
        Reply::Integer(n) => n,
        other => panic!("unexpected {other:?}"),
    };
    let mut session = engine.session();
    assert_eq!(session.execute(&["CLIENT", "NO-TOUCH", "ON"]), Reply::ok());
    session.execute(&["GET", "k"]);
    assert!(idle(&engine) > 1_000_000);
    session.execute(&["TOUCH", "k"]);
    assert!(idle(&engine) < 5, "TOUCH touches even under NO-TOUCH");
}

#[test]
fn a_slow_expiry_is_recorded_before_the_key_is_seen_gone() {
    let engine = Engine::in_memory(EngineOptions::default());
    let ok = |r: Reply| assert!(!matches!(r, Reply::Error(_)), "{r:?}");
    ok(engine.execute(0, &["CONFIG", "SET", "latency-monitor-threshold", "1"]));
    ok(engine.execute(0, &["CONFIG", "SET", "hz", "100"]));
    // Big enough that dropping it takes well over a millisecond.
    for chunk in 0..50 {
        let mut sadd = vec!["SADD".to_string(), "big".to_string()];
        sadd.extend((0..2000).map(|i| format!("member-{chunk}-{i}")));
        ok(engine.execute(0, &sadd));
    }
    ok(engine.execute(0, &["PEXPIRE", "big", "20"]));
    // DBSIZE counts keys not yet reclaimed: it reaches 0 only once the expiry
    // cycle removed the key.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while engine.execute(0, &["DBSIZE"]) != Reply::Integer(0) {
        assert!(
            std::time::Instant::now() < deadline,
            "the key was never reclaimed"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    let Reply::Array(events) = engine.execute(0, &["LATENCY", "LATEST"]) else {
        panic!("LATENCY LATEST is an array");
    };
    let named =
        |e: &Reply| matches!(e, Reply::Array(f) if f.first() == Some(&Reply::bulk("expire-cycle")));
    assert!(events.iter().any(named), "{events:?}");
}

#[test]
fn derived_wall_clock_tracks_the_system_clock() {
    let engine = Engine::in_memory(EngineOptions::default());
    for _ in 0..50 {
        let before = crate::util::clock::system_unix_ms();
        let derived = engine.wall_ms_at(std::time::Instant::now());
        let after = crate::util::clock::system_unix_ms();
        // The derived clock advances with the monotonic clock and is re-anchored
        // every expiry tick; while the system clock is being slewed (NTP) the two
        // drift apart by a fraction of a millisecond per tick.
        assert!(
            before - 2 <= derived && derived <= after + 2,
            "{before} <= {derived} <= {after} (within 2 ms)"
        );
        std::thread::sleep(Duration::from_millis(3));
    }
}

/// A command runs at the wall clock's time, read when it runs: a client's `PXAT` is
/// set by that clock, so after the wall clock steps ahead of the monotonic one (an
/// NTP correction) a key set to expire 10 s from now still has 10 s to live, not 10 s
/// plus the step. Inside a transaction every command sees the `EXEC`'s time.
#[test]
fn commands_run_at_the_wall_clocks_time() {
    let (clock, hand) = crate::util::clock::Clock::manual(1_700_000_000_000);
    let engine = Engine::in_memory(EngineOptions {
        disable_active_expiry: true,
        clock: clock.clone(),
        ..EngineOptions::default()
    });
    hand.step_wall(Duration::from_secs(5));
    let at = (clock.unix_ms() + 10_000).to_string();
    assert_eq!(
        engine.execute(0, &["SET", "k", "v", "PXAT", &at]),
        Reply::ok()
    );
    assert_eq!(engine.execute(0, &["PTTL", "k"]), Reply::Integer(10_000));
    let mut s = engine.session();
    assert_eq!(s.execute(&["MULTI"]), Reply::ok());
    s.execute(&["PTTL", "k"]);
    s.execute(&["PTTL", "k"]);
    hand.step_wall(Duration::from_secs(1));
    let Reply::Array(ttls) = s.execute(&["EXEC"]) else {
        panic!("EXEC replies an array");
    };
    assert_eq!(ttls, vec![Reply::Integer(9_000), Reply::Integer(9_000)]);
}
