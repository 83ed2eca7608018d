//! The prompt cache over RESP: `KV.*` commands on the prefix store. Token sequences
//! travel as little-endian `u32` bytes (or, for inspection from redis-cli, as decimal
//! arguments after `TOKENS`); block ids as 32 hex digits; layer data as raw bytes.
//!
//! Changes are logged while the store's lock is held (`Ctx::log_now`), so the log's
//! order is the store's. A durable store writes the block's payloads to the block
//! files and logs where they are (`KV.PUTREF`), with the evictions it caused, so
//! recovery rebuilds exactly what was acknowledged and nothing evicted.

use crate::command::ctx::Ctx;
use crate::command::flags::*;
use crate::command::handlers::util::is_kw;
use crate::command::{CommandSpec, Group, KeySpecDoc};
use crate::error::{OpError, OpResult};
use crate::prefix::block_id::tokens_from_le;
use crate::prefix::ops::{self, ChangeLog, Fetched, Outcome};
use crate::prefix::store::LayerIn;
use crate::prefix::{BlockId, PrefixError};
use crate::reply::Reply;

/// The namespace, read (`KV.GET`, `KV.MATCH` …, `ATTEND.*`).
pub(super) const NS_READ: &[KeySpecDoc] = &[KeySpecDoc::range(&["RO", "access"], 1, 0, 1, 0)];
/// The namespace, written to (`KV.PUT`, `KV.REGISTER`).
const NS_WRITE: &[KeySpecDoc] = &[KeySpecDoc::range(&["RW", "insert"], 1, 0, 1, 0)];
/// The namespace, deleted from (`KV.DEL`, `KV.DROP`, evictions).
const NS_DELETE: &[KeySpecDoc] = &[KeySpecDoc::range(&["RW", "delete"], 1, 0, 1, 0)];

/// A prompt-cache command: its first argument names a namespace, which ACL key
/// patterns (`~ns:*`) and slot routing treat as its key (it is not a keyspace key, so
/// no shard is locked for it). `ATTEND.*` is built the same way.
pub(super) const fn kv(
    name: &'static str,
    arity: i32,
    flags: u64,
    handler: crate::command::Handler,
    specs: &'static [KeySpecDoc],
) -> CommandSpec {
    CommandSpec::new(
        name,
        arity,
        flags | NAMESPACE_KEYS,
        Group::PrefixCache,
        handler,
    )
    .keys(1, 1, 1)
    .key_specs(specs)
}

/// This family's part of the command table.
pub static COMMANDS: &[CommandSpec] = &[
    kv("kv.register", 3, WRITE, register, NS_WRITE).doc(
        "Registers a prompt-cache namespace with its JSON manifest (model, tokenizer, block size, dtype, tier, layers).",
        "0.1.0",
    ),
    kv("kv.manifest", 2, READONLY | FAST, manifest, NS_READ)
        .doc("Returns a namespace's manifest as JSON.", "0.1.0"),
    CommandSpec::new("kv.namespaces", 1, READONLY, Group::PrefixCache, namespaces)
        .doc("Lists the prompt-cache namespaces.", "0.1.0"),
    kv("kv.info", -1, READONLY | NO_MANDATORY_KEYS, info, NS_READ).doc(
        "Returns prompt-cache counters: all namespaces, or one.",
        "0.1.0",
    ),
    kv("kv.put", -5, WRITE | DENYOOM, put, NS_WRITE).doc(
        "Stores one block (its tokens and every layer's data) after a parent block; returns its id.",
        "0.1.0",
    ),
    kv("kv.match", -3, READONLY, match_prefix, NS_READ).doc(
        "Returns the longest stored usable prefix of a token sequence: tokens matched and block ids.",
        "0.1.0",
    ),
    kv("kv.export", -3, READONLY, export, NS_READ).doc(
        "Returns the longest stored usable prefix of a token sequence and the path of a safetensors file holding it (LAYOUT mlx-lm or mlx-lm-legacy).",
        "0.1.0",
    ),
    kv("kv.blockids", -3, READONLY | FAST, block_ids, NS_READ).doc(
        "Returns the block ids of a token sequence (whether stored or not).",
        "0.1.0",
    ),
    kv("kv.get", -3, READONLY, get, NS_READ).doc(
        "Returns a block's token count and its layers' data (all, or those listed after LAYERS; DECODE: back to the namespace's dtype).",
        "0.1.0",
    ),
    kv("kv.mget", -2, READONLY, mget, NS_READ).doc(
        "Returns several blocks of a namespace, each as KV.GET returns it (LAYERS and DECODE as for KV.GET).",
        "0.1.0",
    ),
    kv("kv.del", 3, WRITE, del, NS_DELETE)
        .doc("Deletes a block and every block after it.", "0.1.0"),
    kv("kv.drop", 2, WRITE, drop_namespace, NS_DELETE)
        .doc("Deletes a namespace and all its blocks.", "0.1.0"),
    kv("kv.evict", -3, WRITE, evict, NS_DELETE).doc(
        "Internal: replays logged evictions at start-up (refused from clients).",
        "0.1.0",
    ),
    kv("kv.putref", 5, WRITE, put_ref, NS_WRITE).doc(
        "Internal: replays a logged store whose payloads are in the block files (refused from clients).",
        "0.1.0",
    ),
    kv("kv.reloc", 4, WRITE, reloc, NS_WRITE).doc(
        "Internal: replays compaction's new payload locations (refused from clients).",
        "0.1.0",
    ),
];

/// The wire error for a refused prompt-cache operation.
pub(super) fn prefix_err(e: PrefixError) -> OpError {
    match e {
        PrefixError::Refused(text) => OpError::Custom(text.into()),
        PrefixError::Disk(failure) => {
            OpError::DiskFailed(format!("block file write failed: {failure}"))
        }
    }
}

fn text(arg: &[u8]) -> OpResult<&str> {
    std::str::from_utf8(arg).map_err(|_| OpError::custom("ERR namespace names must be UTF-8"))
}

fn block_id(arg: &[u8]) -> OpResult<BlockId> {
    BlockId::from_arg(arg).ok_or_else(|| {
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

impl Ctx<'_> {
    /// Where this command's prompt-cache changes are logged.
    fn prefix_log(&self) -> ChangeLog<'_> {
        ChangeLog::new(self.durability().map(|d| d.wal()), self.now_ms())
    }

    /// The prompt cache logged this command's change itself as record `seq` (0:
    /// nothing): the dispatcher logs nothing more, and the reply waits for `seq`.
    fn prefix_logged(&mut self, seq: u64) {
        self.effect = crate::command::ctx::Effect::Nothing;
        if seq > 0 {
            self.client.wal_seq = self.client.wal_seq.max(seq);
        }
    }

    /// Hands a typed caller (the binary lane) the result itself, beside the reply.
    fn hand_over(&mut self, outcome: impl FnOnce() -> Outcome) {
        if self.client.wants_outcome {
            self.client.outcome = Some(outcome());
        }
    }
}

fn register(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let name = text(&argv[1])?;
    let (_, seq) =
        ops::register(ctx.prefix(), ctx.prefix_log(), name, &argv[2]).map_err(prefix_err)?;
    ctx.prefix_logged(seq);
    Ok(Reply::ok())
}

fn manifest(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let store = ctx.prefix().lock();
    let m = store.manifest(text(&argv[1])?).map_err(prefix_err)?;
    Ok(Reply::bulk(m.to_json()))
}

fn namespaces(ctx: &mut Ctx<'_>, _: &[Vec<u8>]) -> OpResult<Reply> {
    let store = ctx.prefix().lock();
    Ok(Reply::Array(
        store.names().into_iter().map(Reply::bulk).collect(),
    ))
}

fn info(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let store = ctx.prefix().lock();
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

/// `KV.PUT ns parent tokens layer…`. A typed caller may hand the layers over as
/// buffers ([`ClientState::layers_in`](crate::clients::ClientState::layers_in)),
/// one per (empty) layer argument, which the store then adopts without a copy.
fn put(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let handed = ctx.client.layers_in.take();
    let name = text(&argv[1])?;
    let parent = block_id(&argv[2])?;
    let tokens = tokens_from_le(&argv[3]).ok_or_else(|| {
        OpError::custom("ERR tokens must be little-endian u32 bytes (a multiple of 4 bytes)")
    })?;
    let layers: Vec<LayerIn<'_>> = match handed {
        Some(buffers) if buffers.len() == argv.len() - 4 => {
            buffers.into_iter().map(LayerIn::Adopt).collect()
        }
        Some(_) => {
            return Err(OpError::custom(
                "ERR the layers handed over are not one per layer argument",
            ))
        }
        None => argv[4..].iter().map(|a| LayerIn::Copy(a)).collect(),
    };
    let (id, seq) = ops::put(
        ctx.prefix(),
        ctx.prefix_log(),
        name,
        parent,
        &tokens,
        &layers,
    )
    .map_err(prefix_err)?;
    ctx.prefix_logged(seq);
    ctx.hand_over(|| Outcome::Stored(id));
    Ok(Reply::bulk(id.hex()))
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
    let id =
        ops::replay_put_ref(ctx.prefix(), name, parent, &tokens, &argv[4]).map_err(prefix_err)?;
    Ok(Reply::bulk(id.hex()))
}

/// `KV.RELOC ns id refs` (recovery only): compaction moved these payloads.
fn reloc(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    replay_only(ctx, "KV.RELOC")?;
    let name = text(&argv[1])?;
    let id = block_id(&argv[2])?;
    let n = ops::replay_reloc(ctx.prefix(), name, id, &argv[3]).map_err(prefix_err)?;
    Ok(Reply::Integer(n as i64))
}

fn match_prefix(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let name = text(&argv[1])?;
    let tokens = tokens_arg(argv, 2)?;
    let m = ops::match_prefix(ctx.prefix(), name, &tokens).map_err(prefix_err)?;
    let reply = Reply::Array(vec![
        Reply::Integer(m.tokens as i64),
        Reply::Array(m.blocks.iter().map(|b| Reply::bulk(b.hex())).collect()),
    ]);
    ctx.hand_over(|| Outcome::Matched(m));
    Ok(reply)
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
    match export::export(ctx.prefix(), name, &tokens, layout) {
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

/// What follows a fetch's block ids: `LAYERS i …` and `DECODE`, in any order.
struct FetchOptions {
    layers: Option<Vec<usize>>,
    decode: bool,
}

fn fetch_options(rest: &[Vec<u8>]) -> OpResult<FetchOptions> {
    let mut options = FetchOptions {
        layers: None,
        decode: false,
    };
    let mut i = 0;
    while i < rest.len() {
        if is_kw(&rest[i], "decode") {
            options.decode = true;
            i += 1;
        } else if is_kw(&rest[i], "layers") {
            let mut list = Vec::new();
            i += 1;
            while i < rest.len() && !is_kw(&rest[i], "decode") {
                let n = std::str::from_utf8(&rest[i])
                    .ok()
                    .and_then(|s| s.parse::<usize>().ok())
                    .ok_or_else(|| OpError::custom("ERR layer indexes must be integers"))?;
                list.push(n);
                i += 1;
            }
            options.layers = Some(list);
        } else {
            return Err(OpError::Syntax);
        }
    }
    Ok(options)
}

/// Fetches `ids` of namespace `name` as `rest` asks: the blocks themselves for a
/// typed caller, or each as a reply (`[tokens, layer…]`).
fn fetch(ctx: &mut Ctx<'_>, name: &str, ids: &[BlockId], rest: &[Vec<u8>]) -> OpResult<Vec<Reply>> {
    let options = fetch_options(rest)?;
    let store = ctx.prefix();
    let blocks = ops::get(store, name, ids, options.layers.as_deref()).map_err(prefix_err)?;
    if !options.decode && ctx.client.wants_outcome {
        // The typed caller writes the store's buffers out itself; the reply only
        // says how many tokens each block holds.
        let summary = blocks
            .iter()
            .map(|b| Reply::Integer(i64::from(b.tokens)))
            .collect();
        ctx.client.outcome = Some(Outcome::Fetched(blocks));
        return Ok(summary);
    }
    let manifest = store.lock().manifest(name).map_err(prefix_err)?.clone();
    blocks
        .into_iter()
        .map(|Fetched { tokens, layers }| {
            let indexes: Vec<usize> = options
                .layers
                .clone()
                .unwrap_or_else(|| (0..layers.len()).collect());
            let mut out = Vec::with_capacity(layers.len() + 1);
            out.push(Reply::Integer(i64::from(tokens)));
            for (idx, d) in indexes.into_iter().zip(layers) {
                out.push(match d {
                    None => Reply::Null,
                    Some(bytes) if options.decode => Reply::Bulk(
                        crate::prefix::decode_layer(&manifest, idx, tokens, &bytes)
                            .map_err(prefix_err)?,
                    ),
                    Some(bytes) => Reply::Bulk(bytes.to_vec()),
                });
            }
            Ok(Reply::Array(out))
        })
        .collect()
}

/// `KV.GET ns id [LAYERS i …] [DECODE]`.
fn get(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let name = text(&argv[1])?;
    let id = block_id(&argv[2])?;
    let mut blocks = fetch(ctx, name, &[id], &argv[3..])?;
    Ok(blocks.pop().unwrap_or(Reply::Null))
}

/// `KV.MGET ns id [id …] [LAYERS i …] [DECODE]`: every block or an error (the first
/// block not stored), never a partial answer.
fn mget(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let name = text(&argv[1])?;
    let options_at = argv[2..]
        .iter()
        .position(|a| is_kw(a, "layers") || is_kw(a, "decode"))
        .map_or(argv.len(), |i| i + 2);
    let ids = argv[2..options_at]
        .iter()
        .map(|a| block_id(a))
        .collect::<OpResult<Vec<BlockId>>>()?;
    Ok(Reply::Array(fetch(ctx, name, &ids, &argv[options_at..])?))
}

fn del(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let name = text(&argv[1])?;
    let id = block_id(&argv[2])?;
    let (removed, seq) =
        ops::delete(ctx.prefix(), ctx.prefix_log(), name, id).map_err(prefix_err)?;
    ctx.prefix_logged(seq);
    Ok(Reply::Integer(removed as i64))
}

fn drop_namespace(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let name = text(&argv[1])?;
    let (existed, seq) = ops::drop_namespace(ctx.prefix(), ctx.prefix_log(), name);
    ctx.attention().drop_namespace(name);
    ctx.prefix_logged(seq);
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
    let ids = argv[2..]
        .iter()
        .map(|a| block_id(a))
        .collect::<OpResult<Vec<BlockId>>>()?;
    Ok(Reply::Integer(
        ops::replay_evict(ctx.prefix(), name, &ids) as i64
    ))
}
