//! Command handlers, one module per family. Each module exports `COMMANDS`, its slice
//! of the command table, next to the handlers it names.

pub mod connection;
pub mod hashes;
pub mod keys;
pub mod lists;
pub mod persistence;
pub mod prefix;
pub mod scripting;
pub mod search;
pub mod server;
pub mod sets;
pub mod strings;
pub mod vsets;
pub mod zsets;

pub(crate) mod util;
