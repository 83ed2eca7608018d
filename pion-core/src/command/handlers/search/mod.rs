//! RediSearch's `FT.*` commands over hashes: index management here, queries in
//! [`query`], `FT.AGGREGATE` in [`aggregate`] (cursors in [`cursor`]), `FT.HYBRID`
//! in [`hybrid`], `FT.EXPLAIN` in [`explain`], `FT.INFO` in [`info`], the
//! suggestion dictionaries of `FT.SUG*` in [`suggest`]. Replies keep RediSearch's shapes in RESP2
//! (flat arrays) and RESP3 (maps), and its error texts, which clients match on.
//!
//! Index definitions are part of the data: `FT.CREATE`, `FT.ALTER`, `FT.DROPINDEX`
//! and the `FT.ALIAS*` commands are logged, so an index survives restart (its documents are rebuilt
//! from the hashes, which are logged too).

mod aggregate;
mod analysis;
pub(crate) mod cursor;
mod explain;
mod filters;
mod fragments;
mod highlight;
mod hybrid;
mod info;
mod knn;
mod profile;
mod query;
mod settings;
mod spellcheck;
pub(crate) mod suggest;
mod synonyms;

use crate::command::ctx::Ctx;
use crate::command::flags::*;
use crate::command::{CommandSpec, Group};
use crate::error::{OpError, OpResult};
use crate::index::schema;
use crate::reply::Reply;

/// This family's part of the command table.
pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("ft.create", -2, WRITE | DENYOOM, Group::Search, create).doc(
        "Creates an index over hashes with the given schema (TEXT, TAG, NUMERIC, VECTOR fields).",
        "1.0.0",
    ),
    CommandSpec::new("ft.alter", -3, WRITE | DENYOOM, Group::Search, alter)
        .doc("Adds fields to an index's schema (SCHEMA ADD).", "1.0.0"),
    CommandSpec::new("ft.dropindex", -2, WRITE, Group::Search, drop_index).doc(
        "Deletes an index; with DD, also the hashes it indexed.",
        "2.0.0",
    ),
    CommandSpec::new("ft.aliasadd", -1, WRITE, Group::Search, alias_add)
        .doc("Adds an alias of an index: commands find the index under either name.", "1.0.0"),
    CommandSpec::new("ft.aliasupdate", -1, WRITE, Group::Search, alias_update).doc(
        "Points an alias at an index, moving it if it named another (or adding it).",
        "1.0.0",
    ),
    CommandSpec::new("ft.aliasdel", -1, WRITE, Group::Search, alias_del)
        .doc("Deletes an alias.", "1.0.0"),
    CommandSpec::new("ft._list", 1, READONLY, Group::Search, list)
        .doc("Returns the names of all indexes.", "2.0.0"),
    CommandSpec::new("ft.info", 2, READONLY, Group::Search, info::info)
        .doc("Returns an index's definition and statistics.", "1.0.0"),
    CommandSpec::new("ft.search", -3, READONLY, Group::Search, query::search).doc(
        "Searches an index: text, tag and numeric filters, KNN and range vector queries.",
        "1.0.0",
    ),
    CommandSpec::new("ft.aggregate", -1, READONLY, Group::Search, aggregate::aggregate).doc(
        "Runs a query's documents through a pipeline of LOAD, APPLY, FILTER, GROUPBY/REDUCE, SORTBY and LIMIT steps.",
        "1.1.0",
    ),
    CommandSpec::new("ft.hybrid", -2, READONLY, Group::Search, hybrid::hybrid).doc(
        "Fuses a text query's and a vector query's rankings (RRF or a linear combination), then shapes the rows with LOAD, GROUPBY/REDUCE, APPLY, SORTBY, FILTER and LIMIT.",
        "8.4.0",
    ),
    CommandSpec::new("ft.profile", -1, READONLY, Group::Search, profile::profile).doc(
        "Runs an FT.SEARCH or FT.AGGREGATE query and replies its results with a profile: the iterator tree and the pipeline's steps, each with its counter and time.",
        "2.2.0",
    ),
    CommandSpec::new("ft.cursor", -1, READONLY, Group::Search, cursor::cursor).doc(
        "Reads from (READ) or deletes (DEL) a cursor of FT.AGGREGATE … WITHCURSOR.",
        "1.1.0",
    ),
    CommandSpec::new("ft.explain", -1, READONLY, Group::Search, explain::explain)
        .doc("Returns a query's parse tree as text.", "1.0.0"),
    CommandSpec::new("ft.explaincli", -1, READONLY, Group::Search, explain::explain_cli)
        .doc("Returns a query's parse tree as an array of lines.", "1.0.0"),
    CommandSpec::new("ft.tagvals", -1, READONLY, Group::Search, tag_values)
        .doc("Returns the distinct values of a TAG field, as indexed.", "1.0.0"),
    CommandSpec::new("ft.synupdate", -1, WRITE, Group::Search, synonyms::update).doc(
        "Adds terms to a synonym group of an index (documents are re-indexed unless SKIPINITIALSCAN).",
        "1.2.0",
    ),
    CommandSpec::new("ft.syndump", -1, READONLY, Group::Search, synonyms::dump)
        .doc("Returns each term of an index's synonym groups with its groups.", "1.2.0"),
    CommandSpec::new("ft.spellcheck", -1, READONLY, Group::Search, spellcheck::spellcheck).doc(
        "Suggests spelling corrections for a query's words from the index's terms and dictionaries.",
        "1.4.0",
    ),
    CommandSpec::new("ft.dictadd", -1, WRITE, Group::Search, spellcheck::dict_add)
        .doc("Adds terms to a dictionary; returns how many were new.", "1.4.0"),
    CommandSpec::new("ft.dictdel", -1, WRITE, Group::Search, spellcheck::dict_del)
        .doc("Deletes terms from a dictionary; returns how many were there.", "1.4.0"),
    CommandSpec::new("ft.dictdump", -1, READONLY, Group::Search, spellcheck::dict_dump)
        .doc("Returns a dictionary's terms.", "1.4.0"),
    CommandSpec::new("ft.config", -1, ADMIN, Group::Search, settings::config).doc(
        "Reads (GET), changes (SET) or describes (HELP) the search settings, RediSearch's names for CONFIG's search-* parameters.",
        "1.0.0",
    ),
    CommandSpec::new("ft.optimize", 2, WRITE, Group::Search, optimize).doc(
        "Links every vector still waiting outside an index's graphs now (queries are exact over them meanwhile).",
        "0.1.0",
    ),
];

/// `MAXEXPANSIONS`: how many terms an expansion stands for at most, now.
pub(super) fn max_expansions(engine: &crate::engine::Engine) -> usize {
    let n = engine.config().with(|c| c.search.max_expansions);
    usize::try_from(n).unwrap_or(usize::MAX)
}

/// The reply to a missing index in `FT.SEARCH`/`FT.AGGREGATE`/`FT.EXPLAIN`.
pub(crate) fn no_such_index(name: &[u8]) -> OpError {
    OpError::custom(format!("{}: no such index", String::from_utf8_lossy(name)))
}

fn create(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    if ctx.db() != 0 {
        return Err(OpError::custom("Cannot create index on db != 0"));
    }
    if argv.len() < 5 {
        return Err(OpError::WrongArity("FT.CREATE".into()));
    }
    let def = schema::parse_create(argv)?;
    let skip_scan = def.skip_initial_scan;
    let engine = ctx.engine();
    let index = engine
        .search()
        .create(def)
        .map_err(|e| OpError::custom(e.0))?;
    index.commands.lock().push(argv.to_vec());
    engine.search().start_builder();
    if !skip_scan {
        engine
            .search()
            .scan(engine.keyspace(), &index, ctx.now_ms());
    }
    Ok(Reply::ok())
}

fn alter(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let Some(index) = ctx.search().get(&argv[1]) else {
        return Err(OpError::custom("Unknown index name"));
    };
    let mut at = 2;
    if argv
        .get(at)
        .is_some_and(|a| a.eq_ignore_ascii_case(b"SKIPINITIALSCAN"))
    {
        at += 1;
    }
    let schema_add = argv
        .get(at)
        .is_some_and(|a| a.eq_ignore_ascii_case(b"SCHEMA"))
        && argv
            .get(at + 1)
            .is_some_and(|a| a.eq_ignore_ascii_case(b"ADD"));
    if !schema_add {
        return Err(OpError::custom("ERR Unknown argument"));
    }
    if argv.len() <= at + 2 {
        return Err(OpError::WrongArity("FT.ALTER".into()));
    }
    {
        let mut def = index.def.write();
        let before = def.fields.len();
        let mut fields = def.fields.clone();
        schema::parse_alter(argv, at + 2, def.on, &mut fields)?;
        let mut docs = index.docs.write();
        for f in &fields[before..] {
            docs.add_field(f);
        }
        def.fields = fields;
    }
    index.commands.lock().push(argv.to_vec());
    // Existing hashes gain the new fields: reindex them (RediSearch rescans too).
    let engine = ctx.engine();
    engine
        .search()
        .scan(engine.keyspace(), &index, ctx.now_ms());
    Ok(Reply::ok())
}

fn drop_index(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let delete_docs = match argv.get(2) {
        None => false,
        Some(a) if a.eq_ignore_ascii_case(b"DD") && argv.len() == 3 => true,
        Some(_) => return Err(OpError::Syntax),
    };
    let engine = ctx.engine();
    let Some(index) = engine.search().drop_index(&argv[1]) else {
        return Err(OpError::custom("Unknown Index name"));
    };
    if delete_docs {
        let keys: Vec<Vec<u8>> = {
            let docs = index.docs.read();
            docs.all()
                .iter()
                .filter_map(|id| docs.key(id).map(<[u8]>::to_vec))
                .collect()
        };
        let mut deleted = Vec::new();
        for key in keys {
            let mut ks = engine.keyspace().lock_keys(&[&key], ctx.now_ms());
            if ks.remove(0, &key)?.is_some() {
                engine.search().key_written(&mut ks, 0, &key);
                deleted.push(key);
            }
        }
        // Logged as the index drop and the deletions it made.
        let mut records = vec![vec![b"FT.DROPINDEX".to_vec(), argv[1].clone()]];
        records.extend(deleted.into_iter().map(|k| vec![b"DEL".to_vec(), k]));
        ctx.log_as(records);
    }
    Ok(Reply::ok())
}

/// `FT.ALIASADD alias index`.
fn alias_add(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    set_alias(ctx, argv, "FT.ALIASADD", false)
}

/// `FT.ALIASUPDATE alias index`: as `FT.ALIASADD`, moving an alias that exists.
fn alias_update(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    set_alias(ctx, argv, "FT.ALIASUPDATE", true)
}

fn set_alias(ctx: &mut Ctx<'_>, argv: &[Vec<u8>], name: &str, replace: bool) -> OpResult<Reply> {
    if argv.len() != 3 {
        return Err(OpError::WrongArity(name.into()));
    }
    ctx.search()
        .set_alias(&argv[1], &argv[2], replace)
        .map_err(|e| OpError::custom(e.text()))?;
    Ok(Reply::ok())
}

/// `FT.ALIASDEL alias`.
fn alias_del(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    if argv.len() != 2 {
        return Err(OpError::WrongArity("FT.ALIASDEL".into()));
    }
    ctx.search()
        .remove_alias(&argv[1])
        .map_err(|e| OpError::custom(e.text()))?;
    Ok(Reply::ok())
}

/// `FT._LIST`: index names; aliases are not listed.
fn list(ctx: &mut Ctx<'_>, _argv: &[Vec<u8>]) -> OpResult<Reply> {
    let names = ctx.search().names();
    // RediSearch sends the names as simple strings, in a set under RESP3.
    let names = names
        .into_iter()
        .map(|n| Reply::Status(String::from_utf8_lossy(&n).into_owned().into()))
        .collect();
    Ok(Reply::Set(names))
}

/// `FT.TAGVALS index field`: a TAG field's distinct values (lowercased unless
/// CASESENSITIVE, as indexed), in byte order; a set in RESP3.
fn tag_values(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    if argv.len() != 3 {
        return Err(OpError::custom(
            "ERR wrong number of arguments for 'FT.TAGVALS' command",
        ));
    }
    let Some(index) = ctx.search().get(&argv[1]) else {
        return Err(OpError::custom("Unknown Index name"));
    };
    let def = index.def.read();
    let Some((i, field)) = def.field(&argv[2]) else {
        return Err(OpError::custom("No such field"));
    };
    if !matches!(field.kind, schema::FieldKind::Tag { .. }) {
        return Err(OpError::custom("Not a tag field"));
    }
    let docs = index.docs.read();
    let values = match docs.fields.get(i) {
        Some(crate::index::FieldIndex::Tag { tags, .. }) => {
            tags.keys().map(|t| Reply::Bulk(t.clone())).collect()
        }
        _ => Vec::new(),
    };
    Ok(Reply::Set(values))
}

fn optimize(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let Some(index) = ctx.search().get(&argv[1]) else {
        return Err(OpError::custom("Unknown index name"));
    };
    index.optimize();
    ctx.log_as(Vec::new());
    Ok(Reply::ok())
}
