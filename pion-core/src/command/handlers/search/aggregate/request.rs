//! `FT.AGGREGATE`'s arguments: the steps in the order given, with RediSearch's
//! error texts (including its odd ones, such as `Bad arguments for LOAD: SUCCESS`,
//! which clients see), and the options around them.

use super::expr::{self, Expr};
use super::group::ReducerKind;
use crate::config::search::SearchSettings;
use crate::error::{OpError, OpResult};
use crate::index::query::Params;

fn err(text: impl Into<String>) -> OpError {
    OpError::custom(text.into())
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// One `REDUCE` as written.
#[derive(Debug, Clone)]
pub(in crate::command::handlers::search) struct ReduceSpec {
    pub(super) kind: ReducerKind,
    /// The property it reads (without `@`).
    pub(super) input: Vec<u8>,
    /// `FIRST_VALUE … BY @p [ASC|DESC]`.
    pub(super) by: Option<(Vec<u8>, bool)>,
    /// The name of its result.
    pub(super) alias: Vec<u8>,
}

/// One step as written.
#[derive(Debug, Clone)]
pub(in crate::command::handlers::search) enum Step {
    Load(Vec<(Vec<u8>, Vec<u8>)>),
    LoadAll,
    Apply {
        expr: Expr,
        alias: Vec<u8>,
    },
    Filter(Expr),
    Group {
        keys: Vec<Vec<u8>>,
        reducers: Vec<ReduceSpec>,
    },
    Arrange {
        sort: Option<Vec<(Vec<u8>, bool)>>,
        max: Option<usize>,
        limit: Option<(usize, usize)>,
        /// Ties in document order whatever the direction (a sort by score).
        ties_in_id_order: bool,
    },
}

/// `WITHCURSOR [COUNT c] [MAXIDLE ms]`.
#[derive(Debug, Clone, Copy)]
pub struct CursorOpts {
    /// Rows per read.
    pub count: usize,
    /// Idle time after which the cursor is gone.
    pub max_idle_ms: u64,
}

/// The default rows per cursor read.
const CURSOR_CHUNK: usize = 1000;

/// A parsed `FT.AGGREGATE`.
pub(super) struct Request {
    /// The query text.
    pub(super) query: Vec<u8>,
    /// `PARAMS`.
    pub(super) params: Params,
    /// `DIALECT`.
    pub(super) dialect: u32,
    /// The steps, in order.
    pub(super) steps: Vec<Step>,
    /// `WITHCURSOR`.
    pub(super) cursor: Option<CursorOpts>,
    /// `SCORER`: how text matches are scored (`TFIDF` unless given).
    pub(super) scorer: crate::index::eval::Scorer,
    /// `ADDSCORES`: each row carries its document's text score as `__score`.
    pub(super) add_scores: bool,
    /// `WITHSCORES`: each row's score is replied before it.
    pub(super) with_scores: bool,
    /// `VERBATIM` and `LANGUAGE`.
    pub(super) analysis: crate::command::handlers::search::query::Analysis,
    /// `TIMEOUT` in milliseconds (0: none).
    pub(super) timeout_ms: u64,
}

/// A non-negative integer argument.
fn count_arg(b: &[u8]) -> Option<usize> {
    if b.first() == Some(&b'+') {
        return None;
    }
    std::str::from_utf8(b).ok()?.parse().ok()
}

/// RediSearch's text for a bad option argument.
fn bad(option: &str, what: &str) -> OpError {
    err(format!("Bad arguments for {option}: {what}"))
}

/// The scorers RediSearch 2.10 knows (redis-py sends `SCORER TFIDF` by default).
const SCORERS: &[&[u8]] = &[
    b"TFIDF",
    b"TFIDF.DOCNORM",
    b"BM25",
    b"BM25STD",
    b"DISMAX",
    b"DOCSCORE",
    b"HAMMING",
];

const NONE_PROVIDED: &str = "Expected an argument, but none provided";
const NOT_CONVERTED: &str = "Could not convert argument to expected type";
const OUT_OF_BOUNDS: &str = "Value is outside acceptable bounds";

/// A count such as `SORTBY n`: missing, not a number, or negative.
fn counted(argv: &[Vec<u8>], at: usize, option: &str) -> OpResult<usize> {
    let a = argv.get(at).ok_or_else(|| bad(option, NONE_PROVIDED))?;
    if let Some(n) = count_arg(a) {
        return Ok(n);
    }
    let negative = std::str::from_utf8(a)
        .ok()
        .and_then(|s| s.parse::<i64>().ok())
        .is_some();
    Err(bad(
        option,
        if negative {
            OUT_OF_BOUNDS
        } else {
            NOT_CONVERTED
        },
    ))
}

fn property(arg: &[u8]) -> Vec<u8> {
    arg.strip_prefix(b"@").unwrap_or(arg).to_vec()
}

/// The largest `RANDOM_SAMPLE` size and `QUANTILE` resolution (RediSearch's).
const MAX_SAMPLE_SIZE: usize = 1000;

/// One `REDUCE name nargs args… [AS alias]`, from just after `REDUCE`.
pub(in crate::command::handlers::search) fn parse_reduce(
    argv: &[Vec<u8>],
    at: &mut usize,
) -> OpResult<ReduceSpec> {
    let Some(name) = argv.get(*at) else {
        return Err(bad("REDUCE", "SUCCESS"));
    };
    let shown = lossy(name);
    let upper = name.to_ascii_uppercase();
    let kind = match upper.as_slice() {
        b"COUNT" => ReducerKind::Count,
        b"COUNT_DISTINCT" => ReducerKind::CountDistinct,
        b"SUM" => ReducerKind::Sum,
        b"AVG" => ReducerKind::Avg,
        b"MIN" => ReducerKind::Min,
        b"MAX" => ReducerKind::Max,
        b"STDDEV" => ReducerKind::StdDev,
        b"TOLIST" => ReducerKind::ToList,
        b"FIRST_VALUE" => ReducerKind::FirstValue(None),
        b"COUNT_DISTINCTISH" => ReducerKind::CountDistinctish,
        b"QUANTILE" => ReducerKind::Quantile {
            q: 0.0,
            resolution: 500,
        },
        b"RANDOM_SAMPLE" => ReducerKind::RandomSample(0),
        b"HLL" => ReducerKind::Hll,
        b"HLL_SUM" => ReducerKind::HllSum,
        _ => return Err(err(format!("No such reducer: {shown}"))),
    };
    *at += 1;
    let n = counted(argv, *at, &shown)?;
    *at += 1;
    if *at + n > argv.len() {
        return Err(bad(&shown, NONE_PROVIDED));
    }
    let args = &argv[*at..*at + n];
    *at += n;
    let mut spec = ReduceSpec {
        kind,
        input: Vec::new(),
        by: None,
        alias: Vec::new(),
    };
    match &spec.kind {
        ReducerKind::Count => {
            if n != 0 {
                return Err(err("Count accepts 0 values only"));
            }
        }
        ReducerKind::FirstValue(_) => {
            let Some(first) = args.first() else {
                return Err(err(format!("Missing arguments for {shown}")));
            };
            spec.input = property(first);
            if let Some(word) = args.get(1) {
                if !word.eq_ignore_ascii_case(b"BY") {
                    return Err(err(format!(
                        "Unknown argument `{}` at position 1 for {shown}",
                        lossy(word)
                    )));
                }
                let Some(by) = args.get(2) else {
                    return Err(err(format!("Missing arguments for {shown}")));
                };
                let asc = match args.get(3) {
                    None => true,
                    Some(d) if d.eq_ignore_ascii_case(b"ASC") => true,
                    Some(d) if d.eq_ignore_ascii_case(b"DESC") => false,
                    Some(d) => {
                        return Err(err(format!(
                            "Unknown argument `{}` at position 3 for {shown}",
                            lossy(d)
                        )))
                    }
                };
                if let Some(extra) = args.get(4) {
                    return Err(err(format!(
                        "Unknown argument `{}` at position 4 for {shown}",
                        lossy(extra)
                    )));
                }
                spec.by = Some((property(by), asc));
            }
        }
        ReducerKind::Quantile { .. } => {
            let Some(first) = args.first() else {
                return Err(err(format!("Missing arguments for {shown}")));
            };
            spec.input = property(first);
            let q = args
                .get(1)
                .and_then(|a| crate::index::query::parse_number(a))
                .ok_or_else(|| bad(&shown, NOT_CONVERTED))?;
            if !(0.0..=1.0).contains(&q) {
                return Err(err("Percentage must be between 0.0 and 1.0"));
            }
            let mut resolution = 500;
            if let Some(r) = args.get(2) {
                resolution = std::str::from_utf8(r)
                    .ok()
                    .and_then(|s| s.parse::<usize>().ok())
                    .ok_or_else(|| bad("<resolution>", NOT_CONVERTED))?;
                if !(1..=MAX_SAMPLE_SIZE).contains(&resolution) {
                    return Err(err("Invalid resolution"));
                }
            }
            if let Some(extra) = args.get(3) {
                return Err(err(format!(
                    "Unknown argument `{}` at position 3 for {shown}",
                    lossy(extra)
                )));
            }
            spec.kind = ReducerKind::Quantile { q, resolution };
        }
        ReducerKind::RandomSample(_) => {
            let Some(first) = args.first() else {
                return Err(err(format!("Missing arguments for {shown}")));
            };
            spec.input = property(first);
            let raw = args
                .get(1)
                .ok_or_else(|| bad("<sample size>", NONE_PROVIDED))?;
            let len = std::str::from_utf8(raw)
                .ok()
                .and_then(|s| s.parse::<usize>().ok())
                .ok_or_else(|| bad("<sample size>", NOT_CONVERTED))?;
            if len > MAX_SAMPLE_SIZE {
                return Err(err("Sample size too large"));
            }
            spec.kind = ReducerKind::RandomSample(len);
        }
        _ => {
            let Some(first) = args.first() else {
                return Err(err(format!("Missing arguments for {shown}")));
            };
            spec.input = property(first);
        }
    }
    let mut alias = b"__generated_alias".to_vec();
    alias.extend(name.to_ascii_lowercase());
    let joined: Vec<Vec<u8>> = args.iter().map(|a| property(a)).collect();
    alias.extend(joined.join(&b","[..]).to_ascii_lowercase());
    if argv.get(*at).is_some_and(|a| a.eq_ignore_ascii_case(b"AS")) {
        let a = argv.get(*at + 1).ok_or_else(|| bad("AS", NONE_PROVIDED))?;
        alias = a.clone();
        *at += 2;
    }
    spec.alias = alias;
    Ok(spec)
}

/// The arrange step to extend: the last step when it is one, else a new one.
fn arrange(steps: &mut Vec<Step>) -> &mut Step {
    if !matches!(steps.last(), Some(Step::Arrange { .. })) {
        steps.push(Step::Arrange {
            sort: None,
            max: None,
            limit: None,
            ties_in_id_order: false,
        });
    }
    let last = steps.len() - 1;
    &mut steps[last]
}

/// Parses `FT.AGGREGATE index query …` (arguments from the query on); `settings`
/// give the dialect, the timeout and the cursor idle time of a request that names
/// none, and bound its `LIMIT` and `MAXIDLE`.
pub(super) fn parse_request(argv: &[Vec<u8>], settings: &SearchSettings) -> OpResult<Request> {
    let mut r = Request {
        query: argv[2].clone(),
        params: Params::new(),
        dialect: u32::from(settings.default_dialect),
        steps: Vec::new(),
        cursor: None,
        scorer: crate::index::eval::Scorer::default(),
        add_scores: false,
        with_scores: false,
        analysis: Default::default(),
        timeout_ms: settings.timeout_ms,
    };
    let mut i = 3;
    while i < argv.len() {
        let word = argv[i].to_ascii_uppercase();
        let at = i;
        i += 1;
        match word.as_slice() {
            b"VERBATIM" => r.analysis.verbatim = true,
            b"LANGUAGE" => r.analysis.parse_language(argv, &mut i)?,
            b"EXPANDER" => r.analysis.parse_expander(argv, &mut i)?,
            b"LOAD" => {
                let a = argv.get(i).ok_or_else(|| bad("LOAD", NONE_PROVIDED))?;
                i += 1;
                if a.as_slice() == b"*" {
                    r.steps.push(Step::LoadAll);
                    continue;
                }
                let n = count_arg(a).ok_or_else(|| bad("LOAD", "SUCCESS"))?;
                if n > 0 && i == argv.len() {
                    return Err(bad("LOAD", NONE_PROVIDED));
                }
                if i + n > argv.len() {
                    return Err(bad("LOAD", "SUCCESS"));
                }
                let end = i + n;
                let mut fields = Vec::new();
                while i < end {
                    let name = property(&argv[i]);
                    i += 1;
                    let mut alias = name.clone();
                    if i + 1 < end && argv[i].eq_ignore_ascii_case(b"AS") {
                        alias = argv[i + 1].clone();
                        i += 2;
                    }
                    fields.push((name, alias));
                }
                if r.steps.iter().any(|s| matches!(s, Step::Group { .. })) {
                    return Err(err("LOAD cannot be applied after projectors or reducers"));
                }
                r.steps.push(Step::Load(fields));
            }
            b"GROUPBY" => {
                let n = counted(argv, i, "GROUPBY")?;
                i += 1;
                let mut keys = Vec::new();
                for _ in 0..n {
                    let a = argv.get(i).ok_or_else(|| bad("GROUPBY", NONE_PROVIDED))?;
                    let Some(name) = a.strip_prefix(b"@") else {
                        return Err(bad(
                            "GROUPBY",
                            &format!(
                                "Unknown property `{}`. Did you mean `@{}`?",
                                lossy(a),
                                lossy(a)
                            ),
                        ));
                    };
                    keys.push(name.to_vec());
                    i += 1;
                }
                let mut reducers = Vec::new();
                while argv
                    .get(i)
                    .is_some_and(|a| a.eq_ignore_ascii_case(b"REDUCE"))
                {
                    i += 1;
                    reducers.push(parse_reduce(argv, &mut i)?);
                }
                r.steps.push(Step::Group { keys, reducers });
            }
            b"SORTBY" => {
                let n = counted(argv, i, "SORTBY")?;
                i += 1;
                if i + n > argv.len() {
                    return Err(bad("SORTBY", NONE_PROVIDED));
                }
                let mut keys: Vec<(Vec<u8>, bool)> = Vec::new();
                for a in &argv[i..i + n] {
                    if let Some(name) = a.strip_prefix(b"@") {
                        keys.push((name.to_vec(), true));
                    } else if a.eq_ignore_ascii_case(b"ASC") || a.eq_ignore_ascii_case(b"DESC") {
                        if let Some(last) = keys.last_mut() {
                            last.1 = a.eq_ignore_ascii_case(b"ASC");
                        }
                    } else {
                        return Err(err(format!(
                            "MISSING ASC or DESC after sort field ({})",
                            lossy(a)
                        )));
                    }
                }
                i += n;
                let mut max_arg = None;
                if argv.get(i).is_some_and(|a| a.eq_ignore_ascii_case(b"MAX")) {
                    let m = argv
                        .get(i + 1)
                        .and_then(|a| count_arg(a))
                        .ok_or_else(|| bad("MAX", NOT_CONVERTED))?;
                    max_arg = Some(m);
                    i += 2;
                }
                let Step::Arrange { sort, max, .. } = arrange(&mut r.steps) else {
                    continue;
                };
                if sort.is_some() {
                    return Err(err(
                        "Multiple SORTBY steps are not allowed. Sort multiple fields in a single step",
                    ));
                }
                *sort = Some(keys);
                *max = max_arg;
            }
            b"APPLY" | b"FILTER" => {
                let text = argv
                    .get(i)
                    .ok_or_else(|| bad("APPLY/FILTER", NONE_PROVIDED))?;
                i += 1;
                let e = expr::parse(text).map_err(err)?;
                if word == b"FILTER" {
                    r.steps.push(Step::Filter(e));
                    continue;
                }
                let mut alias = text.clone();
                if argv.get(i).is_some_and(|a| a.eq_ignore_ascii_case(b"AS")) {
                    alias = argv
                        .get(i + 1)
                        .ok_or_else(|| err("AS needs argument"))?
                        .clone();
                    i += 2;
                }
                r.steps.push(Step::Apply { expr: e, alias });
            }
            b"LIMIT" => {
                let (Some(off), Some(num)) = (argv.get(i), argv.get(i + 1)) else {
                    return Err(err("LIMIT requires two arguments"));
                };
                let off = count_arg(off).ok_or_else(|| err("LIMIT needs two numeric arguments"))?;
                let num = count_arg(num).ok_or_else(|| err("LIMIT needs two numeric arguments"))?;
                if let Some(max) = settings.max_aggregate_results.filter(|m| num as u64 > *m) {
                    return Err(err(format!("LIMIT exceeds maximum of {max}")));
                }
                i += 2;
                if let Step::Arrange { limit, .. } = arrange(&mut r.steps) {
                    *limit = Some((off, num));
                }
            }
            b"WITHCURSOR" => {
                let mut c = CursorOpts {
                    count: CURSOR_CHUNK,
                    max_idle_ms: settings.cursor_max_idle_ms,
                };
                loop {
                    let opt = argv.get(i).map(|a| a.to_ascii_uppercase());
                    match opt.as_deref() {
                        Some(b"COUNT") => {
                            let n = cursor_number(argv.get(i + 1), "COUNT")?;
                            c.count = n as usize;
                        }
                        Some(b"MAXIDLE") => {
                            let n = cursor_number(argv.get(i + 1), "MAXIDLE")?;
                            c.max_idle_ms = n.min(settings.cursor_max_idle_ms);
                        }
                        _ => break,
                    }
                    i += 2;
                }
                r.cursor = Some(c);
            }
            b"PARAMS" => {
                let n = argv
                    .get(i)
                    .and_then(|a| count_arg(a))
                    .filter(|n| *n > 0 && n.is_multiple_of(2))
                    .ok_or_else(|| err("Parameters must be specified in PARAM VALUE pairs"))?;
                i += 1;
                if i + n > argv.len() {
                    return Err(bad(
                        "PARAMS",
                        "Not enough arguments were provided based on argument count for PARAMS",
                    ));
                }
                for pair in argv[i..i + n].chunks_exact(2) {
                    r.params.insert(pair[0].clone(), pair[1].clone());
                }
                i += n;
            }
            b"DIALECT" => {
                r.dialect = argv
                    .get(i)
                    .and_then(|a| count_arg(a))
                    .filter(|d| (1..=4).contains(d))
                    .ok_or_else(|| err("DIALECT requires a non negative integer >=1 and <= 4"))?
                    as u32;
                i += 1;
            }
            b"TIMEOUT" => {
                r.timeout_ms = argv
                    .get(i)
                    .and_then(|a| count_arg(a))
                    .ok_or_else(|| err("TIMEOUT requires a non negative integer"))?
                    as u64;
                i += 1;
            }
            b"SCORER" => {
                let name = argv.get(i).ok_or_else(|| bad("SCORER", NONE_PROVIDED))?;
                if !SCORERS.contains(&name.as_slice()) {
                    return Err(err(format!("No such scorer {}", lossy(name))));
                }
                r.scorer = crate::index::eval::Scorer::parse(name).ok_or_else(|| {
                    err("SCORER HAMMING compares document payloads, which Pion does not keep")
                })?;
                i += 1;
            }
            b"ADDSCORES" => r.add_scores = true,
            b"WITHSCORES" => r.with_scores = true,
            b"NOCONTENT" | b"INORDER" | b"SLOP" | b"PAYLOAD" | b"INKEYS" | b"INFIELDS" => {
                return Err(err(format!(
                    "FT.AGGREGATE option {} is not supported by Pion",
                    lossy(&argv[at])
                )));
            }
            _ => {
                return Err(err(format!(
                    "Unknown argument `{}` at position {} for <main>",
                    lossy(&argv[at]),
                    at - 2
                )))
            }
        }
    }
    // A sort keeps no more than MAXAGGREGATERESULTS rows, its LIMIT's window included,
    // as RediSearch sizes its sorter.
    if let Some(max) = settings.max_aggregate_results {
        let max = max as usize;
        for step in &mut r.steps {
            if let Step::Arrange {
                sort: Some(_),
                limit: Some((off, num)),
                ..
            } = step
            {
                *num = (*num).min(max.saturating_sub(*off));
            }
        }
    }
    Ok(r)
}

fn cursor_number(arg: Option<&Vec<u8>>, option: &str) -> OpResult<u64> {
    let a = arg.ok_or_else(|| bad(option, NONE_PROVIDED))?;
    match std::str::from_utf8(a)
        .ok()
        .and_then(|s| s.parse::<i64>().ok())
    {
        Some(n) if n >= 1 => Ok(n as u64),
        Some(_) => Err(bad(option, OUT_OF_BOUNDS)),
        None => Err(bad(option, NOT_CONVERTED)),
    }
}
