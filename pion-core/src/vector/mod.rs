//! Vector indexes: the approximate-nearest-neighbour engine behind `FT.*` vector fields
//! and Redis 8 vector sets.
//!
//! A [`VectorIndex`] maps caller-chosen labels (`u64`) to vectors and answers k-nearest
//! and range queries under one [`Metric`]. It is thread-safe (every method takes
//! `&self`) so all server threads insert and search at once. The layers above own the
//! mapping from labels to documents or elements.
//!
//! Distances follow RediSearch's conventions, so scores can be reported as they are:
//! `L2` is the *squared* Euclidean distance, `COSINE` is `1 - cos(a, b)` and `IP` is
//! `1 - a·b`. Smaller is nearer for all three.

mod exact_rows;
mod flat;
mod graph;
mod graph_maint;
mod graph_search;
mod hnsw;
mod pending;
mod persist;
pub mod quant;

pub use flat::FlatStore;

use std::fmt;

/// How distance between two vectors is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// Squared Euclidean distance.
    L2,
    /// `1 - cosine similarity`.
    Cosine,
    /// `1 - inner product`.
    Ip,
}

impl Metric {
    /// Parses a `DISTANCE_METRIC` argument (case-insensitive).
    pub fn parse(s: &[u8]) -> Option<Metric> {
        match s.to_ascii_uppercase().as_slice() {
            b"L2" => Some(Metric::L2),
            b"COSINE" => Some(Metric::Cosine),
            b"IP" => Some(Metric::Ip),
            _ => None,
        }
    }

    /// The name `FT.INFO` reports.
    pub fn name(self) -> &'static str {
        match self {
            Metric::L2 => "L2",
            Metric::Cosine => "COSINE",
            Metric::Ip => "IP",
        }
    }

    /// The exact distance between two vectors of the same length, in f32 as
    /// RediSearch computes it.
    pub fn distance(self, a: &[f32], b: &[f32]) -> f32 {
        ExactQuery::new(self, a).distance(b)
    }
}

/// A query prepared for many exact distances: its norm is computed once, and each
/// distance is one pass over the other vector, which may also be a document's FLOAT32
/// field read in place ([`ExactQuery::distance_le`]).
#[derive(Debug, Clone)]
pub struct ExactQuery<'a> {
    metric: Metric,
    query: &'a [f32],
    /// `|query|` (COSINE).
    norm: f32,
}

impl<'a> ExactQuery<'a> {
    /// Prepares `query` for `metric`.
    pub fn new(metric: Metric, query: &'a [f32]) -> ExactQuery<'a> {
        let norm = match metric {
            Metric::Cosine => kernels::distance::row_sums(query, query).norm2.sqrt(),
            Metric::L2 | Metric::Ip => 0.0,
        };
        ExactQuery {
            metric,
            query,
            norm,
        }
    }

    fn finish(&self, sums: kernels::distance::RowSums) -> f32 {
        match self.metric {
            Metric::L2 => sums.l2sq,
            Metric::Ip => 1.0 - sums.dot,
            Metric::Cosine => {
                let other = sums.norm2.sqrt();
                if self.norm == 0.0 || other == 0.0 {
                    1.0
                } else {
                    1.0 - sums.dot / (self.norm * other)
                }
            }
        }
    }

    /// The distance to `x` (of the query's length).
    #[inline]
    pub fn distance(&self, x: &[f32]) -> f32 {
        self.finish(kernels::distance::row_sums(self.query, x))
    }

    /// The distance to a vector stored as little-endian FLOAT32 bytes; `None` when
    /// `row` is not the query's length.
    #[inline]
    pub fn distance_le(&self, row: &[u8]) -> Option<f32> {
        kernels::distance::row_sums_le(self.query, row).map(|s| self.finish(s))
    }
}

/// The inner product of two equal-length slices.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

/// Which structure answers queries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    /// Exact search over every vector.
    Flat,
    /// Hierarchical navigable small-world graph (approximate).
    Hnsw,
}

/// How vectors are stored inside the index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quantization {
    /// Full-precision f32.
    None,
    /// 8-bit codes with a per-vector scale (the default for HNSW).
    Int8,
    /// One bit per dimension (vector sets' `BIN`).
    Binary,
}

/// Parameters an index is created with.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexParams {
    /// Dimensions of every vector.
    pub dim: usize,
    /// Distance metric.
    pub metric: Metric,
    /// Exact or graph.
    pub algorithm: Algorithm,
    /// Storage of the vectors.
    pub quantization: Quantization,
    /// HNSW: links per node on upper layers (`M`; layer 0 gets `2M`).
    pub m: usize,
    /// HNSW: candidate list size while building.
    pub ef_construction: usize,
    /// HNSW: default candidate list size while searching.
    pub ef_runtime: usize,
    /// HNSW: range queries stop when candidates are farther than `radius * (1 + epsilon)`.
    pub epsilon: f32,
    /// Expected number of vectors (storage is reserved up front).
    pub initial_cap: usize,
    /// HNSW over Int8 or Binary codes: also keep every vector as given, so that a
    /// search re-ranks the walk's candidates exactly and returns exact distances
    /// (4 bytes a dimension more per vector; the walk still reads the codes).
    pub exact_rows: bool,
    /// COSINE vectors arrive at unit length already (a vector set normalises its
    /// own): the graph stores each as given instead of dividing it by its norm again,
    /// which can move the last bit of a component, so the row is bit for bit what
    /// the caller holds and can stand in for it.
    pub unit_inputs: bool,
}

impl IndexParams {
    /// RediSearch's defaults for a field of `dim` dimensions.
    pub fn new(dim: usize, metric: Metric, algorithm: Algorithm) -> IndexParams {
        IndexParams {
            dim,
            metric,
            algorithm,
            quantization: match algorithm {
                Algorithm::Flat => Quantization::None,
                Algorithm::Hnsw => Quantization::Int8,
            },
            m: 16,
            ef_construction: 200,
            ef_runtime: 10,
            epsilon: 0.01,
            initial_cap: 0,
            exact_rows: false,
            unit_inputs: false,
        }
    }
}

/// Why a vector was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VectorError {
    /// The vector's length is not the index's dimension.
    DimensionMismatch {
        /// The index's dimension.
        expected: usize,
        /// The vector's.
        got: usize,
    },
    /// A component is NaN or infinite.
    NotFinite,
}

impl fmt::Display for VectorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VectorError::DimensionMismatch { expected, got } => {
                write!(f, "vector has {got} dimensions, the index has {expected}")
            }
            VectorError::NotFinite => f.write_str("vector has a NaN or infinite component"),
        }
    }
}

impl std::error::Error for VectorError {}

/// One search result.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Neighbor {
    /// The vector's label.
    pub label: u64,
    /// Its distance to the query (see [`Metric`]).
    pub distance: f32,
}

/// A label filter: only labels for which it returns true are results.
pub type Filter<'a> = &'a (dyn Fn(u64) -> bool + Sync);

/// Told of a label a filter will soon be asked about, to ask memory for what the
/// filter will read (it must not block, and it decides nothing).
pub type FilterAhead<'a> = &'a (dyn Fn(u64) + Sync);

/// A bitmap of labels: label `l` is in it when bit `l % 64` of word `l / 64` is set.
#[derive(Clone, Copy, Debug)]
pub struct LabelBits<'a>(pub &'a [u64]);

impl LabelBits<'_> {
    /// Whether label `l` is in the bitmap.
    #[inline]
    pub fn contains(&self, l: u64) -> bool {
        let word = usize::try_from(l / 64).ok().and_then(|w| self.0.get(w));
        (word.copied().unwrap_or(0) >> (l % 64)) & 1 != 0
    }
}

/// Which labels a search may return: those both `by_fn` and `bits` pass (each when
/// given), about `passes` of them when known, found testing at most `effort` nodes.
#[derive(Clone, Copy, Default)]
pub(crate) struct LabelFilter<'a> {
    by_fn: Option<Filter<'a>>,
    ahead: Option<FilterAhead<'a>>,
    bits: Option<LabelBits<'a>>,
    pub(crate) passes: Option<usize>,
    /// The most nodes a walk tests against the filter ([`SearchOptions::filter_effort`]).
    pub(crate) effort: Option<usize>,
}

impl<'a> LabelFilter<'a> {
    /// The filter of a query's options.
    pub(crate) fn of(opts: &SearchOptions<'a>) -> LabelFilter<'a> {
        LabelFilter {
            by_fn: opts.filter,
            ahead: opts.filter_ahead,
            bits: opts.filter_bits,
            passes: opts.filter_passes,
            effort: opts.filter_effort,
        }
    }

    /// Whether any label may be refused.
    pub(crate) fn filters(&self) -> bool {
        self.by_fn.is_some() || self.bits.is_some()
    }

    /// Whether the filter wants to hear of labels ahead of their tests.
    pub(crate) fn looks_ahead(&self) -> bool {
        self.ahead.is_some()
    }

    /// Tells `by_fn`'s companion that label `l` is a few tests away.
    #[inline]
    pub(crate) fn ahead(&self, l: u64) {
        if let Some(ahead) = self.ahead {
            ahead(l);
        }
    }

    /// Whether label `l` may be returned.
    #[inline]
    pub(crate) fn passes(&self, l: u64) -> bool {
        // Both tests are made, without a branch between them: a scan folds this
        // into a mask (`Graph::scan`). Neither has side effects.
        self.bits.is_none_or(|b| b.contains(l)) & self.by_fn.is_none_or(|f| f(l))
    }
}

/// Options of one query.
#[derive(Clone, Copy, Default)]
pub struct SearchOptions<'a> {
    /// Candidate list size (HNSW); `None` = the index's `ef_runtime`.
    pub ef: Option<usize>,
    /// Only these labels may be returned.
    pub filter: Option<Filter<'a>>,
    /// With `filter`: told of each label a walk will soon test, a few distances
    /// before, so that the filter's data can be on their way from memory.
    pub filter_ahead: Option<FilterAhead<'a>>,
    /// Only labels in this bitmap may be returned (checked without a call, so a
    /// filter that is a set of labels is best given here).
    pub filter_bits: Option<LabelBits<'a>>,
    /// About how many labels `filter` passes, when the caller knows: a filter that
    /// passes few of the index's vectors is answered by a scan of those instead of a
    /// walk, which would visit many times as many to find `ef` of them.
    pub filter_passes: Option<usize>,
    /// With a filter: test at most this many of the walk's nodes against it, then
    /// answer with those that passed (`VSIM`'s `FILTER-EF`), even if fewer than asked.
    /// `None`: as many as it takes, the walk widened and at last the rows scanned.
    pub filter_effort: Option<usize>,
}

/// Counters an index reports for `FT.INFO` / `VINFO` / `INFO`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IndexStats {
    /// Vectors in the index.
    pub vectors: usize,
    /// Vectors not yet linked into the graph (searched exactly).
    pub pending: usize,
    /// Bytes used by codes, links and bookkeeping.
    pub memory_bytes: usize,
    /// Highest graph level (HNSW), 0 for flat.
    pub max_level: usize,
}

/// A thread-safe vector index.
///
/// `FLAT` indexes are exact. `HNSW` indexes keep a graph (see the `graph` module docs)
/// plus an exact *pending tail*: [`VectorIndex::upsert`] only appends to the tail, which
/// every query scans exactly, so a write is searchable at once; the tail is linked into
/// the graph by [`VectorIndex::build_pending`] (callable from many threads at once),
/// [`VectorIndex::optimize`] (all of it, in parallel), or at write time with
/// [`VectorIndex::upsert_linked`].
///
/// With `Quantization::Int8` the graph holds int8 codes only (no f32 copy), so distances
/// of graph nodes are estimates (see [`VectorIndex::search`]); the tail is exact.
pub struct VectorIndex {
    params: IndexParams,
    inner: Inner,
}

enum Inner {
    Flat(FlatStore),
    Hnsw(Box<hnsw::Hnsw>),
}

impl VectorIndex {
    /// An empty index.
    pub fn new(params: IndexParams) -> VectorIndex {
        let inner = match params.algorithm {
            Algorithm::Flat => Inner::Flat(FlatStore::new(params.dim, params.metric)),
            Algorithm::Hnsw => Inner::Hnsw(Box::new(hnsw::Hnsw::new(params.clone()))),
        };
        VectorIndex { params, inner }
    }

    /// The parameters it was created with.
    pub fn params(&self) -> &IndexParams {
        &self.params
    }

    /// Inserts a vector, replacing any vector under the same label. For HNSW it only
    /// appends to the pending tail (searched exactly) and returns at once.
    pub fn upsert(&self, label: u64, v: &[f32]) -> Result<(), VectorError> {
        check(&self.params, v)?;
        match &self.inner {
            Inner::Flat(f) => f.upsert(label, v),
            Inner::Hnsw(h) => h.upsert(label, v),
        }
        Ok(())
    }

    /// Like [`VectorIndex::upsert`], but links the vector into the graph before
    /// returning (HNSW; many threads may call it at once). Same as `upsert` for FLAT.
    pub fn upsert_linked(&self, label: u64, v: &[f32]) -> Result<(), VectorError> {
        check(&self.params, v)?;
        match &self.inner {
            Inner::Flat(f) => f.upsert(label, v),
            Inner::Hnsw(h) => h.upsert_linked(label, v),
        }
        Ok(())
    }

    /// Removes a label; false if it was not there. For HNSW the node is marked dead at
    /// once (never returned again); once dead nodes reach 1/8 of the live ones (and at
    /// least 64), or on [`VectorIndex::optimize`], their in-neighbours are reconnected
    /// with the selection heuristic and the slots are reused.
    pub fn remove(&self, label: u64) -> bool {
        match &self.inner {
            Inner::Flat(f) => f.remove(label),
            Inner::Hnsw(h) => h.remove(label),
        }
    }

    /// Whether a label is present.
    pub fn contains(&self, label: u64) -> bool {
        match &self.inner {
            Inner::Flat(f) => f.contains(label),
            Inner::Hnsw(h) => h.contains(label),
        }
    }

    /// Number of vectors.
    pub fn len(&self) -> usize {
        match &self.inner {
            Inner::Flat(f) => f.len(),
            Inner::Hnsw(h) => h.len(),
        }
    }

    /// Whether the index holds no vector.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The stored vector (dequantised when the index keeps codes: Int8 returns
    /// `scale·code` per component, Binary returns ±1 per component).
    pub fn get(&self, label: u64) -> Option<Vec<f32>> {
        match &self.inner {
            Inner::Flat(f) => f.get(label),
            Inner::Hnsw(h) => h.get(label),
        }
    }

    /// The INT8 codes an HNSW index over INT8 holds for a linked label: its unit
    /// vector's codes at the index's own scale. `None` for a FLAT index, another
    /// quantisation, an absent label or one not linked yet.
    pub fn i8_codes(&self, label: u64) -> Option<Vec<i8>> {
        match &self.inner {
            Inner::Flat(_) => None,
            Inner::Hnsw(h) => h.i8_codes(label),
        }
    }

    /// The f32 row an HNSW index without quantisation holds for a linked label (for
    /// COSINE the unit vector; as given with [`IndexParams::unit_inputs`]). `None`
    /// for a FLAT index, another quantisation, an absent label or one not linked yet.
    pub fn f32_row(&self, label: u64) -> Option<Vec<f32>> {
        match &self.inner {
            Inner::Flat(_) => None,
            Inner::Hnsw(h) => h.f32_row(label),
        }
    }

    /// The `k` nearest labels to `query`, nearest first.
    ///
    /// For HNSW the graph is searched with `opts.ef` (default `ef_runtime`, at least `k`)
    /// and merged with an exact scan of the pending tail; a filter that passes few of
    /// the index's vectors (`opts.filter_passes`) is answered by a scan of the codes.
    /// Distances follow the metric's convention. With `exact_rows` they are exact
    /// (the walk's best candidates re-ranked against the vectors as given); otherwise,
    /// for graph nodes of an Int8 index they are int8 estimates (error of the order of
    /// `dim·scale²`), for Binary `2·hamming/dim` (COSINE, IP) or `4·hamming` (L2), and
    /// callers that hold the f32 vectors re-rank with [`VectorIndex::search_candidates`].
    pub fn search(&self, query: &[f32], k: usize, opts: &SearchOptions<'_>) -> Vec<Neighbor> {
        if query.len() != self.params.dim || k == 0 {
            return Vec::new();
        }
        let filter = LabelFilter::of(opts);
        match &self.inner {
            Inner::Flat(f) => f.search(query, k, filter),
            Inner::Hnsw(h) => h.search(query, k, opts.ef.unwrap_or(self.params.ef_runtime), filter),
        }
    }

    /// Whether [`VectorIndex::search`] returns exact distances (FLAT, and HNSW that
    /// keeps its vectors as given): a caller then needs no re-rank of its own.
    pub fn exact_distances(&self) -> bool {
        match &self.inner {
            Inner::Flat(_) => true,
            Inner::Hnsw(h) => h.exact_distances(),
        }
    }

    /// `n` candidates (nearest first, approximate distances for Int8) for a caller that
    /// re-ranks them exactly with its own f32 vectors; ask for `n` a few times `k`.
    pub fn search_candidates(
        &self,
        query: &[f32],
        n: usize,
        opts: &SearchOptions<'_>,
    ) -> Vec<Neighbor> {
        let ef = opts.ef.unwrap_or(self.params.ef_runtime).max(n);
        self.search(
            query,
            n,
            &SearchOptions {
                ef: Some(ef),
                ..*opts
            },
        )
    }

    /// Every label within `radius` of `query`, nearest first. HNSW searches layer 0 with
    /// `opts.ef` (default `ef_runtime`) for seeds, then expands while candidates are
    /// within `radius·(1 + epsilon)` (RediSearch's method), plus the exact tail.
    pub fn range(&self, query: &[f32], radius: f32, opts: &SearchOptions<'_>) -> Vec<Neighbor> {
        if query.len() != self.params.dim {
            return Vec::new();
        }
        let filter = LabelFilter::of(opts);
        match &self.inner {
            Inner::Flat(f) => f.range(query, radius, filter),
            Inner::Hnsw(h) => {
                let ef = opts.ef.unwrap_or(self.params.ef_runtime);
                h.range(query, radius, ef, filter)
            }
        }
    }

    /// Search restricted to the given labels, over every one of them (for very
    /// selective filters). Where an HNSW index keeps exact rows the labels are ranked
    /// by code and a short list measured exactly, so distances are exact; for graph
    /// nodes of Int8/Binary indexes without them the distances are the code estimates.
    pub fn search_among(&self, query: &[f32], k: usize, labels: &[u64]) -> Vec<Neighbor> {
        if query.len() != self.params.dim || k == 0 {
            return Vec::new();
        }
        match &self.inner {
            Inner::Flat(f) => f.search_among(query, k, labels),
            Inner::Hnsw(h) => h.search_among(query, k, labels),
        }
    }

    /// Links up to `max` pending vectors into the graph; returns how many. Several
    /// threads may call it at once: each links its own vectors, with per-node locks.
    /// Always 0 for FLAT.
    pub fn build_pending(&self, max: usize) -> usize {
        match &self.inner {
            Inner::Flat(_) => 0,
            Inner::Hnsw(h) => h.build_pending(max),
        }
    }

    /// Links up to `max` pending vectors using `threads` threads; returns how many.
    /// Always 0 for FLAT.
    pub fn build_pending_with(&self, max: usize, threads: usize) -> usize {
        match &self.inner {
            Inner::Flat(_) => 0,
            Inner::Hnsw(h) => h.build_pending_with(max, threads),
        }
    }

    /// Vectors not yet linked into the graph (0 for FLAT).
    pub fn pending(&self) -> usize {
        match &self.inner {
            Inner::Flat(_) => 0,
            Inner::Hnsw(h) => h.pending(),
        }
    }

    /// Links every pending vector into the graph now (`FT.OPTIMIZE`), with
    /// `available_parallelism()` threads, after repairing around removed nodes.
    pub fn optimize(&self) {
        self.optimize_with(std::thread::available_parallelism().map_or(1, |n| n.get()));
    }

    /// [`VectorIndex::optimize`] with a chosen number of linking threads.
    pub fn optimize_with(&self, threads: usize) {
        if let Inner::Hnsw(h) = &self.inner {
            h.optimize(threads.max(1));
        }
    }

    /// A node's neighbours, one list per layer, layer 0 first (`VLINKS` reverses it to
    /// print the top layer first). A pending (not yet linked) label has one empty layer;
    /// `None` if absent; FLAT gives one empty layer for a present label.
    pub fn neighbors(&self, label: u64) -> Option<Vec<Vec<u64>>> {
        match &self.inner {
            Inner::Flat(f) => f.contains(label).then(|| vec![Vec::new()]),
            Inner::Hnsw(h) => h.neighbors(label),
        }
    }

    /// Counters.
    pub fn stats(&self) -> IndexStats {
        match &self.inner {
            Inner::Flat(f) => IndexStats {
                vectors: f.len(),
                pending: 0,
                memory_bytes: f.memory_bytes(),
                max_level: 0,
            },
            Inner::Hnsw(h) => IndexStats {
                vectors: h.len(),
                pending: h.pending(),
                memory_bytes: h.memory_bytes(),
                max_level: h.max_level(),
            },
        }
    }

    /// Appends the whole index (parameters, graph, codes, pending tail) to `out` in a
    /// versioned format ending with a CRC32C; see [`VectorIndex::read_from`].
    pub fn write_to(&self, out: &mut Vec<u8>) {
        persist::write(self, out);
    }

    /// Loads an index written by [`VectorIndex::write_to`] without rebuilding the graph.
    /// Truncated, corrupt or unknown-version input is an error, never a panic.
    pub fn read_from(bytes: &[u8]) -> Result<VectorIndex, crate::util::codec::DecodeError> {
        persist::read(bytes)
    }
}

fn check(params: &IndexParams, v: &[f32]) -> Result<(), VectorError> {
    if v.len() != params.dim {
        return Err(VectorError::DimensionMismatch {
            expected: params.dim,
            got: v.len(),
        });
    }
    if v.iter().any(|x| !x.is_finite()) {
        return Err(VectorError::NotFinite);
    }
    Ok(())
}

/// Keeps the `k` smallest neighbours seen (ties: the smaller label), nearest first.
pub(crate) fn top_k(mut all: Vec<Neighbor>, k: usize) -> Vec<Neighbor> {
    let cmp = |a: &Neighbor, b: &Neighbor| {
        a.distance
            .total_cmp(&b.distance)
            .then(a.label.cmp(&b.label))
    };
    if all.len() > k {
        all.select_nth_unstable_by(k, cmp);
        all.truncate(k);
    }
    all.sort_by(cmp);
    all
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_exact;
#[cfg(test)]
mod tests_hnsw;
