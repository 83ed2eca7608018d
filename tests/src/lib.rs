//! Test support: a minimal RESP client that keeps raw reply bytes, servers on free
//! ports (a real `redis-server` as the oracle, and Pion in-process or as a process),
//! and the corpus format the differential tests replay.

pub mod corpus;
pub mod crash_model;
pub mod differential;
pub mod dump;
pub mod lane;
pub mod process;
pub mod resp;
pub mod servers;

pub use process::{temp_dir, PionProcess, TempDir};
pub use resp::{Client, RespValue};
pub use servers::{free_port, PionServer, RedisServer};
