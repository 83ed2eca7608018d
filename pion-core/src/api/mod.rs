//! The engine's API, what embedders and the server call: opening an engine (in memory,
//! or on a data directory whose contents are recovered through the dispatcher),
//! running commands on it ([`Engine::execute`], [`Session`]) and the typed calls
//! ([`typed`]; the prompt cache's `kv_*`, vector sets' `v*` and [`search`]'s
//! `ft_search` in their own modules). The engine's state and accessors are [`engine`](crate::engine)'s; this
//! layer sits above the command table, which it builds first.

mod prompt_cache;
pub mod search;
mod session;
pub mod typed;
mod vectors;

pub use session::Session;
pub use vectors::{Neighbor, Quantization};

use crate::clients::ClientState;
use crate::command;
use crate::durability::{DurabilityOptions, OpenError};
use crate::engine::{persistence, Engine, EngineOptions};
use crate::prefix::ops::Outcome;
use crate::reply::Reply;

impl Engine {
    /// An engine that keeps everything in memory only (a pure cache: nothing survives
    /// the process), with its background expiry cycle running.
    pub fn in_memory(options: EngineOptions) -> Engine {
        let engine = Engine::build(&options, command::table().stat_slots());
        engine.start_background(&options);
        engine
    }

    /// Opens the durable engine stored in `dir` (created if missing) with the default
    /// options: everything that was acknowledged before the last stop or crash is
    /// recovered, and every write from now on is logged before it returns.
    ///
    /// ```
    /// # let dir = std::env::temp_dir().join(format!("pion-doc-open-{}", std::process::id()));
    /// use pion_core::Engine;
    /// {
    ///     let engine = Engine::open(&dir).expect("open");
    ///     engine.set(0, b"k", b"v").expect("set");
    /// }
    /// let engine = Engine::open(&dir).expect("reopen");
    /// assert_eq!(engine.get(0, b"k").expect("get"), Some(b"v".to_vec()));
    /// # drop(engine);
    /// # std::fs::remove_dir_all(&dir).ok();
    /// ```
    pub fn open(dir: impl AsRef<std::path::Path>) -> Result<Engine, OpenError> {
        Engine::open_with(
            EngineOptions::default(),
            DurabilityOptions::new(dir.as_ref()),
        )
    }

    /// Opens a durable engine with these options. Fails when another process has the
    /// directory open, or when its snapshot or log is damaged (the error names the
    /// file and offset).
    pub fn open_with(
        options: EngineOptions,
        durability: DurabilityOptions,
    ) -> Result<Engine, OpenError> {
        let mut options = options;
        options.config.appendonly = true;
        options.config.wal = true;
        options.config.appendfsync = durability.fsync;
        options.config.dir = durability.dir.display().to_string();
        // Recovery replays the prompt cache's evictions as they were logged: the
        // budget applies only once it is done.
        let kv_budget = std::mem::take(&mut options.config.kv_budget);
        let engine = Engine::build(&options, command::table().stat_slots());
        let d = persistence::open(&engine, &durability, &command::REPLAYER)?;
        engine.attach_durability(d);
        engine.config().update(|c| c.kv_budget = kv_budget);
        engine.config_changed();
        engine.start_background(&options);
        persistence::background::spawn_keeper(engine.downgrade());
        if let Some(d) = engine.durability() {
            persistence::background::spawn_syncer(
                engine.downgrade(),
                std::sync::Arc::clone(d.wal().signal()),
            );
        }
        Ok(engine)
    }

    /// An embedded session: a client with its own selected database and protocol.
    pub fn session(&self) -> Session {
        Session::new(self.clone(), self.client(String::new(), String::new(), -1))
    }

    /// Runs any command against database `db` and returns its reply.
    ///
    /// ```
    /// use pion_core::{Engine, EngineOptions, Reply};
    /// let engine = Engine::in_memory(EngineOptions::default());
    /// assert_eq!(engine.execute(0, &["SET", "k", "v"]), Reply::ok());
    /// assert_eq!(engine.execute(0, &["GET", "k"]), Reply::Bulk(b"v".to_vec()));
    /// ```
    pub fn execute<A: AsRef<[u8]>>(&self, db: usize, args: &[A]) -> Reply {
        let argv: Vec<Vec<u8>> = args.iter().map(|a| a.as_ref().to_vec()).collect();
        self.execute_argv(db, &argv, false).0
    }

    /// Runs a command given as owned arguments; with `typed`, a prompt-cache command
    /// also hands back its [`Outcome`] (the stored id, the match, or the fetched
    /// blocks sharing the store's buffers), which its reply then only summarises.
    pub fn execute_argv(
        &self,
        db: usize,
        argv: &[Vec<u8>],
        typed: bool,
    ) -> (Reply, Option<Outcome>) {
        self.run_detached(db, argv, typed, None)
    }

    /// A typed `KV.PUT` in database 0 whose layers travel as buffers beside its
    /// (placeholder) arguments, through the same admission as any command.
    pub(crate) fn execute_with_layers(
        &self,
        argv: &[Vec<u8>],
        layers: Vec<bytes::Bytes>,
    ) -> (Reply, Option<Outcome>) {
        self.run_detached(0, argv, true, Some(layers))
    }

    fn run_detached(
        &self,
        db: usize,
        argv: &[Vec<u8>],
        typed: bool,
        layers_in: Option<Vec<bytes::Bytes>>,
    ) -> (Reply, Option<Outcome>) {
        let mut client = ClientState::detached(self.clients(), self.now_ms());
        client.select(db);
        client.authenticated = true;
        client.wants_outcome = typed;
        client.layers_in = layers_in;
        let reply = command::execute(self, &mut client, argv);
        let reply = self.acknowledged(&client, reply);
        (reply, client.outcome.take())
    }
}
