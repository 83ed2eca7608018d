//! `COMMAND` and its subcommands, answered from the command table itself.

use super::flags::{self, *};
use super::{resolve, table, BeginSearch, CommandSpec, FindKeys, Group};
use crate::command::ctx::Ctx;
use crate::command::handlers::util::{is_kw, text};
use crate::error::{OpError, OpResult};
use crate::reply::Reply;
use crate::util::glob::glob_match;

/// `COMMAND`'s subcommands.
pub static SUBCOMMANDS: &[CommandSpec] = &[
    CommandSpec::new("count", 2, LOADING | STALE, Group::Connection, count)
        .doc("Returns a count of commands.", "2.8.13"),
    CommandSpec::new("info", -2, LOADING | STALE, Group::Connection, info)
        .tips(&["nondeterministic_output_order"])
        .doc(
            "Returns information about one, multiple or all commands.",
            "2.8.13",
        ),
    CommandSpec::new("docs", -2, LOADING | STALE, Group::Connection, docs)
        .tips(&["nondeterministic_output_order"])
        .doc(
            "Returns documentary information about one, multiple or all commands.",
            "7.0.0",
        ),
    CommandSpec::new("list", -2, LOADING | STALE, Group::Connection, list)
        .tips(&["nondeterministic_output_order"])
        .doc("Returns a list of command names.", "7.0.0"),
    CommandSpec::new("getkeys", -4, LOADING | STALE, Group::Connection, getkeys).doc(
        "Extracts the key names from an arbitrary command.",
        "2.8.13",
    ),
    CommandSpec::new(
        "getkeysandflags",
        -4,
        LOADING | STALE,
        Group::Connection,
        getkeysandflags,
    )
    .doc(
        "Extracts the key names and access flags for an arbitrary command.",
        "7.0.0",
    ),
    CommandSpec::new("help", 2, LOADING | STALE, Group::Connection, help).doc(
        "Returns helpful text about the different subcommands.",
        "5.0.0",
    ),
];

pub use crate::acl::catalog::CATEGORIES;
use crate::acl::catalog::{category_bit, Catalog, Entry};

/// The ACL categories of a command, derived from its flags and group.
pub fn categories(spec: &CommandSpec) -> Vec<&'static str> {
    let mut on = [false; 21];
    let idx = |name: &str| CATEGORIES.iter().position(|c| *c == name).unwrap_or(0);
    if !spec.subcommands.is_empty() && spec.handler_is_container() {
        // A pure container is only `@slow`; its subcommands carry the real categories.
        return vec!["slow"];
    }
    if matches!(spec.group, Group::VectorSet | Group::Json) {
        // Module commands that declare no category (as Redis 8's vector sets and
        // RedisJSON 2.8).
        return Vec::new();
    }
    for extra in spec.categories {
        on[idx(extra)] = true;
    }
    match spec.group {
        _ if !spec.categories.is_empty() => {}
        Group::Keyspace => on[idx("keyspace")] = true,
        Group::String => on[idx("string")] = true,
        Group::Bitmap => on[idx("bitmap")] = true,
        Group::HyperLogLog => on[idx("hyperloglog")] = true,
        Group::Geo => on[idx("geo")] = true,
        Group::Stream => on[idx("stream")] = true,
        Group::Hash => on[idx("hash")] = true,
        Group::List => on[idx("list")] = true,
        Group::Set => on[idx("set")] = true,
        Group::SortedSet => on[idx("sortedset")] = true,
        Group::Connection => on[idx("connection")] = true,
        Group::Transaction => on[idx("transaction")] = true,
        Group::Scripting => on[idx("scripting")] = true,
        Group::PubSub | Group::Cluster => {}
        Group::Server
        | Group::PrefixCache
        | Group::Search
        | Group::VectorSet
        | Group::Json
        | Group::Ai => {}
    }
    let rules: &[(u64, &str)] = &[
        (flags::KEYSPACE, "keyspace"),
        (WRITE, "write"),
        (READONLY, "read"),
        (ADMIN, "admin"),
        (ADMIN, "dangerous"),
        (DANGEROUS, "dangerous"),
        (PUBSUB, "pubsub"),
        (FAST, "fast"),
        (BLOCKING, "blocking"),
    ];
    for (flag, cat) in rules {
        if spec.has(*flag) {
            on[idx(cat)] = true;
        }
    }
    if !spec.has(FAST) {
        on[idx("slow")] = true;
    }
    CATEGORIES
        .iter()
        .zip(on)
        .filter(|(_, on)| *on)
        .map(|(c, _)| *c)
        .collect()
}

fn flag_names(spec: &CommandSpec) -> Vec<Reply> {
    flags::NAMES
        .iter()
        .filter(|(f, _)| spec.has(*f))
        .map(|(_, n)| Reply::status(n))
        .collect()
}

fn key_specs(spec: &CommandSpec) -> Vec<Reply> {
    let s = |t: &'static str| Reply::bulk(t);
    let int = |n: i32| Reply::Integer(i64::from(n));
    spec.key_specs
        .iter()
        .map(|k| {
            let mut fields = Vec::new();
            if !k.notes.is_empty() {
                fields.push((s("notes"), s(k.notes)));
            }
            fields.push((
                s("flags"),
                Reply::Set(k.flags.iter().map(|f| Reply::status(f)).collect()),
            ));
            let begin = match k.begin {
                BeginSearch::Index(i) => Reply::Map(vec![
                    (s("type"), s("index")),
                    (s("spec"), Reply::Map(vec![(s("index"), int(i))])),
                ]),
                BeginSearch::Keyword(kw, from) => Reply::Map(vec![
                    (s("type"), s("keyword")),
                    (
                        s("spec"),
                        Reply::Map(vec![(s("keyword"), s(kw)), (s("startfrom"), int(from))]),
                    ),
                ]),
                BeginSearch::Unknown => Reply::Map(vec![
                    (s("type"), s("unknown")),
                    (s("spec"), Reply::Map(vec![])),
                ]),
            };
            fields.push((s("begin_search"), begin));
            let find = match k.find {
                FindKeys::Range {
                    lastkey,
                    keystep,
                    limit,
                } => Reply::Map(vec![
                    (s("type"), s("range")),
                    (
                        s("spec"),
                        Reply::Map(vec![
                            (s("lastkey"), int(lastkey)),
                            (s("keystep"), int(keystep)),
                            (s("limit"), int(limit)),
                        ]),
                    ),
                ]),
                FindKeys::Keynum {
                    keynumidx,
                    firstkey,
                    keystep,
                } => Reply::Map(vec![
                    (s("type"), s("keynum")),
                    (
                        s("spec"),
                        Reply::Map(vec![
                            (s("keynumidx"), int(keynumidx)),
                            (s("firstkey"), int(firstkey)),
                            (s("keystep"), int(keystep)),
                        ]),
                    ),
                ]),
                FindKeys::Unknown => Reply::Map(vec![
                    (s("type"), s("unknown")),
                    (s("spec"), Reply::Map(vec![])),
                ]),
            };
            fields.push((s("find_keys"), find));
            Reply::Map(fields)
        })
        .collect()
}

/// The `COMMAND INFO` entry of a command (subcommands nested).
pub fn command_info(
    spec: &'static CommandSpec,
    full_name: &str,
    container: Option<&'static CommandSpec>,
) -> Reply {
    let subs = spec
        .subcommands
        .iter()
        .map(|sub| command_info(sub, table().sub_full_name(spec, sub), Some(spec)))
        .collect();
    let _ = container;
    // Module commands (vector sets) are reported under their registered, upper-case name.
    let name = if spec.group == Group::VectorSet {
        full_name.to_ascii_uppercase()
    } else {
        full_name.to_string()
    };
    Reply::Array(vec![
        Reply::bulk(name),
        Reply::Integer(i64::from(spec.arity)),
        Reply::Set(flag_names(spec)),
        Reply::Integer(i64::from(spec.keys.first)),
        Reply::Integer(i64::from(spec.keys.last)),
        Reply::Integer(i64::from(spec.keys.step)),
        Reply::Set(
            categories(spec)
                .into_iter()
                .map(|c| Reply::status_owned(format!("@{c}")))
                .collect(),
        ),
        Reply::Set(spec.tips.iter().map(Reply::bulk).collect()),
        Reply::Set(key_specs(spec)),
        // As Redis: an empty set when there are none, else an array.
        if spec.subcommands.is_empty() {
            Reply::Set(subs)
        } else {
            Reply::Array(subs)
        },
    ])
}

/// `COMMAND` with no arguments: every command's info.
pub fn command(_: &mut Ctx<'_>, _: &[Vec<u8>]) -> OpResult<Reply> {
    Ok(Reply::Array(
        table()
            .all()
            .iter()
            .map(|s| command_info(s, s.name, None))
            .collect(),
    ))
}

fn count(_: &mut Ctx<'_>, _: &[Vec<u8>]) -> OpResult<Reply> {
    Ok(Reply::Integer(table().all().len() as i64))
}

/// Finds a command or `container|sub` by name.
fn find(name: &[u8]) -> Option<(&'static CommandSpec, &'static str)> {
    let lower = name.to_ascii_lowercase();
    let t = table();
    if let Some(pos) = lower.iter().position(|&c| c == b'|') {
        let (container, _) = t.lookup(&lower[..pos])?;
        let (sub, full, _) = t.lookup_sub(container, &lower[pos + 1..])?;
        return Some((sub, full));
    }
    t.lookup(&lower).map(|(s, _)| (s, s.name))
}

fn info(_: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    if argv.len() == 2 {
        return Ok(Reply::Array(
            table()
                .all()
                .iter()
                .map(|s| command_info(s, s.name, None))
                .collect(),
        ));
    }
    Ok(Reply::Array(
        argv[2..]
            .iter()
            .map(|name| match find(name) {
                Some((spec, full)) => command_info(spec, full, None),
                None => Reply::Null,
            })
            .collect(),
    ))
}

fn doc_entry(spec: &'static CommandSpec) -> Reply {
    let s = |t: &'static str| Reply::bulk(t);
    let mut fields = vec![
        (s("summary"), s(spec.summary)),
        (s("since"), s(spec.since)),
        (s("group"), s(spec.group.doc_name())),
    ];
    if !spec.subcommands.is_empty() {
        fields.push((
            s("subcommands"),
            Reply::Map(
                spec.subcommands
                    .iter()
                    .map(|sub| {
                        (
                            Reply::bulk(table().sub_full_name(spec, sub)),
                            doc_entry(sub),
                        )
                    })
                    .collect(),
            ),
        ));
    }
    Reply::Map(fields)
}

fn docs(_: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let entries: Vec<(Reply, Reply)> = if argv.len() == 2 {
        table()
            .all()
            .iter()
            .map(|s| (Reply::bulk(s.name), doc_entry(s)))
            .collect()
    } else {
        argv[2..]
            .iter()
            .filter_map(|name| find(name).map(|(spec, full)| (Reply::bulk(full), doc_entry(spec))))
            .collect()
    };
    Ok(Reply::Map(entries))
}

fn list(_: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let mut names: Vec<(&'static CommandSpec, &'static str)> = Vec::new();
    for spec in table().all() {
        names.push((spec, spec.name));
        for sub in spec.subcommands {
            names.push((sub, table().sub_full_name(spec, sub)));
        }
    }
    match argv.len() {
        2 => {}
        5 if is_kw(&argv[2], "filterby") => {
            let (kind, value) = (&argv[3], &argv[4]);
            if is_kw(kind, "module") {
                names.clear();
            } else if is_kw(kind, "aclcat") {
                let cat = text(value).to_ascii_lowercase();
                names.retain(|(s, _)| categories(s).contains(&cat.as_str()));
            } else if is_kw(kind, "pattern") {
                names.retain(|(_, n)| glob_match(value, n.as_bytes(), true));
            } else {
                return Err(OpError::Syntax);
            }
        }
        _ => return Err(OpError::Syntax),
    }
    Ok(Reply::Array(
        names.into_iter().map(|(_, n)| Reply::bulk(n)).collect(),
    ))
}

fn getkeys(_: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let args = &argv[2..];
    Ok(Reply::Array(
        keys_with_flags(args)?
            .into_iter()
            .map(|(i, _)| Reply::bulk(&args[i]))
            .collect(),
    ))
}

/// `COMMAND GETKEYSANDFLAGS`: each key with the flags of the key specification that
/// found it.
fn getkeysandflags(_: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let args = &argv[2..];
    Ok(Reply::Array(
        keys_with_flags(args)?
            .into_iter()
            .map(|(i, flags)| {
                Reply::Array(vec![
                    Reply::bulk(&args[i]),
                    Reply::Set(flags.iter().map(|f| Reply::status(f)).collect()),
                ])
            })
            .collect(),
    ))
}

/// Key flags as a key specification lists them.
type KeyFlags = &'static [&'static str];

/// The keys of the command `args` spells, with their flags, after Redis's checks in
/// its order: unknown command, no keys at all, arity, then the keys of these
/// particular arguments.
fn keys_with_flags(args: &[Vec<u8>]) -> OpResult<Vec<(usize, KeyFlags)>> {
    let spec =
        lookup_for_getkeys(args).ok_or_else(|| OpError::custom("ERR Invalid command specified"))?;
    if spec.keys.first <= 0 && spec.keys.find.is_none() {
        return Err(OpError::custom("ERR The command has no key arguments"));
    }
    let argc = args.len();
    let arity_ok = if spec.arity >= 0 {
        argc == spec.arity as usize
    } else {
        argc >= spec.arity.unsigned_abs() as usize
    };
    if !arity_ok {
        return Err(OpError::custom(
            "ERR Invalid number of arguments specified for command",
        ));
    }
    // Like Redis: the key specifications first (unless their flags depend on the
    // arguments), the command's own key finder when they cannot answer (an unknown
    // spec, or arguments they cannot place).
    let variable = spec
        .key_specs
        .iter()
        .any(|k| k.flags.contains(&"variable_flags"));
    // A spec marked incomplete cannot be trusted to find every key (MIGRATE's KEYS):
    // the command's own finder answers, as in Redis.
    let incomplete = spec
        .key_specs
        .iter()
        .any(|k| k.flags.contains(&"incomplete"));
    let from_specs = if incomplete {
        None
    } else if variable {
        variable_flag_keys(spec, args)
    } else {
        keys_from_specs(spec, args)
    };
    let keys = match from_specs {
        Some(keys) => keys,
        None => resolve::key_indices(spec, args)
            .map_err(|_| OpError::custom("ERR Invalid arguments specified for command"))?
            .iter()
            .map(|&i| (i, flags_of_found_key(spec, args, i)))
            .collect(),
    };
    if keys.is_empty() && !spec.has(NO_MANDATORY_KEYS) {
        return Err(OpError::custom(
            "ERR Invalid arguments specified for command",
        ));
    }
    Ok(keys)
}

/// The keys of a command whose key flags depend on its arguments, as its own finder
/// reports them: `SET` reads its key only with `GET`, `BITFIELD` writes it only with
/// `SET` or `INCRBY`.
fn variable_flag_keys(spec: &CommandSpec, args: &[Vec<u8>]) -> Option<Vec<(usize, KeyFlags)>> {
    match spec.name {
        "set" => {
            let get = args.iter().skip(3).any(|a| a.eq_ignore_ascii_case(b"get"));
            let flags: KeyFlags = if get {
                &["RW", "access", "update"]
            } else {
                &["OW", "update"]
            };
            Some(vec![(1, flags)])
        }
        "bitfield" => {
            let flags: KeyFlags = if crate::command::handlers::strings::bitfield_writes(args) {
                &["RW", "access", "update"]
            } else {
                &["RO", "access"]
            };
            Some(vec![(1, flags)])
        }
        _ => keys_from_specs(spec, args),
    }
}

/// The flags of a key the command's own finder found: those of the specification
/// that starts at its position (by index or after its keyword), else of the last one
/// whose start is unknown (the trailing keyword's: `SORT … STORE dst` is `OW update`,
/// as Redis's own finder flags it), else of the first.
pub(crate) fn flags_of_found_key(spec: &CommandSpec, args: &[Vec<u8>], pos: usize) -> KeyFlags {
    let specs = spec.key_specs;
    let starts_here = specs.iter().find(|k| match k.begin {
        BeginSearch::Index(i) => usize::try_from(i).is_ok_and(|i| i == pos),
        BeginSearch::Keyword(word, _) => pos
            .checked_sub(1)
            .and_then(|p| args.get(p))
            .is_some_and(|a| a.eq_ignore_ascii_case(word.as_bytes())),
        BeginSearch::Unknown => false,
    });
    starts_here
        .or_else(|| {
            specs
                .iter()
                .rev()
                .find(|k| matches!(k.begin, BeginSearch::Unknown))
        })
        .or(specs.first())
        .map_or(&[], |k| k.flags)
}

/// Key positions read from the key specifications the way Redis's `COMMAND GETKEYS`
/// reads them; `None` when a spec is unknown or does not fit the arguments.
fn keys_from_specs(spec: &CommandSpec, args: &[Vec<u8>]) -> Option<Vec<(usize, KeyFlags)>> {
    if spec.key_specs.is_empty() {
        return None;
    }
    let argc = args.len() as i64;
    let mut keys = Vec::new();
    for ks in spec.key_specs {
        if ks.flags.contains(&"not_key") {
            continue;
        }
        let mut first = match ks.begin {
            BeginSearch::Index(i) => i64::from(i),
            BeginSearch::Keyword(word, from) => {
                let from = i64::from(from);
                let start = if from > 0 { from } else { argc + from };
                let forward = from > 0;
                let mut found = None;
                let mut i = start;
                while i >= 1 && i < argc {
                    if args[i as usize].eq_ignore_ascii_case(word.as_bytes()) {
                        found = Some(i + 1);
                        break;
                    }
                    i += if forward { 1 } else { -1 };
                }
                match found {
                    Some(f) => f,
                    None => continue,
                }
            }
            BeginSearch::Unknown => return None,
        };
        let (last, step) = match ks.find {
            FindKeys::Range {
                lastkey,
                keystep,
                limit,
            } => {
                let (lastkey, limit) = (i64::from(lastkey), i64::from(limit));
                let last = if lastkey >= 0 {
                    first + lastkey
                } else if limit == 0 {
                    argc + lastkey
                } else {
                    first + ((argc - first) / limit + lastkey)
                };
                (last, i64::from(keystep))
            }
            FindKeys::Keynum {
                keynumidx,
                firstkey,
                keystep,
            } => {
                let idx = first + i64::from(keynumidx);
                if idx >= argc {
                    return None;
                }
                let n = crate::util::num::parse_i64(&args[idx as usize]).filter(|&n| n >= 0)?;
                first += i64::from(firstkey);
                (first + n - 1, i64::from(keystep))
            }
            FindKeys::Unknown => return None,
        };
        if last >= argc || last < first || first >= argc || step < 1 {
            return None;
        }
        let mut i = first;
        while i <= last {
            keys.push((i as usize, ks.flags));
            i += step;
        }
    }
    Some(keys)
}

/// The (sub)command `args` names, without checking arity.
fn lookup_for_getkeys(args: &[Vec<u8>]) -> Option<&'static CommandSpec> {
    let t = table();
    let (spec, _) = t.lookup(&args.first()?.to_ascii_lowercase())?;
    if spec.subcommands.is_empty() || args.len() < 2 {
        return Some(spec);
    }
    t.lookup_sub(spec, &args[1].to_ascii_lowercase())
        .map(|(s, _, _)| s)
}

fn help(_: &mut Ctx<'_>, _: &[Vec<u8>]) -> OpResult<Reply> {
    Ok(Reply::Array(
        [
            "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "(no subcommand)",
            "    Return details about all Redis commands.",
            "COUNT",
            "    Return the total number of commands in this Redis server.",
            "LIST",
            "    Return a list of all commands in this Redis server.",
            "INFO [<command-name> ...]",
            "    Return details about multiple Redis commands.",
            "    If no command names are given, documentation details for all",
            "    commands are returned.",
            "DOCS [<command-name> ...]",
            "    Return documentation details about multiple Redis commands.",
            "    If no command names are given, documentation details for all",
            "    commands are returned.",
            "GETKEYS <full-command>",
            "    Return the keys from a full Redis command.",
            "GETKEYSANDFLAGS <full-command>",
            "    Return the keys and the access flags from a full Redis command.",
            "HELP",
            "    Prints this help.",
        ]
        .iter()
        .map(|l| Reply::status(l))
        .collect(),
    ))
}

/// The ACL catalogue of a command table: every command and subcommand by slot, with
/// its full name and category bits.
pub(crate) fn acl_catalog(t: &super::CommandTable) -> Catalog {
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
                    name: full,
                    parent: Some(slot),
                    subs: Vec::new(),
                    cats: category_bits(sub_spec),
                });
            }
        }
        entries[slot] = Some(Entry {
            name: spec.name,
            parent: None,
            subs,
            cats: category_bits(spec),
        });
    }
    Catalog::new(entries, top)
}

fn category_bits(spec: &CommandSpec) -> u32 {
    categories(spec)
        .iter()
        .filter_map(|c| category_bit(c))
        .fold(0, |a, b| a | b)
}
