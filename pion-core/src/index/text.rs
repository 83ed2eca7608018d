//! Temporary tokenizer until the query module's lands.

/// Tokens of a text value.
pub fn tokenize(raw: &[u8], stopwords: Option<&[Vec<u8>]>) -> Vec<Vec<u8>> {
    let _ = stopwords;
    raw.split(|b| !b.is_ascii_alphanumeric() && *b != b'_')
        .filter(|t| !t.is_empty())
        .map(<[u8]>::to_ascii_lowercase)
        .collect()
}

/// Tag values of a tag field.
pub fn tag_values(raw: &[u8], separator: u8, case_sensitive: bool) -> Vec<Vec<u8>> {
    raw.split(|b| *b == separator)
        .map(|t| t.trim_ascii())
        .filter(|t| !t.is_empty())
        .map(|t| {
            if case_sensitive {
                t.to_vec()
            } else {
                t.to_ascii_lowercase()
            }
        })
        .collect()
}
