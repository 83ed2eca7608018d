//! Server-wide state between clients: the execution gate (transactions and scripts
//! run alone), `CLIENT PAUSE`, and the operator's machinery (eviction, slow log,
//! latency monitor) that every command passes through.

pub mod gate;
pub mod operator;
pub mod pause;
