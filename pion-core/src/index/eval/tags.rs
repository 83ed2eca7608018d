//! TAG queries: a field's postings and how its values fold, and the documents an
//! alternative (`{a}`, `{ab*}`, `{a b}`) matches, shared by the evaluation, the
//! score explanations and the profile.

use super::{Cx, MIN_AFFIX_LEN};
use crate::index::docs::{DocSet, FieldIndex};
use crate::index::query::TagAlternative;
use crate::index::schema::FieldKind;

/// A TAG field's postings: tag → documents.
pub(super) type TagPostings<'d> = &'d std::collections::BTreeMap<Vec<u8>, DocSet>;

/// The postings of TAG field `field` and how its query values normalise (lowercased
/// unless `CASESENSITIVE`); `None` when it is no TAG field.
pub(super) fn tag_field<'d>(
    cx: &Cx<'d>,
    field: &[u8],
) -> Option<(TagPostings<'d>, impl Fn(Vec<u8>) -> Vec<u8>)> {
    let (i, spec) = cx.def.field(field)?;
    let (FieldKind::Tag { case_sensitive, .. }, FieldIndex::Tag { tags, .. }) =
        (&spec.kind, &cx.docs.fields[i])
    else {
        return None;
    };
    let case_sensitive = *case_sensitive;
    let norm = move |v: Vec<u8>| {
        if case_sensitive {
            v
        } else {
            v.to_ascii_lowercase()
        }
    };
    Some((tags, norm))
}

/// The tags a prefix stands for, in byte order, the first `limit` of them.
pub(super) fn tag_prefix_matches<'t>(
    tags: &'t std::collections::BTreeMap<Vec<u8>, DocSet>,
    prefix: &'t [u8],
    limit: usize,
) -> impl Iterator<Item = (&'t Vec<u8>, &'t DocSet)> + 't {
    tags.range(prefix.to_vec()..)
        .take_while(move |(t, _)| t.starts_with(prefix))
        .take(limit)
}

pub(super) fn tag_alternative(
    alt: &TagAlternative,
    tags: &std::collections::BTreeMap<Vec<u8>, DocSet>,
    norm: &dyn Fn(Vec<u8>) -> Vec<u8>,
    limit: usize,
) -> DocSet {
    match alt {
        TagAlternative::Exact(_) => tags.get(&norm(alt.value())).cloned().unwrap_or_default(),
        // MINPREFIX holds for tags too.
        TagAlternative::Prefix(_) if alt.value().len() < MIN_AFFIX_LEN => DocSet::new(),
        TagAlternative::Prefix(_) => {
            let p = norm(alt.value());
            let mut out = DocSet::new();
            for (_, set) in tag_prefix_matches(tags, &p, limit) {
                out.or(set);
            }
            out
        }
        TagAlternative::All(words) => {
            let mut out: Option<DocSet> = None;
            for w in words {
                let set = tag_alternative(w, tags, norm, limit);
                match &mut out {
                    None => out = Some(set),
                    Some(o) => o.and(&set),
                }
            }
            out.unwrap_or_default()
        }
    }
}
