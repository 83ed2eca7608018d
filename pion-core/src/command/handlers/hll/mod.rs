//! HyperLogLog commands: `PFADD`, `PFCOUNT`, `PFMERGE`, `PFDEBUG` and `PFSELFTEST`.
//!
//! Redis has no HyperLogLog type: a HyperLogLog is a string value in Redis's own
//! representation, so `GET`, `SET`, `DUMP`-like copies and every string command see
//! the same bytes, and a value taken from redis-server counts the same here. The
//! family is split by concern: `sketch` is the representation (header, dense and
//! sparse encodings, conversions, histograms), `estimate` the hash and the
//! cardinality estimator, `commands` the command handlers and `selftest` the
//! `PFSELFTEST` checks. This module holds the command table.

mod commands;
pub mod estimate;
mod selftest;
pub mod sketch;

use crate::command::flags::*;
use crate::command::{CommandSpec, Group, KeySpecDoc};

/// This family's part of the command table.
pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new(
        "pfadd",
        -2,
        WRITE | DENYOOM | FAST,
        Group::HyperLogLog,
        commands::pfadd,
    )
    .key_specs(&[KeySpecDoc::range(&["RW", "insert"], 1, 0, 1, 0)])
    .keys(1, 1, 1)
    .doc(
        "Adds the specified elements to the specified HyperLogLog.",
        "2.8.9",
    ),
    // A read in Redis's table, but one key's estimate is cached in its value, which
    // is then logged (and may replicate, so a write pause holds it).
    CommandSpec::new(
        "pfcount",
        -2,
        READONLY | MAY_REPLICATE | MAY_MODIFY,
        Group::HyperLogLog,
        commands::pfcount,
    )
    .key_specs(&[KeySpecDoc::range(&["RW", "access"], 1, -1, 1, 0).with_notes(
        "RW because it may change the internal representation of the key, and propagate to replicas",
    )])
    .keys(1, -1, 1)
    .doc(
        "Return the approximated cardinality of the set(s) observed by the HyperLogLog at key(s).",
        "2.8.9",
    ),
    CommandSpec::new(
        "pfmerge",
        -2,
        WRITE | DENYOOM,
        Group::HyperLogLog,
        commands::pfmerge,
    )
    .key_specs(&[
        KeySpecDoc::range(&["RW", "access", "insert"], 1, 0, 1, 0),
        KeySpecDoc::range(&["RO", "access"], 2, -1, 1, 0),
    ])
    .keys(1, -1, 1)
    .doc("Merge N different HyperLogLogs into a single one.", "2.8.9"),
    CommandSpec::new(
        "pfdebug",
        3,
        WRITE | DENYOOM | ADMIN,
        Group::HyperLogLog,
        commands::pfdebug,
    )
    .key_specs(&[KeySpecDoc::range(&["RW", "access"], 2, 0, 1, 0)])
    .keys(2, 2, 1)
    .doc("Internal commands for debugging HyperLogLog values", "2.8.9"),
    CommandSpec::new(
        "pfselftest",
        1,
        ADMIN,
        Group::HyperLogLog,
        selftest::pfselftest,
    )
    .doc("An internal command for testing HyperLogLog values", "2.8.9"),
];

#[cfg(test)]
mod tests;
