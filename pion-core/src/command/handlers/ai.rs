//! `AI.EMBED` and `AI.SEMANTIC_CACHE`: sentence embeddings on the server, and a cache
//! that answers a prompt with the response stored for a prompt of the same meaning.
//!
//! A semantic cache is a vector set (its key is the command's key, so it lives on one
//! slot and a cluster routes it like any key). Each entry is an element whose vector
//! is the prompt's embedding, kept unquantised (`NOQUANT`, so similarities are exact
//! cosines), and whose JSON attributes hold `prompt`, `response`, `scope` and the
//! Unix-millisecond `created` and `expires` times. The element's name is the prompt
//! (after its scope and U+001F when it has one), so storing a prompt again replaces
//! its entry. `VSIM`, `VGETATTR`, `VCARD` and `DUMP` all work on a cache.
//!
//! Embedding runs with no key locked: the handler parses, leaves the embedding to a
//! detour, and finishes under the key's lock. `SET` is logged as the `VADD` it
//! amounts to (vector included), so replaying the log needs no model and gives the
//! same entries. An entry past its `expires` is never returned; each `SET` samples a
//! few entries (all of them in a cache of up to 16) and deletes the expired ones
//! it finds (logged as `VREM`), as Redis's
//! active expiry samples keys, and `FLUSH` drops the whole cache.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use rand::Rng;

use crate::command::ctx::{Ctx, Resume};
use crate::command::flags::*;
use crate::command::handlers::util::is_kw;
use crate::command::{CommandSpec, Group, KeySpecDoc};
use crate::embed::EmbedService;
use crate::engine::Engine;
use crate::error::{OpError, OpResult};
use crate::reply::Reply;
use crate::util::num::{parse_f64, parse_i64};
use crate::value::vset::{Element, VQuant};
use crate::value::{Value, VectorSetValue};

/// The similarity a `GET` needs by default. all-MiniLM-L6-v2 puts rewordings of one
/// question at 0.93–0.95 and unrelated prompts below 0.3 (tests/tests/embed_model.rs);
/// 0.9 is the cosine RedisVL's `SemanticCache` uses by default (distance 0.1).
pub const DEFAULT_THRESHOLD: f64 = 0.9;
/// Entries a `SET` examines for expiry.
const EXPIRY_SAMPLES: usize = 16;
/// Candidates a `GET` ranks.
const CANDIDATES: usize = 8;
/// The HNSW `M` of a cache's graph.
const CACHE_M: usize = 16;

const KEY_WRITE: &[KeySpecDoc] = &[KeySpecDoc::range(&["RW", "insert"], 2, 0, 1, 0)];
const KEY_READ: &[KeySpecDoc] = &[KeySpecDoc::range(&["RO", "access"], 2, 0, 1, 0)];
const KEY_DELETE: &[KeySpecDoc] = &[KeySpecDoc::range(&["RW", "delete"], 2, 0, 1, 0)];

const fn sub(
    name: &'static str,
    arity: i32,
    flags: u64,
    handler: crate::command::Handler,
    keys: &'static [KeySpecDoc],
    summary: &'static str,
) -> CommandSpec {
    CommandSpec::new(name, arity, flags, Group::Ai, handler)
        .key_specs(keys)
        .keys(2, 2, 1)
        .doc(summary, "0.1.0")
}

static SEMANTIC_CACHE: &[CommandSpec] = &[
    sub(
        "set",
        -5,
        WRITE | DENYOOM,
        cache_set,
        KEY_WRITE,
        "Stores a response for a prompt, embedded on the server [TTL seconds] [SCOPE scope].",
    ),
    sub(
        "get",
        -4,
        READONLY,
        cache_get,
        KEY_READ,
        "Returns the response stored for the most similar prompt and its cosine similarity, if at or above the threshold [THRESHOLD t] [SCOPE scope].",
    ),
    sub(
        "del",
        -4,
        WRITE,
        cache_del,
        KEY_DELETE,
        "Deletes the entry of exactly this prompt [SCOPE scope].",
    ),
    sub(
        "flush",
        3,
        WRITE,
        cache_flush,
        KEY_DELETE,
        "Deletes a semantic cache; returns how many entries it held.",
    ),
    sub(
        "info",
        3,
        READONLY,
        cache_info,
        KEY_READ,
        "Describes a semantic cache: entries, expired entries, dimensions, model.",
    ),
];

/// This family's part of the command table.
pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("ai.embed", -2, 0, Group::Ai, embed)
        .doc(
            "Embeds texts with the server's sentence model; returns one FLOAT32 vector (little-endian bytes) per text.",
            "0.1.0",
        ),
    CommandSpec::container("ai.semantic_cache", Group::Ai, SEMANTIC_CACHE)
        .doc("A container for semantic cache commands.", "0.1.0"),
];

fn no_model() -> OpError {
    OpError::custom("ERR no embedding model is loaded (start the server with --embed-model DIR)")
}

fn embedder(engine: &Engine) -> OpResult<Arc<EmbedService>> {
    engine.embedder().cloned().ok_or_else(no_model)
}

fn utf8(arg: &[u8], what: &str) -> OpResult<String> {
    String::from_utf8(arg.to_vec())
        .map_err(|_| OpError::custom(format!("ERR the {what} must be UTF-8 text")))
}

fn embed_err(e: crate::embed::EmbedError) -> OpError {
    OpError::custom(format!("ERR {e}"))
}

/// A vector as `FP32` bytes.
fn blob(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// `AI.EMBED text [text …]`.
fn embed(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let service = embedder(ctx.engine())?;
    let texts = argv[1..]
        .iter()
        .map(|a| utf8(a, "text"))
        .collect::<OpResult<Vec<_>>>()?;
    let vectors = service.embed(texts).map_err(embed_err)?;
    Ok(Reply::Array(
        vectors.iter().map(|v| Reply::Bulk(blob(v))).collect(),
    ))
}

/// The element name of a prompt in a scope.
fn element_name(scope: &str, prompt: &str) -> Vec<u8> {
    if scope.is_empty() {
        prompt.as_bytes().to_vec()
    } else {
        format!("{scope}\u{1f}{prompt}").into_bytes()
    }
}

/// An entry's attributes, read back.
struct Entry {
    response: String,
    scope: String,
    expires: Option<i64>,
}

fn entry(e: &Element) -> Option<Entry> {
    let attr: serde_json::Value = serde_json::from_slice(e.attr.as_deref()?).ok()?;
    Some(Entry {
        response: attr.get("response")?.as_str()?.to_owned(),
        scope: attr
            .get("scope")
            .and_then(|s| s.as_str())
            .unwrap_or("")
            .to_owned(),
        expires: attr.get("expires").and_then(|v| v.as_i64()),
    })
}

fn expired(e: &Element, now: i64) -> bool {
    entry(e).is_some_and(|en| en.expires.is_some_and(|at| at <= now))
}

/// Options after the prompt (and response): `TTL`, `SCOPE`, `THRESHOLD`, as allowed.
#[derive(Default)]
struct Options {
    ttl_ms: Option<i64>,
    scope: String,
    threshold: Option<f64>,
}

fn options(argv: &[Vec<u8>], from: usize, allowed: &[&str]) -> OpResult<Options> {
    let mut o = Options::default();
    let mut i = from;
    while i < argv.len() {
        let kw = &argv[i];
        let allowed_kw = |name: &str| allowed.contains(&name) && is_kw(kw, name);
        let value = argv.get(i + 1).ok_or(OpError::Syntax);
        if allowed_kw("TTL") {
            let secs = parse_i64(value?)
                .filter(|&s| s > 0 && s <= i64::MAX / 1000)
                .ok_or_else(|| OpError::custom("ERR TTL must be a positive number of seconds"))?;
            o.ttl_ms = Some(secs * 1000);
        } else if allowed_kw("SCOPE") {
            o.scope = utf8(value?, "scope")?;
        } else if allowed_kw("THRESHOLD") {
            let t = parse_f64(value?)
                .filter(|t| (-1.0..=1.0).contains(t))
                .ok_or_else(|| {
                    OpError::custom("ERR THRESHOLD must be a cosine similarity between -1 and 1")
                })?;
            o.threshold = Some(t);
        } else {
            return Err(OpError::Syntax);
        }
        i += 2;
    }
    Ok(o)
}

/// The cache at the key, checked against the model's dimensions.
fn cache_mut<'c>(
    ctx: &'c mut Ctx<'_>,
    key: &[u8],
    dim: usize,
) -> OpResult<Option<&'c mut VectorSetValue>> {
    let db = ctx.db();
    match ctx.ks.get_mut(db, key)? {
        None => Ok(None),
        Some(v) => {
            let set = v.as_vset_mut()?;
            check_shape(set, dim)?;
            Ok(Some(set))
        }
    }
}

fn check_shape(set: &VectorSetValue, dim: usize) -> OpResult<()> {
    if set.dim() != dim || set.projection().is_some() {
        return Err(OpError::custom(format!(
            "ERR the vector set at this key holds {}-dimensional vectors; the model gives {dim}",
            set.dim()
        )));
    }
    if set.quant() != VQuant::NoQuant {
        return Err(OpError::custom(
            "ERR the vector set at this key is quantized; a semantic cache keeps NOQUANT vectors",
        ));
    }
    Ok(())
}

/// `AI.SEMANTIC_CACHE SET key prompt response [TTL seconds] [SCOPE scope]`.
fn cache_set(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let prompt = utf8(&argv[3], "prompt")?;
    let response = utf8(&argv[4], "response")?;
    let opts = options(argv, 5, &["TTL", "SCOPE"])?;
    let service = embedder(ctx.engine())?;
    ctx.detour = Some(Box::new(move |_: &Engine| -> Resume {
        let vector = service.embed(vec![prompt.clone()]).map(|mut v| v.remove(0));
        Box::new(move |ctx: &mut Ctx<'_>, argv: &[Vec<u8>]| {
            let vector = vector.map_err(embed_err)?;
            store(ctx, argv, &prompt, &response, &opts, &vector)
        })
    }));
    Ok(Reply::ok())
}

fn store(
    ctx: &mut Ctx<'_>,
    argv: &[Vec<u8>],
    prompt: &str,
    response: &str,
    opts: &Options,
    vector: &[f32],
) -> OpResult<Reply> {
    let key = &argv[2];
    let now = ctx.now_ms();
    let mut attr = serde_json::json!({
        "prompt": prompt,
        "response": response,
        "scope": opts.scope,
        "created": now,
    });
    if let Some(ttl) = opts.ttl_ms {
        attr["expires"] = serde_json::json!(now.saturating_add(ttl));
    }
    let attr = attr.to_string().into_bytes();
    let name = element_name(&opts.scope, prompt);
    let mut logged = vec![vec![
        b"VADD".to_vec(),
        key.clone(),
        b"FP32".to_vec(),
        blob(vector),
        name.clone(),
        b"NOQUANT".to_vec(),
        b"SETATTR".to_vec(),
        attr.clone(),
        b"M".to_vec(),
        CACHE_M.to_string().into_bytes(),
    ]];
    let db = ctx.db();
    match cache_mut(ctx, key, vector.len())? {
        Some(set) => {
            set.insert(&name, vector, Some(&attr));
            // Examine a few entries (every one in a small cache) and drop the
            // expired ones.
            let mut rng = rand::thread_rng();
            let len = set.len();
            let positions: Vec<usize> = if len <= EXPIRY_SAMPLES {
                (0..len).collect()
            } else {
                (0..EXPIRY_SAMPLES).map(|_| rng.gen_range(0..len)).collect()
            };
            let mut dead = Vec::new();
            for pos in positions {
                if let Some(e) = set.at(pos) {
                    if expired(e, now) && !dead.contains(&e.name) {
                        dead.push(e.name.clone());
                    }
                }
            }
            for d in dead {
                set.remove(&d);
                logged.push(vec![b"VREM".to_vec(), key.clone(), d]);
            }
        }
        None => {
            let mut set = VectorSetValue::new(vector.len(), VQuant::NoQuant, CACHE_M, None);
            set.insert(&name, vector, Some(&attr));
            ctx.ks.set(db, key, Value::VectorSet(Box::new(set)))?;
        }
    }
    ctx.log_as(logged);
    Ok(Reply::ok())
}

/// `AI.SEMANTIC_CACHE GET key prompt [THRESHOLD t] [SCOPE scope]` → nil, or the
/// response and its similarity.
fn cache_get(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let prompt = utf8(&argv[3], "prompt")?;
    let opts = options(argv, 4, &["THRESHOLD", "SCOPE"])?;
    let service = embedder(ctx.engine())?;
    ctx.detour = Some(Box::new(move |_: &Engine| -> Resume {
        let vector = service.embed(vec![prompt]).map(|mut v| v.remove(0));
        Box::new(move |ctx: &mut Ctx<'_>, argv: &[Vec<u8>]| {
            let vector = vector.map_err(embed_err)?;
            let reply = lookup(ctx, &argv[2], &opts, &vector)?;
            let stats = service.stats();
            let counter = if matches!(reply, Reply::Null) {
                &stats.cache_misses
            } else {
                &stats.cache_hits
            };
            counter.fetch_add(1, Ordering::Relaxed);
            Ok(reply)
        })
    }));
    Ok(Reply::ok())
}

fn lookup(ctx: &mut Ctx<'_>, key: &[u8], opts: &Options, vector: &[f32]) -> OpResult<Reply> {
    let now = ctx.now_ms();
    let db = ctx.db();
    let Some(value) = ctx.ks.get(db, key)? else {
        return Ok(Reply::Null);
    };
    let set = value.as_vset()?;
    check_shape(set, vector.len())?;
    let scope = opts.scope.as_str();
    let accept = |e: &Element| {
        entry(e).is_some_and(|en| en.scope == scope && en.expires.is_none_or(|at| at > now))
    };
    let hits = set.search(
        vector,
        CANDIDATES,
        Some(CANDIDATES * 8),
        false,
        Some(&accept),
        // A cache lookup finds its scope's nearest however rare the scope is.
        None,
    );
    let threshold = opts.threshold.unwrap_or(DEFAULT_THRESHOLD);
    let best = hits.first().and_then(|h| {
        let e = set.element(h.label)?;
        let similarity = 1.0 - f64::from(h.distance);
        (similarity >= threshold).then(|| (entry(e), similarity))
    });
    Ok(match best {
        Some((Some(en), similarity)) => Reply::Array(vec![
            Reply::Bulk(en.response.into_bytes()),
            Reply::Double(similarity),
        ]),
        _ => Reply::Null,
    })
}

/// `AI.SEMANTIC_CACHE DEL key prompt [SCOPE scope]` → 1 or 0.
fn cache_del(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let prompt = utf8(&argv[3], "prompt")?;
    let opts = options(argv, 4, &["SCOPE"])?;
    let name = element_name(&opts.scope, &prompt);
    let db = ctx.db();
    let removed = match ctx.ks.get_mut(db, &argv[2])? {
        Some(v) => v.as_vset_mut()?.remove(&name),
        None => false,
    };
    ctx.log_as(if removed {
        vec![vec![b"VREM".to_vec(), argv[2].clone(), name]]
    } else {
        Vec::new()
    });
    Ok(Reply::Integer(i64::from(removed)))
}

/// `AI.SEMANTIC_CACHE FLUSH key` → the number of entries dropped.
fn cache_flush(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let db = ctx.db();
    let held = match ctx.ks.get(db, &argv[2])? {
        Some(v) => v.as_vset()?.len(),
        None => 0,
    };
    if held == 0 {
        ctx.log_as(Vec::new());
        return Ok(Reply::Integer(0));
    }
    ctx.ks.remove(db, &argv[2])?;
    ctx.notify(crate::pubsub::notify::GENERIC, "del", &argv[2]);
    ctx.log_as(vec![vec![b"DEL".to_vec(), argv[2].clone()]]);
    Ok(Reply::Integer(held as i64))
}

/// `AI.SEMANTIC_CACHE INFO key` → a map.
fn cache_info(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let service = ctx.engine().embedder().cloned();
    let now = ctx.now_ms();
    let db = ctx.db();
    let (entries, expired_entries, dim) = match ctx.ks.get(db, &argv[2])? {
        Some(v) => {
            let set = v.as_vset()?;
            let dead = set.elements().filter(|(_, e)| expired(e, now)).count();
            (set.len(), dead, set.dim())
        }
        None => (0, 0, service.as_ref().map_or(0, |s| s.dim())),
    };
    let field = |k: &str, v: Reply| (Reply::bulk(k), v);
    let mut out = vec![
        field("entries", Reply::Integer(entries as i64)),
        field("expired-entries", Reply::Integer(expired_entries as i64)),
        field("dim", Reply::Integer(dim as i64)),
        field("default-threshold", Reply::Double(DEFAULT_THRESHOLD)),
    ];
    match &service {
        Some(s) => {
            out.push(field("model", Reply::bulk(s.model())));
            out.push(field("max-tokens", Reply::Integer(s.max_tokens() as i64)));
        }
        None => out.push(field("model", Reply::Null)),
    }
    Ok(Reply::Map(out))
}
