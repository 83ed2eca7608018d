//! # pion-core
//!
//! Pion's engine, usable in-process with no socket: a keyspace of Redis values in 16
//! logical databases, expiry, and a data-driven command table that runs any command
//! with Redis 7 semantics. `pion-server` puts the Redis wire in front of it; the same
//! handlers answer embedded callers and network clients.
//!
//! It is not a network server (no sockets here) and not a Redis fork: values, commands
//! and replies are re-implemented and checked against a real `redis-server`.
//!
//! ```
//! use pion_core::{Engine, EngineOptions, Reply};
//!
//! let engine = Engine::in_memory(EngineOptions::default());
//! engine.set(0, b"user:1", b"ada").unwrap();
//! assert_eq!(engine.get(0, b"user:1").unwrap().as_deref(), Some(&b"ada"[..]));
//!
//! // Any command runs through `execute`.
//! assert_eq!(engine.execute(0, &["RPUSH", "queue", "a", "b"]), Reply::Integer(2));
//! ```

// From the bottom (see doc/design.md, "Layers inside pion-core"; a test holds the
// imports to it): utilities, storage, values and the keyspace, the subsystems, the
// command layer, the engine.
pub mod util;

pub mod durability;
pub mod storage;

pub mod keyspace;
pub mod value;
pub mod vector;

pub mod acl;
pub mod clients;
pub mod config;
pub mod embed;
pub mod evict;
pub mod index;
pub mod monitor;
pub mod prefix;
pub mod pubsub;
pub mod scripting;
pub mod server;

pub mod api;
pub mod command;
pub mod engine;

pub mod error;
#[cfg(test)]
mod layering;
pub mod reply;
#[cfg(test)]
mod test_support;

pub use api::Session;
pub use engine::{Engine, EngineOptions};
pub use error::{OpError, OpResult};
pub use reply::Reply;

/// The Redis version whose behaviour Pion matches (reported as `redis_version`).
pub const REDIS_VERSION: &str = "7.0.15";

/// Pion's own version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
