//! # pion-server
//!
//! The Redis-wire front of Pion: a RESP2/RESP3 codec, a sans-I/O connection state
//! machine and a mio event loop with N worker threads over one shared
//! [`pion_core::Engine`]. All command semantics live in `pion-core`; this crate only
//! moves bytes.

pub mod admission;
pub mod binary;
pub mod busy_pump;
pub mod cli;
pub mod connection;
pub mod debug_console;
pub mod dialer;
pub mod event_loop;
pub mod output;
pub mod resp;
pub mod startup;
pub mod stream;

pub use event_loop::{Server, StopHandle};
