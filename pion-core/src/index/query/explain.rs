//! `FT.EXPLAIN`'s rendering of a parsed query.
//!
//! The text is RediSearch's for a `VERBATIM` query: RediSearch also lists stemmed
//! expansions of each term (`+run(expanded)`) unless `VERBATIM` is given, and that
//! depends on its stemmer, which this module does not reproduce.

use super::ast::{FieldScope, Node, Query, TagAlternative, VectorClause, VectorRange};
use crate::util::num::fmt_g;
use std::fmt::Write;

/// The `FT.EXPLAIN … VERBATIM` text of `query`: one node per line, two spaces of
/// indentation per level, each line ending in `\n`.
pub fn explain(query: &Query) -> String {
    let mut out = String::new();
    match &query.vector {
        None => node(&mut out, &query.filter, 0),
        Some(knn) if query.filter == Node::MatchAll => {
            out.push_str("VECTOR {");
            knn_text(&mut out, knn);
            out.push_str("}\n");
        }
        Some(knn) => {
            out.push_str("VECTOR {\n");
            node(&mut out, &query.filter, 1);
            out.push_str("} => {");
            knn_text(&mut out, knn);
            out.push_str("}\n");
        }
    }
    out
}

fn lossy(b: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(b)
}

fn knn_text(out: &mut String, v: &VectorClause) {
    let _ = write!(
        out,
        "K={} nearest vectors to `${}` in vector index associated with field @{}",
        v.k,
        lossy(&v.blob_param),
        lossy(&v.field)
    );
    for (name, value) in &v.written {
        let _ = write!(out, ", {} = {}", lossy(name), lossy(value));
    }
    let _ = write!(out, ", yields distance as `{}`", lossy(&v.score_field()));
}

fn range_text(out: &mut String, r: &VectorRange) {
    let _ = write!(
        out,
        "VECTOR {{Vectors that are within {} distance radius from `${}` in vector index associated with field @{}",
        fmt_g(r.radius, 6),
        lossy(&r.blob_param),
        lossy(&r.field)
    );
    for (name, value) in &r.written {
        let _ = write!(out, ", {} = {}", lossy(name), lossy(value));
    }
    if let Some(alias) = &r.yield_distance_as {
        let _ = write!(out, ", yields distance as `{}`", lossy(alias));
    }
    out.push('}');
}

/// `@a|b:` for a restricted scope, `@NULL:` for an empty one, nothing for all.
fn scope_prefix(scope: &FieldScope) -> String {
    match scope {
        FieldScope::All => String::new(),
        FieldScope::Fields(f) if f.is_empty() => "@NULL:".into(),
        FieldScope::Fields(f) => {
            let names: Vec<_> = f.iter().map(|n| lossy(n).into_owned()).collect();
            format!("@{}:", names.join("|"))
        }
    }
}

fn number(v: f64) -> String {
    if v.is_infinite() {
        if v > 0.0 { "inf" } else { "-inf" }.into()
    } else {
        format!("{v:.6}")
    }
}

fn indent(out: &mut String, depth: usize) {
    for _ in 0..depth {
        out.push_str("  ");
    }
}

fn group(out: &mut String, head: &str, children: &[&Node], depth: usize, space: bool) {
    out.push_str(head);
    out.push_str(if space { " {\n" } else { "{\n" });
    for c in children {
        node(out, c, depth + 1);
    }
    indent(out, depth);
    out.push_str("}\n");
}

fn node(out: &mut String, n: &Node, depth: usize) {
    indent(out, depth);
    match n {
        Node::Empty => out.push_str("<empty>\n"),
        Node::MatchAll => out.push_str("<WILDCARD>\n"),
        Node::Term {
            fields,
            term,
            expanded,
        } => {
            let mark = if *expanded { "(expanded)" } else { "" };
            let _ = writeln!(out, "{}{}{mark}", scope_prefix(fields), lossy(term));
        }
        Node::Prefix { fields, prefix } => {
            let _ = writeln!(out, "{}PREFIX{{{}*}}", scope_prefix(fields), lossy(prefix));
        }
        Node::Suffix { fields, suffix } => {
            let _ = writeln!(out, "{}SUFFIX{{*{}}}", scope_prefix(fields), lossy(suffix));
        }
        Node::Fuzzy { fields, term, .. } => {
            let _ = writeln!(out, "{}FUZZY{{{}}}", scope_prefix(fields), lossy(term));
        }
        Node::Phrase { fields, terms } if terms.is_empty() => {
            let _ = writeln!(out, "{}\"\"", scope_prefix(fields));
        }
        Node::Phrase { fields, terms } => {
            let p = scope_prefix(fields);
            let _ = writeln!(out, "{p}EXACT {{");
            for t in terms {
                indent(out, depth + 1);
                let _ = writeln!(out, "{p}{}", lossy(t));
            }
            indent(out, depth);
            out.push_str("}\n");
        }
        Node::Intersect { fields, children } | Node::Union { fields, children } => {
            let op = if matches!(n, Node::Intersect { .. }) {
                "INTERSECT"
            } else {
                "UNION"
            };
            let head = format!("{}{op}", scope_prefix(fields));
            group(
                out,
                &head,
                &children.iter().collect::<Vec<_>>(),
                depth,
                true,
            );
        }
        Node::Not { fields, child } => {
            let head = format!("{}NOT", scope_prefix(fields));
            group(out, &head, &[child], depth, false);
        }
        Node::Optional { fields, child } => {
            let head = format!("{}OPTIONAL", scope_prefix(fields));
            group(out, &head, &[child], depth, false);
        }
        Node::Tag {
            field,
            alternatives,
        } => {
            let _ = writeln!(out, "TAG:@{} {{", lossy(field));
            for a in alternatives {
                tag(out, a, depth + 1);
            }
            indent(out, depth);
            out.push_str("}\n");
        }
        Node::Numeric { field, range } => {
            let lo = if range.min_inclusive { "<=" } else { "<" };
            let hi = if range.max_inclusive { "<=" } else { "<" };
            let _ = writeln!(
                out,
                "NUMERIC {{{} {lo} @{} {hi} {}}}",
                number(range.min),
                lossy(field),
                number(range.max)
            );
        }
        Node::Geo {
            field,
            lon,
            lat,
            radius,
            unit,
        } => {
            let _ = writeln!(
                out,
                "GEO {}:{{{},{} --> {} {}}}",
                lossy(field),
                number(*lon),
                number(*lat),
                number(*radius),
                unit.as_str()
            );
        }
        Node::VectorRange(r) => {
            range_text(out, r);
            out.push('\n');
        }
    }
}

fn tag(out: &mut String, a: &TagAlternative, depth: usize) {
    indent(out, depth);
    match a {
        TagAlternative::Exact(v) => {
            let _ = writeln!(out, "{}", lossy(v));
        }
        TagAlternative::Prefix(v) => {
            let _ = writeln!(out, "PREFIX{{{}*}}", lossy(v));
        }
        TagAlternative::All(words) => {
            out.push_str("INTERSECT {\n");
            for w in words {
                tag(out, w, depth + 1);
            }
            indent(out, depth);
            out.push_str("}\n");
        }
    }
}
