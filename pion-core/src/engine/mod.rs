//! The engine: keyspace, configuration, clients and counters, usable in-process with no
//! socket. `pion-server` is a thin event loop over the same [`Engine`].

mod cron;
mod listeners;
pub mod persistence;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};

use crate::util::clock::Clock;

use crate::clients::{ClientRegistry, ClientState};
use crate::config::{Config, ConfigValues};
use crate::durability::{Durability, FsyncPolicy};
use crate::keyspace::Keyspace;
use crate::reply::Reply;

/// Whether a reply may leave (see [`Engine::reply_readiness`]).
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Readiness {
    /// The writes it acknowledges are durable.
    Ready,
    /// An fsync that covers them is under way.
    Waiting,
    /// The disk refuses the log; retry later.
    Failed,
}

/// How to open an engine.
#[derive(Debug, Clone, Default)]
pub struct EngineOptions {
    /// Initial configuration (`databases`, limits, `requirepass` …).
    pub config: ConfigValues,
    /// Turn off the background active-expiry cycle (keys then expire only when read;
    /// fuzzing and deterministic tests use this).
    pub disable_active_expiry: bool,
    /// Where the engine reads the time (the system's clocks unless a test moves a
    /// manual one).
    pub clock: crate::util::clock::Clock,
}

/// Server-wide counters for `INFO stats`.
#[doc(hidden)]
#[derive(Debug, Default)]
pub struct ServerStats {
    /// Bytes read from clients.
    pub net_input_bytes: AtomicU64,
    /// Bytes written to clients.
    pub net_output_bytes: AtomicU64,
    /// Connections refused (`maxclients`).
    pub rejected_connections: AtomicU64,
}

pub use crate::monitor::command_stats::{CommandStat, CommandStats};

pub(crate) struct EngineInner {
    keyspace: Keyspace,
    config: Config,
    clients: ClientRegistry,
    command_stats: CommandStats,
    server_stats: ServerStats,
    started_ms: i64,
    run_id: String,
    /// The replication id `INFO replication` reports (`master_replid`): a new one each
    /// run, as a Redis primary makes one at start-up.
    repl_id: String,
    shutdown: std::sync::atomic::AtomicBool,
    /// Users and their permissions; the default user's password is `requirepass`.
    acl: crate::acl::Acl,
    /// The configuration file the server started with (for `CONFIG REWRITE`).
    config_file: std::sync::OnceLock<crate::config::file::ConfigFile>,
    /// `maxmemory` (cached likewise; 0 = no limit).
    maxmemory: AtomicU64,
    /// Used memory when the engine was made, before any data was loaded
    /// (`used_memory_startup`).
    startup_memory: u64,
    /// An LFU `maxmemory-policy` is selected (cached likewise).
    lfu_policy: std::sync::atomic::AtomicBool,
    /// `busy-reply-threshold` in milliseconds (cached likewise).
    busy_reply_threshold: AtomicU64,
    /// Error replies by their code (`ERR`, `WRONGTYPE` …) for `INFO errorstats`.
    error_stats: parking_lot::Mutex<std::collections::BTreeMap<String, u64>>,
    /// Where the time comes from.
    clock: crate::util::clock::Clock,
    /// Monotonic origin of the wall clock below.
    epoch: std::time::Instant,
    /// Wall-clock microseconds at `epoch`, re-read every expiry cycle so that a clock
    /// adjustment is followed within a tick (microseconds: two millisecond floors
    /// would put the derived time up to 2 ms off).
    wall_at_epoch_us: std::sync::atomic::AtomicI64,
    shutdown_waker: parking_lot::Mutex<Option<Box<dyn Fn() + Send + Sync>>>,
    /// The data directory, log and snapshots (absent for an in-memory engine).
    durability: std::sync::OnceLock<Durability>,
    /// The prompt cache (K/V prefix blocks).
    prefix: parking_lot::Mutex<crate::prefix::PrefixStore>,
    /// The prompt cache's block files (durable engines): read without the store's lock
    /// for the payload bytes held as views of their mappings, which the memory
    /// figures count with the allocator's.
    block_files: std::sync::OnceLock<std::sync::Arc<crate::prefix::blockfile::BlockFiles>>,
    /// Attention over stored prefixes: views, kernels, counters.
    attention: crate::prefix::attend::Attention,
    search: std::sync::Arc<crate::index::Indexes>,
    /// Open `FT.AGGREGATE … WITHCURSOR` cursors.
    search_cursors: crate::index::cursor::Cursors,
    /// Keys clients `WATCH`.
    watches: Arc<crate::clients::watch::WatchRegistry>,
    /// Clients blocked on keys.
    blocking: crate::clients::blocking::BlockingRegistry,
    /// The execution gate (transactions and scripts run alone).
    gate: crate::server::gate::Gate,
    /// Eviction, slow log, latency monitor, client pauses.
    operator: crate::server::operator::Operator,
    /// Pub/Sub, keyspace notifications, client-side caching and `MONITOR`.
    pubsub: Arc<crate::pubsub::Hub>,
    /// Lua scripts and function libraries.
    scripting: crate::scripting::Scripting,
    /// Whether the background expiry cycle runs (`DEBUG SET-ACTIVE-EXPIRE`).
    active_expire: std::sync::atomic::AtomicBool,
    /// `DEBUG PAUSE-CRON 1`: the periodic tasks (active expiry, the tracking table's
    /// limit) stop until `DEBUG PAUSE-CRON 0`.
    cron_paused: std::sync::atomic::AtomicBool,
    /// `DEBUG SET-DISABLE-DENY-SCRIPTS 1`: scripts may call `NOSCRIPT` commands.
    scripts_deny_disabled: std::sync::atomic::AtomicBool,
    /// How the engine connects to other servers (`MIGRATE`), handed in by its host.
    dialer: std::sync::OnceLock<Arc<dyn crate::server::outbound::Dialer>>,
    /// The sentence encoder behind `AI.EMBED` and the semantic cache, handed in by
    /// whoever runs the engine.
    embedder: std::sync::OnceLock<Arc<crate::embed::EmbedService>>,
    /// `MIGRATE`'s connections, kept by `host:port`.
    links: crate::server::outbound::LinkCache,
}

/// A handle to an engine; cheap to clone, shared by every thread.
///
/// ```
/// use pion_core::{Engine, EngineOptions, Reply};
/// let engine = Engine::in_memory(EngineOptions::default());
/// engine.set(0, b"greeting", b"hello").unwrap();
/// assert_eq!(engine.get(0, b"greeting").unwrap(), Some(b"hello".to_vec()));
/// assert_eq!(engine.execute(0, &["INCRBY", "n", "5"]), Reply::Integer(5));
/// ```
#[derive(Clone)]
pub struct Engine {
    inner: Arc<EngineInner>,
}

/// A weak handle on an engine: background threads hold one, so they end when the
/// last [`Engine`] is dropped.
#[derive(Clone)]
pub(crate) struct WeakEngine(Weak<EngineInner>);

impl WeakEngine {
    /// The engine, if it still exists.
    pub(crate) fn upgrade(&self) -> Option<Engine> {
        self.0.upgrade().map(|inner| Engine { inner })
    }
}

// The server's handles on the engine's parts (the log's readiness, the subsystems,
// statistics, configuration, shutdown): public for pion-server and the test suite,
// left out of the embedding API's documentation, which the block below holds.
#[doc(hidden)]
impl Engine {
    /// Attaches the durable state recovery produced (once, when a durable engine is
    /// opened, before any other handle to the engine exists).
    pub(crate) fn attach_durability(&self, d: Durability) {
        let _ = self.inner.durability.set(d);
    }

    /// A handle that does not keep the engine alive (background threads hold one).
    pub(crate) fn downgrade(&self) -> WeakEngine {
        WeakEngine(Arc::downgrade(&self.inner))
    }

    /// Whether a reply that acknowledges the client's writes up to log record `seq`
    /// may be sent now. Never waits for an fsync: under `always` it writes the records
    /// and answers [`Readiness::Waiting`]; the caller then fsyncs itself when it has
    /// nothing else to do ([`sync_log_now`](Self::sync_log_now)) or hands the fsync
    /// to the log's sync thread ([`request_log_sync`](Self::request_log_sync)), whose
    /// completion runs the callbacks registered with
    /// [`on_log_synced`](Self::on_log_synced).
    pub fn reply_readiness(&self, seq: u64) -> Readiness {
        let Some(d) = self.durability() else {
            return Readiness::Ready;
        };
        let wal = d.wal();
        let failing = wal.failure().is_some();
        // What the log already holds may be acknowledged even while the disk fails
        // (a client that wrote earlier still gets its reads answered).
        if seq == 0 || wal.durable_seq() >= seq {
            return Readiness::Ready;
        }
        if failing || wal.policy() != FsyncPolicy::Always {
            return match self.make_durable(seq) {
                Ok(()) => Readiness::Ready,
                Err(_) => Readiness::Failed,
            };
        }
        if wal.write_through(seq).is_err() {
            return Readiness::Failed;
        }
        Readiness::Waiting
    }

    /// fsyncs the log in the calling thread (an event loop with nothing else to do:
    /// no hand-off to another thread and back). Wakes the other loops afterwards.
    pub fn sync_log_now(&self) {
        if let Some(d) = self.durability() {
            // A failure is recorded in the log's state; replies then stay held.
            let _ = d.wal().sync_concurrently();
            d.wal().signal().notify();
        }
    }

    /// Hands an fsync of everything written so far to the log's sync thread (an event
    /// loop with other clients to serve meanwhile).
    pub fn request_log_sync(&self) {
        if let Some(d) = self.durability() {
            d.wal().signal().request(d.wal().written_seq());
        }
    }

    /// Whether the log's sync thread has an fsync under way.
    pub fn log_sync_in_flight(&self) -> bool {
        self.durability()
            .is_some_and(|d| d.wal().signal().in_flight())
    }

    /// Registers a callback run after every background fsync of the log (an event
    /// loop's waker, so that it sends the replies that were waiting for it).
    pub fn on_log_synced(&self, wake: Box<dyn Fn() + Send + Sync>) {
        if let Some(d) = self.durability() {
            d.wal().signal().listen(wake);
        }
    }

    /// The prompt cache (K/V prefix blocks). Lock it for as short as possible; a
    /// command that changes it logs the change while still holding the lock.
    pub fn prefix(&self) -> &parking_lot::Mutex<crate::prefix::PrefixStore> {
        &self.inner.prefix
    }

    /// Attention over stored prefixes (`ATTEND.*`).
    pub fn attention(&self) -> &crate::prefix::attend::Attention {
        &self.inner.attention
    }

    /// The device policy `attend-device` names.
    pub fn attend_policy(&self) -> kernels::DevicePolicy {
        self.inner.config.with(|c| c.attend_device)
    }

    /// The open `FT.AGGREGATE … WITHCURSOR` cursors.
    pub fn search_cursors(&self) -> &crate::index::cursor::Cursors {
        &self.inner.search_cursors
    }

    /// The search indexes (`FT.*`).
    pub fn search(&self) -> &std::sync::Arc<crate::index::Indexes> {
        &self.inner.search
    }

    /// The keys clients `WATCH`.
    pub fn watches(&self) -> &Arc<crate::clients::watch::WatchRegistry> {
        &self.inner.watches
    }

    /// The clients blocked on keys.
    pub fn blocking(&self) -> &crate::clients::blocking::BlockingRegistry {
        &self.inner.blocking
    }

    /// The execution gate.
    pub fn gate(&self) -> &crate::server::gate::Gate {
        &self.inner.gate
    }

    /// Hands the engine the way it connects to other servers (`MIGRATE`'s targets);
    /// the first one handed in stays. `pion-server` hands in a TCP dialer.
    pub fn set_dialer(&self, dialer: Arc<dyn crate::server::outbound::Dialer>) {
        let _ = self.inner.dialer.set(dialer);
    }

    /// How the engine connects to other servers, if it was handed a way.
    pub fn dialer(&self) -> Option<&Arc<dyn crate::server::outbound::Dialer>> {
        self.inner.dialer.get()
    }

    /// `MIGRATE`'s cached connections.
    pub fn links(&self) -> &crate::server::outbound::LinkCache {
        &self.inner.links
    }

    /// Turns the background expiry cycle on or off (keys still expire when accessed).
    pub fn set_active_expire(&self, on: bool) {
        self.inner.active_expire.store(on, Ordering::Relaxed);
    }

    /// Lets scripts call the commands normally denied to them, or not
    /// (`DEBUG SET-DISABLE-DENY-SCRIPTS`).
    pub fn set_scripts_deny_disabled(&self, disabled: bool) {
        self.inner
            .scripts_deny_disabled
            .store(disabled, Ordering::Relaxed);
    }

    /// Whether scripts may call the commands normally denied to them.
    pub fn scripts_deny_disabled(&self) -> bool {
        self.inner.scripts_deny_disabled.load(Ordering::Relaxed)
    }

    /// Pauses or resumes the periodic tasks (`DEBUG PAUSE-CRON`).
    pub fn set_cron_paused(&self, paused: bool) {
        self.inner.cron_paused.store(paused, Ordering::Relaxed);
    }

    /// `busy-reply-threshold` in milliseconds: how long a script runs before other
    /// clients are answered `-BUSY`.
    pub fn busy_threshold_ms(&self) -> u64 {
        self.inner.busy_reply_threshold.load(Ordering::Relaxed)
    }

    /// Whether a script runs past `busy-reply-threshold` now. One atomic load when
    /// none runs: the threshold is read only when one does.
    pub fn script_busy(&self) -> bool {
        let busy = self.inner.gate.busy();
        busy.script_running() && busy.is_busy(self.busy_threshold_ms())
    }

    /// Pub/Sub, keyspace notifications, client-side caching and `MONITOR`.
    pub fn pubsub(&self) -> &Arc<crate::pubsub::Hub> {
        &self.inner.pubsub
    }

    /// Lua scripts and function libraries.
    pub fn scripting(&self) -> &crate::scripting::Scripting {
        &self.inner.scripting
    }

    /// The engine's durable storage, unless it is in-memory only.
    pub fn durability(&self) -> Option<&Durability> {
        self.inner.durability.get()
    }

    /// Waits until every log record up to `seq` is durable under the fsync policy
    /// (written; under `always`, fsynced). Errors when the disk refuses (Redis's
    /// `MISCONF`): the caller must then not acknowledge the write.
    pub fn make_durable(&self, seq: u64) -> Result<(), crate::error::OpError> {
        match self.durability() {
            Some(d) if seq > 0 => d
                .wal()
                .commit(seq)
                .map_err(|e| crate::error::OpError::DiskFailed(e.to_string())),
            _ => Ok(()),
        }
    }

    /// Starts the background expiry cycle (unless the options turn it off).
    pub(crate) fn start_background(&self, options: &EngineOptions) {
        if !options.disable_active_expiry {
            cron::spawn_expiry_cycle(Arc::downgrade(&self.inner));
        }
    }

    /// The engine's state, its command counters sized for `command_slots` (the
    /// command table's slots), with the keyspace's listeners hooked to Pub/Sub.
    pub(crate) fn build(options: &EngineOptions, command_slots: usize) -> Engine {
        let databases = options.config.databases.max(1);
        let clock = options.clock.clone();
        let started_ms = clock.unix_ms();
        let random_id = || {
            use rand::Rng;
            let mut rng = rand::thread_rng();
            (0..40)
                .map(|_| char::from(b"0123456789abcdef"[rng.gen_range(0..16)]))
                .collect::<String>()
        };
        let run_id = random_id();
        let repl_id = random_id();
        let inner = Arc::new(EngineInner {
            keyspace: Keyspace::new(databases),
            config: Config::new(options.config.clone()),
            clients: ClientRegistry::default(),
            command_stats: CommandStats::new(command_slots),
            server_stats: ServerStats::default(),
            started_ms,
            run_id,
            repl_id,
            shutdown: std::sync::atomic::AtomicBool::new(false),
            acl: {
                let acl = crate::acl::Acl::new();
                if !options.config.requirepass.is_empty() {
                    acl.set_default_password(&options.config.requirepass);
                }
                acl
            },
            config_file: std::sync::OnceLock::new(),
            maxmemory: AtomicU64::new(0),
            lfu_policy: std::sync::atomic::AtomicBool::new(false),
            busy_reply_threshold: AtomicU64::new(0),
            error_stats: parking_lot::Mutex::new(std::collections::BTreeMap::new()),
            startup_memory: crate::util::alloc::allocated().unwrap_or(0),
            epoch: clock.now(),
            wall_at_epoch_us: std::sync::atomic::AtomicI64::new(clock.unix_us()),
            clock,
            shutdown_waker: parking_lot::Mutex::new(None),
            durability: std::sync::OnceLock::new(),
            block_files: std::sync::OnceLock::new(),
            prefix: parking_lot::Mutex::new(crate::prefix::PrefixStore::default()),
            attention: crate::prefix::attend::Attention::default(),
            search: std::sync::Arc::new(crate::index::Indexes::default()),
            search_cursors: crate::index::cursor::Cursors::default(),
            watches: Arc::new(crate::clients::watch::WatchRegistry::default()),
            blocking: crate::clients::blocking::BlockingRegistry::default(),
            gate: crate::server::gate::Gate::default(),
            operator: crate::server::operator::Operator::default(),
            pubsub: Arc::new(crate::pubsub::Hub::default()),
            scripting: crate::scripting::Scripting::default(),
            active_expire: std::sync::atomic::AtomicBool::new(true),
            cron_paused: std::sync::atomic::AtomicBool::new(false),
            scripts_deny_disabled: std::sync::atomic::AtomicBool::new(false),
            dialer: std::sync::OnceLock::new(),
            embedder: std::sync::OnceLock::new(),
            links: crate::server::outbound::LinkCache::default(),
        });
        let engine = Engine { inner };
        let search = engine.inner.search.clone();
        let watches = Arc::clone(&engine.inner.watches);
        engine
            .inner
            .keyspace
            .set_expiry_listener(Box::new(move |db, key| {
                search.key_expired(db, key);
                watches.touch(db, key, false);
            }));
        listeners::listen_for_expiry(&engine);
        listeners::listen_for_creation(&engine);
        engine.config_changed();
        engine
    }

    /// Eviction, slow log, latency monitor and client pauses.
    pub fn operator(&self) -> &crate::server::operator::Operator {
        &self.inner.operator
    }

    /// The keyspace.
    pub fn keyspace(&self) -> &Keyspace {
        &self.inner.keyspace
    }

    /// The live configuration.
    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    /// Connected clients.
    pub fn clients(&self) -> &ClientRegistry {
        &self.inner.clients
    }

    /// Per-command counters.
    pub fn command_stats(&self) -> &CommandStats {
        &self.inner.command_stats
    }

    /// Server-wide counters.
    pub fn server_stats(&self) -> &ServerStats {
        &self.inner.server_stats
    }

    /// Start time (Unix ms).
    pub fn started_ms(&self) -> i64 {
        self.inner.started_ms
    }

    /// This run's random 40-hex-digit id.
    pub fn run_id(&self) -> &str {
        &self.inner.run_id
    }

    /// This run's replication id (`master_replid`).
    pub fn repl_id(&self) -> &str {
        &self.inner.repl_id
    }

    /// Asks the server around this engine to shut down (`SHUTDOWN`).
    pub fn request_shutdown(&self) {
        self.inner.shutdown.store(true, Ordering::SeqCst);
        if let Some(wake) = self.inner.shutdown_waker.lock().as_ref() {
            wake();
        }
    }

    /// Whether `SHUTDOWN` was requested.
    pub fn shutdown_requested(&self) -> bool {
        self.inner.shutdown.load(Ordering::SeqCst)
    }

    /// Registers the callback that wakes the server when `SHUTDOWN` is requested.
    pub fn on_shutdown(&self, wake: Box<dyn Fn() + Send + Sync>) {
        *self.inner.shutdown_waker.lock() = Some(wake);
    }

    /// Counts an error reply under its code (the text's first word).
    pub fn count_error(&self, text: &str) {
        let code = text.split(' ').next().unwrap_or("ERR");
        let mut stats = self.inner.error_stats.lock();
        match stats.get_mut(code) {
            Some(n) => *n += 1,
            None => {
                stats.insert(code.to_string(), 1);
            }
        }
    }

    /// Error replies sent, by code.
    pub fn error_stats(&self) -> Vec<(String, u64)> {
        self.inner
            .error_stats
            .lock()
            .iter()
            .map(|(k, v)| (k.clone(), *v))
            .collect()
    }

    /// Resets the counters `CONFIG RESETSTAT` resets.
    pub fn reset_stats(&self) {
        self.inner.error_stats.lock().clear();
        self.inner.command_stats.reset();
        self.inner.operator.evictor.reset_stats();
        self.inner.keyspace.stats().reset();
        let s = &self.inner.server_stats;
        for c in [
            &s.net_input_bytes,
            &s.net_output_bytes,
            &s.rejected_connections,
        ] {
            c.store(0, Ordering::Relaxed);
        }
    }

    /// The current time in Unix milliseconds (the engine's clock).
    pub fn now_ms(&self) -> i64 {
        self.inner.clock.unix_ms()
    }

    /// The engine's clock.
    pub fn clock(&self) -> &Clock {
        &self.inner.clock
    }

    /// The Unix-ms wall time of a monotonic instant (cheaper than reading the wall
    /// clock again when the caller already has an `Instant`).
    pub fn wall_ms_at(&self, at: std::time::Instant) -> i64 {
        let since = at.saturating_duration_since(self.inner.epoch).as_micros() as i64;
        (self.inner.wall_at_epoch_us.load(Ordering::Relaxed) + since).div_euclid(1000)
    }

    /// Whether clients must authenticate (the default user has a password or is off).
    pub fn requires_auth(&self) -> bool {
        self.inner.acl.auth_required()
    }

    /// Users and their permissions.
    pub fn acl(&self) -> &crate::acl::Acl {
        &self.inner.acl
    }

    /// The configuration file the server started with, if any.
    pub fn config_file(&self) -> Option<&crate::config::file::ConfigFile> {
        self.inner.config_file.get()
    }

    /// Records the configuration file the server started with (once).
    pub fn set_config_file(&self, file: crate::config::file::ConfigFile) {
        let _ = self.inner.config_file.set(file);
    }

    /// Whether an LFU `maxmemory-policy` is selected.
    pub fn lfu_policy(&self) -> bool {
        self.inner.lfu_policy.load(Ordering::Relaxed)
    }

    /// `maxmemory` in bytes (0: no limit).
    pub fn maxmemory(&self) -> u64 {
        self.inner.maxmemory.load(Ordering::Relaxed)
    }

    /// The memory figures now (`INFO memory`, `MEMORY STATS`), noting the peak.
    pub fn memory_report(&self) -> crate::monitor::memstats::MemoryReport {
        let parts = crate::monitor::memstats::MemoryParts {
            not_counted: self.memory_not_counted_for_evict(),
            mapped: self.mapped_memory(),
            clients: self.clients().buffer_bytes(),
            prompt_cache: self.prefix().lock().bytes(),
            vector_indexes: self.search().vector_bytes() as u64,
        };
        crate::monitor::memstats::MemoryReport::read(
            &self.inner.keyspace,
            &self.inner.operator.peak,
            self.inner.startup_memory,
            parts,
        )
    }

    /// Bytes held that eviction leaves out (Redis's `mem_not_counted_for_evict`):
    /// the log's buffer of records not yet written, which evicting keys only grows.
    pub fn memory_not_counted_for_evict(&self) -> u64 {
        self.durability().map_or(0, |d| d.wal().buffered_bytes())
    }

    /// What `maxmemory` is compared with: the bytes the process holds through the
    /// counting allocator (`util::alloc`) less what eviction leaves out, where that
    /// allocator is the global one; otherwise the keyspace's own estimate of its keys
    /// and values. With the allocator it sums the threads' counters; the estimate
    /// locks every shard.
    pub fn memory_for_eviction(&self) -> Option<u64> {
        crate::util::alloc::allocated().map(|held| {
            (held + self.mapped_memory()).saturating_sub(self.memory_not_counted_for_evict())
        })
    }

    /// Prompt-cache payloads held as views of the block files' mappings: memory of
    /// the page cache's that the store keeps, counted as used as if it were
    /// allocated (0 for an in-memory engine).
    pub fn mapped_memory(&self) -> u64 {
        self.inner
            .block_files
            .get()
            .map_or(0, |files| files.mapped_bytes())
    }

    /// Notes the prompt cache's block files (a durable engine, at open).
    pub(crate) fn set_block_files(
        &self,
        files: std::sync::Arc<crate::prefix::blockfile::BlockFiles>,
    ) {
        let _ = self.inner.block_files.set(files);
    }

    /// [`memory_for_eviction`](Self::memory_for_eviction), or the estimate.
    pub fn used_memory_for_eviction(&self) -> u64 {
        self.memory_for_eviction()
            .unwrap_or_else(|| self.inner.keyspace.estimated_memory() as u64)
    }

    /// Re-reads the settings the command path checks on every call, after
    /// `CONFIG SET` (kept in atomics so no thread takes the configuration lock per command).
    pub fn config_changed(&self) {
        let (maxmemory, lfu, busy) = self.inner.config.with(|c| {
            (
                c.maxmemory,
                c.maxmemory_policy.is_lfu(),
                c.busy_reply_threshold,
            )
        });
        self.inner.maxmemory.store(maxmemory, Ordering::Relaxed);
        self.inner.lfu_policy.store(lfu, Ordering::Relaxed);
        self.inner
            .busy_reply_threshold
            .store(busy, Ordering::Relaxed);
        let channels_all = self.inner.config.with(|c| c.acl_pubsub_default_all);
        self.inner.acl.set_channels_default(channels_all);
        self.inner
            .config
            .with(|c| self.inner.operator.configure(c, &self.inner.keyspace));
        let tracking = self.inner.config.with(|c| c.latency_tracking);
        self.inner.command_stats.set_latency_tracking(tracking);
        self.inner
            .config
            .with(|c| crate::pubsub::configure(&self.inner.pubsub, c));
        let new_events = self.inner.pubsub.notify_flags() & crate::pubsub::notify::NEW != 0;
        self.inner.keyspace.want_creations(new_events);
        if let Some(d) = self.durability() {
            d.wal()
                .set_policy(self.inner.config.with(|c| c.appendfsync));
        }
        self.apply_kv_budget();
    }

    /// Applies `kv-budget` to the prompt cache, logging what it evicts (so recovery
    /// does not bring those blocks back); returns the log record's sequence number.
    pub fn apply_kv_budget(&self) -> u64 {
        let budget = self.inner.config.with(|c| c.kv_budget);
        let log =
            crate::prefix::ops::ChangeLog::new(self.durability().map(|d| d.wal()), self.now_ms());
        crate::prefix::ops::apply_budget(&self.inner.prefix, log, budget)
    }

    /// A new client session (registered, as `CLIENT LIST` shows it).
    pub fn client(&self, addr: String, laddr: String, fd: i64) -> ClientState {
        self.inner
            .clients
            .total_connections
            .fetch_add(1, Ordering::Relaxed);
        let mut c = ClientState::new(&self.inner.clients, addr, laddr, fd, self.now_ms());
        c.authenticated = !self.requires_auth();
        c
    }

    /// The reply to give once the client's writes are durable, or the error that says
    /// they could not be made durable.
    pub(crate) fn acknowledged(&self, client: &ClientState, reply: Reply) -> Reply {
        match self.make_durable(client.wal_seq) {
            Ok(()) => reply,
            Err(e) => e.into(),
        }
    }
}

/// What an embedder calls on an engine beyond commands and the typed API: the
/// sentence encoder and a clean flush of the log.
impl Engine {
    /// Hands in the sentence encoder `AI.EMBED` and `AI.SEMANTIC_CACHE` use; the
    /// first one handed in stays. `pion-server --embed-model DIR` loads one.
    pub fn set_embedder(&self, embedder: Arc<crate::embed::EmbedService>) {
        let _ = self.inner.embedder.set(embedder);
    }

    /// The sentence encoder, if one was handed in.
    pub fn embedder(&self) -> Option<&Arc<crate::embed::EmbedService>> {
        self.inner.embedder.get()
    }

    /// Flushes and fsyncs the log (clean shutdown).
    pub fn flush_log(&self) -> Result<(), crate::durability::DiskFailure> {
        match self.durability() {
            Some(d) => d.wal().sync_all(),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests;
