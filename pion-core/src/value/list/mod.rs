//! The list type: a double-ended queue of byte strings, held as Redis 7.0 holds it (a
//! `quicklist`): a deque of nodes, each a few kilobytes of elements packed back to
//! back ([`node`]).
//!
//! Besides storage, this module owns Redis's index arithmetic for lists — negative
//! indices counting from the tail, `LRANGE`/`LTRIM` clamping, `LREM`'s signed count and
//! `LPOS`'s rank — so every command (and the property test in `tests`) shares one
//! definition of it.

mod node;

use std::collections::VecDeque;
use std::fmt;

use node::{entry_len, Node, NodeIter};

use super::sampled_size;

/// The most bytes a node's packed elements take before a push starts a new node: the
/// node's buffer, header included, stays within 8 KiB (an allocator size class), as
/// Redis's default `list-max-listpack-size` (-2) bounds a listpack. An element larger
/// than this gets a node of its own. (The setting itself shapes the nodes `DUMP` and
/// the RDB writer emit; in memory every list uses this bound.)
const NODE_BYTES: usize = 8192 - node::HEADER;

/// One end of a list (`LEFT`/`RIGHT` in `LMOVE` and `LMPOP`; head and tail in Redis).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// The head (index 0).
    Left,
    /// The tail (index -1).
    Right,
}

/// A list value.
#[derive(Clone, Default)]
pub struct ListValue {
    repr: Repr,
}

/// How a list holds its nodes.
#[derive(Clone)]
enum Repr {
    /// At most one node, in place: most lists, with no deque to allocate (an empty
    /// list is an empty node, which allocates nothing).
    One(Node),
    /// Several nodes (boxed: keeps `Value`, and every keyspace entry, small).
    Many(Box<Nodes>),
}

impl Default for Repr {
    fn default() -> Repr {
        Repr::One(Node::default())
    }
}

/// The nodes of a list of more than one.
#[derive(Clone, Default)]
struct Nodes {
    /// Never holds an empty node.
    deque: VecDeque<Node>,
    /// Elements in all nodes.
    len: usize,
}

impl Nodes {
    /// The node at one end.
    fn edge_mut(&mut self, end: End) -> Option<&mut Node> {
        match end {
            End::Left => self.deque.front_mut(),
            End::Right => self.deque.back_mut(),
        }
    }

    /// Adds a node at one end.
    fn push_edge(&mut self, end: End, node: Node) {
        match end {
            End::Left => self.deque.push_front(node),
            End::Right => self.deque.push_back(node),
        }
    }

    /// Removes the node at one end.
    fn pop_edge(&mut self, end: End) {
        match end {
            End::Left => self.deque.pop_front(),
            End::Right => self.deque.pop_back(),
        };
    }

    /// Drops `n` elements (`n <= len`) from one end: whole nodes, then part of one.
    fn shed(&mut self, end: End, mut n: usize) {
        self.len -= n;
        while n > 0 {
            let Some(node) = self.edge_mut(end) else {
                return;
            };
            if node.count() > n {
                return node.shed(end, n);
            }
            n -= node.count();
            self.pop_edge(end);
        }
    }
}

/// The nodes of a list as one or two slices, in order.
type NodeSlices<'a> = std::iter::Chain<std::slice::Iter<'a, Node>, std::slice::Iter<'a, Node>>;

impl PartialEq for ListValue {
    fn eq(&self, other: &ListValue) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for ListValue {}

impl fmt::Debug for ListValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.iter().map(String::from_utf8_lossy))
            .finish()
    }
}

impl ListValue {
    /// An empty list.
    pub fn new() -> ListValue {
        ListValue::default()
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        match &self.repr {
            Repr::One(node) => node.count(),
            Repr::Many(nodes) => nodes.len,
        }
    }

    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The nodes as two slices (the second empty unless a deque wrapped around).
    fn slices(&self) -> (&[Node], &[Node]) {
        match &self.repr {
            Repr::One(node) if node.count() == 0 => (&[], &[]),
            Repr::One(node) => (std::slice::from_ref(node), &[]),
            Repr::Many(nodes) => nodes.deque.as_slices(),
        }
    }

    fn node_count(&self) -> usize {
        let (a, b) = self.slices();
        a.len() + b.len()
    }

    fn node(&self, ni: usize) -> &Node {
        let (a, b) = self.slices();
        a.get(ni).unwrap_or_else(|| &b[ni - a.len()])
    }

    fn node_mut(&mut self, ni: usize) -> &mut Node {
        match &mut self.repr {
            Repr::One(node) => node,
            Repr::Many(nodes) => &mut nodes.deque[ni],
        }
    }

    /// Nodes `first..end` in order.
    fn nodes_in(&self, first: usize, end: usize) -> NodeSlices<'_> {
        let (a, b) = self.slices();
        let end = end.max(first);
        let front = &a[first.min(a.len())..end.min(a.len())];
        let back = &b
            [first.saturating_sub(a.len()).min(b.len())..end.saturating_sub(a.len()).min(b.len())];
        front.iter().chain(back.iter())
    }

    /// The nodes as a deque, moving a single node into one first.
    fn many(&mut self) -> &mut Nodes {
        if let Repr::One(node) = &mut self.repr {
            let node = std::mem::take(node);
            let len = node.count();
            let mut deque = VecDeque::with_capacity(2);
            if len > 0 {
                deque.push_back(node);
            }
            self.repr = Repr::Many(Box::new(Nodes { deque, len }));
        }
        match &mut self.repr {
            Repr::Many(nodes) => nodes,
            // Just made a deque above.
            Repr::One(_) => unreachable!("a list just given a deque has one"),
        }
    }

    /// Moves the last remaining node back in place once a deque holds one or none.
    fn settle(&mut self) {
        if let Repr::Many(nodes) = &mut self.repr {
            if nodes.deque.len() <= 1 {
                let node = nodes.deque.pop_front().unwrap_or_default();
                self.repr = Repr::One(node);
            }
        }
    }

    /// The elements from head to tail (`.rev()` walks from the tail).
    pub fn iter(&self) -> Elements<'_> {
        Elements {
            inner: self.nodes_in(0, self.node_count()).flat_map(Node::iter),
            left: self.len(),
            past_end: 0,
        }
    }

    /// Adds an element at one end.
    pub fn push(&mut self, end: End, value: Vec<u8>) {
        let grown = entry_len(value.len());
        if let Repr::One(node) = &mut self.repr {
            if node.count() == 0 || node.bytes() + grown <= NODE_BYTES {
                return node.push(end, &value);
            }
        }
        let nodes = self.many();
        nodes.len += 1;
        match nodes.edge_mut(end) {
            Some(node) if node.bytes() + grown <= NODE_BYTES => node.push(end, &value),
            _ => nodes.push_edge(end, Node::with(&value)),
        }
    }

    /// Removes and returns the element at one end.
    pub fn pop(&mut self, end: End) -> Option<Vec<u8>> {
        match &mut self.repr {
            Repr::One(node) if node.count() == 0 => None,
            Repr::One(node) => Some(node.pop(end)),
            Repr::Many(nodes) => {
                let node = nodes.edge_mut(end)?;
                let value = node.pop(end);
                if node.count() == 0 {
                    nodes.pop_edge(end);
                }
                nodes.len -= 1;
                self.settle();
                Some(value)
            }
        }
    }

    /// Removes up to `count` elements from one end, in the order they were popped.
    pub fn pop_many(&mut self, end: End, count: usize) -> Vec<Vec<u8>> {
        let n = count.min(self.len());
        (0..n).filter_map(|_| self.pop(end)).collect()
    }

    /// Position of a Redis index (negative counts from the tail), if it is inside.
    fn position(&self, index: i64) -> Option<usize> {
        let len = self.len() as i64;
        let i = if index < 0 { len + index } else { index };
        (0..len).contains(&i).then_some(i as usize)
    }

    /// The node holding position `pos` (< len) and the element's index in it, found
    /// by walking node counts from the nearer end.
    fn locate(&self, pos: usize) -> (usize, usize) {
        let len = self.len();
        let nodes = self.nodes_in(0, self.node_count());
        if pos < len / 2 {
            let mut rest = pos;
            for (ni, node) in nodes.enumerate() {
                if rest < node.count() {
                    return (ni, rest);
                }
                rest -= node.count();
            }
        } else {
            let mut after = len - pos;
            for (back, node) in nodes.rev().enumerate() {
                if after <= node.count() {
                    return (self.node_count() - 1 - back, node.count() - after);
                }
                after -= node.count();
            }
        }
        // Node counts sum to `len`, so a position below it is always found.
        unreachable!("list position {pos} outside its {len} elements")
    }

    /// Splits node `ni` in two when an edit left it past the node bound.
    fn rebalance(&mut self, ni: usize) {
        let node = self.node(ni);
        if node.bytes() > NODE_BYTES && node.count() > 1 {
            // A deque first, so its length counts the node whole.
            let nodes = self.many();
            let node = &mut nodes.deque[ni];
            let tail = node.split_off(node.count() / 2);
            nodes.deque.insert(ni + 1, tail);
        }
    }

    /// The element at a Redis index (`LINDEX`).
    pub fn get(&self, index: i64) -> Option<&[u8]> {
        let (ni, idx) = self.locate(self.position(index)?);
        Some(self.node(ni).get(idx))
    }

    /// Replaces the element at a Redis index (`LSET`); false when out of range.
    pub fn set(&mut self, index: i64, value: Vec<u8>) -> bool {
        match self.position(index) {
            Some(pos) => {
                let (ni, idx) = self.locate(pos);
                self.node_mut(ni).replace(idx, &value);
                self.rebalance(ni);
                true
            }
            None => false,
        }
    }

    /// The elements between two Redis indices, both inclusive, clamped as `LRANGE` does.
    pub fn range(&self, start: i64, stop: i64) -> Elements<'_> {
        let Some((from, to)) = clamp_range(start, stop, self.len()) else {
            return Elements {
                inner: self.nodes_in(0, 0).flat_map(Node::iter),
                left: 0,
                past_end: 0,
            };
        };
        let (first, skip_front) = self.locate(from);
        let (last, at) = self.locate(to - 1);
        let mut inner = self
            .nodes_in(first, last + 1)
            .flat_map(Node::iter as NodeWalk);
        for _ in 0..skip_front {
            inner.next();
        }
        Elements {
            inner,
            left: to - from,
            past_end: self.node(last).count() - at - 1,
        }
    }

    /// Keeps only the elements between two Redis indices, clamped as `LTRIM` does
    /// (an empty range empties the list).
    pub fn trim(&mut self, start: i64, stop: i64) {
        let Some((from, to)) = clamp_range(start, stop, self.len()) else {
            self.repr = Repr::default();
            return;
        };
        let nodes = match &mut self.repr {
            Repr::One(node) => {
                node.truncate(to);
                node.drop_front(from);
                return;
            }
            Repr::Many(nodes) => nodes,
        };
        let after = nodes.len - to;
        nodes.shed(End::Right, after);
        nodes.shed(End::Left, from);
        self.settle();
    }

    /// Inserts `value` before or after the first element equal to `pivot` (`LINSERT`);
    /// the new length, or `None` when the pivot is absent.
    pub fn insert(&mut self, pivot: &[u8], before: bool, value: Vec<u8>) -> Option<usize> {
        let (ni, idx) = self
            .nodes_in(0, self.node_count())
            .enumerate()
            .find_map(|(ni, node)| node.iter().position(|e| e == pivot).map(|idx| (ni, idx)))?;
        self.node_mut(ni)
            .insert(if before { idx } else { idx + 1 }, &value);
        if let Repr::Many(nodes) = &mut self.repr {
            nodes.len += 1;
        }
        self.rebalance(ni);
        Some(self.len())
    }

    /// Removes elements equal to `elem` (`LREM`): the first `count` from the head when
    /// positive, the last `|count|` from the tail when negative, all when zero. Returns
    /// how many were removed.
    pub fn remove(&mut self, count: i64, elem: &[u8]) -> usize {
        let limit = usize::try_from(count.unsigned_abs()).unwrap_or(usize::MAX);
        let total = self.iter().filter(|e| *e == elem).count();
        let removing = if count == 0 { total } else { total.min(limit) };
        if removing == 0 {
            return 0;
        }
        // Matches are numbered from the head; keep those outside the removed window.
        let first_removed = if count < 0 { total - removing } else { 0 };
        let window = first_removed..first_removed + removing;
        let mut seen = 0usize;
        let mut keep = |e: &[u8]| {
            if e != elem {
                return true;
            }
            let n = seen;
            seen += 1;
            !window.contains(&n)
        };
        match &mut self.repr {
            Repr::One(node) => {
                node.retain(keep);
            }
            Repr::Many(nodes) => {
                for node in nodes.deque.iter_mut() {
                    node.retain(&mut keep);
                }
                nodes.deque.retain(|node| node.count() > 0);
                nodes.len -= removing;
                self.settle();
            }
        }
        removing
    }

    /// Indices of elements equal to `elem` (`LPOS`), scanning from the head for a
    /// positive `rank` and from the tail for a negative one, skipping the first
    /// `|rank| - 1` matches, returning at most `max` (0 = all) and looking at no more
    /// than `maxlen` elements (0 = all). `rank` must not be zero.
    ///
    /// Redis negates the rank in a C `long`, so `i64::MIN` stays negative and skips no
    /// match at all: it behaves like rank -1. This reproduces that.
    pub fn positions(&self, elem: &[u8], rank: i64, max: usize, maxlen: usize) -> Vec<usize> {
        let skip = if rank == i64::MIN {
            0
        } else {
            rank.unsigned_abs().saturating_sub(1)
        };
        let len = self.len();
        let scan = if maxlen == 0 { len } else { maxlen.min(len) };
        let at = |step: usize| if rank < 0 { len - 1 - step } else { step };
        let matching = |(_, e): &(usize, &[u8])| *e == elem;
        let found: Vec<usize> = if rank < 0 {
            matching_steps(
                self.iter().rev().take(scan).enumerate(),
                matching,
                skip,
                max,
            )
        } else {
            matching_steps(self.iter().take(scan).enumerate(), matching, skip, max)
        };
        found.into_iter().map(at).collect()
    }

    /// Heap bytes: the nodes' buffers (extrapolated from a sample of them: this is
    /// called on every write, so it never walks a long list) and the deque.
    pub(crate) fn mem_usage(&self, samples: usize) -> usize {
        match &self.repr {
            Repr::One(node) => node.heap_bytes(),
            Repr::Many(nodes) => {
                std::mem::size_of::<Nodes>()
                    + std::mem::size_of::<Node>() * nodes.deque.capacity()
                    + sampled_size(
                        nodes.deque.iter().map(Node::heap_bytes),
                        nodes.deque.len(),
                        0,
                        samples,
                    )
            }
        }
    }
}

impl FromIterator<Vec<u8>> for ListValue {
    fn from_iter<I: IntoIterator<Item = Vec<u8>>>(iter: I) -> Self {
        let mut list = ListValue::new();
        list.extend(iter);
        list
    }
}

impl Extend<Vec<u8>> for ListValue {
    fn extend<I: IntoIterator<Item = Vec<u8>>>(&mut self, iter: I) {
        for value in iter {
            self.push(End::Right, value);
        }
    }
}

/// How [`Elements`] walks a node.
type NodeWalk = for<'a> fn(&'a Node) -> NodeIter<'a>;

/// Elements of a list or of a range of it, in order (`.rev()`: reversed), with an
/// exact length.
pub struct Elements<'a> {
    inner: std::iter::FlatMap<NodeSlices<'a>, NodeIter<'a>, NodeWalk>,
    left: usize,
    /// Elements of the last node after the range, skipped on the first step from the
    /// back (a forward walk, the common one, never pays for them).
    past_end: usize,
}

impl<'a> Iterator for Elements<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        self.left = self.left.checked_sub(1)?;
        self.inner.next()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }

    fn fold<B, F: FnMut(B, &'a [u8]) -> B>(self, init: B, f: F) -> B {
        self.inner.take(self.left).fold(init, f)
    }
}

impl DoubleEndedIterator for Elements<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.left = self.left.checked_sub(1)?;
        for _ in 0..std::mem::take(&mut self.past_end) {
            self.inner.next_back();
        }
        self.inner.next_back()
    }
}

impl ExactSizeIterator for Elements<'_> {}

/// The steps of the elements `matching` accepts, after skipping the first `skip`
/// matches, at most `max` of them (0 = all).
fn matching_steps<'a>(
    elements: impl Iterator<Item = (usize, &'a [u8])>,
    matching: impl FnMut(&(usize, &'a [u8])) -> bool,
    skip: u64,
    max: usize,
) -> Vec<usize> {
    let found = elements
        .filter(matching)
        .skip(usize::try_from(skip).unwrap_or(usize::MAX))
        .map(|(step, _)| step);
    if max == 0 {
        found.collect()
    } else {
        found.take(max).collect()
    }
}

/// Clamps Redis's inclusive `start..=stop` (negative = from the tail) to a half-open
/// range of positions, or `None` when it selects nothing.
fn clamp_range(start: i64, stop: i64, len: usize) -> Option<(usize, usize)> {
    let len = len as i64;
    // `len + x` cannot overflow: len is non-negative and x negative.
    let start = if start < 0 { len + start } else { start }.max(0);
    let stop = if stop < 0 { len + stop } else { stop };
    if start > stop || start >= len {
        return None;
    }
    let stop = stop.min(len - 1);
    Some((start as usize, stop as usize + 1))
}

#[cfg(test)]
mod tests;
