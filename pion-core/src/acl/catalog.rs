//! The commands ACL rules are written against: every command and subcommand by its
//! counter slot in the command table, with its full name and ACL categories. Built once
//! from the table, so a rule never names a command the table does not have.

use std::sync::OnceLock;

use crate::command::introspect::{self, CATEGORIES};
use crate::command::{table, CommandSpec};

/// One command or subcommand.
pub struct Entry {
    /// Its spec.
    pub spec: &'static CommandSpec,
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
}

impl Catalog {
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
        let lower = name.to_ascii_lowercase();
        let t = table();
        match lower.split_once('|') {
            None => t.lookup(lower.as_bytes()).map(|(_, slot)| slot),
            Some((cmd, sub)) => {
                let (container, _) = t.lookup(cmd.as_bytes())?;
                t.lookup_sub(container, sub.as_bytes())
                    .map(|(_, _, slot)| slot)
            }
        }
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

fn category_bits(spec: &CommandSpec) -> u32 {
    introspect::categories(spec)
        .iter()
        .filter_map(|c| category_bit(c))
        .fold(0, |a, b| a | b)
}

/// The catalogue, built on first use.
pub fn catalog() -> &'static Catalog {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    CATALOG.get_or_init(|| {
        let t = table();
        let mut entries: Vec<Option<Entry>> = (0..t.stat_slots()).map(|_| None).collect();
        let mut top = Vec::new();
        for spec in t.all() {
            let Some((_, slot)) = t.lookup(spec.name.as_bytes()) else {
                continue;
            };
            top.push(slot);
            let mut subs = Vec::new();
            for sub in spec.subcommands {
                if let Some((sub_spec, full, sub_slot)) = t.lookup_sub(spec, sub.name.as_bytes()) {
                    subs.push(sub_slot);
                    entries[sub_slot] = Some(Entry {
                        spec: sub_spec,
                        name: full,
                        parent: Some(slot),
                        subs: Vec::new(),
                        cats: category_bits(sub_spec),
                    });
                }
            }
            entries[slot] = Some(Entry {
                spec,
                name: spec.name,
                parent: None,
                subs,
                cats: category_bits(spec),
            });
        }
        Catalog { entries, top }
    })
}
