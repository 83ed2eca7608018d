//! The options after `FT.HYBRID`'s subqueries, in any order: `COMBINE`, the steps
//! that shape the fused rows, `PARAMS`, `TIMEOUT`, and the ones refused by name.

use super::{
    err, lossy, number, unsigned, Args, Arrange, Fusion, HybridRequest, DEFAULT_ALPHA,
    DEFAULT_BETA, DEFAULT_RRF_CONSTANT, DEFAULT_WINDOW, DIALECT_REFUSED, MAX_RESULTS,
};
use crate::command::handlers::search::aggregate::{expr, parse_reduce, Step};
use crate::error::OpResult;

/// The options after the subqueries.
pub(super) fn tail(a: &mut Args<'_>, req: &mut HybridRequest) -> OpResult<()> {
    let mut have_params = false;
    while let Some(word) = a.next() {
        let upper = word.to_ascii_uppercase();
        match upper.as_slice() {
            b"COMBINE" => combine(a, req)?,
            b"LIMIT" => {
                let (Some(off), Some(num)) = (a.next(), a.next()) else {
                    return Err(err("LIMIT: Expected an argument"));
                };
                let off = unsigned(off)
                    .ok_or_else(|| err("LIMIT offset must be a non-negative integer"))?;
                let num = unsigned(num)
                    .ok_or_else(|| err("LIMIT count must be a non-negative integer"))?;
                if num == 0 && off != 0 {
                    return Err(err("The `offset` of the LIMIT must be 0 when `num` is 0"));
                }
                if num > MAX_RESULTS {
                    return Err(err(format!("LIMIT exceeds maximum of {MAX_RESULTS}")));
                }
                arrange_here(req).limit = Some((off as usize, num as usize));
            }
            b"SORTBY" => {
                if req.arrange.no_sort {
                    return Err(err("NOSORT is not allowed with SORTBY"));
                }
                let keys = sort_keys(a)?;
                arrange_here(req)
                    .sort
                    .get_or_insert_with(Vec::new)
                    .extend(keys);
            }
            b"NOSORT" => {
                if req.arrange.sort.is_some() {
                    return Err(err("NOSORT is not allowed with SORTBY"));
                }
                req.arrange.no_sort = true;
            }
            b"LOAD" => req.steps.push(load(a)?),
            b"GROUPBY" => req.steps.push(group(a)?),
            b"APPLY" => {
                let text = a.next().ok_or_else(|| err("APPLY: Expected an argument"))?;
                let e = expr::parse(text).map_err(err)?;
                let mut alias = text.to_vec();
                if a.eat("AS") {
                    alias = a.next().ok_or_else(|| err("AS needs argument"))?.to_vec();
                }
                req.steps.push(Step::Apply { expr: e, alias });
            }
            b"FILTER" => {
                let text = a
                    .next()
                    .ok_or_else(|| err("FILTER: Expected an argument"))?;
                req.steps
                    .push(Step::Filter(expr::parse(text).map_err(err)?));
            }
            b"PARAMS" => {
                if have_params {
                    return Err(err(
                        "Multiple PARAMS are not allowed. Parameters can be defined only once",
                    ));
                }
                have_params = true;
                let n = a
                    .next()
                    .and_then(unsigned)
                    .ok_or_else(|| err("PARAMS: Failed to parse the argument count"))?
                    as usize;
                if n == 0 || !n.is_multiple_of(2) {
                    return Err(err("Parameters must be specified in PARAM VALUE pairs"));
                }
                if n > a.remaining() {
                    return Err(err("PARAMS: Not enough arguments"));
                }
                for _ in 0..n / 2 {
                    let (Some(k), Some(v)) = (a.next(), a.next()) else {
                        break;
                    };
                    req.params.insert(k.to_vec(), v.to_vec());
                }
            }
            b"TIMEOUT" => {
                req.timeout_ms = Some(
                    a.next()
                        .and_then(unsigned)
                        .ok_or_else(|| err("TIMEOUT: Value below minimum"))?,
                );
            }
            b"DIALECT" => return Err(err(DIALECT_REFUSED)),
            b"FORMAT" => {
                let f = a
                    .next()
                    .ok_or_else(|| err("FORMAT: Expected an argument"))?;
                if f.eq_ignore_ascii_case(b"EXPAND") {
                    return Err(err(
                        "FT.HYBRID FORMAT EXPAND is not supported by Pion; FORMAT STRING is the default",
                    ));
                }
                if !f.eq_ignore_ascii_case(b"STRING") {
                    return Err(err("FORMAT: Invalid value for argument"));
                }
            }
            b"EXPLAINSCORE" => return Err(err("EXPLAINSCORE is not yet supported by FT.HYBRID")),
            b"WITHCURSOR" => {
                return Err(err(
                    "FT.HYBRID WITHCURSOR is not supported by Pion: page with LIMIT",
                ))
            }
            _ => return Err(err(format!("{}: Unknown argument", lossy(word)))),
        }
    }
    Ok(())
}

/// The arrange step `SORTBY` or `LIMIT` extends: placed where the first of them is
/// written unless a `GROUPBY` came since (RediSearch then starts a new one after
/// it; the pipeline keeps one, after the last group).
fn arrange_here(req: &mut HybridRequest) -> &mut Arrange {
    let here = req.steps.len();
    let grouped_since = req.arrange.position.is_some_and(|p| {
        req.steps[p..]
            .iter()
            .any(|s| matches!(s, Step::Group { .. }))
    });
    if req.arrange.position.is_none() || grouped_since {
        req.arrange.position = Some(here);
    }
    &mut req.arrange
}

/// `SORTBY count @field [ASC|DESC] …`.
fn sort_keys(a: &mut Args<'_>) -> OpResult<Vec<(Vec<u8>, bool)>> {
    let n = a
        .next()
        .and_then(unsigned)
        .filter(|n| *n >= 1)
        .ok_or_else(|| err("SORTBY: Failed to parse the argument count"))? as usize;
    if n > a.remaining() {
        return Err(err("SORTBY: Not enough arguments"));
    }
    let end = a.at + n;
    let mut keys = Vec::new();
    while a.at < end {
        let field = a.next().unwrap_or_default();
        let name = strict_name(field, "SORTBY")?;
        let mut asc = true;
        if a.at < end {
            if a.eat("ASC") {
                asc = true;
            } else if a.eat("DESC") {
                asc = false;
            }
        }
        keys.push((name, asc));
    }
    Ok(keys)
}

/// A property as `FT.HYBRID` wants it: `@name`, or a `$` JSONPath.
fn strict_name(arg: &[u8], context: &str) -> OpResult<Vec<u8>> {
    if let Some(name) = arg.strip_prefix(b"@") {
        return Ok(name.to_vec());
    }
    if arg.first() == Some(&b'$') {
        return Ok(arg.to_vec());
    }
    Err(err(format!(
        "Missing prefix: name requires '@' prefix, JSON path require '$' prefix, got: {} in {context}",
        lossy(arg)
    )))
}

/// `LOAD *` or `LOAD count @field [AS alias] …` (the count includes `AS` pairs).
fn load(a: &mut Args<'_>) -> OpResult<Step> {
    let first = a.next().ok_or_else(|| err("LOAD: Expected an argument"))?;
    if first == b"*" {
        return Ok(Step::LoadAll);
    }
    let n = std::str::from_utf8(first)
        .ok()
        .and_then(|s| s.parse::<i64>().ok())
        .filter(|n| *n > 0)
        .ok_or_else(|| err("Bad arguments for LOAD: Expected number of fields or `*`"))?
        as usize;
    if n > a.remaining() {
        return Err(err("Not enough arguments for LOAD"));
    }
    let end = a.at + n;
    let mut fields = Vec::new();
    while a.at < end {
        let field = a.next().unwrap_or_default();
        let name = strict_name(field, "LOAD")?;
        let mut alias = name.clone();
        if a.at + 1 < end && a.peek().is_some_and(|w| w.eq_ignore_ascii_case(b"AS")) {
            a.at += 1;
            alias = a.next().unwrap_or_default().to_vec();
        }
        fields.push((name, alias));
    }
    Ok(Step::Load(fields))
}

/// `GROUPBY count @property … [REDUCE …]…`.
fn group(a: &mut Args<'_>) -> OpResult<Step> {
    let n = a
        .next()
        .and_then(unsigned)
        .ok_or_else(|| err("GROUPBY: Failed to parse the argument count"))? as usize;
    if n == 0 {
        return Err(err(
            "Bad arguments for GROUPBY: Expected at least one property, got: 0",
        ));
    }
    if n > a.remaining() {
        return Err(err("GROUPBY: Not enough arguments"));
    }
    let mut keys = Vec::new();
    for _ in 0..n {
        let p = a.next().unwrap_or_default();
        let Some(name) = p.strip_prefix(b"@") else {
            return Err(err(format!(
                "Bad arguments for GROUPBY: Unknown property `{}`. Did you mean `@{}`?",
                lossy(p),
                lossy(p)
            )));
        };
        keys.push(name.to_vec());
    }
    let mut reducers = Vec::new();
    while a.eat("REDUCE") {
        reducers.push(parse_reduce(a.argv, &mut a.at)?);
    }
    Ok(Step::Group { keys, reducers })
}

/// `COMBINE RRF count [CONSTANT c] [WINDOW w] [YIELD_SCORE_AS a]` or
/// `COMBINE LINEAR count [ALPHA a BETA b] [WINDOW w] [YIELD_SCORE_AS a]`.
fn combine(a: &mut Args<'_>, req: &mut HybridRequest) -> OpResult<()> {
    let method = a
        .next()
        .ok_or_else(|| err("COMBINE: Expected an argument"))?;
    let linear = if method.eq_ignore_ascii_case(b"LINEAR") {
        true
    } else if method.eq_ignore_ascii_case(b"RRF") {
        false
    } else {
        return Err(err(format!("Unknown COMBINE method `{}`", lossy(method))));
    };
    let clause = if linear { "LINEAR" } else { "RRF" };
    let raw = a
        .next()
        .ok_or_else(|| err(format!("Missing {clause} argument count")))?;
    let count = unsigned(raw).ok_or_else(|| {
        err(format!(
            "Invalid {clause} argument count, error: Could not convert argument to expected type"
        ))
    })? as usize;
    if count == 0 {
        return Err(err(format!(
            "Explicitly specifying {clause} requires at least one argument, argument count must be positive"
        )));
    }
    if !count.is_multiple_of(2) {
        return Err(err(format!(
            "{clause} expects pairs of key value arguments, argument count must be an even number"
        )));
    }
    if count > a.remaining() {
        return Err(err(format!(
            "Not enough arguments in {clause}, specified {count} but provided only {}",
            a.remaining()
        )));
    }
    let (mut constant, mut window) = (DEFAULT_RRF_CONSTANT, DEFAULT_WINDOW);
    let (mut alpha, mut beta) = (None, None);
    for _ in 0..count / 2 {
        let name = a.next().unwrap_or_default().to_ascii_uppercase();
        let value = a.next().unwrap_or_default();
        let shown = lossy(&name);
        let bad = || err(format!("{shown}: Invalid value for argument"));
        match (name.as_slice(), linear) {
            (b"CONSTANT", false) => constant = number(value).ok_or_else(bad)?,
            (b"ALPHA", true) => alpha = Some(number(value).ok_or_else(bad)?),
            (b"BETA", true) => beta = Some(number(value).ok_or_else(bad)?),
            (b"WINDOW", _) => {
                let w = std::str::from_utf8(value)
                    .ok()
                    .and_then(|s| s.parse::<i64>().ok())
                    .ok_or_else(bad)?;
                if w < 1 {
                    return Err(err("WINDOW: Value below minimum"));
                }
                window = w as usize;
            }
            (b"YIELD_SCORE_AS", _) => req.fused_alias = Some(value.to_vec()),
            _ => return Err(err(format!("{shown}: Unknown argument"))),
        }
    }
    req.fusion = if linear {
        match (alpha, beta) {
            (Some(_), None) => return Err(err("Missing value for BETA")),
            (None, Some(_)) => return Err(err("Missing value for ALPHA")),
            (a, b) => Fusion::Linear {
                alpha: a.unwrap_or(DEFAULT_ALPHA),
                beta: b.unwrap_or(DEFAULT_BETA),
                window,
            },
        }
    } else {
        Fusion::Rrf { constant, window }
    };
    Ok(())
}
