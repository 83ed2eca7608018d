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

mod dates;
mod eval;
pub mod expr;
mod geo;
pub mod group;
mod minmax;
pub mod pipeline;
pub(super) mod profile;
mod request;
mod sketches;
pub mod value;

pub(super) use request::{parse_reduce, Step};

use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::command::ctx::Ctx;
use crate::config::search::SearchSettings;
use crate::error::{OpError, OpResult};
use crate::index::eval::{evaluate_with, EvalOptions};
use crate::index::IndexDef;
use crate::reply::Reply;

use super::profile::Trace;
use group::{Group, Reducer, ReducerKind};
use pipeline::{
    norm_of, Apply, Env, Filter, Load, LoadAll, Lookup, Pager, Root, Sorter, Source, Stage, State,
};
use request::{parse_request, Request};

fn err(text: impl Into<String>) -> OpError {
    OpError::custom(text.into())
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Rows a `SORTBY` keeps without `MAX` or `LIMIT`.
const DEFAULT_SORT_MAX: usize = 10;

/// A compiled pipeline: its last stage and the state its pulls share.
pub(super) struct Pipeline {
    /// The last stage.
    pub stage: Box<dyn Stage>,
    /// Lookups and counters.
    pub state: State,
    /// `WITHSCORES`: each document's score, replied before its row (0 for a row that
    /// is not one document, such as a group).
    pub scores: Option<Arc<crate::index::IdMap<f64>>>,
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
            sortable_only: false,
        })
    }
}

/// The documents a query matched, in the order the pipeline reads them.
pub(super) struct Matched {
    /// Ids with the vector distance a KNN or range clause gave.
    pub(super) ids: Vec<(u64, Option<f32>)>,
    /// The name the distance is replied under.
    pub(super) distance_name: Option<Vec<u8>>,
    /// Named numbers each document brings, after the distance: `ADDSCORES`' text score
    /// as `__score`, `FT.HYBRID`'s scores.
    pub(super) columns: Vec<Column>,
    /// The query terms each document matched, for `matched_terms()` (`None`: not
    /// asked for, or not known, as for a KNN query's documents).
    pub(super) terms: Option<crate::index::IdMap<Vec<Vec<u8>>>>,
}

/// A named number each document brings.
pub(super) struct Column {
    /// The name rows carry it under.
    pub(super) name: Vec<u8>,
    /// Each document's value.
    pub(super) values: crate::index::IdMap<f64>,
    /// The value of a document without one (`None`: its rows lack the field).
    pub(super) absent: Option<f64>,
    /// Whether rows reply it only when it is loaded.
    pub(super) hidden: bool,
}

/// Whether an `APPLY` or `FILTER` step calls `matched_terms()`.
fn uses_matched_terms(steps: &[Step]) -> bool {
    steps.iter().any(|s| match s {
        Step::Apply { expr, .. } | Step::Filter(expr) => expr.uses_matched_terms(),
        _ => false,
    })
}

/// Compiles the steps against the index: the pipeline, ready to pull.
pub(super) fn compile(def: &IndexDef, steps: Vec<Step>, matched: Matched) -> OpResult<Pipeline> {
    let mut c = Compiler {
        def,
        lookups: vec![Lookup::default()],
        load_all: false,
        pending: Vec::new(),
    };
    let distance_slot = matched.distance_name.map(|n| c.lookups[0].add(&n));
    let columns = matched
        .columns
        .into_iter()
        .map(|col| {
            let slot = c.lookups[0].add(&col.name);
            c.lookups[0].keys[slot].hidden = col.hidden;
            (slot, col.values, col.absent)
        })
        .collect();
    // `matched_terms()` reads the document's terms from a hidden slot of the root's.
    let terms = uses_matched_terms(&steps).then(|| {
        let slot = c.lookups[0].add(expr::MATCHED_TERMS_SLOT);
        c.lookups[0].keys[slot].hidden = true;
        (slot, matched.terms.unwrap_or_default())
    });
    let mut stage: Box<dyn Stage> = Box::new(Root {
        ids: matched.ids.into_iter(),
        distance_slot,
        columns,
        terms,
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
                    let hidden = c.lookups[0]
                        .find(&name)
                        .filter(|&s| c.lookups[0].keys[s].hidden);
                    let source = match hidden {
                        Some(from) => Source::Slot(from),
                        None if name == b"__key" => Source::Key,
                        None => match def.field(&name) {
                            Some((fi, _)) => Source::Field(fi),
                            None => Source::Named(name.clone()),
                        },
                    };
                    let slot = c.lookups[0].add_shown(&alias);
                    loads.push((source, slot));
                }
                let sortable_only = loads.iter().all(
                    |(source, _)| matches!(source, Source::Field(fi) if def.fields[*fi].sortable),
                );
                stage = Box::new(Load {
                    up: stage,
                    fields: loads,
                    sortable_only,
                });
            }
            Step::Apply { mut expr, alias } => {
                expr.bind_matched_terms(c.seg() == 0);
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
                expr.bind_matched_terms(c.seg() == 0);
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
            Step::Arrange {
                sort,
                max,
                limit,
                ties_in_id_order,
            } => {
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
                        ties_in_id_order,
                        sorted: None,
                        timed_out: false,
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
            deadline: None,
            ids_read: 0,
            ids_done: false,
            last_id: 0,
        },
        scores: None,
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
    /// `WITHSCORES`: each row's score.
    pub scores: Option<Vec<f64>>,
}

/// Pulls up to `count` rows (`None`: all). An error at the first row is the reply;
/// a later one ends the rows there, as in RediSearch. A timeout is never the reply:
/// the rows so far are, with the timeout as the warning.
pub(super) fn read_chunk(
    pipe: &mut Pipeline,
    env: &Env<'_>,
    count: Option<usize>,
) -> OpResult<Chunk> {
    pipe.state.total = 0;
    let mut warning = None;
    let first = match pipe.stage.next(env, &mut pipe.state) {
        Ok(first) => first,
        Err(e) if e == pipeline::TIMED_OUT => {
            warning = Some(e);
            None
        }
        Err(e) => return Err(err(e)),
    };
    let total = pipe.state.total;
    let mut rows = Vec::new();
    let mut scores = pipe.scores.as_ref().map(|_| Vec::new());
    let mut next = first;
    let mut done = false;
    loop {
        let Some(row) = next else {
            done = true;
            break;
        };
        if let (Some(out), Some(map)) = (scores.as_mut(), pipe.scores.as_ref()) {
            let id = row.doc.as_ref().map(|d| d.id);
            out.push(id.and_then(|id| map.get(&id).copied()).unwrap_or(0.0));
        }
        let seg = pipe.state.lookups.len() - 1;
        let fields = pipe.state.lookups[seg]
            .keys
            .iter()
            .enumerate()
            .filter(|(_, k)| !k.hidden)
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
        scores,
    })
}

/// A chunk cut short by its deadline is the error `ON_TIMEOUT FAIL` asks for.
fn fail_on_timeout(chunk: Chunk, settings: &SearchSettings) -> OpResult<Chunk> {
    if chunk.warning.as_deref() == Some(pipeline::TIMED_OUT) {
        super::query::timed_out(settings)?;
    }
    Ok(chunk)
}

/// A chunk in the connection's protocol.
pub(super) fn chunk_reply(chunk: Chunk, resp3: bool) -> Reply {
    let mut scores = chunk.scores.map(Vec::into_iter);
    if !resp3 {
        let mut out = vec![Reply::Integer(chunk.total as i64)];
        for row in chunk.rows {
            if let Some(s) = scores.as_mut().and_then(Iterator::next) {
                out.push(Reply::bulk(crate::util::num::fmt_shortest(s)));
            }
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
            let score = scores.as_mut().and_then(Iterator::next);
            let score = score.map(|s| (Reply::status("score"), Reply::ShortDouble(s)));
            Reply::Map(
                score
                    .into_iter()
                    .chain([
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
                    .collect(),
            )
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
fn prepare(env: &Env<'_>, req: Request, mut trace: Option<&mut Trace>) -> OpResult<Pipeline> {
    let clock = std::time::Instant::now();
    let index = env.index;
    let def = index.def.read().clone();
    let query = req
        .analysis
        .parse(&def, &req.query, &req.params, req.dialect)?;
    if let Some(t) = trace.as_deref_mut() {
        t.parse = clock.elapsed();
    }
    let deadline = super::query::deadline_of(req.timeout_ms);
    let (matches, plan, terms) = {
        let docs = index.docs.read();
        // Scores asked for are the ones FT.SEARCH ranks by: a wildcard, a tag or a
        // range alone scores each document like a term found once (RediSearch runs
        // one scorer for both commands). A KNN query's rows carry their distance.
        let eval = EvalOptions {
            scorer: req.scorer,
            rank_all: (req.add_scores || req.with_scores) && query.vector.is_none(),
            deadline,
            max_expansions: super::max_expansions(env.engine),
            ..EvalOptions::default()
        };
        if let Some(t) = trace.as_deref_mut() {
            t.query = Some((query.filter.clone(), eval));
        }
        let matches = match evaluate_with(&query.filter, &def, &docs, eval) {
            Ok(m) => m,
            // Past TIMEOUT before anything was found: a pipeline over nothing whose
            // first read gives the timeout.
            Err(e) if e.timed_out() => {
                drop(docs);
                let empty = Matched {
                    ids: Vec::new(),
                    distance_name: None,
                    columns: Vec::new(),
                    terms: None,
                };
                let mut pipe = compile(&def, req.steps, empty)?;
                pipe.state.deadline = deadline;
                return Ok(pipe);
            }
            Err(e) => return Err(err(e.0)),
        };
        let plan = match &query.vector {
            Some(knn) => Some(super::knn::knn_candidates(
                &def, &docs, &query, knn, &matches,
            )?),
            None => None,
        };
        let terms = (uses_matched_terms(&req.steps) && query.vector.is_none()).then(|| {
            let ids = matches.set.iter();
            crate::index::eval::matched_terms(&query.filter, &def, &docs, eval, ids)
        });
        (matches, plan, terms)
    };
    let scores = req.add_scores.then(|| matches.scores.to_map());
    let matches_scores = if req.with_scores {
        matches.scores.to_map()
    } else {
        Default::default()
    };
    // The exact re-rank reads hashes: after the document lock is released.
    let mut matched = match (plan, &query.vector) {
        (Some(plan), Some(knn)) => Matched {
            ids: super::knn::knn_rerank(env.engine, plan, env.now_ms)
                .into_iter()
                .map(|n| (n.label, Some(n.distance)))
                .collect(),
            distance_name: Some(knn.score_field()),
            columns: Vec::new(),
            terms: None,
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
                columns: Vec::new(),
                terms,
            }
        }
    };
    if let Some(scores) = scores {
        // Under a KNN clause a document no text term matched scores 0.
        matched.columns.push(Column {
            name: b"__score".to_vec(),
            values: scores,
            absent: Some(0.0),
            hidden: false,
        });
    }
    if let Some(t) = trace {
        if query.vector.is_some() {
            t.knn = Some(matched.ids.len());
        }
        t.build = clock.elapsed().saturating_sub(t.parse);
    }
    let mut pipe = compile(&def, req.steps, matched)?;
    pipe.state.deadline = deadline;
    if req.with_scores {
        pipe.scores = Some(Arc::new(matches_scores));
    }
    Ok(pipe)
}

/// `FT.AGGREGATE index query [steps and options]`.
pub(super) fn aggregate(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    aggregate_traced(ctx, argv, None)
}

/// `FT.AGGREGATE`, its stages counted and timed for `FT.PROFILE`.
pub(super) fn aggregate_traced(
    ctx: &mut Ctx<'_>,
    argv: &[Vec<u8>],
    mut trace: Option<&mut Trace>,
) -> OpResult<Reply> {
    if argv.len() < 2 {
        return Err(err(
            "ERR wrong number of arguments for 'FT.AGGREGATE' command",
        ));
    }
    let engine = ctx.engine();
    let Some(index) = engine.search().get(&argv[1]) else {
        return Err(super::no_such_index(&argv[1]));
    };
    if argv.len() < 3 {
        return Err(err("No query string provided"));
    }
    let settings = ctx.config().with(|c| c.search.clone());
    let req = parse_request(argv, &settings)?;
    index.uses.fetch_add(1, Ordering::Relaxed);
    index.dialects[(req.dialect as usize - 1).min(3)].fetch_add(1, Ordering::Relaxed);
    let cursor = req.cursor;
    let resp3 = ctx.client.resp >= 3;
    let env = Env {
        engine,
        index: &index,
        now_ms: ctx.now_ms(),
    };
    // The rows a reply stops at, once its page is full (FT.PROFILE counts as
    // RediSearch's reply reads).
    let page = req.steps.iter().rev().find_map(|s| match s {
        Step::Arrange {
            limit: Some((_, n)),
            ..
        } => Some(*n),
        _ => None,
    });
    let mut pipe = prepare(&env, req, trace.as_deref_mut())?;
    if let Some(t) = trace {
        let (stage, lines) = profile::instrument(pipe.stage);
        pipe.stage = stage;
        let max = settings.max_aggregate_results.map(|n| n as usize);
        let count = page.filter(|_| profile::page_stops_reply(&lines)).or(max);
        let chunk = fail_on_timeout(read_chunk(&mut pipe, &env, count)?, &settings)?;
        t.timed_out |= chunk.warning.as_deref() == Some(pipeline::TIMED_OUT);
        t.processors = profile::processor_lines(&lines);
        if t.knn.is_some() && !t.processors.is_empty() {
            // RediSearch's step that gives each row its distance; Pion's root does.
            let applier = profile::ProcessorLine {
                name: "Metrics Applier".into(),
                time_ms: 0.0,
                counter: t.processors[0].counter,
            };
            t.processors.insert(1, applier);
        }
        t.reads = (!pipe.state.ids_done).then_some(pipe.state.ids_read);
        return Ok(chunk_reply(chunk, resp3));
    }
    let Some(opts) = cursor else {
        // MAXAGGREGATERESULTS bounds the rows of a request without a cursor.
        let max = settings.max_aggregate_results.map(|n| n as usize);
        let chunk = fail_on_timeout(read_chunk(&mut pipe, &env, max)?, &settings)?;
        return Ok(chunk_reply(chunk, resp3));
    };
    let chunk = fail_on_timeout(read_chunk(&mut pipe, &env, Some(opts.count))?, &settings)?;
    // TIMEOUT bounds this request; the cursor's later reads run to completion.
    pipe.state.deadline = None;
    let done = chunk.done;
    let reply = chunk_reply(chunk, resp3);
    let id = if done {
        0
    } else {
        engine.search_cursors().open(
            Arc::clone(&index),
            Box::new(pipe),
            opts.count,
            opts.max_idle_ms,
        )
    };
    Ok(Reply::Array(vec![reply, Reply::Integer(id as i64)]))
}

#[cfg(test)]
mod tests;
