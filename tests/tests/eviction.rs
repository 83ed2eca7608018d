//! Eviction under `maxmemory`, policy by policy, over the wire: which keys survive a
//! fill past the limit (recently or frequently read keys under LRU/LFU, later expiries
//! under volatile-ttl, persistent keys under every volatile policy), `evicted_keys`,
//! used memory staying near the limit, search indexes forgetting evicted documents, and
//! recovery after SIGKILL reproducing the evicted state.

use std::time::Duration;

use pion_tests::dump::{assert_same, dump};
use pion_tests::{temp_dir, Client, PionProcess, PionServer, RespValue};

const VALUE_LEN: usize = 1000;

fn ok(c: &mut Client, args: &[&str]) {
    let r = c.cmd(args);
    assert!(!r.is_error(), "{} failed: {}", args.join(" "), r.render());
}

fn int(v: &RespValue) -> i64 {
    match v {
        RespValue::Line(b':', n) => std::str::from_utf8(n)
            .expect("ascii")
            .parse()
            .expect("integer"),
        other => panic!("expected an integer, got {}", other.render()),
    }
}

fn info_field(c: &mut Client, section: &str, name: &str) -> u64 {
    let text = match c.cmd(&["INFO", section]) {
        RespValue::Bulk(_, Some(t)) => String::from_utf8(t).expect("utf8"),
        other => panic!("INFO: {}", other.render()),
    };
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .unwrap_or_else(|| panic!("INFO {section} lacks {name}"))
        .trim()
        .parse()
        .expect("a number")
}

fn exists(c: &mut Client, key: &str) -> bool {
    int(&c.cmd(&["EXISTS", key])) == 1
}

/// Fraction of `keys` still present.
fn survival(c: &mut Client, keys: &[String]) -> f64 {
    let alive = keys.iter().filter(|k| exists(c, k)).count();
    alive as f64 / keys.len() as f64
}

fn names(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}:{i}")).collect()
}

/// Sets `maxmemory` to what is used now plus `headroom` and the policy.
fn limit_here(c: &mut Client, policy: &str, headroom: u64) -> u64 {
    ok(c, &["CONFIG", "SET", "maxmemory-policy", policy]);
    let limit = info_field(c, "memory", "used_memory") + headroom;
    ok(c, &["CONFIG", "SET", "maxmemory", &limit.to_string()]);
    limit
}

/// Writes `keys` past the limit and checks the invariants every policy keeps.
fn fill(c: &mut Client, keys: &[String], limit: u64) {
    let value = "x".repeat(VALUE_LEN);
    for k in keys {
        ok(c, &["SET", k, &value]);
        // As eviction counts it: without the log's buffer (pion-server's allocator
        // counts it in used_memory), and with room for the INFO reply being built
        // while the figure is read.
        let used = info_field(c, "memory", "used_memory")
            - info_field(c, "memory", "mem_not_counted_for_evict");
        assert!(
            used <= limit + 2 * VALUE_LEN as u64 + 8192,
            "used_memory {used} ran past maxmemory {limit}"
        );
    }
}

#[test]
fn allkeys_lru_keeps_recently_read_keys() {
    let server = PionServer::start(2);
    let mut c = Client::connect(server.port).expect("connect");
    let value = "x".repeat(VALUE_LEN);
    let hot = names("hot", 500);
    let cold = names("cold", 500);
    for k in hot.iter().chain(&cold) {
        ok(&mut c, &["SET", k, &value]);
    }
    // Access times have a resolution of one second, as in Redis.
    std::thread::sleep(Duration::from_millis(2100));
    for k in &hot {
        ok(&mut c, &["GET", k]);
    }
    let limit = limit_here(&mut c, "allkeys-lru", 0);
    // Room for 300 new keys has to be made: untouched keys are the ones to go.
    let fresh = names("new", 300);
    fill(&mut c, &fresh, limit);
    let evicted = info_field(&mut c, "stats", "evicted_keys");
    let size = int(&c.cmd(&["DBSIZE"])) as u64;
    assert_eq!(evicted + size, 1300, "evicted {evicted}, {size} keys left");
    assert!(evicted >= 290, "only {evicted} evicted");
    let (h, k) = (survival(&mut c, &hot), survival(&mut c, &cold));
    assert!(h > 0.95, "recently read keys survived {h}");
    assert!(k < 0.5, "untouched keys survived {k}");
}

#[test]
fn allkeys_lfu_keeps_frequently_read_keys() {
    let server = PionServer::start(2);
    let mut c = Client::connect(server.port).expect("connect");
    // No decay: a minute boundary during the test changes nothing.
    ok(&mut c, &["CONFIG", "SET", "lfu-decay-time", "0"]);
    ok(
        &mut c,
        &["CONFIG", "SET", "maxmemory-policy", "allkeys-lfu"],
    );
    let value = "x".repeat(VALUE_LEN);
    let hot = names("hot", 500);
    let cold = names("cold", 500);
    for k in hot.iter().chain(&cold) {
        ok(&mut c, &["SET", k, &value]);
    }
    for _ in 0..10 {
        for k in &hot {
            ok(&mut c, &["GET", k]);
        }
    }
    assert!(int(&c.cmd(&["OBJECT", "FREQ", "hot:0"])) > 5);
    let limit = limit_here(&mut c, "allkeys-lfu", 0);
    fill(&mut c, &names("new", 1000), limit);
    let (h, k) = (survival(&mut c, &hot), survival(&mut c, &cold));
    assert!(h > 0.9, "frequently read keys survived {h}");
    assert!(k < 0.5, "never read keys survived {k}");
    assert!(info_field(&mut c, "stats", "evicted_keys") >= 900);
}

#[test]
fn volatile_ttl_evicts_the_nearest_expiries_first() {
    let server = PionServer::start(2);
    let mut c = Client::connect(server.port).expect("connect");
    let value = "x".repeat(VALUE_LEN);
    let volatile = names("t", 1000);
    for (i, k) in volatile.iter().enumerate() {
        let ttl = (10_000 + i * 10).to_string();
        ok(&mut c, &["SET", k, &value, "EX", &ttl]);
    }
    let persistent = names("p", 200);
    for k in &persistent {
        ok(&mut c, &["SET", k, &value]);
    }
    let limit = limit_here(&mut c, "volatile-ttl", 0);
    fill(&mut c, &names("n", 400), limit);
    let soon = survival(&mut c, &volatile[..500]);
    let late = survival(&mut c, &volatile[500..]);
    assert!(
        soon < late - 0.5,
        "nearest expiries survived {soon}, latest {late}"
    );
    assert_eq!(survival(&mut c, &persistent), 1.0);
}

#[test]
fn volatile_policies_never_evict_persistent_keys() {
    for policy in ["volatile-lru", "volatile-lfu", "volatile-random"] {
        let server = PionServer::start(2);
        let mut c = Client::connect(server.port).expect("connect");
        let value = "x".repeat(VALUE_LEN);
        let volatile = names("t", 300);
        for k in &volatile {
            ok(&mut c, &["SET", k, &value, "EX", "10000"]);
        }
        let persistent = names("p", 300);
        for k in &persistent {
            ok(&mut c, &["SET", k, &value]);
        }
        let limit = limit_here(&mut c, policy, 0);
        let value = "x".repeat(VALUE_LEN);
        let mut refused = false;
        for k in names("n", 600) {
            match c.cmd(&["SET", &k, &value]) {
                RespValue::Line(b'-', e) => {
                    assert!(e.starts_with(b"OOM command not allowed"), "{policy}");
                    refused = true;
                    break;
                }
                _ => {
                    let used = info_field(&mut c, "memory", "used_memory");
                    assert!(used <= limit + 2 * VALUE_LEN as u64, "{policy}: {used}");
                }
            }
        }
        assert!(
            refused,
            "{policy}: writes went on with no volatile key left"
        );
        assert_eq!(survival(&mut c, &persistent), 1.0, "{policy}");
        assert_eq!(survival(&mut c, &volatile), 0.0, "{policy}");
        assert_eq!(info_field(&mut c, "stats", "evicted_keys"), 300, "{policy}");
    }
}

#[test]
fn allkeys_random_stays_under_the_limit_and_counts() {
    let server = PionServer::start(2);
    let mut c = Client::connect(server.port).expect("connect");
    let limit = limit_here(&mut c, "allkeys-random", 200_000);
    fill(&mut c, &names("k", 1000), limit);
    let evicted = info_field(&mut c, "stats", "evicted_keys");
    let size = int(&c.cmd(&["DBSIZE"])) as u64;
    assert_eq!(evicted + size, 1000);
    assert!(evicted > 500, "only {evicted} evicted");
    ok(&mut c, &["CONFIG", "RESETSTAT"]);
    assert_eq!(info_field(&mut c, "stats", "evicted_keys"), 0);
}

#[test]
fn search_indexes_forget_evicted_documents() {
    let server = PionServer::start(2);
    let mut c = Client::connect(server.port).expect("connect");
    ok(
        &mut c,
        &[
            "FT.CREATE",
            "idx",
            "ON",
            "HASH",
            "PREFIX",
            "1",
            "doc:",
            "SCHEMA",
            "t",
            "TAG",
        ],
    );
    let limit = limit_here(&mut c, "allkeys-lru", 100_000);
    let value = "x".repeat(VALUE_LEN);
    for i in 0..600 {
        ok(
            &mut c,
            &["HSET", &format!("doc:{i}"), "t", "a", "body", &value],
        );
    }
    assert!(info_field(&mut c, "memory", "used_memory") <= limit + 2 * VALUE_LEN as u64);
    let evicted = info_field(&mut c, "stats", "evicted_keys");
    assert!(evicted > 100, "only {evicted} evicted");
    let total = match c.cmd(&["FT.SEARCH", "idx", "@t:{a}", "LIMIT", "0", "0"]) {
        RespValue::Agg(_, Some(items)) => int(&items[0]),
        other => panic!("FT.SEARCH: {}", other.render()),
    };
    assert_eq!(total as u64, 600 - evicted);
}

#[test]
fn evictions_are_logged_so_recovery_matches() {
    let dir = temp_dir("eviction-recovery");
    let mut server = PionProcess::start(dir.path(), &[]);
    let mut c = server.client();
    let value = "x".repeat(VALUE_LEN);
    for k in names("a", 300) {
        ok(&mut c, &["SET", &k, &value, "EX", "100000"]);
    }
    let limit = limit_here(&mut c, "allkeys-lru", 50_000);
    fill(&mut c, &names("b", 500), limit);
    assert!(info_field(&mut c, "stats", "evicted_keys") > 300);
    // The dump's own replies count as used memory and would evict keys while it
    // reads them: no more eviction from here.
    ok(&mut c, &["CONFIG", "SET", "maxmemory", "0"]);
    let before = dump(&mut c);
    drop(c);
    server.kill9();
    let server = PionProcess::start(dir.path(), &[]);
    assert_same(
        "after SIGKILL and restart",
        &before,
        &dump(&mut server.client()),
    );
}

/// An eviction publishes `evicted` and fails the `EXEC` of a client watching the key.
#[test]
fn evictions_are_announced_and_break_watches() {
    // On a manual clock: the watched key is made an hour idle without sleeping (and
    // without ties with the keys the fill writes, however slow the machine).
    let (clock, hand) = pion_core::util::clock::Clock::manual(1_700_000_000_000);
    let mut options = pion_core::EngineOptions {
        clock,
        ..pion_core::EngineOptions::default()
    };
    options.config.threads = 2;
    let server = PionServer::start_with(2, options);
    let mut c = Client::connect(server.port).expect("connect");
    ok(&mut c, &["CONFIG", "SET", "notify-keyspace-events", "Ee"]);
    let mut sub = Client::connect(server.port).expect("connect");
    sub.cmd(&["SUBSCRIBE", "__keyevent@0__:evicted"]);
    let mut watcher = Client::connect(server.port).expect("connect");
    ok(&mut watcher, &["SET", "watched", "v"]);
    ok(&mut watcher, &["WATCH", "watched"]);
    // LRU is approximated by sampling: each eviction samples one shard, so the watched
    // key (the only idle one) goes once its shard is sampled, which a fill of a few
    // hundred evictions is all but sure to do; the fill goes on until it has.
    hand.advance(Duration::from_secs(3600));
    ok(&mut c, &["CONFIG", "SET", "maxmemory-samples", "64"]);
    let limit = limit_here(&mut c, "allkeys-lru", 50_000);
    for round in 0..10 {
        fill(&mut c, &names(&format!("e{round}"), 200), limit);
        if !exists(&mut c, "watched") {
            break;
        }
    }
    assert!(
        !exists(&mut c, "watched"),
        "the oldest key survived 2,000 writes past the limit"
    );
    sub.set_read_timeout(Duration::from_secs(5))
        .expect("timeout");
    let (msg, _) = sub.read_reply().expect("an evicted event");
    assert!(msg.render().contains("evicted"), "{}", msg.render());
    ok(&mut watcher, &["MULTI"]);
    ok(&mut watcher, &["SET", "watched", "again"]);
    assert_eq!(watcher.cmd(&["EXEC"]), RespValue::Agg(b'*', None));
    ok(&mut c, &["CONFIG", "SET", "maxmemory", "0"]);
}

/// Over `maxmemory` under `noeviction`, a script's write is refused with Redis's OOM
/// error (and a shebang script that may write before it runs), while `allow-oom` and
/// read-only scripts run.
#[test]
fn scripts_meet_maxmemory_as_redis_does() {
    let server = PionServer::start(1);
    let mut c = Client::connect(server.port).expect("connect");
    let value = "x".repeat(VALUE_LEN);
    for k in names("s", 20) {
        ok(&mut c, &["SET", &k, &value]);
    }
    ok(&mut c, &["CONFIG", "SET", "maxmemory-policy", "noeviction"]);
    let used = info_field(&mut c, "memory", "used_memory");
    ok(
        &mut c,
        &["CONFIG", "SET", "maxmemory", &(used / 2).to_string()],
    );
    let refused = c.cmd(&["EVAL", "redis.call('set', 'x', 1)", "0"]).render();
    assert!(
        refused.starts_with("-OOM command not allowed when used memory > 'maxmemory'."),
        "{refused}"
    );
    let refused = c.cmd(&["EVAL", "#!lua\nreturn 1", "0"]).render();
    assert_eq!(
        refused,
        "-OOM command not allowed when used memory > 'maxmemory'."
    );
    let allowed = c.cmd(&[
        "EVAL",
        "#!lua flags=allow-oom\nredis.call('set', 'y', 1) return 2",
        "0",
    ]);
    assert_eq!(allowed.render(), ":2");
    let read = c.cmd(&[
        "EVAL",
        "#!lua flags=no-writes\nreturn redis.call('get', 'y')",
        "0",
    ]);
    assert_eq!(read.render(), "\"1\"");
    assert!(!exists(&mut c, "x"));
    ok(&mut c, &["CONFIG", "SET", "maxmemory", "0"]);
}
