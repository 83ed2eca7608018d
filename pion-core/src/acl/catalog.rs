//! The commands ACL rules are written against: every command and subcommand by its
//! counter slot in the command table, with its full name and ACL categories. The
//! command table registers it once, when it is built
//! ([`command::table`](crate::command::table)), so a rule never names a command the
//! table does not have.

use std::collections::HashMap;
use std::sync::OnceLock;

/// ACL categories in Redis's bit order, which is the order `COMMAND INFO` lists them.
pub const CATEGORIES: &[&str] = &[
    "keyspace",
    "read",
    "write",
    "set",
    "sortedset",
    "list",
    "hash",
    "string",
    "bitmap",
    "hyperloglog",
    "geo",
    "stream",
    "pubsub",
    "admin",
    "fast",
    "slow",
    "blocking",
    "dangerous",
    "connection",
    "transaction",
    "scripting",
];

/// One command or subcommand.
pub struct Entry {
    /// Full lower-case name (`config|get` for subcommands).
    pub name: &'static str,
    /// The container's slot, for subcommands.
    pub parent: Option<usize>,
    /// Slots of its subcommands.
    pub subs: Vec<usize>,
    /// Category bits (bit `i` is `CATEGORIES[i]`).
    pub cats: u32,
}

/// Every command by slot, and the top-level ones in table order.
pub struct Catalog {
    entries: Vec<Option<Entry>>,
    top: Vec<usize>,
    by_name: HashMap<&'static str, usize>,
}

impl Catalog {
    /// A catalogue of `entries` by slot, `top` listing the top-level commands.
    pub fn new(entries: Vec<Option<Entry>>, top: Vec<usize>) -> Catalog {
        let by_name = entries
            .iter()
            .enumerate()
            .filter_map(|(slot, e)| e.as_ref().map(|e| (e.name, slot)))
            .collect();
        Catalog {
            entries,
            top,
            by_name,
        }
    }

    /// The number of slots (a bit set over commands needs this many bits).
    pub fn slots(&self) -> usize {
        self.entries.len()
    }

    /// The entry of a slot.
    pub fn entry(&self, slot: usize) -> Option<&Entry> {
        self.entries.get(slot).and_then(Option::as_ref)
    }

    /// Top-level command slots in table order.
    pub fn top(&self) -> &[usize] {
        &self.top
    }

    /// The slot of a command (`get`) or subcommand (`config|get`), any case.
    pub fn find(&self, name: &str) -> Option<usize> {
        self.by_name
            .get(name.to_ascii_lowercase().as_str())
            .copied()
    }

    /// Slots of every command and subcommand in a category, table order.
    pub fn in_category(&self, bit: u32) -> impl Iterator<Item = usize> + '_ {
        self.entries
            .iter()
            .enumerate()
            .filter(move |(_, e)| e.as_ref().is_some_and(|e| e.cats & bit != 0))
            .map(|(slot, _)| slot)
    }
}

/// The bit of a category name (without `@`, any case).
pub fn category_bit(name: &str) -> Option<u32> {
    CATEGORIES
        .iter()
        .position(|c| c.eq_ignore_ascii_case(name))
        .map(|i| 1 << i)
}

static CATALOG: OnceLock<Catalog> = OnceLock::new();

/// Registers the catalogue (called once, by the command table as it is built).
pub fn register(catalog: Catalog) {
    let _ = CATALOG.set(catalog);
}

/// The catalogue. The engine builds the command table before anything reads rules,
/// so it is registered; were it not, no command would be known (an empty catalogue).
pub fn catalog() -> &'static Catalog {
    static EMPTY: OnceLock<Catalog> = OnceLock::new();
    CATALOG
        .get()
        .unwrap_or_else(|| EMPTY.get_or_init(|| Catalog::new(Vec::new(), Vec::new())))
}
