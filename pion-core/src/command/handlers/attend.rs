//! Attention over a stored prefix over RESP: `ATTEND.VIEW` names a prefix of a
//! namespace, `ATTEND.QUERY` attends query heads over it (every layer a call carries),
//! `ATTEND.DROP` forgets the view. The namespace is the commands' key, so ACL key
//! patterns and slot routing treat them as the `KV.*` commands. Queries travel as
//! little-endian f32 (or f16/bf16) bytes `[positions, q_heads, head_dim]`; answers
//! as little-endian f32 bytes.

use half::{bf16, f16};
use kernels::Score;

use super::prefix::prefix_err;
use crate::command::ctx::Ctx;
use crate::command::flags::*;
use crate::command::handlers::prefix::{kv, NS_READ};
use crate::command::handlers::util::is_kw;
use crate::command::CommandSpec;
use crate::error::{OpError, OpResult};
use crate::prefix::attend::{LayerQuery, Sparse};
use crate::prefix::block_id::tokens_from_le;
use crate::prefix::ops;
use crate::prefix::BlockId;
use crate::reply::Reply;

/// This family's part of the command table.
pub static COMMANDS: &[CommandSpec] = &[
    kv("attend.view", -4, READONLY, view, NS_READ).doc(
        "Names a stored prefix of a namespace for attention: the longest stored prefix of a token sequence, or the block ids after BLOCKS; returns its tokens and blocks.",
        "0.1.0",
    ),
    kv("attend.query", -7, READONLY, query, NS_READ).doc(
        "Attends query heads (LAYER l Q bytes, for one or more layers) over a view's stored K/V, densely or within a SPARSE token budget; returns each layer's output and log-sum-exp.",
        "0.1.0",
    ),
    kv("attend.drop", 3, READONLY | FAST, drop_view, NS_READ)
        .doc("Forgets an attention view.", "0.1.0"),
];

fn text(arg: &[u8]) -> OpResult<&str> {
    std::str::from_utf8(arg).map_err(|_| OpError::custom("ERR namespace names must be UTF-8"))
}

fn number<T: std::str::FromStr>(arg: Option<&Vec<u8>>, what: &str) -> OpResult<T> {
    arg.and_then(|a| std::str::from_utf8(a).ok())
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| OpError::custom(format!("ERR {what}")))
}

/// `ATTEND.VIEW ns view tokens | TOKENS id… | BLOCKS id…` → `[tokens, blocks]`.
fn view(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let ns = text(&argv[1])?;
    let name = &argv[2];
    let rest = &argv[3..];
    let blocks = if is_kw(&rest[0], "blocks") {
        rest[1..]
            .iter()
            .map(|a| {
                BlockId::from_arg(a).ok_or_else(|| {
                    OpError::custom(
                        "ERR invalid block id: 32 hex digits, or root for a sequence's first block",
                    )
                })
            })
            .collect::<OpResult<Vec<BlockId>>>()?
    } else {
        let tokens = if is_kw(&rest[0], "tokens") {
            rest[1..]
                .iter()
                .map(|t| number::<u32>(Some(t), "token ids must be integers 0..4294967295"))
                .collect::<OpResult<Vec<u32>>>()?
        } else if rest.len() == 1 {
            tokens_from_le(&rest[0]).ok_or_else(|| {
                OpError::custom(
                    "ERR tokens must be little-endian u32 bytes (a multiple of 4 bytes)",
                )
            })?
        } else {
            return Err(OpError::Syntax);
        };
        ops::match_prefix(ctx.prefix(), ns, &tokens)
            .map_err(prefix_err)?
            .blocks
    };
    let v = ctx
        .attention()
        .create_view(ctx.prefix(), ns, name, blocks)
        .map_err(prefix_err)?;
    Ok(Reply::Array(vec![
        Reply::Integer(v.tokens as i64),
        Reply::Integer(v.blocks.len() as i64),
    ]))
}

/// Query floats from little-endian bytes of `dtype`.
fn floats(bytes: &[u8], dtype: &str) -> OpResult<Vec<f32>> {
    let bad = |size: usize| {
        OpError::custom(format!(
            "ERR Q must be a whole number of {dtype} values ({size} bytes each)"
        ))
    };
    match dtype {
        "f32" if bytes.len().is_multiple_of(4) => Ok(bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect()),
        "f16" if bytes.len().is_multiple_of(2) => Ok(bytes
            .chunks_exact(2)
            .map(|c| f16::from_le_bytes([c[0], c[1]]).to_f32())
            .collect()),
        "bf16" if bytes.len().is_multiple_of(2) => Ok(bytes
            .chunks_exact(2)
            .map(|c| bf16::from_le_bytes([c[0], c[1]]).to_f32())
            .collect()),
        "f32" => Err(bad(4)),
        _ => Err(bad(2)),
    }
}

/// `ATTEND.QUERY ns view LAYER l Q bytes [LAYER l Q bytes …] [POSITIONS p]
/// [DTYPE f32|f16|bf16] [SCALE s] [SPARSE budget [SINK blocks] [RECENT tokens]
/// [SCORE QUEST|MEAN]]` → per layer `[output, lse, tokens, blocks]`.
fn query(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let ns = text(&argv[1])?;
    let name = &argv[2];
    let mut layers: Vec<(usize, &[u8])> = Vec::new();
    let (mut positions, mut dtype, mut scale, mut sparse) = (1usize, "f32".to_string(), None, None);
    let mut i = 3;
    while i < argv.len() {
        let a = &argv[i];
        if is_kw(a, "layer") {
            let layer = number::<usize>(argv.get(i + 1), "LAYER needs a layer number")?;
            if !argv.get(i + 2).is_some_and(|k| is_kw(k, "q")) {
                return Err(OpError::custom(
                    "ERR LAYER l must be followed by Q and the query bytes",
                ));
            }
            let q = argv.get(i + 3).ok_or(OpError::Syntax)?;
            layers.push((layer, q));
            i += 4;
        } else if is_kw(a, "positions") {
            positions = number(argv.get(i + 1), "POSITIONS must be a positive integer")?;
            i += 2;
        } else if is_kw(a, "dtype") {
            let d = argv
                .get(i + 1)
                .map(|d| String::from_utf8_lossy(d).to_ascii_lowercase());
            dtype = match d.as_deref() {
                Some(d @ ("f32" | "f16" | "bf16")) => d.to_string(),
                Some("float32") => "f32".into(),
                Some("float16") => "f16".into(),
                Some("bfloat16") => "bf16".into(),
                _ => return Err(OpError::custom("ERR DTYPE must be f32, f16 or bf16")),
            };
            i += 2;
        } else if is_kw(a, "scale") {
            let s: f32 = number(argv.get(i + 1), "SCALE must be a number")?;
            if !s.is_finite() {
                return Err(OpError::custom("ERR SCALE must be finite"));
            }
            scale = Some(s);
            i += 2;
        } else if is_kw(a, "sparse") {
            let budget = number::<usize>(argv.get(i + 1), "SPARSE needs a token budget")?;
            let mut s = Sparse {
                budget,
                sink_blocks: None,
                recent_tokens: None,
                score: Score::Quest,
            };
            i += 2;
            loop {
                match argv.get(i) {
                    Some(k) if is_kw(k, "sink") => {
                        s.sink_blocks =
                            Some(number(argv.get(i + 1), "SINK must be a block count")?);
                    }
                    Some(k) if is_kw(k, "recent") => {
                        s.recent_tokens =
                            Some(number(argv.get(i + 1), "RECENT must be a token count")?);
                    }
                    Some(k) if is_kw(k, "score") => {
                        s.score = match argv.get(i + 1) {
                            Some(v) if is_kw(v, "quest") => Score::Quest,
                            Some(v) if is_kw(v, "mean") => Score::MeanKey,
                            _ => return Err(OpError::custom("ERR SCORE must be QUEST or MEAN")),
                        };
                    }
                    _ => break,
                }
                i += 2;
            }
            sparse = Some(s);
        } else {
            return Err(OpError::Syntax);
        }
    }
    if layers.is_empty() {
        return Err(OpError::custom(
            "ERR ATTEND.QUERY needs at least one LAYER l Q bytes",
        ));
    }
    let queries = layers
        .iter()
        .map(|&(layer, bytes)| {
            Ok(LayerQuery {
                layer,
                data: floats(bytes, &dtype)?,
                positions,
                scale,
                sparse,
            })
        })
        .collect::<OpResult<Vec<LayerQuery>>>()?;
    let policy = ctx.engine().attend_policy();
    let answers = ctx
        .attention()
        .query(ctx.prefix(), policy, ns, name, &queries)
        .map_err(prefix_err)?;
    let bytes = |v: &[f32]| -> Vec<u8> { v.iter().flat_map(|x| x.to_le_bytes()).collect() };
    Ok(Reply::Array(
        answers
            .iter()
            .map(|a| {
                Reply::Array(vec![
                    Reply::Bulk(bytes(&a.state.out)),
                    Reply::Bulk(bytes(&a.state.lse)),
                    Reply::Integer(a.tokens as i64),
                    Reply::Integer(a.blocks as i64),
                ])
            })
            .collect(),
    ))
}

/// `ATTEND.DROP ns view` → 1 if it existed.
fn drop_view(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let ns = text(&argv[1])?;
    Ok(Reply::Integer(i64::from(
        ctx.attention().drop_view(ns, &argv[2]),
    )))
}
