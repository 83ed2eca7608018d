//! Typed edits in place: `JSON.NUMINCRBY`, `NUMMULTBY`, `STRAPPEND`, `TOGGLE` and
//! `CLEAR`.

use serde_json::Value as Json;

use super::{arity, changed, existing_mut, path, path_or_root, resp3, value};
use crate::command::ctx::Ctx;
use crate::error::{JsonError, OpResult};
use crate::reply::Reply;
use crate::value::json::{self, select, Path};

/// A number as RESP3 replies carry it.
fn number_reply(v: &Json) -> Reply {
    match v {
        Json::Number(n) => match n.as_i64() {
            Some(i) => Reply::Integer(i),
            None => Reply::ShortDouble(n.as_f64().unwrap_or(0.0)),
        },
        _ => Reply::Null,
    }
}

fn numop(ctx: &mut Ctx<'_>, argv: &[Vec<u8>], mul: bool, event: &str) -> OpResult<Reply> {
    if argv.len() != 4 {
        return Err(arity(argv));
    }
    let mut p = path(&argv[2])?;
    // Under RESP3 RedisJSON answers a legacy path as it answers JSONPath.
    p.legacy &= !resp3(ctx);
    let by = match value(&argv[3], true)? {
        Json::Number(n) => n,
        _ => return Err(JsonError::BadNumber.into()),
    };
    let d = existing_mut(ctx, &argv[1])?;
    let found = p.select(&d.root);
    // Every result first: one that is not finite leaves the document as it was.
    let mut results = Vec::with_capacity(found.len());
    for ptr in &found {
        let r = match select::get(&d.root, ptr) {
            Some(Json::Number(n)) => Some(json::arith(n, &by, mul).ok_or(JsonError::NotFinite)?),
            _ => None,
        };
        results.push(r);
    }
    if p.legacy && !matches!(results.first(), Some(Some(_))) {
        return Err(JsonError::NotNumber(p.text.clone()).into());
    }
    for (ptr, r) in found.iter().zip(&results) {
        if let (Some(r), Some(slot)) = (r, select::get_mut(&mut d.root, ptr)) {
            *slot = r.clone();
        }
    }
    let modified = results.iter().any(Option::is_some);
    changed(ctx, modified, event, &argv[1]);
    let values: Vec<Json> = results
        .into_iter()
        .map(|r| r.unwrap_or(Json::Null))
        .collect();
    if p.legacy {
        let last = values
            .iter()
            .rev()
            .find(|v| !v.is_null())
            .cloned()
            .unwrap_or(Json::Null);
        return Ok(Reply::Bulk(json::to_text(&last)));
    }
    Ok(if resp3(ctx) {
        Reply::Array(values.iter().map(number_reply).collect())
    } else {
        Reply::Bulk(json::to_text(&Json::Array(values)))
    })
}

/// `JSON.NUMINCRBY key path number`.
pub(super) fn numincrby(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    numop(ctx, argv, false, "json.numincrby")
}

/// `JSON.NUMMULTBY key path number`.
pub(super) fn nummultby(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    numop(ctx, argv, true, "json.nummultby")
}

/// `JSON.STRAPPEND key [path] string`.
pub(super) fn strappend(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let (p, arg) = match argv.len() {
        3 => (Path::root(), &argv[2]),
        4 => (path(&argv[2])?, &argv[3]),
        _ => return Err(arity(argv)),
    };
    let d = existing_mut(ctx, &argv[1])?;
    let found = p.select(&d.root);
    let first_is_string = matches!(
        found.first().and_then(|ptr| select::get(&d.root, ptr)),
        Some(Json::String(_))
    );
    if p.legacy && !first_is_string {
        return Err(JsonError::NotString(p.text.clone()).into());
    }
    let operand = value(arg, true)?;
    let Json::String(tail) = operand else {
        return Err(JsonError::PathType {
            expected: "string",
            found: json::type_name(&operand),
        }
        .into());
    };
    let d = existing_mut(ctx, &argv[1])?;
    let mut lens = Vec::with_capacity(found.len());
    for ptr in &found {
        lens.push(match select::get_mut(&mut d.root, ptr) {
            Some(Json::String(s)) => {
                s.push_str(&tail);
                Some(s.chars().count() as i64)
            }
            _ => None,
        });
    }
    let modified = lens.iter().any(Option::is_some);
    changed(ctx, modified, "json.strappend", &argv[1]);
    if p.legacy {
        return Ok(Reply::Integer(
            lens.iter().flatten().last().copied().unwrap_or(0),
        ));
    }
    Ok(Reply::Array(
        lens.into_iter()
            .map(|l| l.map_or(Reply::Null, Reply::Integer))
            .collect(),
    ))
}

/// `JSON.TOGGLE key [path]`.
pub(super) fn toggle(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    if argv.len() < 2 || argv.len() > 3 {
        return Err(arity(argv));
    }
    let p = path_or_root(argv, 2)?;
    let d = existing_mut(ctx, &argv[1])?;
    let found = p.select(&d.root);
    if p.legacy
        && !matches!(
            found.first().and_then(|ptr| select::get(&d.root, ptr)),
            Some(Json::Bool(_))
        )
    {
        return Err(JsonError::NotBool(p.text.clone()).into());
    }
    let mut out = Vec::with_capacity(found.len());
    for ptr in &found {
        out.push(match select::get_mut(&mut d.root, ptr) {
            Some(Json::Bool(b)) => {
                *b = !*b;
                Some(*b)
            }
            _ => None,
        });
    }
    let modified = out.iter().any(Option::is_some);
    changed(ctx, modified, "json.toggle", &argv[1]);
    if p.legacy {
        let b = out.iter().flatten().last().copied().unwrap_or(false);
        return Ok(Reply::bulk(if b { "true" } else { "false" }));
    }
    Ok(Reply::Array(
        out.into_iter()
            .map(|b| b.map_or(Reply::Null, |b| Reply::Integer(i64::from(b))))
            .collect(),
    ))
}

/// `JSON.CLEAR key [path]`: empties arrays and objects and zeroes numbers; answers
/// how many values it changed.
pub(super) fn clear(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    if argv.len() < 2 || argv.len() > 3 {
        return Err(arity(argv));
    }
    let p = path_or_root(argv, 2)?;
    let d = existing_mut(ctx, &argv[1])?;
    let found = p.select(&d.root);
    let mut cleared = 0i64;
    for ptr in &found {
        let hit = match select::get_mut(&mut d.root, ptr) {
            Some(Json::Array(a)) if !a.is_empty() => {
                a.clear();
                true
            }
            Some(Json::Object(m)) if !m.is_empty() => {
                m.clear();
                true
            }
            Some(n @ Json::Number(_)) if n.as_f64() != Some(0.0) => {
                *n = Json::from(0);
                true
            }
            _ => false,
        };
        cleared += i64::from(hit);
    }
    changed(ctx, cleared > 0, "json.clear", &argv[1]);
    Ok(Reply::Integer(cleared))
}
