//! Per-connection state (selected database, protocol, name …) and the registry of
//! connected clients that `CLIENT LIST`, `CLIENT KILL` and `INFO clients` read.

pub mod blocking;
pub mod gate_slot;
pub mod mailbox;
pub mod script_debug;
pub mod subscriptions;

pub mod watch;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use rand::rngs::SmallRng;
use rand::SeedableRng;

/// The part of a client's state other threads may read (`CLIENT LIST`) or act on
/// (`CLIENT KILL`).
#[derive(Default)]
pub struct ClientShared {
    /// Client id.
    pub id: u64,
    /// Peer address (`ip:port`), empty for embedded sessions.
    pub addr: String,
    /// Local address.
    pub laddr: String,
    /// Socket descriptor, or -1.
    pub fd: i64,
    /// Creation time (Unix ms).
    pub created_ms: i64,
    /// Last command time (Unix ms).
    pub last_interaction_ms: AtomicI64,
    /// Selected database.
    pub db: AtomicUsize,
    /// Protocol version (2 or 3).
    pub resp: AtomicUsize,
    /// Name, library name and version.
    pub text: Mutex<ClientText>,
    /// The counter slot of the last command run (`usize::MAX`: none yet); the
    /// command table turns it into the full name.
    pub last_cmd: AtomicUsize,
    /// Set by `CLIENT KILL`: the connection closes as soon as its thread sees it.
    pub killed: AtomicBool,
    /// Commands processed.
    pub commands: AtomicU64,
    /// Commands queued in the open transaction (`CLIENT LIST` `multi=`), -1 outside
    /// `MULTI`.
    pub multi: AtomicI64,
    /// Waiting for a key (`CLIENT LIST` flag `b`).
    pub blocked: AtomicBool,
    /// Buffer sizes the connection publishes for `CLIENT LIST`.
    pub buffers: ClientBuffers,
    /// Wakes the connection's event loop (so a kill takes effect at once).
    pub waker: Mutex<Option<Box<dyn Fn() + Send + Sync>>>,
    /// Pub/Sub messages, invalidations and monitor lines on their way to this client.
    pub pubsub: mailbox::Mailbox,
}

/// A connection's buffer sizes in bytes, as `CLIENT LIST` shows them.
#[derive(Debug, Default)]
pub struct ClientBuffers {
    /// Bytes read but not yet parsed (`qbuf`).
    pub query: AtomicUsize,
    /// Free space in the query buffer (`qbuf-free`).
    pub query_free: AtomicUsize,
    /// Reply bytes not yet written (`omem`).
    pub output: AtomicUsize,
    /// Allocated reply buffer (`rbs`; `tot-mem` adds it to the query buffer).
    pub output_capacity: AtomicUsize,
    /// The most reply bytes waiting at once since the connection last idled (`rbp`).
    pub output_peak: AtomicUsize,
}

/// Text fields of a client, under one lock.
#[derive(Debug, Default, Clone)]
pub struct ClientText {
    /// `CLIENT SETNAME`.
    pub name: Vec<u8>,
    /// `CLIENT SETINFO LIB-NAME`.
    pub lib_name: Vec<u8>,
    /// `CLIENT SETINFO LIB-VER`.
    pub lib_ver: Vec<u8>,
    /// The authenticated user's name (empty: `default`), for `CLIENT LIST` and for
    /// closing the connections of a deleted user.
    pub user: Vec<u8>,
}

impl ClientShared {
    /// Bytes of the client's buffers as allocated (`CLIENT LIST`'s `tot-mem`): the
    /// query buffer, read and free, and the reply buffer.
    pub fn buffer_bytes(&self) -> usize {
        let b = &self.buffers;
        b.query.load(Ordering::Relaxed)
            + b.query_free.load(Ordering::Relaxed)
            + b.output_capacity.load(Ordering::Relaxed)
    }

    /// Asks the client's connection to close.
    pub fn kill(&self) {
        self.killed.store(true, Ordering::SeqCst);
        if let Some(wake) = self.waker.lock().as_ref() {
            wake();
        }
    }
}

/// A connection's (or embedded session's) state while it runs commands.
pub struct ClientState {
    /// Fields visible to other clients.
    pub shared: Arc<ClientShared>,
    /// Selected database.
    pub db: usize,
    /// Protocol version (2 or 3).
    pub resp: u8,
    /// Whether the client passed `AUTH` (or no password is set).
    pub authenticated: bool,
    /// The authenticated user name.
    pub user: String,
    /// The ACL user the client runs as (`None`: the default user). Set through
    /// [`crate::command::access::set_client_user`], which keeps `user` and the shared name in step.
    pub acl_user: Option<Arc<crate::acl::User>>,
    /// Set by `QUIT`: close after this reply.
    pub close_after_reply: bool,
    /// Send no reply to this command (`SHUTDOWN` closes without one).
    pub suppress_reply: bool,
    /// The command's error reply was already counted in `INFO errorstats` (a script
    /// that fails with the error of a command it called): counted as a failed call
    /// of the command, not as a second error reply.
    pub error_already_counted: bool,
    /// `CLIENT REPLY`: whether replies are sent.
    pub reply_mode: ReplyMode,
    /// `CLIENT NO-EVICT`.
    pub no_evict: bool,
    /// `CLIENT NO-TOUCH`.
    pub no_touch: bool,
    /// Randomness for `SPOP`, `RANDOMKEY` …, seeded per client.
    pub rng: SmallRng,
    /// Sequence number of the last write-ahead-log record this client's commands
    /// appended: its replies may leave only once the log is durable up to here.
    pub wal_seq: u64,
    /// This client replays the write-ahead log at start-up (internal commands such as
    /// `KV.EVICT` are accepted only from it).
    pub replaying: bool,
    /// The execution-gate slot of the thread running this client's commands.
    pub gate_slot: usize,
    /// The transaction being queued (`MULTI` … `EXEC`).
    pub multi: Option<Transaction>,
    /// The keys this client `WATCH`es.
    pub watches: crate::clients::watch::ClientWatches,
    /// Set while a transaction or script runs this client's commands one by one.
    pub nested: Option<Nested>,
    /// While a connection runs a batch of pipelined commands: a monotonic instant
    /// and the wall clock's Unix microseconds read with it. Each command of the
    /// batch takes its wall time from this and its own start instead of reading
    /// the wall clock again (within one batch the two clocks cannot drift apart
    /// measurably; each batch reads the wall clock afresh).
    pub wall_clock_anchor: Option<(std::time::Instant, i64)>,
    /// Set by a blocking command that found nothing: the keys it waits on.
    pub block_request: Option<crate::clients::blocking::BlockRequest>,
    /// The client waits for a key (`BLPOP` …): its connection sends nothing more
    /// until the wait ends.
    pub blocked: Option<Arc<crate::clients::blocking::Waiter>>,
    /// This state runs a blocked client's command again for it: finding nothing again
    /// means "go on waiting", not a new wait.
    pub retrying_block: bool,
    /// Keys a stand-in's command wrote that may serve other waiters: they are
    /// signalled only if the stand-in was served (a retry that goes on waiting, or
    /// fails, changed nothing).
    pub written_for_waiters: Vec<(usize, Vec<u8>)>,
    /// Channel, pattern and shard-channel subscriptions (left when dropped).
    pub subs: subscriptions::Subscriptions,
    /// `SCRIPT DEBUG`: whether the next `EVAL` is debugged.
    pub script_debug: script_debug::DebugMode,
    /// Opens the connection for the debugger to talk over, given by the network
    /// layer (an embedded client has none, and cannot debug).
    pub debug_console: Option<script_debug::ConsoleOpener>,
    /// A typed caller (the binary lane) wants the prompt cache's results themselves:
    /// the `KV.*` commands it maps to leave them in [`outcome`](Self::outcome) beside
    /// their reply, sharing the store's buffers instead of copying them into it.
    pub wants_outcome: bool,
    /// The typed result of the last prompt-cache command, for a caller that wants it.
    pub outcome: Option<crate::prefix::ops::Outcome>,
    /// Layers a typed caller (the binary lane, the embedded API) hands the next
    /// `KV.PUT` as buffers instead of arguments (which are then empty placeholders):
    /// the store adopts them as they are, without copying them again.
    pub layers_in: Option<Vec<bytes::Bytes>>,
}

/// Whether a connection's replies are sent (`CLIENT REPLY ON|OFF|SKIP`). Push
/// messages (Pub/Sub, invalidations) are sent in every mode, as in Redis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplyMode {
    /// Every reply is sent.
    On,
    /// No reply is sent until `CLIENT REPLY ON`.
    Off,
    /// The next command's reply is not sent.
    SkipNext,
    /// This command's reply is not sent (the one after `CLIENT REPLY SKIP`), unless
    /// it is itself `CLIENT REPLY ON`, as in Redis.
    Skipping,
}

/// A transaction being queued.
#[derive(Debug, Default)]
pub struct Transaction {
    /// The queued commands.
    pub queue: Vec<Vec<Vec<u8>>>,
    /// A command was refused while queuing: `EXEC` answers `EXECABORT`.
    pub aborted: bool,
    /// A queued command may grow memory: over `maxmemory`, `EXEC` is refused whole.
    pub deny_oom: bool,
}

/// The state of a transaction or script while its commands run.
#[derive(Debug)]
pub struct Nested {
    /// When the outer command started: every command inside sees this time.
    pub started: std::time::Instant,
    /// The wall-clock time (Unix ms) the outer command runs at, read once: every
    /// command inside sees it, as a script or transaction does in Redis.
    pub now_ms: i64,
    /// The write-ahead-log effects of the commands so far, as (database, command).
    pub effects: Vec<(usize, Vec<Vec<u8>>)>,
    /// The commands run inside a script (`EVAL`, `FCALL`), not a transaction: the
    /// ACL log's context says `lua` rather than `multi`.
    pub in_script: bool,
    /// The keys the script declared (`EVAL`'s `KEYS`): client-side caching tracks
    /// them, not the keys of its commands, once it runs a read-only command (Redis's
    /// rule).
    pub script_keys: Vec<Vec<u8>>,
}

impl ClientState {
    /// A new client registered in `registry`.
    pub fn new(
        registry: &ClientRegistry,
        addr: String,
        laddr: String,
        fd: i64,
        now_ms: i64,
    ) -> ClientState {
        let id = registry.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        let shared = Arc::new(ClientShared {
            id,
            addr,
            laddr,
            fd,
            created_ms: now_ms,
            last_interaction_ms: AtomicI64::new(now_ms),
            resp: AtomicUsize::new(2),
            last_cmd: AtomicUsize::new(usize::MAX),
            multi: AtomicI64::new(-1),
            ..ClientShared::default()
        });
        registry.clients.lock().insert(id, Arc::clone(&shared));
        ClientState::with_shared(shared, now_ms)
    }

    /// A client that is not listed in the registry: one-shot embedded calls
    /// ([`Engine::execute`](crate::Engine::execute)) that no other client can see.
    pub fn detached(registry: &ClientRegistry, now_ms: i64) -> ClientState {
        let id = registry.next_id.fetch_add(1, Ordering::Relaxed) + 1;
        let shared = Arc::new(ClientShared {
            id,
            fd: -1,
            created_ms: now_ms,
            last_interaction_ms: AtomicI64::new(now_ms),
            resp: AtomicUsize::new(2),
            last_cmd: AtomicUsize::new(usize::MAX),
            multi: AtomicI64::new(-1),
            ..ClientShared::default()
        });
        ClientState::with_shared(shared, now_ms)
    }

    fn with_shared(shared: Arc<ClientShared>, now_ms: i64) -> ClientState {
        let id = shared.id;
        ClientState {
            shared,
            db: 0,
            resp: 2,
            authenticated: false,
            user: "default".into(),
            acl_user: None,
            close_after_reply: false,
            suppress_reply: false,
            error_already_counted: false,
            reply_mode: ReplyMode::On,
            no_evict: false,
            no_touch: false,
            rng: SmallRng::seed_from_u64(id.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ now_ms as u64),
            wal_seq: 0,
            replaying: false,
            gate_slot: gate_slot::EMBEDDED_SLOT,
            multi: None,
            watches: crate::clients::watch::ClientWatches::default(),
            nested: None,
            block_request: None,
            blocked: None,
            wall_clock_anchor: None,
            retrying_block: false,
            written_for_waiters: Vec::new(),
            subs: subscriptions::Subscriptions::default(),
            script_debug: script_debug::DebugMode::Off,
            debug_console: None,
            wants_outcome: false,
            outcome: None,
            layers_in: None,
        }
    }

    /// A stand-in that runs a blocked client's command for it from another thread:
    /// same identity, database, protocol and user; its own transient state.
    pub fn stand_in(&self) -> ClientState {
        let mut c = ClientState::with_shared(Arc::clone(&self.shared), self.shared.created_ms);
        c.db = self.db;
        c.resp = self.resp;
        c.authenticated = self.authenticated;
        c.user = self.user.clone();
        c.no_touch = self.no_touch;
        c.retrying_block = true;
        c
    }

    /// The client id.
    pub fn id(&self) -> u64 {
        self.shared.id
    }

    /// Selects a database (already validated).
    pub fn select(&mut self, db: usize) {
        self.db = db;
        self.shared.db.store(db, Ordering::Relaxed);
    }

    /// Sets the protocol version.
    pub fn set_resp(&mut self, resp: u8) {
        self.resp = resp;
        self.shared.resp.store(usize::from(resp), Ordering::Relaxed);
    }
}

/// Every connected client, by id.
#[derive(Default)]
pub struct ClientRegistry {
    next_id: AtomicU64,
    clients: Mutex<BTreeMap<u64, Arc<ClientShared>>>,
    /// Connections accepted since start.
    pub total_connections: AtomicU64,
}

impl ClientRegistry {
    /// Removes a client when its connection closes.
    pub fn unregister(&self, id: u64) {
        self.clients.lock().remove(&id);
    }

    /// The connected client with this id.
    pub fn get(&self, id: u64) -> Option<Arc<ClientShared>> {
        self.clients.lock().get(&id).cloned()
    }

    /// A snapshot of the connected clients, in id order.
    pub fn snapshot(&self) -> Vec<Arc<ClientShared>> {
        // A killed client runs nothing more and its connection closes on its thread's
        // next pass; as in Redis, where it is freed at once, it is no longer listed.
        self.clients
            .lock()
            .values()
            .filter(|c| !c.killed.load(Ordering::SeqCst))
            .cloned()
            .collect()
    }

    /// The buffers of every connected client, in bytes (`INFO`'s
    /// `mem_clients_normal`).
    pub fn buffer_bytes(&self) -> u64 {
        self.clients
            .lock()
            .values()
            .map(|c| c.buffer_bytes() as u64)
            .sum()
    }

    /// Number of connected clients.
    pub fn len(&self) -> usize {
        self.clients.lock().len()
    }

    /// Whether no client is connected.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A client's type for `CLIENT LIST TYPE` / `CLIENT KILL TYPE`.
pub fn client_type(c: &ClientShared) -> &'static str {
    if c.pubsub.subscribed() {
        "pubsub"
    } else {
        "normal"
    }
}

/// `CLIENT LIST`'s `redir=`: the tracking redirect, 0 when tracking without one, -1
/// when not tracking.
pub fn client_list_redir(c: &ClientShared) -> i64 {
    if c.pubsub.tracking_flags.load(Ordering::Relaxed) == 0 {
        -1
    } else {
        c.pubsub.tracking_redirect.load(Ordering::Relaxed)
    }
}

/// `CLIENT LIST`'s Pub/Sub and state fields: (flags, sub, psub, ssub).
pub fn client_list_fields(c: &ClientShared) -> (String, usize, usize, usize) {
    let m = &c.pubsub;
    let mut flags = String::new();
    if m.monitor.load(Ordering::Relaxed) {
        flags.push('O');
    }
    if m.subscribed() {
        flags.push('P');
    }
    if c.multi.load(Ordering::Relaxed) >= 0 {
        flags.push('x');
    }
    if c.blocked.load(Ordering::Relaxed) {
        flags.push('b');
    }
    flags.push_str(&mailbox::tracking_list_flags(m));
    if flags.is_empty() {
        flags.push('N');
    }
    (
        flags,
        m.channels.load(Ordering::Relaxed),
        m.patterns.load(Ordering::Relaxed),
        m.shard_channels.load(Ordering::Relaxed),
    )
}

/// Full command names by command-table slot (what a client's `last_cmd` holds), for
/// `CLIENT LIST`'s `cmd=`: the command table registers them once, when it is built.
static COMMAND_NAMES: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();

/// Registers the command table's full names by slot (called once, by
/// [`command::table`](crate::command::table)).
pub fn register_command_names(names: Vec<&'static str>) {
    let _ = COMMAND_NAMES.set(names);
}

/// The full name of the command in `slot` (`NULL` for a slot not registered).
fn command_name(slot: usize) -> &'static str {
    COMMAND_NAMES
        .get()
        .and_then(|names| names.get(slot))
        .copied()
        .unwrap_or("NULL")
}

/// One `CLIENT LIST` line for a client.
pub fn client_line(c: &ClientShared, now_ms: i64) -> String {
    let t = c.text.lock().clone();
    let b = &c.buffers;
    let (qbuf, qbuf_free) = (
        b.query.load(Ordering::Relaxed),
        b.query_free.load(Ordering::Relaxed),
    );
    let omem = b.output.load(Ordering::Relaxed);
    let (flags, sub, psub, ssub) = client_list_fields(c);
    format!(
        "id={} addr={} laddr={} fd={} name={} age={} idle={} flags={flags} db={} sub={sub} psub={psub} ssub={ssub} multi={} qbuf={} qbuf-free={} argv-mem=0 multi-mem=0 rbs={} rbp={} obl=0 oll=0 omem={} tot-mem={} events={} cmd={} user={} redir={} resp={} lib-name={} lib-ver={}",
        c.id,
        c.addr,
        c.laddr,
        c.fd,
        String::from_utf8_lossy(&t.name),
        (now_ms - c.created_ms).max(0) / 1000,
        (now_ms - c.last_interaction_ms.load(Ordering::Relaxed)).max(0) / 1000,
        c.db.load(Ordering::Relaxed),
        c.multi.load(Ordering::Relaxed),
        qbuf,
        qbuf_free,
        b.output_capacity.load(Ordering::Relaxed),
        b.output_peak.load(Ordering::Relaxed),
        omem,
        c.buffer_bytes(),
        if omem > 0 { "rw" } else { "r" },
        match c.last_cmd.load(Ordering::Relaxed) {
            usize::MAX => "NULL",
            slot => command_name(slot),
        },
        if t.user.is_empty() {
            "default".into()
        } else {
            String::from_utf8_lossy(&t.user)
        },
        client_list_redir(c),
        c.resp.load(Ordering::Relaxed),
        String::from_utf8_lossy(&t.lib_name),
        String::from_utf8_lossy(&t.lib_ver),
    )
}
