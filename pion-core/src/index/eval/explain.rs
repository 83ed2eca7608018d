//! `FT.SEARCH … WITHSCORES EXPLAINSCORE`: how one document's score was computed, as a
//! tree of RediSearch's own explanation lines.
//!
//! RediSearch explains a score by walking the result its iterators built for the
//! document: a term gives a term record, an intersection or union an aggregate of its
//! children's records (a union only of those that matched, and no union at all when a
//! single alternative exists in the index), a prefix, suffix or fuzzy term a union of
//! the one term that scored, a range or a wildcard a virtual record, a negation a
//! record of frequency 0 and an optional term that did not match one of weight 0. The
//! record tree is rebuilt here from the query tree and the document, then each scorer
//! formats it with the texts and the arithmetic of RediSearch's scorers.

use super::score::{bm25, bm25std, bm25std_idf, doc_len, max_freq, term_frequency, tfidf_idf};
use super::{document_frequency, eval, slop, text_fields, Cx, Matches, Scorer};
use crate::index::docs::FieldIndex;
use crate::index::query::{FieldScope, Node, TagAlternative};

/// One line of an explanation and the lines it was computed from.
#[derive(Debug, Clone, PartialEq)]
pub struct Explanation {
    /// The line.
    pub text: String,
    /// What it sums (empty for a leaf).
    pub children: Vec<Explanation>,
}

impl Explanation {
    fn leaf(text: String) -> Explanation {
        Explanation {
            text,
            children: Vec::new(),
        }
    }
}

/// A record of the result tree of one document.
enum Record {
    /// A term (or tag) found `freq` times, in `df` documents.
    Term { name: Vec<u8>, freq: f64, df: usize },
    /// A wildcard's record, a negation's or a vector range's (frequency 0), or an
    /// unmatched optional term's (weight 0).
    Virtual { freq: f64, weight: f64 },
    /// A numeric or geo range's record.
    Range,
    /// An intersection's, union's or KNN result's children.
    Aggregate { kind: Kind, children: Vec<Record> },
}

/// What an aggregate record aggregates.
#[derive(Clone, Copy, PartialEq)]
enum Kind {
    Intersect,
    Union,
    /// A KNN result: its distance record (frequency 0), then its filter's record.
    Hybrid,
}

/// Whether a node matches the document (evaluated apart, its scores discarded).
fn matches(node: &Node, cx: &Cx<'_>, id: u64) -> bool {
    eval(node, cx, &mut Matches::default()).is_ok_and(|set| set.contains(id))
}

/// Whether a node matches any document of the index.
fn exists(node: &Node, cx: &Cx<'_>) -> bool {
    eval(node, cx, &mut Matches::default()).is_ok_and(|set| !set.is_empty())
}

fn term_record(cx: &Cx<'_>, scope: &FieldScope, term: &[u8], id: u64) -> Option<Record> {
    let holds = text_fields(cx.def, cx.docs, scope).any(|(_, index)| {
        matches!(index, FieldIndex::Text { terms, .. } if terms.get(term).is_some_and(|s| s.contains(id)))
    });
    holds.then(|| Record::Term {
        name: term.to_vec(),
        freq: term_frequency(cx, id, term),
        df: document_frequency(cx, term),
    })
}

/// The first term in byte order, of the document's terms in `scope`, an expansion
/// stands for (the one it scores by).
fn first_expanded(cx: &Cx<'_>, node: &Node, scope: &FieldScope, id: u64) -> Option<Record> {
    let terms = super::expansion_terms(cx.def, cx.docs, node, cx.opts.max_expansions);
    let first = slop::first_held(cx, scope, &terms, id)?;
    let record = term_record(cx, scope, first, id)?;
    Some(Record::Aggregate {
        kind: Kind::Union,
        children: vec![record],
    })
}

fn tag_record(
    alt: &TagAlternative,
    tags: &std::collections::BTreeMap<Vec<u8>, crate::index::DocSet>,
    norm: &dyn Fn(Vec<u8>) -> Vec<u8>,
    id: u64,
    limit: usize,
) -> Option<Record> {
    let term = |tag: &[u8], set: &crate::index::DocSet| Record::Term {
        name: tag.to_vec(),
        freq: 1.0,
        df: set.len(),
    };
    match alt {
        TagAlternative::Exact(_) => {
            let tag = norm(alt.value());
            let set = tags.get(&tag).filter(|s| s.contains(id))?;
            Some(term(&tag, set))
        }
        TagAlternative::Prefix(_) => {
            let p = norm(alt.value());
            let (tag, set) =
                super::tag_prefix_matches(tags, &p, limit).find(|(_, s)| s.contains(id))?;
            Some(Record::Aggregate {
                kind: Kind::Union,
                children: vec![term(tag, set)],
            })
        }
        TagAlternative::All(words) => {
            let children = words
                .iter()
                .map(|w| tag_record(w, tags, norm, id, limit))
                .collect::<Option<Vec<_>>>()?;
            Some(Record::Aggregate {
                kind: Kind::Intersect,
                children,
            })
        }
    }
}

/// The record a node gives the document; `None` when it does not match it.
fn record(node: &Node, cx: &Cx<'_>, id: u64) -> Option<Record> {
    match node {
        Node::Empty => None,
        Node::MatchAll => Some(Record::Virtual {
            freq: 1.0,
            weight: 1.0,
        }),
        Node::Term { fields, term, .. } => term_record(cx, fields, term, id),
        Node::Prefix { fields, .. } | Node::Suffix { fields, .. } | Node::Fuzzy { fields, .. } => {
            first_expanded(cx, node, fields, id)
        }
        Node::Phrase { fields, terms } => {
            if !matches(node, cx, id) {
                return None;
            }
            let mut children: Vec<Record> = terms
                .iter()
                .filter_map(|t| term_record(cx, fields, t, id))
                .collect();
            if children.len() == 1 {
                return children.pop();
            }
            Some(Record::Aggregate {
                kind: Kind::Intersect,
                children,
            })
        }
        Node::Intersect { children, .. } => {
            if !matches(node, cx, id) {
                return None;
            }
            let children = slop::iteration_order(cx, children)
                .into_iter()
                .filter_map(|c| record(c, cx, id))
                .collect();
            Some(Record::Aggregate {
                kind: Kind::Intersect,
                children,
            })
        }
        Node::Union { children, .. } => {
            // Alternatives that match nothing in the index are no iterators at all.
            let live: Vec<&Node> = children.iter().filter(|c| exists(c, cx)).collect();
            if let [only] = live.as_slice() {
                return record(only, cx, id);
            }
            let children: Vec<Record> = live.iter().filter_map(|c| record(c, cx, id)).collect();
            (!children.is_empty()).then_some(Record::Aggregate {
                kind: Kind::Union,
                children,
            })
        }
        Node::Not { .. } => matches(node, cx, id).then_some(Record::Virtual {
            freq: 0.0,
            weight: 1.0,
        }),
        Node::Optional { child, .. } => Some(record(child, cx, id).unwrap_or(Record::Virtual {
            freq: 1.0,
            weight: 0.0,
        })),
        Node::Tag {
            field,
            alternatives,
        } => {
            let (tags, norm) = super::tag_field(cx, field)?;
            let live: Vec<&TagAlternative> = alternatives
                .iter()
                .filter(|a| {
                    !super::tag_alternative(a, tags, &norm, cx.opts.max_expansions).is_empty()
                })
                .collect();
            if let [only] = live.as_slice() {
                return tag_record(only, tags, &norm, id, cx.opts.max_expansions);
            }
            let children: Vec<Record> = live
                .iter()
                .filter_map(|a| tag_record(a, tags, &norm, id, cx.opts.max_expansions))
                .collect();
            (!children.is_empty()).then_some(Record::Aggregate {
                kind: Kind::Union,
                children,
            })
        }
        // A vector range's record is a distance, of frequency 0: it adds nothing.
        Node::VectorRange(_) => matches(node, cx, id).then_some(Record::Virtual {
            freq: 0.0,
            weight: 1.0,
        }),
        Node::Numeric { .. } | Node::Geo { .. } => matches(node, cx, id).then_some(Record::Range),
    }
}

/// The score of document `id` for the query `root` and its explanation; `None` when
/// the document does not match it. With `knn`, the document is a KNN result whose
/// filter is `root`: its record holds the distance's too (a wildcard filter adds none).
pub(super) fn explain(cx: &Cx<'_>, root: &Node, id: u64, knn: bool) -> Option<(f64, Explanation)> {
    let distance = Record::Virtual {
        freq: 0.0,
        weight: 1.0,
    };
    let rec = match (knn, root) {
        (false, _) => record(root, cx, id)?,
        (true, Node::MatchAll) => distance,
        (true, _) => Record::Aggregate {
            kind: Kind::Hybrid,
            children: vec![distance]
                .into_iter()
                .chain(record(root, cx, id))
                .collect(),
        },
    };
    let score = cx.def.score;
    Some(match cx.opts.scorer {
        Scorer::TfIdf | Scorer::TfIdfDocNorm => {
            if score == 0.0 {
                return Some((0.0, Explanation::leaf("Document score is 0".into())));
            }
            let (raw, tree) = tfidf(cx, &rec);
            let norm = if cx.opts.scorer == Scorer::TfIdf {
                max_freq(cx, id)
            } else {
                doc_len(cx, id)
            };
            let slop = slop_of(cx, root, id);
            let text = format!(
                "Final TFIDF : words TFIDF {raw:.2} * document score {score:.2} / norm {} / slop {slop}",
                norm as u32
            );
            let value = score * raw / norm / f64::from(slop);
            (
                value,
                Explanation {
                    text,
                    children: vec![tree],
                },
            )
        }
        Scorer::Bm25 => {
            let (raw, tree) = bm25_tree(cx, &rec);
            let slop = slop_of(cx, root, id);
            let text = format!(
                "Final BM25 : words BM25 {raw:.2} * document score {score:.2} / slop {slop}"
            );
            (
                score * raw / f64::from(slop),
                Explanation {
                    text,
                    children: vec![tree],
                },
            )
        }
        Scorer::Bm25Std => {
            let (raw, tree) = bm25std_tree(cx, &rec, doc_len(cx, id));
            let text = format!("Final BM25 : words BM25 {raw:.2} * document score {score:.2}");
            (
                score * raw,
                Explanation {
                    text,
                    children: vec![tree],
                },
            )
        }
        Scorer::DisMax => dismax(&rec),
        Scorer::DocScore => (
            score,
            Explanation::leaf(format!("Document's score is {score:.2}")),
        ),
    })
}

fn slop_of(cx: &Cx<'_>, root: &Node, id: u64) -> u32 {
    slop::Penalty::plan(cx, root).of(cx, id) as u32
}

/// Sums an aggregate's children with `each`, keeping their explanations.
fn children_of(
    children: &[Record],
    mut each: impl FnMut(&Record) -> (f64, Explanation),
) -> (f64, Vec<Explanation>) {
    let mut sum = 0.0;
    let mut out = Vec::with_capacity(children.len());
    for c in children {
        let (v, e) = each(c);
        sum += v;
        out.push(e);
    }
    (sum, out)
}

fn tfidf(cx: &Cx<'_>, rec: &Record) -> (f64, Explanation) {
    match rec {
        Record::Term { freq, df, .. } => {
            let idf = tfidf_idf(cx.docs.len(), *df);
            let v = freq * idf;
            let text = format!(
                "(TFIDF {v:.2} = Weight 1.00 * TF {} * IDF {idf:.2})",
                *freq as u32
            );
            (v, Explanation::leaf(text))
        }
        Record::Aggregate { children, .. } => {
            let (sum, children) = children_of(children, |c| tfidf(cx, c));
            let text = format!("(Weight 1.00 * total children TFIDF {sum:.2})");
            (sum, Explanation { text, children })
        }
        Record::Virtual { freq, weight } => {
            let v = weight * freq;
            let text = format!(
                "(TFIDF {v:.2} = Weight {weight:.2} * Frequency {})",
                *freq as u32
            );
            (v, Explanation::leaf(text))
        }
        Record::Range => (
            1.0,
            Explanation::leaf("(TFIDF 1.00 = Weight 1.00 * Frequency 1)".into()),
        ),
    }
}

fn bm25_tree(cx: &Cx<'_>, rec: &Record) -> (f64, Explanation) {
    let avg = cx.avg_len;
    let virtual_line = |weight: f64, freq: f64| {
        if freq == 0.0 {
            return (0.0, Explanation::leaf("Frequency 0 -> value 0".into()));
        }
        let v = weight * bm25(1.0, freq, avg);
        let f = freq as u32;
        let text = format!(
            "({v:.2} = Weight {weight:.2} * F {f} / (F {f} + k1 1.2 * (1 - b 0.5 + b 0.5 * Average Len {avg:.2})))"
        );
        (v, Explanation::leaf(text))
    };
    match rec {
        Record::Term { freq, df, .. } => {
            let idf = tfidf_idf(cx.docs.len(), *df);
            let v = bm25(idf, *freq, avg);
            let f = *freq as u32;
            let text = format!(
                "({v:.2} = IDF {idf:.2} * F {f} / (F {f} + k1 1.2 * (1 - b 0.5 + b 0.5 * Average Len {avg:.2})))"
            );
            (v, Explanation::leaf(text))
        }
        Record::Aggregate { children, .. } => {
            let (sum, children) = children_of(children, |c| bm25_tree(cx, c));
            let text = format!("(Weight 1.00 * children BM25 {sum:.2})");
            (sum, Explanation { text, children })
        }
        Record::Virtual { freq, weight } => virtual_line(*weight, *freq),
        Record::Range => virtual_line(1.0, 1.0),
    }
}

fn bm25std_tree(cx: &Cx<'_>, rec: &Record, len: f64) -> (f64, Explanation) {
    let avg = cx.avg_len;
    let line = |name: &str, idf: f64, f: f64| {
        let v = bm25std(idf, f, len, avg);
        let text = format!(
            "{name}: ({v:.2} = IDF {idf:.2} * (F {f:.2} * (k1 1.2 + 1)) / (F {f:.2} + k1 1.2 * (1 - b 0.5 + b 0.5 * Doc Len {} / Average Doc Len {avg:.2})))",
            len as u32
        );
        (v, Explanation::leaf(text))
    };
    match rec {
        Record::Term { name, freq, df } => line(
            &String::from_utf8_lossy(name),
            bm25std_idf(cx.docs.len(), *df),
            *freq,
        ),
        Record::Aggregate { children, .. } => {
            let (sum, children) = children_of(children, |c| bm25std_tree(cx, c, len));
            let text = format!("(Weight 1.00 * children BM25 {sum:.2})");
            (sum, Explanation { text, children })
        }
        Record::Virtual { freq, weight } if *freq != 0.0 && *weight != 0.0 => {
            let (v, e) = line("*", 1.0, 1.0);
            (weight * v, e)
        }
        Record::Virtual { .. } | Record::Range => (
            0.0,
            Explanation::leaf("Irrelevant token -> score is 0".into()),
        ),
    }
}

fn dismax(rec: &Record) -> (f64, Explanation) {
    let leaf = |weight: f64, freq: f64| {
        let v = weight * freq;
        let text = format!(
            "DISMAX {v:.2} = Weight {weight:.2} * Frequency {}",
            freq as u32
        );
        (v, Explanation::leaf(text))
    };
    match rec {
        Record::Term { freq, .. } => leaf(1.0, *freq),
        Record::Virtual { freq, weight } => leaf(*weight, *freq),
        Record::Range => leaf(1.0, 1.0),
        // A KNN result scores by its filter's record alone.
        Record::Aggregate {
            kind: Kind::Hybrid,
            children,
        } => match children.get(1) {
            Some(filter) => dismax(filter),
            None => leaf(1.0, 0.0),
        },
        Record::Aggregate { kind, children } => {
            let mut best = 0.0f64;
            let (sum, children) = children_of(children, |c| {
                let (v, e) = dismax(c);
                best = best.max(v);
                (v, e)
            });
            let v = if *kind == Kind::Union { best } else { sum };
            let text = format!("{v:.2} = Weight 1.00 * children DISMAX {v:.2}");
            (v, Explanation { text, children })
        }
    }
}
