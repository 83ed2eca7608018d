//! `FT.SUGGET`'s lookup: a depth-first walk of the trie that feeds each rune to a
//! Levenshtein automaton of the (case-folded) prefix, ranks what completes it, and
//! keeps the best in a bounded heap — all as RediSearch 2.10 does, so the same
//! dictionary gives the same suggestions in the same order with the same scores.
//!
//! What decides a result, step by step:
//! - **Matching.** Every rune on the path is folded and stepped through the
//!   automaton (at most one edit with `FUZZY`, none without). Once the whole prefix is
//!   matched, everything below matches.
//! - **Distance.** The distance a match is scored with is the smallest of the
//!   automaton's distances along the path — and past the matched prefix it is the
//!   value last recorded anywhere in the walk, a RediSearch quirk kept as is.
//! - **Score.** The stored score; `2³¹` instead when the suggestion equals the prefix
//!   (compared over as many *bytes* of runes as it has runes, RediSearch's `memcmp`);
//!   times `e^(−2·distance)` with `FUZZY`; divided by `√(1 + |runes − prefix bytes|)`.
//! - **Ranking.** A min-heap of the best `max` (RediSearch's own heap, so ties fall
//!   the same way); a new result must beat the heap's worst. Subtrees whose recorded
//!   best score is below that worst are skipped.
//! - **Trim.** With `TRIM`, results below a tenth of the best before them end the list.

use super::trie::{Node, Rune};

/// The score an exact match gets before the length factor (C's `INT_MAX` as a float).
const EXACT_SCORE: f32 = 2_147_483_648.0;
/// The bar before the heap is full (C's `INT_MIN` as a float): only subtrees whose
/// scores are all below it are skipped.
const NO_BAR: f32 = -2_147_483_648.0;
/// `TRIM` drops results scoring below the best so far divided by this.
const TRIM_FACTOR: f64 = 10.0;

/// What a lookup asks for.
#[derive(Debug, Clone, Copy)]
pub struct LookupOptions {
    /// At most this many results (`MAX`, at least 1).
    pub max: usize,
    /// Allow one edit in the prefix (`FUZZY`).
    pub fuzzy: bool,
    /// Drop results far below the best (`TRIM`).
    pub trim: bool,
}

/// One suggestion found.
#[derive(Debug, Clone, PartialEq)]
pub struct Suggestion {
    /// The suggestion as stored (UTF-8).
    pub text: Vec<u8>,
    /// Its ranking score (see the module docs).
    pub score: f32,
    /// Its payload, if it has one.
    pub payload: Option<Box<[u8]>>,
}

/// Runs a lookup of the folded `prefix` (`prefix_bytes` long as sent) over `root`.
pub(super) fn lookup(
    root: &Node,
    prefix: &[Rune],
    prefix_bytes: usize,
    opts: LookupOptions,
) -> Vec<Suggestion> {
    let max_edits = u32::from(opts.fuzzy);
    let automaton = Automaton {
        pattern: prefix,
        max_edits,
    };
    let start = automaton.start();
    let mut walk = Walk {
        automaton,
        prefix_bytes,
        states: vec![Some(start)],
        min_dists: vec![max_edits + 1],
        last_dist: max_edits + 1,
        path: Vec::new(),
        heap: Heap::with_capacity(opts.max),
        capacity: opts.max,
        min_score: NO_BAR,
    };
    walk.node(root);
    let mut out = walk.heap.into_descending();
    if opts.trim {
        trim(&mut out);
    }
    out.into_iter()
        .map(|(text, score, payload)| Suggestion {
            text: super::runes_to_utf8(&text),
            score,
            payload,
        })
        .collect()
}

fn trim(results: &mut Vec<Entry>) {
    let mut best = 0.0f32;
    for i in 0..results.len() {
        let score = results[i].1;
        if best != 0.0 && f64::from(score) < f64::from(best) / TRIM_FACTOR {
            results.truncate(i);
            return;
        }
        // C's MAX(best, score), NaN included.
        best = if best > score { best } else { score };
    }
}

/// A result held in the heap: runes, score, payload.
type Entry = (Vec<Rune>, f32, Option<Box<[u8]>>);

/// Levenshtein automaton of a pattern: a state is the sparse row of edit distances
/// (pattern position, distance) still within `max_edits`.
struct Automaton<'p> {
    pattern: &'p [Rune],
    max_edits: u32,
}

/// One automaton state with what the walk reads from it.
#[derive(Debug, Clone)]
struct State {
    row: Vec<(usize, u32)>,
    /// The distance at the row's furthest position (the start state says 0).
    distance: u32,
    /// Whether the whole pattern is matched.
    matched: bool,
}

impl Automaton<'_> {
    fn start(&self) -> State {
        let row: Vec<(usize, u32)> = (0..=self.max_edits).map(|i| (i as usize, i)).collect();
        let matched = self.is_match(&row);
        State {
            row,
            distance: 0,
            matched,
        }
    }

    fn is_match(&self, row: &[(usize, u32)]) -> bool {
        row.last().is_some_and(|&(i, _)| i == self.pattern.len())
    }

    /// The state after `c`, or `None` when no position stays within the edits.
    fn step(&self, state: &State, c: Rune) -> Option<State> {
        let row = &state.row;
        let mut next: Vec<(usize, u32)> = Vec::with_capacity(row.len());
        if let Some(&(0, d)) = row.first() {
            if d < self.max_edits {
                next.push((0, d + 1));
            }
        }
        for (j, &(i, d)) in row.iter().enumerate() {
            if i == self.pattern.len() {
                break;
            }
            let mut cost = d + u32::from(self.pattern[i] != c);
            if let Some(&(pi, pd)) = next.last() {
                if pi == i {
                    cost = cost.min(pd + 1);
                }
            }
            if let Some(&(ni, nd)) = row.get(j + 1) {
                if ni == i + 1 {
                    cost = cost.min(nd + 1);
                }
            }
            if cost <= self.max_edits {
                next.push((i + 1, cost));
            }
        }
        let &(_, distance) = next.last()?;
        let matched = self.is_match(&next);
        Some(State {
            row: next,
            distance,
            matched,
        })
    }
}

/// The walk's state: the automaton's stack (one entry per rune on the path; `None`
/// once the prefix is matched), the smallest distance along the path, and the heap.
struct Walk<'p> {
    automaton: Automaton<'p>,
    prefix_bytes: usize,
    states: Vec<Option<State>>,
    min_dists: Vec<u32>,
    /// The distance recorded at the last match (RediSearch reuses it past the prefix).
    last_dist: u32,
    path: Vec<Rune>,
    heap: Heap,
    capacity: usize,
    /// The heap's worst score once full ([`NO_BAR`] until then): the bar to beat.
    min_score: f32,
}

impl Walk<'_> {
    fn node(&mut self, node: &Node) {
        let mut consumed = 0;
        for (i, &r) in node.label.iter().enumerate() {
            let Some(matched) = self.feed(r) else {
                self.pop(consumed);
                return;
            };
            self.path.push(r);
            consumed += 1;
            if matched && i + 1 == node.label.len() && node.is_live() {
                self.offer(node);
            }
        }
        for child in &node.children {
            if child.max_child >= self.min_score || child.score >= self.min_score {
                self.node(child);
            }
        }
        self.pop(consumed);
    }

    fn pop(&mut self, n: usize) {
        let keep = self.states.len() - n;
        self.states.truncate(keep);
        self.min_dists.truncate(keep);
        self.path.truncate(self.path.len() - n);
    }

    /// Feeds one rune: `None` to stop descending, else whether the path matches.
    fn feed(&mut self, r: Rune) -> Option<bool> {
        let min_dist = *self.min_dists.last()?;
        let Some(state) = self.states.last()? else {
            // The prefix is matched: everything below matches too.
            self.states.push(None);
            self.min_dists.push(min_dist);
            return Some(true);
        };
        let mut matched = state.matched;
        if matched {
            self.last_dist = state.distance.min(min_dist);
        }
        match self.automaton.step(state, super::fold(r)) {
            Some(next) => {
                if next.matched {
                    matched = true;
                    self.last_dist = next.distance.min(min_dist);
                }
                self.min_dists.push(next.distance.min(min_dist));
                self.states.push(Some(next));
                Some(matched)
            }
            None if matched => {
                self.states.push(None);
                self.min_dists.push(min_dist);
                Some(true)
            }
            None => None,
        }
    }

    fn offer(&mut self, node: &Node) {
        let len = self.path.len();
        let pattern = self.automaton.pattern;
        let mut score = node.score;
        if len > 0 && len == pattern.len() && same_bytes(pattern, &self.path, len) {
            score = EXACT_SCORE;
        }
        if self.automaton.max_edits > 0 {
            score = (f64::from(score) * (-2.0 * f64::from(self.last_dist)).exp()) as f32;
        }
        let gap = len.abs_diff(self.prefix_bytes);
        score = (f64::from(score) / ((1 + gap) as f64).sqrt()) as f32;
        if self.heap.len() < self.capacity {
            self.heap
                .push((self.path.clone(), score, node.payload.clone()));
            if self.heap.len() == self.capacity {
                self.min_score = self.heap.worst();
            }
        } else if score > self.min_score {
            self.heap.poll();
            self.heap
                .push((self.path.clone(), score, node.payload.clone()));
            let worst = self.heap.worst();
            if worst > self.min_score {
                self.min_score = worst;
            }
        }
    }
}

/// RediSearch's exact-match test: `memcmp` of the runes over `len` *bytes* (so only
/// the first half of the runes, the last one by its low byte when `len` is odd).
fn same_bytes(a: &[Rune], b: &[Rune], len: usize) -> bool {
    let whole = len / 2;
    if a[..whole] != b[..whole] {
        return false;
    }
    len.is_multiple_of(2) || (a[whole] & 0xff) == (b[whole] & 0xff)
}

/// RediSearch's binary heap with the worst score at the root; its sift rules decide
/// the order of equal scores, so they are kept exactly.
struct Heap {
    items: Vec<Entry>,
}

/// RediSearch's comparison: higher scores are "smaller"; NaN equals everything.
fn cmp(a: &Entry, b: &Entry) -> i32 {
    if a.1 < b.1 {
        1
    } else if a.1 > b.1 {
        -1
    } else {
        0
    }
}

impl Heap {
    fn with_capacity(n: usize) -> Heap {
        Heap {
            items: Vec::with_capacity(n.min(64)),
        }
    }

    fn len(&self) -> usize {
        self.items.len()
    }

    fn worst(&self) -> f32 {
        self.items.first().map_or(0.0, |e| e.1)
    }

    fn push(&mut self, e: Entry) {
        self.items.push(e);
        let mut i = self.items.len() - 1;
        while i != 0 {
            let parent = (i - 1) / 2;
            if cmp(&self.items[i], &self.items[parent]) < 0 {
                return;
            }
            self.items.swap(i, parent);
            i = parent;
        }
    }

    fn poll(&mut self) -> Option<Entry> {
        if self.items.is_empty() {
            return None;
        }
        let top = self.items.swap_remove(0);
        if self.items.len() > 1 {
            self.sift_down();
        }
        Some(top)
    }

    fn sift_down(&mut self) {
        let n = self.items.len();
        let mut i = 0;
        loop {
            let (l, r) = (2 * i + 1, 2 * i + 2);
            let child = if r >= n {
                if l >= n {
                    return;
                }
                l
            } else if cmp(&self.items[l], &self.items[r]) < 0 {
                r
            } else {
                l
            };
            if cmp(&self.items[i], &self.items[child]) < 0 {
                self.items.swap(i, child);
                i = child;
            } else {
                return;
            }
        }
    }

    /// Empties the heap, best first (polled worst first, stored from the back).
    fn into_descending(mut self) -> Vec<Entry> {
        let mut out = Vec::with_capacity(self.items.len());
        while let Some(e) = self.poll() {
            out.push(e);
        }
        out.reverse();
        out
    }
}
