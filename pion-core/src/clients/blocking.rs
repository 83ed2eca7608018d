//! Clients blocked on keys (`BLPOP`, `BLMOVE`, `BZPOPMIN` …) and how they are served.
//!
//! A blocking command that finds nothing registers a [`Waiter`] while it still holds
//! its keys' shards, so no push can slip between "empty" and "waiting". A write to a
//! key that has waiters marks the key ready; right after that command (before its
//! reply leaves), the writing thread runs the waiters' commands again in the order
//! they blocked — first blocked, first served — and hands each reply to the waiter's
//! connection, whose event loop sends it. Nothing polls: a waiter costs nothing until
//! its key is written, its deadline passes, `CLIENT UNBLOCK` names it or its
//! connection closes.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use crate::clients::ClientState;
use crate::error::{OpError, OpResult};
use crate::reply::Reply;

/// A key in a database.
type DbKey = (usize, Vec<u8>);

/// Runs a waiter's command as its stand-in client (the dispatcher's, handed in).
pub type RunWaiter<'a> = dyn FnMut(&mut ClientState, &[Vec<u8>]) -> Reply + 'a;

/// Whether a key (database, waiter's command, key) holds a value of another type
/// than the waiter's command takes.
pub type OtherType<'a> = dyn Fn(usize, &[Vec<u8>], &[u8]) -> bool + 'a;

/// What a blocking command asks for when it finds nothing.
#[derive(Debug, Clone)]
pub struct BlockRequest {
    /// The database of the keys.
    pub db: usize,
    /// The keys waited on, in the command's order.
    pub keys: Vec<Vec<u8>>,
    /// When the wait ends with `timeout_reply` (`None`: never).
    pub deadline: Option<Instant>,
    /// The reply when the wait times out.
    pub timeout_reply: Reply,
    /// The command to run again when a key is ready, if not the one that blocked
    /// (`XREAD … $` waits with `$` resolved to the id it meant).
    pub argv: Option<Vec<Vec<u8>>>,
}

/// Where a wait stands.
#[derive(Debug)]
enum WaitState {
    /// Still waiting.
    Waiting,
    /// Ended: the reply to send and the log position it depends on.
    Done(Reply, u64),
    /// The reply was taken by the connection (or the connection went away).
    Finished,
}

/// A blocked client.
pub struct Waiter {
    /// The client's id (`CLIENT UNBLOCK`).
    pub client_id: u64,
    db: usize,
    keys: Vec<Vec<u8>>,
    /// The blocking command, run again when a key is ready.
    argv: Vec<Vec<u8>>,
    /// When the wait times out.
    pub deadline: Option<Instant>,
    timeout_reply: Reply,
    /// Runs the command for the client while its connection waits.
    stand_in: Mutex<ClientState>,
    state: Mutex<WaitState>,
    wake: Box<dyn Fn() + Send + Sync>,
}

impl std::fmt::Debug for Waiter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Waiter")
            .field("client_id", &self.client_id)
            .field("db", &self.db)
            .field("keys", &self.keys.len())
            .finish()
    }
}

impl Waiter {
    /// The reply, once the wait has ended (taken once), with the log position the
    /// reply must wait for.
    pub fn take_reply(&self) -> Option<(Reply, u64)> {
        let mut state = self.state.lock();
        match std::mem::replace(&mut *state, WaitState::Finished) {
            WaitState::Done(reply, seq) => Some((reply, seq)),
            other => {
                *state = other;
                None
            }
        }
    }

    /// Ends the wait with `reply` if it is still waiting; returns whether it was.
    fn finish(&self, reply: Reply, seq: u64) -> bool {
        let mut state = self.state.lock();
        if matches!(*state, WaitState::Waiting) {
            *state = WaitState::Done(reply, seq);
            true
        } else {
            false
        }
    }
}

/// How a wait ends from outside.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unblock {
    /// As if it timed out.
    Timeout,
    /// With `-UNBLOCKED` (`CLIENT UNBLOCK … ERROR`).
    Error,
}

/// The blocked clients of an engine.
#[derive(Default)]
pub struct BlockingRegistry {
    /// Blocked clients.
    blocked: AtomicUsize,
    /// Waiters per (database, key), in blocking order.
    by_key: Mutex<HashMap<DbKey, VecDeque<Arc<Waiter>>>>,
    /// Waiters by client id.
    by_client: Mutex<HashMap<u64, Arc<Waiter>>>,
    /// Keys written since the last serving pass.
    ready: Mutex<Vec<(usize, Vec<u8>)>>,
    any_ready: AtomicBool,
    /// Only one thread serves at a time, so waiters are served in order.
    serving: Mutex<()>,
    /// A thread serves now (set before it takes the written keys, cleared when it is
    /// done): another thread that finds no key left to serve still waits for it.
    serving_now: AtomicBool,
}

/// Marks a serving pass for its whole length (see `serving_now`).
struct ServingPass<'a>(&'a AtomicBool);

impl Drop for ServingPass<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::SeqCst);
        SERVING_HERE.with(|h| h.set(false));
    }
}

thread_local! {
    /// Whether this thread is in a serving pass (a pass never starts another).
    static SERVING_HERE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

impl BlockingRegistry {
    /// Number of blocked clients (`INFO clients`, `blocked_clients`).
    pub fn blocked_clients(&self) -> usize {
        self.blocked.load(Ordering::Relaxed)
    }

    /// Number of keys with waiters (`INFO clients`, `total_blocking_keys`).
    pub fn blocking_keys(&self) -> usize {
        if self.blocked_clients() == 0 {
            return 0;
        }
        self.by_key.lock().len()
    }

    /// Registers a wait. Call while holding the shards of the keys.
    pub fn block(&self, client: &ClientState, argv: &[Vec<u8>], req: BlockRequest) -> Arc<Waiter> {
        let wake: Box<dyn Fn() + Send + Sync> = {
            let shared = Arc::clone(&client.shared);
            Box::new(move || {
                if let Some(w) = shared.waker.lock().as_ref() {
                    w();
                }
            })
        };
        let waiter = Arc::new(Waiter {
            client_id: client.id(),
            db: req.db,
            keys: req.keys,
            argv: req.argv.unwrap_or_else(|| argv.to_vec()),
            deadline: req.deadline,
            timeout_reply: req.timeout_reply,
            stand_in: Mutex::new(client.stand_in()),
            state: Mutex::new(WaitState::Waiting),
            wake,
        });
        {
            let mut by_key = self.by_key.lock();
            let mut seen: Vec<&[u8]> = Vec::new();
            for k in &waiter.keys {
                if seen.contains(&k.as_slice()) {
                    continue;
                }
                seen.push(k);
                by_key
                    .entry((waiter.db, k.clone()))
                    .or_default()
                    .push_back(Arc::clone(&waiter));
            }
        }
        self.by_client
            .lock()
            .insert(waiter.client_id, Arc::clone(&waiter));
        self.blocked.fetch_add(1, Ordering::Relaxed);
        waiter
    }

    /// Forgets a waiter (served, timed out, unblocked or disconnected).
    fn remove(&self, waiter: &Arc<Waiter>) {
        let removed = {
            let mut by_client = self.by_client.lock();
            match by_client.get(&waiter.client_id) {
                Some(w) if Arc::ptr_eq(w, waiter) => {
                    by_client.remove(&waiter.client_id);
                    true
                }
                _ => false,
            }
        };
        if !removed {
            return;
        }
        self.blocked.fetch_sub(1, Ordering::Relaxed);
        let mut by_key = self.by_key.lock();
        for k in &waiter.keys {
            let slot = (waiter.db, k.clone());
            if let Some(q) = by_key.get_mut(&slot) {
                q.retain(|w| !Arc::ptr_eq(w, waiter));
                if q.is_empty() {
                    by_key.remove(&slot);
                }
            }
        }
    }

    /// A key was written: if anyone waits on it, it is served after this command.
    /// Call holding the key's shard.
    pub fn key_written(&self, db: usize, key: &[u8]) {
        if self.blocked_clients() == 0 {
            return;
        }
        let waited = self.by_key.lock().contains_key(&(db, key.to_vec()));
        if waited {
            self.ready.lock().push((db, key.to_vec()));
            self.any_ready.store(true, Ordering::Release);
        }
    }

    /// The keys of database `db` that clients wait on.
    pub fn waited_keys(&self, db: usize) -> Vec<Vec<u8>> {
        if self.blocked_clients() == 0 {
            return Vec::new();
        }
        let by_key = self.by_key.lock();
        by_key
            .keys()
            .filter(|(d, _)| *d == db)
            .map(|(_, k)| k.clone())
            .collect()
    }

    /// Ends a wait whose deadline passed (called by the waiter's connection).
    pub fn time_out(&self, waiter: &Arc<Waiter>) {
        if waiter.finish(waiter.timeout_reply.clone(), 0) {
            self.remove(waiter);
        }
    }

    /// Forgets the wait of a connection that closed.
    pub fn cancel(&self, waiter: &Arc<Waiter>) {
        *waiter.state.lock() = WaitState::Finished;
        self.remove(waiter);
    }

    /// The command client `id` is blocked in, if it is.
    pub fn blocked_command(&self, id: u64) -> Option<Vec<Vec<u8>>> {
        self.by_client.lock().get(&id).map(|w| w.argv.clone())
    }

    /// `CLIENT UNBLOCK`: ends the wait of client `id`; returns whether it waited.
    pub fn unblock(&self, id: u64, how: Unblock) -> bool {
        let Some(waiter) = self.by_client.lock().get(&id).cloned() else {
            return false;
        };
        let reply = match how {
            Unblock::Timeout => waiter.timeout_reply.clone(),
            Unblock::Error => Reply::error("UNBLOCKED client unblocked via CLIENT UNBLOCK"),
        };
        if waiter.finish(reply, 0) {
            self.remove(&waiter);
            (waiter.wake)();
            true
        } else {
            false
        }
    }

    /// Whether a written key has waiters to serve (one atomic load: every command asks).
    pub fn has_ready(&self) -> bool {
        self.any_ready.load(Ordering::Acquire)
    }

    /// Whether a command that just ran must pass through serving: a written key has
    /// waiters, or another thread is serving (possibly the keys this command wrote).
    pub fn wants_serving(&self) -> bool {
        self.has_ready() || self.serving_now.load(Ordering::SeqCst)
    }

    /// Serves the waiters of every key written since the last pass, in blocking order,
    /// until no written key has a waiter that can be served: `run` runs a waiter's
    /// command as its stand-in, `other_type` says whether a key holds a value of
    /// another type than a waiter's command (`db`, `argv`) takes. Call with no shard
    /// held, outside the execution gate and while no script runs; `gate_slot` is the
    /// calling thread's slot.
    pub fn serve_ready(
        &self,
        gate_slot: usize,
        run: &mut RunWaiter<'_>,
        other_type: &OtherType<'_>,
    ) {
        // A command whose write another thread is serving (it took the written keys
        // first) must not go on before that thread is done: a pipelined command
        // after a push sees the waiters already served, as in Redis.
        if !self.wants_serving() || SERVING_HERE.with(|h| h.get()) {
            return;
        }
        let _serving = self.serving.lock();
        SERVING_HERE.with(|h| h.set(true));
        self.serving_now.store(true, Ordering::SeqCst);
        let _pass = ServingPass(&self.serving_now);
        loop {
            let ready = {
                let mut r = self.ready.lock();
                self.any_ready.store(false, Ordering::Release);
                std::mem::take(&mut *r)
            };
            if ready.is_empty() {
                return;
            }
            let mut done: Vec<(usize, Vec<u8>)> = Vec::new();
            let mut slots = ready.into_iter();
            while let Some(slot) = slots.next() {
                if done.contains(&slot) {
                    continue;
                }
                if self.serve_key(&slot, gate_slot, run, other_type) == Served::Stalled {
                    // A script became busy meanwhile: the rest waits for its end.
                    for (db, key) in std::iter::once(slot).chain(slots) {
                        self.key_written(db, &key);
                    }
                    return;
                }
                done.push(slot);
            }
        }
    }

    /// Serves the waiters of one key, first blocked first, until one finds nothing.
    fn serve_key(
        &self,
        slot: &(usize, Vec<u8>),
        gate_slot: usize,
        run: &mut RunWaiter<'_>,
        other_type: &OtherType<'_>,
    ) -> Served {
        loop {
            let Some(waiter) = self
                .by_key
                .lock()
                .get(slot)
                .and_then(|q| q.front().cloned())
            else {
                return Served::Done;
            };
            // The wait cannot end elsewhere while its command runs: timeouts and
            // `CLIENT UNBLOCK` take the state lock first.
            let mut state = waiter.state.lock();
            if !matches!(*state, WaitState::Waiting) {
                drop(state);
                self.remove(&waiter);
                continue;
            }
            if other_type(waiter.db, &waiter.argv, &slot.1) {
                // A key of another type serves no waiter, as in Redis: they go on
                // waiting (and no error is counted for a reply never sent).
                return Served::Done;
            }
            let mut stand_in = waiter.stand_in.lock();
            stand_in.gate_slot = gate_slot;
            let argv = narrowed(&waiter.argv, &slot.1);
            let reply = run(&mut stand_in, &argv);
            if matches!(&reply, Reply::Error(e) if e.starts_with("BUSY")) {
                // A script went busy while the stand-in waited at the gate.
                return Served::Stalled;
            }
            let written = std::mem::take(&mut stand_in.written_for_waiters);
            if stand_in.block_request.take().is_some() {
                // Someone else took the data first: go on waiting. (Any error now is
                // the waiter's answer, such as a `BLMOVE` destination of another
                // type, which Redis answers with WRONGTYPE.)
                return Served::Done;
            }
            for (db, key) in written {
                self.key_written(db, &key);
            }
            *state = WaitState::Done(reply, stand_in.wal_seq);
            drop(stand_in);
            drop(state);
            self.remove(&waiter);
            (waiter.wake)();
        }
    }
}

/// The waiter's command narrowed to the key that became ready, as Redis serves a
/// waiter from that key alone: `BLPOP a b 0` woken by `b` runs as `BLPOP b 0`, so
/// another of its keys (now of another type, say) does not decide the answer.
fn narrowed(argv: &[Vec<u8>], key: &[u8]) -> Vec<Vec<u8>> {
    let name = argv
        .first()
        .map(|n| n.to_ascii_lowercase())
        .unwrap_or_default();
    match name.as_slice() {
        b"blpop" | b"brpop" | b"bzpopmin" | b"bzpopmax" if argv.len() > 2 => {
            vec![argv[0].clone(), key.to_vec(), argv[argv.len() - 1].clone()]
        }
        // `timeout numkeys key… rest`: the rest (direction, COUNT) kept.
        b"blmpop" | b"bzmpop" => {
            let numkeys = argv
                .get(2)
                .and_then(|n| crate::util::num::parse_i64(n))
                .and_then(|n| usize::try_from(n).ok());
            match numkeys.and_then(|n| argv.get(3 + n..)) {
                Some(rest) => {
                    let mut out = vec![argv[0].clone(), argv[1].clone(), b"1".to_vec()];
                    out.push(key.to_vec());
                    out.extend(rest.iter().cloned());
                    out
                }
                None => argv.to_vec(),
            }
        }
        // `… STREAMS key… id…`: the ready key and its id.
        b"xread" | b"xreadgroup" => {
            let mut i = 1;
            let mut at = None;
            while i < argv.len() {
                let a = argv[i].to_ascii_lowercase();
                match a.as_slice() {
                    b"block" | b"count" => i += 2,
                    b"group" => i += 3,
                    b"noack" => i += 1,
                    b"streams" => {
                        at = Some(i + 1);
                        break;
                    }
                    _ => break,
                }
            }
            let Some(at) = at.filter(|&at| (argv.len() - at).is_multiple_of(2)) else {
                return argv.to_vec();
            };
            let n = (argv.len() - at) / 2;
            match argv[at..at + n].iter().position(|k| k.as_slice() == key) {
                Some(i) => {
                    let mut out = argv[..at].to_vec();
                    out.push(key.to_vec());
                    out.push(argv[at + n + i].clone());
                    out
                }
                None => argv.to_vec(),
            }
        }
        _ => argv.to_vec(),
    }
}

/// How serving one key's waiters ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Served {
    /// Until a waiter found nothing, or none was left.
    Done,
    /// A busy script stopped it: the key is served again once the script ends.
    Stalled,
}

/// Reads a blocking command's timeout in seconds (fractions allowed) as Redis does:
/// `None` for 0 (wait forever).
pub fn parse_timeout(arg: &[u8]) -> OpResult<Option<Duration>> {
    let secs = crate::util::num::parse_f64(arg)
        .ok_or_else(|| OpError::custom("ERR timeout is not a float or out of range"))?;
    let ms = secs * 1000.0;
    // Redis converts to milliseconds in a 64-bit integer: what does not fit wraps to a
    // negative number.
    if secs < 0.0 || !ms.is_finite() || ms >= i64::MAX as f64 {
        return Err(OpError::custom("ERR timeout is negative"));
    }
    let ms = ms as u64;
    Ok((ms > 0).then(|| Duration::from_millis(ms)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Engine, EngineOptions};

    #[test]
    fn unblock_and_cancel_forget_the_waiter() {
        let engine = Engine::in_memory(EngineOptions::default());
        let reg = BlockingRegistry::default();
        let client = engine.client(String::new(), String::new(), -1);
        let req = BlockRequest {
            db: 0,
            keys: vec![b"a".to_vec(), b"a".to_vec(), b"b".to_vec()],
            deadline: None,
            timeout_reply: Reply::NullArray,
            argv: None,
        };
        let argv = vec![
            b"BLPOP".to_vec(),
            b"a".to_vec(),
            b"b".to_vec(),
            b"0".to_vec(),
        ];
        let w = reg.block(&client, &argv, req.clone());
        assert_eq!((reg.blocked_clients(), reg.blocking_keys()), (1, 2));
        assert!(reg.unblock(client.id(), Unblock::Timeout));
        assert_eq!(w.take_reply().map(|r| r.0), Some(Reply::NullArray));
        assert_eq!((reg.blocked_clients(), reg.blocking_keys()), (0, 0));
        assert!(!reg.unblock(client.id(), Unblock::Timeout));
        let w = reg.block(&client, &argv, req);
        reg.cancel(&w);
        assert_eq!((reg.blocked_clients(), reg.blocking_keys()), (0, 0));
        assert!(w.take_reply().is_none());
    }
}
