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
