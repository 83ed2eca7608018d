//! How `FT.SEARCH`, `FT.AGGREGATE`, `FT.EXPLAIN` and `FT.SPELLCHECK` read a query's
//! words: the schema the parser asks about (with the index's stopwords), and the
//! options that change the analysis (`VERBATIM`, `LANGUAGE`, `NOSTOPWORDS`,
//! `EXPANDER`) applied as the query is parsed and expanded.

use crate::error::{OpError, OpResult};
use crate::index::query::{self as q, FieldKind, FieldKinds, Params, Query};
use crate::index::schema::{FieldKind as SchemaKind, IndexDef};
use crate::index::stem::{Language, LanguageError};

fn err(text: impl Into<String>) -> OpError {
    OpError::custom(text.into())
}

/// The index's schema as the query parser asks about it.
pub(super) struct Kinds<'a> {
    def: &'a IndexDef,
    /// `NOSTOPWORDS`: no query word is dropped.
    keep_stopwords: bool,
}

impl FieldKinds for Kinds<'_> {
    fn kind(&self, name: &[u8]) -> Option<FieldKind> {
        self.def.field(name).map(|(_, f)| match f.kind {
            SchemaKind::Text { .. } => FieldKind::Text,
            SchemaKind::Tag { .. } => FieldKind::Tag,
            SchemaKind::Numeric => FieldKind::Numeric,
            SchemaKind::Geo => FieldKind::Geo,
            SchemaKind::Vector(_) => FieldKind::Vector,
        })
    }

    fn position(&self, name: &[u8]) -> Option<usize> {
        self.def.field(name).map(|(i, _)| i)
    }

    fn is_stopword(&self, term: &[u8]) -> bool {
        !self.keep_stopwords
            && match &self.def.stopwords {
                Some(list) => list.iter().any(|w| w == term),
                None => crate::index::tokens::is_stopword(term),
            }
    }
}

/// How query words are analysed: `VERBATIM`, `LANGUAGE` and `NOSTOPWORDS`.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Analysis {
    /// `VERBATIM`: terms are not stemmed.
    pub(super) verbatim: bool,
    /// `LANGUAGE`: the stemmer, when not the index's own.
    pub(super) language: Option<Language>,
    /// `NOSTOPWORDS`: stopwords are searched like other words.
    pub(super) keep_stopwords: bool,
    /// `EXPANDER SBSTEM`: stems only; `EXPANDER SYNONYM`: synonyms only.
    pub(super) expander: Option<Expander>,
}

/// RediSearch's query expanders that Pion has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Expander {
    /// `SBSTEM`: Snowball stems.
    Stems,
    /// `SYNONYM`: synonym groups.
    Synonyms,
    /// `DEFAULT`: both (what a query gets without `EXPANDER`).
    Default,
}

impl Analysis {
    /// Reads `LANGUAGE l` (the keyword just read, `i` at its argument).
    pub(super) fn parse_language(&mut self, argv: &[Vec<u8>], i: &mut usize) -> OpResult<()> {
        let name = argv.get(*i).ok_or_else(|| {
            err("Bad arguments for LANGUAGE: Expected an argument, but none provided")
        })?;
        *i += 1;
        self.language = Some(Language::parse(name).map_err(|e| match e {
            LanguageError::Unknown => err("No such language"),
            LanguageError::NoStemmer => crate::index::schema::no_stemmer(name),
        })?);
        Ok(())
    }

    /// Reads `EXPANDER name` (the keyword just read, `i` at its argument). Names are
    /// case-sensitive, as in RediSearch; `PHONETIC` and names RediSearch does not know
    /// are refused.
    pub(super) fn parse_expander(&mut self, argv: &[Vec<u8>], i: &mut usize) -> OpResult<()> {
        let name = argv.get(*i).ok_or_else(|| {
            err("Bad arguments for EXPANDER: Expected an argument, but none provided")
        })?;
        *i += 1;
        self.expander = Some(match name.as_slice() {
            b"DEFAULT" => Expander::Default,
            b"SBSTEM" => Expander::Stems,
            b"SYNONYM" => Expander::Synonyms,
            b"PHONETIC" => return Err(err("EXPANDER PHONETIC is not supported by Pion")),
            other => {
                return Err(err(format!(
                    "Unknown EXPANDER `{}` (Pion has DEFAULT, SBSTEM and SYNONYM)",
                    String::from_utf8_lossy(other)
                )))
            }
        });
        Ok(())
    }

    /// Parses a query for `def` and expands its terms by synonyms and stemming
    /// (unless `VERBATIM`), as RediSearch runs it.
    pub(super) fn parse(
        &self,
        def: &IndexDef,
        text: &[u8],
        params: &Params,
        dialect: u32,
    ) -> OpResult<Query> {
        let kinds = Kinds {
            def,
            keep_stopwords: self.keep_stopwords,
        };
        let mut query =
            q::parse(text, params, dialect, &kinds).map_err(|e| err(e.message().to_string()))?;
        if !self.verbatim {
            let none = Default::default();
            let expander = self.expander.unwrap_or(Expander::Default);
            let how = q::Expansion {
                language: self.language.unwrap_or(def.language),
                stems: expander != Expander::Synonyms,
                synonyms: if expander == Expander::Stems {
                    &none
                } else {
                    &def.synonyms
                },
            };
            query.filter = q::expand_terms(query.filter, how);
        }
        Ok(query)
    }
}
