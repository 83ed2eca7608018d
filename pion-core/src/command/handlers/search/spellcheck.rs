//! `FT.SPELLCHECK` and the dictionaries it reads (`FT.DICTADD`, `FT.DICTDEL`,
//! `FT.DICTDUMP`).
//!
//! Each query word that no document holds (and no `TERMS EXCLUDE` dictionary lists) is
//! reported with suggestions: the index's terms within `DISTANCE` edits (1 unless
//! given, at most 4) found in the fields the word is searched in, each scored by the
//! share of documents holding it, then the terms of `TERMS INCLUDE` dictionaries
//! within that distance, scored 0. Words come in query order, stopwords included,
//! each time they appear, as RediSearch reports them.

use std::collections::BTreeSet;

use crate::command::ctx::Ctx;
use crate::error::{OpError, OpResult};
use crate::index::query::{self as q, FieldScope, Node};
use crate::index::{Docs, FieldIndex};
use crate::reply::Reply;
use crate::util::num::fmt_shortest;

fn err(text: impl Into<String>) -> OpError {
    OpError::custom(text.into())
}

/// `FT.DICTADD dict term…`: how many terms were new.
pub(super) fn dict_add(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    if argv.len() < 3 {
        return Err(OpError::WrongArity("FT.DICTADD".into()));
    }
    let added = ctx.search().dicts().add(&argv[1], &argv[2..]);
    Ok(Reply::Integer(added as i64))
}

/// `FT.DICTDEL dict term…`: how many terms were there.
pub(super) fn dict_del(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    if argv.len() < 3 {
        return Err(OpError::WrongArity("FT.DICTDEL".into()));
    }
    let removed = ctx.search().dicts().remove(&argv[1], &argv[2..]);
    Ok(Reply::Integer(removed as i64))
}

/// `FT.DICTDUMP dict`: its terms in byte order.
pub(super) fn dict_dump(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    if argv.len() != 2 {
        return Err(OpError::WrongArity("FT.DICTDUMP".into()));
    }
    let terms = ctx
        .search()
        .dicts()
        .terms(&argv[1])
        .ok_or_else(|| err("could not open dict key"))?;
    Ok(Reply::Set(terms.into_iter().map(Reply::Bulk).collect()))
}

/// What `FT.SPELLCHECK` was asked.
struct Request {
    distance: usize,
    include: Vec<Vec<u8>>,
    exclude: Vec<Vec<u8>>,
    dialect: u32,
}

const BAD_DISTANCE: &str = "bad distance given, distance must be a natural number between 1 to 4";
const NO_TERMS: &str = "TERM arg is given but no TERM params comes after";

/// Parses the options; a request without `DIALECT` has the configured default.
fn parse(argv: &[Vec<u8>], default_dialect: u8) -> OpResult<Request> {
    let mut r = Request {
        distance: 1,
        include: Vec::new(),
        exclude: Vec::new(),
        dialect: u32::from(default_dialect),
    };
    let mut i = 3;
    while i < argv.len() {
        let word = argv[i].to_ascii_uppercase();
        i += 1;
        match word.as_slice() {
            b"DISTANCE" => {
                r.distance = argv
                    .get(i)
                    .and_then(|a| std::str::from_utf8(a).ok()?.parse().ok())
                    .filter(|d| (1..=4).contains(d))
                    .ok_or_else(|| err(BAD_DISTANCE))?;
                i += 1;
            }
            b"TERMS" => {
                let op = argv.get(i).ok_or_else(|| err(NO_TERMS))?;
                let dict = argv.get(i + 1).ok_or_else(|| err(NO_TERMS))?.clone();
                if op.eq_ignore_ascii_case(b"INCLUDE") {
                    r.include.push(dict);
                } else if op.eq_ignore_ascii_case(b"EXCLUDE") {
                    r.exclude.push(dict);
                } else {
                    return Err(err("bad format, exlude/include operation was not given"));
                }
                i += 2;
            }
            b"DIALECT" => {
                r.dialect = argv
                    .get(i)
                    .and_then(|a| std::str::from_utf8(a).ok()?.parse().ok())
                    .ok_or_else(|| err("DIALECT requires a non negative integer >=1 and <= 4"))?;
                i += 1;
            }
            _ => {
                return Err(err(format!(
                    "Unknown argument `{}` for FT.SPELLCHECK",
                    String::from_utf8_lossy(&argv[i - 1])
                )))
            }
        }
    }
    Ok(r)
}

/// The query's words in order, each with the fields it is searched in.
fn words<'a>(node: &'a Node, out: &mut Vec<(&'a [u8], &'a FieldScope)>) {
    match node {
        Node::Term { fields, term, .. } => out.push((term, fields)),
        Node::Phrase { fields, terms } => out.extend(terms.iter().map(|t| (t.as_slice(), fields))),
        Node::Intersect { children, .. } | Node::Union { children, .. } => {
            for c in children {
                words(c, out);
            }
        }
        Node::Not { child, .. } | Node::Optional { child, .. } => words(child, out),
        _ => {}
    }
}

/// Levenshtein distance over characters (bytes where not UTF-8), or `None` past `max`.
fn distance_within(a: &[u8], b: &[u8], max: usize) -> bool {
    let chars = |s: &[u8]| -> Vec<u32> {
        match std::str::from_utf8(s) {
            Ok(t) => t.chars().map(u32::from).collect(),
            Err(_) => s.iter().map(|&c| u32::from(c)).collect(),
        }
    };
    let (a, b) = (chars(a), chars(b));
    if a.len().abs_diff(b.len()) > max {
        return false;
    }
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
        }
        if cur.iter().all(|&d| d > max) {
            return false;
        }
        prev = cur;
    }
    prev[b.len()] <= max
}

/// The documents holding `term` in any TEXT field, and whether some hold it in a field
/// of `scope`.
fn holders(
    def: &crate::index::schema::IndexDef,
    docs: &Docs,
    term: &[u8],
    scope: &FieldScope,
) -> (usize, bool) {
    let mut all = crate::index::docs::DocSet::new();
    let mut in_scope = false;
    for (i, f) in def.fields.iter().enumerate() {
        if let Some(FieldIndex::Text { terms, .. }) = docs.fields.get(i) {
            if let Some(set) = terms.get(term) {
                all.or(set);
                in_scope |= scope.contains(&f.name);
            }
        }
    }
    (all.len(), in_scope)
}

/// `FT.SPELLCHECK index query [DISTANCE d] [TERMS INCLUDE|EXCLUDE dict]… [DIALECT d]`.
pub(super) fn spellcheck(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    if argv.len() < 3 {
        return Err(OpError::WrongArity("FT.SPELLCHECK".into()));
    }
    let Some(index) = ctx.search().get(&argv[1]) else {
        return Err(err("Unknown Index name"));
    };
    let req = parse(argv, ctx.config().with(|c| c.search.default_dialect))?;
    let dicts = ctx.search().dicts();
    let load = |names: &[Vec<u8>]| -> BTreeSet<Vec<u8>> {
        names
            .iter()
            .flat_map(|n| dicts.terms(n).unwrap_or_default())
            .collect()
    };
    let (include, exclude) = (load(&req.include), load(&req.exclude));
    let def = index.def.read().clone();
    let analysis = super::query::Analysis {
        verbatim: true,
        keep_stopwords: true,
        ..Default::default()
    };
    let query = analysis.parse(&def, &argv[2], &q::Params::new(), req.dialect)?;
    let mut asked = Vec::new();
    words(&query.filter, &mut asked);
    let docs = index.docs.read();
    let n = docs.len().max(1) as f64;
    // Every indexed term once, in byte order.
    let mut vocabulary: BTreeSet<&[u8]> = BTreeSet::new();
    for f in &docs.fields {
        if let FieldIndex::Text { terms, .. } = f {
            vocabulary.extend(terms.keys().map(Vec::as_slice));
        }
    }
    let resp3 = ctx.client.resp >= 3;
    let mut reports = Vec::new();
    for (word, scope) in asked {
        if vocabulary.contains(word) || exclude.contains(word) {
            continue;
        }
        let mut found: Vec<(f64, &[u8])> = vocabulary
            .iter()
            .filter(|t| distance_within(word, t, req.distance))
            .filter_map(|t| {
                let (df, in_scope) = holders(&def, &docs, t, scope);
                in_scope.then_some((df as f64 / n, *t))
            })
            .collect();
        found.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
        for t in &include {
            if distance_within(word, t, req.distance)
                && !found.iter().any(|(_, f)| *f == t.as_slice())
            {
                found.push((0.0, t));
            }
        }
        reports.push((
            word.to_vec(),
            found
                .into_iter()
                .map(|(s, t)| (s, t.to_vec()))
                .collect::<Vec<_>>(),
        ));
    }
    Ok(if resp3 {
        let results = reports
            .into_iter()
            .map(|(word, found)| {
                let list = found
                    .into_iter()
                    .map(|(s, t)| Reply::Map(vec![(Reply::Bulk(t), Reply::ShortDouble(s))]))
                    .collect();
                (Reply::Bulk(word), Reply::Array(list))
            })
            .collect();
        Reply::Map(vec![(Reply::status("results"), Reply::Map(results))])
    } else {
        Reply::Array(
            reports
                .into_iter()
                .map(|(word, found)| {
                    let list = found
                        .into_iter()
                        .map(|(s, t)| {
                            Reply::Array(vec![Reply::bulk(fmt_shortest(s)), Reply::Bulk(t)])
                        })
                        .collect();
                    Reply::Array(vec![
                        Reply::status("TERM"),
                        Reply::Bulk(word),
                        Reply::Array(list),
                    ])
                })
                .collect(),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::distance_within;

    #[test]
    fn edit_distance_counts_characters() {
        assert!(distance_within(b"helo", b"hello", 1));
        assert!(!distance_within(b"helo", b"hellx", 1));
        assert!(distance_within(b"helo", b"hellx", 2));
        assert!(distance_within("häus".as_bytes(), b"haus", 1));
        assert!(!distance_within(b"wrld", b"worlds", 1));
    }
}
