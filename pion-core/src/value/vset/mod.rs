//! Redis 8 vector sets: named elements, each with a vector and optional JSON
//! attributes, searched by cosine similarity.
//!
//! Every vector is normalised to unit length when it is added (its original length is
//! kept, so `VEMB` can give back the vector it was sent) and stored the way Redis
//! stores it: 8-bit codes with a per-vector range (`Q8`, the default), full f32
//! (`NOQUANT`) or one sign bit per dimension (`BIN`). Similarity scores are computed
//! from that representation with Redis's formulas, so scores match Redis's to the last
//! digit; the [`VectorIndex`] finds the candidates. A `Q8` element's codes and a
//! `NOQUANT` element's vector live in the index alone: the index codes the dequantised
//! unit vector, which gives back exactly Redis's codes (each is `c·range/127` scaled
//! by `127/range` again, an error far below half a step), and stores a `NOQUANT`
//! set's unit vectors as given (`IndexParams::unit_inputs`), so the set keeps only
//! the range and reads the rest from the index (see [`VectorSetValue::vector`]).
//! Before that, a set held each vector twice, 1.6× Redis's memory.
//!
//! `REDUCE` projects input vectors to fewer (or more) dimensions with a random
//! Gaussian matrix. The matrix is drawn from a generator seeded by the two dimensions
//! alone, so replaying the log (or loading a snapshot) rebuilds the same projection;
//! it is not Redis's matrix, so projected vectors differ from Redis's.

pub mod codec;
mod label_slots;
mod stored;

pub use stored::{normalize, Element, Hit, Projection, Stored, VQuant, MAX_PROJECTION_CELLS};

use std::borrow::Cow;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use ahash::AHashMap;

use label_slots::LabelSlots;

use crate::vector::{Algorithm, IndexParams, Metric, SearchOptions, VectorIndex};

/// Process-wide counter behind `VINFO`'s `vset-uid`.
static NEXT_UID: AtomicU64 = AtomicU64::new(0);

/// A vector set.
pub struct VectorSetValue {
    dim: usize,
    quant: VQuant,
    m: usize,
    projection: Option<Projection>,
    uid: u64,
    node_uids: u64,
    by_name: AHashMap<Vec<u8>, u64>,
    /// Dense element storage (for `VRANDMEMBER`); `slot_of` maps labels into it.
    slots: Vec<(u64, Element)>,
    slot_of: LabelSlots,
    next_label: u64,
    attributes: usize,
    /// Shared with [`SharedWalk`]s, which search it with the set's key unlocked; the
    /// index takes its own locks, so a walk and a write to the set may overlap.
    index: Arc<VectorIndex>,
}

/// A vector set's graph, detached from the set so that a `VSIM` walk runs with the
/// set's key unlocked: two server threads searching one set do not queue on its
/// shard, as Redis 8 runs `VSIM` on its own threads. The walk only proposes labels;
/// [`VectorSetValue::rank`] scores them under the lock again, against the elements as
/// they are then (an element removed meanwhile drops out).
#[derive(Clone)]
pub struct SharedWalk {
    index: Arc<VectorIndex>,
    uid: u64,
}

impl SharedWalk {
    /// The labels of up to `count` elements most similar to a unit query, by the
    /// index's own (approximate) distance; `ef`: its candidate list.
    pub fn candidates(&self, unit_query: &[f32], count: usize, ef: Option<usize>) -> Vec<u64> {
        let opts = SearchOptions {
            ef,
            ..SearchOptions::default()
        };
        let hits = self.index.search(unit_query, count, &opts);
        hits.into_iter().map(|n| n.label).collect()
    }

    /// The `vset-uid` of the set it came from: labels mean the same elements only in
    /// that set.
    pub fn uid(&self) -> u64 {
        self.uid
    }
}

impl VectorSetValue {
    /// An empty set of `dim`-dimensional vectors (after `projection`, if any).
    pub fn new(dim: usize, quant: VQuant, m: usize, projection: Option<Projection>) -> Self {
        let mut params = IndexParams::new(dim, Metric::Cosine, Algorithm::Hnsw);
        params.quantization = quant.index_quantization();
        params.m = m;
        // A NOQUANT set's unit vectors go in as they are, so the index's rows are the
        // set's vectors bit for bit and stand in for them.
        params.unit_inputs = quant == VQuant::NoQuant;
        VectorSetValue {
            dim,
            quant,
            m,
            projection,
            uid: NEXT_UID.fetch_add(1, Ordering::Relaxed),
            node_uids: 0,
            by_name: AHashMap::new(),
            slots: Vec::new(),
            slot_of: LabelSlots::default(),
            next_label: 0,
            attributes: 0,
            index: Arc::new(VectorIndex::new(params)),
        }
    }

    /// Dimensions of the stored vectors.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Storage kind.
    pub fn quant(&self) -> VQuant {
        self.quant
    }

    /// HNSW `M`.
    pub fn m(&self) -> usize {
        self.m
    }

    /// The `REDUCE` projection, if any.
    pub fn projection(&self) -> Option<&Projection> {
        self.projection.as_ref()
    }

    /// `VINFO`'s `vset-uid`.
    pub fn uid(&self) -> u64 {
        self.uid
    }

    /// `VINFO`'s `hnsw-max-node-uid`: nodes ever inserted (updates insert anew).
    pub fn max_node_uid(&self) -> u64 {
        self.node_uids
    }

    /// `VINFO`'s `max-level`.
    pub fn max_level(&self) -> usize {
        self.index.stats().max_level
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether there is no element.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Number of elements with attributes.
    pub fn attributes_count(&self) -> usize {
        self.attributes
    }

    /// The label of an element.
    pub fn label(&self, name: &[u8]) -> Option<u64> {
        self.by_name.get(name).copied()
    }

    /// An element by label.
    pub fn element(&self, label: u64) -> Option<&Element> {
        self.slot_of.get(label).map(|s| &self.slots[s].1)
    }

    /// An element by name.
    pub fn get(&self, name: &[u8]) -> Option<&Element> {
        self.label(name).and_then(|l| self.element(l))
    }

    /// The element at a dense position (`0..len()`), for random picks.
    pub fn at(&self, pos: usize) -> Option<&Element> {
        self.slots.get(pos).map(|(_, e)| e)
    }

    /// Every element, in storage order.
    pub fn elements(&self) -> impl Iterator<Item = (u64, &Element)> {
        self.slots.iter().map(|(l, e)| (*l, e))
    }

    /// Projects (when the set has a projection) and normalises an input vector:
    /// the unit vector and its length.
    pub fn prepare(&self, input: &[f32]) -> (Vec<f32>, f32) {
        let mut v = match &self.projection {
            Some(p) if input.len() == p.input => p.apply(input),
            _ => input.to_vec(),
        };
        let norm = normalize(&mut v);
        (v, norm)
    }

    /// Adds or replaces an element from an input vector of the set's input dimension
    /// (the caller checked it). `attr`: `Some` sets (an empty value removes), `None`
    /// keeps. True when the element is new.
    pub fn insert(&mut self, name: &[u8], input: &[f32], attr: Option<&[u8]>) -> bool {
        let (unit, norm) = self.prepare(input);
        self.insert_unit(name, &unit, norm, attr)
    }

    /// Adds or replaces an element from a unit vector of the set's dimension.
    pub fn insert_unit(
        &mut self,
        name: &[u8],
        unit: &[f32],
        norm: f32,
        attr: Option<&[u8]>,
    ) -> bool {
        let vector = Stored::quantize(unit, self.quant);
        self.insert_stored(name, vector, norm, attr.map(<[u8]>::to_vec))
    }

    fn insert_stored(
        &mut self,
        name: &[u8],
        vector: Stored,
        norm: f32,
        attr: Option<Vec<u8>>,
    ) -> bool {
        self.node_uids += 1;
        let attr = attr.filter(|a| !a.is_empty());
        let searchable = vector.dequantize(self.dim);
        if let Some(label) = self.label(name) {
            // Every named label has a slot (`by_name` and `slot_of` change together).
            let Some(slot) = self.slot_of.get(label) else {
                return false;
            };
            let e = &mut self.slots[slot].1;
            e.vector = vector;
            e.norm = norm;
            if let Some(a) = attr {
                if e.attr.is_none() {
                    self.attributes += 1;
                }
                e.attr = Some(a);
            }
            self.upsert_index(label, &searchable);
            self.hand_vector_to_index(slot);
            return false;
        }
        let label = self.next_label;
        self.next_label += 1;
        if attr.is_some() {
            self.attributes += 1;
        }
        self.by_name.insert(name.to_vec(), label);
        let slot = self.slots.len();
        self.slot_of.insert(label, slot);
        self.slots.push((
            label,
            Element {
                name: name.to_vec(),
                vector,
                norm,
                attr,
            },
        ));
        self.upsert_index(label, &searchable);
        self.hand_vector_to_index(slot);
        true
    }

    /// Drops the `Q8` codes or `NOQUANT` vector of the element at `slot` where the
    /// index holds the same (always, for a linked element with a non-zero `Q8` range
    /// or any `NOQUANT` vector; the check keeps the set right should the two ever
    /// differ, as a graph saved before `unit_inputs` existed would).
    fn hand_vector_to_index(&mut self, slot: usize) {
        let (label, e) = &mut self.slots[slot];
        match &mut e.vector {
            Stored::Q8 { codes, range } => {
                if *range != 0.0
                    && !codes.is_empty()
                    && self.index.i8_codes(*label).as_ref() == Some(codes)
                {
                    *codes = Vec::new();
                }
            }
            Stored::F32(v) => {
                let bits = |x: &f32| x.to_bits();
                let same = self
                    .index
                    .f32_row(*label)
                    .is_some_and(|row| row.iter().map(bits).eq(v.iter().map(bits)));
                if !v.is_empty() && same {
                    *v = Vec::new();
                }
            }
            Stored::Bin(_) => {}
        }
    }

    /// An element's vector as stored, its `Q8` codes or `NOQUANT` vector read back
    /// from the index where the set handed them over (an empty list stands for that:
    /// a set's dimension is never 0).
    pub fn vector<'a>(&self, label: u64, e: &'a Element) -> Cow<'a, Stored> {
        match &e.vector {
            Stored::F32(v) if v.is_empty() => {
                let row = self.index.f32_row(label);
                debug_assert!(row.is_some(), "handed-over vectors are in the index");
                Cow::Owned(Stored::F32(row.unwrap_or_else(|| vec![0.0; self.dim])))
            }
            Stored::Q8 { codes, range } if codes.is_empty() => {
                let codes = self.index.i8_codes(label);
                debug_assert!(codes.is_some(), "handed-over codes are in the index");
                Cow::Owned(Stored::Q8 {
                    codes: codes.unwrap_or_else(|| vec![0; self.dim]),
                    range: *range,
                })
            }
            stored => Cow::Borrowed(stored),
        }
    }

    /// Adds a stored element under its saved label without linking it (snapshot
    /// loading: [`VectorSetValue::restore_graph`] comes after). False if the element
    /// does not fit the set or its name or label is taken.
    pub fn restore_element_at(&mut self, label: u64, e: Element) -> bool {
        if !self.fits(&e) || self.slot_of.contains(label) {
            return false;
        }
        self.node_uids += 1;
        let attr = e.attr.filter(|a| !a.is_empty());
        if attr.is_some() {
            self.attributes += 1;
        }
        self.next_label = self.next_label.max(label + 1);
        self.by_name.insert(e.name.clone(), label);
        self.slot_of.insert(label, self.slots.len());
        self.slots.push((label, Element { attr, ..e }));
        true
    }

    /// Installs a saved graph for the elements restored with
    /// [`VectorSetValue::restore_element_at`]; when it does not load or does not fit,
    /// links every element again. Returns whether the saved graph was used.
    pub fn restore_graph(&mut self, graph: &[u8]) -> bool {
        let fits = VectorIndex::read_from(graph).ok().filter(|g| {
            g.params() == self.index.params()
                && g.len() == self.slots.len()
                && self.slots.iter().all(|(l, _)| g.contains(*l))
        });
        let used = if let Some(g) = fits {
            self.index = Arc::new(g);
            true
        } else {
            for (label, e) in &self.slots {
                let v = self.vector(*label, e).dequantize(self.dim);
                let _ = self.index.upsert_linked(*label, &v);
            }
            false
        };
        for slot in 0..self.slots.len() {
            self.hand_vector_to_index(slot);
        }
        used
    }

    /// The graph, serialised (for a snapshot).
    pub fn graph_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.index.write_to(&mut out);
        out
    }

    fn upsert_index(&self, label: u64, v: &[f32]) {
        // A zero vector has no direction: the index (cosine) keeps a placeholder so the
        // element is still found; scores come from the stored vector anyway.
        // Linked at once, as Redis's VADD does: a vector set has no background builder.
        let ok = self.index.upsert_linked(label, v).is_ok();
        debug_assert!(ok, "vectors are finite and of the set's dimension");
    }

    /// Removes an element; false if absent.
    pub fn remove(&mut self, name: &[u8]) -> bool {
        let Some(label) = self.by_name.remove(name) else {
            return false;
        };
        self.index.remove(label);
        let Some(slot) = self.slot_of.remove(label) else {
            return true;
        };
        let (_, removed) = self.slots.swap_remove(slot);
        if removed.attr.is_some() {
            self.attributes -= 1;
        }
        if let Some((moved, _)) = self.slots.get(slot) {
            self.slot_of.insert(*moved, slot);
        }
        true
    }

    /// Sets (non-empty) or removes (empty) an element's attributes; false if the
    /// element is absent.
    pub fn set_attr(&mut self, name: &[u8], attr: &[u8]) -> bool {
        let Some(slot) = self.label(name).and_then(|l| self.slot_of.get(l)) else {
            return false;
        };
        let e = &mut self.slots[slot].1;
        let had = e.attr.is_some();
        e.attr = (!attr.is_empty()).then(|| attr.to_vec());
        match (had, e.attr.is_some()) {
            (false, true) => self.attributes += 1,
            (true, false) => self.attributes -= 1,
            _ => {}
        }
        true
    }

    /// The unit query vector `VSIM … ELE` uses for an element: an f32 vector as
    /// stored; codes dequantised and normalised again (as Redis does, which moves the
    /// range by an ulp and shows in the last digits of scores).
    pub fn element_query(&self, label: u64) -> Option<Vec<f32>> {
        self.element(label).map(|e| {
            let stored = self.vector(label, e);
            let mut v = stored.dequantize(self.dim);
            if !matches!(*stored, Stored::F32(_)) {
                normalize(&mut v);
            }
            v
        })
    }

    /// The vector `VEMB` returns for the element under `label`: the stored vector
    /// scaled back to its length (`BIN`: the signs only).
    pub fn embedding(&self, label: u64, e: &Element) -> Vec<f32> {
        match &*self.vector(label, e) {
            stored @ Stored::Bin(_) => stored.dequantize(self.dim),
            Stored::F32(v) => v.iter().map(|x| x * e.norm).collect(),
            Stored::Q8 { codes, range } => codes
                .iter()
                .map(|&c| f32::from(c) * range / 127.0 * e.norm)
                .collect(),
        }
    }

    /// The `count` most similar elements to a unit query vector that `accept` (when
    /// given) lets through, most similar first. `exact` scans every element
    /// (`TRUTH`); otherwise the index proposes candidates (`ef`: its candidate list)
    /// and they are ranked by the stored vectors' own similarity, as Redis ranks them.
    /// With `accept`, the walk puts at most `filter_effort` elements to it
    /// (`FILTER-EF`; `None`: as many as finding `count` takes).
    pub fn search(
        &self,
        unit_query: &[f32],
        count: usize,
        ef: Option<usize>,
        exact: bool,
        accept: Option<&(dyn Fn(&Element) -> bool + Sync)>,
        filter_effort: Option<usize>,
    ) -> Vec<Hit> {
        if exact {
            let q = Stored::quantize(unit_query, self.quant);
            let hits = self
                .slots
                .iter()
                .filter(|(_, e)| accept.is_none_or(|f| f(e)))
                .map(|(label, e)| Hit {
                    label: *label,
                    distance: q.distance(&self.vector(*label, e), self.dim),
                })
                .collect();
            return best(hits, count);
        }
        let Some(accept) = accept else {
            return self.rank(
                unit_query,
                self.shared_walk().candidates(unit_query, count, ef),
                count,
            );
        };
        let filter = |label: u64| self.element(label).is_some_and(accept);
        // The element's line (its attributes' pointer) asked for a few tests ahead:
        // at a 1 % filter the walk tests some 20,000 elements a query, each a miss.
        let ahead = |label: u64| {
            if let Some(slot) = self.slot_of.get(label) {
                kernels::prefetch_line(&self.slots[slot].1.attr);
            }
        };
        let opts = SearchOptions {
            ef,
            filter: Some(&filter),
            filter_ahead: Some(&ahead),
            filter_effort,
            ..SearchOptions::default()
        };
        let labels = self
            .index
            .search(unit_query, count, &opts)
            .into_iter()
            .map(|n| n.label);
        self.rank(unit_query, labels, count)
    }

    /// The graph, detached for a walk with the key unlocked.
    pub fn shared_walk(&self) -> SharedWalk {
        SharedWalk {
            index: Arc::clone(&self.index),
            uid: self.uid,
        }
    }

    /// Scores candidate labels against a unit query by the stored vectors (labels no
    /// longer in the set are skipped) and keeps the `count` most similar, most similar
    /// first.
    pub fn rank(
        &self,
        unit_query: &[f32],
        labels: impl IntoIterator<Item = u64>,
        count: usize,
    ) -> Vec<Hit> {
        let q = Stored::quantize(unit_query, self.quant);
        let hits = labels
            .into_iter()
            .filter_map(|label| {
                let e = self.element(label)?;
                Some(Hit {
                    label,
                    distance: q.distance(&self.vector(label, e), self.dim),
                })
            })
            .collect();
        best(hits, count)
    }

    /// The graph neighbours of an element, top layer first, with their distances (as
    /// `VLINKS` reports them). An element still waiting to be linked has one empty
    /// layer.
    pub fn links(&self, label: u64) -> Option<Vec<Vec<Hit>>> {
        let e = self.vector(label, self.element(label)?);
        let layers = self.index.neighbors(label)?;
        Some(
            layers
                .into_iter()
                .rev()
                .map(|layer| {
                    layer
                        .into_iter()
                        .filter_map(|n| {
                            self.element(n).map(|other| Hit {
                                label: n,
                                distance: e.distance(&self.vector(n, other), self.dim),
                            })
                        })
                        .collect()
                })
                .collect(),
        )
    }

    /// Rebuilds a set from stored parts (snapshot loading).
    pub fn restore(
        dim: usize,
        quant: VQuant,
        m: usize,
        projection_input: Option<usize>,
    ) -> VectorSetValue {
        let projection = projection_input.map(|input| Projection::new(input, dim));
        VectorSetValue::new(dim, quant, m, projection)
    }

    /// Adds an element exactly as stored (snapshot loading); false if the stored
    /// vector does not fit the set.
    pub fn restore_element(&mut self, e: Element) -> bool {
        if !self.fits(&e) || self.by_name.contains_key(&e.name) {
            return false;
        }
        self.insert_stored(&e.name, e.vector, e.norm, e.attr);
        true
    }

    /// Whether a stored element matches the set's dimension and quantisation.
    fn fits(&self, e: &Element) -> bool {
        let fits = match &e.vector {
            Stored::F32(v) => v.len() == self.dim && self.quant == VQuant::NoQuant,
            Stored::Q8 { codes, range } => {
                codes.len() == self.dim && self.quant == VQuant::Q8 && range.is_finite()
            }
            Stored::Bin(b) => b.len() == self.dim.div_ceil(64) && self.quant == VQuant::Bin,
        };
        if !fits || !e.norm.is_finite() || self.by_name.contains_key(&e.name) {
            return false;
        }
        match &e.vector {
            Stored::F32(v) => v.iter().all(|x| x.is_finite()),
            _ => true,
        }
    }

    /// Approximate bytes held.
    pub fn mem_usage(&self) -> usize {
        let per_vector = match self.quant {
            // The vectors and codes are the index's (counted with it); a Q8 element
            // keeps its range.
            VQuant::NoQuant => 0,
            VQuant::Q8 => 4,
            VQuant::Bin => self.dim.div_ceil(64) * 8,
        };
        let names: usize = self
            .slots
            .iter()
            .take(64)
            .map(|(_, e)| e.name.len() * 2 + e.attr.as_ref().map_or(0, Vec::len))
            .sum::<usize>()
            .checked_div(self.slots.len().min(64))
            .unwrap_or(0);
        self.len() * (per_vector + names + 96)
            + self.index.stats().memory_bytes
            + self.projection.as_ref().map_or(0, |p| p.matrix.len() * 4)
    }
}

/// The `count` hits of least distance, nearest first (ties by label, so equal scores
/// come in a stable order).
fn best(mut hits: Vec<Hit>, count: usize) -> Vec<Hit> {
    hits.sort_by(|a, b| {
        a.distance
            .total_cmp(&b.distance)
            .then(a.label.cmp(&b.label))
    });
    hits.truncate(count);
    hits
}

impl Clone for VectorSetValue {
    /// A copy with its own index, rebuilt from the stored vectors (a new `vset-uid`).
    fn clone(&self) -> Self {
        let mut copy = VectorSetValue::new(self.dim, self.quant, self.m, self.projection.clone());
        for (label, e) in &self.slots {
            let vector = self.vector(*label, e).into_owned();
            copy.insert_stored(&e.name, vector, e.norm, e.attr.clone());
        }
        copy.node_uids = self.node_uids;
        copy
    }
}

impl PartialEq for VectorSetValue {
    /// Equal when the parameters and every element (vector, length, attributes) are.
    fn eq(&self, other: &Self) -> bool {
        self.dim == other.dim
            && self.quant == other.quant
            && self.m == other.m
            && self.projection.as_ref().map(|p| p.input)
                == other.projection.as_ref().map(|p| p.input)
            && self.len() == other.len()
            && self.slots.iter().all(|(label, e)| {
                other.label(&e.name).is_some_and(|ol| {
                    other.element(ol).is_some_and(|o| {
                        o.name == e.name
                            && o.norm == e.norm
                            && o.attr == e.attr
                            && other.vector(ol, o) == self.vector(*label, e)
                    })
                })
            })
    }
}

impl fmt::Debug for VectorSetValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VectorSetValue")
            .field("dim", &self.dim)
            .field("quant", &self.quant)
            .field("m", &self.m)
            .field(
                "projection_input",
                &self.projection.as_ref().map(|p| p.input),
            )
            .field("len", &self.len())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn q8_codes_and_distance_match_redis_on_simple_vectors() {
        let mut v = vec![0.5, 0.5, 0.0];
        let norm = normalize(&mut v);
        assert!((norm - std::f32::consts::FRAC_1_SQRT_2).abs() < 1e-6);
        let s = Stored::quantize(&v, VQuant::Q8);
        assert_eq!(s.raw_bytes(), vec![127, 127, 0]);
        let a = Stored::quantize(&[1.0, 0.0, 0.0], VQuant::Q8);
        let d = a.distance(&s, 3);
        assert!((d - (1.0 - std::f32::consts::FRAC_1_SQRT_2)).abs() < 1e-6);
    }

    #[test]
    fn bin_distance_counts_opposite_signs() {
        let a = Stored::quantize(&[1.0, -2.0, 0.0, 4.0, -0.5], VQuant::Bin);
        let b = Stored::quantize(&[1.0, 2.0, 0.0, 4.0, -0.5], VQuant::Bin);
        assert_eq!(a.raw_bytes()[0], 9);
        assert_eq!(a.distance(&b, 5), 0.4);
    }

    #[test]
    fn insert_update_remove_keep_counts() {
        let mut s = VectorSetValue::new(2, VQuant::Q8, 16, None);
        assert!(s.insert(b"a", &[1.0, 0.0], Some(b"{\"x\":1}")));
        assert!(s.insert(b"b", &[0.0, 1.0], None));
        assert!(!s.insert(b"a", &[1.0, 1.0], None));
        assert_eq!(s.attributes_count(), 1);
        assert!(s.remove(b"a"));
        assert_eq!(s.attributes_count(), 0);
        assert_eq!(s.len(), 1);
        assert_eq!(s.at(0).map(|e| e.name.as_slice()), Some(&b"b"[..]));
        let c = s.clone();
        assert_eq!(c, s);
    }

    /// A Q8 set keeps no codes of its own once the index holds them, nor a NOQUANT
    /// set its vectors, and each reads back exactly what Redis's storage gives the
    /// unit vector: after inserts, an update, a zero vector, a copy and a snapshot
    /// round trip.
    fn vectors_live_in_the_index_and_read_back_exactly(quant: VQuant) {
        let dim = 48;
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
        };
        let mut s = VectorSetValue::new(dim, quant, 16, None);
        let mut want = Vec::new();
        for i in 0..300 {
            let v: Vec<f32> = (0..dim).map(|_| next() * (1.0 + i as f32)).collect();
            let (unit, _) = s.prepare(&v);
            s.insert(format!("e{i}").as_bytes(), &v, None);
            want.push((format!("e{i}"), Stored::quantize(&unit, quant)));
        }
        let v: Vec<f32> = (0..dim).map(|_| next()).collect();
        let (unit, _) = s.prepare(&v);
        s.insert(b"e3", &v, None);
        want[3].1 = Stored::quantize(&unit, quant);
        s.insert(b"zero", &vec![0.0; dim], None);
        want.push(("zero".into(), Stored::quantize(&vec![0.0; dim], quant)));
        let check = |s: &VectorSetValue| {
            for (name, stored) in &want {
                let label = s.label(name.as_bytes()).expect("member");
                let e = s.element(label).expect("member");
                assert_eq!(&*s.vector(label, e), stored, "{name}");
                let handed = match &e.vector {
                    Stored::Q8 { codes, .. } => codes.is_empty(),
                    Stored::F32(v) => v.is_empty(),
                    Stored::Bin(_) => false,
                };
                // A Q8 zero vector (range 0) keeps its own all-zero codes.
                let kept = quant == VQuant::Q8 && name == "zero";
                assert_eq!(handed, !kept, "{name}: handed to the index");
            }
        };
        check(&s);
        let copy = s.clone();
        check(&copy);
        assert_eq!(copy, s);
        let mut bytes = Vec::new();
        codec::encode(&s, &mut bytes);
        let back = codec::decode(&mut crate::util::codec::Reader::new(&bytes)).expect("decodes");
        check(&back);
        assert_eq!(back, s);
    }

    #[test]
    fn q8_codes_live_in_the_index_and_read_back_exactly() {
        vectors_live_in_the_index_and_read_back_exactly(VQuant::Q8);
    }

    #[test]
    fn noquant_vectors_live_in_the_index_and_read_back_exactly() {
        vectors_live_in_the_index_and_read_back_exactly(VQuant::NoQuant);
    }

    #[test]
    fn projection_is_deterministic() {
        let a = Projection::new(8, 3);
        let b = Projection::new(8, 3);
        assert_eq!(a, b);
        assert_eq!(a.apply(&[1.0; 8]).len(), 3);
    }
}
