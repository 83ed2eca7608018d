//! Scoring: how a matched term, tag or range adds to a document's score under each of
//! RediSearch's scorers, and how the summed scores become the final ones (the norm,
//! the document score, the distance penalty of [`super::slop`]).

use super::slop;
use super::{text_fields, Cx, EvalError, Matches, Scorer, DEADLINE_STRIDE};
use crate::index::docs::{DocSet, FieldIndex};
use crate::index::query::{FieldScope, Node, TagAlternative};
use crate::index::schema::FieldKind;
use crate::index::stem::word_weight;
use crate::index::{Docs, IndexDef};

/// BM25's k1, which RediSearch keeps as a C `float` (the scores carry its rounding).
const K1: f64 = 1.2f32 as f64;

/// BM25STD's length normalisation b (RediSearch's constant, not the textbook 0.75).
const BM25_B: f64 = 0.5;

pub(super) fn average_length(def: &IndexDef, docs: &Docs) -> f64 {
    let total: f64 = def
        .fields
        .iter()
        .enumerate()
        .filter_map(|(i, f)| match f.kind {
            FieldKind::Text { weight, .. } => {
                Some(word_weight(weight) * docs.token_total(i) as f64)
            }
            _ => None,
        })
        .sum();
    total / docs.len().max(1) as f64
}

/// A document's weighted token count (its length for TFIDF.DOCNORM and BM25STD).
pub(super) fn doc_len(cx: &Cx<'_>, id: u64) -> f64 {
    cx.docs.doc_len(id)
}

/// A document's highest weighted term frequency, the TFIDF norm. RediSearch adds one
/// to it for each vector the document has, and its TFIDF scores carry that, so this
/// does too.
pub(super) fn max_freq(cx: &Cx<'_>, id: u64) -> f64 {
    let vectors = cx
        .docs
        .fields
        .iter()
        .filter(|f| matches!(f, FieldIndex::Vector(v) if v.contains(id)))
        .count();
    cx.docs.max_freq(id) + vectors as f64
}

/// Turns the summed term scores into the scorer's final document scores; gives up
/// past the deadline.
pub(super) fn finish_scores(cx: &Cx<'_>, root: &Node, m: &mut Matches) -> Result<(), EvalError> {
    let score = cx.def.score;
    let penalty = match cx.opts.scorer {
        Scorer::TfIdf | Scorer::TfIdfDocNorm | Scorer::Bm25 => Some(slop::Penalty::plan(cx, root)),
        _ => None,
    };
    let penalty_of = |id: u64| penalty.as_ref().map_or(1.0, |p| p.of(cx, id));
    match cx.opts.scorer {
        Scorer::TfIdf | Scorer::TfIdfDocNorm => {
            // The vector fields are looked up once, not for every document.
            let vectors: Vec<_> = cx
                .docs
                .fields
                .iter()
                .filter_map(|f| match f {
                    FieldIndex::Vector(v) => Some(v),
                    _ => None,
                })
                .collect();
            // Every result is divided, unscored ones too: a document without text
            // scores infinity (or NaN, with nothing to divide), as in RediSearch.
            for (n, id) in m.set.iter().enumerate() {
                if n % DEADLINE_STRIDE == DEADLINE_STRIDE - 1 {
                    cx.in_time()?;
                }
                let norm = if cx.opts.scorer == Scorer::TfIdf {
                    let held = vectors.iter().filter(|v| v.contains(id)).count();
                    cx.docs.max_freq(id) + held as f64
                } else {
                    doc_len(cx, id)
                };
                let s = m.scores.slot(id);
                let penalty = if *s > 0.0 { penalty_of(id) } else { 1.0 };
                *s = score * *s / norm / penalty;
            }
        }
        Scorer::Bm25 => {
            let mut n = 0;
            let mut late = false;
            m.scores.update(|id, s| {
                n += 1;
                if n % DEADLINE_STRIDE == 0 && cx.in_time().is_err() {
                    late = true;
                }
                if !late {
                    *s = *s * score / penalty_of(id);
                }
            });
            if late {
                return Err(EvalError::timeout());
            }
        }
        Scorer::Bm25Std => {
            m.scores.update(|_, s| *s *= score);
        }
        Scorer::DisMax => {}
        Scorer::DocScore => {
            for id in m.set.iter() {
                m.scores.set(id, score);
            }
        }
    }
    Ok(())
}

/// A term's frequency in one document: each occurrence, as a word or as a `+stem`,
/// in any TEXT field, counted with its field's weight. RediSearch keeps one
/// frequency per term and document, whatever field a query names.
pub(super) fn term_frequency(cx: &Cx<'_>, id: u64, term: &[u8]) -> f64 {
    cx.docs.term_frequency(term, id)
}

/// Scores one term over the documents of `set` that hold it in a field of `scope`:
/// its frequency in the document, through the scorer, added to each document's sum.
pub(super) fn score_term(
    cx: &Cx<'_>,
    scope: &FieldScope,
    term: &[u8],
    set: &DocSet,
    m: &mut Matches,
) {
    let Some(postings) = cx.docs.term_postings(term) else {
        return;
    };
    // Under a field modifier, only documents holding the term in one of its fields.
    let scoped: Option<DocSet> = match scope {
        FieldScope::All => None,
        FieldScope::Fields(_) => {
            let mut within = DocSet::new();
            for (_, index) in text_fields(cx.def, cx.docs, scope) {
                if let FieldIndex::Text { terms, .. } = index {
                    if let Some(docs) = terms.get(term) {
                        within.or(docs);
                    }
                }
            }
            within.and(set);
            Some(within)
        }
    };
    let within = scoped.as_ref().unwrap_or(set);
    // Grown once, not rehashed over and over while a common term is scored.
    let freqs = postings
        .entries()
        .iter()
        .filter(|(id, _)| within.contains(*id))
        .copied();
    add_scores(cx, postings.live(), freqs, m);
}

/// TF-IDF's idf of a term in `df` of `n` documents: `logb(1 + (n + 1) / df)`, a power
/// of two (RediSearch divides its document table's size, one more than the documents).
pub(super) fn tfidf_idf(n: usize, df: usize) -> f64 {
    (1.0 + (n as f64 + 1.0) / df.max(1) as f64).log2().floor()
}

/// BM25STD's idf of a term in `df` of `n` documents (RediSearch computes the
/// logarithm's argument in single precision).
pub(super) fn bm25std_idf(n: usize, df: usize) -> f64 {
    let (n, df) = (n as f64, df.max(1) as f64);
    let ratio = ((n - df + 0.5) as f32) / ((df + 0.5) as f32);
    f64::from(1.0f32 + ratio).ln()
}

/// RediSearch's legacy BM25 of a frequency: no document length, the average length.
pub(super) fn bm25(idf: f64, f: f64, avg_len: f64) -> f64 {
    idf * f / (f + K1 * (1.0 - 0.5 + 0.5 * avg_len))
}

/// BM25STD of a frequency in a document of `len` weighted tokens.
pub(super) fn bm25std(idf: f64, f: f64, len: f64, avg_len: f64) -> f64 {
    let avg = if avg_len > 0.0 { avg_len } else { 1.0 };
    idf * f * (K1 + 1.0) / (f + K1 * (1.0 - BM25_B + BM25_B * len / avg))
}

/// Adds each document's score for one term (or tag) of `df` documents, given its
/// frequency in each.
pub(super) fn add_scores(
    cx: &Cx<'_>,
    df: usize,
    freqs: impl IntoIterator<Item = (u64, f64)>,
    m: &mut Matches,
) {
    let idf = tfidf_idf(cx.docs.len(), df);
    let std_idf = bm25std_idf(cx.docs.len(), df);
    for (id, f) in freqs {
        let add = match cx.opts.scorer {
            Scorer::TfIdf | Scorer::TfIdfDocNorm => f * idf,
            Scorer::Bm25 => bm25(idf, f, cx.avg_len),
            Scorer::Bm25Std => bm25std(std_idf, f, doc_len(cx, id), cx.avg_len),
            Scorer::DisMax => f,
            Scorer::DocScore => 0.0,
        };
        m.scores.add(id, add);
    }
}

/// Each matched term's score (prefix, suffix and fuzzy queries match several).
pub(super) fn score_terms<'t>(
    cx: &Cx<'_>,
    scope: &FieldScope,
    terms: impl IntoIterator<Item = &'t [u8]>,
    set: &DocSet,
    m: &mut Matches,
) {
    m.scored = true;
    let mut seen: Vec<&[u8]> = Vec::new();
    for t in terms {
        if !seen.contains(&t) {
            seen.push(t);
            score_term(cx, scope, t, set, m);
        }
    }
}

/// Scores the documents an expansion (prefix, suffix, fuzzy) matched as RediSearch
/// does: each by the first of its matching terms in byte order alone.
pub(super) fn score_first_terms(
    cx: &Cx<'_>,
    scope: &FieldScope,
    mut terms: Vec<&[u8]>,
    set: &DocSet,
    m: &mut Matches,
) {
    m.scored = true;
    terms.sort_unstable();
    terms.dedup();
    let mut unscored = set.clone();
    for term in terms {
        if unscored.is_empty() {
            break;
        }
        let mut here = DocSet::new();
        for (_, index) in text_fields(cx.def, cx.docs, scope) {
            if let FieldIndex::Text { terms, .. } = index {
                if let Some(postings) = terms.get(term) {
                    here.or(postings);
                }
            }
        }
        here.and(&unscored);
        score_term(cx, scope, term, &here, m);
        unscored.and_not(&here);
    }
}

/// Scores the tags an alternative matched, each like a term found once in the
/// document (RediSearch keeps tags in term records); a prefix scores each document
/// by its first matching tag in byte order, as text prefixes do.
pub(super) fn score_tags(
    cx: &Cx<'_>,
    alt: &TagAlternative,
    tags: &std::collections::BTreeMap<Vec<u8>, DocSet>,
    norm: &dyn Fn(Vec<u8>) -> Vec<u8>,
    set: &DocSet,
    m: &mut Matches,
) {
    let mut score_one = |postings: &DocSet, unscored: &mut DocSet| {
        let freqs: Vec<(u64, f64)> = postings
            .iter()
            .filter(|&id| unscored.contains(id))
            .map(|id| (id, 1.0))
            .collect();
        for &(id, _) in &freqs {
            unscored.remove(id);
        }
        if !freqs.is_empty() {
            add_scores(cx, postings.len(), freqs, m);
        }
    };
    match alt {
        TagAlternative::Exact(_) => {
            if let Some(postings) = tags.get(&norm(alt.value())) {
                score_one(postings, &mut set.clone());
            }
        }
        TagAlternative::Prefix(_) => {
            let p = norm(alt.value());
            let mut unscored = set.clone();
            for (_, postings) in super::tag_prefix_matches(tags, &p, cx.opts.max_expansions) {
                score_one(postings, &mut unscored);
            }
        }
        TagAlternative::All(words) => {
            for w in words {
                score_tags(cx, w, tags, norm, set, m);
            }
        }
    }
}

/// Scores every document of a wildcard as RediSearch scores its virtual results: like
/// a range, and under BM25STD as a term of idf 1 found once.
pub(super) fn score_wildcard(cx: &Cx<'_>, set: &DocSet, m: &mut Matches) {
    if cx.opts.scorer != Scorer::Bm25Std {
        return score_virtual(cx, set, m);
    }
    for id in set.iter() {
        m.scores
            .add(id, bm25std(1.0, 1.0, doc_len(cx, id), cx.avg_len));
    }
}

/// Scores the documents a numeric or geo range matched as RediSearch scores a result
/// without a term: a frequency of 1 without idf (nothing under BM25STD).
pub(super) fn score_virtual(cx: &Cx<'_>, set: &DocSet, m: &mut Matches) {
    let add = match cx.opts.scorer {
        Scorer::TfIdf | Scorer::TfIdfDocNorm | Scorer::DisMax => 1.0,
        Scorer::Bm25 => bm25(1.0, 1.0, cx.avg_len),
        Scorer::Bm25Std | Scorer::DocScore => return,
    };
    for id in set.iter() {
        m.scores.add(id, add);
    }
}
