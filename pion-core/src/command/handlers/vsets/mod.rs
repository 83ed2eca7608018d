//! Vector-set commands (`VADD`, `VSIM` and the rest of Redis 8's `V*` family).
//!
//! Redis 8 ships vector sets as a built-in module, and it shows: every command has
//! arity -1 and checks its own argument count (the error names the command as sent),
//! `COMMAND INFO` lists the `module` flag and no ACL category, and doubles are replied
//! in their shortest form. The table below reproduces that. Adding (`VADD`) and
//! searching (`VSIM`) live in [`add`] and [`search`], the `FILTER` language in
//! [`filter`] (the attribute fields it reads in `attrs`, plain documents by the
//! scanner in `plain_json`); the small readers and
//! writers are here.

mod add;
mod attrs;
pub mod filter;
mod plain_json;
mod search;

#[cfg(test)]
mod tests;

use std::collections::HashSet;

use rand::Rng;

use crate::command::ctx::Ctx;
use crate::command::flags::*;
use crate::command::handlers::util::{is_kw, text};
use crate::command::{CommandSpec, Group, KeySpecDoc};
use crate::error::{OpError, OpResult};
use crate::reply::Reply;
use crate::util::num::parse_i64;
use crate::value::vset::Stored;
use crate::value::VectorSetValue;

/// Every vector-set command's single key spec, as Redis 8 reports it.
const KEY: &[KeySpecDoc] = &[KeySpecDoc::range(&["RW", "access", "update"], 1, 0, 1, 0)];

const fn vcmd(
    name: &'static str,
    flags: u64,
    handler: crate::command::Handler,
    summary: &'static str,
) -> CommandSpec {
    CommandSpec::new(name, -1, flags | MODULE, Group::VectorSet, handler)
        .key_specs(KEY)
        .keys(1, 1, 1)
        .doc(summary, "8.0.0")
}

/// This family's part of the command table.
pub static COMMANDS: &[CommandSpec] = &[
    vcmd(
        "vadd",
        WRITE | DENYOOM,
        add::vadd,
        "Add one or more elements to a vector set, or update its vector if it already exists",
    ),
    vcmd(
        "vsim",
        READONLY,
        search::vsim,
        "Return elements by vector similarity",
    ),
    vcmd("vrem", WRITE, vrem, "Remove an element from a vector set"),
    vcmd(
        "vcard",
        READONLY | FAST,
        vcard,
        "Return the number of elements in a vector set",
    ),
    vcmd(
        "vdim",
        READONLY | FAST,
        vdim,
        "Return the dimension of vectors in the vector set",
    ),
    vcmd(
        "vemb",
        READONLY | FAST,
        vemb,
        "Return the vector associated with an element",
    ),
    vcmd(
        "vinfo",
        READONLY | FAST,
        vinfo,
        "Return information about a vector set",
    ),
    vcmd(
        "vlinks",
        READONLY | FAST,
        vlinks,
        "Return the neighbors of an element at each layer in the HNSW graph",
    ),
    vcmd(
        "vsetattr",
        WRITE | FAST,
        vsetattr,
        "Associate or remove the JSON attributes of elements",
    ),
    vcmd(
        "vgetattr",
        READONLY | FAST,
        vgetattr,
        "Retrieve the JSON attributes of elements",
    ),
    vcmd(
        "vrandmember",
        READONLY,
        vrandmember,
        "Return one or multiple random members from a vector set",
    ),
    vcmd(
        "vismember",
        READONLY,
        vismember,
        "Check if an element exists in a vector set",
    ),
];

/// The module-style arity error: names the command as the client sent it.
pub(crate) fn arity(argv: &[Vec<u8>]) -> OpError {
    OpError::custom(format!(
        "ERR wrong number of arguments for '{}' command",
        text(&argv[0])
    ))
}

/// Reads a vector-set key: `Ok(None)` when missing, `WRONGTYPE` for other types.
pub(crate) fn read_vset<'c>(
    ctx: &'c mut Ctx<'_>,
    key: &[u8],
) -> OpResult<Option<&'c VectorSetValue>> {
    let db = ctx.db();
    match ctx.ks.get(db, key)? {
        None => Ok(None),
        Some(v) => Ok(Some(v.as_vset()?)),
    }
}

fn write_vset<'c>(ctx: &'c mut Ctx<'_>, key: &[u8]) -> OpResult<Option<&'c mut VectorSetValue>> {
    let db = ctx.db();
    match ctx.ks.get_mut(db, key)? {
        None => Ok(None),
        Some(v) => Ok(Some(v.as_vset_mut()?)),
    }
}

fn vrem(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    if argv.len() != 3 {
        return Err(arity(argv));
    }
    let removed = match write_vset(ctx, &argv[1])? {
        Some(set) => set.remove(&argv[2]),
        None => false,
    };
    if !removed {
        ctx.log_as(Vec::new());
    }
    Ok(Reply::Bool(removed))
}

fn vcard(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    if argv.len() != 2 {
        return Err(arity(argv));
    }
    let set = read_vset(ctx, &argv[1])?;
    Ok(Reply::Integer(set.map_or(0, |s| s.len() as i64)))
}

fn vdim(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    if argv.len() != 2 {
        return Err(arity(argv));
    }
    let set = read_vset(ctx, &argv[1])?.ok_or_else(|| OpError::custom("ERR key does not exist"))?;
    Ok(Reply::Integer(set.dim() as i64))
}

fn vemb(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    if argv.len() < 3 {
        return Err(arity(argv));
    }
    let raw = match argv.len() {
        3 => false,
        4 if is_kw(&argv[3], "RAW") => true,
        _ => return Err(OpError::custom("ERR invalid option")),
    };
    let Some(set) = read_vset(ctx, &argv[1])? else {
        return Ok(Reply::Null);
    };
    let Some((label, e)) = set.label(&argv[2]).and_then(|l| Some((l, set.element(l)?))) else {
        return Ok(Reply::Null);
    };
    if !raw {
        let v = set.embedding(label, e);
        return Ok(Reply::Array(
            v.into_iter()
                .map(|x| Reply::ShortDouble(f64::from(x)))
                .collect(),
        ));
    }
    let stored = set.vector(label, e);
    let mut out = vec![
        Reply::status(set.quant().name()),
        Reply::Bulk(stored.raw_bytes()),
        Reply::ShortDouble(f64::from(e.norm)),
    ];
    if let Stored::Q8 { range, .. } = &*stored {
        out.push(Reply::ShortDouble(f64::from(*range)));
    }
    Ok(Reply::Array(out))
}

fn vinfo(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    if argv.len() != 2 {
        return Err(arity(argv));
    }
    let Some(set) = read_vset(ctx, &argv[1])? else {
        return Ok(Reply::NullArray);
    };
    let int = |n: usize| Reply::Integer(n as i64);
    Ok(Reply::Map(vec![
        (
            Reply::status("quant-type"),
            Reply::status(set.quant().name()),
        ),
        (Reply::status("hnsw-m"), int(set.m())),
        (Reply::status("vector-dim"), int(set.dim())),
        (
            Reply::status("projection-input-dim"),
            int(set.projection().map_or(0, |p| p.input)),
        ),
        (Reply::status("size"), int(set.len())),
        (Reply::status("max-level"), int(set.max_level())),
        (
            Reply::status("attributes-count"),
            int(set.attributes_count()),
        ),
        (Reply::status("vset-uid"), Reply::Integer(set.uid() as i64)),
        (
            Reply::status("hnsw-max-node-uid"),
            Reply::Integer(set.max_node_uid() as i64),
        ),
    ]))
}

fn vlinks(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let with_scores = match argv.len() {
        3 => false,
        4 if is_kw(&argv[3], "WITHSCORES") => true,
        _ => return Err(arity(argv)),
    };
    let Some(set) = read_vset(ctx, &argv[1])? else {
        return Ok(Reply::Null);
    };
    let Some(layers) = set.label(&argv[2]).and_then(|l| set.links(l)) else {
        return Ok(Reply::Null);
    };
    let name = |label: u64| set.element(label).map(|e| Reply::bulk(&e.name));
    Ok(Reply::Array(
        layers
            .into_iter()
            .map(|layer| {
                if with_scores {
                    // VLINKS computes its scores in single precision.
                    Reply::Map(
                        layer
                            .iter()
                            .filter_map(|h| {
                                let score = 1.0f32 - h.distance / 2.0;
                                Some((name(h.label)?, Reply::ShortDouble(f64::from(score))))
                            })
                            .collect(),
                    )
                } else {
                    Reply::Array(layer.iter().filter_map(|h| name(h.label)).collect())
                }
            })
            .collect(),
    ))
}

fn vsetattr(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    if argv.len() != 4 {
        return Err(arity(argv));
    }
    let set = match write_vset(ctx, &argv[1])? {
        Some(set) => set.set_attr(&argv[2], &argv[3]),
        None => false,
    };
    if !set {
        ctx.log_as(Vec::new());
    }
    Ok(Reply::Bool(set))
}

fn vgetattr(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    if argv.len() != 3 {
        return Err(arity(argv));
    }
    let set = read_vset(ctx, &argv[1])?;
    let attr = set
        .and_then(|s| s.get(&argv[2]))
        .and_then(|e| e.attr.as_ref());
    Ok(Reply::bulk_or_null(attr))
}

fn vismember(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    if argv.len() != 3 {
        return Err(arity(argv));
    }
    let set = read_vset(ctx, &argv[1])?;
    Ok(Reply::Bool(
        set.is_some_and(|s| s.label(&argv[2]).is_some()),
    ))
}

/// `VRANDMEMBER key [count]`: like `SRANDMEMBER`, a negative count allows repeats.
fn vrandmember(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let count = match argv.len() {
        2 => None,
        3 => Some(
            parse_i64(&argv[2])
                .ok_or_else(|| OpError::custom("ERR COUNT value is not an integer"))?,
        ),
        _ => return Err(arity(argv)),
    };
    let db = ctx.db();
    let rng = &mut ctx.client.rng;
    let set = match ctx.ks.get(db, &argv[1])? {
        None if count.is_some() => return Ok(Reply::Array(Vec::new())),
        None => return Ok(Reply::Null),
        Some(v) => v.as_vset()?,
    };
    let len = set.len();
    let pick = |rng: &mut rand::rngs::SmallRng| set.at(rng.gen_range(0..len));
    let Some(count) = count else {
        return Ok(Reply::bulk_or_null(pick(rng).map(|e| &e.name)));
    };
    if count < 0 {
        let n = count.unsigned_abs() as usize;
        let picks = (0..n)
            .filter_map(|_| pick(rng))
            .map(|e| Reply::bulk(&e.name));
        return Ok(Reply::Array(picks.collect()));
    }
    let n = (count as usize).min(len);
    let mut out = Vec::with_capacity(n);
    if n * 2 >= len {
        // Most of the set: shuffle positions and take the first n.
        let mut positions: Vec<usize> = (0..len).collect();
        for i in 0..n {
            let j = rng.gen_range(i..len);
            positions.swap(i, j);
        }
        out.extend(
            positions[..n]
                .iter()
                .filter_map(|&p| set.at(p))
                .map(|e| Reply::bulk(&e.name)),
        );
    } else {
        let mut seen = HashSet::with_capacity(n);
        while out.len() < n {
            let p = rng.gen_range(0..len);
            if seen.insert(p) {
                if let Some(e) = set.at(p) {
                    out.push(Reply::bulk(&e.name));
                }
            }
        }
    }
    Ok(Reply::Array(out))
}
