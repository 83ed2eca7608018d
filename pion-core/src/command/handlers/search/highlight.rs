//! `FT.SEARCH … HIGHLIGHT [FIELDS n f…] [TAGS open close]`: the words of a result's
//! TEXT fields that the query matched in that document are wrapped in tags (`<b>` and
//! `</b>` unless given), the rest of the text left as it is.
//!
//! As in RediSearch, a word is marked when it, its `+stem` or one of its synonym groups
//! is a term the document matched (so `running` marks `runs` too), in every TEXT field
//! whatever field the query named; negated terms mark nothing. Fields named by
//! `FIELDS` come first in the reply, in that order; without `FIELDS` every TEXT field
//! is marked.

use std::collections::HashSet;

use crate::error::{OpError, OpResult};
use crate::index::query::{unescape, FieldScope, Node};
use crate::index::schema::{FieldKind, IndexDef, KeyType};
use crate::index::stem::synonym_term;
use crate::index::tokens::{is_separator, lowercase};
use crate::index::{Docs, FieldIndex, Read};

/// What `HIGHLIGHT` asked.
#[derive(Debug, Clone)]
pub(super) struct Highlight {
    /// `FIELDS`: the fields to mark, in reply order; `None`: every TEXT field.
    fields: Option<Vec<Vec<u8>>>,
    open: Vec<u8>,
    close: Vec<u8>,
}

fn bad() -> OpError {
    OpError::custom("Bad arguments for HIGHLIGHT")
}

impl Highlight {
    /// Reads `HIGHLIGHT [FIELDS n f…] [TAGS open close]` (the keyword just read, `i` on
    /// what follows), merging into an earlier `HIGHLIGHT`.
    pub(super) fn parse(
        prev: Option<Highlight>,
        argv: &[Vec<u8>],
        i: &mut usize,
    ) -> OpResult<Highlight> {
        let mut h = prev.unwrap_or(Highlight {
            fields: None,
            open: b"<b>".to_vec(),
            close: b"</b>".to_vec(),
        });
        loop {
            match argv.get(*i).map(|a| a.to_ascii_uppercase()).as_deref() {
                Some(b"FIELDS") => {
                    let n: usize = argv
                        .get(*i + 1)
                        .and_then(|a| std::str::from_utf8(a).ok()?.parse().ok())
                        .ok_or_else(bad)?;
                    let names = argv.get(*i + 2..*i + 2 + n).ok_or_else(bad)?;
                    let list = h.fields.get_or_insert_with(Vec::new);
                    for name in names {
                        if !list.contains(name) {
                            list.push(name.clone());
                        }
                    }
                    *i += 2 + n;
                }
                Some(b"TAGS") => {
                    let (open, close) = match (argv.get(*i + 1), argv.get(*i + 2)) {
                        (Some(o), Some(c)) => (o.clone(), c.clone()),
                        _ => return Err(bad()),
                    };
                    h.open = open;
                    h.close = close;
                    *i += 3;
                    // TAGS ends the clause, as in RediSearch.
                    return Ok(h);
                }
                _ => return Ok(h),
            }
        }
    }

    /// Marks the fields of one result (as the reply lists them: hash field name and
    /// value) with the terms its document matched, and puts `FIELDS` first.
    pub(super) fn apply(
        &self,
        def: &IndexDef,
        terms: &HashSet<Vec<u8>>,
        fields: Vec<(Vec<u8>, Read)>,
    ) -> Vec<(Vec<u8>, Read)> {
        let spec_of = |name: &[u8]| def.fields.iter().find(|f| f.path == name || f.name == name);
        let marked = |name: &[u8]| match &self.fields {
            None => true,
            Some(list) => list
                .iter()
                .any(|f| spec_of(f).is_some_and(|s| s.path == name) || f == name),
        };
        let mut out: Vec<(Vec<u8>, Read)> = fields
            .into_iter()
            .map(|(name, value)| {
                let text = spec_of(&name).filter(|s| matches!(s.kind, FieldKind::Text { .. }));
                match (text, value) {
                    (Some(spec), Read::Bytes(raw)) if marked(&name) => {
                        let stemmed = matches!(spec.kind, FieldKind::Text { nostem: false, .. });
                        let v = self.mark(def, stemmed, terms, &raw);
                        (name, Read::Bytes(v))
                    }
                    (_, value) => (name, value),
                }
            })
            .collect();
        if let Some(list) = &self.fields {
            let mut front = Vec::new();
            for f in list {
                let path = spec_of(f).map_or(f.as_slice(), |s| s.path.as_slice());
                if let Some(at) = out.iter().position(|(name, _)| name == path) {
                    front.push(out.remove(at));
                }
            }
            front.append(&mut out);
            out = front;
        }
        out
    }

    /// `raw` with each matched word wrapped in the tags.
    fn mark(&self, def: &IndexDef, stemmed: bool, terms: &HashSet<Vec<u8>>, raw: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(raw.len() + 16);
        let mut last = 0;
        for (start, end) in word_spans(raw) {
            let word = lowercase(&unescape(&raw[start..end]));
            let hit = terms.contains(&word)
                || (stemmed
                    && def
                        .language
                        .indexed_stem(&word)
                        .is_some_and(|s| terms.contains(&s)))
                || def
                    .synonyms
                    .get(&word)
                    .into_iter()
                    .flatten()
                    .any(|g| terms.contains(&synonym_term(g)));
            if hit {
                out.extend_from_slice(&raw[last..start]);
                out.extend_from_slice(&self.open);
                out.extend_from_slice(&raw[start..end]);
                out.extend_from_slice(&self.close);
                last = end;
            }
        }
        out.extend_from_slice(&raw[last..]);
        out
    }
}

/// The byte spans of the words of a text, split as the tokenizer splits them (a
/// backslash keeps the next byte in the word).
fn word_spans(raw: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = None;
    let mut i = 0;
    while i < raw.len() {
        let c = raw[i];
        if c == b'\\' && i + 1 < raw.len() {
            start.get_or_insert(i);
            i += 2;
            continue;
        }
        if is_separator(c) || c == b'\\' {
            if let Some(s) = start.take() {
                out.push((s, i));
            }
        } else {
            start.get_or_insert(i);
        }
        i += 1;
    }
    if let Some(s) = start {
        out.push((s, raw.len()));
    }
    out
}

/// Whether a document holds `term` in a TEXT field of `scope`.
fn holds(def: &IndexDef, docs: &Docs, scope: &FieldScope, term: &[u8], id: u64) -> bool {
    def.fields.iter().enumerate().any(|(i, f)| {
        scope.contains(&f.name)
            && matches!(docs.fields.get(i), Some(FieldIndex::Text { terms, .. }) if terms.get(term).is_some_and(|s| s.contains(id)))
    })
}

/// The terms of a query tree that a document matched (negations left out).
pub(super) fn matched_terms(node: &Node, def: &IndexDef, docs: &Docs, id: u64) -> HashSet<Vec<u8>> {
    let mut out = HashSet::new();
    collect(node, def, docs, id, &mut out);
    out
}

fn collect(node: &Node, def: &IndexDef, docs: &Docs, id: u64, out: &mut HashSet<Vec<u8>>) {
    match node {
        Node::Term { fields, term, .. } if holds(def, docs, fields, term, id) => {
            out.insert(term.clone());
        }
        Node::Phrase { fields, terms } => {
            for t in terms {
                if holds(def, docs, fields, t, id) {
                    out.insert(t.clone());
                }
            }
        }
        Node::Prefix { fields, .. } | Node::Suffix { fields, .. } | Node::Fuzzy { fields, .. } => {
            // Like its score, an expansion counts by its first matching term.
            let mut candidates: Vec<&Vec<u8>> = Vec::new();
            for f in &docs.fields {
                if let FieldIndex::Text { terms, .. } = f {
                    candidates.extend(
                        terms
                            .iter()
                            .filter(|(_, set)| set.contains(id))
                            .map(|(t, _)| t),
                    );
                }
            }
            candidates.sort();
            let first = candidates
                .into_iter()
                .find(|t| expands_to(node, t) && holds(def, docs, fields, t, id));
            out.extend(first.cloned());
        }
        Node::Intersect { children, .. } | Node::Union { children, .. } => {
            for c in children {
                collect(c, def, docs, id, out);
            }
        }
        Node::Optional { child, .. } => collect(child, def, docs, id, out),
        _ => {}
    }
}

/// Whether an expansion node stands for `term`.
fn expands_to(node: &Node, term: &[u8]) -> bool {
    match node {
        Node::Prefix { prefix, .. } => prefix.len() >= 2 && term.starts_with(prefix),
        Node::Suffix { suffix, .. } => suffix.len() >= 2 && term.ends_with(suffix),
        Node::Fuzzy {
            term: t, distance, ..
        } => crate::index::eval::levenshtein(term, t) <= usize::from(*distance),
        _ => false,
    }
}

/// `HIGHLIGHT` marks hash fields; JSON documents are refused.
pub(super) fn check_key_type(def: &IndexDef) -> OpResult<()> {
    if def.on == KeyType::Json {
        return Err(OpError::custom(
            "HIGHLIGHT over JSON documents is not supported by Pion",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_spans_follow_the_tokenizer() {
        let raw = b"The quick, brown-fox\\-x ok";
        let words: Vec<&[u8]> = word_spans(raw)
            .into_iter()
            .map(|(s, e)| &raw[s..e])
            .collect();
        assert_eq!(
            words,
            vec![&b"The"[..], b"quick", b"brown", b"fox\\-x", b"ok"]
        );
    }
}
