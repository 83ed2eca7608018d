//! An HNSW index with an exact pending tail.
//!
//! `upsert` only appends the f32 vector to the pending tail, which every query scans
//! exactly, so a vector is searchable the moment it is written. Linking into the graph
//! happens later, in three steps:
//!
//! 1. *claim* (pending and graph write locks, brief): pick pending rows, give each a slot,
//!    write its codes, flag it `IN_FLIGHT` (queries still answer it from the tail);
//! 2. *link* (graph read lock, per-node mutexes): insert into the graph; any number of
//!    threads link different slots at once;
//! 3. *finish* (pending write lock): drop the rows from the tail and clear `IN_FLIGHT`,
//!    unless the label was replaced or removed meanwhile (then its slot is already dead).
//!
//! Lock order is always pending → graph. Queries hold both read locks, so they see each
//! label in exactly one place.

use std::sync::atomic::Ordering::Relaxed;
use std::sync::atomic::{AtomicU64, AtomicUsize};

use parking_lot::RwLock;
use rand::Rng;

use super::graph::{Cand, Graph, DEAD, FREE, IN_FLIGHT};
use super::pending::Pending;
use super::{top_k, ExactQuery, IndexParams, LabelFilter, Neighbor, Quantization};

/// Rows claimed by one build.
pub(crate) struct Batch {
    items: Vec<(u64, u64, u32)>,
}

/// The fewest extra candidates re-ranked against exact rows beyond `k` (small k).
const RERANK_FLOOR: usize = 8;

/// The most extra candidates re-ranked beyond `k` (large k). `KNN 100` re-ranked 200
/// rows a query; with 125 its recall@100 is the same at ef 100–400 on minilm384 and
/// synth1536 (within 0.0005), and on synth1536, whose exact rows are 6 KB, ef 200
/// answers 18 % more queries a second.
const RERANK_CEILING: usize = 25;

/// Where a filtered query scans the vectors its filter passes instead of walking.
/// A walk that must find `ef` passing slots, under a filter passing `passes` of
/// `live`, visits about `ef · live / passes` slots; a scan reads `passes` rows. On
/// minilm384 (100K vectors, FT.SEARCH, one thread) a walk's time grew by 0.5 µs per
/// unit of `ef · live / passes` at 10 % and 30 % filters, and a scan's by 0.039 µs a
/// row between the 1 % and 10 % filters: a visit costs about this many scanned rows.
/// So a query scans when `passes² ≤ WALK_VISIT_IN_ROWS · ef · live`: at 10 % of 100K
/// it walks at ef 20 and 40 (6,200 and 4,100 queries a second against the scan's
/// 2,500) and scans at ef 80 (2,500 against 2,300); 1 % always scans, 30 % walks up
/// to ef 690. A fixed share (one in eight) scanned 10 % at every ef.
const WALK_VISIT_IN_ROWS: usize = 13;

/// Whether a filter passing `passes` of `live` vectors is answered faster by a scan
/// than by a walk keeping `ef` candidates (see [`WALK_VISIT_IN_ROWS`]).
fn scan_is_cheaper(passes: usize, ef: usize, live: usize) -> bool {
    passes.saturating_mul(passes) <= WALK_VISIT_IN_ROWS.saturating_mul(ef).saturating_mul(live)
}

/// Graph plus pending tail.
pub(crate) struct Hnsw {
    pub(crate) params: IndexParams,
    pub(crate) pending: RwLock<Pending>,
    pub(crate) graph: RwLock<Graph>,
    seq: AtomicU64,
}

impl Hnsw {
    pub(crate) fn new(params: IndexParams) -> Hnsw {
        let graph = Graph::new(
            params.dim,
            params.metric,
            params.quantization,
            params.m,
            params.ef_construction,
            params.initial_cap,
            params.exact_rows,
        );
        let mut graph = graph;
        graph.unit_inputs = params.unit_inputs;
        let pending = Pending::new(params.quantization == Quantization::Int8, params.metric);
        Hnsw::from_parts(params, pending, graph)
    }

    pub(crate) fn from_parts(params: IndexParams, pending: Pending, graph: Graph) -> Hnsw {
        Hnsw {
            params,
            pending: RwLock::new(pending),
            graph: RwLock::new(graph),
            seq: AtomicU64::new(1),
        }
    }

    /// Restores a pending row (loading).
    pub(crate) fn restore_pending(p: &mut Pending, dim: usize, label: u64, v: &[f32]) {
        p.put(dim, label, v, 0);
    }

    pub(crate) fn upsert(&self, label: u64, v: &[f32]) {
        let seq = self.seq.fetch_add(1, Relaxed);
        let mut p = self.pending.write();
        {
            let g = self.graph.read();
            if let Some(&s) = g.map.get(&label) {
                g.mark_dead(s);
            }
        }
        p.put(self.params.dim, label, v, seq);
    }

    pub(crate) fn remove(&self, label: u64) -> bool {
        let (found, repair) = {
            let mut p = self.pending.write();
            let in_tail = p.remove(self.params.dim, label);
            let g = self.graph.read();
            let in_graph = g.map.get(&label).is_some_and(|&s| g.mark_dead(s));
            let dead = g.dead.load(Relaxed);
            let repair = dead >= 64 && dead * 8 >= g.live.load(Relaxed);
            (in_tail || in_graph, repair)
        };
        if repair {
            self.graph.write().repair();
        }
        found
    }

    pub(crate) fn contains(&self, label: u64) -> bool {
        let p = self.pending.read();
        if p.rows.contains_key(&label) {
            return true;
        }
        let g = self.graph.read();
        g.map.get(&label).is_some_and(|&s| g.returnable(s))
    }

    pub(crate) fn len(&self) -> usize {
        let p = self.pending.read();
        p.len() + self.graph.read().live.load(Relaxed)
    }

    pub(crate) fn pending(&self) -> usize {
        self.pending.read().len()
    }

    pub(crate) fn get(&self, label: u64) -> Option<Vec<f32>> {
        let p = self.pending.read();
        if let Some(&r) = p.rows.get(&label) {
            return Some(p.row(self.params.dim, r).to_vec());
        }
        let g = self.graph.read();
        let &s = g.map.get(&label)?;
        g.returnable(s).then(|| g.vector(s))
    }

    /// The INT8 codes the graph holds for a linked label (`None` for a pending one, or
    /// where the graph keeps other codes).
    pub(crate) fn i8_codes(&self, label: u64) -> Option<Vec<i8>> {
        self.read_linked(label, |g, s| g.i8_row(s).map(<[i8]>::to_vec))
    }

    /// The f32 row the graph holds for a linked label (`None` for a pending one, or
    /// where the graph keeps codes).
    pub(crate) fn f32_row(&self, label: u64) -> Option<Vec<f32>> {
        self.read_linked(label, |g, s| g.f32_row(s).map(<[f32]>::to_vec))
    }

    /// `read` of a linked, returnable label's slot, under the graph's read lock.
    fn read_linked<R>(&self, label: u64, read: impl FnOnce(&Graph, u32) -> Option<R>) -> Option<R> {
        let g = self.graph.read();
        let &s = g.map.get(&label)?;
        if !g.returnable(s) {
            return None;
        }
        read(&g, s)
    }

    /// Step 1: claims up to `max` unclaimed pending rows (or only `only`).
    fn claim(&self, max: usize, only: Option<u64>) -> Batch {
        let mut p = self.pending.write();
        let dim = self.params.dim;
        let rows: Vec<usize> = match only {
            Some(l) => p
                .rows
                .get(&l)
                .copied()
                .filter(|&r| !p.claimed[r])
                .into_iter()
                .collect(),
            None => (0..p.len()).filter(|&r| !p.claimed[r]).take(max).collect(),
        };
        if rows.is_empty() {
            return Batch { items: Vec::new() };
        }
        let mut g = self.graph.write();
        if g.slots() + rows.len() > g.labels.capacity() {
            // Room for every unclaimed row (or an eighth more), not just this batch:
            // each growth copies every array (the exact rows too) under the write
            // lock that queries wait on, and a bulk load is linked a batch at a time.
            // Rows already claimed hold slots, so they are not counted again.
            let unclaimed = p.claimed.iter().filter(|&&c| !c).count();
            let room = unclaimed.max(rows.len()).max(g.slots() / 8);
            g.reserve(room);
        }
        let ml = g.ml();
        let mut rng = rand::thread_rng();
        let mut items = Vec::with_capacity(rows.len());
        for r in rows {
            let u: f64 = rng.gen_range(f64::MIN_POSITIVE..1.0);
            let level = ((-u.ln() * ml) as usize).min(32);
            let label = p.labels[r];
            let slot = g.alloc(label, p.row(dim, r), level, IN_FLIGHT);
            p.claimed[r] = true;
            items.push((label, p.seqs[r], slot));
        }
        Batch { items }
    }

    /// Step 2: links the batch with `threads` threads.
    fn link(&self, batch: &Batch, threads: usize) {
        let g = self.graph.read();
        if threads <= 1 || batch.items.len() < 2 * threads {
            for &(_, _, s) in &batch.items {
                g.link(s);
            }
        } else {
            let next = AtomicUsize::new(0);
            std::thread::scope(|sc| {
                for _ in 0..threads {
                    sc.spawn(|| loop {
                        let i = next.fetch_add(1, Relaxed);
                        let Some(&(_, _, s)) = batch.items.get(i) else {
                            break;
                        };
                        g.link(s);
                    });
                }
            });
        }
    }

    /// Step 3: drops linked rows from the tail. A row removed or replaced while it
    /// was linked left its slot dead: the slot stops being in flight, and the next
    /// repair frees it.
    fn finish(&self, batch: Batch) {
        let mut p = self.pending.write();
        let g = self.graph.read();
        for (label, seq, slot) in batch.items {
            let current = p.rows.get(&label).is_some_and(|&r| p.seqs[r] == seq);
            if current {
                p.remove(self.params.dim, label);
                g.live.fetch_add(1, Relaxed);
            }
            g.flags[slot as usize].fetch_and(!IN_FLIGHT, Relaxed);
        }
        p.shrink_when_drained();
    }

    pub(crate) fn build_pending(&self, max: usize) -> usize {
        self.build_pending_with(max, 1)
    }

    pub(crate) fn build_pending_with(&self, max: usize, threads: usize) -> usize {
        let batch = self.claim(max, None);
        let n = batch.items.len();
        self.link(&batch, threads);
        self.finish(batch);
        n
    }

    pub(crate) fn upsert_linked(&self, label: u64, v: &[f32]) {
        self.upsert(label, v);
        let batch = self.claim(1, Some(label));
        self.link(&batch, 1);
        self.finish(batch);
    }

    pub(crate) fn optimize(&self, threads: usize) {
        self.graph.write().repair();
        loop {
            let batch = self.claim(usize::MAX, None);
            if batch.items.is_empty() {
                break;
            }
            self.link(&batch, threads);
            self.finish(batch);
        }
    }

    fn to_neighbors(g: &Graph, c: Vec<Cand>) -> impl Iterator<Item = Neighbor> + '_ {
        c.into_iter().map(|c| Neighbor {
            label: g.labels[c.s as usize],
            distance: c.d,
        })
    }

    /// The `k` nearest to `q` among the labels `filter` passes (with, when known,
    /// about how many it passes), the graph walked with `ef` candidates.
    pub(crate) fn search(
        &self,
        q: &[f32],
        k: usize,
        ef: usize,
        filter: LabelFilter<'_>,
    ) -> Vec<Neighbor> {
        let p = self.pending.read();
        let g = self.graph.read();
        let query = g.query(q);
        let exact = ExactQuery::new(self.params.metric, q);
        let mut all = p.nearest(self.params.dim, &exact, &query, k, filter);
        let ef = ef.max(k);
        // A walk over INT8 estimates that re-ranks exactly keeps a quarter more
        // candidates than asked: the estimates' noise would otherwise cost recall
        // against an f32 walk at the same ef (minilm384 at ef 40: 0.9779 against
        // 0.9707, for 12 % of the queries per second). A filtered walk does not: it
        // already visits several times the nodes to find `ef` accepted ones (30 % of
        // minilm384 at ef 80: recall 0.9974 with the boost, 0.9961 without, for 1.3x
        // the queries a second; RediSearch reaches 0.985).
        let ef = match &g.exact {
            Some(_) if !filter.filters() => ef + ef / 4,
            _ => ef,
        };
        // Unfiltered, a slot's label is not read: the load misses the cache at most
        // slots a walk reaches (8 % of an unfiltered FT.SEARCH KNN at ef 40).
        let filters = filter.filters();
        let accept = |s: u32| g.returnable(s) && (!filters || filter.passes(g.labels[s as usize]));
        // Candidates re-ranked against the exact rows: the walk's nearest by estimate
        // hold the true nearest but for a few at the edge, so twice k of them (k + 25
        // for k over 25) give the recall of an f32 walk at the same ef (minilm384,
        // k 10: 0.9736 at ef 40, against 0.9711 re-ranking all 40 and 0.9645
        // re-ranking none), and every row read costs about 0.5 µs.
        let keep = match &g.exact {
            Some(_) => k + k.clamp(RERANK_FLOOR, RERANK_CEILING),
            None => k,
        };
        // A bounded effort (VSIM's FILTER-EF) is the walk's alone: no scan, no
        // widening past it.
        let effort = filter.effort.filter(|_| filters);
        let few = filter.filters()
            && effort.is_none()
            && filter
                .passes
                .is_some_and(|n| scan_is_cheaper(n, ef, g.live.load(Relaxed)));
        let passes = |label| filter.passes(label);
        let mut found = if few {
            g.scan(&query, keep, passes)
        } else if let Some(ep) = g.descend(&query, 0) {
            let within = effort.unwrap_or(usize::MAX);
            // Only a filter that looks ahead has the slot's label read early (an
            // unfiltered walk reads no labels at all).
            let looks_ahead = filters && filter.looks_ahead();
            let ahead = |s: u32| {
                if !looks_ahead {
                    return;
                }
                if let Some(&label) = g.labels.get(s as usize) {
                    filter.ahead(label);
                }
            };
            let mut found =
                g.search_layer_within(&query, &[ep], ef, 0, filters, accept, ahead, within);
            if found.len() < k && filter.filters() && effort.is_none() {
                // Too few accepted nodes reachable within ef: widen once, then scan.
                found = g.search_layer(&query, &[ep], ef * 8, 0, filters, accept);
                if found.len() < k {
                    found = g.scan(&query, keep, passes);
                }
            }
            found
        } else {
            Vec::new()
        };
        if let Some(exact) = &g.exact {
            found.truncate(keep);
            exact.rerank(self.params.metric, q, &mut found);
        }
        all.extend(Self::to_neighbors(&g, found));
        top_k(all, k)
    }

    /// Whether the distances searches return are exact (the graph keeps the vectors
    /// as given, or holds them in f32 itself).
    pub(crate) fn exact_distances(&self) -> bool {
        self.graph.read().exact.is_some()
    }

    pub(crate) fn range(
        &self,
        q: &[f32],
        radius: f32,
        ef: usize,
        filter: LabelFilter<'_>,
    ) -> Vec<Neighbor> {
        let p = self.pending.read();
        let g = self.graph.read();
        let exact = ExactQuery::new(self.params.metric, q);
        let mut all = p.exact(self.params.dim, &exact, filter, |d| d <= radius);
        let query = g.query(q);
        let filters = filter.filters();
        let accept = |s: u32| g.returnable(s) && (!filters || filter.passes(g.labels[s as usize]));
        if let Some(ep) = g.descend(&query, 0) {
            let seeds = g.search_layer(&query, &[ep], ef.max(1), 0, false, |_| true);
            // Code distances are estimates: keep a margin, then decide on exact ones.
            let keep_within = match g.exact {
                Some(_) => radius + radius.abs() * self.params.epsilon.max(0.05),
                None => radius,
            };
            let mut found = g.range_layer0(
                &query,
                &seeds,
                radius,
                keep_within,
                self.params.epsilon,
                &accept,
            );
            if let Some(exact) = &g.exact {
                exact.rerank(self.params.metric, q, &mut found);
                found.retain(|c| c.d <= radius);
            }
            all.extend(Self::to_neighbors(&g, found));
        }
        let n = all.len();
        top_k(all, n)
    }

    /// The `k` nearest among `labels`. Graph nodes are ranked by their codes (rows
    /// asked of memory a few ahead); where the graph keeps exact rows, a short list
    /// of `max(4k, k + 32)` is then measured exactly, as a long tail is (a 1 %
    /// filter, 1,000 of minilm384's rows: each exact row read from memory cost about
    /// 300 ns, a coded one a quarter of the bytes).
    pub(crate) fn search_among(&self, q: &[f32], k: usize, labels: &[u64]) -> Vec<Neighbor> {
        let p = self.pending.read();
        let g = self.graph.read();
        let query = g.query(q);
        let exact = ExactQuery::new(self.params.metric, q);
        let mut all = Vec::new();
        let mut slots = Vec::with_capacity(labels.len());
        for &l in labels {
            if let Some(&r) = p.rows.get(&l) {
                all.push(Neighbor {
                    label: l,
                    distance: exact.distance(p.row(self.params.dim, r)),
                });
            } else if let Some(&s) = g.map.get(&l) {
                if g.returnable(s) {
                    slots.push(s);
                }
            }
        }
        let found = match &g.exact {
            Some(rows) => {
                let mut short = g.nearest_of(&query, (4 * k).max(k + 32), &slots);
                rows.rerank(self.params.metric, q, &mut short);
                short.truncate(k);
                short
            }
            None => g.nearest_of(&query, k, &slots),
        };
        all.extend(Self::to_neighbors(&g, found));
        top_k(all, k)
    }

    pub(crate) fn neighbors(&self, label: u64) -> Option<Vec<Vec<u64>>> {
        let p = self.pending.read();
        if p.rows.contains_key(&label) {
            return Some(vec![Vec::new()]);
        }
        let g = self.graph.read();
        let &s = g.map.get(&label)?;
        if !g.returnable(s) {
            return None;
        }
        let levels = g.levels[s as usize] as usize;
        Some(
            (0..=levels)
                .map(|l| {
                    g.neighbours(s, l)
                        .into_iter()
                        .filter(|&x| g.flags[x as usize].load(Relaxed) & (DEAD | FREE) == 0)
                        .map(|x| g.labels[x as usize])
                        .collect()
                })
                .collect(),
        )
    }

    pub(crate) fn memory_bytes(&self) -> usize {
        self.pending.read().memory_bytes() + self.graph.read().memory_bytes()
    }

    pub(crate) fn max_level(&self) -> usize {
        self.graph.read().max_level()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vector::graph::FREE;
    use crate::vector::tests::{hnsw_params, random_vectors};
    use crate::vector::{Metric, Quantization};

    #[test]
    fn a_filter_scans_where_the_walk_would_visit_more_than_it_passes() {
        let live = 100_000;
        // 10 %: walked at a small ef, scanned once the walk's visits cost more.
        assert!(!scan_is_cheaper(10_000, 20, live));
        assert!(!scan_is_cheaper(10_000, 40, live));
        assert!(scan_is_cheaper(10_000, 80, live));
        // 1 % is always scanned, 30 % walked at any usual ef.
        assert!(scan_is_cheaper(1_000, 10, live));
        assert!(!scan_is_cheaper(30_000, 640, live));
        assert!(scan_is_cheaper(30_000, 700, live));
        // No overflow at the extremes.
        assert!(!scan_is_cheaper(usize::MAX, 1, 1));
        assert!(scan_is_cheaper(1, usize::MAX, usize::MAX));
    }

    #[test]
    fn a_repair_leaves_the_slots_a_batch_is_linking_to_their_linker() {
        let vs = random_vectors(3, 100, 8);
        let h = Hnsw::new(hnsw_params(8, Metric::L2, Quantization::None));
        for (i, v) in vs[..50].iter().enumerate() {
            h.upsert(i as u64, v);
        }
        h.optimize(1);
        for (i, v) in vs[50..].iter().enumerate() {
            h.upsert(50 + i as u64, v);
        }
        let batch = h.claim(usize::MAX, None);
        let slots: Vec<u32> = batch.items.iter().map(|&(_, _, s)| s).collect();
        // Removed while the batch links them: dead, and still the linker's.
        for label in 50..100 {
            assert!(h.remove(label));
        }
        h.graph.write().repair();
        let freed = |h: &Hnsw| {
            let g = h.graph.read();
            slots
                .iter()
                .filter(|&&s| g.flags[s as usize].load(Relaxed) & FREE != 0)
                .count()
        };
        assert_eq!(freed(&h), 0, "a repair freed slots a batch was linking");
        h.link(&batch, 1);
        h.finish(batch);
        // Finished, they are merely dead: the next repair frees them.
        h.graph.write().repair();
        assert_eq!(freed(&h), slots.len());
        assert_eq!(h.len(), 50);
        for (i, v) in vs[..50].iter().enumerate() {
            assert_eq!(
                h.search(v, 1, 100, LabelFilter::default())[0].label,
                i as u64
            );
        }
    }
}
