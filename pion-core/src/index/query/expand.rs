//! Query expansion by stemming, as RediSearch expands a parsed query before running
//! it: each term becomes the union of itself, its `+stem` and (when it differs) its
//! stem as a word, so `running` finds `runs` and `run`.
//!
//! Only terms at the top, in unions and in intersections are expanded: terms under
//! `-`, `~`, exact phrases, prefixes and the like keep their written form, as in
//! RediSearch. `VERBATIM` skips the expansion altogether.

use super::Node;
use crate::index::stem::Language;

/// The tree with every expandable term stemmed in `language`.
pub fn expand_stems(node: Node, language: Language) -> Node {
    match node {
        Node::Term {
            fields,
            term,
            expanded: false,
        } => {
            let extra = language.expansions(&term);
            if extra.is_empty() {
                return Node::Term {
                    fields,
                    term,
                    expanded: false,
                };
            }
            let mut children = vec![Node::Term {
                fields: fields.clone(),
                term,
                expanded: false,
            }];
            children.extend(extra.into_iter().map(|t| Node::Term {
                fields: fields.clone(),
                term: t,
                expanded: true,
            }));
            Node::Union { fields, children }
        }
        Node::Union { fields, children } => Node::Union {
            fields,
            children: children
                .into_iter()
                .map(|c| expand_stems(c, language))
                .collect(),
        },
        Node::Intersect { fields, children } => Node::Intersect {
            fields,
            children: children
                .into_iter()
                .map(|c| expand_stems(c, language))
                .collect(),
        },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::query::{explain, parse, FieldKind, FieldList, Params, Query};

    fn expanded(text: &str) -> String {
        let fields = FieldList::new([("t", FieldKind::Text)]);
        let q = parse(text.as_bytes(), &Params::new(), 2, &fields).expect("valid query");
        explain(&Query {
            filter: expand_stems(q.filter, Language::ENGLISH),
            vector: q.vector,
        })
    }

    #[test]
    fn a_term_becomes_itself_its_marked_stem_and_its_stem() {
        assert_eq!(
            expanded("running"),
            "UNION {\n  running\n  +run(expanded)\n  run(expanded)\n}\n"
        );
        assert_eq!(
            expanded("@t:run"),
            "@t:UNION {\n  @t:run\n  @t:+run(expanded)\n}\n"
        );
    }

    #[test]
    fn negations_optionals_phrases_and_prefixes_keep_their_words() {
        assert_eq!(expanded("-runs"), "NOT{\n  runs\n}\n");
        assert_eq!(expanded("\"runs fast\""), "EXACT {\n  runs\n  fast\n}\n");
        assert_eq!(expanded("runs*"), "PREFIX{runs*}\n");
        assert!(expanded("walks ~runs").contains("OPTIONAL{\n    runs\n  }"));
    }
}
