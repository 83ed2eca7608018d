//! Command handlers, one module per family. Each module exports `COMMANDS`, its slice
//! of the command table, next to the handlers it names.

pub mod acl;
pub mod ai;
pub mod attend;
pub mod cluster;
pub mod connection;
pub mod debug;
pub mod dump;
pub mod geo;
pub mod hashes;
pub mod hll;
pub mod info;
pub mod json;
pub mod keys;
pub mod latency;
pub mod lists;
pub mod lolwut;
pub mod memory;
pub(crate) mod pause;
pub mod persistence;
pub mod prefix;
pub mod pubsub;
pub mod scripting;
pub mod search;
pub mod server;
pub mod sets;
pub mod streams;
pub mod strings;
pub mod transactions;
pub mod vsets;
pub mod zsets;

pub(crate) mod util;
