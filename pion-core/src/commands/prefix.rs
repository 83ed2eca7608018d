//! The prompt cache over RESP: `KV.*` commands on the prefix store. Token sequences
//! travel as little-endian `u32` bytes (or, for inspection from redis-cli, as decimal
//! arguments after `TOKENS`); block ids as 32 hex digits; layer data as raw bytes.
//!
//! Changes are logged while the store's lock is held (`Ctx::log_now`), so the log's
//! order is the store's. A durable store writes the block's payloads to the block
//! files and logs where they are (`KV.PUTREF`), with the evictions it caused, so
//! recovery rebuilds exactly what was acknowledged and nothing evicted.

use crate::command::flags::*;
use crate::command::{CommandSpec, Group};
use crate::commands::util::is_kw;
use crate::durability::codec::Reader;
use crate::error::{OpError, OpResult};
use crate::exec::Ctx;
use crate::prefix::block_id::tokens_from_le;
use crate::prefix::blockfile::{Loc, LOC_LEN};
use crate::prefix::{BlockId, Manifest, PrefixError};
use crate::reply::Reply;

/// This family's part of the command table.
pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("kv.register", 3, WRITE, Group::PrefixCache, register).doc(
        "Registers a prompt-cache namespace with its JSON manifest (model, tokenizer, block size, dtype, tier, layers).",
        "0.1.0",
    ),
    CommandSpec::new("kv.manifest", 2, READONLY | FAST, Group::PrefixCache, manifest)
        .doc("Returns a namespace's manifest as JSON.", "0.1.0"),
    CommandSpec::new("kv.namespaces", 1, READONLY, Group::PrefixCache, namespaces)
        .doc("Lists the prompt-cache namespaces.", "0.1.0"),
    CommandSpec::new("kv.info", -1, READONLY, Group::PrefixCache, info).doc(
        "Returns prompt-cache counters: all namespaces, or one.",
        "0.1.0",
    ),
    CommandSpec::new("kv.put", -5, WRITE | DENYOOM, Group::PrefixCache, put).doc(
        "Stores one block (its tokens and every layer's data) after a parent block; returns its id.",
        "0.1.0",
    ),
    CommandSpec::new("kv.match", -3, READONLY, Group::PrefixCache, match_prefix).doc(
        "Returns the longest stored usable prefix of a token sequence: tokens matched and block ids.",
        "0.1.0",
    ),
    CommandSpec::new("kv.export", -3, READONLY, Group::PrefixCache, export).doc(
        "Returns the longest stored usable prefix of a token sequence and the path of a safetensors file holding it (LAYOUT mlx-lm or mlx-lm-legacy).",
        "0.1.0",
    ),
    CommandSpec::new("kv.blockids", -3, READONLY | FAST, Group::PrefixCache, block_ids).doc(
        "Returns the block ids of a token sequence (whether stored or not).",
        "0.1.0",
    ),
    CommandSpec::new("kv.get", -3, READONLY, Group::PrefixCache, get).doc(
        "Returns a block's token count and its layers' data (all, or those listed after LAYERS; DECODE: back to the namespace's dtype).",
        "0.1.0",
    ),
    CommandSpec::new("kv.del", 3, WRITE, Group::PrefixCache, del)
        .doc("Deletes a block and every block after it.", "0.1.0"),
    CommandSpec::new("kv.drop", 2, WRITE, Group::PrefixCache, drop_namespace)
        .doc("Deletes a namespace and all its blocks.", "0.1.0"),
    CommandSpec::new("kv.evict", -3, WRITE, Group::PrefixCache, evict).doc(
        "Internal: replays logged evictions at start-up (refused from clients).",
        "0.1.0",
    ),
    CommandSpec::new("kv.putref", 5, WRITE, Group::PrefixCache, put_ref).doc(
        "Internal: replays a logged store whose payloads are in the block files (refused from clients).",
        "0.1.0",
    ),
    CommandSpec::new("kv.reloc", 4, WRITE, Group::PrefixCache, reloc).doc(
        "Internal: replays compaction's new payload locations (refused from clients).",
        "0.1.0",
    ),
];

fn prefix_err(e: PrefixError) -> OpError {
    OpError::Custom(e.0.into())
}

fn text(arg: &[u8]) -> OpResult<&str> {
    std::str::from_utf8(arg).map_err(|_| OpError::custom("ERR namespace names must be UTF-8"))
}

fn block_id(arg: &[u8]) -> OpResult<BlockId> {
    BlockId::parse(arg).ok_or_else(|| {
        OpError::custom("ERR invalid block id: 32 hex digits, or root for a sequence's first block")
    })
}

/// Token ids from `argv[at..]`: one argument of little-endian u32 bytes, or `TOKENS`
/// followed by decimal ids.
fn tokens_arg(argv: &[Vec<u8>], at: usize) -> OpResult<Vec<u32>> {
    tokens_in(&argv[at..])
}

/// Token ids from these arguments (see [`tokens_arg`]).
fn tokens_in(rest: &[Vec<u8>]) -> OpResult<Vec<u32>> {
    if rest.first().is_some_and(|a| is_kw(a, "tokens")) {
        return rest[1..]
            .iter()
            .map(|t| {
                std::str::from_utf8(t)
                    .ok()
                    .and_then(|s| s.parse::<u32>().ok())
                    .ok_or_else(|| OpError::custom("ERR token ids must be integers 0..4294967295"))
            })
            .collect();
    }
    match rest {
        [bytes] => tokens_from_le(bytes).ok_or_else(|| {
            OpError::custom("ERR tokens must be little-endian u32 bytes (a multiple of 4 bytes)")
        }),
        _ => Err(OpError::Syntax),
    }
}

/// The log records of evictions: `KV.EVICT ns id` per namespace run.
pub fn eviction_records(evicted: &[(String, BlockId)]) -> Vec<Vec<Vec<u8>>> {
    evicted
        .iter()
        .map(|(ns, id)| {
            vec![
                b"KV.EVICT".to_vec(),
                ns.as_bytes().to_vec(),
                id.hex().into_bytes(),
            ]
        })
        .collect()
}

fn register(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let name = text(&argv[1])?;
    if name.is_empty() || name.len() > 256 {
        return Err(OpError::custom("ERR namespace names are 1 to 256 bytes"));
    }
    let manifest = Manifest::parse(&argv[2]).map_err(|e| OpError::custom(format!("ERR {e}")))?;
    let engine = ctx.engine;
    let mut store = engine.prefix().lock();
    let created = store.register(name, manifest).map_err(prefix_err)?;
    // Logged as sent (a re-registration of the same manifest changes nothing).
    ctx.log_now(&if created {
        vec![argv.to_vec()]
    } else {
        Vec::new()
    });
    Ok(Reply::ok())
}

fn manifest(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let store = ctx.engine.prefix().lock();
    let m = store.manifest(text(&argv[1])?).map_err(prefix_err)?;
    Ok(Reply::bulk(m.to_json()))
}

fn namespaces(ctx: &mut Ctx<'_>, _: &[Vec<u8>]) -> OpResult<Reply> {
    let store = ctx.engine.prefix().lock();
    Ok(Reply::Array(
        store.names().into_iter().map(Reply::bulk).collect(),
    ))
}

fn info(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let store = ctx.engine.prefix().lock();
    let int = |n: u64| Reply::Integer(n as i64);
    let pairs = |s: crate::prefix::NamespaceStats| {
        vec![
            (Reply::bulk("blocks"), int(s.blocks)),
            (Reply::bulk("bytes"), int(s.bytes)),
            (Reply::bulk("hits"), int(s.hits)),
            (Reply::bulk("misses"), int(s.misses)),
            (Reply::bulk("hit_tokens"), int(s.hit_tokens)),
            (Reply::bulk("stores"), int(s.stores)),
            (Reply::bulk("dedup"), int(s.dedup)),
            (Reply::bulk("fetches"), int(s.fetches)),
            (Reply::bulk("evictions"), int(s.evictions)),
        ]
    };
    match argv.len() {
        1 => {
            let mut total = crate::prefix::NamespaceStats::default();
            let names = store.names();
            for n in &names {
                let s = store.stats(n).map_err(prefix_err)?;
                total.blocks += s.blocks;
                total.bytes += s.bytes;
                total.hits += s.hits;
                total.misses += s.misses;
                total.hit_tokens += s.hit_tokens;
                total.stores += s.stores;
                total.dedup += s.dedup;
                total.fetches += s.fetches;
                total.evictions += s.evictions;
            }
            let (exports, export_bytes) =
                store.exports().map_or((0, 0), |e| (e.count(), e.bytes()));
            let mut out = vec![
                (Reply::bulk("namespaces"), int(names.len() as u64)),
                (Reply::bulk("budget"), int(store.budget())),
                (Reply::bulk("exports"), int(exports)),
                (Reply::bulk("export_bytes"), int(export_bytes)),
            ];
            out.extend(pairs(total));
            Ok(Reply::Map(out))
        }
        2 => Ok(Reply::Map(pairs(
            store.stats(text(&argv[1])?).map_err(prefix_err)?,
        ))),
        _ => Err(OpError::Syntax),
    }
}

/// `KV.PUT ns parent tokens layer…`.
fn put(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let name = text(&argv[1])?;
    let parent = block_id(&argv[2])?;
    let tokens = tokens_from_le(&argv[3]).ok_or_else(|| {
        OpError::custom("ERR tokens must be little-endian u32 bytes (a multiple of 4 bytes)")
    })?;
    let engine = ctx.engine;
    let mut store = engine.prefix().lock();
    let stored = store
        .put(name, parent, &tokens, &argv[4..])
        .map_err(prefix_err)?;
    // Durable: the new payloads go to the block files first, and the log records
    // where they are (KV.PUTREF), then the evictions the store caused, in one record:
    // applied together or not at all.
    let mut records = Vec::new();
    if let Some(files) = store.files().cloned() {
        if !stored.new_layers.is_empty() {
            let mut refs = Vec::with_capacity(stored.new_layers.len() * 28);
            for &i in &stored.new_layers {
                let Some(data) = store.layer(name, stored.id, i) else {
                    continue;
                };
                let loc = files.append(&data).map_err(|e| {
                    OpError::custom(format!(
                        "MISCONF Errors writing to the write-ahead log: block file: {e}"
                    ))
                })?;
                store.set_loc(name, stored.id, i, loc);
                refs.extend_from_slice(&(i as u32).to_le_bytes());
                loc.encode(&mut refs);
            }
            records.push(vec![
                b"KV.PUTREF".to_vec(),
                argv[1].clone(),
                argv[2].clone(),
                argv[3].clone(),
                refs,
            ]);
        }
    }
    records.extend(eviction_records(&stored.evicted));
    ctx.log_now(&records);
    Ok(Reply::bulk(stored.id.hex()))
}

/// `(layer, location)` pairs of a `KV.PUTREF`/`KV.RELOC` record.
fn refs_arg(arg: &[u8]) -> OpResult<Vec<(usize, Loc)>> {
    let bad = || OpError::custom("ERR malformed block-file references");
    if !arg.len().is_multiple_of(4 + LOC_LEN) {
        return Err(bad());
    }
    let mut r = Reader::new(arg);
    let mut out = Vec::new();
    while r.remaining() > 0 {
        let i = r.u32().map_err(|_| bad())? as usize;
        out.push((i, Loc::decode(&mut r).ok_or_else(bad)?));
    }
    Ok(out)
}

fn replay_only(ctx: &Ctx<'_>, name: &str) -> OpResult<()> {
    if ctx.client.replaying {
        Ok(())
    } else {
        Err(OpError::custom(format!(
            "ERR {name} is internal: it replays the log at start-up"
        )))
    }
}

/// `KV.PUTREF ns parent tokens refs` (recovery only): a logged store whose payloads
/// are in the block files.
fn put_ref(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    replay_only(ctx, "KV.PUTREF")?;
    let name = text(&argv[1])?;
    let parent = block_id(&argv[2])?;
    let tokens = tokens_from_le(&argv[3]).ok_or(OpError::Syntax)?;
    let refs = refs_arg(&argv[4])?;
    let mut store = ctx.engine.prefix().lock();
    let files = store
        .files()
        .cloned()
        .ok_or_else(|| OpError::custom("ERR no block files"))?;
    let mut layers = Vec::with_capacity(refs.len());
    for (i, loc) in refs {
        let data = files
            .read(loc)
            .map_err(|e| OpError::custom(format!("ERR {e}")))?;
        layers.push((i, std::sync::Arc::from(data), loc));
    }
    let id = store
        .replay_put(name, parent, &tokens, layers)
        .map_err(prefix_err)?;
    Ok(Reply::bulk(id.hex()))
}

/// `KV.RELOC ns id refs` (recovery only): compaction moved these payloads.
fn reloc(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    replay_only(ctx, "KV.RELOC")?;
    let name = text(&argv[1])?;
    let id = block_id(&argv[2])?;
    let refs = refs_arg(&argv[3])?;
    let mut store = ctx.engine.prefix().lock();
    let files = store.files().cloned();
    let mut n = 0;
    for (i, loc) in refs {
        if let Some(f) = &files {
            f.retain(loc);
        }
        if store.set_loc(name, id, i, loc) {
            n += 1;
        } else if let Some(f) = &files {
            f.release(loc);
        }
    }
    Ok(Reply::Integer(n))
}

/// Moves the live payloads of the most wasteful block file to the active one, logging
/// the new locations; retires files left empty (deleted once a snapshot covers the
/// log up to here). Returns the bytes moved.
pub fn compact(engine: &crate::Engine, budget_bytes: u64) -> u64 {
    let Some(d) = engine.durability() else {
        return 0;
    };
    let mut store = engine.prefix().lock();
    let Some(files) = store.files().cloned() else {
        return 0;
    };
    let mut moved = 0u64;
    let mut records = Vec::new();
    if let Some(&file) = files.compaction_candidates().first() {
        let mut by_block: std::collections::BTreeMap<(String, BlockId), Vec<u8>> =
            std::collections::BTreeMap::new();
        for (name, id, i) in store.layers_in_file(file) {
            if moved >= budget_bytes {
                break;
            }
            let Some(data) = store.layer(&name, id, i) else {
                continue;
            };
            let Ok(loc) = files.append(&data) else { break };
            store.set_loc(&name, id, i, loc);
            moved += loc.len;
            let refs = by_block.entry((name, id)).or_default();
            refs.extend_from_slice(&(i as u32).to_le_bytes());
            loc.encode(refs);
        }
        for ((name, id), refs) in by_block {
            records.push(vec![
                b"KV.RELOC".to_vec(),
                name.into_bytes(),
                id.hex().into_bytes(),
                refs,
            ]);
        }
    }
    let wal = d.wal();
    if !records.is_empty() {
        wal.append(
            crate::engine::unix_ms(),
            records.iter().map(|c| (0usize, c.as_slice())),
        );
    }
    files.retire_empty(wal.appended_seq());
    moved
}

fn match_prefix(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let name = text(&argv[1])?;
    let tokens = tokens_arg(argv, 2)?;
    let m = ctx
        .engine
        .prefix()
        .lock()
        .longest_prefix(name, &tokens)
        .map_err(prefix_err)?;
    Ok(Reply::Array(vec![
        Reply::Integer(m.tokens as i64),
        Reply::Array(m.blocks.iter().map(|b| Reply::bulk(b.hex())).collect()),
    ]))
}

/// `KV.EXPORT ns tokens [LAYOUT mlx-lm|mlx-lm-legacy]`: `[matched_tokens, path]`, or
/// `[0, nil]`. Flagged read-only, so the dispatcher never logs it: export files are a
/// cache outside the log, rebuilt on demand after a restart.
fn export(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    use crate::prefix::export::{self, Layout};
    use std::os::unix::ffi::OsStrExt;
    let name = text(&argv[1])?;
    let (token_args, layout) = match argv.len().checked_sub(2) {
        Some(at) if at > 2 && is_kw(&argv[at], "layout") => {
            let layout = Layout::parse(&argv[at + 1])
                .ok_or_else(|| OpError::custom("ERR LAYOUT must be mlx-lm or mlx-lm-legacy"))?;
            (&argv[2..at], layout)
        }
        _ => (&argv[2..], Layout::MlxLm),
    };
    let tokens = tokens_in(token_args)?;
    match export::export(ctx.engine.prefix(), name, &tokens, layout) {
        Ok(Some((n, path))) => Ok(Reply::Array(vec![
            Reply::Integer(n as i64),
            Reply::bulk(path.as_os_str().as_bytes()),
        ])),
        Ok(None) => Ok(Reply::Array(vec![Reply::Integer(0), Reply::Null])),
        Err(e) => Err(OpError::custom(e.to_string())),
    }
}

fn block_ids(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let name = text(&argv[1])?;
    let tokens = tokens_arg(argv, 2)?;
    let block_tokens = ctx
        .engine
        .prefix()
        .lock()
        .manifest(name)
        .map_err(prefix_err)?
        .block_tokens as usize;
    Ok(Reply::Array(
        BlockId::chain_all(&tokens, block_tokens)
            .into_iter()
            .map(|b| Reply::bulk(b.hex()))
            .collect(),
    ))
}

/// `KV.GET ns id [LAYERS i …] [DECODE]`.
fn get(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let name = text(&argv[1])?;
    let id = block_id(&argv[2])?;
    let mut layers: Option<Vec<usize>> = None;
    let mut decode = false;
    let mut i = 3;
    while i < argv.len() {
        if is_kw(&argv[i], "decode") {
            decode = true;
            i += 1;
        } else if is_kw(&argv[i], "layers") {
            let mut list = Vec::new();
            i += 1;
            while i < argv.len() && !is_kw(&argv[i], "decode") {
                let n = std::str::from_utf8(&argv[i])
                    .ok()
                    .and_then(|s| s.parse::<usize>().ok())
                    .ok_or_else(|| OpError::custom("ERR layer indexes must be integers"))?;
                list.push(n);
                i += 1;
            }
            layers = Some(list);
        } else {
            return Err(OpError::Syntax);
        }
    }
    let store_lock = ctx.engine.prefix();
    let mut store = store_lock.lock();
    let (tokens, data) = store.get(name, id, layers.as_deref()).map_err(prefix_err)?;
    let manifest = store.manifest(name).map_err(prefix_err)?.clone();
    drop(store);
    let indexes: Vec<usize> = layers.unwrap_or_else(|| (0..data.len()).collect());
    let mut out = Vec::with_capacity(data.len() + 1);
    out.push(Reply::Integer(i64::from(tokens)));
    for (idx, d) in indexes.into_iter().zip(data) {
        out.push(match d {
            None => Reply::Null,
            Some(bytes) if decode => Reply::Bulk(
                crate::prefix::decode_layer(&manifest, idx, tokens, &bytes).map_err(prefix_err)?,
            ),
            Some(bytes) => Reply::Bulk(bytes.to_vec()),
        });
    }
    Ok(Reply::Array(out))
}

fn del(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let name = text(&argv[1])?;
    let id = block_id(&argv[2])?;
    let engine = ctx.engine;
    let mut store = engine.prefix().lock();
    let removed = store.delete(name, id).map_err(prefix_err)?;
    ctx.log_now(&if removed > 0 {
        vec![argv.to_vec()]
    } else {
        Vec::new()
    });
    Ok(Reply::Integer(removed as i64))
}

fn drop_namespace(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let name = text(&argv[1])?;
    let engine = ctx.engine;
    let mut store = engine.prefix().lock();
    let existed = store.drop_namespace(name);
    ctx.log_now(&if existed {
        vec![argv.to_vec()]
    } else {
        Vec::new()
    });
    Ok(Reply::Integer(i64::from(existed)))
}

/// `KV.EVICT ns id…` (recovery only).
fn evict(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    if !ctx.client.replaying {
        return Err(OpError::custom(
            "ERR KV.EVICT is internal: it replays logged evictions at start-up",
        ));
    }
    let name = text(&argv[1])?;
    let mut store = ctx.engine.prefix().lock();
    let mut n = 0;
    for a in &argv[2..] {
        if store.evict(name, block_id(a)?) {
            n += 1;
        }
    }
    Ok(Reply::Integer(n))
}
