//! Maintenance of the HNSW graph: repair after deletes (reconnecting in-neighbours of
//! dead slots with the selection heuristic, moving the entry point, freeing slots) and
//! restoring slots when loading.

use std::sync::atomic::{AtomicU32, AtomicU8, Ordering::Relaxed};

use parking_lot::Mutex;

use super::graph::{Cand, Codes, Graph, DEAD, FREE, IN_FLIGHT, NO_ENTRY};

impl Graph {
    /// Reconnects the live nodes that link to dead slots, moves the entry point off a
    /// dead slot and frees dead slots for reuse. Needs exclusive access.
    pub(crate) fn repair(&mut self) {
        if self.dead.load(Relaxed) == 0 {
            return;
        }
        let n = self.slots();
        let gone = |g: &Graph, x: u32| g.flags[x as usize].load(Relaxed) & (DEAD | FREE) != 0;
        // A dead slot that a build batch is still linking (in flight) is kept: the
        // linker owns it until the batch finishes, which leaves it dead for the next
        // repair. Freed under the linker, it would be linked (perhaps as the entry
        // point) and handed out again while other nodes point at it.
        let to_free: Vec<u32> = (0..n as u32)
            .filter(|&x| self.flags[x as usize].load(Relaxed) & (DEAD | FREE | IN_FLIGHT) == DEAD)
            .collect();
        for u in 0..n as u32 {
            if gone(self, u) {
                continue;
            }
            for l in 0..=self.levels[u as usize] as usize {
                let ids = self.neighbours(u, l);
                if !ids.iter().any(|&x| gone(self, x)) {
                    continue;
                }
                // Candidates: u's live links, the dead links' live links, and one more hop
                // through dead ones.
                let mut set: Vec<u32> = Vec::new();
                let mut frontier: Vec<u32> = ids;
                for _ in 0..2 {
                    let mut next = Vec::new();
                    for x in frontier {
                        if x == u || set.contains(&x) {
                            continue;
                        }
                        if gone(self, x) {
                            if self.levels[x as usize] as usize >= l
                                && self.flags[x as usize].load(Relaxed) & FREE == 0
                            {
                                next.extend(self.neighbours(x, l));
                            }
                        } else {
                            set.push(x);
                        }
                    }
                    frontier = next;
                }
                let q = self.node_query(u);
                let mut cands: Vec<Cand> = set
                    .into_iter()
                    .map(|x| Cand {
                        d: self.dist(&q, x),
                        s: x,
                    })
                    .collect();
                cands.sort();
                let chosen = self.select(&cands, self.max_links(l));
                self.set_list(u, l, &chosen);
            }
        }
        if self.entry().is_some_and(|(e, _)| gone(self, e)) {
            let best = (0..n as u32)
                .filter(|&x| !gone(self, x))
                .max_by_key(|&x| self.levels[x as usize]);
            let e = best.map_or(NO_ENTRY, |x| {
                (x as u64) << 8 | self.levels[x as usize] as u64
            });
            self.entry.store(e, Relaxed);
        }
        for s in to_free {
            let i = s as usize;
            if self.map.get(&self.labels[i]) == Some(&s) {
                self.map.remove(&self.labels[i]);
            }
            self.flags[i].store(FREE, Relaxed);
            self.set_list(s, 0, &[]);
            for l in 1..=self.levels[i] as usize {
                self.set_list(s, l, &[]);
            }
            self.free.push(s);
        }
        let still_dead = (0..n as u32)
            .filter(|&x| self.flags[x as usize].load(Relaxed) & (DEAD | FREE) == DEAD)
            .count();
        self.dead.store(still_dead, Relaxed);
        self.reconnect_unreachable();
    }

    /// Links again every live node that no path from the entry point reaches on layer
    /// 0: under heavy churn (a re-index replacing every node) a node's in-links can all
    /// come from nodes since removed, and searches could never return it. Nodes in
    /// flight are their linker's.
    fn reconnect_unreachable(&mut self) {
        let Some((entry, _)) = self.entry() else {
            return;
        };
        let n = self.slots();
        let mut seen = vec![false; n];
        seen[entry as usize] = true;
        let mut stack = vec![entry];
        while let Some(u) = stack.pop() {
            for x in self.neighbours(u, 0) {
                let i = x as usize;
                if !seen[i] && self.flags[i].load(Relaxed) & FREE == 0 {
                    seen[i] = true;
                    stack.push(x);
                }
            }
        }
        for s in 0..n as u32 {
            if !seen[s as usize]
                && self.flags[s as usize].load(Relaxed) & (DEAD | FREE | IN_FLIGHT) == 0
            {
                self.link(s);
            }
        }
    }

    /// Rebuilds the free list from flags (after loading).
    pub(crate) fn rebuild_free(&mut self) {
        self.free = (0..self.slots() as u32)
            .filter(|&x| self.flags[x as usize].load(Relaxed) & FREE != 0)
            .collect();
    }

    /// Sets the entry point (after loading).
    pub(crate) fn set_entry(&self, e: Option<(u32, usize)>) {
        let v = e.map_or(NO_ENTRY, |(s, l)| (s as u64) << 8 | l as u64);
        self.entry.store(v, Relaxed);
    }

    /// Pushes a restored slot (loading): vector row already encoded.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn push_raw(
        &mut self,
        label: u64,
        flags: u8,
        level: usize,
        norm: f32,
        row_f32: &[f32],
        row_i8: (&[i8], f32),
        row_bin: &[u64],
        row_exact: &[f32],
        lists: &[Vec<u32>],
    ) {
        if let Some(exact) = &mut self.exact {
            exact.push(row_exact);
        }
        match &mut self.codes {
            Codes::F32(c) => c.extend_from_slice(row_f32),
            Codes::I8 { codes, scales } => {
                codes.extend_from_slice(row_i8.0);
                scales.push(row_i8.1);
            }
            Codes::Bin(c) => c.extend_from_slice(row_bin),
        }
        let s = self.labels.len() as u32;
        self.norms.push(norm);
        self.labels.push(label);
        self.levels.push(level as u8);
        self.flags.push(AtomicU8::new(flags));
        self.locks.push(Mutex::new(()));
        self.links0
            .extend((0..1 + self.m0).map(|_| AtomicU32::new(0)));
        self.upper_off.push(if level == 0 {
            u32::MAX
        } else {
            let off = self.upper.len() as u32;
            self.upper
                .extend((0..level * (1 + self.m)).map(|_| AtomicU32::new(0)));
            off
        });
        for (l, ids) in lists.iter().enumerate().take(level + 1) {
            self.set_list(s, l, ids);
        }
        if flags & (DEAD | FREE) == 0 {
            if let Some(old) = self.map.insert(label, s) {
                self.mark_dead(old);
            }
            self.live.fetch_add(1, Relaxed);
        }
        if flags & (DEAD | FREE) == DEAD {
            self.map.entry(label).or_insert(s);
            self.dead.fetch_add(1, Relaxed);
        }
    }
}
