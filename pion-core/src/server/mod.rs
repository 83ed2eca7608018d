//! Server-wide state between clients: the execution gate (transactions and scripts
//! run alone), `CLIENT PAUSE`, and the operator's machinery (eviction, slow log,
//! latency monitor) that every command passes through, and the connections the engine
//! makes to other servers (`MIGRATE`'s, through a dialer handed in).

pub mod gate;
pub mod operator;
pub mod outbound;
pub mod pause;
