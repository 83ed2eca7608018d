//! From a command's name to its entry in the command table: the (sub)command, its
//! arity checked, and the positions of its keys. Every command passes here first, so
//! the last name resolved is kept per thread (a pipeline mostly repeats one).

use super::{table, CommandSpec};
use crate::error::{OpError, OpResult};
use crate::keyspace::{shard_of, LockSet};
use smallvec::SmallVec;

/// Argument positions of a command's keys (inline for the usual handful).
pub type KeyPositions = SmallVec<[usize; 4]>;

/// A command found in the table.
#[derive(Debug, Clone, Copy)]
pub struct Resolved {
    /// The (sub)command.
    pub spec: &'static CommandSpec,
    /// Full name, `container|sub` for subcommands.
    pub full_name: &'static str,
    /// Index into the engine's per-command counters.
    pub stat: usize,
}

/// Lower-cases a command name into a small buffer without allocating.
pub(super) fn lower<'b>(name: &[u8], buf: &'b mut [u8; 64]) -> Option<&'b [u8]> {
    if name.len() > buf.len() {
        return None;
    }
    for (d, s) in buf.iter_mut().zip(name) {
        *d = s.to_ascii_lowercase();
    }
    Some(&buf[..name.len()])
}

fn check_arity(spec: &CommandSpec, full_name: &str, argc: usize) -> OpResult<()> {
    let arity = spec.arity;
    let ok = if arity >= 0 {
        argc == arity as usize
    } else {
        argc >= arity.unsigned_abs() as usize
    };
    if ok {
        Ok(())
    } else {
        Err(OpError::WrongArity(full_name.to_string()))
    }
}

/// The longest command name the per-thread memo of the last command keeps.
const MEMO_NAME: usize = 24;

/// A command name exactly as sent (its case included), and what it named.
type ResolvedMemo = ([u8; MEMO_NAME], usize, &'static CommandSpec, usize);

thread_local! {
    /// The last command without subcommands that this thread looked up: a pipeline
    /// mostly repeats one, which then costs a byte comparison instead of a
    /// lower-casing and a table lookup.
    static LAST_RESOLVED: std::cell::Cell<Option<ResolvedMemo>> =
        const { std::cell::Cell::new(None) };
}

/// The spec and counter slot of `name` when it is the memo's.
fn last_resolved(name: &[u8]) -> Option<(&'static CommandSpec, usize)> {
    let (bytes, len, spec, stat) = LAST_RESOLVED.get()?;
    (len == name.len() && bytes[..len] == *name).then_some((spec, stat))
}

/// Makes `name` the memo's command.
fn remember_resolved(name: &[u8], spec: &'static CommandSpec, stat: usize) {
    if name.len() <= MEMO_NAME {
        let mut bytes = [0u8; MEMO_NAME];
        bytes[..name.len()].copy_from_slice(name);
        LAST_RESOLVED.set(Some((bytes, name.len(), spec, stat)));
    }
}

/// Finds the command for `argv` and checks its arity.
pub fn resolve(argv: &[Vec<u8>]) -> OpResult<Resolved> {
    let name = argv
        .first()
        .ok_or_else(|| OpError::custom("ERR empty command"))?;
    let unknown = || OpError::UnknownCommand {
        name: name.clone(),
        args: argv[1..].to_vec(),
    };
    if let Some((spec, stat)) = last_resolved(name) {
        check_arity(spec, spec.name, argv.len())?;
        return Ok(Resolved {
            spec,
            full_name: spec.name,
            stat,
        });
    }
    let mut buf = [0u8; 64];
    let lname = lower(name, &mut buf).ok_or_else(unknown)?;
    let t = table();
    let (spec, stat) = t.lookup(lname).ok_or_else(unknown)?;
    if spec.subcommands.is_empty() {
        remember_resolved(name, spec, stat);
        check_arity(spec, spec.name, argv.len())?;
        return Ok(Resolved {
            spec,
            full_name: spec.name,
            stat,
        });
    }
    let Some(sub) = argv.get(1) else {
        // A container that also runs alone (`COMMAND`) accepts no subcommand.
        if spec.arity == -1 {
            return Ok(Resolved {
                spec,
                full_name: spec.name,
                stat,
            });
        }
        return Err(OpError::WrongArity(spec.name.to_string()));
    };
    let mut subbuf = [0u8; 64];
    let found = lower(sub, &mut subbuf).and_then(|s| t.lookup_sub(spec, s));
    let Some((sub_spec, full_name, stat)) = found else {
        return Err(OpError::UnknownSubcommand {
            sub: sub.clone(),
            command: spec.name.to_ascii_uppercase(),
        });
    };
    check_arity(sub_spec, full_name, argv.len())?;
    Ok(Resolved {
        spec: sub_spec,
        full_name,
        stat,
    })
}

/// The argument positions of a command's keys.
pub fn key_indices(spec: &CommandSpec, argv: &[Vec<u8>]) -> OpResult<KeyPositions> {
    if let Some(find) = spec.keys.find {
        return find(argv).map(SmallVec::from_vec);
    }
    let k = spec.keys;
    if k.first <= 0 {
        return Ok(KeyPositions::new());
    }
    let argc = argv.len() as i32;
    let last = if k.last < 0 { argc + k.last } else { k.last };
    let step = k.step.max(1);
    let mut out = KeyPositions::new();
    let mut i = k.first;
    while i <= last && i < argc {
        out.push(i as usize);
        i += step;
    }
    Ok(out)
}

/// The shards a command must lock for these arguments.
pub fn lock_set_for(spec: &CommandSpec, argv: &[Vec<u8>], keys: &[usize]) -> LockSet {
    if spec.whole_keyspace {
        LockSet::All
    } else if keys.is_empty() {
        LockSet::None
    } else if let &[i] = keys {
        LockSet::Shard(shard_of(&argv[i]))
    } else {
        LockSet::Keys(keys.iter().map(|&i| shard_of(&argv[i])).collect())
    }
}

/// Whether `argv` names the command that runs a transaction (`EXEC`).
pub(super) fn is_exec(argv: &[Vec<u8>]) -> bool {
    let mut buf = [0u8; 64];
    argv.first()
        .and_then(|name| lower(name, &mut buf))
        .and_then(|n| table().lookup(n))
        .is_some_and(|(spec, _)| spec_is_exec(spec))
}

/// Whether a command is `EXEC` (the one exclusive transaction-control command).
pub(super) fn spec_is_exec(spec: &CommandSpec) -> bool {
    spec.has(super::flags::EXCLUSIVE) && spec.has(super::flags::TX_CONTROL)
}

/// The counter slot of a top-level command name, for rejected calls.
pub(super) fn table_stat_for_name(argv: &[Vec<u8>]) -> Result<usize, ()> {
    let mut buf = [0u8; 64];
    let name = argv.first().ok_or(())?;
    let lname = lower(name, &mut buf).ok_or(())?;
    table().lookup(lname).map(|(_, stat)| stat).ok_or(())
}
