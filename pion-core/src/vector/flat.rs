//! Exact storage and search: full-precision vectors in one contiguous array, scanned
//! whole. Backs `FLAT` fields and the not-yet-linked tail of graph indexes.

use ahash::AHashMap;
use parking_lot::RwLock;

use super::{top_k, ExactQuery, LabelFilter, Metric, Neighbor};

/// Vectors by label, scanned exactly.
pub struct FlatStore {
    dim: usize,
    metric: Metric,
    inner: RwLock<Inner>,
}

#[derive(Default)]
struct Inner {
    /// Row-major vectors; row `i` belongs to `labels[i]`.
    data: Vec<f32>,
    labels: Vec<u64>,
    rows: AHashMap<u64, usize>,
}

impl FlatStore {
    /// An empty store of `dim`-dimensional vectors.
    pub fn new(dim: usize, metric: Metric) -> FlatStore {
        FlatStore {
            dim,
            metric,
            inner: RwLock::new(Inner::default()),
        }
    }

    /// Inserts or replaces a vector (the caller checked its length).
    pub fn upsert(&self, label: u64, v: &[f32]) {
        let mut inner = self.inner.write();
        if let Some(&row) = inner.rows.get(&label) {
            inner.data[row * self.dim..(row + 1) * self.dim].copy_from_slice(v);
            return;
        }
        let row = inner.labels.len();
        inner.data.extend_from_slice(v);
        inner.labels.push(label);
        inner.rows.insert(label, row);
    }

    /// Removes a label (the last row moves into its place).
    pub fn remove(&self, label: u64) -> bool {
        let mut inner = self.inner.write();
        let Some(row) = inner.rows.remove(&label) else {
            return false;
        };
        let last = inner.labels.len() - 1;
        if row != last {
            let moved = inner.labels[last];
            let (dim, src) = (self.dim, last * self.dim);
            inner.data.copy_within(src..src + dim, row * dim);
            inner.labels[row] = moved;
            inner.rows.insert(moved, row);
        }
        inner.labels.pop();
        let len = inner.labels.len() * self.dim;
        inner.data.truncate(len);
        true
    }

    /// Whether a label is present.
    pub fn contains(&self, label: u64) -> bool {
        self.inner.read().rows.contains_key(&label)
    }

    /// Number of vectors.
    pub fn len(&self) -> usize {
        self.inner.read().labels.len()
    }

    /// Whether the store is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A copy of a stored vector.
    pub fn get(&self, label: u64) -> Option<Vec<f32>> {
        let inner = self.inner.read();
        let row = *inner.rows.get(&label)?;
        Some(inner.data[row * self.dim..(row + 1) * self.dim].to_vec())
    }

    /// Every label and vector, in storage order.
    pub fn drain(&self) -> Vec<(u64, Vec<f32>)> {
        let mut inner = self.inner.write();
        let out = inner
            .labels
            .iter()
            .enumerate()
            .map(|(i, &l)| (l, inner.data[i * self.dim..(i + 1) * self.dim].to_vec()))
            .collect();
        *inner = Inner::default();
        out
    }

    /// A copy of every label and vector, in storage order.
    pub fn entries(&self) -> Vec<(u64, Vec<f32>)> {
        let inner = self.inner.read();
        inner
            .labels
            .iter()
            .enumerate()
            .map(|(i, &l)| (l, inner.data[i * self.dim..(i + 1) * self.dim].to_vec()))
            .collect()
    }

    /// The distance of every accepted label to `query`, in storage order.
    fn scored(&self, inner: &Inner, query: &[f32], filter: LabelFilter<'_>) -> Vec<Neighbor> {
        let exact = ExactQuery::new(self.metric, query);
        inner
            .labels
            .iter()
            .enumerate()
            .filter(|(_, &l)| filter.passes(l))
            .map(|(i, &label)| Neighbor {
                label,
                distance: exact.distance(&inner.data[i * self.dim..(i + 1) * self.dim]),
            })
            .collect()
    }

    /// The `k` nearest accepted labels.
    pub(crate) fn search(&self, query: &[f32], k: usize, filter: LabelFilter<'_>) -> Vec<Neighbor> {
        let inner = self.inner.read();
        top_k(self.scored(&inner, query, filter), k)
    }

    /// Every accepted label within `radius`, nearest first.
    pub(crate) fn range(
        &self,
        query: &[f32],
        radius: f32,
        filter: LabelFilter<'_>,
    ) -> Vec<Neighbor> {
        let inner = self.inner.read();
        let mut all = self.scored(&inner, query, filter);
        all.retain(|n| n.distance <= radius);
        let n = all.len();
        top_k(all, n)
    }

    /// Exact search over the listed labels only (absent ones are skipped).
    pub fn search_among(&self, query: &[f32], k: usize, labels: &[u64]) -> Vec<Neighbor> {
        let inner = self.inner.read();
        let exact = ExactQuery::new(self.metric, query);
        let all = labels
            .iter()
            .filter_map(|l| inner.rows.get(l).map(|&row| (*l, row)))
            .map(|(label, row)| Neighbor {
                label,
                distance: exact.distance(&inner.data[row * self.dim..(row + 1) * self.dim]),
            })
            .collect();
        top_k(all, k)
    }

    /// Bytes held.
    pub fn memory_bytes(&self) -> usize {
        let inner = self.inner.read();
        inner.data.capacity() * 4 + inner.labels.capacity() * 8 + inner.rows.capacity() * 24
    }
}
