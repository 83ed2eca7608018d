//! `FT.SEARCH`: parse the query, evaluate its filter over the index's documents, run
//! the KNN clause (graph search, or exact search over a small filtered set), order,
//! page, then load the page's hashes from the keyspace and shape the reply as
//! RediSearch does (RESP2 flat array, RESP3 map).
//!
//! Vector distances are re-ranked exactly: the index proposes candidates from its
//! INT8 codes, their FLOAT32 blobs are read back from the hashes, and the reported
//! distance is the exact one, formatted as RediSearch does (`%.12g`).

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

pub(super) use super::analysis::Analysis;
use crate::command::ctx::Ctx;
use crate::config::search::{OnTimeout, SearchSettings};
use crate::error::{OpError, OpResult};
use crate::index::eval::{evaluate_with, explain_score, EvalOptions, Explanation, Matches, Scorer};
use crate::index::query::{self as q, Params, Query};
use crate::index::schema::{FieldKind as SchemaKind, IndexDef};
use crate::index::Docs;
use crate::reply::Reply;
use crate::vector::Neighbor;

use super::highlight::{matched_terms, Marking};
use super::knn::{knn_candidates, knn_rerank};
use super::profile::Trace;

mod reply;

use reply::load_and_reply;

/// The options of one `FT.SEARCH` (`FT.EXPLAIN` takes the same).
pub(super) struct Options {
    pub(super) nocontent: bool,
    pub(super) withscores: bool,
    /// `EXPLAINSCORE`: each score with how it was computed.
    explain_score: bool,
    pub(super) returns: Option<Vec<(Vec<u8>, Vec<u8>)>>,
    pub(super) sortby: Option<(Vec<u8>, bool)>,
    pub(super) offset: usize,
    pub(super) limit: usize,
    pub(super) params: Params,
    pub(super) dialect: u32,
    /// `SCORER` and `INORDER`.
    pub(super) eval: EvalOptions,
    /// `FILTER`, `GEOFILTER` and `INKEYS`.
    filters: super::filters::ResultFilters,
    /// `WITHPAYLOADS`: each result's payload (always nil: documents carry none).
    withpayloads: bool,
    /// `VERBATIM`, `LANGUAGE`, `NOSTOPWORDS`.
    pub(super) analysis: Analysis,
    /// `HIGHLIGHT` and `SUMMARIZE`.
    pub(super) marking: Option<Marking>,
    /// `TIMEOUT` in milliseconds (0: none).
    timeout_ms: u64,
}

impl Options {
    /// Whether anything reads the results' scores: their order, or `WITHSCORES`.
    fn reads_scores(&self) -> bool {
        self.sortby.is_none() || self.withscores || self.explain_score
    }
}

fn err(text: impl Into<String>) -> OpError {
    OpError::custom(text.into())
}

fn parse_usize(b: &[u8]) -> Option<usize> {
    std::str::from_utf8(b).ok()?.parse().ok()
}

/// Parses the options after the query; `settings` give the dialect and the timeout
/// of a query that names none.
pub(super) fn parse_options(argv: &[Vec<u8>], settings: &SearchSettings) -> OpResult<Options> {
    let mut o = Options {
        nocontent: false,
        withscores: false,
        explain_score: false,
        returns: None,
        sortby: None,
        offset: 0,
        limit: 10,
        params: Params::new(),
        dialect: u32::from(settings.default_dialect),
        eval: EvalOptions::default(),
        filters: Default::default(),
        withpayloads: false,
        analysis: Analysis::default(),
        marking: None,
        timeout_ms: settings.timeout_ms,
    };
    let mut i = 3;
    while i < argv.len() {
        let word = argv[i].to_ascii_uppercase();
        i += 1;
        match word.as_slice() {
            b"NOCONTENT" => o.nocontent = true,
            b"WITHSCORES" => o.withscores = true,
            b"VERBATIM" => o.analysis.verbatim = true,
            b"NOSTOPWORDS" => o.analysis.keep_stopwords = true,
            b"WITHPAYLOADS" => o.withpayloads = true,
            b"LANGUAGE" => o.analysis.parse_language(argv, &mut i)?,
            b"EXPANDER" => o.analysis.parse_expander(argv, &mut i)?,
            b"HIGHLIGHT" => o
                .marking
                .get_or_insert_with(Marking::default)
                .parse_highlight(argv, &mut i)?,
            b"SUMMARIZE" => o
                .marking
                .get_or_insert_with(Marking::default)
                .parse_summarize(argv, &mut i)?,
            b"EXPLAINSCORE" => o.explain_score = true,
            // Named refusals: each would change the reply, and Pion does not do it yet.
            b"WITHSORTKEYS" | b"PAYLOAD" => {
                return Err(err(format!(
                    "FT.SEARCH option {} is not supported by Pion",
                    String::from_utf8_lossy(&argv[i - 1])
                )))
            }
            b"FILTER" => o.filters.parse_numeric(argv, &mut i)?,
            b"GEOFILTER" => o.filters.parse_geo(argv, &mut i)?,
            b"INKEYS" => o.filters.parse_keys(argv, &mut i)?,
            b"INFIELDS" => o.filters.parse_fields(argv, &mut i)?,
            b"INORDER" => o.eval.in_order = true,
            b"SLOP" => {
                let raw = argv.get(i).ok_or_else(|| {
                    err("Bad arguments for SLOP: Expected an argument, but none provided")
                })?;
                let slop: i64 = std::str::from_utf8(raw)
                    .ok()
                    .and_then(|s| s.parse().ok())
                    .ok_or_else(|| {
                        err("Bad arguments for SLOP: Could not convert argument to expected type")
                    })?;
                // A negative slop is RediSearch's default: no limit.
                o.eval.slop = usize::try_from(slop).ok();
                i += 1;
            }
            b"SCORER" => {
                let name = argv.get(i).ok_or_else(|| {
                    err("Bad arguments for SCORER: Expected an argument, but none provided")
                })?;
                i += 1;
                o.eval.scorer =
                    match Scorer::parse(name) {
                        Some(s) => s,
                        None if name.as_slice() == b"HAMMING" => return Err(err(
                            "SCORER HAMMING compares document payloads, which Pion does not keep",
                        )),
                        None => {
                            return Err(err(format!(
                                "No such scorer {}",
                                String::from_utf8_lossy(name)
                            )))
                        }
                    };
            }
            b"RETURN" => {
                let n = argv.get(i).and_then(|a| parse_usize(a)).ok_or_else(|| {
                    err("Bad arguments for RETURN: Could not convert argument to expected type")
                })?;
                i += 1;
                let end = i + n;
                if end > argv.len() {
                    return Err(err("Bad arguments for RETURN: Not enough arguments were provided based on argument count for RETURN"));
                }
                let mut fields: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
                while i < end {
                    let name = argv[i].clone();
                    i += 1;
                    let mut alias = name.clone();
                    if i + 1 < end + 1 && i < end && argv[i].eq_ignore_ascii_case(b"AS") {
                        alias = argv.get(i + 1).cloned().unwrap_or_default();
                        i += 2;
                    }
                    if !fields.iter().any(|(_, a)| *a == alias) {
                        fields.push((name, alias));
                    }
                }
                if n == 0 {
                    o.nocontent = true;
                }
                o.returns = Some(fields);
            }
            b"SORTBY" => {
                let field = argv
                    .get(i)
                    .ok_or_else(|| {
                        err("Bad arguments for SORTBY: Expected an argument, but none provided")
                    })?
                    .clone();
                i += 1;
                let mut asc = true;
                if let Some(dir) = argv.get(i) {
                    if dir.eq_ignore_ascii_case(b"ASC") {
                        i += 1;
                    } else if dir.eq_ignore_ascii_case(b"DESC") {
                        asc = false;
                        i += 1;
                    }
                }
                let field = field
                    .strip_prefix(b"@")
                    .map(<[u8]>::to_vec)
                    .unwrap_or(field);
                o.sortby = Some((field, asc));
            }
            b"LIMIT" => {
                let (Some(off), Some(num)) = (argv.get(i), argv.get(i + 1)) else {
                    return Err(err("LIMIT requires two arguments"));
                };
                o.offset =
                    parse_usize(off).ok_or_else(|| err("LIMIT needs two numeric arguments"))?;
                o.limit =
                    parse_usize(num).ok_or_else(|| err("LIMIT needs two numeric arguments"))?;
                i += 2;
            }
            b"PARAMS" => {
                let n = argv
                    .get(i)
                    .and_then(|a| parse_usize(a))
                    .filter(|n| *n > 0 && n.is_multiple_of(2))
                    .ok_or_else(|| err("Parameters must be specified in PARAM VALUE pairs"))?;
                i += 1;
                if i + n > argv.len() {
                    return Err(err("Bad arguments for PARAMS: Not enough arguments were provided based on argument count for PARAMS"));
                }
                for pair in argv[i..i + n].chunks_exact(2) {
                    o.params.insert(pair[0].clone(), pair[1].clone());
                }
                i += n;
            }
            b"DIALECT" => {
                o.dialect = argv
                    .get(i)
                    .and_then(|a| parse_usize(a))
                    .filter(|d| (1..=4).contains(d))
                    .ok_or_else(|| err("DIALECT requires a non negative integer >=1 and <= 4"))?
                    as u32;
                i += 1;
            }
            b"TIMEOUT" => {
                o.timeout_ms = parse_usize(argv.get(i).map(Vec::as_slice).unwrap_or_default())
                    .ok_or_else(|| err("Bad arguments for TIMEOUT: Could not convert argument to expected type"))?
                    as u64;
                i += 1;
            }
            _ => {
                return Err(err(format!(
                    "Unknown argument `{}` at position {} for <main>",
                    String::from_utf8_lossy(&argv[i - 1]),
                    i - 3
                )))
            }
        }
    }
    if o.explain_score && !o.withscores {
        return Err(err("EXPLAINSCORE must be accompanied with WITHSCORES"));
    }
    Ok(o)
}

/// One result before loading: document, key, the vector distance, text score.
struct Hit {
    id: u64,
    key: Vec<u8>,
    distance: Option<f32>,
    score: f64,
    /// `EXPLAINSCORE`: how the score was computed (filled for the page only).
    explanation: Option<Explanation>,
}

/// `FT.SEARCH index query [options]`.
pub(super) fn search(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    search_traced(ctx, argv, None)
}

/// `FT.SEARCH`, noting for `FT.PROFILE` what it did and how long each part took.
pub(super) fn search_traced(
    ctx: &mut Ctx<'_>,
    argv: &[Vec<u8>],
    mut trace: Option<&mut Trace>,
) -> OpResult<Reply> {
    let mut clock = Instant::now();
    let engine = ctx.engine();
    let Some(index) = engine.search().get(&argv[1]) else {
        return Err(super::no_such_index(&argv[1]));
    };
    let settings = ctx.config().with(|c| c.search.clone());
    let mut opts = parse_options(argv, &settings)?;
    opts.eval.max_expansions = usize::try_from(settings.max_expansions).unwrap_or(usize::MAX);
    // MAXSEARCHRESULTS bounds the page asked for, and the results a page reaches.
    let max = settings
        .max_search_results
        .map_or(usize::MAX, |n| n as usize);
    if opts.limit > max {
        return Err(err(format!("LIMIT exceeds maximum of {max}")));
    }
    if opts.offset > max {
        return Err(err(format!("OFFSET exceeds maximum of {max}")));
    }
    index.uses.fetch_add(1, Ordering::Relaxed);
    index.dialects[(opts.dialect as usize - 1).min(3)].fetch_add(1, Ordering::Relaxed);
    let def = index.def.read().clone();
    if let Some(marking) = opts.marking.as_ref().filter(|_| !opts.nocontent) {
        let returned: Option<Vec<Vec<u8>>> = opts
            .returns
            .as_ref()
            .map(|list| list.iter().map(|(name, _)| name.clone()).collect());
        marking.check(&def, returned.as_deref())?;
    }
    let mut query = opts
        .analysis
        .parse(&def, &argv[2], &opts.params, opts.dialect)?;
    query.filter = opts.filters.wrap(&def, query.filter);
    let parse = lap(&mut clock);
    let deadline = deadline_of(opts.timeout_ms);
    // Matches and KNN candidates under the document lock; the exact re-rank reads
    // hashes, so it runs after the lock is released (shards before documents).
    let (matches, plan) = {
        let docs = index.docs.read();
        // Every document the query matches is scored, to rank them; a KNN clause's
        // results are scored apart (`knn_score`), so its filter scores only text.
        // Sorted by a field, without WITHSCORES, nothing reads a score.
        let eval = EvalOptions {
            rank_all: query.vector.is_none(),
            deadline,
            score: opts.reads_scores(),
            ..opts.eval
        };
        let mut matches = match evaluate_with(&query.filter, &def, &docs, eval) {
            Ok(m) => m,
            // Past TIMEOUT before anything was found: no results, and a warning (or,
            // with ON_TIMEOUT FAIL, the error).
            Err(e) if e.timed_out() => {
                drop(docs);
                let warning = timed_out(&settings)?;
                if let Some(t) = trace.as_deref_mut() {
                    t.timed_out = true;
                }
                return load_and_reply(ctx, &def, &opts, 0, Vec::new(), None, None, Some(warning));
            }
            Err(e) => return Err(err(e.0)),
        };
        opts.filters.apply(&docs, &mut matches);
        let plan = match &query.vector {
            Some(knn) => Some(knn_candidates(&def, &docs, &query, knn, &matches)?),
            None => None,
        };
        (matches, plan)
    };
    let nearest = plan.map(|p| knn_rerank(engine, p, ctx.now_ms()));
    let index_time = lap(&mut clock);
    let end = opts.offset.saturating_add(opts.limit).min(max);
    let (total, mut hits, score_name) = {
        let docs = index.docs.read();
        run(&def, &docs, &query, matches, nearest, &opts, end)?
    };
    let rank_time = lap(&mut clock);
    let mut page: Vec<Hit> = hits.drain(..).skip(opts.offset).collect();
    if opts.explain_score {
        let knn = query.vector.is_some();
        let docs = index.docs.read();
        for h in &mut page {
            h.explanation =
                explain_score(&query.filter, &def, &docs, opts.eval, h.id, knn).map(|(_, e)| e);
        }
    }
    // HIGHLIGHT and SUMMARIZE mark the terms each document matched.
    let marks = match &opts.marking {
        Some(_) if !opts.nocontent => {
            let docs = index.docs.read();
            Some(
                page.iter()
                    .map(|h| {
                        matched_terms(&query.filter, &def, &docs, h.id, opts.eval.max_expansions)
                    })
                    .collect(),
            )
        }
        _ => None,
    };
    // Past TIMEOUT once ranked: the page found so far, and a warning (or the error).
    let late = match deadline {
        Some(d) if Instant::now() >= d => Some(timed_out(&settings)?),
        _ => None,
    };
    let page_len = page.len();
    let timed_out_late = late.is_some();
    let reply = load_and_reply(
        ctx,
        &def,
        &opts,
        total,
        page,
        score_name.as_deref(),
        marks,
        late,
    )?;
    if let Some(t) = trace {
        let times = super::profile::SearchTimes {
            parse,
            index: index_time,
            rank: rank_time,
            load: lap(&mut clock),
        };
        t.record_search(&opts, &def, query, total, page_len, times);
        t.timed_out |= timed_out_late;
    }
    Ok(reply)
}

/// The time since `clock`, which moves on to now.
fn lap(clock: &mut Instant) -> Duration {
    let now = Instant::now();
    let d = now - *clock;
    *clock = now;
    d
}

/// What a query past its deadline replies: the warning its results carry, or under
/// `ON_TIMEOUT FAIL` the error instead.
pub(super) fn timed_out(settings: &SearchSettings) -> OpResult<String> {
    match settings.on_timeout {
        OnTimeout::Return => Ok(crate::index::eval::TIMED_OUT.to_string()),
        OnTimeout::Fail => Err(err(crate::index::eval::TIMED_OUT)),
    }
}

/// When a query given `TIMEOUT ms` gives up (0: never).
pub(super) fn deadline_of(timeout_ms: u64) -> Option<Instant> {
    (timeout_ms > 0).then(|| Instant::now() + Duration::from_millis(timeout_ms))
}

type Ranked = (usize, Vec<Hit>, Option<Vec<u8>>);

/// A score, or with `EXPLAINSCORE` the score and its explanation: a line alone, or a
/// line and the lines it sums, as RediSearch replies them.
fn with_explanation(score: Reply, explanation: Option<Explanation>) -> Reply {
    fn tree(e: Explanation) -> Reply {
        let line = Reply::status_owned(e.text);
        if e.children.is_empty() {
            return line;
        }
        Reply::Array(vec![
            line,
            Reply::Array(e.children.into_iter().map(tree).collect()),
        ])
    }
    match explanation {
        Some(e) => Reply::Array(vec![score, tree(e)]),
        None => score,
    }
}

/// A KNN result's score: its filter's, beside the distance's record of frequency 0. A
/// text filter's documents were scored when it was evaluated; a filter without text
/// terms scores the result alone.
fn knn_score(
    def: &IndexDef,
    docs: &Docs,
    query: &Query,
    matches: &Matches,
    opts: &Options,
    id: u64,
) -> f64 {
    match &query.filter {
        q::Node::MatchAll => 0.0,
        _ if matches.scored => matches.scores.get(id).unwrap_or(0.0),
        filter => explain_score(filter, def, docs, opts.eval, id, true).map_or(0.0, |(s, _)| s),
    }
}

/// Ranks the matches and keeps the first `end` of them in order, with their keys;
/// also says how many matched. Only those are sorted: the rest are set apart by a
/// selection, as a page of ten out of every document needs.
fn run(
    def: &IndexDef,
    docs: &Docs,
    query: &Query,
    matches: Matches,
    nearest: Option<Vec<Neighbor>>,
    opts: &Options,
    end: usize,
) -> OpResult<Ranked> {
    let mut cands: Vec<Candidate>;
    let mut score_name = None;
    // By score, best first (NaN, a document without text under TFIDF's 0/0, last),
    // then in document order.
    let ranked;
    if let (Some(knn), Some(nearest)) = (&query.vector, nearest) {
        // RediSearch ranks KNN results by their filter's score (a wildcard's is 0), then
        // in document order, unless sorted.
        cands = nearest
            .into_iter()
            .filter(|n| docs.key(n.label).is_some())
            .map(|n| Candidate {
                id: n.label,
                distance: Some(n.distance),
                score: if opts.reads_scores() {
                    knn_score(def, docs, query, &matches, opts, n.label)
                } else {
                    0.0
                },
            })
            .collect();
        ranked = true;
        score_name = Some(knn.score_field());
    } else {
        let range_dist = matches.distances.first();
        let score = |id: u64| matches.scores.get(id).unwrap_or(0.0);
        cands = match range_dist {
            Some((_, d)) => matches
                .set
                .iter()
                .map(|id| Candidate {
                    id,
                    distance: d.get(&id).copied(),
                    score: score(id),
                })
                .collect(),
            None if matches.scored => matches
                .set
                .iter()
                .map(|id| Candidate {
                    id,
                    distance: None,
                    score: score(id),
                })
                .collect(),
            // Unranked: scores are not read.
            None => matches
                .set
                .iter()
                .map(|id| Candidate {
                    id,
                    distance: None,
                    score: 0.0,
                })
                .collect(),
        };
        if let Some((name, _)) = range_dist {
            score_name = Some(name.clone());
        }
        ranked = matches.scored;
    }
    let total = cands.len();
    match &opts.sortby {
        Some((field, asc)) => {
            cands = sorted_by_field(cands, def, docs, field, *asc, score_name.as_deref(), end)?;
        }
        None if ranked => {
            let key = |c: &Candidate| {
                if c.score.is_nan() {
                    f64::NEG_INFINITY
                } else {
                    c.score
                }
            };
            first_in_order(&mut cands, end, |a, b| {
                key(b).total_cmp(&key(a)).then(a.id.cmp(&b.id))
            });
        }
        // Document order, as the set gives them.
        None => cands.truncate(end),
    }
    let hits = cands
        .into_iter()
        .map(|c| Hit {
            id: c.id,
            key: docs.key(c.id).map(<[u8]>::to_vec).unwrap_or_default(),
            distance: c.distance,
            score: c.score,
            explanation: None,
        })
        .collect();
    Ok((total, hits, score_name))
}

/// A matched document while the results are ranked: what the order reads.
#[derive(Clone, Copy)]
struct Candidate {
    id: u64,
    score: f64,
    distance: Option<f32>,
}

/// Pages up to this size are kept in order while the matches stream past (most are
/// turned away by one comparison); larger ones are set apart by a selection.
const SMALL_PAGE: usize = 64;

/// Keeps the first `k` of `items` in `order` (a total order), sorted: a selection
/// sets the rest apart, so only `k` are sorted.
fn first_in_order<T>(items: &mut Vec<T>, k: usize, order: impl Fn(&T, &T) -> std::cmp::Ordering) {
    use std::cmp::Ordering::{Greater, Less};
    if k == 0 {
        items.clear();
        return;
    }
    if k <= SMALL_PAGE && k < items.len() {
        let mut top: Vec<T> = Vec::with_capacity(k + 1);
        for item in items.drain(..) {
            if top.len() == k && order(&item, &top[k - 1]) != Less {
                continue;
            }
            let at = top.partition_point(|t| order(t, &item) != Greater);
            top.insert(at, item);
            top.truncate(k);
        }
        *items = top;
        return;
    }
    if k < items.len() {
        items.select_nth_unstable_by(k - 1, &order);
        items.truncate(k);
    }
    items.sort_unstable_by(order);
}

/// A result's `SORTBY` value, read once per result before ordering.
enum SortKey {
    Number(f64),
    Text(Vec<u8>),
    /// The document has no value for the field: last either way.
    Missing,
}

/// The first `end` hits in `SORTBY` order (ties in document order).
fn sorted_by_field(
    hits: Vec<Candidate>,
    def: &IndexDef,
    docs: &Docs,
    field: &[u8],
    asc: bool,
    score_name: Option<&[u8]>,
    end: usize,
) -> OpResult<Vec<Candidate>> {
    let key_of: Box<dyn Fn(&Candidate) -> SortKey> = if score_name == Some(field) {
        // The distance a KNN or range clause yielded; a document without one is
        // infinitely far (first when descending).
        Box::new(|h: &Candidate| SortKey::Number(f64::from(h.distance.unwrap_or(f32::INFINITY))))
    } else {
        let Some((fi, spec)) = def.field(field) else {
            return Err(err(format!(
                "Property `{}` not loaded nor in schema",
                String::from_utf8_lossy(field)
            )));
        };
        let numeric = matches!(spec.kind, SchemaKind::Numeric);
        Box::new(move |h: &Candidate| {
            if numeric {
                return docs
                    .number(h.id, fi)
                    .map_or(SortKey::Missing, SortKey::Number);
            }
            match docs.value(h.id, fi) {
                None => SortKey::Missing,
                Some(v) => SortKey::Text(v.to_ascii_lowercase()),
            }
        })
    };
    let mut keyed: Vec<(SortKey, Candidate)> = hits.into_iter().map(|h| (key_of(&h), h)).collect();
    let direction = |o: std::cmp::Ordering| if asc { o } else { o.reverse() };
    first_in_order(&mut keyed, end, |(ka, a), (kb, b)| {
        use std::cmp::Ordering::{Equal, Greater, Less};
        let o = match (ka, kb) {
            (SortKey::Missing, SortKey::Missing) => Equal,
            (SortKey::Missing, _) => Greater,
            (_, SortKey::Missing) => Less,
            (SortKey::Number(x), SortKey::Number(y)) => direction(x.total_cmp(y)),
            (SortKey::Text(x), SortKey::Text(y)) => direction(x.cmp(y)),
            // One field's values are all numbers or all text.
            _ => Equal,
        };
        o.then(a.id.cmp(&b.id))
    });
    Ok(keyed.into_iter().map(|(_, h)| h).collect())
}
