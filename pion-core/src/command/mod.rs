//! The command table: one [`CommandSpec`] per command, declared as `const` slices beside
//! each family's handlers. The table drives dispatch, arity errors, key locking,
//! `COMMAND` and its subcommands; nothing else in the engine matches command names.

pub mod access;
pub mod blocking;
pub mod ctx;

mod dispatch;
pub mod eviction;
pub mod flags;
pub mod handlers;
pub mod introspect;
pub mod pause;
pub mod pubsub;
mod resolve;
pub mod scripts;
pub mod watch;

pub use dispatch::{execute, execute_at, is_prefix_cache_command, replay, run_nested, REPLAYER};
pub use resolve::{key_indices, lock_set_for, resolve};

use std::collections::HashMap;
use std::sync::OnceLock;

use crate::command::ctx::Ctx;
use crate::error::OpResult;
use crate::reply::Reply;

/// A command handler: gets the context and the whole argument vector (the command name
/// first), returns the reply or a typed error.
pub type Handler = fn(&mut Ctx<'_>, &[Vec<u8>]) -> OpResult<Reply>;

/// Finds the key positions of a command whose keys move (`ZUNIONSTORE … numkeys …`).
pub type KeyFinder = fn(&[Vec<u8>]) -> OpResult<Vec<usize>>;

/// The ACL category and documentation group of a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    /// Generic key commands (`@keyspace`).
    Keyspace,
    /// String commands.
    String,
    /// Bitmap commands (`SETBIT`, `BITCOUNT`, `BITFIELD` …): they work on string
    /// values but Redis files them under their own `@bitmap` category and group.
    Bitmap,
    /// HyperLogLog commands (`PFADD`, `PFCOUNT` …): string values, filed by Redis
    /// under their own `@hyperloglog` category and group.
    HyperLogLog,
    /// Geo commands (`GEOADD`, `GEOSEARCH` …): sorted-set values, filed by Redis
    /// under their own `@geo` category and group.
    Geo,
    /// Stream commands (`XADD`, `XREAD`, consumer groups …).
    Stream,
    /// Hash commands.
    Hash,
    /// List commands.
    List,
    /// Set commands.
    Set,
    /// Sorted-set commands.
    SortedSet,
    /// Connection commands.
    Connection,
    /// Server commands.
    Server,
    /// Prompt-cache (K/V prefix store) commands, `KV.*`.
    PrefixCache,
    /// Search-index commands, `FT.*` (RediSearch's module group).
    Search,
    /// Scripting commands (`EVAL`, `SCRIPT`, `FUNCTION`, `FCALL`).
    Scripting,
    /// Vector-set commands (`V*`): Redis 8 ships them as a module, so they report
    /// the `module` group and no ACL category.
    VectorSet,
    /// JSON commands (`JSON.*`): RedisJSON's module, which in Redis 8.2 reports the
    /// `module` group and no ACL category.
    Json,
    /// Transaction commands (`MULTI`, `EXEC`, `WATCH` …).
    Transaction,
    /// Pub/Sub commands (their `@pubsub` category comes from the `pubsub` flag).
    PubSub,
    /// Cluster commands (`CLUSTER`: Pion answers them as a server without cluster
    /// support does).
    Cluster,
    /// Sentence embeddings and the semantic cache (`AI.*`), Pion's own.
    Ai,
}

impl Group {
    /// The name `COMMAND DOCS` reports as the group.
    pub fn doc_name(self) -> &'static str {
        match self {
            Group::Keyspace => "generic",
            Group::String => "string",
            Group::Bitmap => "bitmap",
            Group::HyperLogLog => "hyperloglog",
            Group::Geo => "geo",
            Group::Stream => "stream",
            Group::Hash => "hash",
            Group::List => "list",
            Group::Set => "set",
            Group::SortedSet => "sorted-set",
            Group::Connection => "connection",
            Group::Server => "server",
            Group::Scripting => "scripting",
            Group::PrefixCache => "prefix-cache",
            Group::Search => "module",
            Group::VectorSet | Group::Json => "module",
            Group::Transaction => "transactions",
            Group::PubSub => "pubsub",
            Group::Cluster => "cluster",
            Group::Ai => "ai",
        }
    }
}

/// Where a command's keys are, in Redis's legacy (first, last, step) form plus an
/// optional finder for commands whose keys move.
#[derive(Debug, Clone, Copy)]
pub struct KeySpec {
    /// Index of the first key (0 = no keys).
    pub first: i32,
    /// Index of the last key; negative counts from the end.
    pub last: i32,
    /// Distance between keys.
    pub step: i32,
    /// For commands with movable keys: finds them in the actual arguments.
    pub find: Option<KeyFinder>,
}

/// One command (or subcommand) of the table.
#[derive(Debug, Clone, Copy)]
pub struct CommandSpec {
    /// Lower-case name (for subcommands: the subcommand alone, e.g. `encoding`).
    pub name: &'static str,
    /// Redis arity: exact argument count when positive, minimum when negative.
    pub arity: i32,
    /// [`flags`] bits.
    pub flags: u64,
    /// Key positions.
    pub keys: KeySpec,
    /// Whether the command locks the whole keyspace (`KEYS`, `FLUSHDB`, …).
    pub whole_keyspace: bool,
    /// Group, for ACL categories and `COMMAND DOCS`.
    pub group: Group,
    /// One-line summary for `COMMAND DOCS`.
    pub summary: &'static str,
    /// The Redis version that introduced the command.
    pub since: &'static str,
    /// The handler (containers with subcommands have one that is never called).
    pub handler: Handler,
    /// Subcommands, for container commands (`CLIENT`, `CONFIG`, `OBJECT`, …).
    pub subcommands: &'static [CommandSpec],
    /// Key specifications as `COMMAND INFO` reports them: how each group of keys is
    /// found and how the command uses it.
    pub key_specs: &'static [KeySpecDoc],
    /// Command tips (`nondeterministic_output`, `request_policy:…`).
    pub tips: &'static [&'static str],
    /// A pure container (`CLIENT`, `CONFIG`, `OBJECT`): only its subcommands run.
    pub container: bool,
    /// ACL categories that replace the group's own (`SORT` is in `@set`, `@sortedset`
    /// and `@list`); empty for the group's category.
    pub categories: &'static [&'static str],
}

/// Where the search for a group of keys begins.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BeginSearch {
    /// At a fixed argument index.
    Index(i32),
    /// After a keyword, searched from `startfrom` (negative: from the end).
    Keyword(&'static str, i32),
    /// Not known from the arguments alone.
    Unknown,
}

/// How the keys are found once the search began.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FindKeys {
    /// A range: the last key relative to the begin (negative: from the end), the step,
    /// and a limit divisor.
    Range {
        /// Last key index, relative.
        lastkey: i32,
        /// Step between keys.
        keystep: i32,
        /// Limit divisor (0: no limit).
        limit: i32,
    },
    /// A count of keys in an argument, then the keys.
    Keynum {
        /// Index of the count, relative to the begin.
        keynumidx: i32,
        /// First key, relative to the begin.
        firstkey: i32,
        /// Step between keys.
        keystep: i32,
    },
    /// Not known from the arguments alone.
    Unknown,
}

/// One key specification of a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeySpecDoc {
    /// Notes shown with the spec (empty: none).
    pub notes: &'static str,
    /// Flags: access (`RO`, `RW`, `OW`, `RM`) and usage (`access`, `update`, `insert`,
    /// `delete`, …).
    pub flags: &'static [&'static str],
    /// Where the search begins.
    pub begin: BeginSearch,
    /// How the keys are found.
    pub find: FindKeys,
}

impl KeySpecDoc {
    /// A spec for keys at `index` up to `lastkey` (relative) with `keystep`.
    pub const fn range(
        flags: &'static [&'static str],
        index: i32,
        lastkey: i32,
        keystep: i32,
        limit: i32,
    ) -> KeySpecDoc {
        KeySpecDoc {
            notes: "",
            flags,
            begin: BeginSearch::Index(index),
            find: FindKeys::Range {
                lastkey,
                keystep,
                limit,
            },
        }
    }

    /// A spec for `numkeys`-style keys: the count at `index + keynumidx`.
    pub const fn keynum(
        flags: &'static [&'static str],
        index: i32,
        keynumidx: i32,
        firstkey: i32,
        keystep: i32,
    ) -> KeySpecDoc {
        KeySpecDoc {
            notes: "",
            flags,
            begin: BeginSearch::Index(index),
            find: FindKeys::Keynum {
                keynumidx,
                firstkey,
                keystep,
            },
        }
    }

    /// A spec for the key right after `keyword`, searched forward from `startfrom`
    /// (`GEORADIUS … STORE key`).
    pub const fn after_keyword(
        flags: &'static [&'static str],
        keyword: &'static str,
        startfrom: i32,
    ) -> KeySpecDoc {
        KeySpecDoc {
            notes: "",
            flags,
            begin: BeginSearch::Keyword(keyword, startfrom),
            find: FindKeys::Range {
                lastkey: 0,
                keystep: 1,
                limit: 0,
            },
        }
    }

    /// The same spec with notes.
    pub const fn with_notes(mut self, notes: &'static str) -> KeySpecDoc {
        self.notes = notes;
        self
    }
}

fn container_handler(_: &mut Ctx<'_>, _: &[Vec<u8>]) -> OpResult<Reply> {
    Err(crate::error::OpError::Syntax)
}

impl CommandSpec {
    /// A command with no keys; refine it with the builder methods.
    pub const fn new(
        name: &'static str,
        arity: i32,
        flags: u64,
        group: Group,
        handler: Handler,
    ) -> Self {
        CommandSpec {
            name,
            arity,
            flags,
            keys: KeySpec {
                first: 0,
                last: 0,
                step: 0,
                find: None,
            },
            whole_keyspace: false,
            group,
            summary: "",
            since: "1.0.0",
            handler,
            subcommands: &[],
            key_specs: &[],
            tips: &[],
            categories: &[],
            container: false,
        }
    }

    /// A container command whose work is done by its subcommands.
    pub const fn container(
        name: &'static str,
        group: Group,
        subcommands: &'static [CommandSpec],
    ) -> Self {
        let mut c = CommandSpec::new(name, -2, 0, group, container_handler);
        c.subcommands = subcommands;
        c.container = true;
        c
    }

    /// Sets the key specifications `COMMAND INFO` reports.
    pub const fn key_specs(mut self, specs: &'static [KeySpecDoc]) -> Self {
        self.key_specs = specs;
        self
    }

    /// Sets the command tips.
    pub const fn tips(mut self, tips: &'static [&'static str]) -> Self {
        self.tips = tips;
        self
    }

    /// Replaces the group's ACL category with these (without the `@`).
    pub const fn categories(mut self, categories: &'static [&'static str]) -> Self {
        self.categories = categories;
        self
    }

    /// Attaches subcommands to a command that also runs on its own (`COMMAND`).
    pub const fn with_subcommands(mut self, subcommands: &'static [CommandSpec]) -> Self {
        self.subcommands = subcommands;
        self
    }

    /// Sets the legacy key range.
    pub const fn keys(mut self, first: i32, last: i32, step: i32) -> Self {
        self.keys.first = first;
        self.keys.last = last;
        self.keys.step = step;
        self
    }

    /// Declares movable keys, found by `find` (the legacy range stays as set).
    pub const fn movable(mut self, find: KeyFinder) -> Self {
        self.keys.find = Some(find);
        self.flags |= flags::MOVABLE_KEYS;
        self
    }

    /// Declares that the command locks the whole keyspace.
    pub const fn whole_keyspace(mut self) -> Self {
        self.whole_keyspace = true;
        self
    }

    /// Sets the summary and the version that introduced the command.
    pub const fn doc(mut self, summary: &'static str, since: &'static str) -> Self {
        self.summary = summary;
        self.since = since;
        self
    }

    /// Whether this is a pure container whose work is done by its subcommands.
    pub fn handler_is_container(&self) -> bool {
        self.container
    }

    /// Whether the command has this flag.
    pub const fn has(&self, flag: u64) -> bool {
        self.flags & flag != 0
    }
}

/// A subcommand's spec, full name (`container|sub`) and counter slot.
type SubEntry = (&'static CommandSpec, &'static str, usize);

/// The whole command table, built once: lookups by name, and a counter slot for every
/// command and subcommand.
pub struct CommandTable {
    by_name: HashMap<&'static [u8], (&'static CommandSpec, usize), ahash::RandomState>,
    subs: HashMap<(usize, &'static [u8]), SubEntry, ahash::RandomState>,
    ordered: Vec<&'static CommandSpec>,
    full_names: Vec<&'static str>,
}

impl CommandTable {
    /// The top-level command with this lower-case name, and its counter slot.
    pub fn lookup(&self, lower_name: &[u8]) -> Option<(&'static CommandSpec, usize)> {
        self.by_name.get(lower_name).copied()
    }

    /// A subcommand of `container` by lower-case name: spec, full name, counter slot.
    pub fn lookup_sub(
        &self,
        container: &'static CommandSpec,
        lower_sub: &[u8],
    ) -> Option<(&'static CommandSpec, &'static str, usize)> {
        self.subs
            .get(&(container as *const CommandSpec as usize, lower_sub))
            .copied()
    }

    /// The top-level command with this name (any case).
    pub fn get(&self, name: &[u8]) -> Option<&'static CommandSpec> {
        self.lookup(&name.to_ascii_lowercase()).map(|(s, _)| s)
    }

    /// Every top-level command, in table order.
    pub fn all(&self) -> &[&'static CommandSpec] {
        &self.ordered
    }

    /// Number of counter slots (commands plus subcommands).
    pub fn stat_slots(&self) -> usize {
        self.full_names.len()
    }

    /// The full name (`container|sub` for subcommands) of a counter slot.
    pub fn full_name(&self, slot: usize) -> &'static str {
        self.full_names[slot]
    }

    /// The full name of a subcommand of `container`.
    pub fn sub_full_name(
        &self,
        container: &'static CommandSpec,
        sub: &'static CommandSpec,
    ) -> &'static str {
        self.lookup_sub(container, sub.name.as_bytes())
            .map_or(sub.name, |(_, n, _)| n)
    }
}

/// The families whose `const` slices make up the table.
fn families() -> Vec<&'static [CommandSpec]> {
    use crate::command::handlers::*;
    vec![
        strings::COMMANDS,
        hll::COMMANDS,
        geo::COMMANDS,
        keys::COMMANDS,
        dump::COMMANDS,
        hashes::COMMANDS,
        lists::COMMANDS,
        sets::COMMANDS,
        zsets::COMMANDS,
        streams::COMMANDS,
        connection::COMMANDS,
        transactions::COMMANDS,
        server::COMMANDS,
        lolwut::COMMANDS,
        persistence::COMMANDS,
        prefix::COMMANDS,
        attend::COMMANDS,
        search::COMMANDS,
        search::suggest::COMMANDS,
        vsets::COMMANDS,
        ai::COMMANDS,
        json::COMMANDS,
        acl::COMMANDS,
        pubsub::COMMANDS,
        scripting::COMMANDS,
        debug::COMMANDS,
        cluster::COMMANDS,
    ]
}

/// The global command table.
pub fn table() -> &'static CommandTable {
    static TABLE: OnceLock<CommandTable> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut by_name = HashMap::with_hasher(ahash::RandomState::new());
        let mut subs = HashMap::with_hasher(ahash::RandomState::new());
        let mut ordered = Vec::new();
        let mut full_names: Vec<&'static str> = Vec::new();
        for family in families() {
            for spec in family {
                by_name.insert(spec.name.as_bytes(), (spec, full_names.len()));
                full_names.push(spec.name);
                ordered.push(spec);
                for sub in spec.subcommands {
                    // Built once for the life of the process: leaking gives 'static names.
                    let full: &'static str =
                        Box::leak(format!("{}|{}", spec.name, sub.name).into_boxed_str());
                    subs.insert(
                        (spec as *const CommandSpec as usize, sub.name.as_bytes()),
                        (sub, full, full_names.len()),
                    );
                    full_names.push(full);
                }
            }
        }
        let table = CommandTable {
            by_name,
            subs,
            ordered,
            full_names,
        };
        crate::clients::register_command_names(table.full_names.clone());
        crate::acl::catalog::register(introspect::acl_catalog(&table));
        table
    })
}

#[cfg(test)]
mod tests;
