//! One client connection as a state machine without I/O: bytes in, reply bytes out.
//! The event loop feeds it what it reads and writes what it produces. A connection
//! speaks RESP or the binary lane's frames; either way each request is a command
//! that runs through the engine's one admission path.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use pion_core::clients::ClientState;
use pion_core::{command, Bytes, Engine};

use crate::binary::{self, Answer, Next};
use crate::output::Output;
use crate::resp::{encode, Decoded, Decoder, Limits};

/// Reply bytes above which a connection stops executing pipelined commands until the
/// socket drains (keeps one greedy pipeline from growing memory without bound).
const OUTPUT_HIGH_WATER: usize = 4 * 1024 * 1024;
/// An input buffer larger than this (grown for a large argument) is given back once
/// everything in it is served.
const KEEP_INPUT_BYTES: usize = 1024 * 1024;

/// A connection's input buffer lent to the views of a large frame's layers.
struct LentInput(Arc<Vec<u8>>);

impl AsRef<[u8]> for LentInput {
    fn as_ref(&self) -> &[u8] {
        &self.0
    }
}

/// The protocol a connection speaks (by the port it came in on).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wire {
    /// RESP2/RESP3 on the main port.
    Resp,
    /// The binary lane's frames (port + 1).
    Lane,
}

/// How to answer the command being run.
#[derive(Debug, Clone, Copy)]
enum ReplyTo {
    Resp,
    Lane(Answer),
}

/// A connection's protocol state.
pub struct Connection {
    /// The protocol it speaks.
    pub wire: Wire,
    /// The client state the engine sees.
    pub client: ClientState,
    /// Input buffer: `input[consumed..filled]` holds bytes read but not yet decoded.
    input: Vec<u8>,
    consumed: usize,
    filled: usize,
    /// Replies not yet written.
    pub output: Output,
    /// Close once the output is flushed.
    pub closing: bool,
    /// The request decoder (keeps a partly received request between reads).
    decoder: Decoder,
    /// Whether the event loop currently asks for writability on this socket.
    pub write_interest: bool,
    /// Whether the event loop has queued this connection for a write this pass.
    pub queued_for_write: bool,
    /// The peer closed its side (replies already produced are still written).
    pub peer_closed: bool,
    /// A command held by `CLIENT PAUSE`: it runs, and input is processed again, once
    /// the pause ends (the worker retries on its timer and on wake-ups).
    held: Option<(Vec<Vec<u8>>, ReplyTo)>,
    /// Bytes the request at the front of the input needs in all, once its decoder
    /// knows (a lane frame's header, a RESP bulk's length; checked against the
    /// limits): the buffer then grows to hold it at once.
    request_bytes: usize,
    /// The last request took more than [`KEEP_INPUT_BYTES`]: its buffer is kept for
    /// the next (a client streaming large stores reuses it) until a small request or
    /// an idle second gives it back.
    large_request: bool,
    /// The buffer of the last large `PUT` frame, lent to its layers' views: taken
    /// back as the next large input buffer once nothing else holds it (the store
    /// wrote the layers to its block files and keeps views of those), which spares
    /// a fresh allocation and its zeroing per frame.
    lent_input: Option<Arc<Vec<u8>>>,
    /// The most reply bytes waiting at once since the connection last idled.
    output_peak: usize,
}

impl Connection {
    /// A RESP connection for a newly accepted client.
    pub fn new(client: ClientState) -> Connection {
        Connection::speaking(Wire::Resp, client)
    }

    /// A connection for a newly accepted client that speaks `wire`.
    pub fn speaking(wire: Wire, mut client: ClientState) -> Connection {
        // The prompt cache hands a lane client its results themselves.
        client.wants_outcome = wire == Wire::Lane;
        Connection {
            wire,
            client,
            input: Vec::new(),
            consumed: 0,
            filled: 0,
            output: Output::default(),
            closing: false,
            decoder: Decoder::default(),
            write_interest: false,
            queued_for_write: false,
            peer_closed: false,
            held: None,
            request_bytes: 0,
            large_request: false,
            lent_input: None,
            output_peak: 0,
        }
    }

    /// Free space of at least `min_free` bytes at the end of the input buffer, to read
    /// into — room for the whole request in progress when its size is known. A buffer
    /// that grows is a fresh zeroed allocation (zero pages from the allocator, no
    /// `memset` over old bytes) holding only the unconsumed input: a large request
    /// costs one allocation, not a doubling series of copies.
    pub fn read_buf(&mut self, min_free: usize) -> &mut [u8] {
        if self.consumed == self.filled {
            self.consumed = 0;
            self.filled = 0;
            if self.input.len() > KEEP_INPUT_BYTES && !self.large_request {
                // Large input is over: give its buffer back.
                self.input = Vec::new();
            }
        }
        let live = self.filled - self.consumed;
        let need = self.request_bytes.max(live + min_free);
        if self.consumed + need > self.input.len() {
            if need <= self.input.len() {
                self.input.copy_within(self.consumed..self.filled, 0);
            } else {
                let want = if self.request_bytes > live + min_free {
                    need
                } else {
                    need.max(self.input.len() * 2)
                };
                let mut fresh = self.reclaim_input(want);
                fresh[..live].copy_from_slice(&self.input[self.consumed..self.filled]);
                self.input = fresh;
            }
            self.filled = live;
            self.consumed = 0;
        }
        &mut self.input[self.filled..]
    }

    /// A buffer of at least `want` initialised bytes for the input: the last large
    /// frame's, whole, when nothing holds it any more (its old bytes are read over,
    /// and the next frame fits without growing it again), else a fresh zeroed one.
    fn reclaim_input(&mut self, want: usize) -> Vec<u8> {
        match self.lent_input.take().map(Arc::try_unwrap) {
            Some(Ok(mut buf)) => {
                if buf.len() < want {
                    buf.resize(want, 0);
                }
                buf
            }
            _ => vec![0u8; want],
        }
    }

    /// When the input starts with a whole `PUT` frame of at least
    /// [`binary::SHARE_PUT_FROM`] bytes: the frame, as the buffer it was read into
    /// (its layers become views of it, kept by the store or written to the block
    /// files from it, with no copy), leaving the input buffer empty but for any bytes
    /// read after the frame.
    fn share_large_put(&mut self) -> Option<Bytes> {
        let len = binary::whole_large_put(&self.input[self.consumed..self.filled])?;
        if self.input.len() > len + len / 4 {
            // A buffer grown for a larger frame is not lent to a smaller one: a store
            // that keeps the views (in memory) would hold all of it.
            return None;
        }
        let buf = Arc::new(std::mem::take(&mut self.input));
        let start = self.consumed;
        self.input = buf[start + len..self.filled].to_vec();
        self.filled = self.input.len();
        self.consumed = 0;
        let whole = Bytes::from_owner(LentInput(Arc::clone(&buf)));
        self.lent_input = Some(buf);
        Some(whole.slice(start..start + len))
    }

    /// Gives back the input buffer of a connection that holds no request (it has
    /// been idle; the event loop's sweep asks), whatever its size: a pipeline burst
    /// grows it to hundreds of KiB, and an idle client keeps no buffer, as Redis frees
    /// the query buffers of idle clients. The next read makes a fresh one. The
    /// reply peak (`rbp`) starts over. Returns whether the sizes `CLIENT LIST` shows
    /// changed (the sweep visits every idle connection each tick; most have nothing
    /// left to give back).
    pub fn release_idle_buffers(&mut self) -> bool {
        let mut changed = false;
        if self.consumed == self.filled && !self.input.is_empty() {
            self.input = Vec::new();
            self.consumed = 0;
            self.filled = 0;
            self.large_request = false;
            changed = true;
        }
        if self.consumed == self.filled {
            self.lent_input = None;
        }
        let peak = self.output.len();
        changed |= self.output_peak != peak;
        self.output_peak = peak;
        changed
    }

    /// Declares that `n` bytes were read into the last [`read_buf`](Self::read_buf).
    pub fn filled(&mut self, n: usize) {
        self.filled += n;
    }

    /// Bytes waiting in the input buffer.
    pub fn pending_input(&self) -> usize {
        self.filled - self.consumed
    }

    /// Whether `CLIENT PAUSE` holds this command of this client now.
    fn held_by_pause(&self, engine: &Engine, argv: &[Vec<u8>]) -> bool {
        let queued = self.client.multi.as_ref().map_or(&[][..], |t| &t.queue[..]);
        pion_core::command::pause::holds_argv_queued(&engine.operator().pause, argv, queued, |a| {
            engine.scripting().declared_flags(a).map(|f| f.no_writes)
        })
    }

    /// Runs every complete command in the input buffer, appending replies to the output.
    pub fn process(&mut self, engine: &Engine, limits: &Limits) {
        // Each batch reads the wall clock afresh, and its commands pass the execution
        // gate once between them (until the batch ends, by return or unwinding).
        self.client.wall_clock_anchor = None;
        let _batch = engine.gate().batch(self.client.gate_slot);
        self.process_batch(engine, limits);
        self.client.wall_clock_anchor = None;
    }

    fn process_batch(&mut self, engine: &Engine, limits: &Limits) {
        let mut limits = *limits;
        let mut clock = engine.clock().now();
        let mut ran = false;
        if let Some((argv, reply_to)) = self.held.take() {
            if self.held_by_pause(engine, &argv) {
                self.held = Some((argv, reply_to));
                return;
            }
            engine.operator().pause.client_released();
            clock = self.run(engine, &argv, reply_to, engine.clock().now());
            ran = true;
        }
        if !self.resume_blocked(engine) {
            return;
        }
        while !self.closing
            && self.client.blocked.is_none()
            && self.output.len() < OUTPUT_HIGH_WATER
        {
            limits.unauthenticated = !self.client.authenticated;
            let Some((argv, reply_to)) = self.next_command(engine, &limits) else {
                break;
            };
            if self.held_by_pause(engine, &argv) {
                self.held = Some((argv, reply_to));
                engine.operator().pause.client_held();
                break;
            }
            clock = self.run(engine, &argv, reply_to, clock);
            self.decoder.recycle(argv);
            ran = true;
        }
        if ran {
            self.client
                .shared
                .last_interaction_ms
                .store(engine.wall_ms_at(clock), Ordering::Relaxed);
        }
    }

    /// Decodes the next command from the input (answering what needs no command: a
    /// malformed lane frame, a protocol error); `None` when there is none to run now.
    fn next_command(
        &mut self,
        engine: &Engine,
        limits: &Limits,
    ) -> Option<(Vec<Vec<u8>>, ReplyTo)> {
        loop {
            if self.closing {
                return None;
            }
            let buf = &self.input[self.consumed..self.filled];
            let (argv, reply_to, n) = match self.wire {
                Wire::Resp => match self.decoder.decode(buf, limits) {
                    Ok(Decoded::Incomplete) => {
                        self.request_bytes = self.decoder.wanted();
                        return None;
                    }
                    Ok(Decoded::Skip(n)) => {
                        self.consumed += n;
                        continue;
                    }
                    Ok(Decoded::Command(argv, n)) => (argv, ReplyTo::Resp, n),
                    Err(e) => {
                        engine.count_error(&e.0);
                        encode(
                            &pion_core::Reply::Error(e.0.into()),
                            self.client.resp,
                            self.output.bytes_mut(),
                        );
                        self.closing = true;
                        return None;
                    }
                },
                Wire::Lane => {
                    let max_body = if limits.unauthenticated {
                        binary::UNAUTHENTICATED_FRAME_LIMIT
                    } else {
                        limits.max_query_buffer
                    };
                    let shared = self.share_large_put();
                    let buf = match &shared {
                        Some(frame) => &frame[..],
                        None => &self.input[self.consumed..self.filled],
                    };
                    match binary::next_request_in(buf, max_body, shared.as_ref()) {
                        Next::Incomplete => {
                            // A whole header has passed the frame-size checks.
                            self.request_bytes = binary::frame_len(buf).unwrap_or(0);
                            return None;
                        }
                        Next::Call {
                            argv,
                            layers,
                            answer,
                            used,
                        } => {
                            // Kept on the client until the command runs (a paused one
                            // later); every lane request sets them, so a store refused
                            // before it ran leaves nothing for the next.
                            self.client.layers_in = layers;
                            if shared.is_some() {
                                // The frame left the input buffer with its buffer.
                                self.request_bytes = 0;
                                self.large_request = false;
                                self.publish_query(used);
                                return Some((argv, ReplyTo::Lane(answer)));
                            }
                            (argv, ReplyTo::Lane(answer), used)
                        }
                        Next::Refused { text, used } => {
                            if shared.is_none() {
                                self.consumed += used;
                            }
                            engine.count_error(&text);
                            binary::write_error(&text, &mut self.output);
                            continue;
                        }
                        Next::Fatal(text) => {
                            engine.count_error(&text);
                            binary::write_error(&text, &mut self.output);
                            self.closing = true;
                            return None;
                        }
                    }
                }
            };
            self.consumed += n;
            self.request_bytes = 0;
            self.large_request = n > KEEP_INPUT_BYTES;
            // While it runs, the command is still in the query buffer, as in Redis
            // (`CLIENT LIST` run by this client counts it in `qbuf`).
            self.publish_query(n);
            return Some((argv, reply_to));
        }
    }

    /// Runs one command that starts at `started`; returns when it finished.
    fn run(
        &mut self,
        engine: &Engine,
        argv: &[Vec<u8>],
        reply_to: ReplyTo,
        started: Instant,
    ) -> Instant {
        // A bug must not take a worker thread and all its connections down: the
        // command fails with an error reply and the server goes on (shard locks are
        // released while unwinding; parking_lot locks do not poison).
        // `CLIENT REPLY SKIP` silences the command after it.
        use pion_core::clients::ReplyMode;
        if self.client.reply_mode == ReplyMode::SkipNext {
            self.client.reply_mode = ReplyMode::Skipping;
        }
        self.client.outcome = None;
        if self.client.wall_clock_anchor.is_none() {
            // The batch's first command reads the wall clock; those after it in the
            // same batch derive it (see `ClientState::wall_clock_anchor`).
            self.client.wall_clock_anchor = Some((started, engine.clock().unix_us()));
        }
        let client = &mut self.client;
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            command::execute_at(engine, client, argv, started)
        }));
        let (reply, finished) = match outcome {
            Ok(done) => done,
            Err(_) => {
                let name = String::from_utf8_lossy(argv.first().map_or(&[][..], |a| a.as_slice()));
                pion_core::log_warning!("internal error while running '{name}'");
                (
                    pion_core::Reply::error("ERR internal error"),
                    engine.clock().now(),
                )
            }
        };
        // The skipped command is over; one that set another mode (CLIENT REPLY ON,
        // OFF or SKIP) decided for itself.
        let skip_this = self.client.reply_mode == ReplyMode::Skipping;
        if skip_this {
            self.client.reply_mode = ReplyMode::On;
        }
        // Pub/Sub messages that arrived while the command ran precede its reply;
        // those it caused for this client itself (invalidations, its own MONITOR
        // line) follow it.
        if let ReplyTo::Lane(answer) = reply_to {
            // A lane client has no pushes, blocking waits or reply modes: only the
            // answer.
            let typed = self.client.outcome.take();
            binary::write_reply(answer, &reply, typed, &mut self.output);
            if self.client.close_after_reply {
                self.closing = true;
            }
            return finished;
        }
        let mailbox = &self.client.shared.pubsub;
        for m in mailbox.take_before_reply() {
            encode(&m, self.client.resp, self.output.bytes_mut());
        }
        if self.client.blocked.is_some() {
            // The command waits for a key: its reply comes when the wait ends.
        } else if self.client.suppress_reply {
            self.client.suppress_reply = false;
        } else if skip_this || self.client.reply_mode == ReplyMode::Off {
            // CLIENT REPLY OFF or SKIP: the reply is dropped, except Pub/Sub pushes
            // (SUBSCRIBE's confirmations), which Redis always sends.
            for push in pushes_of(reply) {
                encode(&push, self.client.resp, self.output.bytes_mut());
            }
        } else {
            encode(&reply, self.client.resp, self.output.bytes_mut());
        }
        self.deliver_pushes();
        if self.client.close_after_reply {
            self.closing = true;
        }
        finished
    }

    /// Ends a finished wait (`BLPOP` …): its reply joins the output. Returns whether
    /// the connection may run commands (false while still waiting).
    pub fn resume_blocked(&mut self, engine: &Engine) -> bool {
        let Some(waiter) = self.client.blocked.clone() else {
            return true;
        };
        if waiter.deadline.is_some_and(|d| d <= Instant::now()) {
            engine.blocking().time_out(&waiter);
        }
        let Some((reply, wal_seq)) = waiter.take_reply() else {
            return false;
        };
        self.client.blocked = None;
        self.client.shared.blocked.store(false, Ordering::Relaxed);
        self.client.wal_seq = self.client.wal_seq.max(wal_seq);
        encode(&reply, self.client.resp, self.output.bytes_mut());
        self.deliver_pushes();
        true
    }

    /// When the client's wait times out, if it waits.
    pub fn block_deadline(&self) -> Option<Instant> {
        self.client.blocked.as_ref().and_then(|w| w.deadline)
    }

    /// Whether the client waits for a key.
    pub fn is_blocked(&self) -> bool {
        self.client.blocked.is_some()
    }

    /// Whether a command waits for a `CLIENT PAUSE` to end.
    pub fn is_held(&self) -> bool {
        self.held.is_some()
    }

    /// The connection closes: a command it had held stops counting as blocked.
    pub fn close(&mut self, engine: &Engine) {
        if self.held.take().is_some() {
            engine.operator().pause.client_released();
        }
    }

    /// Moves what other clients published to this one (Pub/Sub messages,
    /// invalidations, monitor lines) into the output, in the order it was queued.
    pub fn deliver_pushes(&mut self) {
        let mailbox = &self.client.shared.pubsub;
        if mailbox.pending() {
            // A waiting client's reply is not out yet: what must follow it (the
            // invalidation of a key its own pop wrote) waits for it.
            let messages = if self.client.blocked.is_some() {
                mailbox.take_before_reply()
            } else {
                mailbox.take()
            };
            if self.wire == Wire::Lane {
                // Nothing reaches a lane client that it could subscribe to; drop
                // what a bug might queue rather than corrupt its frames.
                return;
            }
            for m in messages {
                encode(&m, self.client.resp, self.output.bytes_mut());
            }
        }
    }

    /// Publishes the query buffer's size with the `running` bytes of the command
    /// being run counted in.
    fn publish_query(&self, running: usize) {
        let b = &self.client.shared.buffers;
        b.query
            .store(self.pending_input() + running, Ordering::Relaxed);
        b.query_free
            .store(self.input.len() - self.filled, Ordering::Relaxed);
    }

    /// Publishes the buffer sizes `CLIENT LIST` reports.
    pub fn publish_buffers(&self) {
        let b = &self.client.shared.buffers;
        b.query.store(self.pending_input(), Ordering::Relaxed);
        b.query_free
            .store(self.input.len() - self.filled, Ordering::Relaxed);
        b.output.store(self.output.len(), Ordering::Relaxed);
        b.output_capacity
            .store(self.output.capacity(), Ordering::Relaxed);
        b.output_peak.store(self.output_peak, Ordering::Relaxed);
    }

    /// Notes the reply bytes waiting now toward `CLIENT LIST`'s `rbp`.
    pub fn note_output_peak(&mut self) {
        self.output_peak = self.output_peak.max(self.output.len());
    }
}

/// The push messages in a reply (itself, or the parts of a `Several`).
fn pushes_of(reply: pion_core::Reply) -> Vec<pion_core::Reply> {
    match reply {
        pion_core::Reply::Push(_) => vec![reply],
        pion_core::Reply::Several(parts) => parts
            .into_iter()
            .filter(|p| matches!(p, pion_core::Reply::Push(_)))
            .collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pion_core::EngineOptions;

    fn feed(conn: &mut Connection, engine: &Engine, bytes: &[u8]) -> String {
        let buf = conn.read_buf(bytes.len());
        buf[..bytes.len()].copy_from_slice(bytes);
        conn.filled(bytes.len());
        conn.process(engine, &Limits::default());
        let out = String::from_utf8_lossy(&conn.output.to_vec()).into_owned();
        let n = conn.output.len();
        conn.output.advance(n);
        out
    }

    #[test]
    fn pipeline_split_across_reads() {
        let engine = Engine::in_memory(EngineOptions::default());
        let mut conn = Connection::new(engine.client(String::new(), String::new(), -1));
        let req =
            b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\nPING\r\n";
        let mut out = String::new();
        for chunk in req.chunks(5) {
            out += &feed(&mut conn, &engine, chunk);
        }
        assert_eq!(out, "+OK\r\n$1\r\nv\r\n+PONG\r\n");
    }

    /// Each batch of pipelined commands reads the wall clock once: a step of the wall
    /// clock (an NTP correction) between batches is seen by the next batch, and each
    /// command of a batch runs at the batch's wall time plus the monotonic time since.
    #[test]
    fn each_batch_reads_the_wall_clock_afresh() {
        let (clock, hand) = pion_core::util::clock::Clock::manual(1_700_000_000_000);
        let engine = Engine::in_memory(EngineOptions {
            disable_active_expiry: true,
            clock: clock.clone(),
            ..EngineOptions::default()
        });
        let mut conn = Connection::new(engine.client(String::new(), String::new(), -1));
        let at = clock.unix_ms() + 10_000;
        let set = format!("SET k v PXAT {at}\r\nPTTL k\r\nPTTL k\r\n");
        assert_eq!(
            feed(&mut conn, &engine, set.as_bytes()),
            "+OK\r\n:10000\r\n:10000\r\n"
        );
        assert!(conn.client.wall_clock_anchor.is_none());
        hand.step_wall(std::time::Duration::from_secs(4));
        assert_eq!(feed(&mut conn, &engine, b"PTTL k\r\n"), ":6000\r\n");
    }

    /// A large request's size, once its header tells it, sizes the input buffer in one
    /// step; the buffer is kept while large requests follow, given back after a small
    /// one or when the connection idles.
    #[test]
    fn large_requests_get_their_buffer_at_once_and_give_it_back() {
        let engine = Engine::in_memory(EngineOptions::default());
        let mut conn = Connection::new(engine.client(String::new(), String::new(), -1));
        let value = vec![b'x'; 3 * KEEP_INPUT_BYTES];
        let mut req = format!("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n${}\r\n", value.len()).into_bytes();
        req.extend_from_slice(&value);
        req.extend_from_slice(b"\r\n");
        // The headers and the first bytes of the value: the whole request's size is known.
        assert_eq!(feed(&mut conn, &engine, &req[..1000]), "");
        assert!(conn.read_buf(16).len() >= req.len() - 1000);
        assert_eq!(conn.input.len(), req.len());
        let mut out = String::new();
        for chunk in req[1000..].chunks(1 << 20) {
            out += &feed(&mut conn, &engine, chunk);
        }
        assert_eq!(out, "+OK\r\n");
        // Kept for a next large request …
        conn.read_buf(16);
        assert_eq!(conn.input.len(), req.len());
        // … given back after a small one.
        assert_eq!(feed(&mut conn, &engine, b"PING\r\n"), "+PONG\r\n");
        conn.read_buf(16);
        assert!(conn.input.len() <= KEEP_INPUT_BYTES);
        // And when idle.
        for chunk in req.chunks(1 << 20) {
            feed(&mut conn, &engine, chunk);
        }
        assert!(conn.input.len() > KEEP_INPUT_BYTES);
        conn.release_idle_buffers();
        assert!(conn.input.is_empty());
        // A small buffer goes too, and one that holds part of a request stays.
        assert_eq!(feed(&mut conn, &engine, b"PING\r\n"), "+PONG\r\n");
        assert!(!conn.input.is_empty());
        conn.release_idle_buffers();
        assert!(conn.input.is_empty());
        assert_eq!(feed(&mut conn, &engine, b"*1\r\n$4\r\nPI"), "");
        let pending = conn.pending_input();
        conn.release_idle_buffers();
        assert!(!conn.input.is_empty());
        assert_eq!(conn.pending_input(), pending);
        assert_eq!(feed(&mut conn, &engine, b"NG\r\n"), "+PONG\r\n");
        assert_eq!(
            engine.execute(0, &["STRLEN", "k"]),
            pion_core::Reply::Integer(value.len() as i64)
        );
    }

    /// A `PUT` frame of 4 layers of 512 KiB (2 MiB) for the block after `parent`.
    fn large_put(parent: u128, first_token: u32, fill: u8) -> Vec<u8> {
        put_of(parent, first_token, 256, fill)
    }

    /// A `PUT` frame of `tokens` tokens (4 layers of 2 KiB a token).
    fn put_of(parent: u128, first_token: u32, tokens: u32, fill: u8) -> Vec<u8> {
        use crate::binary::codec::{encode_request, Request};
        let layer = vec![fill; 2 * 8 * tokens as usize * 64 * 2];
        encode_request(&Request::Put {
            ns: "n".into(),
            parent,
            tokens: (first_token..first_token + tokens).collect(),
            layers: vec![Bytes::from(layer); 4],
        })
    }

    fn lane_engine_with_namespace(engine: &Engine) -> Connection {
        let layer = r#"{"kind":"attention","kv_heads":8,"head_dim":64}"#;
        let manifest = format!(
            r#"{{"model":"m","block_tokens":256,"dtype":"f16","layers":[{layer},{layer},{layer},{layer}]}}"#
        );
        assert_eq!(
            engine.execute(0, &["KV.REGISTER", "n", &manifest]),
            pion_core::Reply::ok()
        );
        Connection::speaking(Wire::Lane, engine.client(String::new(), String::new(), -1))
    }

    fn stored_layer(engine: &Engine, id: pion_core::prefix::BlockId) -> Bytes {
        engine.prefix().lock().layer("n", id, 3).expect("stored")
    }

    /// An in-memory store keeps a large frame's layers as views of the buffer the
    /// frame was read into: the connection reads the next frame into another buffer,
    /// and what was stored is untouched.
    #[test]
    fn a_large_put_lends_its_buffer_to_the_layers_an_in_memory_store_keeps() {
        use pion_core::prefix::BlockId;
        let engine = Engine::in_memory(EngineOptions::default());
        let mut conn = lane_engine_with_namespace(&engine);
        let first = large_put(0, 0, 1);
        feed(&mut conn, &engine, &first);
        let id = BlockId::chain(BlockId::ROOT, &(0..256).collect::<Vec<u32>>());
        let kept = stored_layer(&engine, id);
        let lent = conn.lent_input.as_ref().map(|b| b.as_ptr()).expect("lent");
        assert!(
            (lent as usize..lent as usize + first.len()).contains(&(kept.as_ptr() as usize)),
            "the stored layer is a view of the frame's buffer"
        );
        feed(&mut conn, &engine, &large_put(id.0, 256, 2));
        assert_ne!(
            conn.input.as_ptr(),
            lent,
            "a buffer still viewed is not reused"
        );
        assert!(stored_layer(&engine, id).iter().all(|&b| b == 1));
        let second = BlockId::chain(id, &(256..512).collect::<Vec<u32>>());
        assert!(stored_layer(&engine, second).iter().all(|&b| b == 2));
        // The second frame again: nothing new is kept, so its buffer comes back; a
        // smaller frame read into it (a partial block of 1 MiB) is not lent it, or
        // the store would keep all 2 MiB for it.
        feed(&mut conn, &engine, &large_put(id.0, 256, 2));
        let partial = put_of(second.0, 512, 128, 3);
        feed(&mut conn, &engine, &partial[..64]);
        let big = (conn.input.as_ptr() as usize, conn.input.len());
        assert!(
            big.1 > partial.len() + partial.len() / 4,
            "the larger buffer came back"
        );
        feed(&mut conn, &engine, &partial[64..]);
        let third = BlockId::chain(second, &(512..640).collect::<Vec<u32>>());
        let kept = stored_layer(&engine, third);
        assert!(kept.iter().all(|&b| b == 3));
        assert!(
            !(big.0..big.0 + big.1).contains(&(kept.as_ptr() as usize)),
            "a partial block keeps its own bytes, not the larger buffer"
        );
    }

    /// A durable store writes a large frame's layers to its block files and keeps
    /// views of those: the frame's buffer is free again, and the next large frame is
    /// read into it without a fresh allocation.
    #[test]
    fn a_durable_store_gives_a_large_frames_buffer_back_for_the_next() {
        use pion_core::prefix::BlockId;
        let dir = std::env::temp_dir().join(format!("pion-lent-input-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let engine = Engine::open_with(
            EngineOptions::default(),
            pion_core::durability::DurabilityOptions::new(&dir),
        )
        .expect("open");
        let mut conn = lane_engine_with_namespace(&engine);
        feed(&mut conn, &engine, &large_put(0, 0, 1));
        let lent = conn.lent_input.as_ref().map(|b| b.as_ptr()).expect("lent");
        let id = BlockId::chain(BlockId::ROOT, &(0..256).collect::<Vec<u32>>());
        let next = large_put(id.0, 256, 2);
        // The header first: the buffer is then sized for the whole frame.
        feed(&mut conn, &engine, &next[..64]);
        assert_eq!(conn.input.as_ptr(), lent, "the lent buffer came back");
        feed(&mut conn, &engine, &next[64..]);
        assert!(stored_layer(&engine, id).iter().all(|&b| b == 1));
        let second = BlockId::chain(id, &(256..512).collect::<Vec<u32>>());
        assert!(stored_layer(&engine, second).iter().all(|&b| b == 2));
        drop(engine);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn protocol_error_closes() {
        let engine = Engine::in_memory(EngineOptions::default());
        let mut conn = Connection::new(engine.client(String::new(), String::new(), -1));
        let out = feed(&mut conn, &engine, b"*1\r\n+x\r\nPING\r\n");
        assert_eq!(out, "-ERR Protocol error: expected '$', got '+'\r\n");
        assert!(conn.closing);
    }
}
