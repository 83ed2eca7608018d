//! Text values as an index stores them: the query module's tokenizer (one definition of
//! a token for documents and queries), with an index's own `STOPWORDS` list when
//! `FT.CREATE` gave one.

use crate::index::tokens;

/// The tokens of a TEXT value, in order. With `stopwords`, those words are dropped
/// instead of the default list.
pub fn tokenize(raw: &[u8], stopwords: Option<&[Vec<u8>]>) -> Vec<Vec<u8>> {
    match stopwords {
        None => tokens::tokenize(raw).into_iter().map(|t| t.text).collect(),
        Some(list) => raw
            .split(|&b| tokens::is_separator(b))
            .filter(|w| !w.is_empty())
            .map(tokens::lowercase)
            .filter(|w| !list.contains(w))
            .collect(),
    }
}

/// The tags of a TAG value.
pub fn tag_values(raw: &[u8], separator: u8, case_sensitive: bool) -> Vec<Vec<u8>> {
    tokens::tag_values(raw, separator, case_sensitive)
}
