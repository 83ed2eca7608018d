//! `FT.SEARCH … HIGHLIGHT [FIELDS n f…] [TAGS open close]` and `SUMMARIZE [FIELDS n
//! f…] [FRAGS n] [LEN n] [SEPARATOR s]`: the words of a result's TEXT fields that the
//! query matched in that document are wrapped in tags (`<b>` and `</b>` unless given),
//! and a summarised field is cut down to its best fragments ([`fragments`]).
//!
//! As in RediSearch, a word is marked when it, its `+stem` or one of its synonym groups
//! is a term the document matched (so `running` marks `runs` too), in every TEXT field
//! whatever field the query named; negated terms mark nothing. A clause without
//! `FIELDS` applies to every returned field; with `FIELDS` (in any clause) only the
//! fields named, and those come first in the reply, in the order first named. A
//! summarised field that is not TEXT, or has no match, is cut to its head.
//!
//! On JSON indexes a field is marked when `RETURN` names its attribute; a whole
//! document (`$`, without `RETURN`) is only cut by `SUMMARIZE`, as in RediSearch.
//!
//! [`fragments`]: super::fragments

use crate::error::{OpError, OpResult};
use crate::index::eval::expansion_terms;
use crate::index::query::{FieldScope, Node};
use crate::index::schema::{FieldKind, FieldSpec, IndexDef, KeyType};
use crate::index::stem::synonym_term;
use crate::index::tokens::tokenize_for_index;
use crate::index::{Docs, FieldIndex, Read};

use super::fragments::{self, FieldMatches, Match, Summary, Tags};

/// What one field (or, by default, every field) is to get.
#[derive(Debug, Clone, Default)]
struct Treatment {
    /// `HIGHLIGHT`: the tags.
    highlight: Option<Tags>,
    /// `SUMMARIZE`: its settings.
    summarize: Option<Summary>,
}

impl Treatment {
    fn is_none(&self) -> bool {
        self.highlight.is_none() && self.summarize.is_none()
    }

    /// A named field's treatment with the clauses that named no field added.
    fn with_default(&self, default: &Treatment) -> Treatment {
        Treatment {
            highlight: self.highlight.clone().or_else(|| default.highlight.clone()),
            summarize: self.summarize.clone().or_else(|| default.summarize.clone()),
        }
    }
}

/// What `HIGHLIGHT` and `SUMMARIZE` asked.
#[derive(Debug, Clone, Default)]
pub(super) struct Marking {
    /// Fields named by `FIELDS`, in the order first named, with what they get.
    named: Vec<(Vec<u8>, Treatment)>,
    /// What the clauses without `FIELDS` ask of every field.
    default: Treatment,
}

/// Which clause is being read.
#[derive(Clone, Copy, PartialEq)]
enum Clause {
    Highlight,
    Summarize,
}

fn bad(clause: Clause) -> OpError {
    OpError::custom(match clause {
        Clause::Highlight => "Bad arguments for HIGHLIGHT",
        Clause::Summarize => "Bad arguments for SUMMARIZE",
    })
}

fn count(arg: Option<&Vec<u8>>, clause: Clause) -> OpResult<usize> {
    arg.and_then(|a| std::str::from_utf8(a).ok()?.parse().ok())
        .ok_or_else(|| bad(clause))
}

impl Marking {
    /// Reads `HIGHLIGHT …` (the keyword just read, `i` on what follows).
    pub(super) fn parse_highlight(&mut self, argv: &[Vec<u8>], i: &mut usize) -> OpResult<()> {
        self.parse(Clause::Highlight, argv, i)
    }

    /// Reads `SUMMARIZE …` (the keyword just read, `i` on what follows).
    pub(super) fn parse_summarize(&mut self, argv: &[Vec<u8>], i: &mut usize) -> OpResult<()> {
        self.parse(Clause::Summarize, argv, i)
    }

    fn parse(&mut self, clause: Clause, argv: &[Vec<u8>], i: &mut usize) -> OpResult<()> {
        let keyword = |i: usize| argv.get(i).map(|a| a.to_ascii_uppercase());
        let mut fields: &[Vec<u8>] = &[];
        if keyword(*i).as_deref() == Some(b"FIELDS") {
            let n = count(argv.get(*i + 1), clause)?;
            fields = argv.get(*i + 2..*i + 2 + n).ok_or_else(|| bad(clause))?;
            *i += 2 + n;
        }
        let mut tags: Tags = (b"<b>".to_vec(), b"</b>".to_vec());
        let mut summary = Summary::default();
        loop {
            match (clause, keyword(*i).as_deref()) {
                (Clause::Highlight, Some(b"TAGS")) => match (argv.get(*i + 1), argv.get(*i + 2)) {
                    (Some(open), Some(close)) => {
                        tags = (open.clone(), close.clone());
                        *i += 3;
                    }
                    _ => return Err(bad(clause)),
                },
                (Clause::Summarize, Some(b"LEN")) => {
                    summary.len = count(argv.get(*i + 1), clause)?;
                    *i += 2;
                }
                (Clause::Summarize, Some(b"FRAGS")) => {
                    summary.frags = count(argv.get(*i + 1), clause)?;
                    *i += 2;
                }
                (Clause::Summarize, Some(b"SEPARATOR")) => {
                    summary.separator = argv.get(*i + 1).ok_or_else(|| bad(clause))?.clone();
                    *i += 2;
                }
                _ => break,
            }
        }
        let set = |t: &mut Treatment| match clause {
            Clause::Highlight => t.highlight = Some(tags.clone()),
            Clause::Summarize => t.summarize = Some(summary.clone()),
        };
        if fields.is_empty() {
            set(&mut self.default);
        }
        for name in fields {
            match self.named.iter_mut().find(|(n, _)| n == name) {
                Some((_, t)) => set(t),
                None => {
                    let mut t = Treatment::default();
                    set(&mut t);
                    self.named.push((name.clone(), t));
                }
            }
        }
        Ok(())
    }

    /// Refuses what RediSearch refuses before running the query: with `RETURN` a
    /// returned field outside the schema, without it a named field outside the schema
    /// (on JSON, any named field: a whole JSON document has no fields to name).
    pub(super) fn check(&self, def: &IndexDef, returns: Option<&[Vec<u8>]>) -> OpResult<()> {
        if let (KeyType::Json, None, Some((f, _))) = (def.on, returns, self.named.first()) {
            return Err(OpError::custom(format!(
                "No such property `{}`",
                String::from_utf8_lossy(f)
            )));
        }
        match returns {
            Some(list) => match list.iter().find(|f| spec_of(def, f).is_none()) {
                Some(f) => Err(OpError::custom(format!(
                    "Property `{}` is not in schema",
                    String::from_utf8_lossy(f)
                ))),
                None => Ok(()),
            },
            None => match self.named.iter().find(|(f, _)| spec_of(def, f).is_none()) {
                Some((f, _)) => Err(OpError::custom(format!(
                    "No such property `{}`",
                    String::from_utf8_lossy(f)
                ))),
                None => Ok(()),
            },
        }
    }

    /// Marks the fields of one result (as the reply lists them: name and value) with
    /// the terms its document matched, and puts the named fields first.
    /// `returned`: whether `RETURN` chose the fields.
    pub(super) fn apply(
        &self,
        def: &IndexDef,
        terms: &[MatchedTerm],
        returned: bool,
        fields: Vec<(Vec<u8>, Read)>,
    ) -> Vec<(Vec<u8>, Read)> {
        let is_named = |f: &[u8], out: &[u8]| {
            f == out || spec_of(def, f).is_some_and(|s| s.path == out || s.name == out)
        };
        let treatment = |name: &[u8]| -> Treatment {
            match self.named.iter().find(|(f, _)| is_named(f, name)) {
                Some((_, t)) => t.with_default(&self.default),
                // With FIELDS and no RETURN, only the named fields are marked.
                None if returned || self.named.is_empty() => self.default.clone(),
                None => Treatment::default(),
            }
        };
        let mut out: Vec<(Vec<u8>, Read)> = fields
            .into_iter()
            .map(|(name, value)| {
                let t = treatment(&name);
                let spec = spec_of(def, &name);
                // Returned numbers are numbers, not text: RediSearch leaves them be.
                let number = returned && spec.is_some_and(|s| s.kind == FieldKind::Numeric);
                match value {
                    Read::Bytes(raw) if !t.is_none() && !number => {
                        let marked = mark_field(def, spec, terms, &t, &raw);
                        (name, Read::Bytes(marked.unwrap_or(raw)))
                    }
                    value => (name, value),
                }
            })
            .collect();
        let mut front = Vec::new();
        for (f, _) in &self.named {
            if let Some(at) = out.iter().position(|(name, _)| is_named(f, name)) {
                front.push(out.remove(at));
            }
        }
        front.append(&mut out);
        front
    }
}

/// The schema field a reply names: by attribute or hash field, on JSON by attribute
/// only (a JSONPath, or the whole document `$`, is not a field to mark).
fn spec_of<'d>(def: &'d IndexDef, name: &[u8]) -> Option<&'d FieldSpec> {
    let by_path = def.on != KeyType::Json;
    def.fields
        .iter()
        .find(|f| f.name == name || (by_path && f.path == name))
}

/// One field's value highlighted and/or summarised; `None` to leave it as it is.
fn mark_field(
    def: &IndexDef,
    spec: Option<&FieldSpec>,
    terms: &[MatchedTerm],
    t: &Treatment,
    raw: &[u8],
) -> Option<Vec<u8>> {
    let matches = match spec.map(|s| &s.kind) {
        Some(FieldKind::Text { nostem, .. }) => Some(field_matches(def, !nostem, terms, raw)),
        _ => None,
    }
    .filter(|m| !m.is_empty());
    match (matches, &t.highlight, &t.summarize) {
        (Some(m), Some(tags), None) => Some(fragments::highlight_whole(raw, &m, tags)),
        (Some(m), tags, Some(summary)) => {
            Some(fragments::summarize(raw, &m, summary, tags.as_ref()))
        }
        // Only a summary cuts an unmatched field; with tags it stays whole.
        (None, None, Some(summary)) => Some(fragments::head(raw, summary)),
        _ => None,
    }
}

/// The words of a field value that match one of the document's matched terms: the
/// word itself, its `+stem` (in a stemmed field) or one of its synonym groups, the
/// first of the query's terms that fits.
fn field_matches(def: &IndexDef, stemmed: bool, terms: &[MatchedTerm], raw: &[u8]) -> FieldMatches {
    FieldMatches::new(
        tokenize_for_index(raw, def.stopwords.as_deref())
            .into_iter()
            .map(|token| {
                let stem = stemmed
                    .then(|| def.language.indexed_stem(&token.text))
                    .flatten();
                let groups = def.synonyms.get(&token.text);
                let fits = |t: &MatchedTerm| {
                    t.term == token.text
                        || stem.as_ref().is_some_and(|s| *s == t.term)
                        || groups
                            .into_iter()
                            .flatten()
                            .any(|g| synonym_term(g) == t.term)
                };
                terms.iter().position(fits).map(|term| Match {
                    position: token.position,
                    start: token.span.start,
                    term,
                    idf: terms[term].idf,
                })
            }),
    )
}

/// A term a document matched, with its idf.
#[derive(Debug, Clone)]
pub(super) struct MatchedTerm {
    term: Vec<u8>,
    idf: f32,
}

/// Whether a document holds `term` in a TEXT field of `scope`.
fn holds(def: &IndexDef, docs: &Docs, scope: &FieldScope, term: &[u8], id: u64) -> bool {
    def.fields.iter().enumerate().any(|(i, f)| {
        scope.contains(&f.name)
            && matches!(docs.fields.get(i), Some(FieldIndex::Text { terms, .. }) if terms.get(term).is_some_and(|s| s.contains(id)))
    })
}

/// The terms of a query tree that a document matched (negations left out), in the
/// query's order, each once.
pub(super) fn matched_terms(
    node: &Node,
    def: &IndexDef,
    docs: &Docs,
    id: u64,
    max_expansions: usize,
) -> Vec<MatchedTerm> {
    let mut found = Vec::new();
    collect(node, def, docs, id, max_expansions, &mut found);
    let mut out: Vec<MatchedTerm> = Vec::new();
    for term in found {
        if !out.iter().any(|t| t.term == term) {
            let idf = crate::index::eval::term_idf(docs, &term) as f32;
            out.push(MatchedTerm { term, idf });
        }
    }
    out
}

fn collect(
    node: &Node,
    def: &IndexDef,
    docs: &Docs,
    id: u64,
    max_expansions: usize,
    out: &mut Vec<Vec<u8>>,
) {
    match node {
        Node::Term { fields, term, .. } if holds(def, docs, fields, term, id) => {
            out.push(term.clone());
        }
        Node::Phrase { fields, terms } => {
            for t in terms {
                if holds(def, docs, fields, t, id) {
                    out.push(t.clone());
                }
            }
        }
        Node::Prefix { fields, .. } | Node::Suffix { fields, .. } | Node::Fuzzy { fields, .. } => {
            // Like its score, an expansion counts by its first matching term.
            let first = expansion_terms(def, docs, node, max_expansions)
                .into_iter()
                .find(|t| holds(def, docs, fields, t, id));
            out.extend(first.map(<[u8]>::to_vec));
        }
        Node::Intersect { children, .. } | Node::Union { children, .. } => {
            for c in children {
                collect(c, def, docs, id, max_expansions, out);
            }
        }
        Node::Optional { child, .. } => collect(child, def, docs, id, max_expansions, out),
        _ => {}
    }
}
