//! `VSIM key (ELE element | FP32 blob | VALUES n v…) [WITHSCORES] [WITHATTRIBS]
//! [COUNT n] [EPSILON d] [EF n] [FILTER expr] [FILTER-EF n] [TRUTH] [NOTHREAD]`.
//!
//! Scores are Redis's similarity, `1 - distance/2` with `distance = 1 - cos` computed
//! on the stored (quantised) vectors, so `(1 + cos)/2`. `TRUTH` ranks every element
//! exactly; otherwise the set's index proposes the candidates. With `FILTER` the walk
//! tests each element it reaches against the filter, at most `FILTER-EF` of them
//! (default `COUNT` × 100, as in Redis), and answers with those that passed by then,
//! fewer than `COUNT` when matches are rare.
//!
//! Where Redis runs a `VSIM` on a thread of its own, an unfiltered search here walks
//! the graph with the key's shard unlocked (a detour, see [`Ctx::detour`]) and scores
//! what it found under the lock again, so server threads searching one set run side
//! by side instead of queueing on its shard. `NOTHREAD` keeps the whole search under
//! the lock, as it keeps Redis's on the main thread; so do `TRUTH` and `FILTER`
//! (whose test reads each candidate's attributes from the set).

use super::add::{dim_mismatch, parse_vector};
use super::filter::Filter;
use super::{arity, read_vset};
use crate::command::ctx::{Ctx, Resume};
use crate::command::handlers::util::is_kw;
use crate::engine::Engine;
use crate::error::{OpError, OpResult};
use crate::reply::Reply;
use crate::util::num::{parse_f64, parse_i64};
use crate::value::vset::{Element, Hit, VectorSetValue};

struct SimArgs {
    /// The unit query vector.
    unit: Vec<f32>,
    with_scores: bool,
    with_attribs: bool,
    count: usize,
    epsilon: Option<f64>,
    ef: Option<usize>,
    filter: Option<Filter>,
    /// `FILTER-EF`: the most elements the walk tests against the filter.
    filter_effort: Option<usize>,
    truth: bool,
    /// `NOTHREAD`: search with the key locked throughout.
    no_thread: bool,
}

fn positive(arg: Option<&Vec<u8>>, err: &'static str) -> OpResult<usize> {
    let syntax = || OpError::custom("ERR syntax error in VSIM command");
    let n = parse_i64(arg.ok_or_else(syntax)?)
        .filter(|&n| n > 0)
        .ok_or_else(|| OpError::custom(err))?;
    Ok(usize::try_from(n).unwrap_or(usize::MAX))
}

/// Parses the options after the query (at `i`); the query is checked first.
fn parse(argv: &[Vec<u8>], mut i: usize, unit: Vec<f32>) -> OpResult<SimArgs> {
    let mut args = SimArgs {
        unit,
        with_scores: false,
        with_attribs: false,
        count: 10,
        epsilon: None,
        ef: None,
        filter: None,
        filter_effort: None,
        truth: false,
        no_thread: false,
    };
    while i < argv.len() {
        let opt = &argv[i];
        let value = argv.get(i + 1);
        let mut step = 2;
        if is_kw(opt, "WITHSCORES") {
            args.with_scores = true;
            step = 1;
        } else if is_kw(opt, "WITHATTRIBS") {
            args.with_attribs = true;
            step = 1;
        } else if is_kw(opt, "TRUTH") {
            args.truth = true;
            step = 1;
        } else if is_kw(opt, "NOTHREAD") {
            args.no_thread = true;
            step = 1;
        } else if is_kw(opt, "COUNT") {
            args.count = positive(value, "ERR invalid COUNT")?;
        } else if is_kw(opt, "EF") {
            args.ef = Some(positive(value, "ERR invalid EF")?);
        } else if is_kw(opt, "FILTER-EF") {
            args.filter_effort = Some(positive(value, "ERR invalid FILTER-EF")?);
        } else if is_kw(opt, "EPSILON") {
            let v = value.ok_or_else(|| OpError::custom("ERR syntax error in VSIM command"))?;
            let eps = parse_f64(v)
                .filter(|&e| e > 0.0)
                .ok_or_else(|| OpError::custom("ERR invalid EPSILON"))?;
            args.epsilon = Some(eps);
        } else if is_kw(opt, "FILTER") {
            let v = value.ok_or_else(|| OpError::custom("ERR syntax error in VSIM command"))?;
            args.filter = Some(Filter::parse(v).map_err(OpError::custom)?);
        } else {
            return Err(OpError::custom("ERR syntax error in VSIM command"));
        }
        i += step;
    }
    Ok(args)
}

/// `VSIM`: the most similar elements, most similar first.
pub(crate) fn vsim(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    if argv.len() < 4 {
        return Err(arity(argv));
    }
    let resp3 = ctx.client.resp >= 3;
    let Some(set) = read_vset(ctx, &argv[1])? else {
        return Ok(Reply::Array(Vec::new()));
    };
    // The query is resolved (and its dimension checked) before the options are read.
    let (unit, next) = if is_kw(&argv[2], "ELE") {
        let unit = set
            .label(&argv[3])
            .and_then(|l| set.element_query(l))
            .ok_or_else(|| OpError::custom("ERR element not found in set"))?;
        (unit, 4)
    } else {
        let (v, next) = parse_vector(argv, 2)
            .ok_or_else(|| OpError::custom("ERR invalid vector specification"))?;
        let unit = {
            let len = v.len();
            match set.projection() {
                _ if len == set.dim() => set.prepare(&v).0,
                Some(p) if len == p.input => set.prepare(&v).0,
                Some(p) => {
                    return Err(OpError::custom(format!(
                        "ERR Input dimension mismatch for projection - got {len} but projection expects {}",
                        p.input
                    )))
                }
                None => return Err(dim_mismatch(len, set.dim())),
            }
        };
        (unit, next)
    };
    let args = parse(argv, next, unit)?;
    if args.filter.is_none() && !args.truth && !args.no_thread {
        let walk = set.shared_walk();
        ctx.detour = Some(Box::new(move |_: &Engine| -> Resume {
            let labels = walk.candidates(&args.unit, args.count, args.ef);
            Box::new(move |ctx: &mut Ctx<'_>, argv: &[Vec<u8>]| {
                // Looked up again without a second access or keyspace hit: the command
                // read the key once, before the walk.
                let db = ctx.db();
                let Some(entry) = ctx.ks.peek(db, &argv[1])? else {
                    return Ok(Reply::Array(Vec::new()));
                };
                let set = entry.value.as_vset()?;
                // Labels name elements only in the set they came from: a set put at
                // the key meanwhile (a new `vset-uid`) is searched afresh.
                let hits = if set.uid() == walk.uid() {
                    set.rank(&args.unit, labels, args.count)
                } else {
                    search_locked(set, &args)
                };
                Ok(reply(set, hits, &args, resp3))
            })
        }));
        return Ok(Reply::ok());
    }
    let hits = search_locked(set, &args);
    Ok(reply(set, hits, &args, resp3))
}

/// The search, start to end, with the key locked.
fn search_locked(set: &VectorSetValue, args: &SimArgs) -> Vec<Hit> {
    let accept = args
        .filter
        .as_ref()
        .map(|f| move |e: &Element| f.matches(e.attr.as_deref()));
    let accept = accept
        .as_ref()
        .map(|f| f as &(dyn Fn(&Element) -> bool + Sync));
    // Redis's default effort: a hundred elements tested for each one asked for.
    let effort = args
        .filter_effort
        .unwrap_or_else(|| args.count.saturating_mul(DEFAULT_FILTER_EFFORT_PER_RESULT));
    set.search(
        &args.unit,
        args.count,
        args.ef,
        args.truth,
        accept,
        Some(effort),
    )
}

/// Elements a filtered walk tests for each one `COUNT` asks for, unless `FILTER-EF`
/// says otherwise (Redis's default).
const DEFAULT_FILTER_EFFORT_PER_RESULT: usize = 100;

/// The reply for the hits, as the options ask (`EPSILON` drops the far ones).
fn reply(set: &VectorSetValue, mut hits: Vec<Hit>, args: &SimArgs, resp3: bool) -> Reply {
    if let Some(eps) = args.epsilon {
        hits.retain(|h| f64::from(h.distance) / 2.0 <= eps);
    }
    let rows = hits.iter().filter_map(|h| {
        let e = set.element(h.label)?;
        let attr = || Reply::bulk_or_null(e.attr.as_ref());
        Some((Reply::bulk(&e.name), Reply::ShortDouble(h.score()), attr))
    });
    match (args.with_scores, args.with_attribs) {
        (false, false) => Reply::Array(rows.map(|(n, _, _)| n).collect()),
        (true, false) => Reply::Map(rows.map(|(n, s, _)| (n, s)).collect()),
        (false, true) => Reply::Map(rows.map(|(n, _, a)| (n, a())).collect()),
        (true, true) if resp3 => Reply::Map(
            rows.map(|(n, s, a)| (n, Reply::Array(vec![s, a()])))
                .collect(),
        ),
        (true, true) => Reply::Array(rows.flat_map(|(n, s, a)| [n, s, a()]).collect()),
    }
}
