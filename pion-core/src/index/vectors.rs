//! A vector field's index, spoken to in document ids.
//!
//! Most fields hold one vector per document, labelled in the graph by the document's
//! id. A field of an `ON JSON` index whose path may match several values (`$.vecs[*]`,
//! `$..embedding`, filters, slices, unions) holds every vector it matches, as
//! RediSearch's multi-value vector fields do: a document is as near as its nearest
//! vector. Those vectors are labelled `id << SLOT_BITS | slot`, slots counted from 0,
//! so the labels of a document are found from its id alone and a saved graph needs
//! no table beside it. Everything above this module sees document ids only.

use std::collections::HashMap;
use std::sync::Arc;

use super::DocSet;
use crate::vector::{IndexParams, LabelBits, Neighbor, SearchOptions, VectorError, VectorIndex};

/// Bits of a multi-value label that number a document's vectors.
const SLOT_BITS: u32 = 16;

/// The most vectors one document may hold in a multi-value field.
pub const MAX_VECTORS_PER_DOCUMENT: usize = 1 << SLOT_BITS;

/// A vector field's graph (or flat store) and how its labels map to documents.
#[derive(Clone)]
pub struct FieldVectors {
    index: Arc<VectorIndex>,
    multi: bool,
}

impl FieldVectors {
    /// An empty field; `multi` when its documents may hold several vectors.
    pub fn new(params: IndexParams, multi: bool) -> FieldVectors {
        FieldVectors::with_index(VectorIndex::new(params), multi)
    }

    /// A field over an existing index (a graph loaded from a snapshot).
    pub fn with_index(index: VectorIndex, multi: bool) -> FieldVectors {
        FieldVectors {
            index: Arc::new(index),
            multi,
        }
    }

    /// The index itself, shared (linking, statistics, snapshots).
    pub fn index(&self) -> &Arc<VectorIndex> {
        &self.index
    }

    /// Whether documents may hold several vectors.
    pub fn is_multi(&self) -> bool {
        self.multi
    }

    fn label(&self, id: u64, slot: usize) -> u64 {
        if self.multi {
            id << SLOT_BITS | slot as u64
        } else {
            id
        }
    }

    fn document(&self, label: u64) -> u64 {
        if self.multi {
            label >> SLOT_BITS
        } else {
            label
        }
    }

    /// Indexes a document's vectors (one, or any number up to
    /// [`MAX_VECTORS_PER_DOCUMENT`] in a multi-value field). A refused vector leaves
    /// none of them indexed.
    pub fn insert(&self, id: u64, vectors: &[Vec<f32>]) -> Result<(), VectorError> {
        for (slot, v) in vectors.iter().enumerate() {
            if let Err(e) = self.index.upsert(self.label(id, slot), v) {
                self.remove(id);
                return Err(e);
            }
        }
        Ok(())
    }

    /// Removes a document's vectors; false if it had none.
    pub fn remove(&self, id: u64) -> bool {
        if !self.multi {
            return self.index.remove(id);
        }
        // The slots of a document are 0, 1, … without gaps: inserted so, removed together.
        let mut slot = 0;
        while slot < MAX_VECTORS_PER_DOCUMENT && self.index.remove(self.label(id, slot)) {
            slot += 1;
        }
        slot > 0
    }

    /// Whether a document has a vector here.
    pub fn contains(&self, id: u64) -> bool {
        self.index.contains(self.label(id, 0))
    }

    /// The labels of the given documents' vectors.
    fn labels_of(&self, ids: &[u64]) -> Vec<u64> {
        if !self.multi {
            return ids.to_vec();
        }
        let mut out = Vec::with_capacity(ids.len());
        for &id in ids {
            let mut slot = 0;
            while slot < MAX_VECTORS_PER_DOCUMENT && self.index.contains(self.label(id, slot)) {
                out.push(self.label(id, slot));
                slot += 1;
            }
        }
        out
    }

    /// Neighbours by label to neighbours by document, each at its nearest vector,
    /// nearest first (ties by id).
    fn by_document(&self, found: Vec<Neighbor>) -> Vec<Neighbor> {
        if !self.multi {
            return found;
        }
        let mut nearest: HashMap<u64, f32> = HashMap::with_capacity(found.len());
        for n in found {
            let d = nearest
                .entry(self.document(n.label))
                .or_insert(f32::INFINITY);
            *d = d.min(n.distance);
        }
        let mut out: Vec<Neighbor> = nearest
            .into_iter()
            .map(|(label, distance)| Neighbor { label, distance })
            .collect();
        out.sort_by(|a, b| {
            a.distance
                .total_cmp(&b.distance)
                .then(a.label.cmp(&b.label))
        });
        out
    }

    /// The `k` nearest documents, with `ef` candidates (at least `k`) and only the
    /// documents in `allowed` when given; the index may answer a set that holds few of
    /// its vectors by a scan instead of a walk, unless `walk` asks for the walk. A
    /// multi-value field widens its search until `k` distinct documents are found or
    /// the index is exhausted.
    pub fn search(
        &self,
        query: &[f32],
        k: usize,
        ef: usize,
        allowed: Option<&DocSet>,
        walk: bool,
    ) -> Vec<Neighbor> {
        // A single-value field's labels are document ids: the set is their bitmap.
        let by_label = |label: u64| allowed.is_none_or(|set| set.contains(self.document(label)));
        let (filter, filter_bits): (Option<&(dyn Fn(u64) -> bool + Sync)>, _) = match allowed {
            Some(set) if !self.multi => (None, Some(LabelBits(set.words()))),
            Some(_) => (Some(&by_label), None),
            None => (None, None),
        };
        let filter_passes = allowed.filter(|_| !walk).map(DocSet::len);
        let mut asked = k;
        loop {
            let found = self.index.search(
                query,
                asked,
                &SearchOptions {
                    ef: Some(ef.max(asked)),
                    filter,
                    filter_ahead: None,
                    filter_bits,
                    filter_passes,
                    filter_effort: None,
                },
            );
            let complete = found.len() < asked || asked >= self.index.len();
            let mut docs = self.by_document(found);
            if docs.len() >= k || complete || !self.multi {
                docs.truncate(k);
                return docs;
            }
            asked = asked.saturating_mul(2);
        }
    }

    /// The `k` nearest of the given documents, computed over each of their vectors.
    pub fn search_among(&self, query: &[f32], k: usize, ids: &[u64]) -> Vec<Neighbor> {
        let labels = self.labels_of(ids);
        // The k nearest documents' nearest vectors are among the k nearest vectors of a
        // single-value field, and among k times the most a document holds otherwise.
        let per_document = if self.multi {
            MAX_VECTORS_PER_DOCUMENT
        } else {
            1
        };
        let want = k.saturating_mul(per_document).min(labels.len());
        let found = self.index.search_among(query, want, &labels);
        let mut docs = self.by_document(found);
        docs.truncate(k);
        docs
    }

    /// Every document with a vector within `radius`, at its nearest vector, nearest
    /// first.
    pub fn range(&self, query: &[f32], radius: f32) -> Vec<Neighbor> {
        self.by_document(self.index.range(query, radius, &SearchOptions::default()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vector::{Algorithm, Metric};

    fn field(algorithm: Algorithm, multi: bool) -> FieldVectors {
        FieldVectors::new(IndexParams::new(2, Metric::L2, algorithm), multi)
    }

    #[test]
    fn a_document_is_as_near_as_its_nearest_vector() {
        for algorithm in [Algorithm::Flat, Algorithm::Hnsw] {
            let f = field(algorithm, true);
            f.insert(1, &[vec![10.0, 0.0], vec![1.0, 0.0]])
                .expect("indexed");
            f.insert(2, &[vec![2.0, 0.0]]).expect("indexed");
            f.insert(3, &[vec![5.0, 0.0], vec![6.0, 0.0], vec![7.0, 0.0]])
                .expect("indexed");
            let q = [0.0, 0.0];
            let ids =
                |v: Vec<Neighbor>| v.iter().map(|n| (n.label, n.distance)).collect::<Vec<_>>();
            assert_eq!(
                ids(f.search(&q, 3, 10, None, false)),
                vec![(1, 1.0), (2, 4.0), (3, 25.0)]
            );
            // Three documents fill two results only after the search widens: the two
            // nearest vectors both belong to document 1 when it also holds [0.5, 0].
            f.remove(1);
            f.insert(4, &[vec![0.5, 0.0], vec![0.6, 0.0], vec![0.7, 0.0]])
                .expect("indexed");
            assert_eq!(
                ids(f.search(&q, 2, 1, None, false)),
                vec![(4, 0.25), (2, 4.0)]
            );
            let mut only_three = DocSet::new();
            only_three.insert(3);
            assert_eq!(
                ids(f.search(&q, 5, 10, Some(&only_three), false)),
                vec![(3, 25.0)]
            );
            assert_eq!(
                ids(f.search_among(&q, 5, &[3, 4])),
                vec![(4, 0.25), (3, 25.0)]
            );
            assert_eq!(ids(f.range(&q, 26.0)), vec![(4, 0.25), (2, 4.0), (3, 25.0)]);
            assert!(!f.contains(1) && f.contains(3));
        }
    }

    #[test]
    fn removing_a_document_removes_every_vector_and_a_refusal_leaves_none() {
        let f = field(Algorithm::Hnsw, true);
        f.insert(7, &[vec![1.0, 1.0], vec![2.0, 2.0]])
            .expect("indexed");
        assert_eq!(f.index().len(), 2);
        assert!(f.remove(7));
        assert!(!f.remove(7));
        assert!(f.index().is_empty());
        let refused = f.insert(8, &[vec![1.0, 1.0], vec![f32::NAN, 0.0]]);
        assert_eq!(refused, Err(VectorError::NotFinite));
        assert!(f.index().is_empty() && !f.contains(8));
    }

    #[test]
    fn single_value_fields_label_vectors_by_document_id() {
        let f = field(Algorithm::Flat, false);
        f.insert(42, &[vec![3.0, 4.0]]).expect("indexed");
        assert!(f.index().contains(42));
        assert_eq!(f.search(&[0.0, 0.0], 1, 10, None, false)[0].label, 42);
    }
}
