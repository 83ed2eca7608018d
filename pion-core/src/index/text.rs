//! Text values as an index stores them: the query module's tokenizer (one definition of
//! a token for documents and queries), with an index's own `STOPWORDS` list when
//! `FT.CREATE` gave one.

use crate::index::tokens;

/// The tokens of a TEXT value, in order. With `stopwords`, those words are dropped
/// instead of the default list.
pub fn tokenize(raw: &[u8], stopwords: Option<&[Vec<u8>]>) -> Vec<Vec<u8>> {
    tokens::tokenize_for_index(raw, stopwords)
        .into_iter()
        .map(|t| t.text)
        .collect()
}

/// The tags of a TAG value: split on the field's separator when it has one, else
/// (a JSON string without `SEPARATOR`) the whole value is one tag.
pub fn tag_values(raw: &[u8], separator: Option<u8>, case_sensitive: bool) -> Vec<Vec<u8>> {
    match separator {
        Some(sep) => tokens::tag_values(raw, sep, case_sensitive),
        None => {
            let trimmed = raw.trim_ascii();
            if trimmed.is_empty() {
                Vec::new()
            } else if case_sensitive {
                vec![trimmed.to_vec()]
            } else {
                vec![tokens::lowercase(trimmed)]
            }
        }
    }
}
