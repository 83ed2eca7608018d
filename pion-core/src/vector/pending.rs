//! The vectors an HNSW index holds but has not linked into its graph yet.
//!
//! Every query scans this tail, so a vector is searchable the moment it is written.
//! Right after a bulk load the tail is the whole index (100,000 × 384 f32 is 150 MB),
//! and a KNN that read every row as f32 paid for all of it: an index whose graph keeps
//! INT8 codes also codes its tail the same way, a query ranks the tail by those
//! estimates (a quarter of the bytes) and computes exact distances for a short list
//! only.

use ahash::AHashMap;

use std::collections::BinaryHeap;

use super::graph::{i8_distance, Cand, Query};
use super::{quant, top_k, ExactQuery, LabelFilter, Metric, Neighbor};

/// A tail shorter than this is ranked exactly, row by row: the codes only pay off
/// once reading the rows costs more than the short list's exact distances.
const CODED_ABOVE: usize = 2048;

/// The not-yet-linked vectors.
#[derive(Default)]
pub(crate) struct Pending {
    pub(crate) data: Vec<f32>,
    pub(crate) labels: Vec<u64>,
    /// Write sequence of each row (a claim finishes only if it still matches).
    pub(crate) seqs: Vec<u64>,
    /// Whether a build claimed the row.
    pub(crate) claimed: Vec<bool>,
    pub(crate) rows: AHashMap<u64, usize>,
    /// The rows' INT8 codes, where the graph codes its rows so.
    codes: Option<TailCodes>,
}

/// INT8 codes of the tail's rows, coded exactly as the graph codes a slot.
struct TailCodes {
    metric: Metric,
    codes: Vec<i8>,
    scales: Vec<f32>,
    norms: Vec<f32>,
}

impl Pending {
    /// An empty tail; `coded` when the graph keeps INT8 codes (`metric` is the
    /// index's).
    pub(crate) fn new(coded: bool, metric: Metric) -> Pending {
        Pending {
            codes: coded.then(|| TailCodes {
                metric,
                codes: Vec::new(),
                scales: Vec::new(),
                norms: Vec::new(),
            }),
            ..Pending::default()
        }
    }

    pub(crate) fn row(&self, dim: usize, r: usize) -> &[f32] {
        &self.data[r * dim..(r + 1) * dim]
    }

    pub(crate) fn put(&mut self, dim: usize, label: u64, v: &[f32], seq: u64) {
        if let Some(&r) = self.rows.get(&label) {
            self.data[r * dim..(r + 1) * dim].copy_from_slice(v);
            self.seqs[r] = seq;
            self.claimed[r] = false;
            if let Some(c) = &mut self.codes {
                c.set(dim, r, v);
            }
            return;
        }
        self.rows.insert(label, self.labels.len());
        self.labels.push(label);
        self.data.extend_from_slice(v);
        self.seqs.push(seq);
        self.claimed.push(false);
        if let Some(c) = &mut self.codes {
            c.codes.resize(c.codes.len() + dim, 0);
            c.scales.push(0.0);
            c.norms.push(0.0);
            c.set(dim, self.labels.len() - 1, v);
        }
    }

    pub(crate) fn remove(&mut self, dim: usize, label: u64) -> bool {
        let Some(r) = self.rows.remove(&label) else {
            return false;
        };
        let last = self.labels.len() - 1;
        if r != last {
            let moved = self.labels[last];
            self.data.copy_within(last * dim..(last + 1) * dim, r * dim);
            self.labels[r] = moved;
            self.seqs[r] = self.seqs[last];
            self.claimed[r] = self.claimed[last];
            self.rows.insert(moved, r);
        }
        self.labels.pop();
        self.seqs.pop();
        self.claimed.pop();
        self.data.truncate(last * dim);
        if let Some(c) = &mut self.codes {
            c.codes.copy_within(last * dim..(last + 1) * dim, r * dim);
            c.codes.truncate(last * dim);
            c.scales.swap_remove(r);
            c.norms.swap_remove(r);
        }
        true
    }

    /// Number of rows.
    pub(crate) fn len(&self) -> usize {
        self.labels.len()
    }

    /// Gives back the capacity a drained tail no longer needs.
    pub(crate) fn shrink_when_drained(&mut self) {
        if self.data.capacity() > 4 * self.data.len() + 4096 {
            self.data.shrink_to_fit();
            self.labels.shrink_to_fit();
            self.seqs.shrink_to_fit();
            self.claimed.shrink_to_fit();
            self.rows.shrink_to_fit();
            if let Some(c) = &mut self.codes {
                c.codes.shrink_to_fit();
                c.scales.shrink_to_fit();
                c.norms.shrink_to_fit();
            }
        }
    }

    pub(crate) fn memory_bytes(&self) -> usize {
        self.data.capacity() * 4
            + self.labels.capacity() * 8
            + self.seqs.capacity() * 8
            + self.claimed.capacity()
            + self.rows.capacity() * 17
            + self.codes.as_ref().map_or(0, |c| {
                c.codes.capacity() + (c.scales.capacity() + c.norms.capacity()) * 4
            })
    }

    /// Exact distances to every row `filter` passes that `keep` accepts.
    pub(crate) fn exact(
        &self,
        dim: usize,
        exact: &ExactQuery,
        filter: LabelFilter<'_>,
        keep: impl Fn(f32) -> bool,
    ) -> Vec<Neighbor> {
        self.labels
            .iter()
            .enumerate()
            .filter(|(_, &l)| filter.passes(l))
            .map(|(r, &label)| Neighbor {
                label,
                distance: exact.distance(self.row(dim, r)),
            })
            .filter(|n| keep(n.distance))
            .collect()
    }

    /// The `k` nearest rows `filter` passes, with exact distances. A long coded tail
    /// is ranked by its codes (`query` is the graph's form of the query) and only a
    /// short list is measured exactly: its size, `max(4k, k + 32)`, keeps the estimates'
    /// rank errors out of the top `k` (a brute-force ranking by codes has none of a
    /// walk's other losses).
    pub(crate) fn nearest(
        &self,
        dim: usize,
        exact: &ExactQuery,
        query: &Query,
        k: usize,
        filter: LabelFilter<'_>,
    ) -> Vec<Neighbor> {
        let coded = match (&self.codes, query) {
            (Some(c), Query::I8 { .. }) if self.len() > CODED_ABOVE => c,
            _ => return top_k(self.exact(dim, exact, filter, |_| true), k),
        };
        let short = (4 * k).max(k + 32);
        let mut best: BinaryHeap<Cand> = BinaryHeap::with_capacity(short + 1);
        for (r, &label) in self.labels.iter().enumerate() {
            if !filter.passes(label) {
                continue;
            }
            let d = coded.estimate(dim, query, r);
            if best.len() < short {
                best.push(Cand { d, s: r as u32 });
            } else if best.peek().is_some_and(|w| d < w.d) {
                best.pop();
                best.push(Cand { d, s: r as u32 });
            }
        }
        let measured = best
            .into_iter()
            .map(|c| Neighbor {
                label: self.labels[c.s as usize],
                distance: exact.distance(self.row(dim, c.s as usize)),
            })
            .collect();
        top_k(measured, k)
    }
}

impl TailCodes {
    /// Codes row `r` from `v`, as `Graph::alloc` codes a slot.
    fn set(&mut self, dim: usize, r: usize, v: &[f32]) {
        let n = quant::norm(v);
        let out = &mut self.codes[r * dim..(r + 1) * dim];
        self.scales[r] = if self.metric == Metric::Cosine && n > 0.0 {
            let unit: Vec<f32> = v.iter().map(|x| x / n).collect();
            quant::quantize_i8(&unit, out)
        } else {
            quant::quantize_i8(v, out)
        };
        self.norms[r] = n;
    }

    /// The graph's INT8 distance estimate between `query` and row `r`.
    fn estimate(&self, dim: usize, query: &Query, r: usize) -> f32 {
        let Query::I8 {
            codes,
            scale,
            norm2,
        } = query
        else {
            return f32::INFINITY;
        };
        let row = &self.codes[r * dim..(r + 1) * dim];
        i8_distance(
            self.metric,
            (codes, *scale, *norm2),
            (row, self.scales[r], self.norms[r]),
        )
    }
}
