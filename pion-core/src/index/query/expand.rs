//! Query expansion, as RediSearch's default expander rewrites a parsed query before
//! running it: each term becomes the union of itself, its synonym groups (`~g`), its
//! `+stem` and (when it differs) its stem as a word, so `running` finds `runs` and
//! `run`, and `kid` finds `child` when both are in one `FT.SYNUPDATE` group.
//!
//! Only terms at the top, in unions and in intersections are expanded: terms under
//! `-`, `~`, exact phrases, prefixes and the like keep their written form, as in
//! RediSearch. `VERBATIM` skips the expansion altogether.

use std::collections::BTreeMap;

use super::Node;
use crate::index::stem::{synonym_term, Language};

/// How terms expand: the stemmer, and the index's synonym groups by term.
#[derive(Clone, Copy)]
pub struct Expansion<'a> {
    /// The stemming language.
    pub language: Language,
    /// Whether terms are stemmed (`EXPANDER SYNONYM` leaves them).
    pub stems: bool,
    /// Each term's synonym groups.
    pub synonyms: &'a BTreeMap<Vec<u8>, Vec<Vec<u8>>>,
}

impl Expansion<'_> {
    /// The terms `term` expands to beyond itself.
    fn of(&self, term: &[u8]) -> Vec<Vec<u8>> {
        let mut out: Vec<Vec<u8>> = self
            .synonyms
            .get(term)
            .into_iter()
            .flatten()
            .map(|g| synonym_term(g))
            .collect();
        if self.stems {
            out.extend(self.language.expansions(term));
        }
        out
    }
}

/// The tree with every expandable term expanded.
pub fn expand_terms(node: Node, how: Expansion<'_>) -> Node {
    match node {
        Node::Term {
            fields,
            term,
            expanded: false,
        } => {
            let extra = how.of(&term);
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
            children: children.into_iter().map(|c| expand_terms(c, how)).collect(),
        },
        Node::Intersect { fields, children } => Node::Intersect {
            fields,
            children: children.into_iter().map(|c| expand_terms(c, how)).collect(),
        },
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::query::{explain, parse, FieldKind, FieldList, Params, Query};

    fn expanded_with(text: &str, synonyms: &BTreeMap<Vec<u8>, Vec<Vec<u8>>>) -> String {
        let fields = FieldList::new([("t", FieldKind::Text)]);
        let q = parse(text.as_bytes(), &Params::new(), 2, &fields).expect("valid query");
        let how = Expansion {
            language: Language::ENGLISH,
            stems: true,
            synonyms,
        };
        explain(&Query {
            filter: expand_terms(q.filter, how),
            vector: q.vector,
        })
    }

    fn expanded(text: &str) -> String {
        expanded_with(text, &BTreeMap::new())
    }

    #[test]
    fn synonym_groups_come_before_the_stems() {
        let mut synonyms = BTreeMap::new();
        synonyms.insert(b"kid".to_vec(), vec![b"g1".to_vec(), b"G2".to_vec()]);
        assert_eq!(
            expanded_with("kid", &synonyms),
            "UNION {\n  kid\n  ~g1(expanded)\n  ~G2(expanded)\n  +kid(expanded)\n}\n"
        );
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
