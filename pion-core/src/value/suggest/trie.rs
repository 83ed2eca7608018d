//! The radix trie behind a suggestion dictionary, shaped the way RediSearch 2.10
//! shapes its own: which suggestions `FT.SUGGET` returns, and in which order ties
//! come, depends on the trie's layout (children are kept in order of the best score
//! recorded below them, subtrees are skipped by that score, and a delete merges and
//! re-sorts nodes), so nodes split, merge, record scores and move at the same moments
//! RediSearch's do. Its quirks are kept on purpose and named where they happen.

use std::cmp::Ordering;

/// A rune: one UTF-16 code unit, as RediSearch's tries store text (code points above
/// U+FFFF keep their low 16 bits).
pub type Rune = u16;

/// One node: a run of runes below its parent, terminal when a suggestion ends here.
#[derive(Debug, Clone)]
pub(super) struct Node {
    /// The runes this node adds to its parent's path (empty only at the root).
    pub(super) label: Vec<Rune>,
    /// The suggestion's score when terminal (RediSearch keeps it in an f32).
    pub(super) score: f32,
    /// The best score recorded on the way through this node: its own score when
    /// created, raised by every insert that passes (by the amount added, with
    /// `INCR`), recomputed from the children when a delete passes.
    pub(super) max_child: f32,
    pub(super) terminal: bool,
    /// A suggestion deleted here whose node is still needed (or not yet removed).
    pub(super) deleted: bool,
    pub(super) payload: Option<Box<[u8]>>,
    /// Children, best `max_child` first (ties by their runes); each starts with a
    /// different rune.
    pub(super) children: Vec<Node>,
}

/// C's `MAX(a, b)`: `a > b ? a : b` (so a NaN `b` wins).
fn c_max(a: f32, b: f32) -> f32 {
    if a > b {
        a
    } else {
        b
    }
}

impl Node {
    /// The root: no runes, no score, not terminal.
    pub(super) fn root() -> Node {
        Node::leaf(Vec::new(), 0.0, None, false)
    }

    fn leaf(label: Vec<Rune>, score: f32, payload: Option<&[u8]>, terminal: bool) -> Node {
        Node {
            label,
            score,
            max_child: score,
            terminal,
            deleted: false,
            payload: payload.map(Box::from),
            children: Vec::new(),
        }
    }

    /// Whether a live suggestion ends at this node.
    pub(super) fn is_live(&self) -> bool {
        self.terminal && !self.deleted
    }

    /// Adds `runes` below this node (or sets its score when they end here): replacing
    /// the score, or adding to it with `incr`. A payload replaces the old one only when
    /// it is not empty. Returns whether a suggestion was added (not just updated).
    /// The caller refuses zero scores and empty strings, as RediSearch does.
    pub(super) fn add(&mut self, runes: &[Rune], score: f32, incr: bool, payload: &[u8]) -> bool {
        let payload = (!payload.is_empty()).then_some(payload);
        let common = common_prefix(runes, &self.label);
        if common < self.label.len() {
            self.split(common);
            if common == runes.len() {
                // The new string ends exactly where the split happened.
                self.score = score;
                self.terminal = true;
                self.payload = payload.map(Box::from);
            } else {
                // Beside the split-off child, by first rune alone (not by score).
                let rest = &runes[common..];
                let at = usize::from(rest[0] > self.children[0].label[0]);
                self.children
                    .insert(at, Node::leaf(rest.to_vec(), score, payload, true));
                self.max_child = c_max(self.max_child, score);
            }
            return true;
        }
        self.max_child = c_max(self.max_child, score);
        if common == runes.len() {
            let was_live = self.is_live();
            if incr {
                self.score += score;
            } else {
                self.score = score;
            }
            if let Some(p) = payload {
                self.payload = Some(Box::from(p));
            }
            self.terminal = true;
            self.deleted = false;
            return !was_live;
        }
        let rest = &runes[common..];
        let mut by_score = None;
        for i in 0..self.children.len() {
            if self.children[i].label[0] == rest[0] {
                let added = self.children[i].add(rest, score, incr, payload.unwrap_or_default());
                self.resort_after_growing(i);
                return added;
            }
            if by_score.is_none() && self.children[i].max_child < score {
                by_score = Some(i);
            }
        }
        // Before the first child whose best is lower, else last.
        let at = by_score.unwrap_or(self.children.len());
        self.children
            .insert(at, Node::leaf(rest.to_vec(), score, payload, true));
        true
    }

    /// Re-sorts the children when child `i`'s best score now outranks its left
    /// neighbour or falls below its right one (RediSearch skips the right check for
    /// the last-but-one child).
    fn resort_after_growing(&mut self, i: usize) {
        let n = self.children.len();
        if n < 2 {
            return;
        }
        let best = self.children[i].max_child;
        if (i > 0 && best > self.children[i - 1].max_child)
            || (i + 2 < n && best < self.children[i + 1].max_child)
        {
            self.sort_children();
        }
    }

    /// Best `max_child` first, ties by runes (RediSearch's comparison; NaNs last).
    fn sort_children(&mut self) {
        self.children.sort_by(|a, b| {
            let (x, y) = (a.max_child, b.max_child);
            if x < y {
                Ordering::Greater
            } else if x > y {
                Ordering::Less
            } else if x.is_nan() != y.is_nan() {
                x.is_nan().cmp(&y.is_nan())
            } else {
                a.label.cmp(&b.label)
            }
        });
    }

    /// Cuts this node after `at` runes: the rest (with the score, payload, flags, best
    /// score and children) moves to a single new child; this node becomes a branch.
    fn split(&mut self, at: usize) {
        let tail = Node {
            label: self.label.split_off(at),
            score: self.score,
            max_child: self.max_child,
            terminal: self.terminal,
            deleted: self.deleted,
            payload: self.payload.take(),
            children: std::mem::take(&mut self.children),
        };
        self.score = 0.0;
        self.terminal = false;
        self.deleted = false;
        self.max_child = c_max(self.max_child, tail.score);
        self.children.push(tail);
    }

    /// Deletes the suggestion `runes` below this (root) node; then, from the deepest
    /// node visited up to the root, removes the first childless deleted child, merges
    /// children left with a single child, recomputes `max_child` and re-sorts the
    /// children by it. Returns whether a suggestion was deleted.
    pub(super) fn delete(&mut self, runes: &[Rune]) -> bool {
        if runes.is_empty() {
            return false;
        }
        let mut deleted = false;
        self.delete_below(runes, &mut deleted);
        deleted
    }

    fn delete_below(&mut self, runes: &[Rune], deleted: &mut bool) {
        let common = common_prefix(runes, &self.label);
        if common == runes.len() {
            if common == self.label.len() && self.is_live() {
                self.deleted = true;
                self.terminal = false;
                self.score = 0.0;
                *deleted = true;
            }
        } else if common == self.label.len() {
            let rest = &runes[common..];
            if let Some(child) = self.children.iter_mut().find(|c| c.label[0] == rest[0]) {
                child.delete_below(rest, deleted);
            }
        }
        self.tidy_children();
    }

    fn tidy_children(&mut self) {
        self.max_child = self.score;
        let mut i = 0;
        while i < self.children.len() {
            let child = &self.children[i];
            if child.children.is_empty() && child.deleted {
                self.children.remove(i);
                // RediSearch stops tidying at the first removal.
                for rest in &self.children[i..] {
                    self.max_child = c_max(self.max_child, rest.max_child);
                }
                break;
            }
            if child.children.len() == 1 && !child.terminal {
                self.children[i].merge_with_only_child();
            }
            self.max_child = c_max(self.max_child, self.children[i].max_child);
            i += 1;
        }
        self.sort_children();
    }

    /// Joins a non-terminal node with its only child: the child's runes, score, flags,
    /// payload and children move up.
    fn merge_with_only_child(&mut self) {
        let Some(child) = self.children.pop() else {
            return;
        };
        let Node {
            label,
            score,
            max_child,
            terminal,
            deleted,
            payload,
            children,
        } = child;
        self.label.extend_from_slice(&label);
        self.score = score;
        self.max_child = max_child;
        self.terminal = terminal;
        self.deleted = deleted;
        self.payload = payload;
        self.children = children;
    }

    /// Calls `each` with every live suggestion in depth-first order (a node before its
    /// children, children in their stored order): the order RediSearch saves them in.
    pub(super) fn for_each(&self, path: &mut Vec<Rune>, each: &mut impl FnMut(&[Rune], &Node)) {
        path.extend_from_slice(&self.label);
        if self.is_live() {
            each(path, self);
        }
        for child in &self.children {
            child.for_each(path, each);
        }
        path.truncate(path.len() - self.label.len());
    }

    /// Heap bytes held by this node and those below it (what the constant-time
    /// estimate is checked against).
    #[cfg(test)]
    pub(super) fn heap_size(&self) -> usize {
        std::mem::size_of::<Node>() * self.children.capacity()
            + self.label.capacity() * std::mem::size_of::<Rune>()
            + self.payload.as_ref().map_or(0, |p| p.len())
            + self.children.iter().map(Node::heap_size).sum::<usize>()
    }
}

fn common_prefix(a: &[Rune], b: &[Rune]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}
