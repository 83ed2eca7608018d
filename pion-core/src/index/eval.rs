//! Evaluating a parsed query's filter against an index's documents: each node becomes
//! a [`DocSet`], combined with set operations; text nodes also accumulate a TF-IDF
//! score per document (RediSearch's default scorer: term frequency times
//! `log2(1 + N / df)`, times the field weight, over the document's token count).

use std::collections::HashMap;

use super::docs::{DocSet, Docs, FieldIndex};
use super::schema::{FieldKind, IndexDef};
use crate::search::query::{FieldScope, Node, TagAlternative};
use crate::vector::SearchOptions;

/// What evaluating a filter gives: the matching documents, text scores, and the
/// distances any `VECTOR_RANGE` node yielded (by field name to report them under).
#[derive(Default)]
pub struct Matches {
    /// Matching documents.
    pub set: DocSet,
    /// Text scores of documents that matched text terms.
    pub scores: HashMap<u64, f64>,
    /// Yielded distances: (name to return it under, per document).
    pub distances: Vec<(Vec<u8>, HashMap<u64, f32>)>,
    /// Whether the query had text terms (results are then ordered by score).
    pub scored: bool,
}

/// Why a query cannot run, with RediSearch's text (the caller adds `ERR`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvalError(pub String);

/// Evaluates a filter tree.
pub fn evaluate(node: &Node, def: &IndexDef, docs: &Docs) -> Result<Matches, EvalError> {
    let mut m = Matches::default();
    m.set = eval(node, def, docs, &mut m)?;
    Ok(m)
}

fn text_fields<'a>(
    def: &'a IndexDef,
    docs: &'a Docs,
    scope: &'a FieldScope,
) -> impl Iterator<Item = (f64, &'a FieldIndex)> + 'a {
    def.fields
        .iter()
        .enumerate()
        .filter(move |(_, f)| scope.contains(&f.name))
        .filter_map(move |(i, f)| match f.kind {
            FieldKind::Text { weight, .. } => Some((weight, &docs.fields[i])),
            _ => None,
        })
}

fn score_terms(
    docs: &Docs,
    weight: f64,
    index: &FieldIndex,
    term: &[u8],
    set: &DocSet,
    m: &mut Matches,
) {
    let FieldIndex::Text { tokens, .. } = index else {
        return;
    };
    let df = set.len().max(1) as f64;
    let idf = (1.0 + docs.len() as f64 / df).log2();
    for id in set.iter() {
        if let Some(toks) = tokens.get(&id) {
            let tf = toks.iter().filter(|t| t.as_slice() == term).count() as f64;
            let len = toks.len().max(1) as f64;
            *m.scores.entry(id).or_default() += tf * idf * weight / len;
        }
    }
}

fn eval(node: &Node, def: &IndexDef, docs: &Docs, m: &mut Matches) -> Result<DocSet, EvalError> {
    Ok(match node {
        Node::Empty => DocSet::new(),
        Node::MatchAll => docs.all().clone(),
        Node::Term { fields, term } => {
            m.scored = true;
            let mut out = DocSet::new();
            for (weight, index) in text_fields(def, docs, fields) {
                if let FieldIndex::Text { terms, .. } = index {
                    if let Some(set) = terms.get(term) {
                        score_terms(docs, weight, index, term, set, m);
                        out.or(set);
                    }
                }
            }
            out
        }
        Node::Prefix { fields, prefix } => {
            m.scored = true;
            let mut out = DocSet::new();
            for (weight, index) in text_fields(def, docs, fields) {
                if let FieldIndex::Text { terms, .. } = index {
                    for (term, set) in terms
                        .range(prefix.clone()..)
                        .take_while(|(t, _)| t.starts_with(prefix))
                    {
                        score_terms(docs, weight, index, term, set, m);
                        out.or(set);
                    }
                }
            }
            out
        }
        Node::Suffix { fields, suffix } => {
            m.scored = true;
            let mut out = DocSet::new();
            for (_, index) in text_fields(def, docs, fields) {
                if let FieldIndex::Text { terms, .. } = index {
                    for (_, set) in terms.iter().filter(|(t, _)| t.ends_with(suffix)) {
                        out.or(set);
                    }
                }
            }
            out
        }
        Node::Fuzzy {
            fields,
            term,
            distance,
        } => {
            m.scored = true;
            let mut out = DocSet::new();
            for (_, index) in text_fields(def, docs, fields) {
                if let FieldIndex::Text { terms, .. } = index {
                    for (_, set) in terms
                        .iter()
                        .filter(|(t, _)| levenshtein(t, term) <= usize::from(*distance))
                    {
                        out.or(set);
                    }
                }
            }
            out
        }
        Node::Phrase { fields, terms } => {
            m.scored = true;
            let mut out = DocSet::new();
            for (_, index) in text_fields(def, docs, fields) {
                let FieldIndex::Text {
                    terms: postings,
                    tokens,
                } = index
                else {
                    continue;
                };
                let mut cand: Option<DocSet> = None;
                for t in terms {
                    let set = postings.get(t).cloned().unwrap_or_default();
                    match &mut cand {
                        None => cand = Some(set),
                        Some(c) => c.and(&set),
                    }
                }
                for id in cand.unwrap_or_default().iter() {
                    let adjacent = tokens.get(&id).is_some_and(|toks| {
                        toks.windows(terms.len().max(1))
                            .any(|w| w.iter().zip(terms).all(|(a, b)| a == b))
                    });
                    if adjacent {
                        out.insert(id);
                        *m.scores.entry(id).or_default() += 1.0;
                    }
                }
            }
            out
        }
        Node::Intersect { children, .. } => {
            let mut out: Option<DocSet> = None;
            for c in children {
                let set = eval(c, def, docs, m)?;
                match &mut out {
                    None => out = Some(set),
                    Some(o) => o.and(&set),
                }
            }
            out.unwrap_or_default()
        }
        Node::Union { children, .. } => {
            let mut out = DocSet::new();
            for c in children {
                out.or(&eval(c, def, docs, m)?);
            }
            out
        }
        Node::Not { child, .. } => {
            let mut all = docs.all().clone();
            all.and_not(&eval(child, def, docs, m)?);
            all
        }
        Node::Optional { child, .. } => {
            eval(child, def, docs, m)?;
            docs.all().clone()
        }
        Node::Tag {
            field,
            alternatives,
        } => {
            let Some((i, spec)) = def.field(field) else {
                return Ok(DocSet::new());
            };
            let (FieldKind::Tag { case_sensitive, .. }, FieldIndex::Tag { tags, .. }) =
                (&spec.kind, &docs.fields[i])
            else {
                return Ok(DocSet::new());
            };
            let norm = |v: Vec<u8>| {
                if *case_sensitive {
                    v
                } else {
                    v.to_ascii_lowercase()
                }
            };
            let mut out = DocSet::new();
            for alt in alternatives {
                out.or(&tag_alternative(alt, tags, &norm));
            }
            out
        }
        Node::Numeric { field, range } => {
            let mut out = DocSet::new();
            if let Some((i, _)) = def.field(field) {
                if let FieldIndex::Numeric(values) = &docs.fields[i] {
                    for (&id, &v) in values {
                        if range.contains(v) {
                            out.insert(id);
                        }
                    }
                }
            }
            out
        }
        Node::Geo { .. } => {
            return Err(EvalError(
                "GEO filters are not supported by Pion (no GEO fields)".into(),
            ))
        }
        Node::VectorRange(vr) => {
            let Some((i, spec)) = def.field(&vr.field) else {
                return Err(EvalError(format!(
                    "Unknown field `{}`",
                    String::from_utf8_lossy(&vr.field)
                )));
            };
            let (FieldKind::Vector(vs), FieldIndex::Vector(index)) = (&spec.kind, &docs.fields[i])
            else {
                return Err(EvalError("Expected a VECTOR field".into()));
            };
            let query = vs.ty.decode(&vr.blob, vs.params.dim).ok_or_else(|| {
                EvalError(format!(
                    "Error parsing vector similarity query: query vector blob size ({}) does not match index's expected size ({}).",
                    vr.blob.len(),
                    vs.params.dim * vs.ty.width()
                ))
            })?;
            let found = index.range(&query, vr.radius as f32, &SearchOptions::default());
            let mut out = DocSet::new();
            let mut dists = HashMap::new();
            for n in found {
                out.insert(n.label);
                dists.insert(n.label, n.distance);
            }
            if let Some(name) = &vr.yield_distance_as {
                m.distances.push((name.clone(), dists));
            }
            out
        }
    })
}

fn tag_alternative(
    alt: &TagAlternative,
    tags: &std::collections::BTreeMap<Vec<u8>, DocSet>,
    norm: &dyn Fn(Vec<u8>) -> Vec<u8>,
) -> DocSet {
    match alt {
        TagAlternative::Exact(_) => tags.get(&norm(alt.value())).cloned().unwrap_or_default(),
        TagAlternative::Prefix(_) => {
            let p = norm(alt.value());
            let mut out = DocSet::new();
            for (_, set) in tags
                .range(p.clone()..)
                .take_while(|(t, _)| t.starts_with(&p))
            {
                out.or(set);
            }
            out
        }
        TagAlternative::All(words) => {
            let mut out: Option<DocSet> = None;
            for w in words {
                let set = tag_alternative(w, tags, norm);
                match &mut out {
                    None => out = Some(set),
                    Some(o) => o.and(&set),
                }
            }
            out.unwrap_or_default()
        }
    }
}

fn levenshtein(a: &[u8], b: &[u8]) -> usize {
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}
