//! Searching the graph: the greedy descent through the upper layers, `SEARCH-LAYER`
//! (the best-first walk with `ef` candidates), range search on layer 0, and the scan
//! that answers a filter passing few vectors better than a walk would.

use std::cell::RefCell;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::Ordering::Relaxed;

use super::graph::{returnable_flags, Cand, Graph, Query};

/// How many rows ahead a scan asks for.
const SCAN_PREFETCH: usize = 8;

/// How many neighbours' rows ahead of its distances a walk asks for.
const ROW_PREFETCH: usize = 3;

thread_local! {
    static VISITED: RefCell<Visited> = const { RefCell::new(Visited { marks: Vec::new(), epoch: 0 }) };
}

/// A visited set reused across searches: a slot is visited when its mark equals the
/// current epoch, so clearing is one increment (a full wipe every 65535 searches).
struct Visited {
    marks: Vec<u16>,
    epoch: u16,
}

impl Visited {
    fn reset(&mut self, n: usize) {
        if self.marks.len() < n {
            self.marks.resize(n, 0);
        }
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            self.marks.fill(0);
            self.epoch = 1;
        }
    }

    /// True the first time `s` is seen since the last reset.
    #[inline]
    fn insert(&mut self, s: u32) -> bool {
        let m = &mut self.marks[s as usize];
        if *m == self.epoch {
            false
        } else {
            *m = self.epoch;
            true
        }
    }
}

impl Graph {
    /// Greedy walk on layer `l` from `ep` to a local minimum.
    pub(super) fn greedy(&self, q: &Query, mut ep: Cand, l: usize) -> Cand {
        loop {
            let mut moved = false;
            for n in self.neighbours(ep.s, l) {
                let d = self.dist(q, n);
                if d < ep.d {
                    ep = Cand { d, s: n };
                    moved = true;
                }
            }
            if !moved {
                return ep;
            }
        }
    }

    /// Greedy descent from the entry point to layer `to` (exclusive of the layers
    /// below it); `None` when the graph is empty.
    pub(crate) fn descend(&self, q: &Query, to: usize) -> Option<Cand> {
        let (e, top) = self.entry()?;
        let mut ep = Cand {
            d: self.dist(q, e),
            s: e,
        };
        for l in (to + 1..=top).rev() {
            ep = self.greedy(q, ep, l);
        }
        Some(ep)
    }

    /// `SEARCH-LAYER`: the `ef` nearest accepted slots found from `eps` on layer `l`,
    /// nearest first. Every slot is traversed; only accepted ones enter the result set,
    /// and the walk only stops once `ef` accepted ones were found (so selective filters
    /// search wider instead of returning too few). `reads_labels` says that `accept`
    /// reads each slot's label: the walk then asks for it with the slot's row (a 30 %
    /// tag filter's walk otherwise spent a fifth of its time waiting on labels; asking
    /// for them made the 30 % and 50 % filters 10–14 % faster).
    pub(crate) fn search_layer(
        &self,
        q: &Query,
        eps: &[Cand],
        ef: usize,
        l: usize,
        reads_labels: bool,
        accept: impl Fn(u32) -> bool,
    ) -> Vec<Cand> {
        self.search_layer_within(q, eps, ef, l, reads_labels, accept, |_| {}, usize::MAX)
    }

    /// [`search_layer`](Self::search_layer) that expands at most `effort` nodes,
    /// counting the entry as the first (Redis's bound on a filtered walk:
    /// `FILTER-EF` "candidates explored"), and answers with what passed by then.
    /// `ahead` is told of each slot `accept` may soon be asked about, a few
    /// distances before, so that it can ask memory for what it will read.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn search_layer_within(
        &self,
        q: &Query,
        eps: &[Cand],
        ef: usize,
        l: usize,
        reads_labels: bool,
        accept: impl Fn(u32) -> bool,
        ahead: impl Fn(u32),
        effort: usize,
    ) -> Vec<Cand> {
        // Redis counts the entry point as the first node explored.
        let mut expanded = 1usize;
        VISITED.with(|v| {
            let mut visited = v.borrow_mut();
            visited.reset(self.slots());
            let mut cands: BinaryHeap<Reverse<Cand>> = BinaryHeap::with_capacity(ef * 2);
            let mut res: BinaryHeap<Cand> = BinaryHeap::with_capacity(ef + 1);
            for &ep in eps {
                if !visited.insert(ep.s) {
                    continue;
                }
                if accept(ep.s) {
                    res.push(ep);
                }
                cands.push(Reverse(ep));
            }
            while res.len() > ef {
                res.pop();
            }
            let mut bound = if res.len() >= ef {
                res.peek().map_or(f32::INFINITY, |c| c.d)
            } else {
                f32::INFINITY
            };
            let mut fresh: Vec<u32> = Vec::with_capacity(self.max_links(l));
            while expanded < effort {
                let Some(Reverse(c)) = cands.pop() else {
                    break;
                };
                expanded += 1;
                if c.d > bound {
                    break;
                }
                // The next candidate's list, asked for while this one's neighbours
                // are measured (unless a nearer one turns up, it is read next).
                if let Some(Reverse(next)) = cands.peek() {
                    self.prefetch_list(next.s, l);
                }
                let list = self.list(c.s, l);
                let n = (list[0].load(Relaxed) as usize).min(list.len() - 1);
                fresh.clear();
                for cell in &list[1..=n] {
                    let nb = cell.load(Relaxed);
                    if visited.insert(nb) {
                        fresh.push(nb);
                    }
                }
                // Rows are asked of memory a few ahead of the distance that reads
                // them: enough to overlap the loads, few enough that the prefetches
                // do not queue behind each other.
                for &nb in fresh.iter().take(ROW_PREFETCH) {
                    self.prefetch_slot(nb, reads_labels);
                    ahead(nb);
                }
                for (j, &nb) in fresh.iter().enumerate() {
                    if let Some(&next) = fresh.get(j + ROW_PREFETCH) {
                        self.prefetch_slot(next, reads_labels);
                        ahead(next);
                    }
                    let d = self.dist(q, nb);
                    if res.len() < ef || d < bound {
                        let cand = Cand { d, s: nb };
                        cands.push(Reverse(cand));
                        if accept(nb) {
                            res.push(cand);
                            if res.len() > ef {
                                res.pop();
                            }
                            if res.len() >= ef {
                                bound = res.peek().map_or(f32::INFINITY, |c| c.d);
                            }
                        }
                    }
                }
            }
            res.into_sorted_vec()
        })
    }

    /// Asks for slot `s`'s row, and its label too when `label`.
    #[inline]
    fn prefetch_slot(&self, s: u32, label: bool) {
        self.prefetch_row(s);
        if label {
            if let Some(l) = self.labels.get(s as usize) {
                kernels::prefetch_line(l);
            }
        }
    }

    /// Range search on layer 0 (RediSearch's method): from the seeds, expand every
    /// candidate within `max(radius, nearest so far)·(1 + epsilon)`; returns accepted
    /// slots within `keep_within` (the radius, or a little more where the distances
    /// are estimates a caller re-ranks). Seeding from a layer-0 search rather than the
    /// one greedy entry reaches parts of the ball that only connect through nodes
    /// outside the widened radius.
    pub(crate) fn range_layer0(
        &self,
        q: &Query,
        seeds: &[Cand],
        radius: f32,
        keep_within: f32,
        epsilon: f32,
        accept: &dyn Fn(u32) -> bool,
    ) -> Vec<Cand> {
        let widen = |r: f32| r + r.abs() * epsilon;
        VISITED.with(|v| {
            let mut visited = v.borrow_mut();
            visited.reset(self.slots());
            let nearest = seeds.iter().map(|c| c.d).fold(f32::INFINITY, f32::min);
            let mut dynamic = nearest.max(radius);
            let mut cands = BinaryHeap::new();
            let mut out = Vec::new();
            for &seed in seeds {
                if !visited.insert(seed.s) {
                    continue;
                }
                if seed.d <= keep_within && accept(seed.s) {
                    out.push(seed);
                }
                cands.push(Reverse(seed));
            }
            while let Some(Reverse(c)) = cands.pop() {
                if c.d > widen(dynamic) {
                    break;
                }
                for nb in self.neighbours(c.s, 0) {
                    if !visited.insert(nb) {
                        continue;
                    }
                    let d = self.dist(q, nb);
                    if d <= widen(dynamic) {
                        cands.push(Reverse(Cand { d, s: nb }));
                        if d <= keep_within && accept(nb) {
                            out.push(Cand { d, s: nb });
                        }
                        if d < dynamic {
                            dynamic = d.max(radius);
                        }
                    }
                }
            }
            out.sort();
            out
        })
    }

    /// The `keep` nearest returnable slots whose label `passes`, by a scan of every
    /// slot, nearest first: cheaper than a walk when few slots pass (a walk then
    /// visits many times `ef` slots to find `ef` that pass), and exhaustive.
    ///
    /// The slots are tested 64 at a time, each test folded into a mask without a
    /// branch, and the mask's bits walked after: a filter that passes every tenth slot
    /// in no order mispredicts a branch per passing slot otherwise, and the test of
    /// 100K slots was half of a 10 % tag filter's FT.SEARCH. `passes` is inlined into
    /// that loop: called through `dyn`, it cost 0.5 ms a query over 100K slots.
    pub(crate) fn scan(&self, q: &Query, keep: usize, passes: impl Fn(u64) -> bool) -> Vec<Cand> {
        let mut accepted: Vec<u32> = Vec::new();
        let flags = self.flags.chunks(64);
        for (word, (flags, labels)) in flags.zip(self.labels.chunks(64)).enumerate() {
            let mut mask = 0u64;
            for (bit, (flag, &label)) in flags.iter().zip(labels).enumerate() {
                let returnable = returnable_flags(flag.load(Relaxed));
                mask |= u64::from(returnable & passes(label)) << bit;
            }
            let base = (word * 64) as u32;
            while mask != 0 {
                accepted.push(base + mask.trailing_zeros());
                mask &= mask - 1;
            }
        }
        self.nearest_of(q, keep, &accepted)
    }

    /// The `keep` nearest of `slots` by the graph's distance, nearest first.
    pub(crate) fn nearest_of(&self, q: &Query, keep: usize, slots: &[u32]) -> Vec<Cand> {
        let mut best: BinaryHeap<Cand> = BinaryHeap::with_capacity(keep + 1);
        for (i, &s) in slots.iter().enumerate() {
            // The rows are scattered: asked of memory a few ahead, their loads
            // overlap the distances computed meanwhile.
            if let Some(&ahead) = slots.get(i + SCAN_PREFETCH) {
                self.prefetch_row(ahead);
            }
            let d = self.dist(q, s);
            if best.len() < keep {
                best.push(Cand { d, s });
            } else if best.peek().is_some_and(|worst| d < worst.d) {
                best.pop();
                best.push(Cand { d, s });
            }
        }
        best.into_sorted_vec()
    }
}
