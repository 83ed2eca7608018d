//! The RediSearch query language (`FT.SEARCH`, `FT.AGGREGATE`, `FT.EXPLAIN`) as a
//! pure function: query text in, a typed [`Query`] or RediSearch's exact error text
//! out.
//!
//! It exists so that the `FT.*` commands, the index and the tests share one
//! definition of the language, checked against RediSearch 2.10: tokenization and
//! stopwords, precedence (intersection binds tighter than `|`), escapes, `$`
//! parameters, DIALECT 1 versus 2, KNN and range vector clauses, and the text
//! `FT.EXPLAIN` prints (`explain.rs`). Nothing here touches an index or the keyspace.
//!
//! ```
//! use pion_core::index::query::{parse, FieldKind, FieldList, Node, Params};
//!
//! let fields = FieldList::new([("title", FieldKind::Text), ("price", FieldKind::Numeric)]);
//! let q = parse(b"@price:[10 (20] Hello", &Params::new(), 2, &fields).expect("valid query");
//! assert!(matches!(q.filter, Node::Intersect { .. }));
//! ```

mod ast;
mod expand;
mod explain;
mod lexer;
mod params;
mod parser;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_explain;

pub use ast::{
    unescape, FieldScope, GeoUnit, Hybrid, HybridPolicy, Node, NumericRange, Query, TagAlternative,
    VectorClause, VectorOption, VectorRange,
};
pub use expand::{expand_terms, Expansion};
pub use explain::explain;
/// A number as RediSearch reads one in a query or a `FILTER` (C's `strtod`, whole).
pub(crate) use params::parse_double as parse_number;
pub use params::Params;

use std::fmt;

/// A query that RediSearch would refuse, with RediSearch's error text (the reply is
/// `-<text>` on the wire).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryError {
    message: String,
}

impl QueryError {
    /// An error with this exact text.
    pub fn new(message: impl Into<String>) -> QueryError {
        QueryError {
            message: message.into(),
        }
    }

    /// The error text, e.g. `Syntax error at offset 3 near foo`.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for QueryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for QueryError {}

/// The type of an index field, as declared in `FT.CREATE … SCHEMA`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FieldKind {
    /// `TEXT`: tokenized full text.
    Text,
    /// `TAG`: exact values split on a separator.
    Tag,
    /// `NUMERIC`.
    Numeric,
    /// `GEO`.
    Geo,
    /// `VECTOR`.
    Vector,
}

/// What the parser may ask about the index's fields.
///
/// Names are attribute names as users write them after `@` (the `AS` alias when
/// there is one), compared exactly (case-sensitive), like RediSearch.
pub trait FieldKinds {
    /// The kind of field `name`, or `None` if the index has no such field.
    fn kind(&self, name: &[u8]) -> Option<FieldKind>;

    /// The field's position in the schema; field lists (`@b|a:`) are kept in this
    /// order, which is how `FT.EXPLAIN` prints them. `None` keeps the written order.
    fn position(&self, name: &[u8]) -> Option<usize> {
        let _ = name;
        None
    }

    /// Whether a query word is a stopword, dropped from the query: RediSearch's
    /// default list unless the index has its own (or `NOSTOPWORDS` keeps them all).
    fn is_stopword(&self, term: &[u8]) -> bool {
        crate::index::tokens::is_stopword(term)
    }
}

/// A schema as an ordered list of `(name, kind)`: the simplest [`FieldKinds`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldList {
    fields: Vec<(Vec<u8>, FieldKind)>,
}

impl FieldList {
    /// The fields in schema order.
    pub fn new<N: AsRef<[u8]>>(fields: impl IntoIterator<Item = (N, FieldKind)>) -> FieldList {
        FieldList {
            fields: fields
                .into_iter()
                .map(|(n, k)| (n.as_ref().to_vec(), k))
                .collect(),
        }
    }
}

impl FieldKinds for FieldList {
    fn kind(&self, name: &[u8]) -> Option<FieldKind> {
        self.fields.iter().find(|(n, _)| n == name).map(|(_, k)| *k)
    }

    fn position(&self, name: &[u8]) -> Option<usize> {
        self.fields.iter().position(|(n, _)| n == name)
    }
}

/// The highest `DIALECT` RediSearch 2.10 accepts.
pub const MAX_DIALECT: u32 = 4;

/// Parses `query` under `dialect` (1 to [`MAX_DIALECT`]; 3 and 4 parse like 2),
/// with `params` for `$name` references (DIALECT 2 and later).
///
/// Field names are resolved with `fields`: a text modifier (`@f:`) keeps only the
/// TEXT fields it names. As in RediSearch, an unknown field or one of the wrong kind
/// is not an error: it matches nothing (`FT.EXPLAIN` shows `@NULL`), and tag,
/// numeric, geo and vector expressions keep the field name as written.
pub fn parse(
    query: &[u8],
    params: &Params,
    dialect: u32,
    fields: &dyn FieldKinds,
) -> Result<Query, QueryError> {
    if !(1..=MAX_DIALECT).contains(&dialect) {
        return Err(QueryError::new(
            "DIALECT requires a non negative integer >=1 and <= 4",
        ));
    }
    parser::Parser::new(query, params, dialect, fields).parse_query()
}
