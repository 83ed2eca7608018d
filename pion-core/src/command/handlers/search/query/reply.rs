//! Loading a page of `FT.SEARCH` results and shaping the reply as RediSearch does:
//! RESP2 a flat array (count, then key and fields per result), RESP3 a map; fields
//! in RediSearch's order (distance, sort key, the rest), `HIGHLIGHT`/`SUMMARIZE`
//! applied to what is returned.

use std::collections::HashMap;

use super::{with_explanation, Hit, Options};
use crate::command::ctx::Ctx;
use crate::error::OpResult;
use crate::index::schema::{IndexDef, KeyType};
use crate::index::{Document, Read};
use crate::reply::Reply;
use crate::util::num::{fmt_g, fmt_shortest};

use super::super::highlight::MatchedTerm;

/// A distance as RediSearch prints it: `%.12g` of the f32 widened to f64.
fn format_distance(d: f32) -> Vec<u8> {
    fmt_g(f64::from(d), 12).into_bytes()
}

/// A `RETURN` list in RediSearch's order: the vector distance (if it names it),
/// then the `SORTBY` field (likewise), then the rest as given. RediSearch replies
/// fields in the order its query made their slots: the distance when the query
/// was parsed, the sort key when the sort was planned, the others when loaded.
fn return_order<'a>(
    list: &'a [(Vec<u8>, Vec<u8>)],
    score_name: Option<&'a [u8]>,
    sort_name: Option<&'a [u8]>,
) -> impl Iterator<Item = &'a (Vec<u8>, Vec<u8>)> + 'a {
    let is_score = move |name: &[u8]| Some(name) == score_name;
    let is_sort = move |name: &[u8]| Some(name) == sort_name && !is_score(name);
    list.iter()
        .filter(move |(n, _)| is_score(n))
        .chain(list.iter().filter(move |(n, _)| is_sort(n)))
        .chain(
            list.iter()
                .filter(move |(n, _)| !is_score(n) && !is_sort(n)),
        )
}

/// A result's fields without `RETURN`: the KNN distance, then the `SORTBY` field,
/// then the document (every other hash field, or the JSON document as `$`).
fn whole_document(
    def: &IndexDef,
    opts: &Options,
    doc: Document<'_>,
    score_name: Option<&[u8]>,
    dist: Option<Vec<u8>>,
    every_match: bool,
) -> Vec<(Vec<u8>, Read)> {
    let mut out = Vec::new();
    if let (Some(name), Some(d)) = (score_name, dist) {
        out.push((name.to_vec(), Read::Bytes(d)));
    }
    let first = opts
        .sortby
        .as_ref()
        .and_then(|(f, _)| def.field(f).map(|(_, s)| s));
    if let Some(f) = first {
        // A hash names it by its field and gives its value; a JSON document names
        // it by the attribute and gives its sort key (the first of several values).
        let named = match def.on {
            KeyType::Hash => doc.field(f, every_match).map(|v| (f.path.clone(), v)),
            KeyType::Json => doc.sort_value(f).map(|v| (f.name.clone(), Read::Bytes(v))),
        };
        out.extend(named);
    }
    let sorted_path = first.filter(|_| def.on == KeyType::Hash).map(|f| &f.path);
    out.extend(
        doc.whole(every_match)
            .into_iter()
            .filter(|(name, _)| Some(name) != sorted_path),
    );
    out
}

/// A result's fields as replied: name and value.
type Fields = Vec<(Vec<u8>, Read)>;

/// Orders every result's fields as the first results named them: RediSearch replies
/// whole documents through one list of field names per query, made as the results
/// bring new names, so a later document follows the first one's order.
fn same_field_order(results: &mut [(Hit, Fields)]) {
    let mut order: HashMap<Vec<u8>, usize> = HashMap::new();
    for (_, fields) in results.iter_mut() {
        for (name, _) in fields.iter() {
            let next = order.len();
            order.entry(name.clone()).or_insert(next);
        }
        fields.sort_by_key(|(name, _)| order.get(name).copied().unwrap_or(usize::MAX));
    }
}

/// Loads the page's documents and replies; `warning` (a timeout) goes in RESP3's
/// `warning` list (RESP2 has no place for it).
#[allow(clippy::too_many_arguments)]
pub(super) fn load_and_reply(
    ctx: &mut Ctx<'_>,
    def: &IndexDef,
    opts: &Options,
    total: usize,
    page: Vec<Hit>,
    score_name: Option<&[u8]>,
    marks: Option<Vec<Vec<MatchedTerm>>>,
    warning: Option<String>,
) -> OpResult<Reply> {
    let mut marks = marks.map(Vec::into_iter);
    let resp3 = ctx.client.resp >= 3;
    let engine = ctx.engine();
    let now = ctx.now_ms();
    // With DIALECT 3 a JSON path returns every match, as one JSON array.
    let every_match = opts.dialect >= 3;
    let mut results = Vec::with_capacity(page.len());
    for hit in page {
        // Taken first: a result skipped below must not shift the next one's terms.
        let terms = marks.as_mut().and_then(Iterator::next);
        let fields = if opts.nocontent {
            Vec::new()
        } else {
            let mut ks = engine.keyspace().lock_keys(&[&hit.key], now);
            let value = ks.peek(0, &hit.key)?.map(|e| &e.value);
            let Some(doc) = value.and_then(|v| Document::of(v, def.on)) else {
                // Removed since it was indexed (expired): not a result any more.
                continue;
            };
            let dist = hit.distance.map(format_distance);
            let sort_name = opts.sortby.as_ref().map(|(f, _)| f.as_slice());
            match &opts.returns {
                Some(list) => return_order(list, score_name, sort_name)
                    .filter_map(|(name, alias)| {
                        if Some(name.as_slice()) == score_name {
                            return dist.clone().map(|d| (alias.clone(), Read::Bytes(d)));
                        }
                        let read = match def.field(name) {
                            Some((_, f)) if Some(name.as_slice()) == sort_name => {
                                doc.sorted_field(f, every_match)
                            }
                            Some((_, f)) => doc.field(f, every_match),
                            None => doc.named(name, every_match),
                        };
                        read.map(|v| (alias.clone(), v))
                    })
                    .collect(),
                None => whole_document(def, opts, doc, score_name, dist, every_match),
            }
        };
        let fields = match (&opts.marking, terms) {
            (Some(m), Some(terms)) => m.apply(def, &terms, opts.returns.is_some(), fields),
            _ => fields,
        };
        results.push((hit, fields));
    }
    if opts.returns.is_none() {
        same_field_order(&mut results);
    }
    let value = |v: Read| match v {
        Read::Bytes(b) => Reply::Bulk(b),
        Read::Null => Reply::Null,
    };
    if !resp3 {
        let mut out = vec![Reply::Integer(total as i64)];
        for (hit, fields) in results {
            out.push(Reply::Bulk(hit.key));
            if opts.withscores {
                let score = Reply::Bulk(fmt_shortest(hit.score).into_bytes());
                out.push(with_explanation(score, hit.explanation));
            }
            if opts.withpayloads {
                out.push(Reply::Null);
            }
            if !opts.nocontent {
                out.push(Reply::Array(
                    fields
                        .into_iter()
                        .flat_map(|(f, v)| [Reply::Bulk(f), value(v)])
                        .collect(),
                ));
            }
        }
        return Ok(Reply::Array(out));
    }
    let items = results
        .into_iter()
        .map(|(hit, fields)| {
            let mut m = vec![(Reply::status("id"), Reply::Bulk(hit.key))];
            if opts.withscores {
                let score = with_explanation(Reply::ShortDouble(hit.score), hit.explanation);
                m.push((Reply::status("score"), score));
            }
            if opts.withpayloads {
                m.push((Reply::status("payload"), Reply::Null));
            }
            if !opts.nocontent {
                m.push((
                    Reply::status("extra_attributes"),
                    Reply::Map(
                        fields
                            .into_iter()
                            .map(|(f, v)| (Reply::Bulk(f), value(v)))
                            .collect(),
                    ),
                ));
            }
            m.push((Reply::status("values"), Reply::Array(Vec::new())));
            Reply::Map(m)
        })
        .collect();
    Ok(Reply::Map(vec![
        (Reply::status("attributes"), Reply::Array(Vec::new())),
        (Reply::status("total_results"), Reply::Integer(total as i64)),
        (Reply::status("format"), Reply::status("STRING")),
        (Reply::status("results"), Reply::Array(items)),
        (
            Reply::status("warning"),
            Reply::Array(warning.into_iter().map(Reply::status_owned).collect()),
        ),
    ]))
}
