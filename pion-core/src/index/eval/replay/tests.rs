//! The replay's iterators against what RediSearch's give for small lists.

use super::*;

fn list(ids: &[u64]) -> Iter {
    Iter::new(
        Kind::List {
            ids: ids.to_vec(),
            pos: 0,
        },
        Label::default(),
    )
}

fn drain(it: &mut Iter) -> Vec<u64> {
    let mut out = Vec::new();
    while let Rc::Found(d) | Rc::Past(d) = it.read() {
        out.push(d);
    }
    out
}

fn intersect(children: Vec<Iter>) -> Iter {
    Iter::intersect(children.into_iter().map(Some).collect(), None)
}

fn union(children: Vec<Iter>, quick_exit: bool) -> Iter {
    Iter::union(children, quick_exit, "UNION".into())
}

#[test]
fn intersection_gives_common_ids_and_skips_the_larger_child() {
    let mut it = intersect(vec![
        list(&[2, 4, 6, 8]),
        list(&[1, 2, 3, 4, 5, 6, 7, 8, 9]),
    ]);
    assert_eq!(drain(&mut it), vec![2, 4, 6, 8]);
    let Kind::Intersect { its, .. } = &it.kind else {
        unreachable!()
    };
    // The first child is read; the second skipped to each of its ids.
    assert_eq!(its[0].as_ref().map(Iter::counter), Some(4));
    assert_eq!(its[1].as_ref().map(Iter::counter), Some(4));
    assert_eq!(it.counter(), 4);
}

#[test]
fn union_gives_every_id_once_in_order() {
    for quick in [false, true] {
        let mut it = union(vec![list(&[1, 5, 9]), list(&[2, 5, 7])], quick);
        assert_eq!(drain(&mut it), vec![1, 2, 5, 7, 9]);
    }
    let mut many: Vec<Iter> = (0..30).map(|i| list(&[i + 1, i + 40])).collect();
    many.push(list(&[100]));
    let mut it = union(many, true);
    let got = drain(&mut it);
    let mut want: Vec<u64> = (1..=30).chain(40..70).collect();
    want.push(100);
    assert_eq!(got, want);
}

#[test]
fn negation_and_optional_walk_every_id() {
    let not = |child: &[u64]| {
        Iter::new(
            Kind::Not {
                child: Box::new(list(child)),
                max: 6,
                last: 0,
            },
            Label::default(),
        )
    };
    let mut neg = not(&[2, 3, 5]);
    assert_eq!(drain(&mut neg), vec![1, 4, 6]);
    let mut opt = Iter::new(
        Kind::Optional {
            child: Box::new(list(&[2, 3])),
            max: 4,
            last: 0,
            next_real: 0,
        },
        Label::default(),
    );
    assert_eq!(drain(&mut opt), vec![1, 2, 3, 4]);
    let mut both = intersect(vec![list(&[1, 2, 3, 4, 5, 6]), not(&[2, 4])]);
    assert_eq!(drain(&mut both), vec![1, 3, 5, 6]);
}
