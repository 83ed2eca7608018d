//! `FT.AGGREGATE`: a query's documents run through a pipeline of steps given in
//! order (`LOAD`, `APPLY`, `FILTER`, `GROUPBY … REDUCE`, `SORTBY`, `LIMIT`), with
//! RediSearch 2.10's reply shapes, error texts and orders.
//!
//! The request is parsed into [`Step`]s, then compiled into a chain of pull-based
//! stages ([`pipeline`], [`group`]) against the index's schema: references resolve
//! to row slots the way RediSearch resolves them (sortable fields are available
//! without `LOAD`; `SORTBY`, `GROUPBY` and reducers load other schema fields
//! themselves; `APPLY` and `FILTER` need the rest loaded). A reply pulls rows until
//! it has them all, or a cursor's chunk ([`super::cursor`]).

pub mod expr;
pub mod group;
pub mod pipeline;
pub mod value;

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::error::{OpError, OpResult};
use crate::exec::Ctx;
use crate::index::eval::evaluate;
use crate::index::IndexDef;
use crate::reply::Reply;
use crate::search::query::{self as q, Params};

use expr::Expr;
use group::{Group, Reducer, ReducerKind};
use pipeline::{
    norm_of, Apply, Env, Filter, Load, LoadAll, Lookup, Pager, Root, Sorter, Source, Stage, State,
};

fn err(text: impl Into<String>) -> OpError {
    OpError::custom(text.into())
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// One `REDUCE` as written.
#[derive(Debug, Clone)]
struct ReduceSpec {
    kind: ReducerKind,
    /// The property it reads (without `@`).
    input: Vec<u8>,
    /// `FIRST_VALUE … BY @p [ASC|DESC]`.
    by: Option<(Vec<u8>, bool)>,
    alias: Vec<u8>,
}

/// One step as written.
#[derive(Debug, Clone)]
enum Step {
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
    },
}

/// `WITHCURSOR [COUNT c] [MAXIDLE ms]`.
#[derive(Debug, Clone, Copy)]
pub(super) struct CursorOpts {
    /// Rows per read.
    pub count: usize,
    /// Idle time after which the cursor is gone.
    pub max_idle_ms: u64,
}

/// The default rows per cursor read.
const CURSOR_CHUNK: usize = 1000;
/// The default (and largest) `MAXIDLE`.
const MAX_IDLE_MS: u64 = 300_000;
/// Rows a `SORTBY` keeps without `MAX` or `LIMIT`.
const DEFAULT_SORT_MAX: usize = 10;

struct Request {
    query: Vec<u8>,
    params: Params,
    dialect: u32,
    steps: Vec<Step>,
    cursor: Option<CursorOpts>,
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

fn parse_reduce(argv: &[Vec<u8>], at: &mut usize) -> OpResult<ReduceSpec> {
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
        b"COUNT_DISTINCTISH" | b"QUANTILE" | b"RANDOM_SAMPLE" | b"HLL" | b"HLL_SUM" => {
            return Err(err(format!("Reducer {shown} is not supported by Pion")));
        }
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
        });
    }
    let last = steps.len() - 1;
    &mut steps[last]
}

fn parse_request(argv: &[Vec<u8>]) -> OpResult<Request> {
    let mut r = Request {
        query: argv[2].clone(),
        params: Params::new(),
        dialect: 1,
        steps: Vec::new(),
        cursor: None,
    };
    let mut i = 3;
    while i < argv.len() {
        let word = argv[i].to_ascii_uppercase();
        let at = i;
        i += 1;
        match word.as_slice() {
            b"VERBATIM" => {}
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
                i += 2;
                if let Step::Arrange { limit, .. } = arrange(&mut r.steps) {
                    *limit = Some((off, num));
                }
            }
            b"WITHCURSOR" => {
                let mut c = CursorOpts {
                    count: CURSOR_CHUNK,
                    max_idle_ms: MAX_IDLE_MS,
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
                            c.max_idle_ms = n.min(MAX_IDLE_MS);
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
                // Pipelines here run to completion; the value is only checked.
                argv.get(i)
                    .and_then(|a| count_arg(a))
                    .ok_or_else(|| err("TIMEOUT requires a non negative integer"))?;
                i += 1;
            }
            b"WITHSCORES" | b"ADDSCORES" | b"SCORER" | b"NOCONTENT" | b"INORDER" | b"SLOP"
            | b"LANGUAGE" | b"EXPANDER" | b"PAYLOAD" | b"INKEYS" | b"INFIELDS" => {
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

/// A compiled pipeline: its last stage and the state its pulls share.
pub(super) struct Pipeline {
    /// The last stage.
    pub stage: Box<dyn Stage>,
    /// Lookups and counters.
    pub state: State,
}

/// How a reference resolves when it is not already in the segment.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Want {
    /// `APPLY`/`FILTER`: sortable fields only (or anything after `LOAD *`).
    Expression,
    /// `SORTBY`: any schema field, loaded when not sortable.
    Sort,
    /// `GROUPBY`.
    Group,
    /// A reducer's argument.
    Reduce,
}

struct Compiler<'a> {
    def: &'a IndexDef,
    lookups: Vec<Lookup>,
    /// Whether a `LOAD *` came before, in the first segment.
    load_all: bool,
    /// Loads to add before the next sorting or grouping stage.
    pending: Vec<(Source, usize)>,
}

impl Compiler<'_> {
    fn seg(&self) -> usize {
        self.lookups.len() - 1
    }

    fn resolve(&mut self, name: &[u8], want: Want) -> OpResult<usize> {
        let seg = self.seg();
        if let Some(slot) = self.lookups[seg].find(name) {
            return Ok(slot);
        }
        let field = if seg == 0 { self.def.field(name) } else { None };
        let missing = || {
            let n = lossy(name);
            err(match want {
                Want::Expression => format!("Property `{n}` not loaded nor in pipeline"),
                Want::Sort => format!("Property `{n}` not loaded nor in schema"),
                Want::Group => format!("No such property `{n}`"),
                Want::Reduce => format!("Property `{n}` not present in document or pipeline"),
            })
        };
        match field {
            Some((fi, spec)) if spec.sortable => {
                let slot = self.lookups[seg].add(name);
                self.lookups[seg].keys[slot].sortable = Some((fi, norm_of(&spec.kind)));
                Ok(slot)
            }
            Some((fi, _)) if want != Want::Expression => {
                let slot = self.lookups[seg].add(name);
                self.pending.push((Source::Field(fi), slot));
                Ok(slot)
            }
            _ if seg == 0 && self.load_all => Ok(self.lookups[seg].add(name)),
            _ => Err(missing()),
        }
    }

    fn flush_loads(&mut self, stage: Box<dyn Stage>) -> Box<dyn Stage> {
        if self.pending.is_empty() {
            return stage;
        }
        Box::new(Load {
            up: stage,
            fields: std::mem::take(&mut self.pending),
        })
    }
}

/// The documents a query matched, in the order the pipeline reads them.
struct Matched {
    /// Ids with the vector distance a KNN or range clause gave.
    ids: Vec<(u64, Option<f32>)>,
    /// The name the distance is replied under.
    distance_name: Option<Vec<u8>>,
}

fn compile(def: &IndexDef, steps: Vec<Step>, matched: Matched) -> OpResult<Pipeline> {
    let mut c = Compiler {
        def,
        lookups: vec![Lookup::default()],
        load_all: false,
        pending: Vec::new(),
    };
    let distance_slot = matched.distance_name.map(|n| c.lookups[0].add(&n));
    let mut stage: Box<dyn Stage> = Box::new(Root {
        ids: matched.ids.into_iter(),
        distance_slot,
    });
    for step in steps {
        match step {
            Step::LoadAll => {
                c.load_all = true;
                stage = Box::new(LoadAll { up: stage, seg: 0 });
            }
            Step::Load(fields) => {
                let mut loads = Vec::new();
                for (name, alias) in fields {
                    let source = if name == b"__key" {
                        Source::Key
                    } else {
                        match def.field(&name) {
                            Some((fi, _)) => Source::Field(fi),
                            None => Source::Hash(name.clone()),
                        }
                    };
                    let slot = c.lookups[0].add(&alias);
                    loads.push((source, slot));
                }
                stage = Box::new(Load {
                    up: stage,
                    fields: loads,
                });
            }
            Step::Apply { mut expr, alias } => {
                expr.resolve(&mut |n| {
                    c.resolve(n, Want::Expression)
                        .map_err(|e| e.wire_text().into_owned())
                })
                .map_err(err)?;
                let seg = c.seg();
                let slot = c.lookups[seg].add(&alias);
                stage = Box::new(Apply {
                    up: stage,
                    expr,
                    seg,
                    slot,
                });
            }
            Step::Filter(mut expr) => {
                expr.resolve(&mut |n| {
                    c.resolve(n, Want::Expression)
                        .map_err(|e| e.wire_text().into_owned())
                })
                .map_err(err)?;
                stage = Box::new(Filter {
                    up: stage,
                    expr,
                    seg: c.seg(),
                });
            }
            Step::Group { keys, reducers } => {
                let seg = c.seg();
                let key_slots = keys
                    .iter()
                    .map(|k| c.resolve(k, Want::Group))
                    .collect::<OpResult<Vec<_>>>()?;
                let mut compiled = Vec::new();
                for r in &reducers {
                    let input = match r.kind {
                        ReducerKind::Count => 0,
                        _ => c.resolve(&r.input, Want::Reduce)?,
                    };
                    let kind = match (&r.kind, &r.by) {
                        (ReducerKind::FirstValue(_), Some((by, asc))) => {
                            ReducerKind::FirstValue(Some((c.resolve(by, Want::Reduce)?, *asc)))
                        }
                        (k, _) => k.clone(),
                    };
                    compiled.push(Reducer { kind, input });
                }
                let mut out = Lookup::default();
                for k in &keys {
                    out.add(k);
                }
                for r in &reducers {
                    if out.find(&r.alias).is_some() {
                        return Err(err(format!(
                            "Property `{}` specified more than once",
                            lossy(&r.alias)
                        )));
                    }
                    out.add(&r.alias);
                }
                stage = c.flush_loads(stage);
                stage = Box::new(Group {
                    up: stage,
                    seg,
                    keys: key_slots,
                    reducers: compiled,
                    out: None,
                });
                c.lookups.push(out);
            }
            Step::Arrange { sort, max, limit } => {
                if let Some(keys) = sort {
                    let slots = keys
                        .iter()
                        .map(|(k, asc)| Ok((c.resolve(k, Want::Sort)?, *asc)))
                        .collect::<OpResult<Vec<_>>>()?;
                    let cap = match (limit, max) {
                        (Some((off, num)), _) => off + num,
                        (None, Some(m)) if m > 0 => m,
                        _ => DEFAULT_SORT_MAX,
                    };
                    stage = c.flush_loads(stage);
                    stage = Box::new(Sorter {
                        up: stage,
                        keys: slots,
                        seg: c.seg(),
                        cap,
                        sorted: None,
                    });
                }
                if let Some((off, num)) = limit {
                    stage = Box::new(Pager {
                        up: stage,
                        skip: off,
                        left: num,
                        count_only: num == 0,
                    });
                }
            }
        }
    }
    Ok(Pipeline {
        stage,
        state: State {
            def: def.clone(),
            lookups: c.lookups,
            total: 0,
        },
    })
}

/// What one chunk of a pipeline gave.
pub(super) struct Chunk {
    /// `total_results` for the chunk.
    pub total: usize,
    /// Rows as (name, value) pairs.
    pub rows: Vec<Vec<(Vec<u8>, value::Value)>>,
    /// Whether the pipeline has nothing more.
    pub done: bool,
    /// The error that ended the rows early (RESP3 replies carry it as a warning).
    pub warning: Option<String>,
}

/// Pulls up to `count` rows (`None`: all). An error at the first row is the reply;
/// a later one ends the rows there, as in RediSearch.
pub(super) fn read_chunk(
    pipe: &mut Pipeline,
    env: &Env<'_>,
    count: Option<usize>,
) -> OpResult<Chunk> {
    pipe.state.total = 0;
    let first = pipe.stage.next(env, &mut pipe.state).map_err(err)?;
    let total = pipe.state.total;
    let mut rows = Vec::new();
    let mut next = first;
    let mut done = false;
    let mut warning = None;
    loop {
        let Some(row) = next else {
            done = true;
            break;
        };
        let seg = pipe.state.lookups.len() - 1;
        let fields = pipe.state.lookups[seg]
            .keys
            .iter()
            .enumerate()
            .filter_map(|(slot, k)| pipe.state.get(seg, &row, slot).map(|v| (k.name.clone(), v)))
            .collect();
        rows.push(fields);
        if count.is_some_and(|c| rows.len() >= c) {
            break;
        }
        next = match pipe.stage.next(env, &mut pipe.state) {
            Ok(r) => r,
            Err(e) => {
                warning = Some(e);
                None
            }
        };
    }
    Ok(Chunk {
        total,
        rows,
        done,
        warning,
    })
}

/// A chunk in the connection's protocol.
pub(super) fn chunk_reply(chunk: Chunk, resp3: bool) -> Reply {
    if !resp3 {
        let mut out = vec![Reply::Integer(chunk.total as i64)];
        for row in chunk.rows {
            out.push(Reply::Array(
                row.into_iter()
                    .flat_map(|(k, v)| [Reply::Bulk(k), v.to_reply()])
                    .collect(),
            ));
        }
        return Reply::Array(out);
    }
    let results = chunk
        .rows
        .into_iter()
        .map(|row| {
            Reply::Map(vec![
                (
                    Reply::status("extra_attributes"),
                    Reply::Map(
                        row.into_iter()
                            .map(|(k, v)| (Reply::Bulk(k), v.to_reply()))
                            .collect(),
                    ),
                ),
                (Reply::status("values"), Reply::Array(Vec::new())),
            ])
        })
        .collect();
    Reply::Map(vec![
        (Reply::status("attributes"), Reply::Array(Vec::new())),
        (
            Reply::status("total_results"),
            Reply::Integer(chunk.total as i64),
        ),
        (Reply::status("format"), Reply::status("STRING")),
        (Reply::status("results"), Reply::Array(results)),
        (
            Reply::status("warning"),
            Reply::Array(chunk.warning.into_iter().map(Reply::status_owned).collect()),
        ),
    ])
}

/// Parses and compiles a request against an index: the pipeline, ready to pull.
/// A KNN query's documents come nearest first, with their distance as the first
/// field (`__<field>_score` or the `AS` name), as RediSearch gives them.
fn prepare(env: &Env<'_>, req: Request) -> OpResult<Pipeline> {
    let index = env.index;
    let def = index.def.read().clone();
    let kinds = super::query::Kinds(&def);
    let query = q::parse(&req.query, &req.params, req.dialect, &kinds)
        .map_err(|e| err(e.message().to_string()))?;
    let (matches, plan) = {
        let docs = index.docs.read();
        let matches = evaluate(&query.filter, &def, &docs).map_err(|e| err(e.0))?;
        let plan = match &query.vector {
            Some(knn) => Some(super::query::knn_candidates(
                &def, &docs, &query, knn, &matches,
            )?),
            None => None,
        };
        (matches, plan)
    };
    // The exact re-rank reads hashes: after the document lock is released.
    let matched = match (plan, &query.vector) {
        (Some(plan), Some(knn)) => Matched {
            ids: super::query::knn_rerank(env.engine, plan, env.now_ms)
                .into_iter()
                .map(|n| (n.label, Some(n.distance)))
                .collect(),
            distance_name: Some(knn.score_field()),
        },
        _ => {
            let range = matches.distances.first();
            Matched {
                ids: matches
                    .set
                    .iter()
                    .map(|id| (id, range.and_then(|(_, d)| d.get(&id).copied())))
                    .collect(),
                distance_name: range.map(|(name, _)| name.clone()),
            }
        }
    };
    compile(&def, req.steps, matched)
}

/// `FT.AGGREGATE index query [steps and options]`.
pub(super) fn aggregate(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    if argv.len() < 2 {
        return Err(err(
            "ERR wrong number of arguments for 'FT.AGGREGATE' command",
        ));
    }
    let engine = ctx.engine;
    let Some(index) = engine.search().get(&argv[1]) else {
        return Err(super::no_such_index(&argv[1]));
    };
    if argv.len() < 3 {
        return Err(err("No query string provided"));
    }
    let req = parse_request(argv)?;
    index.uses.fetch_add(1, Ordering::Relaxed);
    index.dialects[(req.dialect as usize - 1).min(3)].fetch_add(1, Ordering::Relaxed);
    let cursor = req.cursor;
    let resp3 = ctx.client.resp >= 3;
    let env = Env {
        engine,
        index: &index,
        now_ms: ctx.now_ms(),
    };
    let mut pipe = prepare(&env, req)?;
    let Some(opts) = cursor else {
        let chunk = read_chunk(&mut pipe, &env, None)?;
        return Ok(chunk_reply(chunk, resp3));
    };
    let chunk = read_chunk(&mut pipe, &env, Some(opts.count))?;
    let done = chunk.done;
    let reply = chunk_reply(chunk, resp3);
    let id = if done {
        0
    } else {
        engine.search().cursors.open(Arc::clone(&index), pipe, opts)
    };
    Ok(Reply::Array(vec![reply, Reply::Integer(id as i64)]))
}

#[cfg(test)]
mod tests;
