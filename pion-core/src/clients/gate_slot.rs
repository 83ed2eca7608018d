//! Which execution-gate slot a client's commands take
//! ([`server::gate`](crate::server::gate) is the gate): worker threads share the first
//! slots, embedded callers and background work have one each.

/// Number of slots: worker threads share them modulo [`WORKER_SLOTS`]; the two last
/// belong to embedded callers and to background work (active expiry, snapshots).
pub const SLOTS: usize = 64;
/// Slots used by worker threads.
pub const WORKER_SLOTS: usize = SLOTS - 2;
/// The slot of commands run by an embedding application (no worker thread).
pub const EMBEDDED_SLOT: usize = SLOTS - 2;
/// The slot of background work that changes the keyspace.
pub const BACKGROUND_SLOT: usize = SLOTS - 1;
