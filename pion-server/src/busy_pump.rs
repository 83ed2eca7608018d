//! Serving a worker's other clients while a script it runs is busy.
//!
//! A script holds the worker thread that runs it. Once it runs past
//! `busy-reply-threshold`, Redis answers the other clients from inside the script
//! (`-BUSY`, or `SCRIPT KILL`, `FUNCTION KILL`, `SHUTDOWN NOSAVE`, which stop it); at
//! one worker thread, the default, nobody could stop a runaway script otherwise. The
//! event loop lends its connections (all but the one running the command) and its
//! listening sockets to the pump for the length of each command; the script's
//! instruction hook calls the pump through [`pion_core::server::gate::pump_while_busy`].

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use mio::Token;
use pion_core::engine::Readiness;
use pion_core::Engine;

use crate::admission::{Admission, Conns};
use crate::event_loop::{current_limits, flush, read_available};
use crate::stream::Listener;

/// The least time between two passes of the pump.
const PUMP_EVERY: Duration = Duration::from_millis(5);

/// What the event loop lends while a command runs.
#[derive(Default)]
pub struct Lent {
    /// Every connection of the worker but the one running the command.
    pub conns: Conns,
    /// The listening sockets (worker 0 only).
    pub listeners: Vec<Listener>,
    /// Connections the pump served whose output the event loop must finish writing.
    pub touched: Vec<Token>,
}

/// The slot through which the event loop lends to the pump: `Some` only while a
/// command runs.
pub type LendSlot = Rc<RefCell<Option<Lent>>>;

/// One worker thread's pump.
pub struct BusyPump {
    admission: Rc<Admission>,
    lent: LendSlot,
    engine: Engine,
    last: Cell<Instant>,
}

impl BusyPump {
    /// Installs the pump of the calling worker thread.
    pub fn install(admission: Rc<Admission>, lent: LendSlot, engine: Engine) {
        let pump = BusyPump {
            admission,
            lent,
            engine,
            last: Cell::new(Instant::now()),
        };
        pion_core::server::gate::set_busy_pump(Box::new(move || pump.pump()));
    }

    /// One pass, when a script is busy: takes in new connections, reads what the
    /// lent connections sent, runs it (the gate answers `-BUSY` to all but the
    /// commands allowed while busy) and writes the replies.
    fn pump(&self) {
        let engine = &self.engine;
        if !engine.script_busy() {
            return;
        }
        if self.last.get().elapsed() < PUMP_EVERY {
            return;
        }
        self.last.set(Instant::now());
        let Ok(mut slot) = self.lent.try_borrow_mut() else {
            return;
        };
        let Some(lent) = slot.as_mut() else {
            return;
        };
        for listener in lent.listeners.iter_mut() {
            self.admission.accept_all(listener, &mut lent.conns, engine);
        }
        self.admission.adopt_inbox(&mut lent.conns, engine);
        let limits = current_limits(engine);
        for (token, entry) in lent.conns.iter_mut() {
            let (stream, conn) = &mut **entry;
            if conn.closing || conn.peer_closed || conn.client.shared.killed.load(Ordering::SeqCst)
            {
                continue;
            }
            if !read_available(stream, conn, engine) {
                conn.peer_closed = true;
            }
            conn.process(engine, &limits);
            let ready = matches!(
                engine.reply_readiness(conn.client.wal_seq),
                Readiness::Ready
            );
            if ready && flush(stream, conn, engine).is_err() {
                conn.peer_closed = true;
            }
            conn.publish_buffers();
            if !conn.output.is_empty() || conn.peer_closed || conn.closing {
                lent.touched.push(*token);
            }
        }
    }
}
