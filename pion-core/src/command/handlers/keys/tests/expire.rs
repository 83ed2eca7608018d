//! EXPIRE and friends, TTL and friends, PERSIST.

use super::*;

#[test]
fn conditions_nx_xx_gt_lt() {
    let e = engine();
    run(&e, &["SET", "a", "1"]);
    assert_eq!(run(&e, &["EXPIRE", "a", "100", "NX"]), int(1));
    assert_eq!(run(&e, &["EXPIRE", "a", "100", "nx"]), int(0));
    assert_eq!(run(&e, &["EXPIRE", "a", "50", "XX"]), int(1));
    assert_eq!(run(&e, &["EXPIRE", "a", "200", "GT"]), int(1));
    assert_eq!(run(&e, &["EXPIRE", "a", "100", "gt"]), int(0));
    assert_eq!(run(&e, &["EXPIRE", "a", "10", "LT"]), int(1));
    assert_eq!(run(&e, &["EXPIRE", "a", "20", "lt"]), int(0));
    assert_eq!(run(&e, &["TTL", "a"]), int(10));
    assert_eq!(run(&e, &["EXPIRE", "a", "5", "GT", "GT"]), int(0));
    // Without a time to live: GT never applies, LT always does.
    assert_eq!(run(&e, &["PERSIST", "a"]), int(1));
    assert_eq!(run(&e, &["EXPIRE", "a", "10", "GT"]), int(0));
    assert_eq!(run(&e, &["EXPIRE", "a", "10", "XX"]), int(0));
    assert_eq!(run(&e, &["EXPIRE", "a", "-10", "GT"]), int(0));
    assert_eq!(run(&e, &["EXISTS", "a"]), int(1));
    assert_eq!(run(&e, &["EXPIRE", "a", "10", "LT"]), int(1));
    assert_eq!(run(&e, &["TTL", "a"]), int(10));
    assert_eq!(run(&e, &["EXPIRE", "nokey", "10"]), int(0));
}

#[test]
fn option_errors_in_redis_order() {
    let e = engine();
    run(&e, &["SET", "a", "1"]);
    let nx = err("ERR NX and XX, GT or LT options at the same time are not compatible");
    let gtlt = err("ERR GT and LT options at the same time are not compatible");
    assert_eq!(run(&e, &["EXPIRE", "a", "10", "NX", "XX"]), nx);
    assert_eq!(run(&e, &["EXPIRE", "a", "10", "NX", "GT"]), nx);
    assert_eq!(run(&e, &["EXPIRE", "a", "10", "GT", "LT", "NX"]), nx);
    assert_eq!(run(&e, &["EXPIRE", "a", "10", "LT", "XX", "GT"]), gtlt);
    assert_eq!(
        run(&e, &["EXPIRE", "a", "10", "NX", "XX", "foo"]),
        err("ERR Unsupported option foo")
    );
    // Options are checked before the time.
    assert_eq!(
        run(&e, &["EXPIRE", "a", "abc", "bar"]),
        err("ERR Unsupported option bar")
    );
    assert_eq!(run(&e, &["EXPIRE", "a", "abc", "NX", "XX"]), nx);
    assert_eq!(
        run(&e, &["EXPIRE", "a", "abc"]),
        err("ERR value is not an integer or out of range")
    );
    assert_eq!(
        run(&e, &["PEXPIRE", "a"]),
        err("ERR wrong number of arguments for 'pexpire' command")
    );
}

#[test]
fn overflow_is_an_invalid_expire_time() {
    let e = engine();
    run(&e, &["SET", "a", "1"]);
    let max = "9223372036854775807";
    for cmd in ["expire", "pexpire", "expireat"] {
        let text = format!("ERR invalid expire time in '{cmd}' command");
        assert_eq!(run(&e, &[cmd, "a", max]), Reply::error(text.clone()));
        // Checked before the key is looked up.
        assert_eq!(run(&e, &[cmd, "nokey", max]), Reply::error(text));
    }
    assert_eq!(
        run(&e, &["PEXPIRE", "a", "9223372036854775000"]),
        err("ERR invalid expire time in 'pexpire' command")
    );
    assert_eq!(
        run(&e, &["EXPIRE", "a", "-9223372036854775808"]),
        err("ERR invalid expire time in 'expire' command")
    );
    assert_eq!(
        run(&e, &["EXPIRE", "a", "9223372036854775"]),
        err("ERR invalid expire time in 'expire' command")
    );
    assert_eq!(run(&e, &["EXPIRE", "a", "9223372036854"]), int(1));
    assert_eq!(run(&e, &["TTL", "a"]), int(9_223_372_036_854));
    assert_eq!(run(&e, &["PEXPIREAT", "a", max]), int(1));
    assert_eq!(run(&e, &["PEXPIRETIME", "a"]), int(i64::MAX));
}

#[test]
fn past_deadlines_delete_the_key() {
    let e = engine();
    for args in [
        ["EXPIRE", "k", "0"],
        ["PEXPIRE", "k", "-1"],
        ["EXPIREAT", "k", "1"],
        ["PEXPIREAT", "k", "-9223372036854775808"],
        ["PEXPIRE", "k", "-9223372036854775808"],
    ] {
        run(&e, &["SET", "k", "v"]);
        assert_eq!(run(&e, &args), int(1), "{args:?}");
        assert_eq!(run(&e, &["EXISTS", "k"]), int(0), "{args:?}");
    }
    // A condition that refuses the change also keeps the key.
    run(&e, &["SET", "k", "v", "EX", "100"]);
    assert_eq!(run(&e, &["EXPIRE", "k", "-10", "GT"]), int(0));
    assert_eq!(run(&e, &["EXPIRE", "k", "-10", "XX"]), int(1));
    assert_eq!(run(&e, &["EXISTS", "k"]), int(0));
    // Any type.
    set(&e, "s", &["m"]);
    assert_eq!(run(&e, &["PEXPIREAT", "s", "1", "LT"]), int(1));
    assert_eq!(run(&e, &["TYPE", "s"]), Reply::status("none"));
}

#[test]
fn ttl_and_expiretime_replies() {
    let e = engine();
    for cmd in ["TTL", "PTTL", "EXPIRETIME", "PEXPIRETIME"] {
        assert_eq!(run(&e, &[cmd, "nokey"]), int(-2));
    }
    run(&e, &["SET", "q", "1"]);
    for cmd in ["TTL", "PTTL", "EXPIRETIME", "PEXPIRETIME"] {
        assert_eq!(run(&e, &[cmd, "q"]), int(-1));
    }
    run(&e, &["PEXPIREAT", "q", "99999999999999"]);
    assert_eq!(run(&e, &["EXPIRETIME", "q"]), int(100_000_000_000));
    assert_eq!(run(&e, &["PEXPIRETIME", "q"]), int(99_999_999_999_999));
    run(&e, &["PEXPIREAT", "q", "99999999999499"]);
    assert_eq!(run(&e, &["EXPIRETIME", "q"]), int(99_999_999_999));
    run(&e, &["PEXPIREAT", "q", "99999999999500"]);
    assert_eq!(run(&e, &["EXPIRETIME", "q"]), int(100_000_000_000));
    // Seconds round to the nearest.
    run(&e, &["SET", "q", "1", "PX", "1400"]);
    assert_eq!(run(&e, &["TTL", "q"]), int(1));
    run(&e, &["SET", "q", "1", "PX", "100000"]);
    assert!(
        matches!(run(&e, &["PTTL", "q"]), Reply::Integer(n) if (99_000..=100_000).contains(&n))
    );
}

#[test]
fn keys_expire_lazily() {
    let e = engine();
    run(&e, &["SET", "k", "v"]);
    assert_eq!(run(&e, &["PEXPIRE", "k", "5"]), int(1));
    std::thread::sleep(std::time::Duration::from_millis(15));
    assert_eq!(run(&e, &["PTTL", "k"]), int(-2));
    assert_eq!(run(&e, &["PERSIST", "k"]), int(0));
    assert_eq!(run(&e, &["GET", "k"]), Reply::Null);
}

#[test]
fn persist() {
    let e = engine();
    assert_eq!(run(&e, &["PERSIST", "nokey"]), int(0));
    run(&e, &["SET", "k", "v", "EX", "100"]);
    assert_eq!(run(&e, &["PERSIST", "k"]), int(1));
    assert_eq!(run(&e, &["PERSIST", "k"]), int(0));
    assert_eq!(run(&e, &["TTL", "k"]), int(-1));
    assert_eq!(
        run(&e, &["PERSIST", "k", "x"]),
        err("ERR wrong number of arguments for 'persist' command")
    );
}
