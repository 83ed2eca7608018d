//! The list's tests: Redis's index arithmetic, node bounds, and a model check of
//! every operation against a `VecDeque`.
use super::*;
use proptest::prelude::*;

fn list(items: &[&str]) -> ListValue {
    items.iter().map(|s| s.as_bytes().to_vec()).collect()
}

fn strs(l: &ListValue) -> Vec<String> {
    l.iter()
        .map(|b| String::from_utf8_lossy(b).into_owned())
        .collect()
}

#[test]
fn range_clamps_like_redis() {
    let l = list(&["a", "b", "c", "d", "e"]);
    let r = |s, e| l.range(s, e).count();
    assert_eq!(r(0, -1), 5);
    assert_eq!(r(-100, 100), 5);
    assert_eq!(r(3, 1), 0);
    assert_eq!(r(5, 10), 0);
    assert_eq!(r(0, -6), 0);
    assert_eq!(r(0, -5), 1);
    assert_eq!(r(i64::MIN, i64::MAX), 5);
}

#[test]
fn remove_counts_from_either_end() {
    let mut l = list(&["a", "b", "a", "b", "a", "b"]);
    assert_eq!(l.remove(2, b"a"), 2);
    assert_eq!(strs(&l), ["b", "b", "a", "b"]);
    assert_eq!(l.remove(-1, b"b"), 1);
    assert_eq!(strs(&l), ["b", "b", "a"]);
    assert_eq!(l.remove(i64::MIN, b"b"), 2);
    assert_eq!(strs(&l), ["a"]);
    assert_eq!(l.remove(0, b"z"), 0);
}

#[test]
fn positions_follow_rank_count_and_maxlen() {
    let l = list(&["a", "b", "c", "a", "b", "c", "a"]);
    assert_eq!(l.positions(b"a", 1, 1, 0), [0]);
    assert_eq!(l.positions(b"a", 2, 1, 0), [3]);
    assert_eq!(l.positions(b"a", -2, 1, 0), [3]);
    assert_eq!(l.positions(b"a", -1, 0, 3), [6]);
    assert_eq!(l.positions(b"a", 2, 1, 3), Vec::<usize>::new());
    assert_eq!(l.positions(b"a", i64::MIN, 0, 0), [6, 3, 0]);
    assert_eq!(l.positions(b"a", -i64::MAX, 0, 0), Vec::<usize>::new());
    assert_eq!(l.positions(b"a", 1, 2, 0), [0, 3]);
}

#[test]
fn redis_7_0_reports_quicklist() {
    assert_eq!(
        super::super::Value::List(list(&["a"])).encoding(),
        "quicklist"
    );
}

#[test]
fn long_lists_pack_into_bounded_nodes() {
    let mut l = ListValue::new();
    let mut m = VecDeque::new();
    for i in 0..20_000u32 {
        let v = format!("item{i}").into_bytes();
        if i % 3 == 0 {
            l.push(End::Left, v.clone());
            m.push_front(v);
        } else {
            l.push(End::Right, v.clone());
            m.push_back(v);
        }
    }
    assert!(l.node_count() > 20, "{} nodes", l.node_count());
    assert!(l
        .nodes_in(0, l.node_count())
        .all(|n| n.bytes() <= NODE_BYTES));
    for i in [0i64, 1, 777, 9_999, 10_000, 19_998, 19_999, -1, -20_000] {
        let p = if i < 0 { 20_000 + i } else { i } as usize;
        assert_eq!(l.get(i), Some(&m[p][..]), "index {i}");
    }
    assert_eq!(l.get(20_000), None);
    // About 11 bytes an element, where a heap block each cost over 50.
    assert!(
        l.mem_usage(usize::MAX) < 20_000 * 12,
        "{}",
        l.mem_usage(usize::MAX)
    );
    l.trim(5_000, -5_001);
    let kept: Vec<Vec<u8>> = m.range(5_000..15_000).cloned().collect();
    assert_eq!(l.iter().map(<[u8]>::to_vec).collect::<Vec<_>>(), kept);
    assert_eq!(l.len(), 10_000);
    assert_eq!(l.pop(End::Right), kept.last().cloned());
    assert_eq!(l.pop(End::Left), kept.first().cloned());
    let middle = &kept[4_321];
    assert_eq!(l.positions(middle, 1, 0, 0), [4_320]);
    assert_eq!(l.range(4_320, 4_320).next(), Some(&middle[..]));
}

#[test]
fn pop_many_keeps_pop_order() {
    let mut l = list(&["a", "b", "c", "d"]);
    assert_eq!(l.pop_many(End::Right, 2), [b"d".to_vec(), b"c".to_vec()]);
    assert_eq!(l.pop_many(End::Left, 10), [b"a".to_vec(), b"b".to_vec()]);
    assert!(l.is_empty());
}

/// One list operation, with arbitrary (often out-of-range) indices.
#[derive(Debug, Clone)]
enum Op {
    Push(bool, u8),
    Pop(bool, usize),
    Set(i64, u8),
    Insert(u8, bool, u8),
    Trim(i64, i64),
    Rem(i64, u8),
}

fn op() -> impl Strategy<Value = Op> {
    let idx = -12i64..12;
    prop_oneof![
        (any::<bool>(), 0u8..4).prop_map(|(l, v)| Op::Push(l, v)),
        (any::<bool>(), 0usize..4).prop_map(|(l, n)| Op::Pop(l, n)),
        (idx.clone(), 0u8..4).prop_map(|(i, v)| Op::Set(i, v)),
        (0u8..4, any::<bool>(), 0u8..4).prop_map(|(p, b, v)| Op::Insert(p, b, v)),
        (idx.clone(), idx.clone()).prop_map(|(s, e)| Op::Trim(s, e)),
        (-3i64..3, 0u8..4).prop_map(|(c, v)| Op::Rem(c, v)),
    ]
}

/// The model's view of a Redis index: the position it names, if inside.
fn model_pos(len: usize, i: i64) -> Option<usize> {
    let len = len as i64;
    let p = if i < 0 { len + i } else { i };
    (p >= 0 && p < len).then_some(p as usize)
}

/// The model's inclusive range, computed element by element.
fn model_range(m: &VecDeque<Vec<u8>>, s: i64, e: i64) -> Vec<Vec<u8>> {
    let len = m.len() as i64;
    let s = if s < 0 { (len + s).max(0) } else { s };
    let e = if e < 0 { len + e } else { e };
    (0..len)
        .filter(|&i| i >= s && i <= e)
        .map(|i| m[i as usize].clone())
        .collect()
}

/// The model's element for `v`: values 2 and 3 are kilobytes long, so a few of
/// them fill a node and the lists below span several.
fn val(v: u8) -> Vec<u8> {
    vec![
        v;
        if v >= 2 {
            2500 + usize::from(v) * 700
        } else {
            1
        }
    ]
}

proptest! {
    #[test]
    fn list_matches_vecdeque_model(
        ops in proptest::collection::vec(op(), 0..60),
        probes in proptest::collection::vec((-12i64..12, -12i64..12), 4),
    ) {
        let mut l = ListValue::new();
        let mut m: VecDeque<Vec<u8>> = VecDeque::new();
        for op in ops {
            match op {
                Op::Push(left, v) => {
                    let end = if left { End::Left } else { End::Right };
                    l.push(end, val(v));
                    if left { m.push_front(val(v)) } else { m.push_back(val(v)) }
                }
                Op::Pop(left, n) => {
                    let end = if left { End::Left } else { End::Right };
                    let got = l.pop_many(end, n);
                    let mut want = Vec::new();
                    for _ in 0..n {
                        let x = if left { m.pop_front() } else { m.pop_back() };
                        want.extend(x);
                    }
                    prop_assert_eq!(got, want);
                }
                Op::Set(i, v) => {
                    let ok = l.set(i, val(v));
                    let p = model_pos(m.len(), i);
                    if let Some(p) = p { m[p] = val(v); }
                    prop_assert_eq!(ok, p.is_some());
                }
                Op::Insert(p, before, v) => {
                    let got = l.insert(&val(p), before, val(v));
                    let at = m.iter().position(|e| *e == val(p));
                    if let Some(at) = at {
                        m.insert(if before { at } else { at + 1 }, val(v));
                    }
                    prop_assert_eq!(got, at.map(|_| m.len()));
                }
                Op::Trim(s, e) => {
                    l.trim(s, e);
                    m = model_range(&m, s, e).into();
                }
                Op::Rem(c, v) => {
                    let n = l.remove(c, &val(v));
                    // Remove one matching element at a time from the chosen end.
                    let mut removed = 0;
                    let limit = if c == 0 { usize::MAX } else { c.unsigned_abs() as usize };
                    while removed < limit {
                        let found = if c < 0 {
                            m.iter().rposition(|e| *e == val(v))
                        } else {
                            m.iter().position(|e| *e == val(v))
                        };
                        let Some(at) = found else { break };
                        m.remove(at);
                        removed += 1;
                    }
                    prop_assert_eq!(n, removed);
                }
            }
            prop_assert_eq!(l.iter().collect::<Vec<_>>(), m.iter().map(Vec::as_slice).collect::<Vec<_>>());
            prop_assert_eq!(l.len(), m.len());
            // A deque only while there are several nodes, none of them empty.
            let many = matches!(l.repr, Repr::Many(_));
            prop_assert_eq!(many, l.node_count() > 1);
            prop_assert!(!many || l.nodes_in(0, l.node_count()).all(|n| n.count() > 0));
            for &(s, e) in &probes {
                let want = model_range(&m, s, e);
                let got: Vec<Vec<u8>> = l.range(s, e).map(<[u8]>::to_vec).collect();
                prop_assert_eq!(&got, &want);
                prop_assert_eq!(l.range(s, e).len(), want.len());
                let back: Vec<Vec<u8>> = l.range(s, e).rev().map(<[u8]>::to_vec).collect();
                prop_assert_eq!(back, want.iter().rev().cloned().collect::<Vec<_>>());
                prop_assert_eq!(l.get(s), model_pos(m.len(), s).map(|p| &m[p][..]));
            }
            for v in 0u8..4 {
                let all: Vec<usize> =
                    (0..m.len()).filter(|&i| m[i] == val(v)).collect();
                prop_assert_eq!(l.positions(&val(v), 1, 0, 0), all.clone());
                let rev: Vec<usize> = all.iter().rev().copied().collect();
                prop_assert_eq!(l.positions(&val(v), -1, 0, 0), rev.clone());
                prop_assert_eq!(l.positions(&val(v), -2, 1, 0), rev.get(1).copied().into_iter().collect::<Vec<_>>());
            }
        }
    }
}
