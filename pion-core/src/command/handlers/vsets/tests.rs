//! Vector-set commands against the engine: replies, errors, and recall of the
//! approximate search against exact ranking.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::value::vset::VQuant;
use crate::value::{Value, VectorSetValue};

fn random_vector(rng: &mut SmallRng, dim: usize) -> Vec<f32> {
    (0..dim).map(|_| rng.gen_range(-1.0f32..1.0)).collect()
}

/// The approximate search finds nearly all of the exact top 10 on 1000 elements.
#[test]
fn vsim_recall_against_truth() {
    let mut rng = SmallRng::seed_from_u64(7);
    let dim = 32;
    let mut set = VectorSetValue::new(dim, VQuant::Q8, 16, None);
    for i in 0..1000 {
        set.insert(
            format!("e{i}").as_bytes(),
            &random_vector(&mut rng, dim),
            None,
        );
    }
    let all = |_: &crate::value::vset::Element| true;
    let (mut found, mut wanted) = (0, 0);
    for _ in 0..50 {
        let (q, _) = set.prepare(&random_vector(&mut rng, dim));
        let truth: Vec<u64> = set
            .search(&q, 10, None, true, Some(&all), None)
            .iter()
            .map(|h| h.label)
            .collect();
        let approx: Vec<u64> = set
            .search(&q, 10, Some(100), false, None, None)
            .iter()
            .map(|h| h.label)
            .collect();
        wanted += truth.len();
        found += truth.iter().filter(|l| approx.contains(l)).count();
    }
    assert!(found * 100 >= wanted * 95, "recall {found}/{wanted}");
}

/// A vector set survives the snapshot encoding: elements, vectors as stored,
/// attributes and parameters.
#[test]
fn snapshot_round_trip() {
    let mut rng = SmallRng::seed_from_u64(3);
    for quant in [VQuant::Q8, VQuant::NoQuant, VQuant::Bin] {
        let mut set = VectorSetValue::new(6, quant, 8, None);
        for i in 0..20 {
            let attr = format!("{{\"i\":{i}}}");
            let attr = (i % 3 == 0).then_some(attr.as_bytes());
            set.insert(
                format!("m{i}").as_bytes(),
                &random_vector(&mut rng, 6),
                attr,
            );
        }
        let value = Value::VectorSet(Box::new(set));
        let loaded = crate::keyspace::dump::round_trip_for_tests(&value);
        assert_eq!(loaded, value);
    }
    let mut projected = VectorSetValue::new(
        3,
        VQuant::Q8,
        16,
        Some(crate::value::vset::Projection::new(10, 3)),
    );
    projected.insert(b"x", &random_vector(&mut rng, 10), None);
    let value = Value::VectorSet(Box::new(projected));
    assert_eq!(crate::keyspace::dump::round_trip_for_tests(&value), value);
}

/// `VLINKS` reports the graph: every element has neighbours on layer 0, each one a
/// member of the set, with the stored vectors' distance; removed elements vanish.
#[test]
fn links_are_the_graph_neighbours() {
    let mut rng = SmallRng::seed_from_u64(11);
    let dim = 16;
    let mut set = VectorSetValue::new(dim, VQuant::NoQuant, 8, None);
    for i in 0..200 {
        set.insert(
            format!("e{i}").as_bytes(),
            &random_vector(&mut rng, dim),
            None,
        );
    }
    assert!(set.remove(b"e7"));
    let removed = set.label(b"e7");
    assert_eq!(removed, None);
    for i in (0..200).filter(|i| *i != 7) {
        let label = set.label(format!("e{i}").as_bytes()).expect("member");
        let layers = set.links(label).expect("linked");
        let layer0 = layers.last().expect("layer 0 is last");
        assert!(!layer0.is_empty(), "e{i} has no neighbours");
        assert!(layer0.len() <= 16, "layer 0 holds at most 2M links");
        for hit in layers.iter().flatten() {
            let other = set.element(hit.label).expect("a neighbour is a member");
            let me = set.element(label).expect("member");
            let (me, other) = (set.vector(label, me), set.vector(hit.label, other));
            assert_eq!(hit.distance, me.distance(&other, dim));
        }
    }
}

/// A snapshot's saved graph is installed as it was (no relinking): same links for
/// every element; a graph that does not fit is refused and the set relinked.
#[test]
fn saved_graph_is_reused() {
    let mut rng = SmallRng::seed_from_u64(5);
    let dim = 12;
    let mut set = VectorSetValue::new(dim, VQuant::Q8, 8, None);
    for i in 0..300 {
        set.insert(
            format!("e{i}").as_bytes(),
            &random_vector(&mut rng, dim),
            None,
        );
    }
    set.remove(b"e10");
    let graph = set.graph_bytes();
    let rebuild = |graph: &[u8]| {
        let mut copy = VectorSetValue::restore(dim, VQuant::Q8, 8, None);
        for (label, e) in set.elements() {
            let stored = set.vector(label, e).into_owned();
            let whole =
                crate::value::vset::Element::new(e.name.clone(), stored, e.norm, e.attr.clone());
            assert!(copy.restore_element_at(label, whole));
        }
        let reused = copy.restore_graph(graph);
        (copy, reused)
    };
    let (copy, reused) = rebuild(&graph);
    assert!(reused, "the saved graph was not used");
    for (label, _) in set.elements() {
        let links = |s: &VectorSetValue| -> Vec<Vec<u64>> {
            s.links(label)
                .expect("member")
                .iter()
                .map(|l| l.iter().map(|h| h.label).collect())
                .collect()
        };
        assert_eq!(links(&set), links(&copy));
    }
    let (relinked, reused) = rebuild(&graph[..graph.len() / 2]);
    assert!(!reused);
    assert_eq!(relinked.len(), set.len());
}

/// A `REDUCE` projection too large to allocate is refused with an error; nothing is
/// stored and the engine goes on.
#[test]
fn oversized_projection_is_refused() {
    let engine = crate::Engine::in_memory(crate::EngineOptions::default());
    let mut args: Vec<String> = vec!["VADD".into(), "vs".into(), "REDUCE".into(), "100000".into()];
    args.extend(["VALUES".into(), "1000".into()]);
    args.extend((0..1000).map(|i| format!("{}", i % 7)));
    args.push("e".into());
    let reply = engine.execute(0, &args);
    assert!(
        matches!(&reply, crate::Reply::Error(e) if e.contains("REDUCE projection too large")),
        "{reply:?}"
    );
    assert_eq!(
        engine.execute(0, &["EXISTS", "vs"]),
        crate::Reply::Integer(0)
    );
    let ok = engine.execute(
        0,
        &[
            "VADD", "vs", "REDUCE", "2", "VALUES", "3", "1", "2", "3", "e",
        ],
    );
    assert!(!matches!(ok, crate::Reply::Error(_)), "{ok:?}");
}

/// A `VSIM` that walks the graph with the key unlocked answers as one that keeps it
/// locked (`NOTHREAD`), and each counts one keyspace hit: the lookup after the walk
/// is not a second access.
#[test]
fn unlocked_walk_answers_as_the_locked_search() {
    let engine = crate::Engine::in_memory(crate::EngineOptions::default());
    let mut rng = SmallRng::seed_from_u64(20261207);
    for i in 0..200 {
        let v = random_vector(&mut rng, 8);
        let mut args = vec!["VADD".to_string(), "vs".into(), "VALUES".into(), "8".into()];
        args.extend(v.iter().map(|x| x.to_string()));
        args.push(format!("e{i}"));
        assert_eq!(engine.execute(0, &args), crate::Reply::Bool(true));
    }
    let q = random_vector(&mut rng, 8);
    let mut base = vec!["VSIM".to_string(), "vs".into(), "VALUES".into(), "8".into()];
    base.extend(q.iter().map(|x| x.to_string()));
    base.extend(["WITHSCORES".into(), "COUNT".into(), "5".into()]);
    let hits = || engine.keyspace().stats().keyspace_hits();
    let before = hits();
    let unlocked = engine.execute(0, &base);
    assert_eq!(hits(), before + 1);
    let mut no_thread = base.clone();
    no_thread.push("NOTHREAD".into());
    let locked = engine.execute(0, &no_thread);
    assert_eq!(hits(), before + 2);
    assert_eq!(unlocked, locked);
    assert!(
        matches!(&unlocked, crate::Reply::Map(m) if m.len() == 5),
        "{unlocked:?}"
    );
    let mut missing = base.clone();
    missing[1] = "nokey".into();
    assert_eq!(engine.execute(0, &missing), crate::Reply::Array(Vec::new()));
}
