//! The vectors of a quantised graph as they were given, one f32 row per slot, so
//! that a search returns exact distances without reading them back from where they
//! came from.
//!
//! The walk reads INT8 codes: a quarter of the bytes, and 2.5x the queries per second
//! of a walk over f32 rows at the same `ef`. Its distances are estimates, though, and
//! its candidates in the order of the estimates. Re-ranking every candidate against
//! its exact row recovers the recall of an f32 walk at the same `ef` and gives the
//! distances a caller returns. Reading those rows back from the documents instead
//! (a hash lookup per candidate, scattered over the keyspace) cost more than the
//! walk itself: about 6 µs a candidate, 124 of a query's 263 µs.

use super::graph::Cand;
use super::{ExactQuery, Metric};
use crate::util::hugepages::advise_huge_pages;

/// One f32 row per slot, in slot order.
#[derive(Debug, Clone, Default)]
pub(crate) struct ExactRows {
    dim: usize,
    rows: Vec<f32>,
}

impl ExactRows {
    /// Rows of `dim` elements, none yet.
    pub(crate) fn new(dim: usize) -> ExactRows {
        ExactRows {
            dim,
            rows: Vec::new(),
        }
    }

    /// Room for `n` more rows; the rows sit on huge pages where the system allows.
    pub(crate) fn reserve(&mut self, n: usize) {
        self.rows.reserve_exact(n * self.dim);
        advise_huge_pages(&self.rows);
    }

    /// Appends a zero row for a new slot.
    pub(crate) fn grow(&mut self) {
        self.rows.resize(self.rows.len() + self.dim, 0.0);
    }

    /// Sets slot `s`'s row (a slot past the end is ignored: it was never grown).
    pub(crate) fn set(&mut self, s: u32, v: &[f32]) {
        let i = s as usize * self.dim;
        if let Some(row) = self.rows.get_mut(i..i + self.dim) {
            row.copy_from_slice(v);
        }
    }

    /// Appends a row (loading a saved graph, slot by slot).
    pub(crate) fn push(&mut self, v: &[f32]) {
        self.rows.extend_from_slice(v);
    }

    /// Slot `s`'s row.
    pub(crate) fn row(&self, s: u32) -> Option<&[f32]> {
        let i = s as usize * self.dim;
        self.rows.get(i..i + self.dim)
    }

    /// Replaces each candidate's distance with its exact one and sorts them by it,
    /// nearest first. The rows are asked of memory all at once before the first
    /// distance, so their loads overlap.
    pub(crate) fn rerank(&self, metric: Metric, query: &[f32], cands: &mut [Cand]) {
        let exact = ExactQuery::new(metric, query);
        let prefetch = |c: Option<&Cand>| {
            if let Some(row) = c.and_then(|c| self.row(c.s)) {
                kernels::prefetch(as_bytes(row));
            }
        };
        prefetch(cands.first());
        for i in 0..cands.len() {
            prefetch(cands.get(i + 1));
            let c = &mut cands[i];
            if let Some(row) = self.row(c.s) {
                c.d = exact.distance(row);
            }
        }
        cands.sort_unstable();
    }

    /// Bytes held.
    pub(crate) fn memory_bytes(&self) -> usize {
        self.rows.capacity() * 4
    }
}

/// The bytes of a row (for cache hints).
pub(crate) fn as_bytes(row: &[f32]) -> &[u8] {
    // SAFETY: f32 has no padding, so every byte of the row is initialised, and u8
    // has no alignment to meet; the view covers exactly `row`.
    unsafe { std::slice::from_raw_parts(row.as_ptr().cast::<u8>(), std::mem::size_of_val(row)) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rerank_orders_by_the_exact_rows() {
        let mut rows = ExactRows::new(2);
        rows.reserve(3);
        for _ in 0..3 {
            rows.grow();
        }
        rows.set(0, &[3.0, 0.0]);
        rows.set(1, &[1.0, 0.0]);
        rows.set(2, &[2.0, 0.0]);
        rows.set(9, &[5.0, 5.0]);
        assert_eq!(rows.row(2), Some(&[2.0, 0.0][..]));
        assert_eq!(rows.row(3), None);
        // Estimates in the wrong order: the exact rows put them right.
        let mut cands = [
            Cand { d: 0.1, s: 0 },
            Cand { d: 0.2, s: 1 },
            Cand { d: 0.3, s: 2 },
        ];
        rows.rerank(Metric::L2, &[0.0, 0.0], &mut cands);
        let got: Vec<(u32, f32)> = cands.iter().map(|c| (c.s, c.d)).collect();
        assert_eq!(got, vec![(1, 1.0), (2, 4.0), (0, 9.0)]);
        assert_eq!(rows.memory_bytes() % 4, 0);
    }
}
