//! Tests of the generic key commands. Expected replies and error texts were checked
//! against Redis 7.0.15.

mod expire;
mod generic;
mod object;
mod sort;
mod walk;

use crate::reply::Reply;
pub(super) use crate::test_support::{bulk, bulks, err, int};
use crate::{Engine, EngineOptions};

/// An engine without the background expiry thread, so tests see lazy expiry only.
fn engine() -> Engine {
    Engine::in_memory(EngineOptions {
        disable_active_expiry: true,
        ..EngineOptions::default()
    })
}

/// Runs a command in database 0.
fn run(e: &Engine, args: &[&str]) -> Reply {
    e.execute(0, args)
}

/// `COMMAND INFO name` as one line, like `redis-cli` prints it without the key specs:
/// `name arity flags… first last step categories…`.
fn info_line(e: &Engine, name: &str) -> String {
    let Reply::Array(outer) = run(e, &["COMMAND", "INFO", name]) else {
        return String::from("not an array");
    };
    let Some(Reply::Array(fields)) = outer.first() else {
        return String::from("no entry");
    };
    let mut words = Vec::new();
    for f in fields.iter().take(7) {
        match f {
            Reply::Integer(n) => words.push(n.to_string()),
            Reply::Set(items) | Reply::Array(items) => {
                for item in items {
                    if let Some(b) = item.as_bytes() {
                        words.push(String::from_utf8_lossy(b).into_owned());
                    }
                }
            }
            other => {
                if let Some(b) = other.as_bytes() {
                    words.push(String::from_utf8_lossy(b).into_owned());
                }
            }
        }
    }
    words.join(" ")
}

// The other families' write commands live in other modules; these helpers build
// values through the keyspace so the tests here depend on nothing else.

fn put(e: &Engine, db: usize, key: &str, value: crate::value::Value) {
    let mut ks = e.keyspace().lock_keys(&[key], e.now_ms());
    assert_eq!(ks.set(db, key.as_bytes(), value), Ok(()));
}

/// Stores a string in database 0 (`SET`).
fn mset(e: &Engine, pairs: &[(&str, &str)]) {
    for (k, v) in pairs {
        assert_eq!(run(e, &["SET", k, v]), Reply::ok());
    }
}

/// Stores a list in database 0, as `RPUSH` would build it.
fn list(e: &Engine, key: &str, items: &[&str]) {
    let l: crate::value::ListValue = items.iter().map(|s| s.as_bytes().to_vec()).collect();
    put(e, 0, key, crate::value::Value::List(l));
}

/// Stores a set in database 0, as `SADD` would build it.
fn set(e: &Engine, key: &str, members: &[&str]) {
    let limits = crate::value::EncodingLimits::default();
    let mut s = crate::value::SetValue::for_first_member(members[0].as_bytes());
    for m in members {
        s.insert(m.as_bytes(), &limits);
    }
    put(e, 0, key, crate::value::Value::Set(s));
}

/// Stores a sorted set in database 0, as `ZADD` would build it.
fn zset(e: &Engine, key: &str, members: &[(f64, &str)]) {
    let limits = crate::value::EncodingLimits::default();
    let mut z = crate::value::ZSetValue::new();
    for (score, m) in members {
        z.insert(m.as_bytes(), *score, &limits);
    }
    put(e, 0, key, crate::value::Value::ZSet(z));
}

/// Stores a hash in database 0, as `HSET` would build it.
fn hash(e: &Engine, key: &str, pairs: &[(&str, &str)]) {
    let limits = crate::value::EncodingLimits::default();
    let mut h = crate::value::HashValue::new();
    for (f, v) in pairs {
        h.insert(f.as_bytes().to_vec(), v.as_bytes().to_vec(), &limits);
    }
    put(e, 0, key, crate::value::Value::Hash(h));
}
