//! `FT.HYBRID` (Redis 8.4): one text query and one vector query over the same index,
//! their rankings fused into one score, then shaped by `FT.AGGREGATE`'s steps.
//!
//! As RediSearch runs it: the text query (dialect 2, BM25STD unless `SCORER` says
//! otherwise) keeps its best `WINDOW` documents by score; the vector query keeps its
//! `min(K, WINDOW)` nearest (KNN) or the first `WINDOW` within the radius (RANGE:
//! nearest first, or in document order when it has a `FILTER`), each distance
//! turned into a score in [0, 1] by the field's metric. A document either ranking
//! holds is one fused row: RRF scores Σ 1 / (CONSTANT + rank), LINEAR scores
//! ALPHA × text + BETA × vector. The rows carry `__score` (the fused score) and the
//! vector score (under `YIELD_SCORE_AS`, else `__<field>_score`) hidden, replied only
//! when loaded; without a `LOAD` they reply `__key` and `__score`. They are sorted by
//! score (ties in document order) unless `SORTBY` or `NOSORT`, and paged 10 at a time
//! unless `LIMIT`.
//!
//! `TIMEOUT` bounds each subquery's evaluation and the shaping pipeline: a subquery
//! past it contributes nothing, the pipeline stops at its next row, and the reply
//! carries RediSearch's warning naming the phase (`(SEARCH)`, `(VSIM)`, `(POST
//! PROCESSING)`), as its default `ON_TIMEOUT RETURN` policy does.

mod request;

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::aggregate::pipeline::Env;
use super::aggregate::{compile, read_chunk, Column, Matched, Step};
use super::knn::{knn_candidates, knn_rerank};
use super::query::Analysis;
use crate::command::ctx::Ctx;
use crate::error::{OpError, OpResult};
use crate::index::eval::{evaluate_with, EvalError, EvalOptions, TIMED_OUT};
use crate::index::query::{self as q, Node, Query};
use crate::index::schema::{FieldKind, IndexDef};
use crate::index::IdMap;
use crate::reply::Reply;
use crate::vector::Metric;
use request::{Fusion, HybridRequest, TextScorer, VectorMethod};

/// The dialect both subqueries parse in.
const HYBRID_DIALECT: u32 = 2;
/// `BM25STD.TANH`'s stretch: tanh(score / 4) (RediSearch's default factor).
const TANH_FACTOR: f64 = 4.0;

fn err(text: impl Into<String>) -> OpError {
    OpError::custom(text.into())
}

/// One subquery's documents, best first: id and score.
type Ranking = Vec<(u64, f64)>;

/// A fused document.
struct Fused {
    id: u64,
    text: Option<f64>,
    vector: Option<f64>,
    score: f64,
}

/// `FT.HYBRID index [2] SEARCH … VSIM … [options]`.
pub(super) fn hybrid(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let started = Instant::now();
    if argv.len() < 2 {
        return Err(err("ERR wrong number of arguments for 'FT.HYBRID' command"));
    }
    let engine = ctx.engine();
    let Some(index) = engine.search().get(&argv[1]) else {
        return Err(super::no_such_index(&argv[1]));
    };
    let req = request::parse(argv)?;
    index.uses.fetch_add(1, Ordering::Relaxed);
    index.dialects[HYBRID_DIALECT as usize - 1].fetch_add(1, Ordering::Relaxed);
    let env = Env {
        engine,
        index: &index,
        now_ms: ctx.now_ms(),
    };
    let def = index.def.read().clone();
    let settings = ctx.config().with(|c| c.search.clone());
    let timeout_ms = req.timeout_ms.unwrap_or(settings.timeout_ms);
    let deadline = (timeout_ms > 0).then(|| started + Duration::from_millis(timeout_ms));
    let mut warnings = Vec::new();
    // A subquery past TIMEOUT contributes nothing, and says so.
    let mut ranked = |r: OpResult<Option<Ranking>>, phase: &str| -> OpResult<Ranking> {
        Ok(r?.unwrap_or_else(|| {
            warnings.push(format!("{TIMED_OUT} ({phase})"));
            Vec::new()
        }))
    };
    let text = ranked(text_ranking(&env, &def, &req, deadline), "SEARCH")?;
    let vector = ranked(vector_ranking(&env, &def, &req, deadline), "VSIM")?;
    let fused = fuse(req.fusion, &text, &vector);
    let total = fused.len();
    let grouped = req.steps.iter().any(|s| matches!(s, Step::Group { .. }));
    let (matched, steps) = shape(req, fused);
    let mut pipe = compile(&def, steps, matched)?;
    // As in RediSearch, a subquery's timeout is the one reported.
    pipe.state.deadline = deadline.filter(|_| warnings.is_empty());
    let chunk = read_chunk(&mut pipe, &env, None)?;
    if let Some(w) = chunk.warning {
        warnings.push(format!("{w} (POST PROCESSING)"));
    }
    // Under ON_TIMEOUT FAIL a timeout anywhere is the reply.
    if !warnings.is_empty() {
        super::query::timed_out(&settings)?;
    }
    let total = if grouped { chunk.total } else { total };
    let rows = chunk
        .rows
        .into_iter()
        .map(|row| {
            Reply::Map(
                row.into_iter()
                    .map(|(k, v)| (Reply::Bulk(k), v.to_reply()))
                    .collect(),
            )
        })
        .collect();
    Ok(reply(total, rows, warnings, started))
}

/// RediSearch's reply: a map in RESP3, the same pairs flattened in RESP2.
fn reply(total: usize, rows: Vec<Reply>, warnings: Vec<String>, started: Instant) -> Reply {
    let ms = started.elapsed().as_secs_f64() * 1000.0;
    Reply::Map(vec![
        (Reply::status("total_results"), Reply::Integer(total as i64)),
        (Reply::status("results"), Reply::Array(rows)),
        (
            Reply::status("warnings"),
            Reply::Array(warnings.into_iter().map(Reply::status_owned).collect()),
        ),
        (Reply::status("execution_time"), Reply::Double(ms)),
    ])
}

/// Whether a filter tree holds a vector range (refused in both subqueries).
fn has_vector(node: &Node) -> bool {
    match node {
        Node::VectorRange(_) => true,
        Node::Intersect { children, .. } | Node::Union { children, .. } => {
            children.iter().any(has_vector)
        }
        Node::Not { child, .. } | Node::Optional { child, .. } => has_vector(child),
        _ => false,
    }
}

fn parse_subquery(def: &IndexDef, text: &[u8], req: &HybridRequest, what: &str) -> OpResult<Query> {
    let query = Analysis::default().parse(def, text, &req.params, HYBRID_DIALECT)?;
    if query.vector.is_some() || has_vector(&query.filter) {
        return Err(err(format!(
            "Vector expressions are not allowed in FT.HYBRID {what}"
        )));
    }
    Ok(query)
}

/// A subquery's evaluation: `None` past the deadline.
fn evaluated<T>(r: Result<T, EvalError>) -> OpResult<Option<T>> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.timed_out() => Ok(None),
        Err(e) => Err(err(e.0)),
    }
}

/// The text query's best `WINDOW` documents by score (ties in document order);
/// `None` past the deadline.
fn text_ranking(
    env: &Env<'_>,
    def: &IndexDef,
    req: &HybridRequest,
    deadline: Option<Instant>,
) -> OpResult<Option<Ranking>> {
    let query = parse_subquery(def, &req.text, req, "SEARCH")?;
    let docs = env.index.docs.read();
    let eval = EvalOptions {
        scorer: req.scorer.base(),
        rank_all: true,
        deadline,
        max_expansions: super::max_expansions(env.engine),
        ..EvalOptions::default()
    };
    let Some(matches) = evaluated(evaluate_with(&query.filter, def, &docs, eval))? else {
        return Ok(None);
    };
    let mut ranked: Ranking = matches
        .set
        .iter()
        .map(|id| (id, matches.scores.get(id).unwrap_or(0.0)))
        .collect();
    match req.scorer {
        TextScorer::Bm25StdTanh => {
            for (_, s) in &mut ranked {
                *s = (*s / TANH_FACTOR).tanh();
            }
        }
        TextScorer::Bm25StdNorm => {
            let max = ranked.iter().map(|(_, s)| *s).fold(0.0, f64::max);
            if max != 0.0 {
                for (_, s) in &mut ranked {
                    *s /= max;
                }
            }
        }
        TextScorer::Plain(_) => {}
    }
    // NaN (TFIDF's 0/0 for a document without text) ranks last.
    let key = |s: f64| if s.is_nan() { f64::NEG_INFINITY } else { s };
    ranked.sort_by(|a, b| key(b.1).total_cmp(&key(a.1)).then(a.0.cmp(&b.0)));
    ranked.truncate(req.fusion.window());
    Ok(Some(ranked))
}

/// A distance as a score in [0, 1], as RediSearch's hybrid normalises it: L2
/// 1 / (1 + d), cosine (1 + (1 - d)) / 2, and IP (1 + d) / 2 of the distance
/// (1 - inner product) — RediSearch applies its inner-product formula to the
/// distance, and Pion keeps its numbers.
fn vector_score(metric: Metric, distance: f64) -> f64 {
    match metric {
        Metric::L2 => 1.0 / (1.0 + distance),
        Metric::Cosine => (1.0 + (1.0 - distance)) / 2.0,
        Metric::Ip => (1.0 + distance) / 2.0,
    }
}

/// The vector query's documents, nearest first (a filtered RANGE in document order),
/// with their normalised scores; `None` past the deadline.
fn vector_ranking(
    env: &Env<'_>,
    def: &IndexDef,
    req: &HybridRequest,
    deadline: Option<Instant>,
) -> OpResult<Option<Ranking>> {
    let eval = EvalOptions {
        deadline,
        max_expansions: super::max_expansions(env.engine),
        ..EvalOptions::default()
    };
    let v = &req.vector;
    let filter_text = v.filter.as_deref().unwrap_or(b"*");
    let filter = parse_subquery(def, filter_text, req, "VSIM FILTER")?.filter;
    let metric = match def.field(&v.field) {
        Some((_, spec)) => match &spec.kind {
            FieldKind::Vector(vs) => vs.params.metric,
            _ => return Err(err("Invalid vector field for normalization")),
        },
        None => {
            return Err(err(format!(
                "Unknown field `{}`",
                String::from_utf8_lossy(&v.field)
            )))
        }
    };
    let blob = req
        .params
        .require(&v.param)
        .map_err(|e| err(e.message().to_string()))?
        .to_vec();
    let mut written = Vec::new();
    if let Some(policy) = v.policy {
        written.push((b"HYBRID_POLICY".to_vec(), policy.to_vec()));
    }
    if let Some(size) = &v.batch_size {
        written.push((b"BATCH_SIZE".to_vec(), size.clone()));
    }
    let window = req.fusion.window();
    let option = |name: &[u8], (raw, value): &(Vec<u8>, f64)| q::VectorOption {
        name: name.to_vec(),
        raw: raw.clone(),
        value: *value,
    };
    let nearest: Vec<(u64, f32)> = match &v.method {
        VectorMethod::Knn { k, ef_runtime } => {
            let clause = q::VectorClause {
                field: v.field.clone(),
                k: (*k).min(window as u64),
                blob,
                blob_param: v.param.clone(),
                ef_runtime: ef_runtime.as_ref().map(|e| option(b"EF_RUNTIME", e)),
                written,
                yield_distance_as: None,
            };
            let query = Query {
                filter,
                vector: Some(clause),
            };
            let plan = {
                let docs = env.index.docs.read();
                let Some(matches) = evaluated(evaluate_with(&query.filter, def, &docs, eval))?
                else {
                    return Ok(None);
                };
                let Some(knn) = &query.vector else {
                    return Ok(Some(Vec::new()));
                };
                knn_candidates(def, &docs, &query, knn, &matches)?
            };
            knn_rerank(env.engine, plan, env.now_ms)
                .into_iter()
                .map(|n| (n.label, n.distance))
                .collect()
        }
        VectorMethod::Range { radius, epsilon } => {
            let range = Node::VectorRange(q::VectorRange {
                field: v.field.clone(),
                radius: *radius,
                blob,
                blob_param: v.param.clone(),
                epsilon: epsilon.as_ref().map(|e| option(b"EPSILON", e)),
                written,
                // Only a yielded distance is recorded; the name is never replied.
                yield_distance_as: Some(b"__vector_distance".to_vec()),
            });
            let tree = match filter {
                Node::MatchAll => range,
                other => Node::Intersect {
                    fields: q::FieldScope::All,
                    children: vec![other, range],
                },
            };
            let docs = env.index.docs.read();
            let Some(matches) = evaluated(evaluate_with(&tree, def, &docs, eval))? else {
                return Ok(None);
            };
            let distances: HashMap<u64, f32> = matches
                .distances
                .into_iter()
                .next()
                .map(|(_, d)| d)
                .unwrap_or_default();
            let mut found: Vec<(u64, f32)> = matches
                .set
                .iter()
                .filter_map(|id| distances.get(&id).map(|d| (id, *d)))
                .collect();
            if v.filter.is_none() {
                found.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
            }
            found.truncate(window);
            found
        }
    };
    Ok(Some(
        nearest
            .into_iter()
            .map(|(id, d)| (id, vector_score(metric, f64::from(d))))
            .collect(),
    ))
}

/// The documents either ranking holds, text ranking first, with their fused scores.
fn fuse(fusion: Fusion, text: &Ranking, vector: &Ranking) -> Vec<Fused> {
    let mut out: Vec<Fused> = Vec::with_capacity(text.len() + vector.len());
    let mut at: HashMap<u64, usize> = HashMap::new();
    for (rank, &(id, score)) in text.iter().enumerate() {
        at.insert(id, out.len());
        out.push(Fused {
            id,
            text: Some(score),
            vector: None,
            score: part(fusion, rank, score, 0),
        });
    }
    for (rank, &(id, score)) in vector.iter().enumerate() {
        let add = part(fusion, rank, score, 1);
        match at.get(&id) {
            Some(&i) => {
                out[i].vector = Some(score);
                out[i].score += add;
            }
            None => out.push(Fused {
                id,
                text: None,
                vector: Some(score),
                score: add,
            }),
        }
    }
    out
}

/// What one ranking adds to a document's fused score: its RRF term for the rank
/// (0-based here, 1-based in the formula), or its weighted score.
fn part(fusion: Fusion, rank: usize, score: f64, source: usize) -> f64 {
    match fusion {
        Fusion::Rrf { constant, .. } => 1.0 / (constant + (rank + 1) as f64),
        Fusion::Linear { alpha, beta, .. } => [alpha, beta][source] * score,
    }
}

/// The fused rows as the pipeline reads them, and the steps that shape them.
fn shape(req: HybridRequest, fused: Vec<Fused>) -> (Matched, Vec<Step>) {
    // Every score is a hidden column; the yielded ones are replied after what the
    // `LOAD`s name, as if loaded last.
    let mut columns = Vec::new();
    let mut yielded = Vec::new();
    let mut column = |name: Vec<u8>, values: IdMap<f64>, shown: bool| {
        if shown {
            yielded.push((name.clone(), name.clone()));
        }
        columns.push(Column {
            name,
            values,
            absent: None,
            hidden: true,
        });
    };
    if let Some(alias) = req.text_alias {
        let values = fused
            .iter()
            .filter_map(|f| f.text.map(|s| (f.id, s)))
            .collect();
        column(alias, values, true);
    }
    let vector_values: IdMap<f64> = fused
        .iter()
        .filter_map(|f| f.vector.map(|s| (f.id, s)))
        .collect();
    match req.vector.score_alias {
        Some(alias) => column(alias, vector_values, true),
        None => {
            let name = [b"__".as_slice(), &req.vector.field, b"_score"].concat();
            column(name, vector_values, false);
        }
    }
    let scores: IdMap<f64> = fused.iter().map(|f| (f.id, f.score)).collect();
    if let Some(alias) = req.fused_alias {
        column(alias, scores.clone(), true);
    }
    column(b"__score".to_vec(), scores, false);
    let matched = Matched {
        ids: fused.iter().map(|f| (f.id, None)).collect(),
        distance_name: None,
        columns,
        terms: None,
    };

    let mut steps = req.steps;
    let mut position = req.arrange.position;
    let is_load = |s: &Step| matches!(s, Step::Load(_) | Step::LoadAll);
    if !steps.iter().any(is_load) {
        let implicit = [b"__key".as_slice(), b"__score"]
            .map(|n| (n.to_vec(), n.to_vec()))
            .to_vec();
        steps.insert(0, Step::Load(implicit));
        position = position.map(|p| p + 1);
    }
    if !yielded.is_empty() {
        let first_group = steps
            .iter()
            .position(|s| matches!(s, Step::Group { .. }))
            .unwrap_or(steps.len());
        let after = steps[..first_group]
            .iter()
            .rposition(is_load)
            .map_or(0, |i| i + 1);
        steps.insert(after, Step::Load(yielded));
        position = position.map(|p| if p >= after { p + 1 } else { p });
    }
    let position = position.unwrap_or(steps.len());
    let after_group = steps[..position]
        .iter()
        .any(|s| matches!(s, Step::Group { .. }));
    let by_score = req.arrange.sort.is_none() && !req.arrange.no_sort && !after_group;
    let sort = match req.arrange.sort {
        Some(keys) => Some(keys),
        None if by_score => Some(vec![(b"__score".to_vec(), false)]),
        None => None,
    };
    let limit = req.arrange.limit.unwrap_or((0, request::DEFAULT_LIMIT));
    steps.insert(
        position,
        Step::Arrange {
            sort,
            max: None,
            limit: Some(limit),
            ties_in_id_order: by_score,
        },
    );
    (matched, steps)
}
