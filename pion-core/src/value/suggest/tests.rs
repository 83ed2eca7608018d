//! The dictionary against replies RediSearch 2.10 gave for the same commands.

use super::*;

fn dict(items: &[(&str, f64)]) -> SuggestionsValue {
    let mut d = SuggestionsValue::new();
    for (text, score) in items {
        d.add(text.as_bytes(), *score, false, b"");
    }
    d
}

fn get(d: &SuggestionsValue, prefix: &str, max: usize, fuzzy: bool) -> Vec<(String, f32)> {
    let opts = LookupOptions {
        max,
        fuzzy,
        trim: false,
    };
    d.lookup(prefix.as_bytes(), opts)
        .expect("short prefix")
        .into_iter()
        .map(|s| (String::from_utf8(s.text).expect("utf-8"), s.score))
        .collect()
}

fn names(found: &[(String, f32)]) -> Vec<&str> {
    found.iter().map(|(s, _)| s.as_str()).collect()
}

/// The dictionary the oracle's replies below were taken from.
fn hello_dict() -> SuggestionsValue {
    dict(&[
        ("hello", 1.0),
        ("Hello", 2.0),
        ("help", 3.0),
        ("helpful", 3.0),
        ("hel", 0.5),
    ])
}

#[test]
fn prefix_scores_exact_matches_and_case_folding() {
    let d = hello_dict();
    assert_eq!(d.len(), 5);
    let found = get(&d, "HEL", 5, false);
    assert_eq!(names(&found), ["hel", "help", "helpful", "Hello", "hello"]);
    let scores: Vec<f64> = found.iter().map(|(_, s)| f64::from(*s)).collect();
    assert_eq!(scores[0], 2147483648.0);
    assert_eq!(
        crate::util::num::fmt_shortest(scores[1]),
        "2.1213202476501465"
    );
    assert_eq!(
        crate::util::num::fmt_shortest(scores[4]),
        "0.5773502588272095"
    );
}

#[test]
fn fuzzy_lookups_weigh_the_distance() {
    let d = hello_dict();
    let found = get(&d, "helo", 10, true);
    assert_eq!(names(&found), ["help", "helpful", "Hello", "hello", "hel"]);
    // "help" passes RediSearch's byte-wise exact test against "helo".
    assert_eq!(found[0].1, 290630304.0);
    assert_eq!(
        crate::util::num::fmt_shortest(f64::from(found[1].1)),
        "0.2030029296875"
    );
    let found = get(&d, "hl", 5, true);
    assert_eq!(names(&found), ["help", "helpful", "Hello", "hello", "hel"]);
    assert_eq!(
        crate::util::num::fmt_shortest(f64::from(found[3].1)),
        "0.0676676407456398"
    );
}

#[test]
fn zero_scores_empty_and_long_strings_are_not_added() {
    let mut d = SuggestionsValue::new();
    assert!(!d.add(b"zzz", 0.0, false, b""));
    assert!(!d.add(b"", 1.0, false, b""));
    assert!(d.add("b".repeat(255).as_bytes(), 1.0, false, b""));
    assert!(!d.add("b".repeat(256).as_bytes(), 1.0, false, b""));
    assert!(!d.add("中".repeat(200).as_bytes(), 1.0, false, b""));
    // A NUL ends the string.
    assert!(d.add(b"a\0b", 1.0, false, b""));
    assert_eq!(names(&get(&d, "a", 5, false)), ["a"]);
    assert!(d.delete(b"a\0zz"));
    assert_eq!(d.len(), 1);
}

#[test]
fn incr_payloads_and_deletes() {
    let mut d = SuggestionsValue::new();
    assert!(d.add(b"x", 1.0, true, b""));
    assert!(!d.add(b"x", 2.0, false, b"pp"));
    assert!(!d.add(b"x", 2.0, true, b""));
    let e = &d.entries()[0];
    assert_eq!((e.score, e.payload.as_slice()), (4.0, &b"pp"[..]));
    assert!(d.delete(b"x"));
    assert!(!d.delete(b"x"));
    assert!(d.is_empty());
    // A deleted suggestion comes back with INCR from zero.
    assert!(d.add(b"x", 2.0, true, b""));
    assert_eq!(d.entries()[0].score, 2.0);
}

#[test]
fn trim_drops_results_below_a_tenth_of_the_best() {
    let d = dict(&[
        ("bbbb", 100.0),
        ("bbbc", 9.98),
        ("bbbd", 9.99),
        ("bbbe", 10.01),
    ]);
    let opts = LookupOptions {
        max: 5,
        fuzzy: false,
        trim: true,
    };
    let found = d.lookup(b"b", opts).expect("short prefix");
    let texts: Vec<&[u8]> = found.iter().map(|s| s.text.as_slice()).collect();
    assert_eq!(texts, [&b"bbbb"[..], b"bbbe"]);
}

#[test]
fn entries_come_depth_first_and_reload_the_same() {
    let mut d = hello_dict();
    assert!(d.delete(b"hello"));
    let texts: Vec<Vec<u8>> = d.entries().into_iter().map(|e| e.text).collect();
    assert_eq!(
        texts,
        [
            b"hel".to_vec(),
            b"help".to_vec(),
            b"helpful".to_vec(),
            b"Hello".to_vec()
        ]
    );
    let mut out = Vec::new();
    encode(&d, &mut out);
    let back = decode(&mut Reader::new(&out)).expect("decodes");
    assert_eq!(back, d);
}

#[test]
fn runes_keep_redisearch_text_rules() {
    // Above U+FFFF only the low 16 bits stay.
    assert_eq!(
        runes_to_utf8(&utf8_to_runes("😀x".as_bytes())),
        b"\xef\x98\x80x"
    );
    assert_eq!(fold(u16::from(b'A')), u16::from(b'a'));
    assert_eq!(fold(0xdf), u16::from(b's'));
    assert_eq!(fold(0x3c2), 0x3c3);
    // Cut-short sequences end the text instead of reading past it.
    assert_eq!(utf8_to_runes(b"a\xf0"), vec![u16::from(b'a')]);
    assert_eq!(utf8_to_runes(b"\xff\xfeab").len(), 1);
}

#[test]
fn the_memory_estimate_follows_the_trie_in_constant_time() {
    let mut d = SuggestionsValue::new();
    for i in 0..5000u32 {
        let text = format!("word{}-{}", i % 97, i);
        d.add(
            text.as_bytes(),
            1.0,
            false,
            if i % 3 == 0 { b"payload" } else { b"" },
        );
    }
    for i in (0..5000u32).step_by(4) {
        d.delete(format!("word{}-{}", i % 97, i).as_bytes());
    }
    let real = std::mem::size_of::<SuggestionsValue>() + d.root.heap_size();
    let estimate = d.mem_usage();
    assert!(
        estimate * 2 > real && estimate < real * 2,
        "estimate {estimate}, real {real}"
    );
}

#[test]
fn long_prefixes_are_refused() {
    let d = dict(&[("a", 1.0)]);
    let opts = LookupOptions {
        max: 5,
        fuzzy: false,
        trim: false,
    };
    assert!(d.lookup("a".repeat(99).as_bytes(), opts).is_some());
    assert!(d.lookup("a".repeat(100).as_bytes(), opts).is_none());
}

proptest::proptest! {
    #[test]
    fn lookups_never_panic_and_respect_max(
        ops in proptest::collection::vec((0u8..3, "[a-cA-C]{0,5}", -3i8..4), 0..60),
        prefix in "[a-cA-C]{0,4}",
        max in 1usize..6,
        fuzzy in proptest::bool::ANY,
    ) {
        let mut d = SuggestionsValue::new();
        for (op, text, score) in &ops {
            match op {
                0 => { d.add(text.as_bytes(), f64::from(*score), false, b""); }
                1 => { d.add(text.as_bytes(), f64::from(*score), true, b"p"); }
                _ => { d.delete(text.as_bytes()); }
            }
            proptest::prop_assert_eq!(d.entries().len(), d.len());
        }
        let opts = LookupOptions { max, fuzzy, trim: false };
        let found = d.lookup(prefix.as_bytes(), opts).expect("short prefix");
        proptest::prop_assert!(found.len() <= max);
        proptest::prop_assert!(found.windows(2).all(|w| w[0].score >= w[1].score));
    }
}
