//! RediSearch's distance penalty: TFIDF, TFIDF.DOCNORM and BM25 divide a document's
//! score by how far apart the query's terms lie in it ("slop"), so that a document
//! holding the words side by side ranks above one holding them pages apart.
//!
//! The penalty is computed on the query's root: an intersection's children in
//! RediSearch's iteration order (fewest documents first, ties as written), or the
//! children of a union that the document matched. Each pair of consecutive children
//! with positions adds the square of its closest distance; the penalty is the
//! integer part of the root of the sum, or the number of children less one when the
//! sum is 0 (never below 1).

use std::collections::HashMap;

use super::{eval, text_fields, Cx, Matches};
use crate::index::docs::{DocSet, FieldIndex};
use crate::index::query::{FieldScope, Node, TagAlternative};

/// What the penalty of every document needs from the query, worked out once per
/// query: the root's children in the order they pair, what a union's children
/// matched, and the terms each expansion (prefix, suffix, fuzzy) stands for.
pub(super) struct Penalty<'n, 'd> {
    root: Root<'n>,
    /// Expansion nodes (by address) and their indexed terms, in byte order.
    expansions: HashMap<*const Node, Vec<&'d [u8]>>,
}

enum Root<'n> {
    /// The root pairs nothing: every penalty is 1.
    None,
    /// An intersection's children in iteration order.
    Intersect(Vec<&'n Node>),
    /// A union's children, each with the documents it matched.
    Union(Vec<(&'n Node, DocSet)>),
}

impl<'n, 'd> Penalty<'n, 'd> {
    /// Plans the penalty of a query whose tree is `root`.
    pub(super) fn plan(cx: &Cx<'d>, root: &'n Node) -> Penalty<'n, 'd> {
        let mut expansions = HashMap::new();
        collect_expansions(cx, root, &mut expansions);
        let root = match root {
            Node::Intersect { children, .. } if children.len() > 1 => {
                Root::Intersect(iteration_order_with(cx, children, &expansions))
            }
            Node::Union { children, .. } if children.len() > 1 => Root::Union(
                children
                    .iter()
                    .map(|c| (c, union_child_set(cx, c, &expansions)))
                    .collect(),
            ),
            _ => Root::None,
        };
        Penalty { root, expansions }
    }

    /// The divisor of document `id`'s score.
    pub(super) fn of(&self, cx: &Cx<'_>, id: u64) -> f64 {
        let children: Vec<&Node> = match &self.root {
            Root::None => return 1.0,
            Root::Intersect(children) => children.clone(),
            // Most documents of a union match one child (a term and its stem): no
            // pairs, and nothing to gather.
            Root::Union(children)
                if children.iter().filter(|(_, s)| s.contains(id)).count() <= 1 =>
            {
                return 1.0
            }
            Root::Union(children) => children
                .iter()
                .filter(|(_, set)| set.contains(id))
                .map(|(c, _)| *c)
                .collect(),
        };
        if children.len() <= 1 {
            return 1.0;
        }
        let lists: Vec<Vec<usize>> = children
            .iter()
            .filter_map(|c| self.offsets(cx, c, id))
            .collect();
        let dist: usize = lists
            .windows(2)
            .map(|pair| {
                let d = closest(&pair[0], &pair[1]);
                d * d
            })
            .sum();
        if dist == 0 {
            (children.len() - 1) as f64
        } else {
            (dist as f64).sqrt().floor()
        }
    }

    /// The positions a child's result carries in a document: those of its matched
    /// terms (in every field, as RediSearch's term records keep them), merged; `None`
    /// for a child without text.
    fn offsets(&self, cx: &Cx<'_>, node: &Node, id: u64) -> Option<Vec<usize>> {
        let mut out = match node {
            Node::Term { fields, term, .. } => {
                if holds(cx, fields, term, id) {
                    term_positions(cx, term, id)
                } else {
                    Vec::new()
                }
            }
            Node::Prefix { fields, .. }
            | Node::Suffix { fields, .. }
            | Node::Fuzzy { fields, .. } => {
                // Scored by its first matching term alone, which alone gives positions.
                let terms = self
                    .expansions
                    .get(&(node as *const Node))
                    .map_or(&[][..], Vec::as_slice);
                first_held(cx, fields, terms, id)
                    .map(|t| term_positions(cx, t, id))
                    .unwrap_or_default()
            }
            Node::Phrase { terms, .. } => terms
                .iter()
                .flat_map(|t| term_positions(cx, t, id))
                .collect(),
            Node::Union { children, .. } | Node::Intersect { children, .. } => {
                let mut all: Option<Vec<usize>> = None;
                for c in children {
                    if let Some(p) = self.offsets(cx, c, id) {
                        all.get_or_insert_with(Vec::new).extend(p);
                    }
                }
                all?
            }
            // Unmatched, an optional child is a result without positions.
            Node::Optional { child, .. } => match self.offsets(cx, child, id) {
                Some(o) if !o.is_empty() => o,
                _ => return None,
            },
            // A union of tag terms: positions, none of them stored.
            Node::Tag { alternatives, .. }
                if alternatives.len() > 1
                    || alternatives
                        .iter()
                        .any(|a| matches!(a, TagAlternative::Prefix(_))) =>
            {
                Vec::new()
            }
            _ => return None,
        };
        out.sort_unstable();
        Some(out)
    }
}

/// Every expansion node under `node` whose terms positions may be asked for (not
/// under a negation, which has none) and the indexed terms it stands for.
fn collect_expansions<'d>(cx: &Cx<'d>, node: &Node, out: &mut HashMap<*const Node, Vec<&'d [u8]>>) {
    match node {
        Node::Prefix { .. } | Node::Suffix { .. } | Node::Fuzzy { .. } => {
            let terms = super::expansion_terms(cx.def, cx.docs, node, cx.opts.max_expansions);
            out.insert(node as *const Node, terms);
        }
        Node::Union { children, .. } | Node::Intersect { children, .. } => {
            for c in children {
                collect_expansions(cx, c, out);
            }
        }
        Node::Optional { child, .. } => collect_expansions(cx, child, out),
        _ => {}
    }
}

/// An intersection's children in RediSearch's iteration order: fewest documents
/// first, ties as written.
pub(super) fn iteration_order<'n>(cx: &Cx<'_>, children: &'n [Node]) -> Vec<&'n Node> {
    let mut expansions = HashMap::new();
    for c in children {
        collect_expansions(cx, c, &mut expansions);
    }
    iteration_order_with(cx, children, &expansions)
}

fn iteration_order_with<'n>(
    cx: &Cx<'_>,
    children: &'n [Node],
    expansions: &HashMap<*const Node, Vec<&[u8]>>,
) -> Vec<&'n Node> {
    let mut sorted: Vec<(usize, &Node)> = children
        .iter()
        .map(|c| (estimate(cx, c, expansions), c))
        .collect();
    // A stable sort: children with as many documents keep the written order.
    sorted.sort_by_key(|(n, _)| *n);
    sorted.into_iter().map(|(_, c)| c).collect()
}

/// The documents a union's child matched. A text leaf matched those holding its
/// term (or one of its expansion's terms) in its fields: the documents its
/// positions are not empty for, read from the postings.
fn union_child_set(
    cx: &Cx<'_>,
    child: &Node,
    expansions: &HashMap<*const Node, Vec<&[u8]>>,
) -> DocSet {
    let (fields, terms): (&FieldScope, Vec<&[u8]>) = match child {
        Node::Term { fields, term, .. } => (fields, vec![term.as_slice()]),
        Node::Prefix { fields, .. } | Node::Suffix { fields, .. } | Node::Fuzzy { fields, .. } => (
            fields,
            expansions
                .get(&(child as *const Node))
                .cloned()
                .unwrap_or_default(),
        ),
        other => return eval(other, cx, &mut Matches::default()).unwrap_or_default(),
    };
    let mut out = DocSet::new();
    for (_, index) in text_fields(cx.def, cx.docs, fields) {
        if let FieldIndex::Text {
            terms: postings, ..
        } = index
        {
            for t in &terms {
                if let Some(set) = postings.get(*t) {
                    out.or(set);
                }
            }
        }
    }
    out
}

/// The closest distance between a position of `a` and one of `b` (both sorted),
/// walking them together until the distance is at most 1.
///
/// A union of tags carries positions but none are stored: RediSearch then measures
/// from its end-of-positions marker, `u32::MAX`, in 32-bit arithmetic, which comes to
/// the other side's first position (counted from 1, as RediSearch counts) plus one.
fn closest(a: &[usize], b: &[usize]) -> usize {
    match (a.first(), b.first()) {
        (None, None) => return 0,
        (Some(&p), None) | (None, Some(&p)) => return p + 2,
        _ => {}
    }
    let (mut i, mut j) = (0, 0);
    let mut best = a[0].abs_diff(b[0]);
    while best > 1 && i < a.len() && j < b.len() {
        best = best.min(a[i].abs_diff(b[j]));
        if b[j] > a[i] {
            i += 1;
        } else {
            j += 1;
        }
    }
    best
}

/// How many documents a child's iterator expects (RediSearch orders an
/// intersection's children by it): a term's document count, a union's sum, an
/// intersection's least. Children without text never pair, so their place is moot.
fn estimate(cx: &Cx<'_>, node: &Node, expansions: &HashMap<*const Node, Vec<&[u8]>>) -> usize {
    match node {
        Node::Term { term, .. } => super::document_frequency(cx, term),
        Node::Prefix { .. } | Node::Suffix { .. } | Node::Fuzzy { .. } => expansions
            .get(&(node as *const Node))
            .into_iter()
            .flatten()
            .map(|t| super::document_frequency(cx, t))
            .fold(0, usize::saturating_add),
        Node::Phrase { terms, .. } => terms
            .iter()
            .map(|t| super::document_frequency(cx, t))
            .min()
            .unwrap_or(0),
        // Saturating: a child without text counts as every document (`usize::MAX`).
        Node::Union { children, .. } => children
            .iter()
            .map(|c| estimate(cx, c, expansions))
            .fold(0, usize::saturating_add),
        Node::Intersect { children, .. } => children
            .iter()
            .map(|c| estimate(cx, c, expansions))
            .min()
            .unwrap_or(0),
        Node::Tag { .. } => eval(node, cx, &mut Matches::default()).map_or(0, |s| s.len()),
        _ => usize::MAX,
    }
}

/// The first of `sorted` (terms in byte order) that the document holds within
/// `scope`: found from the document's own words, fewer than an expansion's terms.
pub(super) fn first_held<'t>(
    cx: &Cx<'_>,
    scope: &FieldScope,
    sorted: &[&'t [u8]],
    id: u64,
) -> Option<&'t [u8]> {
    let mut best: Option<&'t [u8]> = None;
    for (_, index) in text_fields(cx.def, cx.docs, scope) {
        let FieldIndex::Text { tokens, extras, .. } = index else {
            continue;
        };
        let words = tokens.get(&id).into_iter().flatten().map(Vec::as_slice);
        let added = extras.get(&id).into_iter().flatten();
        for t in words.chain(added.map(|e| e.term.as_slice())) {
            if best.is_none_or(|b| t < b) {
                if let Ok(i) = sorted.binary_search(&t) {
                    best = Some(sorted[i]);
                }
            }
        }
    }
    best
}

/// Whether `term` is in the document within `scope`.
fn holds(cx: &Cx<'_>, scope: &FieldScope, term: &[u8], id: u64) -> bool {
    text_fields(cx.def, cx.docs, scope).any(|(_, index)| match index {
        FieldIndex::Text { terms, .. } => terms.get(term).is_some_and(|s| s.contains(id)),
        _ => false,
    })
}

/// Every position of `term` in a document, as a word or a `+stem`, numbered across
/// TEXT fields in schema order.
fn term_positions(cx: &Cx<'_>, term: &[u8], id: u64) -> Vec<usize> {
    let mut out = Vec::new();
    let mut base = 0;
    for (_, index) in text_fields(cx.def, cx.docs, &FieldScope::All) {
        let FieldIndex::Text { tokens, extras, .. } = index else {
            continue;
        };
        let toks = tokens.get(&id).map(Vec::as_slice).unwrap_or_default();
        out.extend(
            toks.iter()
                .enumerate()
                .filter(|(_, t)| t.as_slice() == term)
                .map(|(p, _)| base + p),
        );
        out.extend(
            extras
                .get(&id)
                .into_iter()
                .flatten()
                .filter(|e| e.term == term)
                .map(|e| base + e.position as usize),
        );
        base += toks.len();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::closest;

    #[test]
    fn closest_distance_walks_both_lists() {
        assert_eq!(closest(&[2, 4, 8], &[0, 5, 12]), 1);
        assert_eq!(closest(&[0], &[7]), 7);
        assert_eq!(closest(&[3, 3], &[3]), 0);
        assert_eq!(closest(&[10, 20], &[1, 2, 3]), 7);
        assert_eq!(closest(&[], &[4, 9]), 6);
        assert_eq!(closest(&[], &[]), 0);
    }
}
