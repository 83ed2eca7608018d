//! The context a command handler runs in: the engine, the calling client, and the
//! keyspace shards locked for this command.
//!
//! Handlers reach the engine's parts through the accessors here, each naming the
//! subsystem it hands out; [`Ctx::engine`], the whole engine, is for the few that
//! act on the server as a whole or run other commands (EXEC, scripts, DEBUG, INFO,
//! the search commands' query plans), so a reader sees at the call which handlers
//! do.

use crate::clients::ClientState;
use crate::engine::Engine;
use crate::keyspace::Locked;
use crate::value::EncodingLimits;

/// Everything a handler may touch while it runs.
pub struct Ctx<'a> {
    /// The engine: handlers use the accessors below.
    engine: &'a Engine,
    /// The calling client.
    pub client: &'a mut ClientState,
    /// The shards this command holds.
    pub ks: Locked<'a>,
    /// What the write-ahead log records for this command.
    pub effect: Effect,
    /// Argument positions of keys a write command named but left as they were
    /// (`SMOVE`'s destination that already held the member): their watchers and
    /// tracking clients are not told, as Redis signals only keys it modified.
    pub unmodified_keys: Vec<usize>,
    /// The write command left its keys exactly as they were (an `XACK` that acked
    /// nothing, a `PFADD` that raised no register): nothing is logged and its keys are
    /// not settled again (their memory figure, indexes and waiters are as before).
    pub unchanged: bool,
    /// Work the command still has to do with none of its shards locked (`MIGRATE`'s
    /// round trip to its target): see [`Detour`].
    pub detour: Option<Detour>,
}

/// How a command finishes once its [`Detour`] is done: run like a handler, under the
/// command's shard locks again, at the command's time.
pub type Resume =
    Box<dyn FnOnce(&mut Ctx<'_>, &[Vec<u8>]) -> crate::error::OpResult<crate::reply::Reply>>;

/// Work a command does with no shard locked, such as network I/O, set by its
/// handler: the dispatcher releases the locks when the handler returns (its reply is
/// dropped), runs this, locks the same keys again and finishes the command with the
/// [`Resume`] it returns (whose reply, log effect and key changes are the command's).
/// The execution gate stays held throughout, so a transaction or script around the
/// command stays whole.
pub type Detour = Box<dyn FnOnce(&Engine) -> Resume>;

/// What a write command leaves in the write-ahead log.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Effect {
    /// The command as it was sent: replaying it at the same time reproduces it.
    #[default]
    AsSent,
    /// These commands instead (a random or machine-dependent outcome, stated as the
    /// deterministic commands that reproduce it: `SPOP` becomes `SREM` of what it
    /// popped).
    Rewritten(Vec<Vec<Vec<u8>>>),
    /// Nothing: the command changed nothing.
    Nothing,
}

impl<'a> Ctx<'a> {
    /// The context of a command `client` runs on `engine`, holding the shards `ks`.
    #[inline]
    pub fn new(engine: &'a Engine, client: &'a mut ClientState, ks: Locked<'a>) -> Ctx<'a> {
        Ctx {
            engine,
            client,
            ks,
            effect: Effect::AsSent,
            unmodified_keys: Vec::new(),
            unchanged: false,
            detour: None,
        }
    }

    /// The whole engine, for handlers that act on the server as a whole or run other
    /// commands; the rest use the accessors below.
    pub fn engine(&self) -> &'a Engine {
        self.engine
    }

    /// The prompt-cache store.
    pub fn prefix(&self) -> &'a parking_lot::Mutex<crate::prefix::PrefixStore> {
        self.engine.prefix()
    }

    /// Attention over stored prefixes.
    pub fn attention(&self) -> &'a crate::prefix::attend::Attention {
        self.engine.attention()
    }

    /// The keyspace (the shards this command did not lock are reached through it).
    pub fn keyspace(&self) -> &'a crate::keyspace::Keyspace {
        self.engine.keyspace()
    }

    /// Pub/Sub, keyspace notifications and client tracking.
    pub fn pubsub(&self) -> &'a std::sync::Arc<crate::pubsub::Hub> {
        self.engine.pubsub()
    }

    /// Users and their permissions.
    pub fn acl(&self) -> &'a crate::acl::Acl {
        self.engine.acl()
    }

    /// Lua: the script cache, the function libraries, the debugger.
    pub fn scripting(&self) -> &'a crate::scripting::Scripting {
        self.engine.scripting()
    }

    /// The operator's view: slow log, latency monitor, counters.
    pub fn operator(&self) -> &'a crate::server::operator::Operator {
        self.engine.operator()
    }

    /// The configuration.
    pub fn config(&self) -> &'a crate::config::Config {
        self.engine.config()
    }

    /// The search indexes.
    pub fn search(&self) -> &'a std::sync::Arc<crate::index::Indexes> {
        self.engine.search()
    }

    /// The connected clients.
    pub fn clients(&self) -> &'a crate::clients::ClientRegistry {
        self.engine.clients()
    }

    /// The durable state (`None` for an in-memory engine).
    pub fn durability(&self) -> Option<&'a crate::durability::Durability> {
        self.engine.durability()
    }

    /// The keys clients `WATCH`.
    pub fn watches(&self) -> &'a std::sync::Arc<crate::clients::watch::WatchRegistry> {
        self.engine.watches()
    }

    /// Clients blocked on keys.
    pub fn blocking(&self) -> &'a crate::clients::blocking::BlockingRegistry {
        self.engine.blocking()
    }

    /// Appends these commands to the write-ahead log now, as the effect of the running
    /// command (which then logs nothing more). For state outside the keyspace's
    /// shards (the prefix store): call it while holding that state's lock, so the log
    /// order is the order the changes were made in.
    pub fn log_now(&mut self, commands: &[Vec<Vec<u8>>]) {
        self.effect = Effect::Nothing;
        if commands.is_empty() {
            return;
        }
        if let Some(d) = self.engine.durability() {
            let db = self.client.db;
            let seq = d
                .wal()
                .append(self.now_ms(), commands.iter().map(|c| (db, c.as_slice())));
            self.client.wal_seq = seq;
        }
    }

    /// Whether the command's effect is kept: written to the log, or collected by the
    /// transaction or script around it. A command whose logged form costs work to
    /// build (an `XADD` with its generated id) skips that work when it is not.
    pub fn effect_is_kept(&self) -> bool {
        self.engine.durability().is_some() || self.client.nested.is_some()
    }

    /// Logs these commands instead of the one that ran (see [`Effect::Rewritten`]).
    pub fn log_as(&mut self, commands: Vec<Vec<Vec<u8>>>) {
        self.effect = if commands.is_empty() {
            Effect::Nothing
        } else {
            Effect::Rewritten(commands)
        };
    }

    /// Marks the command as having left its keys exactly as they were (see
    /// [`Ctx::unchanged`]): nothing to log either.
    pub fn changed_nothing(&mut self) {
        self.effect = Effect::Nothing;
        self.unchanged = true;
    }

    /// The client's selected database.
    pub fn db(&self) -> usize {
        self.client.db
    }

    /// The command's time (Unix milliseconds), fixed for the whole command.
    pub fn now_ms(&self) -> i64 {
        self.ks.now_ms()
    }

    /// Emits a keyspace notification for `key` (`class`: a
    /// [`notify`](crate::pubsub::notify) bit such as `notify::LIST`). Costs one atomic
    /// load when notifications are off.
    #[inline]
    pub fn notify(&self, class: u32, event: &str, key: &[u8]) {
        self.notify_db(class, event, key, self.client.db);
    }

    /// [`notify`](Self::notify) for a key of another database (`MOVE`, `COPY … DB`).
    #[inline]
    pub fn notify_db(&self, class: u32, event: &str, key: &[u8], db: usize) {
        let hub = self.engine.pubsub();
        if hub.notify_flags() & class != 0 {
            hub.keyspace_event(class, event, key, db);
        }
    }

    /// The current encoding thresholds (`hash-max-listpack-entries` …).
    pub fn limits(&self) -> EncodingLimits {
        self.engine.config().encoding_limits()
    }
}
