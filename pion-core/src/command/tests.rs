//! Invariants of the command table, checked by iterating it.

use super::{flags, table, CommandSpec};
use std::collections::HashSet;

fn every() -> Vec<(&'static CommandSpec, String)> {
    let mut out = Vec::new();
    for spec in table().all() {
        out.push((*spec, spec.name.to_string()));
        for sub in spec.subcommands {
            out.push((sub, format!("{}|{}", spec.name, sub.name)));
        }
    }
    out
}

#[test]
fn names_are_unique_and_lower_case() {
    let mut seen = HashSet::new();
    for (spec, full) in every() {
        assert!(seen.insert(full.clone()), "duplicate command {full}");
        assert_eq!(
            spec.name,
            spec.name.to_ascii_lowercase(),
            "{full} must be lower-case"
        );
    }
}

#[test]
fn key_specs_fit_arity() {
    for (spec, full) in every() {
        let k = spec.keys;
        // `JSON.DEBUG MEMORY key` registers arity -1 with its key at 2, as RedisJSON
        // does: the handler counts its own arguments.
        if k.first > 0 && full != "json.debug" {
            let min_args = spec.arity.unsigned_abs() as i32;
            assert!(k.first < min_args.max(2), "{full}: first key beyond arity");
            assert!(k.step >= 1, "{full}: key step must be positive");
        }
        assert!(
            !(spec.has(flags::WRITE) && spec.has(flags::READONLY)),
            "{full}: write and readonly"
        );
    }
}

#[test]
fn every_command_is_documented() {
    for (spec, full) in every() {
        assert!(!spec.summary.is_empty(), "{full} has no summary");
    }
}
