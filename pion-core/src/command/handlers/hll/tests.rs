//! Tests of the HyperLogLog representation and estimator against values read from
//! redis-server 7.0 (`PFDEBUG DECODE` after one `PFADD`, and `PFCOUNT`).

use super::estimate::{estimate, pattern};
use super::sketch::{self, Encoding, HllError, DENSE_SIZE, HDR, REGISTERS};

/// Adds elements to a value, panicking on corruption (test values are valid).
fn add_all<I: IntoIterator<Item = Vec<u8>>>(s: &mut Vec<u8>, items: I, max: u64) -> bool {
    let mut changed = false;
    for e in items {
        changed |= sketch::add(s, &e, max).expect("valid value");
    }
    changed
}

fn count(s: &[u8]) -> u64 {
    estimate(&sketch::histogram(s).expect("valid value"))
}

fn numbers(range: std::ops::RangeInclusive<u64>) -> impl Iterator<Item = Vec<u8>> {
    range.map(|i| i.to_string().into_bytes())
}

#[test]
fn element_patterns_match_redis() {
    // (element, register, count) as redis-server's PFDEBUG DECODE shows them.
    let cases: &[(&[u8], usize, u8)] = &[
        (b"", 5938, 2),
        (b"a", 12711, 2),
        (b"hello", 9216, 1),
        (b"12345678", 10579, 3),
        (b"123456789", 9293, 2),
        (b"foobarbazquux", 13152, 1),
    ];
    for &(e, reg, cnt) in cases {
        assert_eq!(pattern(e), (reg, cnt), "{:?}", String::from_utf8_lossy(e));
    }
}

#[test]
fn one_element_decodes_as_redis_does() {
    let mut s = sketch::empty();
    assert_eq!(s.len(), 18);
    assert_eq!(sketch::decode(&s), "Z:16384");
    assert_eq!(sketch::cached_card(&s), Some(0));
    assert!(sketch::add(&mut s, b"a", 3000).expect("valid value"));
    assert_eq!(sketch::decode(&s), "Z:12711 v:2,1 Z:3672");
    assert!(!sketch::add(&mut s, b"a", 3000).expect("valid value"));
}

#[test]
fn estimates_match_redis() {
    let mut s = sketch::empty();
    add_all(&mut s, numbers(1..=1000), 3000);
    assert_eq!(sketch::check(&s), Ok(Encoding::Sparse));
    assert_eq!(s.len(), 1922);
    assert_eq!(count(&s), 1001);
    add_all(&mut s, numbers(1000..=20000), 3000);
    assert_eq!(sketch::check(&s), Ok(Encoding::Dense));
    assert_eq!(s.len(), DENSE_SIZE);
    assert_eq!(count(&s), 19891);
}

#[test]
fn sparse_and_dense_agree_and_convert() {
    let mut sparse = sketch::empty();
    let mut dense = sketch::empty();
    assert!(sketch::to_dense(&mut dense).expect("valid value"));
    assert!(!sketch::to_dense(&mut dense).expect("valid value"));
    let items: Vec<Vec<u8>> = numbers(1..=300).collect();
    add_all(&mut sparse, items.clone(), 3000);
    add_all(&mut dense, items, 3000);
    assert_eq!(count(&sparse), count(&dense));
    let mut converted = sparse.clone();
    sketch::to_dense(&mut converted).expect("valid value");
    assert_eq!(converted[HDR..], dense[HDR..]);
    let mut max = vec![0u8; REGISTERS];
    sketch::merge_into(&mut max, &sparse).expect("valid value");
    let mut max2 = vec![0u8; REGISTERS];
    sketch::merge_into(&mut max2, &dense).expect("valid value");
    assert_eq!(max, max2);
    assert_eq!(estimate(&sketch::raw_histogram(&max)), count(&dense));
}

#[test]
fn small_sparse_limit_promotes() {
    let mut s = sketch::empty();
    add_all(&mut s, numbers(1..=10), 20);
    assert_eq!(sketch::check(&s), Ok(Encoding::Dense));
    let mut s = sketch::empty();
    add_all(&mut s, numbers(1..=10), 0);
    assert_eq!(sketch::check(&s), Ok(Encoding::Dense));
}

#[test]
fn checks_and_corruption() {
    assert_eq!(sketch::check(b"HYLL"), Err(HllError::NotHll));
    assert_eq!(sketch::check(b"hello world, this"), Err(HllError::NotHll));
    let mut s = sketch::empty();
    s[4] = 0;
    assert_eq!(sketch::check(&s), Err(HllError::NotHll));
    s[4] = 2;
    assert_eq!(sketch::check(&s), Err(HllError::NotHll));
    // Opcodes past the registers, or short of them.
    let mut s = sketch::empty();
    s.extend_from_slice(b"hello");
    assert_eq!(sketch::histogram(&s), Err(HllError::Corrupt));
    let mut max = vec![0u8; REGISTERS];
    assert_eq!(sketch::merge_into(&mut max, &s), Err(HllError::Corrupt));
    assert_eq!(sketch::to_dense(&mut s.clone()), Err(HllError::Corrupt));
    let mut short = sketch::empty();
    short.truncate(HDR + 1);
    assert_eq!(sketch::histogram(&short), Err(HllError::Corrupt));
    // Registers beyond the covered ones cannot be set; covered ones can.
    let mut s = short.clone();
    let r = sketch::set_register(&mut s, 16383, 1, 3000);
    assert_eq!(r, Err(HllError::Corrupt));
    let mut empty_ops = sketch::empty();
    empty_ops.truncate(HDR);
    assert_eq!(sketch::histogram(&empty_ops), Err(HllError::Corrupt));
    assert_eq!(
        sketch::set_register(&mut empty_ops, 0, 1, 3000),
        Err(HllError::Corrupt)
    );
}

#[test]
fn arbitrary_bytes_never_panic() {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::SmallRng::seed_from_u64(42);
    for round in 0..2000 {
        let len = rng.gen_range(0..64);
        let mut s = b"HYLL\x01".to_vec();
        s.resize(HDR, 0);
        s.extend((0..len).map(|_| rng.gen::<u8>()));
        let _ = sketch::histogram(&s);
        let _ = sketch::decode(&s);
        let mut max = vec![0u8; REGISTERS];
        let _ = sketch::merge_into(&mut max, &s);
        for i in 0..4 {
            let reg = rng.gen_range(0..REGISTERS);
            let count = rng.gen_range(1..=51);
            let limit = if round % 2 == 0 {
                3000
            } else {
                rng.gen_range(0..40)
            };
            if sketch::set_register(&mut s, reg, count, limit).is_err() && i > 0 {
                break;
            }
        }
        let _ = sketch::to_dense(&mut s);
    }
}

#[test]
fn cache_bits() {
    let mut s = sketch::empty();
    sketch::set_cached_card(&mut s, 0x1234);
    assert_eq!(sketch::cached_card(&s), Some(0x1234));
    sketch::invalidate_cache(&mut s);
    assert_eq!(sketch::cached_card(&s), None);
    assert_eq!(s[8], 0x34);
    assert_eq!(s[15], 0x80);
}

#[test]
fn selftest_passes() {
    super::selftest::run(3000, 7).expect("self test");
}

/// Runs a command on an engine.
fn exec(e: &crate::Engine, args: &[&[u8]]) -> crate::Reply {
    e.execute(0, args)
}

#[test]
fn commands_on_damaged_values_answer_redis_errors() {
    use rand::{Rng, SeedableRng};
    let e = crate::Engine::in_memory(crate::EngineOptions::default());
    let mut rng = rand::rngs::SmallRng::seed_from_u64(9);
    exec(&e, &[b"PFADD", b"src", b"a", b"b", b"c", b"d"]);
    let crate::Reply::Bulk(good) = exec(&e, &[b"GET", b"src"]) else {
        panic!("no value");
    };
    for round in 0..300 {
        let mut value = good.clone();
        let at = rng.gen_range(4..value.len() + 2);
        if at < value.len() {
            value[at] = rng.gen();
        } else {
            value.extend((0..rng.gen_range(1..4)).map(|_| rng.gen::<u8>()));
        }
        if round % 3 == 0 {
            value.truncate(rng.gen_range(0..value.len()));
        }
        let limit = if round % 2 == 0 { "3000" } else { "20" };
        exec(
            &e,
            &[b"CONFIG", b"SET", b"hll-sparse-max-bytes", limit.as_bytes()],
        );
        exec(&e, &[b"SET", b"h", &value]);
        for cmd in [
            &[&b"PFCOUNT"[..], b"h"][..],
            &[b"PFCOUNT", b"h", b"src"],
            &[b"PFADD", b"h", b"x", b"y", b"z"],
            &[b"PFMERGE", b"m", b"h", b"src"],
            &[b"PFMERGE", b"h", b"src"],
            &[b"PFDEBUG", b"DECODE", b"h"],
            &[b"PFDEBUG", b"GETREG", b"h"],
            &[b"PFCOUNT", b"h"],
        ] {
            if let crate::Reply::Error(err) = exec(&e, cmd) {
                let text = err.to_string();
                assert!(
                    text == "WRONGTYPE Key is not a valid HyperLogLog string value."
                        || text == "INVALIDOBJ Corrupted HLL object detected"
                        || text == "ERR HLL encoding is not sparse",
                    "{text}"
                );
            }
        }
    }
}

#[test]
fn wrong_types_and_missing_keys() {
    let e = crate::Engine::in_memory(crate::EngineOptions::default());
    exec(&e, &[b"RPUSH", b"l", b"x"]);
    exec(&e, &[b"SET", b"s", b"hello"]);
    let err = |r: crate::Reply| match r {
        crate::Reply::Error(t) => t.to_string(),
        other => panic!("{other:?}"),
    };
    assert!(err(exec(&e, &[b"PFADD", b"l", b"a"])).starts_with("WRONGTYPE Operation"));
    assert_eq!(
        err(exec(&e, &[b"PFCOUNT", b"s"])),
        "WRONGTYPE Key is not a valid HyperLogLog string value."
    );
    assert_eq!(
        err(exec(&e, &[b"PFDEBUG", b"GETREG", b"nokey"])),
        "ERR The specified key does not exist"
    );
    exec(&e, &[b"PFADD", b"h", b"a"]);
    assert_eq!(
        err(exec(&e, &[b"PFDEBUG", b"x\ny", b"h"])),
        "ERR Unknown PFDEBUG subcommand 'x y'"
    );
    assert_eq!(exec(&e, &[b"PFCOUNT", b"h"]), crate::Reply::Integer(1));
    assert_eq!(exec(&e, &[b"PFCOUNT", b"nokey"]), crate::Reply::Integer(0));
}

#[test]
fn promotion_for_a_register_over_32() {
    let mut s = sketch::empty();
    assert_eq!(sketch::set_register(&mut s, 100, 32, 3000), Ok(true));
    assert_eq!(sketch::check(&s), Ok(Encoding::Sparse));
    assert_eq!(sketch::set_register(&mut s, 200, 33, 3000), Ok(true));
    assert_eq!(sketch::check(&s), Ok(Encoding::Dense));
    assert_eq!(sketch::dense_get(&s[HDR..], 100), 32);
    assert_eq!(sketch::dense_get(&s[HDR..], 200), 33);
}
