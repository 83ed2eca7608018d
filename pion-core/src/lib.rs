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
//!
//! ## A guide for embedders
//!
//! - **Opening**: [`Engine::in_memory`] (a pure cache) or [`Engine::open`] (durable
//!   in a directory: what was acknowledged survives a crash), with
//!   [`EngineOptions`] and [`durability::DurabilityOptions`] for the rest.
//! - **Any command**: [`Engine::execute`] (one call, a database per call) or a
//!   [`Session`] (keeps its selected database and protocol, listed by `CLIENT LIST`).
//!   Replies are [`Reply`] trees; errors carry Redis's exact text.
//! - **Strings, hashes, lists, sets, sorted sets** with Rust types: [`Engine::get`],
//!   [`Engine::set`], [`Engine::hset`], [`Engine::hgetall`], [`Engine::rpush`],
//!   [`Engine::zadd`] and the rest of [`api::typed`]; each returns
//!   [`OpResult`], an [`OpError`] holding the command's error.
//! - **The prompt cache**: [`Engine::kv_register`], [`Engine::kv_put`],
//!   [`Engine::kv_match`] and [`Engine::kv_fetch`], whose blocks share the store's
//!   buffers (see the example on [`Engine::kv_register`]).
//! - **Vector search**: [`Engine::vadd`], [`Engine::vsim`] and [`Engine::vrem`] over
//!   a vector set, with a [`Quantization`] chosen by its first element (example on
//!   [`Engine::vadd`]); search indexes are made with `FT.CREATE` through `execute`
//!   and searched with [`Engine::ft_search`] (an [`api::search::SearchQuery`] in,
//!   [`api::search::SearchResults`] out), or `FT.SEARCH` itself:
//!
//! ```
//! use pion_core::{Engine, EngineOptions, Reply};
//!
//! let engine = Engine::in_memory(EngineOptions::default());
//! engine.execute(0, &["FT.CREATE", "idx", "PREFIX", "1", "doc:", "SCHEMA", "body", "TEXT"]);
//! engine.execute(0, &["HSET", "doc:1", "body", "cached prefixes decode faster"]);
//! match engine.execute(0, &["FT.SEARCH", "idx", "decode", "NOCONTENT"]) {
//!     Reply::Array(hits) => assert_eq!(hits[0], Reply::Integer(1)),
//!     other => panic!("{other:?}"),
//! }
//! ```
//!
//! `pion-core/examples/embed.rs` puts these together in one program (the test
//! command runs it).

// Module comments name the private modules that hold each part, for maintainers
// (`cargo doc --document-private-items` renders those links).
#![allow(rustdoc::private_intra_doc_links)]

// From the bottom (see doc/design.md, "Layers inside pion-core"; a test holds the
// imports to it): utilities, storage, values and the keyspace, the subsystems, the
// command layer, the engine.
//
// The embedding API is the engine ([`Engine`], [`EngineOptions`], [`Session`], the
// typed calls of [`api`]), replies and errors, and the parts an embedder configures
// or calls directly (`durability`, `prefix`, `vector`, `embed`). The other modules
// are the server's machinery: public because pion-server, the benchmarks and the test
// suite use them, hidden from the documentation because an embedder never needs them.
#[doc(hidden)]
pub mod util;

pub mod durability;
#[doc(hidden)]
pub mod storage;

#[doc(hidden)]
pub mod keyspace;
#[doc(hidden)]
pub mod value;
pub mod vector;

#[doc(hidden)]
pub mod acl;
#[doc(hidden)]
pub mod clients;
#[doc(hidden)]
pub mod config;
pub mod embed;
#[doc(hidden)]
pub mod evict;
#[doc(hidden)]
pub mod index;
#[doc(hidden)]
pub mod monitor;
pub mod prefix;
#[doc(hidden)]
pub mod pubsub;
#[doc(hidden)]
pub mod scripting;
#[doc(hidden)]
pub mod server;

pub mod api;
#[doc(hidden)]
pub mod command;
pub mod engine;

pub mod error;
#[cfg(test)]
mod layering;
pub mod reply;
#[cfg(test)]
mod test_support;

pub use api::{Neighbor, Quantization, Session};
/// A prompt-cache layer's bytes, shared without copies: stored layers, fetched
/// layers and layers handed to a store all travel as this (`bytes::Bytes`).
pub use bytes::Bytes;
pub use engine::{Engine, EngineOptions};
pub use error::{OpError, OpResult};
pub use reply::Reply;

/// The Redis version whose behaviour Pion matches (reported as `redis_version`).
pub const REDIS_VERSION: &str = "7.0.15";

/// Pion's own version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
