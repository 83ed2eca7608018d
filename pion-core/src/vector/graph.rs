//! The HNSW graph (Malkov & Yashunin, "Efficient and robust approximate nearest neighbor
//! search using Hierarchical Navigable Small World graphs", 2016/2018).
//!
//! Notation of the paper:
//! * `M`: links a node keeps on layers ≥ 1; `M_max0 = 2M` on layer 0.
//! * `ef_construction`: size of the dynamic candidate list while inserting.
//! * `mL = 1/ln(M)`: a node's top layer is `⌊-ln(U(0,1))·mL⌋`, so each layer holds about
//!   `1/M` of the nodes of the layer below.
//! * Insertion greedily descends from the entry point (a node on the top layer) to the
//!   node's top layer, then on each layer from there down to 0 runs `SEARCH-LAYER` with
//!   `ef_construction` candidates and keeps `M` of them chosen by the neighbour-selection
//!   heuristic (algorithm 4): a candidate is kept only if it is nearer to the new node
//!   than to every neighbour kept so far, which spreads links over directions and keeps
//!   clustered data connected. Each chosen neighbour links back; a neighbour whose list
//!   is full re-runs the heuristic over its list plus the new node.
//!
//! Layout (like hnswlib): slots are dense `u32` ids; layer-0 lists live in one contiguous
//! array of `1 + M_max0` words per slot (count, then ids), upper lists in one arena of
//! `1 + M` words per (slot, layer). Links are atomics: readers take no lock (a torn read
//! only yields an older but valid list) and a writer takes the node's own mutex, so many
//! threads insert at once. Adding slots or freeing them needs `&mut Graph` (the owner's
//! write lock), which is brief.
//!
//! Deletion marks a slot dead (it is still traversed, never returned). `repair` then
//! reconnects every node that linked to a dead slot, re-running the heuristic over its
//! live links plus the dead slots' live links, replaces a dead entry point, and frees
//! the slots for reuse.

use std::cmp::Ordering;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering::Relaxed};

use ahash::AHashMap;
use parking_lot::Mutex;

use super::exact_rows::{as_bytes, ExactRows};
use super::quant;
use super::{Metric, Quantization};
use crate::util::hugepages::advise_huge_pages;

/// Slot flag: removed or replaced (traversed, never returned).
pub(crate) const DEAD: u8 = 1;
/// Slot flag: allocated by a build that has not finished (the pending tail answers for it).
pub(crate) const IN_FLIGHT: u8 = 2;
/// Slot flag: unused, on the free list.
pub(crate) const FREE: u8 = 4;

/// Whether a slot with these flags may be returned: linked, live and in use.
#[inline]
pub(crate) fn returnable_flags(flags: u8) -> bool {
    flags & (DEAD | IN_FLIGHT | FREE) == 0
}

/// No entry point yet.
pub(super) const NO_ENTRY: u64 = u64::MAX;

/// A candidate: distance and slot, ordered by distance then slot.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Cand {
    pub(crate) d: f32,
    pub(crate) s: u32,
}

impl Eq for Cand {}

impl Ord for Cand {
    fn cmp(&self, o: &Self) -> Ordering {
        self.d.total_cmp(&o.d).then(self.s.cmp(&o.s))
    }
}

impl PartialOrd for Cand {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

/// Stored vectors, one row per slot.
pub(crate) enum Codes {
    /// f32 rows (unit-length for COSINE).
    F32(Vec<f32>),
    /// Int8 rows and their scales (rows of unit-length vectors for COSINE).
    I8 { codes: Vec<i8>, scales: Vec<f32> },
    /// Sign bits, `binary_words(dim)` words per row.
    Bin(Vec<u64>),
}

/// A query (or a node acting as one) in the form the distance kernels take.
pub(crate) enum Query {
    /// f32 (unit-length for COSINE).
    F32(Vec<f32>),
    /// Int8 codes, scale, and the original squared norm (L2).
    I8 {
        codes: Vec<i8>,
        scale: f32,
        norm2: f32,
    },
    /// Sign bits.
    Bin(Vec<u64>),
}

/// The graph and the vectors of its nodes.
pub(crate) struct Graph {
    pub(crate) dim: usize,
    pub(crate) metric: Metric,
    pub(crate) m: usize,
    pub(crate) m0: usize,
    pub(crate) ef_construction: usize,
    pub(crate) codes: Codes,
    /// The original vector's L2 norm (rebuilds `get()` for COSINE, and `|x|²` for L2).
    pub(crate) norms: Vec<f32>,
    pub(crate) labels: Vec<u64>,
    pub(crate) levels: Vec<u8>,
    pub(crate) flags: Vec<AtomicU8>,
    pub(super) locks: Vec<Mutex<()>>,
    /// `1 + m0` words per slot: count, then neighbour slots.
    pub(crate) links0: Vec<AtomicU32>,
    /// Offset of a slot's first upper list in `upper` (`u32::MAX`: top layer 0).
    pub(crate) upper_off: Vec<u32>,
    /// `1 + m` words per (slot, layer ≥ 1).
    pub(crate) upper: Vec<AtomicU32>,
    /// Label → slot (the slot may be dead until repaired).
    pub(crate) map: AHashMap<u64, u32>,
    pub(super) free: Vec<u32>,
    /// `slot << 8 | level`, or `NO_ENTRY`.
    pub(super) entry: AtomicU64,
    entry_lock: Mutex<()>,
    /// Slots marked dead and not yet repaired.
    pub(crate) dead: AtomicUsize,
    /// Linked, returnable nodes.
    pub(crate) live: AtomicUsize,
    /// The vectors as given, when the index keeps them (see `exact_rows`).
    pub(crate) exact: Option<ExactRows>,
    /// COSINE vectors are stored as given, not divided by their norm again
    /// (`IndexParams::unit_inputs`).
    pub(crate) unit_inputs: bool,
}

impl Graph {
    /// An empty graph.
    pub(crate) fn new(
        dim: usize,
        metric: Metric,
        quant: Quantization,
        m: usize,
        ef_construction: usize,
        cap: usize,
        exact_rows: bool,
    ) -> Graph {
        let m = m.clamp(2, 255);
        let codes = match quant {
            Quantization::None => Codes::F32(Vec::new()),
            Quantization::Int8 => Codes::I8 {
                codes: Vec::new(),
                scales: Vec::new(),
            },
            Quantization::Binary => Codes::Bin(Vec::new()),
        };
        let mut g = Graph {
            dim,
            metric,
            m,
            m0: 2 * m,
            ef_construction: ef_construction.max(m),
            codes,
            norms: Vec::new(),
            labels: Vec::new(),
            levels: Vec::new(),
            flags: Vec::new(),
            locks: Vec::new(),
            links0: Vec::new(),
            upper_off: Vec::new(),
            upper: Vec::new(),
            map: AHashMap::new(),
            free: Vec::new(),
            entry: AtomicU64::new(NO_ENTRY),
            entry_lock: Mutex::new(()),
            dead: AtomicUsize::new(0),
            live: AtomicUsize::new(0),
            exact: (exact_rows && quant != Quantization::None).then(|| ExactRows::new(dim)),
            unit_inputs: false,
        };
        g.reserve(cap);
        g
    }

    /// Number of slots (live, dead, in flight or free).
    pub(crate) fn slots(&self) -> usize {
        self.labels.len()
    }

    /// `mL = 1/ln(M)`.
    pub(crate) fn ml(&self) -> f64 {
        1.0 / (self.m as f64).ln()
    }

    /// Room for `n` more slots without reallocating.
    pub(crate) fn reserve(&mut self, n: usize) {
        let (d, w) = (self.dim, quant::binary_words(self.dim));
        match &mut self.codes {
            Codes::F32(v) => v.reserve_exact(n * d),
            Codes::I8 { codes, scales } => {
                codes.reserve_exact(n * d);
                scales.reserve_exact(n);
            }
            Codes::Bin(v) => v.reserve_exact(n * w),
        }
        self.norms.reserve_exact(n);
        self.labels.reserve_exact(n);
        self.levels.reserve_exact(n);
        self.flags.reserve_exact(n);
        self.locks.reserve_exact(n);
        self.upper_off.reserve_exact(n);
        self.links0.reserve_exact(n * (1 + self.m0));
        self.upper
            .reserve_exact(n * (1 + self.m) / self.m.max(1) + 1);
        // A walk reads rows and lists scattered over these two: on huge pages it
        // stops missing the TLB at nearly every step.
        match &self.codes {
            Codes::F32(v) => advise_huge_pages(v),
            Codes::I8 { codes, .. } => advise_huge_pages(codes),
            Codes::Bin(v) => advise_huge_pages(v),
        }
        advise_huge_pages(&self.links0);
        if let Some(exact) = &mut self.exact {
            exact.reserve(n);
        }
    }

    /// The entry point and the top layer, if any node was linked.
    pub(crate) fn entry(&self) -> Option<(u32, usize)> {
        let e = self.entry.load(Relaxed);
        (e != NO_ENTRY).then_some(((e >> 8) as u32, (e & 0xff) as usize))
    }

    /// Highest layer in the graph (0 when empty).
    pub(crate) fn max_level(&self) -> usize {
        self.entry().map_or(0, |e| e.1)
    }

    /// Stores a vector in a new (or freed) slot, flagged `flags`, at layer `level`; its
    /// lists are empty until `link`. A previous slot of the label is marked dead.
    pub(crate) fn alloc(&mut self, label: u64, v: &[f32], level: usize, flags: u8) -> u32 {
        if let Some(old) = self.map.insert(label, 0) {
            self.mark_dead(old);
        }
        let (dim, words) = (self.dim, quant::binary_words(self.dim));
        let n = quant::norm(v);
        let unit: Vec<f32>;
        let src = if self.metric == Metric::Cosine && n > 0.0 && !self.unit_inputs {
            unit = v.iter().map(|x| x / n).collect();
            &unit[..]
        } else {
            v
        };
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                if self.labels.len() == self.labels.capacity() {
                    let extra = (self.labels.len() / 4).max(64);
                    self.reserve(extra);
                }
                let s = self.labels.len() as u32;
                match &mut self.codes {
                    Codes::F32(c) => c.resize(c.len() + dim, 0.0),
                    Codes::I8 { codes, scales } => {
                        codes.resize(codes.len() + dim, 0);
                        scales.push(0.0);
                    }
                    Codes::Bin(c) => c.resize(c.len() + words, 0),
                }
                self.norms.push(0.0);
                self.labels.push(0);
                self.levels.push(0);
                self.flags.push(AtomicU8::new(0));
                self.locks.push(Mutex::new(()));
                self.upper_off.push(u32::MAX);
                self.links0
                    .extend((0..1 + self.m0).map(|_| AtomicU32::new(0)));
                if let Some(exact) = &mut self.exact {
                    exact.grow();
                }
                s
            }
        };
        if let Some(exact) = &mut self.exact {
            exact.set(slot, v);
        }
        let i = slot as usize;
        match &mut self.codes {
            Codes::F32(c) => c[i * dim..(i + 1) * dim].copy_from_slice(src),
            Codes::I8 { codes, scales } => {
                scales[i] = quant::quantize_i8(src, &mut codes[i * dim..(i + 1) * dim]);
            }
            Codes::Bin(c) => quant::binarize(src, &mut c[i * words..(i + 1) * words]),
        }
        self.norms[i] = n;
        self.labels[i] = label;
        self.levels[i] = level as u8;
        self.flags[i].store(flags, Relaxed);
        self.links0[i * (1 + self.m0)].store(0, Relaxed);
        self.upper_off[i] = if level == 0 {
            u32::MAX
        } else {
            let off = self.upper.len();
            self.upper
                .extend((0..level * (1 + self.m)).map(|_| AtomicU32::new(0)));
            off as u32
        };
        self.map.insert(label, slot);
        slot
    }

    /// Marks a slot dead; true if it was not already. Keeps `live` and `dead` right.
    pub(crate) fn mark_dead(&self, s: u32) -> bool {
        let old = self.flags[s as usize].fetch_or(DEAD, Relaxed);
        if old & (DEAD | FREE) != 0 {
            return false;
        }
        if old & IN_FLIGHT == 0 {
            self.live.fetch_sub(1, Relaxed);
        }
        self.dead.fetch_add(1, Relaxed);
        true
    }

    /// The list of slot `s` on layer `l`: `[count, ids…]`.
    #[inline]
    pub(crate) fn list(&self, s: u32, l: usize) -> &[AtomicU32] {
        if l == 0 {
            let w = 1 + self.m0;
            &self.links0[s as usize * w..(s as usize + 1) * w]
        } else {
            let w = 1 + self.m;
            let off = self.upper_off[s as usize] as usize + (l - 1) * w;
            &self.upper[off..off + w]
        }
    }

    /// Starts loading slot `s`'s list on layer `l` into the caches (a hint): its
    /// first two lines, the count and the first neighbours (a layer-0 list of
    /// M0 = 32 is 132 bytes, usually across three lines).
    #[inline]
    pub(super) fn prefetch_list(&self, s: u32, l: usize) {
        let list = self.list(s, l);
        kernels::prefetch_line(&list[0]);
        if let Some(later) = list.get(16) {
            kernels::prefetch_line(later);
        }
    }

    /// The neighbours of `s` on layer `l`.
    pub(crate) fn neighbours(&self, s: u32, l: usize) -> Vec<u32> {
        let list = self.list(s, l);
        let n = (list[0].load(Relaxed) as usize).min(list.len() - 1);
        list[1..=n].iter().map(|x| x.load(Relaxed)).collect()
    }

    pub(super) fn set_list(&self, s: u32, l: usize, ids: &[u32]) {
        let list = self.list(s, l);
        let n = ids.len().min(list.len() - 1);
        for (cell, &id) in list[1..=n].iter().zip(ids) {
            cell.store(id, Relaxed);
        }
        list[0].store(n as u32, Relaxed);
    }

    /// The query form of a vector (already checked).
    pub(crate) fn query(&self, v: &[f32]) -> Query {
        let n = quant::norm(v);
        let unit = |v: &[f32]| -> Vec<f32> {
            if self.metric == Metric::Cosine && n > 0.0 {
                v.iter().map(|x| x / n).collect()
            } else {
                v.to_vec()
            }
        };
        match &self.codes {
            Codes::F32(_) => Query::F32(unit(v)),
            Codes::I8 { .. } => {
                let u = unit(v);
                let mut codes = vec![0i8; self.dim];
                let scale = quant::quantize_i8(&u, &mut codes);
                Query::I8 {
                    codes,
                    scale,
                    norm2: n * n,
                }
            }
            Codes::Bin(_) => {
                let mut w = vec![0u64; quant::binary_words(self.dim)];
                quant::binarize(v, &mut w);
                Query::Bin(w)
            }
        }
    }

    /// A stored node as a query.
    pub(super) fn node_query(&self, s: u32) -> Query {
        let i = s as usize;
        let d = self.dim;
        match &self.codes {
            Codes::F32(c) => Query::F32(c[i * d..(i + 1) * d].to_vec()),
            Codes::I8 { codes, scales } => Query::I8 {
                codes: codes[i * d..(i + 1) * d].to_vec(),
                scale: scales[i],
                norm2: self.norms[i] * self.norms[i],
            },
            Codes::Bin(c) => {
                let w = quant::binary_words(d);
                Query::Bin(c[i * w..(i + 1) * w].to_vec())
            }
        }
    }

    /// Distance from a query to slot `s` in the metric's convention (an estimate for
    /// Int8 and Binary codes).
    #[inline]
    pub(crate) fn dist(&self, q: &Query, s: u32) -> f32 {
        let i = s as usize;
        let d = self.dim;
        match (q, &self.codes) {
            (Query::F32(q), Codes::F32(c)) => {
                let x = &c[i * d..(i + 1) * d];
                match self.metric {
                    Metric::L2 => quant::l2sq_f32(q, x),
                    Metric::Cosine | Metric::Ip => 1.0 - quant::dot_f32(q, x),
                }
            }
            (
                Query::I8 {
                    codes: qc,
                    scale,
                    norm2,
                },
                Codes::I8 { codes, scales },
            ) => {
                let row = &codes[i * d..(i + 1) * d];
                // Only L2 reads the row's norm: another array, another cache line.
                let norm = match self.metric {
                    Metric::L2 => self.norms[i],
                    Metric::Cosine | Metric::Ip => 0.0,
                };
                i8_distance(self.metric, (qc, *scale, *norm2), (row, scales[i], norm))
            }
            (Query::Bin(q), Codes::Bin(c)) => {
                let w = q.len();
                let h = quant::hamming(q, &c[i * w..(i + 1) * w]) as f32;
                match self.metric {
                    Metric::L2 => 4.0 * h,
                    Metric::Cosine | Metric::Ip => 2.0 * h / d as f32,
                }
            }
            _ => f32::INFINITY,
        }
    }

    /// Starts loading slot `s`'s row into the caches (a hint; out-of-range slots are
    /// ignored, and binary rows, a line or two, are left to the hardware).
    #[inline]
    pub(super) fn prefetch_row(&self, s: u32) {
        let i = s as usize;
        let d = self.dim;
        match &self.codes {
            Codes::F32(c) => {
                if let Some(row) = c.get(i * d..(i + 1) * d) {
                    kernels::prefetch(as_bytes(row));
                }
            }
            Codes::I8 { codes, scales } => {
                if let Some(row) = codes.get(i * d..(i + 1) * d) {
                    // SAFETY: i8 and u8 have the same size, alignment and validity;
                    // the view covers exactly `row` and is only read.
                    let bytes = unsafe { &*(row as *const [i8] as *const [u8]) };
                    kernels::prefetch(bytes);
                }
                // The row's scale (and, for L2, its norm) sit in arrays of their own:
                // without these a distance waits on one more miss after its row.
                if let Some(scale) = scales.get(i..=i) {
                    kernels::prefetch(as_bytes(scale));
                }
                if self.metric == Metric::L2 {
                    if let Some(norm) = self.norms.get(i..=i) {
                        kernels::prefetch(as_bytes(norm));
                    }
                }
            }
            Codes::Bin(_) => {}
        }
    }

    /// The stored vector of slot `s`: as given where the graph keeps it, else
    /// dequantised.
    pub(crate) fn vector(&self, s: u32) -> Vec<f32> {
        if let Some(row) = self.exact.as_ref().and_then(|e| e.row(s)) {
            return row.to_vec();
        }
        let i = s as usize;
        let d = self.dim;
        let factor = if self.metric == Metric::Cosine && self.norms[i] > 0.0 && !self.unit_inputs {
            self.norms[i]
        } else {
            1.0
        };
        match &self.codes {
            Codes::F32(c) => c[i * d..(i + 1) * d].iter().map(|x| x * factor).collect(),
            Codes::I8 { codes, scales } => {
                quant::dequantize_i8(&codes[i * d..(i + 1) * d], scales[i], factor)
            }
            Codes::Bin(c) => {
                let w = quant::binary_words(d);
                quant::unbinarize(&c[i * w..(i + 1) * w], d)
            }
        }
    }

    /// Slot `s`'s INT8 codes, where the graph keeps INT8 codes.
    pub(crate) fn i8_row(&self, s: u32) -> Option<&[i8]> {
        let d = self.dim;
        match &self.codes {
            Codes::I8 { codes, .. } => codes.get(s as usize * d..(s as usize + 1) * d),
            Codes::F32(_) | Codes::Bin(_) => None,
        }
    }

    /// Slot `s`'s f32 row, where the graph keeps f32 rows.
    pub(crate) fn f32_row(&self, s: u32) -> Option<&[f32]> {
        let d = self.dim;
        match &self.codes {
            Codes::F32(rows) => rows.get(s as usize * d..(s as usize + 1) * d),
            Codes::I8 { .. } | Codes::Bin(_) => None,
        }
    }

    /// Whether slot `s` may be returned (and passes `accept`).
    #[inline]
    pub(crate) fn returnable(&self, s: u32) -> bool {
        returnable_flags(self.flags[s as usize].load(Relaxed))
    }

    /// The neighbour-selection heuristic (the paper's algorithm 4, without extending
    /// candidates): walk `cands` nearest first and keep one only if it is nearer to the
    /// base than to every neighbour already kept; at most `m`.
    pub(super) fn select(&self, cands: &[Cand], m: usize) -> Vec<u32> {
        let mut out: Vec<(u32, Query)> = Vec::with_capacity(m);
        for c in cands {
            if out.len() >= m {
                break;
            }
            if out.iter().all(|(_, oq)| self.dist(oq, c.s) >= c.d) {
                out.push((c.s, self.node_query(c.s)));
            }
        }
        out.into_iter().map(|(s, _)| s).collect()
    }

    pub(super) fn max_links(&self, l: usize) -> usize {
        if l == 0 {
            self.m0
        } else {
            self.m
        }
    }

    /// Links slot `s` (already allocated) into the graph. Safe to call from many threads
    /// at once for different slots.
    pub(crate) fn link(&self, s: u32) {
        let level = self.levels[s as usize] as usize;
        let q = self.node_query(s);
        // A node above the current top holds the entry lock for its whole insertion
        // (as hnswlib does) so that the entry point moves up exactly once.
        let mut guard = None;
        if self.entry().is_none_or(|(_, top)| level > top) {
            guard = Some(self.entry_lock.lock());
        }
        let Some((e, top)) = self.entry() else {
            self.entry.store((s as u64) << 8 | level as u64, Relaxed);
            return;
        };
        if guard.is_some() && level <= top {
            guard = None;
        }
        let mut ep = Cand {
            d: self.dist(&q, e),
            s: e,
        };
        for l in (level + 1..=top).rev() {
            ep = self.greedy(&q, ep, l);
        }
        let accept = |x: u32| x != s && self.flags[x as usize].load(Relaxed) & (DEAD | FREE) == 0;
        let linkable = |x: u32| x != s && self.flags[x as usize].load(Relaxed) & FREE == 0;
        let mut eps = vec![ep];
        for l in (0..=level.min(top)).rev() {
            let mut found = self.search_layer(&q, &eps, self.ef_construction, l, false, accept);
            if found.is_empty() {
                // Every node near `s` is dead (a re-index replacing them all): link
                // through the dead ones. They stay until a repair reroutes the links of
                // their neighbours around them, `s` among those, so `s` is not left
                // with nothing leading to it.
                found = self.search_layer(&q, &eps, self.ef_construction, l, false, linkable);
            }
            let chosen = self.select(&found, self.m);
            {
                let _g = self.locks[s as usize].lock();
                // A concurrent insertion may already have linked to `s` on this layer
                // (it can reach `s` from the layer above): keep those links too.
                let mut ids = chosen.clone();
                for x in self.neighbours(s, l) {
                    if !ids.contains(&x) {
                        ids.push(x);
                    }
                }
                if ids.len() > self.max_links(l) {
                    ids = self.shrink(&q, &ids, self.max_links(l));
                }
                self.set_list(s, l, &ids);
            }
            let mut kept = false;
            for &n in &chosen {
                kept |= self.add_link(n, s, l);
            }
            if !kept && l == 0 {
                // Every neighbour pruned `s` from its full list: nothing would lead to
                // `s` and searches could never return it. Give the nearest neighbour a
                // link to it in place of its farthest.
                if let Some(&n) = chosen.first() {
                    self.force_link(n, s);
                }
            }
            if !found.is_empty() {
                eps = found;
            }
        }
        if guard.is_some() {
            self.entry.store((s as u64) << 8 | level as u64, Relaxed);
        }
    }

    /// Puts `s` in `n`'s layer-0 list in place of the farthest link (or appends it
    /// when there is room).
    fn force_link(&self, n: u32, s: u32) {
        let _g = self.locks[n as usize].lock();
        let mut ids = self.neighbours(n, 0);
        if ids.contains(&s) {
            return;
        }
        if ids.len() < self.max_links(0) {
            ids.push(s);
        } else {
            let q = self.node_query(n);
            let far = ids
                .iter()
                .enumerate()
                .max_by(|a, b| self.dist(&q, *a.1).total_cmp(&self.dist(&q, *b.1)))
                .map(|(i, _)| i);
            if let Some(i) = far {
                ids[i] = s;
            }
        }
        self.set_list(n, 0, &ids);
    }

    /// Adds `s` to `n`'s list on layer `l`, shrinking it with the heuristic when full;
    /// returns whether `s` is in the list afterwards.
    fn add_link(&self, n: u32, s: u32, l: usize) -> bool {
        if (self.levels[n as usize] as usize) < l {
            return false;
        }
        let _g = self.locks[n as usize].lock();
        let mut ids = self.neighbours(n, l);
        if ids.contains(&s) {
            return true;
        }
        let max = self.max_links(l);
        if ids.len() < max {
            let list = self.list(n, l);
            list[1 + ids.len()].store(s, Relaxed);
            list[0].store(ids.len() as u32 + 1, Relaxed);
            return true;
        }
        ids.push(s);
        let chosen = self.shrink(&self.node_query(n), &ids, max);
        self.set_list(n, l, &chosen);
        chosen.contains(&s)
    }

    /// At most `m` of `ids`, chosen by the heuristic around the node `q` stands for.
    fn shrink(&self, q: &Query, ids: &[u32], m: usize) -> Vec<u32> {
        let mut cands: Vec<Cand> = ids
            .iter()
            .map(|&x| Cand {
                d: self.dist(q, x),
                s: x,
            })
            .collect();
        cands.sort();
        self.select(&cands, m)
    }

    /// Bytes held by codes, links and bookkeeping.
    pub(crate) fn memory_bytes(&self) -> usize {
        let codes = match &self.codes {
            Codes::F32(v) => v.capacity() * 4,
            Codes::I8 { codes, scales } => codes.capacity() + scales.capacity() * 4,
            Codes::Bin(v) => v.capacity() * 8,
        };
        codes
            + self.norms.capacity() * 4
            + self.labels.capacity() * 8
            + self.levels.capacity()
            + self.flags.capacity()
            + self.locks.capacity() * std::mem::size_of::<Mutex<()>>()
            + self.links0.capacity() * 4
            + self.upper_off.capacity() * 4
            + self.upper.capacity() * 4
            + self.map.capacity() * (std::mem::size_of::<(u64, u32)>() + 1)
            + self.free.capacity() * 4
            + self.exact.as_ref().map_or(0, ExactRows::memory_bytes)
    }
}

/// The INT8 estimate of a distance: a query's codes, scale and squared norm against a
/// row's codes, scale and norm (the graph's slots and the pending tail's rows alike).
#[inline]
pub(crate) fn i8_distance(metric: Metric, q: (&[i8], f32, f32), row: (&[i8], f32, f32)) -> f32 {
    let (qc, q_scale, q_norm2) = q;
    let (rc, r_scale, r_norm) = row;
    let dot = q_scale * r_scale * quant::dot_i8(qc, rc);
    match metric {
        Metric::L2 => (q_norm2 + r_norm * r_norm - 2.0 * dot).max(0.0),
        Metric::Cosine | Metric::Ip => 1.0 - dot,
    }
}
