//! Search indexes in a snapshot: each index's defining commands, its document table
//! (id → key) and its vector graphs, so a restart loads the graphs instead of
//! rebuilding them. Text, tag and numeric postings are rebuilt from the hashes, which
//! the snapshot holds anyway; that is cheap next to linking vectors.
//!
//! Taken while every shard is held (the snapshot's cut), so documents and graphs are
//! exactly those of the keyspace the snapshot stores. A graph that does not load
//! falls back to re-indexing that index from the hashes.
//!
//! ```text
//! body  = version:u8(4) indexes:u32 index* dicts:u32 dict* aliases:u32 alias*
//! index = commands:u32 (argc:u32 arg:bytes*)* next_id:u64 complete:u8
//!         docs:u32 (id:u64 key:bytes)* graphs:u32 (field:u32 graph:bytes)*
//! dict  = name:bytes terms:u32 term:bytes*
//! alias = alias:bytes index:bytes
//! ```
//!
//! An index's commands are its `FT.CREATE` then its `FT.ALTER`s and `FT.SYNUPDATE`s in
//! the order they ran. Version 1 (before dictionaries) has no `dicts`, versions
//! before 4 no `aliases`. Before
//! version 3 a JSON document held one vector per field, labelled by its id; a graph
//! of a multi-value field (see `index::vectors`) saved then is not loaded, the
//! index is re-indexed from the documents instead.
//!
//! An index whose initial scan was still running is saved incomplete (no documents,
//! no graphs) and re-indexed from the hashes at load.

use std::sync::Arc;

use super::{schema, FieldIndex, Indexes, SearchIndex};
use crate::keyspace::Keyspace;
use crate::util::codec::{put_bytes, put_u32, put_u64, DecodeError, Malformed, Reader};

/// The format name in decoding errors.
const FORMAT: &str = "search-index section";
use crate::vector::VectorIndex;

const VERSION: u8 = 4;

/// The first version whose multi-value vector fields label vectors by slot.
const MULTI_VECTOR_SLOTS: u8 = 3;

/// Serialises every index (call holding every shard).
pub fn export(indexes: &Indexes) -> Vec<u8> {
    let all = indexes.all();
    let dicts = indexes.dicts().all();
    let aliases = indexes.aliases().all();
    if all.is_empty() && dicts.is_empty() && aliases.is_empty() {
        return Vec::new();
    }
    let mut out = vec![VERSION];
    put_u32(&mut out, all.len() as u32);
    for index in all {
        let commands = index.commands.lock().clone();
        put_u32(&mut out, commands.len() as u32);
        for argv in &commands {
            put_u32(&mut out, argv.len() as u32);
            for a in argv {
                put_bytes(&mut out, a);
            }
        }
        let docs = index.docs.read();
        put_u64(&mut out, docs.max_id());
        let complete = !index.scanning.load(std::sync::atomic::Ordering::Relaxed);
        out.push(u8::from(complete));
        if !complete {
            put_u32(&mut out, 0);
            put_u32(&mut out, 0);
            continue;
        }
        let table = docs.table();
        put_u32(&mut out, table.len() as u32);
        for (id, key) in &table {
            put_u64(&mut out, *id);
            put_bytes(&mut out, key);
        }
        let graphs: Vec<(usize, Vec<u8>)> = docs
            .fields
            .iter()
            .enumerate()
            .filter_map(|(i, f)| match f {
                FieldIndex::Vector(v) => {
                    let mut g = Vec::new();
                    v.index().write_to(&mut g);
                    Some((i, g))
                }
                _ => None,
            })
            .collect();
        put_u32(&mut out, graphs.len() as u32);
        for (field, g) in &graphs {
            put_u32(&mut out, *field as u32);
            put_bytes(&mut out, g);
        }
    }
    put_u32(&mut out, dicts.len() as u32);
    for (name, terms) in &dicts {
        put_bytes(&mut out, name);
        put_u32(&mut out, terms.len() as u32);
        for t in terms {
            put_bytes(&mut out, t);
        }
    }
    put_u32(&mut out, aliases.len() as u32);
    for (alias, index) in &aliases {
        put_bytes(&mut out, alias);
        put_bytes(&mut out, index);
    }
    out
}

/// Dictionaries as read from a snapshot.
type SavedDicts = Vec<(Vec<u8>, Vec<Vec<u8>>)>;

/// What a snapshot's section holds besides the indexes: dictionaries and aliases
/// (alias, index).
#[derive(Default)]
struct SavedNames {
    dicts: SavedDicts,
    aliases: Vec<(Vec<u8>, Vec<u8>)>,
}

/// One index as read from a snapshot.
struct Saved {
    /// The section's version.
    version: u8,
    commands: Vec<Vec<Vec<u8>>>,
    next_id: u64,
    complete: bool,
    table: Vec<(u64, Vec<u8>)>,
    graphs: Vec<(usize, Vec<u8>)>,
}

fn decode(body: &[u8]) -> Result<(Vec<Saved>, SavedNames), Malformed> {
    let mut r = Reader::new(body);
    let version = r.u8()?;
    if !(1..=VERSION).contains(&version) {
        return Err(Malformed("unknown search-index section version"));
    }
    let n = r.count(4)?;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let ncmd = r.count(4)?;
        let mut commands = Vec::with_capacity(ncmd);
        for _ in 0..ncmd {
            let argc = r.count(4)?;
            let mut argv = Vec::with_capacity(argc);
            for _ in 0..argc {
                argv.push(r.bytes()?.to_vec());
            }
            commands.push(argv);
        }
        let next_id = r.u64()?;
        let complete = r.u8()? != 0;
        let ndocs = r.count(12)?;
        let mut table = Vec::with_capacity(ndocs);
        for _ in 0..ndocs {
            let id = r.u64()?;
            table.push((id, r.bytes()?.to_vec()));
        }
        let ngraphs = r.count(8)?;
        let mut graphs = Vec::with_capacity(ngraphs);
        for _ in 0..ngraphs {
            let field = r.u32()? as usize;
            graphs.push((field, r.bytes()?.to_vec()));
        }
        out.push(Saved {
            version,
            commands,
            next_id,
            complete,
            table,
            graphs,
        });
    }
    let mut names = SavedNames::default();
    if version >= 2 {
        for _ in 0..r.count(8)? {
            let name = r.bytes()?.to_vec();
            let nterms = r.count(4)?;
            let mut terms = Vec::with_capacity(nterms);
            for _ in 0..nterms {
                terms.push(r.bytes()?.to_vec());
            }
            names.dicts.push((name, terms));
        }
    }
    if version >= 4 {
        for _ in 0..r.count(8)? {
            let alias = r.bytes()?.to_vec();
            names.aliases.push((alias, r.bytes()?.to_vec()));
        }
    }
    Ok((out, names))
}

fn restore_dicts(indexes: &Indexes, dicts: SavedDicts) {
    for (name, terms) in dicts {
        indexes.dicts().add(&name, &terms);
    }
}

/// Recreates the aliases once their indexes exist; an alias already there stays
/// (a reload that merges a snapshot keeps what memory holds).
fn restore_aliases(indexes: &Indexes, aliases: Vec<(Vec<u8>, Vec<u8>)>) {
    for (alias, index) in aliases {
        // An alias whose index is not there is dropped, as its index would have.
        let _ = indexes.set_alias(&alias, &index, false);
    }
}

/// Recreates the indexes of a snapshot over the keys just loaded; returns how many
/// indexes there were. Errors name what is damaged.
pub fn restore(
    indexes: &Arc<Indexes>,
    keyspace: &Keyspace,
    body: &[u8],
) -> Result<usize, DecodeError> {
    let (saved, names) = decode(body).map_err(|e| e.in_format(FORMAT))?;
    restore_dicts(indexes, names.dicts);
    let count = saved.len();
    for s in saved {
        let index = define(indexes, &s.commands)?;
        restore_documents(indexes, keyspace, &index, s);
    }
    restore_aliases(indexes, names.aliases);
    if count > 0 {
        indexes.start_builder();
    }
    Ok(count)
}

/// Recreates the indexes of a snapshot that do not exist yet, each indexing the keys
/// as they now are (a reload that merges a snapshot into memory: the saved document
/// table would miss the keys that were already there). Returns how many it created.
pub fn restore_missing(
    indexes: &Arc<Indexes>,
    keyspace: &Keyspace,
    body: &[u8],
) -> Result<usize, DecodeError> {
    let (saved, names) = decode(body).map_err(|e| e.in_format(FORMAT))?;
    restore_dicts(indexes, names.dicts);
    let mut created = 0;
    for s in saved {
        // `FT.CREATE name …`: the name is its first argument.
        let name = s.commands.first().and_then(|create| create.get(1));
        if name.is_some_and(|n| indexes.get(n).is_some()) {
            continue;
        }
        let index = define(indexes, &s.commands)?;
        indexes.scan(keyspace, &index, 0);
        created += 1;
    }
    restore_aliases(indexes, names.aliases);
    if created > 0 {
        indexes.start_builder();
    }
    Ok(created)
}

/// Creates an index from its `FT.CREATE`, `FT.ALTER` and `FT.SYNUPDATE` commands,
/// without scanning.
fn define(indexes: &Indexes, commands: &[Vec<Vec<u8>>]) -> Result<Arc<SearchIndex>, DecodeError> {
    let refused = |e: crate::error::OpError| {
        DecodeError::new(FORMAT, format!("definition refused: {}", e.wire_text()))
    };
    let (create, alters) = commands
        .split_first()
        .ok_or_else(|| DecodeError::new(FORMAT, "an index without a definition"))?;
    let def = schema::parse_create(create).map_err(refused)?;
    let index = indexes
        .create(def)
        .map_err(|e| DecodeError::new(FORMAT, e.0.to_string()))?;
    index.commands.lock().push(create.clone());
    for argv in alters {
        if argv
            .first()
            .is_some_and(|c| c.eq_ignore_ascii_case(b"FT.SYNUPDATE"))
        {
            let update = schema::parse_synupdate(argv).map_err(refused)?;
            index.def.write().add_synonyms(update.group, update.terms);
            index.commands.lock().push(argv.clone());
            continue;
        }
        let at = argv
            .iter()
            .position(|a| a.eq_ignore_ascii_case(b"ADD"))
            .map_or(argv.len(), |p| p + 1);
        let mut def = index.def.write();
        let before = def.fields.len();
        let mut fields = def.fields.clone();
        schema::parse_alter(argv, at, def.on, &mut fields).map_err(refused)?;
        let mut docs = index.docs.write();
        for f in &fields[before..] {
            docs.add_field(f);
        }
        def.fields = fields;
        index.commands.lock().push(argv.clone());
    }
    Ok(index)
}

fn restore_documents(indexes: &Indexes, keyspace: &Keyspace, index: &SearchIndex, saved: Saved) {
    let def = index.def.read().clone();
    let mut loaded = saved.complete;
    {
        let mut docs = index.docs.write();
        for (field, bytes) in saved.graphs {
            let ok = VectorIndex::read_from(&bytes)
                .ok()
                .filter(|g| {
                    def.fields.get(field).is_some_and(|f| {
                        matches!(&f.kind, schema::FieldKind::Vector(v) if v.params.dim == g.params().dim)
                            && (saved.version >= MULTI_VECTOR_SLOTS || !f.holds_many_vectors())
                    })
                })
                .is_some_and(|g| docs.set_vector_index(field, g));
            if ok {
                indexes
                    .stats()
                    .graphs_loaded
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            }
            loaded &= ok;
        }
        docs.set_next_id(saved.next_id);
    }
    if !loaded && saved.complete {
        crate::log_notice!(
            "the saved graph of index {} did not load; re-indexing it from the hashes",
            String::from_utf8_lossy(&def.name)
        );
    }
    if !loaded {
        indexes
            .stats()
            .graphs_rebuilt
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let fresh = super::Docs::new(&def);
        *index.docs.write() = fresh;
        indexes.scan(keyspace, index, 0);
        return;
    }
    for (id, key) in saved.table {
        let ks = keyspace;
        let mut locked = ks.lock_keys(&[&key], 0);
        if let Ok(Some(entry)) = locked.peek(0, &key) {
            if let Some(doc) = super::Document::of(&entry.value, def.on) {
                index.docs.write().index_as(&def, &key, doc, id, false);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Engine, EngineOptions};
    use std::sync::atomic::Ordering::Relaxed;

    /// A multi-value vector field's saved graph loads from this version, and is
    /// rebuilt from the documents when saved by a version that labelled vectors by
    /// document id.
    #[test]
    fn multi_value_graphs_of_older_versions_are_rebuilt() {
        let create = "FT.CREATE m ON JSON PREFIX 1 m: SCHEMA $.v[*] AS v VECTOR HNSW 6 TYPE FLOAT32 DIM 2 DISTANCE_METRIC L2";
        let create: Vec<&str> = create.split(' ').collect();
        let doc = ["JSON.SET", "m:1", "$", r#"{"v":[[1,0],[2,0]]}"#];
        let saved = Engine::in_memory(EngineOptions::default());
        saved.execute(0, &create);
        saved.execute(0, &doc);
        let body = export(saved.search());
        for (version, loaded, rebuilt) in [(VERSION, 1, 0), (2, 0, 1)] {
            let mut body = body.clone();
            body[0] = version;
            let engine = Engine::in_memory(EngineOptions::default());
            engine.execute(0, &doc);
            assert_eq!(restore(engine.search(), engine.keyspace(), &body), Ok(1));
            let stats = engine.search().stats();
            assert_eq!(
                stats.graphs_loaded.load(Relaxed),
                loaded,
                "version {version}"
            );
            assert_eq!(
                stats.graphs_rebuilt.load(Relaxed),
                rebuilt,
                "version {version}"
            );
        }
    }

    #[test]
    fn dictionaries_round_trip_and_the_older_version_still_decodes() {
        let indexes = Indexes::default();
        indexes
            .dicts()
            .add(b"d", &[b"apple".to_vec(), b"zebra".to_vec()]);
        let body = export(&indexes);
        let (saved, names) = decode(&body).expect("decodes");
        assert!(saved.is_empty());
        assert_eq!(
            names.dicts,
            vec![(b"d".to_vec(), vec![b"apple".to_vec(), b"zebra".to_vec()])]
        );
        // Version 1: indexes only.
        let mut v1 = vec![1u8];
        put_u32(&mut v1, 0);
        let (saved, names) = decode(&v1).expect("version 1 decodes");
        assert!(saved.is_empty() && names.dicts.is_empty());
        assert!(decode(&[9u8]).is_err());
    }

    /// Aliases come back pointing at their index; version 3 had none.
    #[test]
    fn aliases_round_trip_after_their_indexes() {
        let saved = Engine::in_memory(EngineOptions::default());
        saved.execute(0, &["FT.CREATE", "i", "SCHEMA", "t", "TEXT"]);
        saved.execute(0, &["FT.ALIASADD", "a", "i"]);
        saved.execute(0, &["FT.ALIASADD", "b", "i"]);
        let body = export(saved.search());
        let engine = Engine::in_memory(EngineOptions::default());
        assert_eq!(restore(engine.search(), engine.keyspace(), &body), Ok(1));
        assert_eq!(
            engine.search().aliases().all(),
            vec![
                (b"a".to_vec(), b"i".to_vec()),
                (b"b".to_vec(), b"i".to_vec())
            ]
        );
        assert!(engine.search().get(b"b").is_some());
        let mut v3 = body.clone();
        v3[0] = 3;
        let (_, names) = decode(&v3).expect("version 3 decodes");
        assert!(names.aliases.is_empty());
    }
}
