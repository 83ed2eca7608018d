//! `FT.PROFILE index SEARCH|AGGREGATE [LIMITED] QUERY query [options]`: runs the
//! query as `FT.SEARCH` or `FT.AGGREGATE` would and replies its results with a
//! profile in RediSearch 2.10's shape: total, parsing and pipeline-creation times, a
//! warning, the iterator tree with each iterator's counter and time
//! ([`crate::index::eval::profile_iterators`]), and the result processors with
//! theirs. RESP2 replies `[results, profile]`; RESP3 adds `profile` to the results'
//! map.
//!
//! Times are milliseconds, measured on Pion's own work: parsing, evaluating the
//! filter (the pipeline's creation and the `Index` step), ranking, loading.

use std::time::{Duration, Instant};

use super::aggregate::profile::ProcessorLine;
use super::query::Options;
use crate::command::ctx::Ctx;
use crate::error::{OpError, OpResult};
use crate::index::eval::{profile_iterators, EvalOptions, IteratorProfile, ProfileChildren};
use crate::index::query::{Node, Query};
use crate::index::schema::IndexDef;
use crate::reply::Reply;

/// RediSearch's warning when an expansion stood for as many terms as it may.
const MAX_EXPANSIONS_WARNING: &str = "Max prefix expansions limit was reached";

/// What `FT.PROFILE` learns from the query it runs.
#[derive(Default)]
pub(super) struct Trace {
    /// Parsing the query.
    pub parse: Duration,
    /// Evaluating its filter (what RediSearch spends building its iterators).
    pub build: Duration,
    /// The filter and how it was evaluated.
    pub query: Option<(Node, EvalOptions)>,
    /// The results of a KNN clause: the tree is then under a `VECTOR` iterator.
    pub knn: Option<usize>,
    /// How many documents the pipeline read (`None`: all it matched).
    pub reads: Option<usize>,
    /// The result processors.
    pub processors: Vec<ProcessorLine>,
    /// Whether the query ran past its `TIMEOUT`.
    pub timed_out: bool,
}

/// How long each part of an `FT.SEARCH` took.
pub(super) struct SearchTimes {
    /// Parsing the query.
    pub parse: Duration,
    /// Evaluating the filter and the KNN clause.
    pub index: Duration,
    /// Ranking and selecting the page.
    pub rank: Duration,
    /// Loading the page and building the reply.
    pub load: Duration,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn line(name: &str, time: Duration, counter: usize) -> ProcessorLine {
    ProcessorLine {
        name: name.into(),
        time_ms: ms(time),
        counter: counter as u64,
    }
}

impl Trace {
    /// Notes what an `FT.SEARCH` did: RediSearch's result processors for its
    /// options, counted as RediSearch's reply reads them (a page that fills stops
    /// the reply without another read).
    pub fn record_search(
        &mut self,
        opts: &Options,
        def: &IndexDef,
        query: Query,
        total: usize,
        page: usize,
        times: SearchTimes,
    ) {
        self.parse = times.parse;
        self.build = times.index;
        let knn = query.vector.is_some();
        if knn {
            self.knn = Some(total);
        }
        self.query = Some((query.filter, opts.eval));
        let mut out = vec![line("Index", times.index, total)];
        if knn {
            out.push(line("Metrics Applier", Duration::ZERO, total));
        }
        if opts.limit == 0 {
            out.push(line("Counter", times.rank, 1));
            self.processors = out;
            return;
        }
        if opts.sortby.is_none() || opts.withscores {
            out.push(line("Scorer", Duration::ZERO, total));
        }
        let end = opts.offset.saturating_add(opts.limit);
        let paged = opts.offset > 0;
        let full = paged && total >= end;
        let sorted = if !paged {
            total.min(opts.limit)
        } else if full {
            end - 1
        } else {
            total
        };
        out.push(line("Sorter", times.rank, sorted));
        let shown = if full { opts.limit - 1 } else { page };
        if paged {
            out.push(line("Pager/Limiter", Duration::ZERO, shown));
        }
        // RETURN of sortable fields alone reads them from the index, not the keys.
        let loads = !opts.nocontent
            && opts.returns.as_ref().is_none_or(|list| {
                list.iter()
                    .any(|(name, _)| def.field(name).is_none_or(|(_, f)| !f.sortable))
            });
        if loads {
            out.push(line("Loader", times.load, shown));
        }
        if opts.marking.is_some() && !opts.nocontent {
            out.push(line("Highlighter", Duration::ZERO, shown));
        }
        self.processors = out;
    }
}

fn err(text: &str) -> OpError {
    OpError::custom(text.to_string())
}

/// `FT.PROFILE`.
pub(super) fn profile(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let start = Instant::now();
    if argv.len() < 5 {
        return Err(err(
            "ERR wrong number of arguments for 'FT.PROFILE' command",
        ));
    }
    let search = if argv[2].eq_ignore_ascii_case(b"SEARCH") {
        true
    } else if argv[2].eq_ignore_ascii_case(b"AGGREGATE") {
        false
    } else {
        return Err(err("No `SEARCH` or `AGGREGATE` provided"));
    };
    let mut at = 3;
    let limited = argv[at].eq_ignore_ascii_case(b"LIMITED");
    if limited {
        at += 1;
    }
    if !argv[at].eq_ignore_ascii_case(b"QUERY") {
        return Err(err("The QUERY keyword is expected"));
    }
    let mut inner = vec![
        if search {
            b"FT.SEARCH".to_vec()
        } else {
            b"FT.AGGREGATE".to_vec()
        },
        argv[1].clone(),
    ];
    inner.extend(argv[at + 1..].iter().cloned());
    if inner[2..]
        .iter()
        .any(|a| a.eq_ignore_ascii_case(b"WITHCURSOR"))
    {
        return Err(err("FT.PROFILE does not support cursor"));
    }
    if inner.len() < 3 {
        return Err(err("No query string provided"));
    }
    let mut trace = Trace::default();
    let results = if search {
        super::query::search_traced(ctx, &inner, Some(&mut trace))?
    } else {
        super::aggregate::aggregate_traced(ctx, &inner, Some(&mut trace))?
    };
    let iterators = iterator_profile(ctx, &argv[1], &trace, limited);
    let resp3 = ctx.client.resp >= 3;
    let profile = ProfileReply {
        total: start.elapsed(),
        trace: &trace,
        iterators,
    };
    Ok(match results {
        Reply::Map(mut entries) if resp3 => {
            entries.push((Reply::status("profile"), profile.resp3()));
            Reply::Map(entries)
        }
        results => Reply::Array(vec![results, profile.resp2()]),
    })
}

/// The iterator tree of the query the trace noted, read as far as the pipeline read.
fn iterator_profile(
    ctx: &Ctx<'_>,
    index: &[u8],
    trace: &Trace,
    limited: bool,
) -> Option<IteratorProfile> {
    let (filter, eval) = trace.query.as_ref()?;
    let index = ctx.engine().search().get(index)?;
    let def = index.def.read().clone();
    let docs = index.docs.read();
    Some(profile_iterators(
        filter,
        &def,
        &docs,
        *eval,
        limited,
        trace.knn,
        trace.reads,
    ))
}

/// Whether any expansion in the tree stood for as many terms as it may.
fn capped(it: &IteratorProfile) -> bool {
    it.expansions_capped
        || match &it.children {
            ProfileChildren::One(c) => capped(c),
            ProfileChildren::Many(cs) => cs.iter().flatten().any(capped),
            _ => false,
        }
}

/// The profile part of the reply.
struct ProfileReply<'a> {
    total: Duration,
    trace: &'a Trace,
    iterators: Option<IteratorProfile>,
}

impl ProfileReply<'_> {
    fn warning(&self) -> Option<&'static str> {
        if self.trace.timed_out {
            Some(crate::index::eval::TIMED_OUT)
        } else if self.iterators.as_ref().is_some_and(capped) {
            Some(MAX_EXPANSIONS_WARNING)
        } else {
            None
        }
    }

    fn times(&self) -> [(&'static str, f64); 3] {
        [
            ("Total profile time", ms(self.total)),
            ("Parsing time", ms(self.trace.parse)),
            ("Pipeline creation time", ms(self.trace.build)),
        ]
    }

    fn processors(&self, resp3: bool) -> Vec<Reply> {
        self.trace
            .processors
            .iter()
            .map(|p| {
                entries(
                    resp3,
                    vec![
                        (Reply::status("Type"), Reply::status_owned(p.name.clone())),
                        (Reply::status("Time"), Reply::Double(p.time_ms)),
                        (Reply::status("Counter"), Reply::Integer(p.counter as i64)),
                    ],
                )
            })
            .collect()
    }

    fn resp2(&self) -> Reply {
        let mut out: Vec<Reply> = self
            .times()
            .into_iter()
            .map(|(k, v)| Reply::Array(vec![Reply::status(k), Reply::Double(v)]))
            .collect();
        let mut warning = vec![Reply::status("Warning")];
        warning.extend(self.warning().map(Reply::status));
        out.push(Reply::Array(warning));
        if let Some(it) = &self.iterators {
            out.push(Reply::Array(vec![
                Reply::status("Iterators profile"),
                iterator_reply(it, false),
            ]));
        }
        let mut rps = vec![Reply::status("Result processors profile")];
        rps.extend(self.processors(false));
        out.push(Reply::Array(rps));
        Reply::Array(out)
    }

    fn resp3(&self) -> Reply {
        let mut out: Vec<(Reply, Reply)> = self
            .times()
            .into_iter()
            .map(|(k, v)| (Reply::status(k), Reply::Double(v)))
            .collect();
        out.push((
            Reply::status("Warning"),
            Reply::status(self.warning().unwrap_or("None")),
        ));
        if let Some(it) = &self.iterators {
            out.push((
                Reply::status("Iterators profile"),
                Reply::Array(vec![iterator_reply(it, true)]),
            ));
        }
        out.push((
            Reply::status("Result processors profile"),
            Reply::Array(self.processors(true)),
        ));
        Reply::Map(out)
    }
}

/// Key-value entries: a RESP3 map, or RESP2's flat array.
fn entries(resp3: bool, kv: Vec<(Reply, Reply)>) -> Reply {
    if resp3 {
        Reply::Map(kv)
    } else {
        Reply::Array(kv.into_iter().flat_map(|(k, v)| [k, v]).collect())
    }
}

/// One iterator as RediSearch prints it: a map, whose `Child iterators` RESP2 lists
/// inline after the key and RESP3 as an array.
fn iterator_reply(it: &IteratorProfile, resp3: bool) -> Reply {
    let mut kv = vec![(Reply::status("Type"), Reply::status(it.kind))];
    if let Some(q) = &it.query_type {
        kv.push((Reply::status("Query type"), Reply::status_owned(q.clone())));
    }
    if let Some(t) = &it.term {
        kv.push((Reply::status("Term"), Reply::status_owned(t.clone())));
    }
    kv.push((Reply::status("Time"), Reply::Double(it.time_ms)));
    kv.push((Reply::status("Counter"), Reply::Integer(it.counter as i64)));
    if let Some(size) = it.size {
        kv.push((Reply::status("Size"), Reply::Integer(size as i64)));
    }
    if it.expansions_capped {
        kv.push((
            Reply::status("Warning"),
            Reply::status(MAX_EXPANSIONS_WARNING),
        ));
    }
    let child = |c: &Option<IteratorProfile>| match c {
        Some(c) => iterator_reply(c, resp3),
        None => Reply::Null,
    };
    let mut flat_children = Vec::new();
    match &it.children {
        ProfileChildren::None => {}
        ProfileChildren::One(c) => {
            kv.push((Reply::status("Child iterator"), iterator_reply(c, resp3)));
        }
        ProfileChildren::Counted(n) => kv.push((
            Reply::status("Child iterators"),
            Reply::status_owned(format!("The number of iterators in the union is {n}")),
        )),
        ProfileChildren::Many(cs) if resp3 => kv.push((
            Reply::status("Child iterators"),
            Reply::Array(cs.iter().map(child).collect()),
        )),
        ProfileChildren::Many(cs) => {
            flat_children = cs.iter().map(child).collect();
        }
    }
    if resp3 {
        return Reply::Map(kv);
    }
    let mut out: Vec<Reply> = kv.into_iter().flat_map(|(k, v)| [k, v]).collect();
    if !flat_children.is_empty() {
        out.push(Reply::status("Child iterators"));
        out.extend(flat_children);
    }
    Reply::Array(out)
}
