//! `FT.HYBRID`'s arguments, as RediSearch 8.4 reads them: the text query (`SEARCH`
//! with `SCORER` and `YIELD_SCORE_AS`), the vector query (`VSIM @field $param` with
//! `KNN`/`RANGE`, a pre-`FILTER` and `YIELD_SCORE_AS`), then options in any order:
//! `COMBINE`, the `FT.AGGREGATE`-like steps that shape the fused rows (`LOAD`,
//! `GROUPBY … REDUCE`, `APPLY`, `SORTBY`/`NOSORT`, `FILTER`, `LIMIT`), `PARAMS` and
//! `TIMEOUT`. Error texts are RediSearch's; options it parses with its generic
//! argument parser fail as `NAME: reason`, as there.

use crate::command::handlers::search::aggregate::Step;
use crate::error::{OpError, OpResult};
use crate::index::eval::Scorer;
use crate::index::query::Params;
use crate::util::num::parse_f64;

mod tail;

fn err(text: impl Into<String>) -> OpError {
    OpError::custom(text.into())
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// RediSearch's refusal of `DIALECT` anywhere in `FT.HYBRID` (its subqueries always
/// run in dialect 2).
const DIALECT_REFUSED: &str = "DIALECT is not supported in FT.HYBRID or any of its subqueries. Please check the documentation on search-default-dialect configuration.";

/// The fused rows' default page size.
pub(super) const DEFAULT_LIMIT: usize = 10;
/// How many results each subquery contributes unless `WINDOW` says otherwise.
const DEFAULT_WINDOW: usize = 20;
/// RRF's default rank constant.
const DEFAULT_RRF_CONSTANT: f64 = 60.0;
/// LINEAR's default weights (text, vector).
const DEFAULT_ALPHA: f64 = 0.3;
const DEFAULT_BETA: f64 = 0.7;
/// KNN's default `K`.
const DEFAULT_K: u64 = 10;
/// The largest `LIMIT` count (RediSearch's `MAXSEARCHRESULTS` default).
const MAX_RESULTS: u64 = 1_000_000;

/// How the text query scores its documents.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum TextScorer {
    /// One of the scorers `FT.SEARCH` has.
    Plain(Scorer),
    /// `BM25STD.TANH`: BM25STD mapped into [0, 1) by tanh(score / 4).
    Bm25StdTanh,
    /// `BM25STD.NORM`: BM25STD over the highest BM25STD among the matches.
    Bm25StdNorm,
}

impl TextScorer {
    fn parse(name: &[u8]) -> OpResult<TextScorer> {
        Ok(match name {
            b"BM25STD.TANH" => TextScorer::Bm25StdTanh,
            b"BM25STD.NORM" => TextScorer::Bm25StdNorm,
            b"HAMMING" => {
                return Err(err(
                    "SCORER HAMMING compares document payloads, which Pion does not keep",
                ))
            }
            other => TextScorer::Plain(
                Scorer::parse(other)
                    .ok_or_else(|| err(format!("No such scorer {}", lossy(other))))?,
            ),
        })
    }

    /// The scorer the index evaluates with (the normalised ones start from BM25STD).
    pub(super) fn base(self) -> Scorer {
        match self {
            TextScorer::Plain(s) => s,
            TextScorer::Bm25StdTanh | TextScorer::Bm25StdNorm => Scorer::Bm25Std,
        }
    }
}

/// `KNN …` or `RANGE …`.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum VectorMethod {
    /// The `k` nearest (at most the fusion window).
    Knn {
        /// `K`.
        k: u64,
        /// `EF_RUNTIME`, as written and as a number.
        ef_runtime: Option<(Vec<u8>, f64)>,
    },
    /// Every vector within `radius`.
    Range {
        /// `RADIUS`.
        radius: f64,
        /// `EPSILON`, as written and as a number.
        epsilon: Option<(Vec<u8>, f64)>,
    },
}

/// The `VSIM` subquery.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct VectorQuery {
    /// The VECTOR field (without `@`).
    pub(super) field: Vec<u8>,
    /// The parameter holding the query vector (without `$`).
    pub(super) param: Vec<u8>,
    /// KNN or range.
    pub(super) method: VectorMethod,
    /// `FILTER`: the documents the vector search considers (`*` when absent).
    pub(super) filter: Option<Vec<u8>>,
    /// `FILTER … POLICY ADHOC|BATCHES`, as the KNN attribute it becomes.
    pub(super) policy: Option<&'static [u8]>,
    /// `FILTER … BATCH_SIZE n`.
    pub(super) batch_size: Option<Vec<u8>>,
    /// `YIELD_SCORE_AS`: the row field that carries the vector score.
    pub(super) score_alias: Option<Vec<u8>>,
}

/// `COMBINE`: how the two rankings become one score.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Fusion {
    /// Reciprocal rank fusion: Σ 1 / (constant + rank).
    Rrf {
        /// `CONSTANT`.
        constant: f64,
        /// `WINDOW`.
        window: usize,
    },
    /// alpha × text score + beta × vector score.
    Linear {
        /// `ALPHA`: the text score's weight.
        alpha: f64,
        /// `BETA`: the vector score's weight.
        beta: f64,
        /// `WINDOW`.
        window: usize,
    },
}

impl Fusion {
    /// How many results each subquery contributes.
    pub(super) fn window(self) -> usize {
        match self {
            Fusion::Rrf { window, .. } | Fusion::Linear { window, .. } => window,
        }
    }
}

/// `SORTBY`, `NOSORT` and `LIMIT`, which RediSearch keeps in one arrange step.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Arrange {
    /// `SORTBY`'s keys (name, ascending).
    pub(super) sort: Option<Vec<(Vec<u8>, bool)>>,
    /// `NOSORT`: the fused rows keep the order they were merged in.
    pub(super) no_sort: bool,
    /// `LIMIT offset num`.
    pub(super) limit: Option<(usize, usize)>,
    /// Where among the steps the arrange step runs (`None`: last).
    pub(super) position: Option<usize>,
}

/// A parsed `FT.HYBRID`.
pub(super) struct HybridRequest {
    /// The text query.
    pub(super) text: Vec<u8>,
    /// `SCORER` (BM25STD unless given).
    pub(super) scorer: TextScorer,
    /// `SEARCH … YIELD_SCORE_AS`: the row field that carries the text score.
    pub(super) text_alias: Option<Vec<u8>>,
    /// The vector query.
    pub(super) vector: VectorQuery,
    /// `COMBINE`.
    pub(super) fusion: Fusion,
    /// `COMBINE … YIELD_SCORE_AS`: the row field that carries the fused score.
    pub(super) fused_alias: Option<Vec<u8>>,
    /// `LOAD`, `GROUPBY`, `APPLY` and `FILTER`, in order.
    pub(super) steps: Vec<Step>,
    /// `SORTBY`, `NOSORT`, `LIMIT`.
    pub(super) arrange: Arrange,
    /// `PARAMS`.
    pub(super) params: Params,
    /// `TIMEOUT` in milliseconds (0: none; not given: the configured one).
    pub(super) timeout_ms: Option<u64>,
}

/// A non-negative integer argument without sign.
fn unsigned(b: &[u8]) -> Option<u64> {
    if b.first() == Some(&b'+') {
        return None;
    }
    std::str::from_utf8(b).ok()?.parse().ok()
}

fn number(b: &[u8]) -> Option<f64> {
    parse_f64(b).filter(|n| !n.is_nan())
}

/// A cursor over the arguments.
type Args<'a> = crate::util::args::ArgCursor<'a>;

/// Parses `FT.HYBRID index …`.
pub(super) fn parse(argv: &[Vec<u8>]) -> OpResult<HybridRequest> {
    let mut a = Args { argv, at: 2 };
    subquery_count(&mut a)?;
    let (text, scorer, text_alias) = search_subquery(&mut a)?;
    let vector = vector_subquery(&mut a)?;
    let mut req = HybridRequest {
        text,
        scorer,
        text_alias,
        vector,
        fusion: Fusion::Rrf {
            constant: DEFAULT_RRF_CONSTANT,
            window: DEFAULT_WINDOW,
        },
        fused_alias: None,
        steps: Vec::new(),
        arrange: Arrange::default(),
        params: Params::new(),
        timeout_ms: None,
    };
    tail::tail(&mut a, &mut req)?;
    Ok(req)
}

/// `[2] SEARCH`: the subquery count is optional (Redis 8.4 accepts both forms).
fn subquery_count(a: &mut Args<'_>) -> OpResult<()> {
    let Some(first) = a.peek() else {
        return Err(err("Missing subqueries count for FT.HYBRID"));
    };
    if let Some(n) = unsigned(first).filter(|n| *n >= 1) {
        a.at += 1;
        if n != 2 {
            return Err(err("FT.HYBRID currently supports only two subqueries"));
        }
        if !a.eat("SEARCH") {
            return Err(err("SEARCH keyword is required"));
        }
        return Ok(());
    }
    if !a.eat("SEARCH") {
        return Err(err(
            "Invalid subqueries count: expected an unsigned integer",
        ));
    }
    Ok(())
}

type SearchPart = (Vec<u8>, TextScorer, Option<Vec<u8>>);

/// `SEARCH query [SCORER name] [YIELD_SCORE_AS alias]`, up to `VSIM`.
fn search_subquery(a: &mut Args<'_>) -> OpResult<SearchPart> {
    let text = a
        .next()
        .ok_or_else(|| err("No query string provided for SEARCH"))?
        .to_vec();
    let mut scorer = TextScorer::Plain(Scorer::Bm25Std);
    let mut alias = None;
    while let Some(word) = a.peek() {
        if word.eq_ignore_ascii_case(b"VSIM") {
            break;
        }
        a.at += 1;
        let missing = |name: &str| {
            err(format!(
                "Bad arguments for {name}: Expected an argument, but none provided"
            ))
        };
        if word.eq_ignore_ascii_case(b"SCORER") {
            scorer = TextScorer::parse(a.next().ok_or_else(|| missing("SCORER"))?)?;
        } else if word.eq_ignore_ascii_case(b"YIELD_SCORE_AS") {
            alias = Some(a.next().ok_or_else(|| missing("YIELD_SCORE_AS"))?.to_vec());
        } else if word.eq_ignore_ascii_case(b"DIALECT") {
            return Err(err(DIALECT_REFUSED));
        } else {
            return Err(err(format!("Unknown argument `{}` in SEARCH", lossy(word))));
        }
    }
    Ok((text, scorer, alias))
}

/// A clause's option: its name, and its value unless the arguments ended.
type OptionPair<'a> = (&'a [u8], Option<&'a [u8]>);

/// The `count name value …` pairs of `KNN` or `RANGE`.
fn clause_pairs<'a>(a: &mut Args<'a>) -> OpResult<Vec<OptionPair<'a>>> {
    let raw = a.next().ok_or_else(|| err("Missing argument count"))?;
    let count =
        unsigned(raw).ok_or_else(|| err("Invalid argument count: expected an unsigned integer"))?;
    if count == 0 || count % 2 != 0 {
        return Err(err(format!(
            "Invalid argument count: {count} (must be a positive even number for key/value pairs)"
        )));
    }
    let mut pairs = Vec::new();
    for i in (0..count).step_by(2) {
        let Some(name) = a.next() else {
            let verb = if i == 1 { "was" } else { "were" };
            return Err(err(format!(
                "Expected arguments {count}, but {i} {verb} provided"
            )));
        };
        pairs.push((name, a.next()));
    }
    Ok(pairs)
}

fn knn_clause(a: &mut Args<'_>) -> OpResult<VectorMethod> {
    let (mut k, mut ef) = (None, None);
    for (name, value) in clause_pairs(a)? {
        let upper = name.to_ascii_uppercase();
        let missing = || err(format!("Missing argument value for {}", lossy(&upper)));
        match upper.as_slice() {
            b"K" => {
                if k.is_some() {
                    return Err(err("Duplicate K argument"));
                }
                let v = value.ok_or_else(missing)?;
                k = Some(
                    std::str::from_utf8(v)
                        .ok()
                        .and_then(|s| s.parse::<i64>().ok())
                        .filter(|n| *n >= 1)
                        .ok_or_else(|| err("Invalid K value"))? as u64,
                );
            }
            b"EF_RUNTIME" => {
                if ef.is_some() {
                    return Err(err("Duplicate EF_RUNTIME argument"));
                }
                let v = value.ok_or_else(missing)?;
                let n = std::str::from_utf8(v)
                    .ok()
                    .and_then(|s| s.parse::<i64>().ok())
                    .filter(|n| *n >= 1)
                    .ok_or_else(|| err("Invalid EF_RUNTIME value"))?;
                ef = Some((v.to_vec(), n as f64));
            }
            b"SHARD_K_RATIO" => {
                return Err(err(
                    "SHARD_K_RATIO applies to a cluster's shards; a single Pion node has none",
                ))
            }
            _ => return Err(err(format!("Unknown argument `{}` in KNN", lossy(name)))),
        }
    }
    let k = k.ok_or_else(|| err("Missing required argument K"))?;
    Ok(VectorMethod::Knn { k, ef_runtime: ef })
}

fn range_clause(a: &mut Args<'_>) -> OpResult<VectorMethod> {
    let (mut radius, mut epsilon) = (None, None);
    for (name, value) in clause_pairs(a)? {
        let upper = name.to_ascii_uppercase();
        let missing = || err(format!("Missing argument value for {}", lossy(&upper)));
        match upper.as_slice() {
            b"RADIUS" => {
                if radius.is_some() {
                    return Err(err("Duplicate RADIUS argument"));
                }
                let v = value.ok_or_else(missing)?;
                radius = Some(
                    number(v)
                        .filter(|r| *r >= 0.0)
                        .ok_or_else(|| err("Invalid RADIUS value"))?,
                );
            }
            b"EPSILON" => {
                if epsilon.is_some() {
                    return Err(err("Duplicate EPSILON argument"));
                }
                let v = value.ok_or_else(missing)?;
                let e = number(v)
                    .filter(|e| *e > 0.0)
                    .ok_or_else(|| err("Invalid EPSILON value"))?;
                epsilon = Some((v.to_vec(), e));
            }
            _ => return Err(err(format!("Unknown argument `{}` in RANGE", lossy(name)))),
        }
    }
    let radius = radius.ok_or_else(|| err("Missing required argument RADIUS"))?;
    Ok(VectorMethod::Range { radius, epsilon })
}

/// `VSIM @field $param [KNN …|RANGE …] [FILTER …] [YIELD_SCORE_AS alias]`.
fn vector_subquery(a: &mut Args<'_>) -> OpResult<VectorQuery> {
    if !a.eat("VSIM") {
        return Err(err("VSIM argument is required"));
    }
    let field = a.next().ok_or_else(|| err("Missing vector field name"))?;
    let field = field
        .strip_prefix(b"@")
        .filter(|_| !field.is_empty())
        .ok_or_else(|| err("Missing @ prefix for vector field name"))?
        .to_vec();
    let param = a.next().ok_or_else(|| err("Missing vector argument"))?;
    let param = param
        .strip_prefix(b"$")
        .ok_or_else(|| err("Invalid vector argument, expected a parameter name starting with $"))?
        .to_vec();
    let mut v = VectorQuery {
        field,
        param,
        method: VectorMethod::Knn {
            k: DEFAULT_K,
            ef_runtime: None,
        },
        filter: None,
        policy: None,
        batch_size: None,
        score_alias: None,
    };
    if a.eat("KNN") {
        v.method = knn_clause(a)?;
    } else if a.eat("RANGE") {
        v.method = range_clause(a)?;
    }
    if a.eat("FILTER") {
        vector_filter(a, &mut v)?;
    }
    while a.eat("YIELD_SCORE_AS") {
        if v.score_alias.is_some() {
            return Err(err("Duplicate YIELD_SCORE_AS argument"));
        }
        let alias = a
            .next()
            .ok_or_else(|| err("Missing argument value for YIELD_SCORE_AS"))?;
        v.score_alias = Some(alias.to_vec());
    }
    if a.eat("DIALECT") {
        return Err(err(DIALECT_REFUSED));
    }
    Ok(v)
}

/// `FILTER expr`, or `FILTER count expr [POLICY ADHOC|BATCHES] [BATCH_SIZE n]`.
fn vector_filter(a: &mut Args<'_>, v: &mut VectorQuery) -> OpResult<()> {
    let first = a
        .next()
        .ok_or_else(|| err("Missing argument count for FILTER"))?;
    let Some(count) = unsigned(first) else {
        v.filter = Some(first.to_vec());
        return Ok(());
    };
    let count = count as usize;
    if count > a.remaining() {
        return Err(err(format!(
            "Not enough arguments in FILTER, specified {count} but provided only {}",
            a.remaining()
        )));
    }
    let end = a.at + count;
    let expr = a
        .next()
        .filter(|_| count > 0)
        .ok_or_else(|| err("Missing filter-expression for FILTER"))?;
    v.filter = Some(expr.to_vec());
    while a.at < end {
        let name = a.next().unwrap_or_default();
        let value = if a.at < end { a.next() } else { None };
        let upper = name.to_ascii_uppercase();
        let shown = lossy(&upper);
        let value = value.ok_or_else(|| err(format!("{shown}: Expected an argument")))?;
        match upper.as_slice() {
            b"POLICY" => {
                v.policy = Some(if value.eq_ignore_ascii_case(b"ADHOC") {
                    b"ADHOC_BF"
                } else if value.eq_ignore_ascii_case(b"BATCHES") {
                    b"BATCHES"
                } else {
                    return Err(err("POLICY: Invalid value for argument"));
                });
            }
            b"BATCH_SIZE" => v.batch_size = Some(value.to_vec()),
            _ => return Err(err(format!("{}: Unknown argument", lossy(name)))),
        }
    }
    Ok(())
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;
