//! Evaluating a parsed query's filter against an index's documents: each node becomes
//! a [`DocSet`], combined with set operations; text nodes also score the documents
//! they match with one of RediSearch's scorers ([`Scorer`], `FT.SEARCH … SCORER`).
//!
//! Scores follow RediSearch's definitions: a term's frequency in a document counts
//! each occurrence with its field's weight, a document's length is its weighted token
//! count, and TF-IDF's idf is `logb(1 + (N + 1) / df)` (a power of two). They
//! agree with RediSearch's ([`score`]), including the distance penalty of multi-term
//! queries ([`slop`]).
//!
//! `INORDER` keeps only documents where each intersection's text terms occur in the
//! query's order; positions run on across TEXT fields in schema order, as RediSearch
//! numbers a document's tokens.

mod explain;
mod matched;
mod profile;
mod replay;
mod score;
mod scores;
mod slop;
mod tags;

pub use explain::Explanation;
pub use matched::{matched_terms, MAX_MATCHED_TERMS};
pub use profile::{profile_iterators, IteratorProfile, ProfileChildren};
pub use scores::Scores;

use std::collections::HashMap;
use std::time::Instant;

use super::docs::{DocSet, Docs, FieldIndex, IdMap};
use super::schema::{FieldKind, IndexDef};
use super::tokens::fuzzy_match;
use crate::index::query::{FieldScope, Node};
use score::{
    average_length, finish_scores, score_first_terms, score_tags, score_terms, score_virtual,
    score_wildcard,
};
use tags::{tag_alternative, tag_field, tag_prefix_matches};

/// What evaluating a filter gives: the matching documents, text scores, and the
/// distances any `VECTOR_RANGE` node yielded (by field name to report them under).
#[derive(Default)]
pub struct Matches {
    /// Matching documents.
    pub set: DocSet,
    /// Text scores of documents that matched text terms.
    pub scores: Scores,
    /// Yielded distances: (name to return it under, per document).
    pub distances: Vec<(Vec<u8>, HashMap<u64, f32>)>,
    /// Whether the query had text terms (results are then ordered by score).
    pub scored: bool,
}

/// Why a query cannot run, with RediSearch's text (the caller adds `ERR`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EvalError(pub String);

impl EvalError {
    /// The evaluation ran past its deadline.
    pub fn timeout() -> EvalError {
        EvalError(TIMED_OUT.to_string())
    }

    /// Whether this is a timeout, which RediSearch's default policy (`ON_TIMEOUT
    /// RETURN`) answers with the results so far and a warning, not an error.
    pub fn timed_out(&self) -> bool {
        self.0 == TIMED_OUT
    }
}

/// RediSearch's built-in text scorers (`SCORER name`; names are case-sensitive).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Scorer {
    /// `TFIDF` (the default): sum of weighted tf × idf, over the document's highest
    /// term frequency, times the document score.
    #[default]
    TfIdf,
    /// `TFIDF.DOCNORM`: as TFIDF, over the document's length instead.
    TfIdfDocNorm,
    /// `BM25`: RediSearch's variant, idf × f / (f + k1 (1 - b + b × average length)),
    /// with k1 = 1.2 and b = 0.5.
    Bm25,
    /// `BM25STD`: Okapi BM25, ln(1 + (N - df + 0.5) / (df + 0.5)) × f (k1 + 1) /
    /// (f + k1 (1 - b + b × length / average length)), with k1 = 1.2 and b = 0.75.
    Bm25Std,
    /// `DISMAX`: weighted frequencies, summed over an intersection, the largest of a
    /// union.
    DisMax,
    /// `DOCSCORE`: the document score alone.
    DocScore,
}

impl Scorer {
    /// The scorer of a `SCORER` argument; `None` for an unknown name.
    pub fn parse(name: &[u8]) -> Option<Scorer> {
        Some(match name {
            b"TFIDF" => Scorer::TfIdf,
            b"TFIDF.DOCNORM" => Scorer::TfIdfDocNorm,
            b"BM25" => Scorer::Bm25,
            b"BM25STD" => Scorer::Bm25Std,
            b"DISMAX" => Scorer::DisMax,
            b"DOCSCORE" => Scorer::DocScore,
            _ => return None,
        })
    }
}

/// How a filter is evaluated beyond its tree (`FT.SEARCH`'s `SCORER` and `INORDER`).
#[derive(Debug, Clone, Copy)]
pub struct EvalOptions {
    /// How text matches are scored.
    pub scorer: Scorer,
    /// Intersections need their text terms in the query's order.
    pub in_order: bool,
    /// `SLOP`: at most this many other words between an intersection's text terms.
    pub slop: Option<usize>,
    /// Score queries without text terms too (wildcards, tags, ranges), as RediSearch
    /// ranks `FT.SEARCH` results; off, only text terms make scores.
    pub rank_all: bool,
    /// `TIMEOUT`: when the evaluation gives up ([`EvalError::timed_out`]), checked
    /// before each node of the tree and every [`DEADLINE_STRIDE`] scored documents.
    pub deadline: Option<Instant>,
    /// `MAXEXPANSIONS`: how many terms (or tags) a prefix, suffix or fuzzy term
    /// stands for at most, the first in byte order.
    pub max_expansions: usize,
    /// Whether documents are scored at all: not when nothing reads the scores (an
    /// `FT.SEARCH` sorted by a field without `WITHSCORES`, where RediSearch runs no
    /// scorer either).
    pub score: bool,
}

/// RediSearch's default `MAXEXPANSIONS`.
pub const DEFAULT_MAX_EXPANSIONS: usize = 200;

impl Default for EvalOptions {
    fn default() -> Self {
        EvalOptions {
            scorer: Scorer::default(),
            in_order: false,
            slop: None,
            rank_all: false,
            deadline: None,
            max_expansions: DEFAULT_MAX_EXPANSIONS,
            score: true,
        }
    }
}

/// RediSearch's text for a query that ran past its `TIMEOUT`.
pub const TIMED_OUT: &str = "Timeout limit was reached";

/// How many documents are scored between two looks at the deadline.
pub const DEADLINE_STRIDE: usize = 1024;

/// Evaluates a filter tree with the default options (TFIDF, any order).
pub fn evaluate(node: &Node, def: &IndexDef, docs: &Docs) -> Result<Matches, EvalError> {
    evaluate_with(node, def, docs, EvalOptions::default())
}

/// Evaluates a filter tree.
pub fn evaluate_with(
    node: &Node,
    def: &IndexDef,
    docs: &Docs,
    opts: EvalOptions,
) -> Result<Matches, EvalError> {
    let mut m = Matches::default();
    let cx = Cx {
        def,
        docs,
        opts,
        avg_len: average_length(def, docs),
        partials: opts.rank_all || scores_text(node),
    };
    m.set = eval(node, &cx, &mut m)?;
    if !opts.score {
        m.scored = false;
    } else if m.scored || opts.rank_all {
        m.scored = true;
        finish_scores(&cx, node, &mut m)?;
    } else {
        // Tags and ranges alone are not ranked here: their partial scores go.
        m.scores.clear();
    }
    Ok(m)
}

/// Document `id`'s score for a filter and its explanation (`EXPLAINSCORE`), as
/// RediSearch's scorers compute and word them; `None` when the document does not
/// match. With `knn`, the document is a result of a KNN clause with that filter.
pub fn explain_score(
    node: &Node,
    def: &IndexDef,
    docs: &Docs,
    opts: EvalOptions,
    id: u64,
    knn: bool,
) -> Option<(f64, Explanation)> {
    let cx = Cx {
        def,
        docs,
        opts,
        avg_len: average_length(def, docs),
        partials: true,
    };
    explain::explain(&cx, node, id, knn)
}

/// What every node's evaluation reads.
struct Cx<'a> {
    def: &'a IndexDef,
    docs: &'a Docs,
    opts: EvalOptions,
    /// Average weighted document length (the BM25 scorers).
    avg_len: f64,
    /// Whether tags and ranges score what they match: their scores count only beside
    /// a text term's or when everything is ranked, and are dropped otherwise, so a
    /// tree without text (a KNN clause's tag filter) skips them.
    partials: bool,
}

/// Whether evaluating `node` may score text: false only where every node below is
/// one that never does (tags, ranges, geo, vector ranges, wildcards).
fn scores_text(node: &Node) -> bool {
    match node {
        Node::Empty
        | Node::MatchAll
        | Node::Tag { .. }
        | Node::Numeric { .. }
        | Node::Geo { .. }
        | Node::VectorRange(_) => false,
        Node::Intersect { children, .. } | Node::Union { children, .. } => {
            children.iter().any(scores_text)
        }
        Node::Not { child, .. } | Node::Optional { child, .. } => scores_text(child),
        _ => true,
    }
}

impl<'a> Cx<'a> {
    /// What `FT.PROFILE`'s replay and `matched_terms` read: the documents each node
    /// matches, without scores or a deadline.
    fn for_sets(def: &'a IndexDef, docs: &'a Docs, opts: EvalOptions) -> Cx<'a> {
        Cx {
            def,
            docs,
            opts: EvalOptions {
                deadline: None,
                rank_all: false,
                score: false,
                ..opts
            },
            avg_len: 0.0,
            partials: false,
        }
    }

    /// Fails once the deadline has passed.
    fn in_time(&self) -> Result<(), EvalError> {
        match self.opts.deadline {
            Some(d) if Instant::now() >= d => Err(EvalError::timeout()),
            _ => Ok(()),
        }
    }
}

/// The shortest prefix or suffix a query may expand (RediSearch's `MINPREFIX`).
const MIN_AFFIX_LEN: usize = 2;

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

/// Documents holding `term` in any TEXT field (its document frequency).
fn document_frequency(cx: &Cx<'_>, term: &[u8]) -> usize {
    cx.docs.document_frequency(term)
}

/// A term's TF-IDF idf in an index (what RediSearch's highlighter weighs the fragments
/// of a summary with).
pub fn term_idf(docs: &Docs, term: &[u8]) -> f64 {
    score::tfidf_idf(docs.len(), docs.document_frequency(term))
}

/// Which tokens a text node matches.
type TokenTest<'a> = Box<dyn Fn(&[u8]) -> bool + 'a>;

/// The positions of a node's matched text in a document, numbered across TEXT fields
/// in schema order; `None` for nodes without text (tags, numbers, negations…).
fn positions(node: &Node, cx: &Cx<'_>, id: u64) -> Option<Vec<usize>> {
    let (fields, test): (&FieldScope, TokenTest<'_>) = match node {
        Node::Term { fields, term, .. } => (fields, Box::new(move |t| t == term.as_slice())),
        Node::Prefix { .. } | Node::Suffix { .. } | Node::Fuzzy { .. } => expansion_test(node)?,
        Node::Phrase { fields, terms } => (fields, Box::new(move |t| terms.iter().any(|p| p == t))),
        Node::Intersect { children, .. } | Node::Union { children, .. } => {
            let mut all: Option<Vec<usize>> = None;
            for c in children {
                if let Some(p) = positions(c, cx, id) {
                    all.get_or_insert_with(Vec::new).extend(p);
                }
            }
            return all.map(|mut p| {
                p.sort_unstable();
                p
            });
        }
        _ => return None,
    };
    let mut out = Vec::new();
    let mut base = 0;
    for (i, f) in cx.def.fields.iter().enumerate() {
        let (FieldKind::Text { .. }, FieldIndex::Text { tokens, extras, .. }) =
            (&f.kind, &cx.docs.fields[i])
        else {
            continue;
        };
        let toks = tokens.get(&id).map(Vec::as_slice).unwrap_or_default();
        if fields.contains(&f.name) {
            out.extend(
                toks.iter()
                    .enumerate()
                    .filter(|(_, t)| test(t))
                    .map(|(p, _)| base + p),
            );
            // A `+stem` or `~group` stands at its word's position.
            out.extend(
                extras
                    .get(&id)
                    .into_iter()
                    .flatten()
                    .filter(|e| test(&e.term))
                    .map(|e| base + e.position as usize),
            );
        }
        // Fields follow each other as one stream of words, as RediSearch numbers them.
        base += toks.len();
    }
    Some(out)
}

/// Whether the text children of an intersection occur in order in a document: a
/// position of each, none before the previous one's (RediSearch's `INORDER`).
/// Whether a document holds an intersection's text terms as `INORDER` and `SLOP`
/// ask: one position per term, in the query's order when `in_order`, with at most
/// `slop` other words inside the span they cover.
fn terms_placed(children: &[Node], cx: &Cx<'_>, id: u64) -> bool {
    let lists: Vec<Vec<usize>> = children
        .iter()
        .filter_map(|c| positions(c, cx, id))
        .filter(|p| !p.is_empty())
        .collect();
    if lists.len() < 2 {
        return true;
    }
    let k = lists.len();
    let fits = |lo: usize, hi: usize| {
        cx.opts
            .slop
            .is_none_or(|s| (hi + 1 - lo).saturating_sub(k) <= s)
    };
    if cx.opts.in_order {
        // For each start, the earliest later position of each next term gives the
        // shortest ordered span from that start.
        return lists[0].iter().any(|&start| {
            let mut last = start;
            for list in &lists[1..] {
                match list.iter().find(|&&p| p >= last) {
                    Some(&p) => last = p,
                    None => return false,
                }
            }
            fits(start, last)
        });
    }
    // The shortest window holding a position of every term (a sweep over all
    // positions in order).
    let mut all: Vec<(usize, usize)> = lists
        .iter()
        .enumerate()
        .flat_map(|(t, l)| l.iter().map(move |&p| (p, t)))
        .collect();
    all.sort_unstable();
    let mut count = vec![0usize; k];
    let mut covered = 0;
    let mut left = 0;
    for right in 0..all.len() {
        let t = all[right].1;
        count[t] += 1;
        if count[t] == 1 {
            covered += 1;
        }
        while covered == k {
            // Each term needs a word of its own (a repeated term, two occurrences).
            let window = &all[left..=right];
            let distinct = 1 + window.windows(2).filter(|w| w[0].0 != w[1].0).count();
            if distinct >= k && fits(all[left].0, all[right].0) {
                return true;
            }
            let lt = all[left].1;
            count[lt] -= 1;
            if count[lt] == 0 {
                covered -= 1;
            }
            left += 1;
        }
    }
    false
}

fn eval(node: &Node, cx: &Cx<'_>, m: &mut Matches) -> Result<DocSet, EvalError> {
    cx.in_time()?;
    let (def, docs) = (cx.def, cx.docs);
    Ok(match node {
        Node::Empty => DocSet::new(),
        Node::MatchAll => {
            // Every document, like a range: a frequency of one.
            if cx.opts.rank_all && cx.opts.score {
                score_wildcard(cx, docs.all(), m);
            }
            docs.all().clone()
        }
        Node::Term { fields, term, .. } => {
            let mut out = DocSet::new();
            for (_, index) in text_fields(def, docs, fields) {
                if let FieldIndex::Text { terms, .. } = index {
                    if let Some(set) = terms.get(term) {
                        out.or(set);
                    }
                }
            }
            if cx.opts.score {
                score_terms(cx, fields, [term.as_slice()], &out, m);
            }
            out
        }
        // RediSearch's MINPREFIX: shorter prefixes and suffixes match nothing.
        Node::Prefix { prefix, .. } | Node::Suffix { suffix: prefix, .. }
            if prefix.len() < MIN_AFFIX_LEN =>
        {
            DocSet::new()
        }
        Node::Prefix { fields, .. } | Node::Suffix { fields, .. } | Node::Fuzzy { fields, .. } => {
            expand(cx, node, fields, m)
        }
        Node::Phrase { fields, terms } => {
            let mut out = DocSet::new();
            for (_, index) in text_fields(def, docs, fields) {
                let FieldIndex::Text {
                    terms: postings,
                    tokens,
                    ..
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
                    }
                }
            }
            if cx.opts.score {
                score_terms(cx, fields, terms.iter().map(Vec::as_slice), &out, m);
            }
            out
        }
        Node::Intersect { children, .. } => {
            // Children score apart: only documents of the whole intersection keep it.
            let outer = std::mem::take(&mut m.scores);
            let mut out: Option<DocSet> = None;
            for c in children {
                let set = eval(c, cx, m)?;
                match &mut out {
                    None => out = Some(set),
                    Some(o) => o.and(&set),
                }
            }
            let mut out = out.unwrap_or_default();
            let mut inner = std::mem::replace(&mut m.scores, outer);
            inner.keep_only(&out);
            m.scores.merge(inner);
            if (cx.opts.in_order || cx.opts.slop.is_some()) && children.len() > 1 {
                let out_of_order: Vec<u64> = out
                    .iter()
                    .filter(|&id| !terms_placed(children, cx, id))
                    .collect();
                for id in out_of_order {
                    out.remove(id);
                }
            }
            out
        }
        Node::Union { children, .. } if cx.opts.scorer == Scorer::DisMax => {
            // DISMAX scores a union by its best alternative, not their sum.
            let mut out = DocSet::new();
            let mut best: IdMap<f64> = IdMap::default();
            for c in children {
                let outer = std::mem::take(&mut m.scores);
                out.or(&eval(c, cx, m)?);
                for (id, s) in std::mem::replace(&mut m.scores, outer).iter() {
                    let b = best.entry(id).or_default();
                    *b = b.max(s);
                }
            }
            for (id, s) in best {
                m.scores.add(id, s);
            }
            out
        }
        Node::Union { children, .. } => {
            // Summed apart, then added whole: the order RediSearch adds in.
            let outer = std::mem::take(&mut m.scores);
            let mut out = DocSet::new();
            for c in children {
                out.or(&eval(c, cx, m)?);
            }
            let inner = std::mem::replace(&mut m.scores, outer);
            m.scores.merge(inner);
            out
        }
        Node::Not { child, .. } => {
            // A negated term scores nothing: evaluate it apart.
            let mut apart = Matches::default();
            let mut all = docs.all().clone();
            all.and_not(&eval(child, cx, &mut apart)?);
            m.distances.append(&mut apart.distances);
            all
        }
        Node::Optional { child, .. } => {
            eval(child, cx, m)?;
            docs.all().clone()
        }
        Node::Tag {
            field,
            alternatives,
        } => {
            let Some((tags, norm)) = tag_field(cx, field) else {
                return Ok(DocSet::new());
            };
            let mut out = DocSet::new();
            for alt in alternatives {
                let set = tag_alternative(alt, tags, &norm, cx.opts.max_expansions);
                if cx.partials && cx.opts.score {
                    score_tags(cx, alt, tags, &norm, &set, m);
                }
                out.or(&set);
            }
            out
        }
        Node::Numeric { field, range } => {
            let mut out = DocSet::new();
            if let Some((i, _)) = def.field(field) {
                if let FieldIndex::Numeric(values) = &docs.fields[i] {
                    for (&id, numbers) in values {
                        if numbers.iter().any(|v| range.contains(v)) {
                            out.insert(id);
                        }
                    }
                }
            }
            if cx.partials && cx.opts.score {
                score_virtual(cx, &out, m);
            }
            out
        }
        Node::Geo {
            field,
            lon,
            lat,
            radius,
            unit,
        } => {
            // A field that is not GEO matches nothing, as in RediSearch.
            let mut out = DocSet::new();
            if let Some((i, _)) = def.field(field) {
                if let FieldIndex::Geo(points) = &docs.fields[i] {
                    let limit = radius * unit.meters();
                    for (&id, &(plon, plat)) in points {
                        if crate::util::geohash::distance(*lon, *lat, plon, plat) <= limit {
                            out.insert(id);
                        }
                    }
                }
            }
            if cx.partials && cx.opts.score {
                score_virtual(cx, &out, m);
            }
            out
        }
        Node::VectorRange(vr) => {
            vr.check_not_hybrid()
                .map_err(|e| EvalError(e.message().to_string()))?;
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
            let found = index.range(&query, vr.radius as f32);
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

/// The indexed terms an expansion node (prefix, suffix, fuzzy) stands for: those
/// that fit it in a TEXT field of its scope, in byte order, the first `limit` of them
/// (RediSearch's `MAXEXPANSIONS`); none for a prefix or suffix shorter than
/// `MINPREFIX`, or for any other node.
pub fn expansion_terms<'d>(
    def: &IndexDef,
    docs: &'d Docs,
    node: &Node,
    limit: usize,
) -> Vec<&'d [u8]> {
    // MINPREFIX: shorter prefixes and suffixes stand for nothing.
    let from = match node {
        Node::Prefix { prefix, .. } | Node::Suffix { suffix: prefix, .. }
            if prefix.len() < MIN_AFFIX_LEN =>
        {
            return Vec::new();
        }
        // A prefix's terms are a range of each field's ordered terms.
        Node::Prefix { prefix, .. } => Some(prefix.as_slice()),
        _ => None,
    };
    let Some((fields, test)) = expansion_test(node) else {
        return Vec::new();
    };
    let mut out: Vec<&'d [u8]> = Vec::new();
    for (i, f) in def.fields.iter().enumerate() {
        if !matches!(f.kind, FieldKind::Text { .. }) || !fields.contains(&f.name) {
            continue;
        }
        let Some(FieldIndex::Text { terms, .. }) = docs.fields.get(i) else {
            continue;
        };
        match from {
            // Each field's terms are in order: its first `limit` are enough.
            Some(p) => out.extend(
                terms
                    .range(p.to_vec()..)
                    .map(|(t, _)| t.as_slice())
                    .take_while(|t| t.starts_with(p))
                    .take(limit),
            ),
            None => out.extend(terms.keys().map(Vec::as_slice).filter(|t| test(t))),
        }
    }
    out.sort_unstable();
    out.dedup();
    out.truncate(limit);
    out
}

/// The fields an expansion node (prefix, suffix, fuzzy) searches and which tokens it
/// matches; `None` for any other node.
fn expansion_test(node: &Node) -> Option<(&FieldScope, TokenTest<'_>)> {
    Some(match node {
        Node::Prefix { fields, prefix } => (fields, Box::new(move |t| t.starts_with(prefix))),
        Node::Suffix { fields, suffix } => (fields, Box::new(move |t| t.ends_with(suffix))),
        Node::Fuzzy {
            fields,
            term,
            distance,
        } => (
            fields,
            Box::new(move |t| fuzzy_match(t, term, usize::from(*distance))),
        ),
        _ => return None,
    })
}

/// A node matching the terms an expansion stands for ([`expansion_terms`]): the
/// union of their postings in the node's fields, each document scored by one of them.
fn expand(cx: &Cx<'_>, node: &Node, fields: &FieldScope, m: &mut Matches) -> DocSet {
    let matched = expansion_terms(cx.def, cx.docs, node, cx.opts.max_expansions);
    let mut out = DocSet::new();
    for (_, index) in text_fields(cx.def, cx.docs, fields) {
        let FieldIndex::Text { terms, .. } = index else {
            continue;
        };
        for t in &matched {
            if let Some(set) = terms.get(*t) {
                out.or(set);
            }
        }
    }
    if cx.opts.score {
        score_first_terms(cx, fields, matched, &out, m);
    }
    out
}
