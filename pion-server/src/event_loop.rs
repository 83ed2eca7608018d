//! The mio event loop: N worker threads, each with its own poll, sharing one engine.
//! Worker 0 accepts and hands connections out round-robin; every worker reads, runs
//! the commands against the shared keyspace and writes the replies of its own
//! connections. The thread count changes throughput, never what a client sees.

use std::cell::RefCell;
use std::io::{self, ErrorKind, Read, Write};
use std::net::SocketAddr;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use mio::net::{TcpListener, UnixListener};
use mio::{Events, Interest, Poll, Token, Waker};
use parking_lot::Mutex;
use pion_core::engine::Readiness;
use pion_core::Engine;

use crate::admission::{Admission, Conns, Entry, Peer, FIRST_CONN};
use crate::busy_pump::{BusyPump, LendSlot, Lent};
use crate::connection::{Connection, Wire};
use crate::resp::Limits;
use crate::stream::{ListenStop, Listener, Stream};

/// Listening sockets use tokens `FIRST_LISTENER..FIRST_CONN`.
const FIRST_LISTENER: usize = 2;
const WAKER: Token = Token(1);
const READ_CHUNK: usize = 64 * 1024;
/// A connection idle this long gives back a large input buffer it kept.
const IDLE_INPUT_RELEASE_MS: i64 = 1000;
/// Input read from one connection before its complete commands run: a pipeline
/// longer than this is read, parsed and run a slice at a time (as Redis reads 16 KB
/// per event), so the input buffer stays near this size whatever the pipeline's.
const INPUT_SLICE: usize = 256 * 1024;
const TICK: Duration = Duration::from_millis(100);

/// A running server's handle: ask it to stop from another thread.
#[derive(Clone)]
pub struct StopHandle {
    stop: Arc<AtomicBool>,
    wakers: Arc<Mutex<Vec<Arc<Waker>>>>,
}

impl StopHandle {
    /// Asks every worker to stop (they exit within one tick).
    pub fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
        for w in self.wakers.lock().iter() {
            let _ = w.wake();
        }
    }

    /// The flag workers poll (signal handlers set it).
    pub fn flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.stop)
    }
}

/// A Redis-protocol server over an engine.
pub struct Server {
    engine: Engine,
    listeners: Vec<std::net::TcpListener>,
    /// The binary lane's listening sockets (port + 1).
    lane_listeners: Vec<std::net::TcpListener>,
    /// The `unixsocket` listener and its path.
    unix: Option<(std::os::unix::net::UnixListener, String)>,
    threads: usize,
    stop: StopHandle,
}

/// What a worker starts from (built before its thread, so it holds nothing bound to
/// one thread).
struct WorkerSeed {
    index: usize,
    poll: Poll,
    waker: Arc<Waker>,
    inbox: crate::admission::Inbox,
    ready: Arc<Mutex<Vec<Token>>>,
}

struct Worker {
    poll: Poll,
    /// Taking connections in (shared with the busy pump).
    admission: Rc<Admission>,
    conns: Conns,
    /// The listening sockets (worker 0 only).
    listeners: Vec<Listener>,
    /// Where `conns` and `listeners` are lent to the busy pump while a command runs.
    lent: LendSlot,
    /// Connections served in this pass whose replies are still to be written.
    pending: Vec<Token>,
    /// Connections whose replies wait for the write-ahead log (the disk refused the
    /// write): retried every tick, sent once the log has them.
    held: Vec<Token>,
    /// Connections whose replies wait for an fsync (`appendfsync always`).
    awaiting_sync: Vec<Token>,
    /// The earliest deadline of this worker's blocked clients.
    next_block_deadline: Option<std::time::Instant>,
}

/// Whether a connection stays after being served or written to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    Keep,
    Close,
}

/// The decoder limits the configuration sets now.
pub(crate) fn current_limits(engine: &Engine) -> Limits {
    Limits {
        max_bulk_len: engine.config().with(|c| c.proto_max_bulk_len),
        max_query_buffer: engine.config().with(|c| c.client_query_buffer_limit),
        unauthenticated: false,
    }
}

impl Server {
    /// A server that will serve `listener` (already bound, so tests can use port 0)
    /// with `threads` worker threads.
    pub fn new(engine: Engine, listener: std::net::TcpListener, threads: usize) -> Server {
        Server::with_listeners(engine, vec![listener], threads)
    }

    /// A server over several listening sockets (one per `--bind` address).
    pub fn with_listeners(
        engine: Engine,
        listeners: Vec<std::net::TcpListener>,
        threads: usize,
    ) -> Server {
        let stop = StopHandle {
            stop: Arc::new(AtomicBool::new(false)),
            wakers: Arc::new(Mutex::new(Vec::new())),
        };
        // MIGRATE reaches other servers over TCP.
        engine.set_dialer(Arc::new(crate::dialer::TcpDialer));
        Server {
            engine,
            listeners,
            lane_listeners: Vec::new(),
            unix: None,
            threads: threads.max(1),
            stop,
        }
    }

    /// Also serves a Unix-domain socket (`unixsocket`), bound at `path`.
    pub fn with_unix_socket(
        mut self,
        listener: std::os::unix::net::UnixListener,
        path: String,
    ) -> Server {
        self.unix = Some((listener, path));
        self
    }

    /// Also serves the binary lane on these sockets (bound already).
    pub fn with_lane_listeners(mut self, listeners: Vec<std::net::TcpListener>) -> Server {
        self.lane_listeners = listeners;
        self
    }

    /// A handle that stops the server.
    pub fn stop_handle(&self) -> StopHandle {
        self.stop.clone()
    }

    /// The address the server listens on.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listeners
            .first()
            .ok_or_else(|| io::Error::new(ErrorKind::NotFound, "no listener"))?
            .local_addr()
    }

    /// Serves until stopped (signal, [`StopHandle::stop`] or `SHUTDOWN`).
    pub fn run(self) -> io::Result<()> {
        let tcp: Vec<&std::net::TcpListener> =
            self.listeners.iter().chain(&self.lane_listeners).collect();
        let listen_stop = ListenStop::new(&tcp, self.unix.as_ref().map(|(l, _)| l))?;
        let mut listeners = Vec::new();
        for l in self.listeners {
            l.set_nonblocking(true)?;
            listeners.push(Listener::Tcp(TcpListener::from_std(l), Wire::Resp));
        }
        for l in self.lane_listeners {
            l.set_nonblocking(true)?;
            listeners.push(Listener::Tcp(TcpListener::from_std(l), Wire::Lane));
        }
        if let Some((l, path)) = self.unix {
            l.set_nonblocking(true)?;
            listeners.push(Listener::Unix(UnixListener::from_std(l), path));
        }
        if listeners.is_empty() || listeners.len() > FIRST_CONN - FIRST_LISTENER {
            return Err(io::Error::new(
                ErrorKind::InvalidInput,
                "between 1 and 1022 listening addresses are supported",
            ));
        }
        let mut workers = Vec::new();
        for index in 0..self.threads {
            let poll = Poll::new()?;
            let waker = Arc::new(Waker::new(poll.registry(), WAKER)?);
            self.stop.wakers.lock().push(Arc::clone(&waker));
            let on_sync = Arc::clone(&waker);
            self.engine.on_log_synced(Box::new(move || {
                let _ = on_sync.wake();
            }));
            workers.push(WorkerSeed {
                index,
                poll,
                waker,
                inbox: Arc::new(Mutex::new(Vec::new())),
                ready: Arc::new(Mutex::new(Vec::new())),
            });
        }
        let stop = self.stop.clone();
        let on_shutdown = stop.clone();
        // Runs on the thread of the `SHUTDOWN` command, before its client's connection
        // closes.
        self.engine.on_shutdown(Box::new(move || {
            listen_stop.stop();
            on_shutdown.stop();
        }));
        workers[0].poll.registry().register(
            &mut listeners[0],
            Token(FIRST_LISTENER),
            Interest::READABLE,
        )?;
        for (i, l) in listeners.iter_mut().enumerate().skip(1) {
            workers[0].poll.registry().register(
                l,
                Token(FIRST_LISTENER + i),
                Interest::READABLE,
            )?;
        }
        let peers: Vec<Peer> = workers
            .iter()
            .map(|w| (Arc::clone(&w.inbox), Arc::clone(&w.waker)))
            .collect();
        let peers = Arc::new(peers);
        let mut handles = Vec::new();
        let mut first = None;
        for seed in workers {
            if seed.index == 0 {
                first = Some(seed);
                continue;
            }
            let engine = self.engine.clone();
            let stop = stop.clone();
            let peers = Arc::clone(&peers);
            handles.push(
                std::thread::Builder::new()
                    .name(format!("pion-worker-{}", seed.index))
                    .spawn(move || {
                        Worker::start(seed, Vec::new(), peers, &engine)?.run(&engine, &stop)
                    })?,
            );
        }
        let result = match first {
            Some(seed) => Worker::start(seed, listeners, peers, &self.engine)
                .and_then(|w| w.run(&self.engine, &stop)),
            None => Ok(()),
        };
        stop.stop();
        for h in handles {
            let _ = h.join();
        }
        result
    }
}

impl Worker {
    /// The worker of `seed`, on its own thread: builds what the busy pump shares with
    /// the event loop and installs the pump.
    fn start(
        seed: WorkerSeed,
        listeners: Vec<Listener>,
        peers: Arc<Vec<Peer>>,
        engine: &Engine,
    ) -> io::Result<Worker> {
        // Keys this thread writes carry its tag, for eviction to prefer.
        pion_core::util::worker::enter(seed.index);
        let admission = Rc::new(Admission::new(
            seed.index,
            seed.poll.registry().try_clone()?,
            seed.waker,
            seed.inbox,
            seed.ready,
            peers,
        ));
        let lent: LendSlot = Rc::new(RefCell::new(None));
        BusyPump::install(Rc::clone(&admission), Rc::clone(&lent), engine.clone());
        Ok(Worker {
            poll: seed.poll,
            admission,
            conns: Conns::default(),
            listeners,
            lent,
            pending: Vec::new(),
            held: Vec::new(),
            awaiting_sync: Vec::new(),
            next_block_deadline: None,
        })
    }

    fn run(mut self, engine: &Engine, stop: &StopHandle) -> io::Result<()> {
        let mut events = Events::with_capacity(1024);
        let mut last_sweep = std::time::Instant::now();
        while !stop.stop.load(Ordering::SeqCst) {
            // Replies waiting for an fsync: look for other work without sleeping. With
            // none, fsync here (no hand-off to the sync thread and back); with some,
            // hand the fsync over and serve it meanwhile.
            let waiting = !self.awaiting_sync.is_empty() && !engine.log_sync_in_flight();
            let timeout = if waiting {
                Duration::ZERO
            } else {
                // A blocked client's deadline may come before the next tick.
                self.next_block_deadline
                    .map_or(TICK, |d| {
                        d.saturating_duration_since(std::time::Instant::now())
                    })
                    .min(TICK)
            };
            if let Err(e) = self.poll.poll(&mut events, Some(timeout)) {
                if e.kind() == ErrorKind::Interrupted {
                    continue;
                }
                return Err(e);
            }
            let limits = current_limits(engine);
            if waiting {
                if events.is_empty() {
                    engine.sync_log_now();
                } else {
                    engine.request_log_sync();
                }
            }
            // Messages pushed to this thread's clients (Pub/Sub, invalidations) go out
            // before this pass runs more commands, as Redis writes every client's
            // output before it reads more: held back, they would count as used memory
            // when the next command meets maxmemory, and the keys evicted for them
            // would push more (tracking's eviction feedback loop).
            let woken = events.iter().any(|e| e.token() == WAKER);
            if woken {
                self.admission.adopt_inbox(&mut self.conns, engine);
                self.deliver_ready();
                self.flush_pending(engine, &limits);
            }
            for event in events.iter() {
                match event.token() {
                    Token(t) if (FIRST_LISTENER..FIRST_CONN).contains(&t) => {
                        if let Some(l) = self.listeners.get_mut(t - FIRST_LISTENER) {
                            self.admission.accept_all(l, &mut self.conns, engine);
                        }
                    }
                    WAKER => {}
                    token => self.serve(token, engine, &limits),
                }
            }
            self.flush_pending(engine, &limits);
            let awaiting = std::mem::take(&mut self.awaiting_sync);
            for token in awaiting {
                self.flush_one(token, engine, &limits);
            }
            // Kills are also signalled through the waker, so one sweep per tick is
            // enough; it visits every connection, so not on every event.
            let deadline_due = self
                .next_block_deadline
                .is_some_and(|d| d <= std::time::Instant::now());
            if last_sweep.elapsed() >= TICK || woken || deadline_due {
                self.reap(engine);
                // Commands held by CLIENT PAUSE run once it ends.
                self.resume_paused(engine, &limits);
                self.resume_blocked(engine, &limits);
                let held = std::mem::take(&mut self.held);
                for token in held {
                    self.flush_one(token, engine, &limits);
                }
                // This thread's free pages go back after a purge (memory freed in
                // bulk), and a second after it allocated.
                pion_core::util::alloc::collect_on_tick();
                last_sweep = std::time::Instant::now();
            }
        }
        for (_, mut entry) in self.conns.drain() {
            entry.1.close(engine);
            engine.clients().unregister(entry.1.client.id());
        }
        Ok(())
    }

    /// Runs what `conn` (taken out of the map) has to run, lending the other
    /// connections and the listeners to the busy pump meanwhile; afterwards queues
    /// the output the pump left unwritten.
    fn run_commands(&mut self, conn: &mut Connection, engine: &Engine, limits: &Limits) {
        *self.lent.borrow_mut() = Some(Lent {
            conns: std::mem::take(&mut self.conns),
            listeners: std::mem::take(&mut self.listeners),
            touched: Vec::new(),
        });
        conn.process(engine, limits);
        let returned = self.lent.borrow_mut().take();
        if let Some(lent) = returned {
            self.conns = lent.conns;
            self.listeners = lent.listeners;
            for token in lent.touched {
                self.queue_for_write(token);
            }
        }
    }

    /// Takes connection `token` out of the map for `f`, which may run its commands
    /// (see [`run_commands`](Self::run_commands)); puts it back or closes it as `f`
    /// says. Nothing when the connection is gone.
    fn with_conn(
        &mut self,
        token: Token,
        engine: &Engine,
        f: impl FnOnce(&mut Self, &mut Entry) -> Fate,
    ) {
        let Some(mut entry) = self.conns.remove(&token) else {
            return;
        };
        match f(self, &mut entry) {
            Fate::Keep => {
                self.conns.insert(token, entry);
            }
            Fate::Close => self.close_entry(entry, engine),
        }
    }

    fn queue_for_write(&mut self, token: Token) {
        if let Some(entry) = self.conns.get_mut(&token) {
            if !entry.1.queued_for_write {
                entry.1.queued_for_write = true;
                self.pending.push(token);
            }
        }
    }

    /// Moves published messages into the output of the connections whose mailbox
    /// rang; they are written with this pass's replies.
    fn deliver_ready(&mut self) {
        let tokens = std::mem::take(&mut *self.admission.ready.lock());
        for token in tokens {
            if let Some(entry) = self.conns.get_mut(&token) {
                entry.1.deliver_pushes();
                self.queue_for_write(token);
            }
        }
    }

    /// Reads what a readable connection sent and runs its commands; the replies are
    /// written later by [`flush_pending`](Self::flush_pending).
    fn serve(&mut self, token: Token, engine: &Engine, limits: &Limits) {
        self.with_conn(token, engine, |w, entry| {
            let (stream, conn) = &mut **entry;
            // Killed (CLIENT KILL, its user deleted): runs nothing more; the sweep
            // closes it.
            if conn.client.shared.killed.load(Ordering::SeqCst) {
                return Fate::Keep;
            }
            // Reads and runs in slices, so a long pipeline is never held whole in
            // the input buffer (nor its memory kept by the allocator after).
            loop {
                let input = read_input(stream, conn, engine, INPUT_SLICE);
                if input == Input::Closed {
                    conn.peer_closed = true;
                }
                w.run_commands(conn, engine, limits);
                if conn.pending_input() as u64 > limits.max_query_buffer {
                    // Redis closes a client whose unparsed input passes
                    // client-query-buffer-limit.
                    pion_core::log_warning!(
                        "closing client {}: query buffer of {} bytes exceeds client-query-buffer-limit",
                        conn.client.shared.addr,
                        conn.pending_input()
                    );
                    return Fate::Close;
                }
                if input != Input::More
                    || conn.closing
                    || conn.client.shared.killed.load(Ordering::SeqCst)
                {
                    break;
                }
            }
            if let Some(d) = conn.block_deadline() {
                w.next_block_deadline = Some(w.next_block_deadline.map_or(d, |n| n.min(d)));
            }
            if !conn.queued_for_write {
                conn.queued_for_write = true;
                w.pending.push(token);
            }
            Fate::Keep
        });
    }

    /// Writes the replies of every connection served in this event-loop pass. Like
    /// Redis's `beforeSleep`, writing after all reads means the client usually is still
    /// busy reading the previous reply when the next one lands, which saves the kernel
    /// a wake-up per reply.
    fn flush_pending(&mut self, engine: &Engine, limits: &Limits) {
        let pending = std::mem::take(&mut self.pending);
        for token in pending {
            self.flush_one(token, engine, limits);
        }
    }

    fn flush_one(&mut self, token: Token, engine: &Engine, limits: &Limits) {
        self.with_conn(token, engine, |w, entry| {
            w.flush_entry(token, entry, engine, limits)
        });
    }

    /// Writes what connection `token` has ready, continues a pipeline the output cap
    /// paused, and asks for writability while output remains.
    fn flush_entry(
        &mut self,
        token: Token,
        entry: &mut Entry,
        engine: &Engine,
        limits: &Limits,
    ) -> Fate {
        let (stream, conn) = &mut **entry;
        conn.queued_for_write = false;
        let mut open = !conn.peer_closed;
        loop {
            // A reply leaves only once the log holds the writes it acknowledges (group
            // commit: the first connection of a pass writes the records of every
            // connection served so far; under `always` the fsync runs in the
            // background and wakes this loop when done).
            match engine.reply_readiness(conn.client.wal_seq) {
                Readiness::Ready => {}
                Readiness::Waiting => {
                    if !self.awaiting_sync.contains(&token) {
                        self.awaiting_sync.push(token);
                    }
                    conn.publish_buffers();
                    return Fate::Keep;
                }
                Readiness::Failed => {
                    if !self.held.contains(&token) {
                        self.held.push(token);
                    }
                    conn.publish_buffers();
                    return Fate::Keep;
                }
            }
            match flush(stream, conn, engine) {
                Ok(true) if conn.pending_input() > 0 && !conn.closing => {
                    // The output cap paused a long pipeline: continue it.
                    let before = conn.pending_input();
                    self.run_commands(conn, engine, limits);
                    if conn.pending_input() == before && conn.output.is_empty() {
                        break;
                    }
                }
                Ok(_) => break,
                Err(_) => {
                    open = false;
                    break;
                }
            }
        }
        conn.publish_buffers();
        let done = conn.closing && conn.output.is_empty();
        if !open || done {
            return Fate::Close;
        }
        // Ask for writability only while output is pending; skip the syscall when the
        // interest is unchanged (the common case: the reply went out at once).
        let want_write = !conn.output.is_empty();
        if want_write != conn.write_interest {
            conn.write_interest = want_write;
            let interest = if want_write {
                Interest::READABLE | Interest::WRITABLE
            } else {
                Interest::READABLE
            };
            if self
                .poll
                .registry()
                .reregister(stream, token, interest)
                .is_err()
            {
                return Fate::Close;
            }
        }
        Fate::Keep
    }

    /// The connections in a state (blocked, held by a pause).
    fn tokens_where(&self, state: fn(&Connection) -> bool) -> Vec<Token> {
        self.conns
            .iter()
            .filter(|(_, e)| state(&e.1))
            .map(|(t, _)| *t)
            .collect()
    }

    /// Sends the replies of blocked clients whose wait ended (served, timed out,
    /// unblocked), runs what they sent meanwhile, and notes the next deadline.
    fn resume_blocked(&mut self, engine: &Engine, limits: &Limits) {
        let blocked = self.tokens_where(Connection::is_blocked);
        let mut next: Option<std::time::Instant> = None;
        for token in blocked {
            self.with_conn(token, engine, |w, entry| {
                let conn = &mut entry.1;
                w.run_commands(conn, engine, limits);
                if let Some(d) = conn.block_deadline() {
                    next = Some(next.map_or(d, |n| n.min(d)));
                }
                w.flush_entry(token, entry, engine, limits)
            });
        }
        self.next_block_deadline = next;
    }

    /// Retries the connections whose command waits for a `CLIENT PAUSE` to end.
    fn resume_paused(&mut self, engine: &Engine, limits: &Limits) {
        let held = self.tokens_where(Connection::is_held);
        for token in held {
            self.with_conn(token, engine, |w, entry| {
                w.run_commands(&mut entry.1, engine, limits);
                w.flush_entry(token, entry, engine, limits)
            });
        }
    }

    fn close(&mut self, token: Token, engine: &Engine) {
        if let Some(entry) = self.conns.remove(&token) {
            self.close_entry(entry, engine);
        }
    }

    /// Closes a connection already taken out of the map.
    fn close_entry(&mut self, entry: Entry, engine: &Engine) {
        let (mut stream, mut conn) = *entry;
        conn.close(engine);
        if let Some(waiter) = &conn.client.blocked {
            engine.blocking().cancel(waiter);
        }
        let _ = self.poll.registry().deregister(&mut stream);
        engine.clients().unregister(conn.client.id());
    }

    /// Closes connections killed by `CLIENT KILL` and, when `timeout` is set, those
    /// idle for longer than it (as Redis's client cron does); gives back the input
    /// buffers of connections idle for a second (Redis frees idle clients' query
    /// buffers in the same cron).
    fn reap(&mut self, engine: &Engine) {
        let timeout_ms = engine.config().with(|c| c.timeout).saturating_mul(1000) as i64;
        let now = engine.now_ms();
        for (_, entry) in self.conns.iter_mut() {
            let idle = now
                - entry
                    .1
                    .client
                    .shared
                    .last_interaction_ms
                    .load(Ordering::Relaxed);
            if idle >= IDLE_INPUT_RELEASE_MS && entry.1.release_idle_buffers() {
                entry.1.publish_buffers();
            }
        }
        let doomed: Vec<Token> = self
            .conns
            .iter()
            .filter(|(_, e)| {
                let shared = &e.1.client.shared;
                shared.killed.load(Ordering::SeqCst)
                    || (timeout_ms > 0
                        && now - shared.last_interaction_ms.load(Ordering::Relaxed) > timeout_ms)
            })
            .map(|(t, _)| *t)
            .collect();
        for t in doomed {
            if let Some(entry) = self.conns.get(&t) {
                let _ = entry.0.shutdown();
            }
            self.close(t, engine);
        }
    }
}

/// What a [`read_input`] left behind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Input {
    /// The socket has nothing more for now.
    Drained,
    /// The byte budget ran out first: the socket may hold more.
    More,
    /// The peer closed, or the socket failed.
    Closed,
}

/// Reads what the socket has, stopping once `budget` bytes have come in (a socket
/// read may go past it by one chunk).
pub(crate) fn read_input(
    stream: &mut Stream,
    conn: &mut Connection,
    engine: &Engine,
    budget: usize,
) -> Input {
    let mut read = 0usize;
    loop {
        if read >= budget {
            return Input::More;
        }
        let buf = conn.read_buf(READ_CHUNK);
        let room = buf.len();
        match stream.read(buf) {
            Ok(0) => return Input::Closed,
            Ok(n) => {
                conn.filled(n);
                read += n;
                engine
                    .server_stats()
                    .net_input_bytes
                    .fetch_add(n as u64, Ordering::Relaxed);
                if n < room {
                    return Input::Drained;
                }
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => return Input::Drained,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return Input::Closed,
        }
    }
}

/// Reads everything the socket has; returns false when the peer closed or failed.
pub(crate) fn read_available(stream: &mut Stream, conn: &mut Connection, engine: &Engine) -> bool {
    read_input(stream, conn, engine, usize::MAX) != Input::Closed
}

/// Writes pending output; `Ok(true)` when everything was written.
pub(crate) fn flush(
    stream: &mut Stream,
    conn: &mut Connection,
    engine: &Engine,
) -> io::Result<bool> {
    conn.note_output_peak();
    while !conn.output.is_empty() {
        let written = match conn.output.plain() {
            Some(bytes) => stream.write(bytes),
            None => stream.write_vectored(&conn.output.slices()),
        };
        match written {
            Ok(0) => return Err(ErrorKind::WriteZero.into()),
            Ok(n) => {
                conn.output.advance(n);
                engine
                    .server_stats()
                    .net_output_bytes
                    .fetch_add(n as u64, Ordering::Relaxed);
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(false),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}
