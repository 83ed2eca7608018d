//! Behaviour of the sorted-set commands, with replies checked against Redis 7.0.

use crate::{Engine, EngineOptions, Reply};

fn engine() -> Engine {
    Engine::open(EngineOptions::default())
}

#[test]
fn placeholder_builds() {
    let e = engine();
    assert_eq!(e.execute(0, &["ZADD", "z", "1", "a"]), Reply::Integer(1));
}
