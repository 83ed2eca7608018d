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

use super::{eval, levenshtein, text_fields, Cx, Matches, MIN_AFFIX_LEN};
use crate::index::docs::{DocSet, FieldIndex};
use crate::index::query::{FieldScope, Node, TagAlternative};

/// The divisor of a document's score for a query whose tree is `root`.
pub(super) fn penalty(cx: &Cx<'_>, root: &Node, id: u64, union_sets: &[Option<DocSet>]) -> f64 {
    let children: Vec<&Node> = match root {
        Node::Intersect { children, .. } => iteration_order(cx, children),
        Node::Union { children, .. } => children
            .iter()
            .zip(union_sets)
            .filter(|(c, set)| match set {
                Some(set) => set.contains(id),
                None => offsets(cx, c, id).is_some_and(|o| !o.is_empty()),
            })
            .map(|(c, _)| c)
            .collect(),
        _ => return 1.0,
    };
    if children.len() <= 1 {
        return 1.0;
    }
    let lists: Vec<Vec<usize>> = children.iter().filter_map(|c| offsets(cx, c, id)).collect();
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

/// An intersection's children in RediSearch's iteration order: fewest documents
/// first, ties as written.
pub(super) fn iteration_order<'n>(cx: &Cx<'_>, children: &'n [Node]) -> Vec<&'n Node> {
    let mut sorted: Vec<(usize, &Node)> = children.iter().map(|c| (estimate(cx, c), c)).collect();
    // A stable sort: children with as many documents keep the written order.
    sorted.sort_by_key(|(n, _)| *n);
    sorted.into_iter().map(|(_, c)| c).collect()
}

/// For a union root, the documents of each child that positions alone cannot tell
/// (groups, phrases, tags, ranges…); `None` for a plain text leaf.
pub(super) fn union_child_sets(cx: &Cx<'_>, root: &Node) -> Vec<Option<DocSet>> {
    let Node::Union { children, .. } = root else {
        return Vec::new();
    };
    children
        .iter()
        .map(|c| match c {
            Node::Term { .. } | Node::Prefix { .. } | Node::Suffix { .. } | Node::Fuzzy { .. } => {
                None
            }
            other => Some(eval(other, cx, &mut Matches::default()).unwrap_or_default()),
        })
        .collect()
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
fn estimate(cx: &Cx<'_>, node: &Node) -> usize {
    match node {
        Node::Term { term, .. } => super::document_frequency(cx, term),
        Node::Prefix { .. } | Node::Suffix { .. } | Node::Fuzzy { .. } => expanded_terms(cx, node)
            .iter()
            .map(|t| super::document_frequency(cx, t))
            .sum(),
        Node::Phrase { terms, .. } => terms
            .iter()
            .map(|t| super::document_frequency(cx, t))
            .min()
            .unwrap_or(0),
        Node::Union { children, .. } => children.iter().map(|c| estimate(cx, c)).sum(),
        Node::Intersect { children, .. } => {
            children.iter().map(|c| estimate(cx, c)).min().unwrap_or(0)
        }
        Node::Tag { .. } => eval(node, cx, &mut Matches::default()).map_or(0, |s| s.len()),
        _ => usize::MAX,
    }
}

/// The indexed terms (any field) an expansion node stands for, in byte order.
fn expanded_terms<'a>(cx: &'a Cx<'_>, node: &Node) -> Vec<&'a [u8]> {
    let test: super::TokenTest<'_> = match node {
        Node::Prefix { prefix, .. } if prefix.len() >= MIN_AFFIX_LEN => {
            Box::new(move |t: &[u8]| t.starts_with(prefix))
        }
        Node::Suffix { suffix, .. } if suffix.len() >= MIN_AFFIX_LEN => {
            Box::new(move |t: &[u8]| t.ends_with(suffix))
        }
        Node::Fuzzy { term, distance, .. } => {
            Box::new(move |t: &[u8]| levenshtein(t, term) <= usize::from(*distance))
        }
        _ => return Vec::new(),
    };
    let mut out: Vec<&[u8]> = Vec::new();
    for (_, index) in text_fields(cx.def, cx.docs, &FieldScope::All) {
        if let FieldIndex::Text { terms, .. } = index {
            out.extend(terms.keys().map(Vec::as_slice).filter(|t| test(t)));
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Whether `term` is in the document within `scope`.
fn holds(cx: &Cx<'_>, scope: &FieldScope, term: &[u8], id: u64) -> bool {
    text_fields(cx.def, cx.docs, scope).any(|(_, index)| match index {
        FieldIndex::Text { terms, .. } => terms.get(term).is_some_and(|s| s.contains(id)),
        _ => false,
    })
}

/// The positions a child's result carries in a document: those of its matched terms
/// (in every field, as RediSearch's term records keep them), merged; `None` for a
/// child without text.
fn offsets(cx: &Cx<'_>, node: &Node, id: u64) -> Option<Vec<usize>> {
    let mut out = match node {
        Node::Term { fields, term, .. } => {
            if holds(cx, fields, term, id) {
                term_positions(cx, term, id)
            } else {
                Vec::new()
            }
        }
        Node::Prefix { fields, .. } | Node::Suffix { fields, .. } | Node::Fuzzy { fields, .. } => {
            // Scored by its first matching term alone, which alone gives positions.
            expanded_terms(cx, node)
                .into_iter()
                .find(|t| holds(cx, fields, t, id))
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
                if let Some(p) = offsets(cx, c, id) {
                    all.get_or_insert_with(Vec::new).extend(p);
                }
            }
            all?
        }
        // Unmatched, an optional child is a result without positions.
        Node::Optional { child, .. } => match offsets(cx, child, id) {
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
