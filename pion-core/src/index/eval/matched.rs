//! `matched_terms()` (`FT.AGGREGATE … APPLY`): the query terms each document
//! matched, as RediSearch collects them from the record its iterators give for the
//! document: an intersection's children in their order, a union's children that
//! hold the document (only the first for a union of expansions, which stops at its
//! first hit), an optional clause's child where it holds the document; negations,
//! wildcards, numeric and geo ranges and vector ranges add none. Tag values count
//! as terms, as in RediSearch.

use super::profile::Builder;
use super::replay::{Iter, Kind};
use super::{Cx, EvalOptions};
use crate::index::docs::{Docs, IdMap};
use crate::index::query::Node;
use crate::index::schema::IndexDef;

/// The most terms `matched_terms` gives (RediSearch's cap).
pub const MAX_MATCHED_TERMS: usize = 100;

/// Each of `ids`' matched terms (up to [`MAX_MATCHED_TERMS`], in RediSearch's
/// order); documents without any are left out.
pub fn matched_terms(
    node: &Node,
    def: &IndexDef,
    docs: &Docs,
    opts: EvalOptions,
    ids: impl IntoIterator<Item = u64>,
) -> IdMap<Vec<Vec<u8>>> {
    let cx = Cx::for_sets(def, docs, opts);
    let mut out = IdMap::default();
    let Some(root) = (Builder { cx: &cx }).build(node) else {
        return out;
    };
    for id in ids {
        let mut terms = Vec::new();
        if root.contains(id) {
            collect(&root, id, &mut terms);
        }
        if !terms.is_empty() {
            out.insert(id, terms);
        }
    }
    out
}

/// Appends the terms of `it`'s record for document `id` (which `it` holds).
fn collect(it: &Iter, id: u64, out: &mut Vec<Vec<u8>>) {
    if out.len() >= MAX_MATCHED_TERMS {
        return;
    }
    match &it.kind {
        Kind::List { .. } => {
            if matches!(it.label.name, "TEXT" | "TAG") {
                if let Some(t) = &it.label.term {
                    out.push(t.clone());
                }
            }
        }
        Kind::Intersect { its, .. } => {
            for c in its.iter().flatten() {
                collect(c, id, out);
            }
        }
        Kind::Union {
            orig, quick_exit, ..
        } => {
            for c in orig.iter().filter(|c| c.contains(id)) {
                collect(c, id, out);
                if *quick_exit {
                    break;
                }
            }
        }
        Kind::Optional { child, .. } if child.contains(id) => collect(child, id, out),
        _ => {}
    }
}
