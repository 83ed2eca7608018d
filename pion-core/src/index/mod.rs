//! Secondary indexes over hashes and JSON documents: what `FT.CREATE` builds and `FT.SEARCH` reads, with
//! the RediSearch query language ([`query`]: parser, typed tree, `FT.EXPLAIN`) and the
//! tokenizer of TEXT fields and query terms ([`tokens`]) they share with the `FT.*`
//! handlers.
//!
//! The registry ([`Indexes`]) holds every index of the engine. The command dispatcher
//! calls [`Indexes::key_written`] after each write command, for each of its keys,
//! while the key's shard is still locked; the initial scan of an index indexes each
//! hash under its shard's lock too. So an index always reflects the order in which
//! writes happened, whichever thread ran them. Indexes cover database 0 only, as in
//! RediSearch.
//!
//! Lock order: shard locks, then an index's document lock. Queries take an index's
//! document lock, release it, and only then lock shards to load the results.

pub mod aliases;
pub mod cursor;
pub mod dicts;
pub mod docs;
pub mod document;
pub mod eval;
pub mod frequencies;
mod json_fields;
pub mod persist;
pub mod query;
pub mod schema;
pub mod stem;
mod text;
pub mod tokens;
pub mod vectors;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Mutex, RwLock};

use crate::keyspace::{Keyspace, Locked};
use crate::value::Value;
pub use docs::{DocSet, Docs, FieldIndex, IdMap};
pub use document::{Document, Read};
pub use schema::{FieldKind, FieldSpec, IndexDef, KeyType};

/// One search index: its definition, its documents and its counters.
pub struct SearchIndex {
    /// The definition (`FT.ALTER` adds fields).
    pub def: RwLock<IndexDef>,
    /// The documents and per-field structures.
    pub docs: RwLock<Docs>,
    /// The initial scan is running.
    pub scanning: AtomicBool,
    /// Keys visited by the initial scan so far, and the keyspace size when it began.
    pub scanned: AtomicU64,
    /// Keys in database 0 when the scan began.
    pub scan_total: AtomicU64,
    /// Queries run against the index.
    pub uses: AtomicU64,
    /// Queries by dialect (1 to 4).
    pub dialects: [AtomicU64; 4],
    /// When a document was last added (for the background graph build).
    last_insert: Mutex<Option<Instant>>,
    /// Seconds spent indexing, in microseconds.
    pub indexing_us: AtomicU64,
    /// The commands that made this index (`FT.CREATE`, then each `FT.ALTER`), which a
    /// snapshot stores to recreate it.
    pub commands: Mutex<Vec<Vec<Vec<u8>>>>,
}

impl SearchIndex {
    /// Bytes of the index's vector fields (codes, links, rows): `FT.INFO`'s
    /// `vector_index_sz_mb`.
    pub fn vector_bytes(&self) -> usize {
        self.docs
            .read()
            .fields
            .iter()
            .map(|f| match f {
                FieldIndex::Vector(v) => v.index().stats().memory_bytes,
                _ => 0,
            })
            .sum()
    }

    fn new(def: IndexDef) -> SearchIndex {
        SearchIndex {
            docs: RwLock::new(Docs::new(&def)),
            def: RwLock::new(def),
            scanning: AtomicBool::new(false),
            scanned: AtomicU64::new(0),
            scan_total: AtomicU64::new(0),
            uses: AtomicU64::new(0),
            dialects: Default::default(),
            last_insert: Mutex::new(None),
            indexing_us: AtomicU64::new(0),
            commands: Mutex::new(Vec::new()),
        }
    }

    /// Brings one key's document up to date with its current value (`None`: gone).
    pub fn sync(&self, key: &[u8], value: Option<&Value>) {
        let def = self.def.read();
        if !def.covers(key) {
            return;
        }
        let started = Instant::now();
        let mut docs = self.docs.write();
        match value.and_then(|v| Document::of(v, def.on)) {
            Some(doc) => {
                docs.index(&def, key, doc);
                *self.last_insert.lock() = Some(started);
            }
            None => {
                docs.remove(key);
            }
        }
        self.indexing_us
            .fetch_add(started.elapsed().as_micros() as u64, Ordering::Relaxed);
    }

    /// Links vectors waiting outside the graph: at most `budget` per vector field,
    /// with `threads` threads. Returns how many were linked.
    pub fn build_step(&self, budget: usize, threads: usize) -> usize {
        self.vector_indexes()
            .iter()
            .map(|v| v.build_pending_with(budget, threads))
            .sum()
    }

    /// The vector fields' indexes, taken out of the document lock (linking then runs
    /// without blocking writers).
    fn vector_indexes(&self) -> Vec<Arc<crate::vector::VectorIndex>> {
        let docs = self.docs.read();
        docs.fields
            .iter()
            .filter_map(|f| match f {
                FieldIndex::Vector(v) => Some(v.index().clone()),
                _ => None,
            })
            .collect()
    }

    /// Links every waiting vector now, with all cores (`FT.OPTIMIZE`).
    pub fn optimize(&self) {
        for v in self.vector_indexes() {
            v.optimize();
        }
    }

    /// Vectors waiting to be linked into a graph, over all vector fields.
    pub fn pending(&self) -> usize {
        let docs = self.docs.read();
        docs.fields
            .iter()
            .map(|f| match f {
                FieldIndex::Vector(v) => v.index().pending(),
                _ => 0,
            })
            .sum()
    }

    /// The fraction of the initial scan done (1 when finished).
    pub fn percent_indexed(&self) -> f64 {
        if !self.scanning.load(Ordering::Relaxed) {
            return 1.0;
        }
        let total = self.scan_total.load(Ordering::Relaxed).max(1);
        (self.scanned.load(Ordering::Relaxed) as f64 / total as f64).min(1.0)
    }
}

/// Why an index operation failed, with RediSearch's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexError(pub &'static str);

/// Counters of the registry for `INFO search`.
#[derive(Debug, Default)]
pub struct SearchStats {
    /// Vector graphs loaded from a snapshot at start-up.
    pub graphs_loaded: AtomicU64,
    /// Indexes re-indexed from the hashes at start-up (a graph that did not load, or an
    /// index saved while its initial scan ran).
    pub graphs_rebuilt: AtomicU64,
}

/// Every index of the engine.
#[derive(Default)]
pub struct Indexes {
    map: RwLock<BTreeMap<Vec<u8>, Arc<SearchIndex>>>,
    stats: SearchStats,
    /// Whether any index exists (the write path's fast check).
    any: AtomicBool,
    builder_started: AtomicBool,
    /// `FT.DICT*` dictionaries.
    dicts: dicts::Dictionaries,
    /// `FT.ALIAS*` aliases. Lock order: `map` before `aliases`.
    aliases: aliases::Aliases,
}

/// Why an alias command did not run, in RediSearch's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AliasError {
    /// The target is neither an index nor allowed (an alias of an alias).
    UnknownIndex,
    /// `FT.ALIASADD` of an alias that exists.
    Exists,
    /// `FT.ALIASDEL` of an alias that does not exist.
    Missing,
    /// `FT.ALIASDEL` of an index's name that is not also an alias of that index.
    NotOwned,
}

impl AliasError {
    /// RediSearch's reply text.
    pub fn text(self) -> &'static str {
        match self {
            AliasError::UnknownIndex => "Unknown index name (or name is an alias itself)",
            AliasError::Exists => "Alias already exists",
            AliasError::Missing => "Alias does not exist",
            AliasError::NotOwned => "Alias does not belong to provided spec",
        }
    }
}

/// How long inserts must pause before the background builder links vectors.
const BUILD_PAUSE: Duration = Duration::from_millis(50);

/// Vectors waiting at which the builder links even while inserts go on.
const BUILD_BACKLOG: usize = 4096;

impl Indexes {
    /// The registry's counters.
    pub fn stats(&self) -> &SearchStats {
        &self.stats
    }

    /// The `FT.DICT*` dictionaries.
    pub fn dicts(&self) -> &dicts::Dictionaries {
        &self.dicts
    }

    /// Whether any index exists.
    pub fn any(&self) -> bool {
        self.any.load(Ordering::Acquire)
    }

    /// The aliases.
    pub fn aliases(&self) -> &aliases::Aliases {
        &self.aliases
    }

    /// The index of that name, or that an alias of that name stands for (an index's
    /// own name wins).
    pub fn get(&self, name: &[u8]) -> Option<Arc<SearchIndex>> {
        let map = self.map.read();
        if let Some(index) = map.get(name) {
            return Some(index.clone());
        }
        let target = self.aliases.target(name)?;
        map.get(&target).cloned()
    }

    /// `FT.ALIASADD` (`replace` false) or `FT.ALIASUPDATE` (true): points `alias` at
    /// the index named `index` (not at an alias).
    pub fn set_alias(&self, alias: &[u8], index: &[u8], replace: bool) -> Result<(), AliasError> {
        let map = self.map.read();
        if !map.contains_key(index) {
            return Err(AliasError::UnknownIndex);
        }
        if !self.aliases.set(alias, index, replace) {
            return Err(AliasError::Exists);
        }
        Ok(())
    }

    /// `FT.ALIASDEL`. The name is looked up as every command looks it up, so an
    /// index's own name removes only an alias of that index by that name.
    pub fn remove_alias(&self, alias: &[u8]) -> Result<(), AliasError> {
        let map = self.map.read();
        if map.contains_key(alias) && self.aliases.target(alias).as_deref() != Some(alias) {
            return Err(AliasError::NotOwned);
        }
        if self.aliases.remove(alias) {
            Ok(())
        } else {
            Err(AliasError::Missing)
        }
    }

    /// Every index name, sorted.
    pub fn names(&self) -> Vec<Vec<u8>> {
        self.map.read().keys().cloned().collect()
    }

    /// Every index.
    pub fn all(&self) -> Vec<Arc<SearchIndex>> {
        self.map.read().values().cloned().collect()
    }

    /// Bytes of every index's vector fields (codes, links, rows): `INFO`'s
    /// `mem_vector_indexes`.
    pub fn vector_bytes(&self) -> usize {
        self.map.read().values().map(|i| i.vector_bytes()).sum()
    }

    /// Creates an index; the caller then runs [`Indexes::scan`] unless the definition
    /// skips it.
    pub fn create(&self, def: IndexDef) -> Result<Arc<SearchIndex>, IndexError> {
        let mut map = self.map.write();
        if map.contains_key(&def.name) {
            return Err(IndexError("Index already exists"));
        }
        let index = Arc::new(SearchIndex::new(def));
        map.insert(index.def.read().name.clone(), index.clone());
        self.any.store(true, Ordering::Release);
        Ok(index)
    }

    /// Removes an index, named or by an alias, with its aliases; returns it, or
    /// `None` if there was none.
    pub fn drop_index(&self, name: &[u8]) -> Option<Arc<SearchIndex>> {
        let mut map = self.map.write();
        let name = match map.contains_key(name) {
            true => name.to_vec(),
            false => self.aliases.target(name)?,
        };
        let index = map.remove(&name);
        if index.is_some() {
            self.aliases.forget_index(&name);
        }
        self.any.store(!map.is_empty(), Ordering::Release);
        index
    }

    /// Removes every index, alias and dictionary (`FLUSHALL`).
    pub fn clear(&self) {
        self.map.write().clear();
        self.aliases.clear();
        self.dicts.clear();
        self.any.store(false, Ordering::Release);
    }

    /// Called after a write command for each of its keys, with the key's shard still
    /// locked: re-indexes or removes the key's document in every index covering it.
    pub fn key_written(&self, ks: &mut Locked<'_>, db: usize, key: &[u8]) {
        if db != 0 || !self.any() {
            return;
        }
        let indexes = self.all();
        let value = ks.peek(0, key).ok().flatten().map(|e| &e.value);
        for index in indexes {
            index.sync(key, value);
        }
    }

    /// A key of database 0 expired: its document leaves every index covering it.
    pub fn key_expired(&self, db: usize, key: &[u8]) {
        if db != 0 || !self.any() {
            return;
        }
        for index in self.all() {
            index.sync(key, None);
        }
    }

    /// After a command that rewrote the whole keyspace (`FLUSHALL`, `SWAPDB`): every
    /// index is rebuilt from database 0 as it now is. Called holding every shard.
    pub fn keyspace_replaced(&self, ks: &mut Locked<'_>) {
        if !self.any() {
            return;
        }
        let keys = ks.keys(0).unwrap_or_default();
        for index in self.all() {
            {
                let def = index.def.read();
                index.docs.write().clear(&def);
            }
            for key in &keys {
                let value = ks.peek(0, key).ok().flatten().map(|e| &e.value);
                index.sync(key, value);
            }
        }
    }

    /// The initial scan of a new index: visits every key of database 0, indexing each
    /// hash under its shard's lock (so a concurrent write to it is ordered with the
    /// scan). Progress is visible in `FT.INFO` (`indexing`, `percent_indexed`).
    pub fn scan(&self, ks: &Keyspace, index: &SearchIndex, now_ms: i64) {
        index.scanning.store(true, Ordering::Relaxed);
        index.scanned.store(0, Ordering::Relaxed);
        index
            .scan_total
            .store(ks.db_size(0) as u64, Ordering::Relaxed);
        let started = Instant::now();
        let mut reported = started;
        let (name, on) = {
            let def = index.def.read();
            (String::from_utf8_lossy(&def.name).into_owned(), def.on)
        };
        let mut cursor = 0;
        loop {
            cursor = ks.scan(0, cursor, 256, now_ms, |key, entry, _| {
                index.scanned.fetch_add(1, Ordering::Relaxed);
                if Document::of(&entry.value, on).is_some() {
                    index.sync(key, Some(&entry.value));
                }
            });
            if cursor == 0 {
                break;
            }
            if reported.elapsed() >= Duration::from_secs(1) {
                // A large keyspace takes a while: say how far the scan got.
                reported = Instant::now();
                crate::log_notice!(
                    "indexing {name}: {:.0}% of {} keys",
                    index.percent_indexed() * 100.0,
                    index.scan_total.load(Ordering::Relaxed)
                );
            }
        }
        index.scanning.store(false, Ordering::Relaxed);
        if started.elapsed() >= Duration::from_secs(1) {
            crate::log_notice!(
                "indexed {name}: {} documents in {:.1} s",
                index.docs.read().len(),
                started.elapsed().as_secs_f64()
            );
        }
    }

    /// Starts the background builder once: it links waiting vectors into their graphs
    /// when inserts pause (or the backlog grows), so a stock client that never sends
    /// `FT.OPTIMIZE` still gets graph-speed queries.
    pub fn start_builder(self: &Arc<Self>) {
        if self.builder_started.swap(true, Ordering::AcqRel) {
            return;
        }
        let weak = Arc::downgrade(self);
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let spawned = std::thread::Builder::new()
            .name("pion-vector-build".into())
            .spawn(move || loop {
                std::thread::sleep(Duration::from_millis(10));
                let Some(indexes) = weak.upgrade() else {
                    return;
                };
                for index in indexes.all() {
                    let pending = index.pending();
                    if pending == 0 {
                        continue;
                    }
                    let paused = index
                        .last_insert
                        .lock()
                        .is_none_or(|t| t.elapsed() >= BUILD_PAUSE);
                    if paused {
                        // Inserts paused: link with every core, a batch at a time so
                        // that resumed inserts are noticed.
                        index.build_step(4096, cores);
                    } else if pending >= BUILD_BACKLOG {
                        index.build_step(256, 1);
                    }
                }
            });
        if spawned.is_err() {
            // Without a builder thread, queries stay exact over the waiting vectors.
            self.builder_started.store(false, Ordering::Release);
        }
    }
}
