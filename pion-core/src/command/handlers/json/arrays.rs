//! Array commands: `JSON.ARRAPPEND`, `ARRINDEX`, `ARRINSERT`, `ARRPOP` and
//! `ARRTRIM` (`ARRLEN` is a reader, in `read`).

use serde_json::Value as Json;

use super::{arity, changed, doc, existing_mut, fits, path, value};
use crate::command::ctx::Ctx;
use crate::error::{JsonError, OpError, OpResult};
use crate::reply::Reply;
use crate::util::num::parse_i64;
use crate::value::json::{self, select, Path};

fn int(arg: &[u8]) -> OpResult<i64> {
    parse_i64(arg).ok_or(JsonError::NotInteger.into())
}

/// Applies `f` to every array the path matches (`None` for other matches), after
/// `depth_check` has accepted every match's depth, then
/// shapes the reply: one entry per match for JSONPath, the last array's answer for
/// a legacy path (whose first match must be an array: `not_array` otherwise).
fn each_array<T>(
    root: &mut Json,
    p: &Path,
    depth_check: impl Fn(usize) -> OpResult<()>,
    not_array: impl Fn(&Path) -> OpError,
    mut f: impl FnMut(&mut Vec<Json>) -> OpResult<T>,
) -> OpResult<Vec<Option<T>>> {
    let found = p.select(root);
    for ptr in &found {
        depth_check(ptr.len())?;
    }
    if p.legacy
        && !matches!(
            found.first().and_then(|ptr| select::get(root, ptr)),
            Some(Json::Array(_))
        )
    {
        return Err(not_array(p));
    }
    let mut out = Vec::with_capacity(found.len());
    for ptr in &found {
        out.push(match select::get_mut(root, ptr) {
            Some(Json::Array(a)) => Some(f(a)?),
            _ => None,
        });
    }
    Ok(out)
}

fn int_replies(p: &Path, results: Vec<Option<i64>>) -> Reply {
    if p.legacy {
        return Reply::Integer(results.iter().flatten().last().copied().unwrap_or(0));
    }
    Reply::Array(
        results
            .into_iter()
            .map(|r| r.map_or(Reply::Null, Reply::Integer))
            .collect(),
    )
}

/// `JSON.ARRAPPEND key path value [value ...]`.
pub(super) fn arrappend(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    if argv.len() < 4 {
        return Err(arity(argv));
    }
    let p = path(&argv[2])?;
    let values = argv[3..]
        .iter()
        .map(|a| value(a, false))
        .collect::<OpResult<Vec<_>>>()?;
    let d = existing_mut(ctx, &argv[1])?;
    let results = each_array(
        &mut d.root,
        &p,
        |at| values.iter().try_for_each(|v| fits(at + 1, v)),
        |p| JsonError::NotArray(p.sent.clone()).into(),
        |a| {
            a.extend(values.iter().cloned());
            Ok(a.len() as i64)
        },
    )?;
    changed(
        ctx,
        results.iter().any(Option::is_some),
        "json.arrappend",
        &argv[1],
    );
    Ok(int_replies(&p, results))
}

/// `JSON.ARRINSERT key path index value [value ...]`.
pub(super) fn arrinsert(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    if argv.len() < 5 {
        return Err(arity(argv));
    }
    let p = path(&argv[2])?;
    let index = int(&argv[3])?;
    let values = argv[4..]
        .iter()
        .map(|a| value(a, false))
        .collect::<OpResult<Vec<_>>>()?;
    let d = existing_mut(ctx, &argv[1])?;
    let position = |len: usize| {
        let len = len as i64;
        let at = if index < 0 { len + index } else { index };
        (0..=len).contains(&at).then_some(at as usize)
    };
    // Every array's index first: one out of bounds leaves them all as they were.
    for ptr in p.select(&d.root) {
        if let Some(Json::Array(a)) = select::get(&d.root, &ptr) {
            if position(a.len()).is_none() {
                return Err(JsonError::IndexBounds.into());
            }
        }
    }
    let results = each_array(
        &mut d.root,
        &p,
        |at| values.iter().try_for_each(|v| fits(at + 1, v)),
        |p| JsonError::NotArray(p.text.clone()).into(),
        |a| {
            let at = position(a.len()).ok_or(JsonError::IndexBounds)?;
            a.splice(at..at, values.iter().cloned());
            Ok(a.len() as i64)
        },
    )?;
    changed(
        ctx,
        results.iter().any(Option::is_some),
        "json.arrinsert",
        &argv[1],
    );
    Ok(int_replies(&p, results))
}

/// `JSON.ARRTRIM key path start stop`: keeps the inclusive range.
pub(super) fn arrtrim(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    if argv.len() != 5 {
        return Err(arity(argv));
    }
    let p = path(&argv[2])?;
    let (start, stop) = (int(&argv[3])?, int(&argv[4])?);
    let d = existing_mut(ctx, &argv[1])?;
    let results = each_array(
        &mut d.root,
        &p,
        |_| Ok(()),
        |p| JsonError::NotArray(p.text.clone()).into(),
        |a| {
            let len = a.len() as i64;
            let s = if start < 0 {
                (len + start).max(0)
            } else {
                start
            };
            let e = if stop < 0 {
                len + stop
            } else {
                stop.min(len - 1)
            };
            if s >= len || s > e {
                a.clear();
            } else {
                a.truncate(e as usize + 1);
                a.drain(..s as usize);
            }
            Ok(a.len() as i64)
        },
    )?;
    changed(
        ctx,
        results.iter().any(Option::is_some),
        "json.arrtrim",
        &argv[1],
    );
    Ok(int_replies(&p, results))
}

/// `JSON.ARRPOP key [path [index]]`: an index that is not an integer pops the last
/// element, as RedisJSON does.
pub(super) fn arrpop(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    if argv.len() < 2 || argv.len() > 4 {
        return Err(arity(argv));
    }
    let p = match argv.get(2) {
        Some(a) => path(a)?,
        None => Path::root(),
    };
    let index = argv.get(3).and_then(|a| parse_i64(a)).unwrap_or(-1);
    let d = existing_mut(ctx, &argv[1])?;
    let results = each_array(
        &mut d.root,
        &p,
        |_| Ok(()),
        |p| JsonError::NotArray(p.text.clone()).into(),
        |a| {
            if a.is_empty() {
                return Ok(None);
            }
            let len = a.len() as i64;
            let at = if index < 0 {
                (len + index).max(0)
            } else {
                index.min(len - 1)
            };
            Ok(Some(a.remove(at as usize)))
        },
    )?;
    let popped: Vec<Option<Json>> = results.into_iter().map(Option::flatten).collect();
    changed(
        ctx,
        popped.iter().any(Option::is_some),
        "json.arrpop",
        &argv[1],
    );
    let bulk = |v: Option<Json>| v.map_or(Reply::Null, |v| Reply::Bulk(json::to_text(&v)));
    if p.legacy {
        return Ok(bulk(popped.into_iter().flatten().last()));
    }
    Ok(Reply::Array(popped.into_iter().map(bulk).collect()))
}

/// `JSON.ARRINDEX key path value [start [stop]]`: the first index of an equal
/// element in `[start, stop)` (a stop of 0 means the end), or -1.
pub(super) fn arrindex(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    if argv.len() < 4 || argv.len() > 6 {
        return Err(arity(argv));
    }
    let p = path(&argv[2])?;
    let needle = value(&argv[3], false)?;
    let start = argv.get(4).map(|a| int(a)).transpose()?.unwrap_or(0);
    let stop = argv.get(5).map(|a| int(a)).transpose()?.unwrap_or(0);
    let d = doc(ctx, &argv[1])?.ok_or(JsonError::NoKey)?;
    let found = p.select(&d.root);
    let mut results = Vec::with_capacity(found.len());
    for ptr in &found {
        results.push(match select::get(&d.root, ptr) {
            Some(Json::Array(a)) => Some(index_of(a, &needle, start, stop)),
            _ => None,
        });
    }
    if p.legacy {
        return match found.first().and_then(|ptr| select::get(&d.root, ptr)) {
            None => Err(JsonError::NoPath(p.text.clone()).into()),
            Some(Json::Array(_)) => Ok(int_replies(&p, results)),
            Some(other) => Err(JsonError::PathType {
                expected: "array",
                found: json::type_name(other),
            }
            .into()),
        };
    }
    Ok(int_replies(&p, results))
}

fn index_of(a: &[Json], needle: &Json, start: i64, stop: i64) -> i64 {
    let len = a.len() as i64;
    let s = if start < 0 {
        (len + start).max(0)
    } else {
        start.min(len)
    };
    let e = if stop == 0 {
        len
    } else if stop < 0 {
        (len + stop).max(0)
    } else {
        stop.min(len)
    };
    (s..e).find(|&i| &a[i as usize] == needle).unwrap_or(-1)
}
