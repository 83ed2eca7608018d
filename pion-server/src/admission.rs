//! How a worker thread takes connections in: worker 0 accepts on the listening
//! sockets and hands connections out round-robin; each worker registers the ones it
//! gets with its poll and wires their wake-ups. Both the event loop and the busy pump
//! (which serves a worker's clients while a script it runs is busy) take connections
//! in, so this lives apart from either.

use std::cell::Cell;
use std::collections::HashMap;
use std::io::{ErrorKind, Write};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use mio::{Interest, Registry, Token, Waker};
use parking_lot::Mutex;
use pion_core::Engine;

use crate::connection::{Connection, Wire};
use crate::stream::{Listener, Stream};

/// A connection as a worker holds it: its socket and its protocol state (boxed, so
/// that taking it out of the map while its commands run moves a pointer).
pub type Entry = Box<(Stream, Connection)>;

/// A worker's connections by poll token.
pub type Conns = HashMap<Token, Entry>;

/// Sockets accepted for a worker, with the protocol each speaks.
pub type Inbox = Arc<Mutex<Vec<(Stream, Wire)>>>;

/// How a worker reaches another: its inbox of accepted sockets and its waker.
pub type Peer = (Inbox, Arc<Waker>);

/// The first token given to a connection (those below belong to the waker and the
/// listening sockets).
pub const FIRST_CONN: usize = 1024;

/// One worker's intake: what accepting, handing out and adopting connections needs.
pub struct Admission {
    /// The worker's number (its gate slot, its turn in the round-robin).
    pub index: usize,
    /// The worker's poll registry.
    pub registry: Registry,
    /// Wakes the worker's poll (a connection's pushes, a kill, a handed-out socket).
    pub waker: Arc<Waker>,
    /// Sockets worker 0 accepted for this worker.
    pub inbox: Inbox,
    /// Connections with Pub/Sub messages to deliver (their mailboxes' bells).
    pub ready: Arc<Mutex<Vec<Token>>>,
    /// Every worker's inbox and waker, by index.
    pub peers: Arc<Vec<Peer>>,
    next_token: Cell<usize>,
    round_robin: Cell<usize>,
}

impl Admission {
    /// The intake of worker `index`.
    pub fn new(
        index: usize,
        registry: Registry,
        waker: Arc<Waker>,
        inbox: Inbox,
        ready: Arc<Mutex<Vec<Token>>>,
        peers: Arc<Vec<Peer>>,
    ) -> Admission {
        Admission {
            index,
            registry,
            waker,
            inbox,
            ready,
            peers,
            next_token: Cell::new(FIRST_CONN),
            round_robin: Cell::new(0),
        }
    }

    /// Accepts every pending connection on `listener`, keeping this worker's turns
    /// and handing the others to their workers.
    pub fn accept_all(&self, listener: &mut Listener, conns: &mut Conns, engine: &Engine) {
        loop {
            match listener.accept() {
                Ok((stream, wire)) => {
                    let turn = self.round_robin.get();
                    self.round_robin.set(turn.wrapping_add(1));
                    let target = turn % self.peers.len().max(1);
                    match self.peers.get(target) {
                        Some((inbox, waker)) if target != self.index => {
                            inbox.lock().push((stream, wire));
                            let _ = waker.wake();
                        }
                        _ => self.adopt(stream, wire, conns, engine),
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                // `SHUTDOWN` ended listening: the loop is about to stop.
                Err(_) if engine.shutdown_requested() => return,
                Err(e) => {
                    // Out of descriptors and similar: try again on the next event.
                    pion_core::log_warning!("Accepting client connection: {e}");
                    return;
                }
            }
        }
    }

    /// Adopts the sockets worker 0 handed to this worker.
    pub fn adopt_inbox(&self, conns: &mut Conns, engine: &Engine) {
        let streams: Vec<(Stream, Wire)> = std::mem::take(&mut *self.inbox.lock());
        for (s, wire) in streams {
            self.adopt(s, wire, conns, engine);
        }
    }

    /// Registers a new connection with this worker (or turns it away: `maxclients`,
    /// protected mode), whichever port it came in on.
    pub fn adopt(&self, mut stream: Stream, wire: Wire, conns: &mut Conns, engine: &Engine) {
        let maxclients = engine.config().with(|c| c.maxclients);
        if engine.clients().len() >= maxclients {
            refuse(&mut stream, wire, "-ERR max number of clients reached\r\n");
            engine
                .server_stats()
                .rejected_connections
                .fetch_add(1, Ordering::Relaxed);
            return;
        }
        // Protected mode: no password and a client from outside the machine.
        if let Some(ip) = stream.peer_ip() {
            if pion_core::command::access::refuses_peer(engine, ip) {
                refuse(&mut stream, wire, pion_core::acl::protected::DENIED);
                return;
            }
        }
        let token = Token(self.next_token.get());
        self.next_token.set(token.0 + 1);
        if self
            .registry
            .register(&mut stream, token, Interest::READABLE)
            .is_err()
        {
            return;
        }
        let addr = stream.peer_name();
        let laddr = stream.local_name();
        let fd = stream.raw_fd();
        let mut client = engine.client(addr, laddr, fd);
        client.debug_console = Some(stream.debug_console_opener());
        client.gate_slot = self.index % pion_core::server::gate::WORKER_SLOTS;
        let waker = Arc::clone(&self.waker);
        *client.shared.waker.lock() = Some(Box::new(move || {
            let _ = waker.wake();
        }));
        let (ready, bell) = (Arc::clone(&self.ready), Arc::clone(&self.waker));
        client.shared.pubsub.set_bell(Box::new(move || {
            ready.lock().push(token);
            let _ = bell.wake();
        }));
        conns.insert(
            token,
            Box::new((stream, Connection::speaking(wire, client))),
        );
    }
}

/// Tells a connection turned away why, in its protocol, before it is closed:
/// `resp_line` is the RESP error line (`-… \r\n`), sent as an error frame on the lane.
fn refuse(stream: &mut Stream, wire: Wire, resp_line: &str) {
    match wire {
        Wire::Resp => {
            let _ = stream.write_all(resp_line.as_bytes());
        }
        Wire::Lane => {
            let mut out = crate::output::Output::default();
            let text = resp_line.trim_start_matches('-').trim_end();
            crate::binary::write_error(text, &mut out);
            let _ = stream.write_all(&out.to_vec());
        }
    }
}
