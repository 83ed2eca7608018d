//! Running blocked clients' commands (the waiters themselves are
//! [`clients::blocking`](crate::clients::blocking)'s): after a command wrote keys that
//! clients wait on, their commands run again through the dispatcher, and a blocking
//! command that found nothing asks to wait.

use std::time::{Duration, Instant};

use crate::clients::blocking::BlockRequest;
use crate::command::ctx::{Ctx, Effect};
use crate::engine::Engine;
use crate::error::OpResult;
use crate::reply::Reply;
use crate::value::Value;

/// Serves the waiters of the keys written since the last pass (see
/// [`BlockingRegistry::serve_ready`](crate::clients::blocking::BlockingRegistry::serve_ready)).
pub(crate) fn serve_ready(engine: &Engine, gate_slot: usize) {
    let registry = engine.blocking();
    // While a script runs, waiters are served when it ends (by the script's own
    // command): a command allowed while it is busy must not pop what the script
    // pushed halfway, nor hand a waiter the -BUSY its stand-in would meet.
    if !registry.wants_serving() || engine.gate().busy().script_running() {
        return;
    }
    // Serving waits for other threads that may be waiting for the gate: this
    // thread's batch lets its passage go first.
    engine.gate().pause_batch();
    registry.serve_ready(
        gate_slot,
        &mut |stand_in, argv| super::execute(engine, stand_in, argv),
        &|db, argv, key| holds_other_type(engine, db, argv, key),
    );
}

/// Whether `key` holds a value of another type than the waiter's command takes (sorted sets
/// for the sorted-set commands, streams for `XREAD`, lists for the others). A group
/// read is always run: a key that is no longer a stream ends its wait with an error.
fn holds_other_type(engine: &Engine, db: usize, argv: &[Vec<u8>], key: &[u8]) -> bool {
    let spec = argv.first().and_then(|name| super::table().get(name));
    let group = spec.map(|s| s.group);
    if spec.is_some_and(|s| s.name == "xreadgroup") {
        return false;
    }
    let mut ks = engine.keyspace().lock_keys(&[key], engine.now_ms());
    match ks.peek(db, key) {
        Ok(Some(entry)) => match &entry.value {
            Value::List(_) => group != Some(super::Group::List),
            Value::ZSet(_) => group != Some(super::Group::SortedSet),
            Value::Stream(_) => group != Some(super::Group::Stream),
            _ => true,
        },
        _ => false,
    }
}

impl Ctx<'_> {
    /// Ends a blocking command that found nothing: the client waits on `keys` (when it
    /// may block: not inside a transaction or script, where it gets the timeout reply
    /// at once, as in Redis).
    pub fn wait_for_keys(
        &mut self,
        keys: &[Vec<u8>],
        timeout: Option<Duration>,
        timeout_reply: Reply,
    ) -> OpResult<Reply> {
        self.effect = Effect::Nothing;
        if self.client.nested.is_none() {
            let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
            self.client.block_request = Some(BlockRequest {
                db: self.db(),
                keys: keys.to_vec(),
                deadline,
                timeout_reply: timeout_reply.clone(),
                argv: None,
            });
        }
        Ok(timeout_reply)
    }

    /// [`wait_for_keys`](Self::wait_for_keys), running `again` instead of the
    /// command when a key is ready.
    pub fn wait_for_keys_as(
        &mut self,
        keys: &[Vec<u8>],
        timeout: Option<Duration>,
        timeout_reply: Reply,
        again: Vec<Vec<u8>>,
    ) -> OpResult<Reply> {
        let reply = self.wait_for_keys(keys, timeout, timeout_reply)?;
        if let Some(req) = self.client.block_request.as_mut() {
            req.argv = Some(again);
        }
        Ok(reply)
    }
}
