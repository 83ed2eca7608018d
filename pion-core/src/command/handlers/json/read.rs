//! The JSON readers: `JSON.GET`, `MGET`, `TYPE`, `STRLEN`, `ARRLEN`, `OBJLEN`,
//! `OBJKEYS`, `RESP` and `DEBUG`.

use serde_json::Value as Json;

use super::{arity, doc, path, path_or_root, resp3};
use crate::command::ctx::Ctx;
use crate::command::handlers::util::is_kw;
use crate::error::{JsonError, OpError, OpResult};
use crate::reply::Reply;
use crate::value::json::{self, select, Layout, Path};

/// The values a path matches, in order.
fn matches<'v>(root: &'v Json, p: &Path) -> Vec<&'v Json> {
    p.select(root)
        .iter()
        .filter_map(|ptr| select::get(root, ptr))
        .collect()
}

/// `JSON.GET key [INDENT s] [NEWLINE s] [SPACE s] [path ...]`.
pub(super) fn get(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    if argv.len() < 2 {
        return Err(arity(argv));
    }
    let mut layout = Layout::default();
    let mut paths = Vec::new();
    let mut i = 2;
    while i < argv.len() {
        let a = &argv[i];
        let slot = if is_kw(a, "INDENT") {
            Some(&mut layout.indent)
        } else if is_kw(a, "NEWLINE") {
            Some(&mut layout.newline)
        } else if is_kw(a, "SPACE") {
            Some(&mut layout.space)
        } else {
            None
        };
        match slot {
            Some(slot) => {
                let v = argv.get(i + 1).ok_or_else(|| arity(argv))?;
                *slot = v.as_slice();
                i += 2;
            }
            None if is_kw(a, "NOESCAPE") => i += 1,
            None => {
                paths.push(path(a)?);
                i += 1;
            }
        }
    }
    let Some(d) = doc(ctx, &argv[1])? else {
        return Ok(Reply::Null);
    };
    let root = &d.root;
    let mut out = Vec::new();
    if paths.len() <= 1 {
        let p = paths.pop().unwrap_or_else(Path::root);
        let found = matches(root, &p);
        if p.legacy {
            let v = found.first().ok_or_else(|| no_path(&p.text))?;
            json::write(v, &layout, 0, &mut out);
        } else {
            let all = Json::Array(found.into_iter().cloned().collect());
            json::write(&all, &layout, 0, &mut out);
        }
        return Ok(Reply::Bulk(out));
    }
    let legacy = paths.iter().all(|p| p.legacy);
    let mut obj = serde_json::Map::new();
    for p in &paths {
        let found = matches(root, p);
        let v = if legacy {
            (*found.first().ok_or_else(|| no_path(&p.sent))?).clone()
        } else {
            Json::Array(found.into_iter().cloned().collect())
        };
        obj.entry(p.sent.clone()).or_insert(v);
    }
    json::write(&Json::Object(obj), &layout, 0, &mut out);
    Ok(Reply::Bulk(out))
}

fn no_path(p: &str) -> OpError {
    JsonError::NoPath(p.to_string()).into()
}

/// `JSON.MGET key [key ...] path`.
pub(super) fn mget(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    if argv.len() < 3 {
        return Err(arity(argv));
    }
    let p = path(&argv[argv.len() - 1])?;
    let mut out = Vec::new();
    for key in &argv[1..argv.len() - 1] {
        let db = ctx.db();
        let d = ctx.ks.get(db, key)?.and_then(|v| v.as_json());
        let reply = match d {
            None => Reply::Null,
            Some(d) => {
                let found = matches(&d.root, &p);
                if p.legacy {
                    match found.first() {
                        Some(v) => Reply::Bulk(json::to_text(v)),
                        None => Reply::Null,
                    }
                } else {
                    let all = Json::Array(found.into_iter().cloned().collect());
                    Reply::Bulk(json::to_text(&all))
                }
            }
        };
        out.push(reply);
    }
    Ok(Reply::Array(out))
}

/// How a reader answers a legacy path whose first match is missing or of the
/// wrong kind.
enum Legacy {
    /// A null reply.
    Null,
    /// This error.
    Error(OpError),
}

/// The common shape of the per-value readers: `f` answers one value (`None`: not
/// the kind the command reads); `missing_key` is the JSONPath reply for a missing
/// key; `on_legacy_miss` and `on_legacy_wrong` answer a legacy path.
fn per_value(
    ctx: &mut Ctx<'_>,
    argv: &[Vec<u8>],
    missing_key: Option<OpError>,
    f: fn(&Json) -> Option<Reply>,
    on_legacy_miss: fn(&Path) -> Legacy,
    on_legacy_wrong: fn(&Path, &Json) -> Legacy,
) -> OpResult<Reply> {
    if argv.len() < 2 || argv.len() > 3 {
        return Err(arity(argv));
    }
    let p = path_or_root(argv, 2)?;
    let Some(d) = doc(ctx, &argv[1])? else {
        return match missing_key {
            Some(e) if !p.legacy => Err(e),
            _ => Ok(Reply::Null),
        };
    };
    let found = matches(&d.root, &p);
    if !p.legacy {
        return Ok(Reply::Array(
            found
                .into_iter()
                .map(|v| f(v).unwrap_or(Reply::Null))
                .collect(),
        ));
    }
    let answer = match found.first() {
        None => on_legacy_miss(&p),
        Some(v) => match f(v) {
            Some(r) => return Ok(r),
            None => on_legacy_wrong(&p, v),
        },
    };
    match answer {
        Legacy::Null => Ok(Reply::Null),
        Legacy::Error(e) => Err(e),
    }
}

fn wrong_type(expected: &'static str) -> impl Fn(&Json) -> Legacy {
    move |v| {
        Legacy::Error(
            JsonError::PathType {
                expected,
                found: json::type_name(v),
            }
            .into(),
        )
    }
}

/// `JSON.STRLEN key [path]`.
pub(super) fn strlen(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    per_value(
        ctx,
        argv,
        Some(JsonError::NoKey.into()),
        |v| v.as_str().map(|s| Reply::Integer(s.chars().count() as i64)),
        |p| Legacy::Error(no_path(&p.text)),
        |_, v| wrong_type("string")(v),
    )
}

/// `JSON.ARRLEN key [path]`.
pub(super) fn arrlen(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    per_value(
        ctx,
        argv,
        Some(JsonError::NoKey.into()),
        |v| v.as_array().map(|a| Reply::Integer(a.len() as i64)),
        |p| Legacy::Error(JsonError::NotArray(p.sent.clone()).into()),
        |p, _| Legacy::Error(JsonError::NotArray(p.sent.clone()).into()),
    )
}

/// `JSON.OBJLEN key [path]`.
pub(super) fn objlen(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    if argv.len() == 3 && doc(ctx, &argv[1])?.is_none() {
        let p = path(&argv[2])?;
        if !p.legacy {
            return Err(JsonError::NotObject(p.text).into());
        }
    }
    per_value(
        ctx,
        argv,
        Some(JsonError::NoKey.into()),
        |v| v.as_object().map(|m| Reply::Integer(m.len() as i64)),
        |_| Legacy::Null,
        |_, v| wrong_type("object")(v),
    )
}

/// `JSON.OBJKEYS key [path]`.
pub(super) fn objkeys(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    per_value(
        ctx,
        argv,
        Some(JsonError::NoKey.into()),
        |v| {
            v.as_object()
                .map(|m| Reply::Array(m.keys().map(Reply::bulk).collect()))
        },
        |_| Legacy::Null,
        |p, _| Legacy::Error(JsonError::NotObject(p.text.clone()).into()),
    )
}

/// `JSON.TYPE key [path]`: RESP3 wraps a legacy answer in an array, and the
/// JSONPath answer in another.
pub(super) fn type_(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let r = per_value(
        ctx,
        argv,
        None,
        |v| Some(Reply::bulk(json::type_name(v))),
        |_| Legacy::Null,
        |_, _| Legacy::Null,
    )?;
    Ok(if resp3(ctx) { Reply::Array(vec![r]) } else { r })
}

/// A JSON value as `JSON.RESP` answers it.
fn to_resp(v: &Json) -> Reply {
    match v {
        Json::Null => Reply::Null,
        Json::Bool(b) => Reply::status(if *b { "true" } else { "false" }),
        Json::Number(n) => match n.as_i64() {
            Some(i) => Reply::Integer(i),
            None => Reply::ShortDouble(n.as_f64().unwrap_or(0.0)),
        },
        Json::String(s) => Reply::bulk(s),
        Json::Array(a) => {
            let mut out = Vec::with_capacity(a.len() + 1);
            out.push(Reply::status("["));
            out.extend(a.iter().map(to_resp));
            Reply::Array(out)
        }
        Json::Object(m) => {
            let mut out = Vec::with_capacity(2 * m.len() + 1);
            out.push(Reply::status("{"));
            for (k, c) in m {
                out.push(Reply::bulk(k));
                out.push(to_resp(c));
            }
            Reply::Array(out)
        }
    }
}

/// `JSON.RESP key [path]`.
pub(super) fn resp(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    per_value(
        ctx,
        argv,
        None,
        |v| Some(to_resp(v)),
        |p| Legacy::Error(no_path(&p.text)),
        |_, _| Legacy::Null,
    )
}

/// `JSON.DEBUG MEMORY key [path]` and `JSON.DEBUG HELP`.
pub(super) fn debug(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let Some(sub) = argv.get(1) else {
        return Err(arity(argv));
    };
    if is_kw(sub, "HELP") {
        return Ok(Reply::Array(vec![
            Reply::bulk("MEMORY <key> [path] - reports memory usage"),
            Reply::bulk("HELP                - this message"),
        ]));
    }
    if !is_kw(sub, "MEMORY") {
        return Err(OpError::custom(
            "ERR unknown subcommand - try `JSON.DEBUG HELP`",
        ));
    }
    if argv.len() < 3 || argv.len() > 4 {
        return Err(arity(argv));
    }
    let p = path_or_root(argv, 3)?;
    let Some(d) = doc(ctx, &argv[2])? else {
        return Ok(if p.legacy {
            Reply::Integer(0)
        } else {
            Reply::Array(Vec::new())
        });
    };
    let sizes: Vec<Reply> = matches(&d.root, &p)
        .into_iter()
        .map(|v| Reply::Integer(json::node_size(v) as i64))
        .collect();
    if p.legacy {
        return Ok(sizes.into_iter().next().unwrap_or(Reply::Integer(0)));
    }
    Ok(Reply::Array(sizes))
}
