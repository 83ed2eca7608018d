//! RediSearch's default text handling: the tokenizer used both for TEXT fields at
//! indexing time and for query terms, the default English stopword list, TAG value
//! splitting, and a matcher that decides whether a document's text satisfies the
//! text part of a query tree.
//!
//! Indexing and querying must agree byte for byte (a term only matches if both
//! sides produce the same token), which is why both go through this one module.

use std::ops::Range;

use super::query::{FieldScope, Node};

/// Bytes that separate words in text, besides space and tab (RediSearch's list: other
/// whitespace, such as a newline, does not end a word; it is dropped from it).
pub const SEPARATORS: &[u8] = b",./(){}[]:;~!@#$%^&*-=+|'`\"<>?";

/// RediSearch's default English stopwords, dropped from indexed text and from query
/// terms (but not from exact phrases).
pub const DEFAULT_STOPWORDS: &[&str] = &[
    "a", "is", "the", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into",
    "it", "no", "not", "of", "on", "or", "such", "that", "their", "then", "there", "these", "they",
    "this", "to", "was", "will", "with",
];

/// Whether `term` (already lowercase) is a default stopword.
pub fn is_stopword(term: &[u8]) -> bool {
    DEFAULT_STOPWORDS.iter().any(|w| w.as_bytes() == term)
}

/// Whether `c` separates words in text.
pub fn is_separator(c: u8) -> bool {
    c == b' ' || c == b'\t' || SEPARATORS.contains(&c)
}

/// Lowercases text: Unicode-aware for valid UTF-8, ASCII-only otherwise.
pub fn lowercase(s: &[u8]) -> Vec<u8> {
    match std::str::from_utf8(s) {
        Ok(text) if !text.is_ascii() => text.to_lowercase().into_bytes(),
        _ => s.to_ascii_lowercase(),
    }
}

/// One token of a text: the lowercased word, its position among kept tokens and
/// where it stands in the text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    /// The word, lowercased, escapes removed.
    pub text: Vec<u8>,
    /// 0 for the first kept word, 1 for the next, …; stopwords take no position.
    pub position: u32,
    /// The word's bytes in the text, escapes included.
    pub span: Range<usize>,
}

/// Splits `text` into words the way RediSearch indexes a TEXT field: separators and
/// whitespace end words, a backslash makes the next byte part of the word,
/// words are lowercased, stopwords dropped, numbers kept as words.
pub fn tokenize(text: &[u8]) -> Vec<Token> {
    tokenize_with(text, &is_stopword)
}

/// [`tokenize`] with another stopword list (an index's `STOPWORDS`).
pub fn tokenize_with(text: &[u8], is_stopword: &dyn Fn(&[u8]) -> bool) -> Vec<Token> {
    let mut position = 0u32;
    let mut out = Vec::new();
    for span in word_spans(text) {
        let mut word = unescaped(&text[span.clone()]);
        // Control bytes (a newline inside a word) are dropped, as RediSearch
        // normalises a token; a word of nothing else is no word.
        word.retain(|c| !c.is_ascii_control());
        let lower = lowercase(&word);
        if !lower.is_empty() && !is_stopword(&lower) {
            out.push(Token {
                text: lower,
                position,
                span,
            });
            position += 1;
        }
    }
    out
}

/// [`tokenize`] with an index's `STOPWORDS` when it has its own list.
pub fn tokenize_for_index(text: &[u8], stopwords: Option<&[Vec<u8>]>) -> Vec<Token> {
    match stopwords {
        None => tokenize(text),
        Some(list) => tokenize_with(text, &|w| list.iter().any(|s| s == w)),
    }
}

/// The byte spans of the words of a text: separators end words, a backslash keeps
/// the next byte in the word (a backslash at the very end separates).
pub fn word_spans(text: &[u8]) -> Vec<Range<usize>> {
    let mut out = Vec::new();
    let mut start = None;
    let mut i = 0;
    while i < text.len() {
        let c = text[i];
        if c == b'\\' && i + 1 < text.len() {
            start.get_or_insert(i);
            i += 2;
            continue;
        }
        if is_separator(c) || c == b'\\' {
            if let Some(s) = start.take() {
                out.push(s..i);
            }
        } else {
            start.get_or_insert(i);
        }
        i += 1;
    }
    if let Some(s) = start {
        out.push(s..text.len());
    }
    out
}

/// A word's bytes with its escapes removed (a backslash and the byte after it become
/// that byte).
fn unescaped(word: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(word.len());
    let mut bytes = word.iter();
    while let Some(&c) = bytes.next() {
        match (c, bytes.clone().next()) {
            (b'\\', Some(&next)) => {
                out.push(next);
                bytes.next();
            }
            _ => out.push(c),
        }
    }
    out
}

/// Splits a TAG field's value as RediSearch indexes it: on `separator`, each piece
/// trimmed of whitespace and lowercased unless `case_sensitive`; empty pieces are
/// dropped.
pub fn tag_values(raw: &[u8], separator: u8, case_sensitive: bool) -> Vec<Vec<u8>> {
    raw.split(|&c| c == separator)
        .map(|piece| piece.trim_ascii())
        .filter(|piece| !piece.is_empty())
        .map(|piece| {
            if case_sensitive {
                piece.to_vec()
            } else {
                lowercase(piece)
            }
        })
        .collect()
}

/// A document's TEXT fields, tokenized, for [`matches()`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TextDocument {
    fields: Vec<(Vec<u8>, Vec<Token>)>,
}

impl TextDocument {
    /// A document with no text.
    pub fn new() -> TextDocument {
        TextDocument::default()
    }

    /// Adds TEXT field `name` with value `text` (tokenized with [`tokenize`]).
    pub fn add_field(&mut self, name: impl Into<Vec<u8>>, text: &[u8]) {
        self.add_tokens(name, tokenize(text));
    }

    /// Adds TEXT field `name` with already-tokenized words.
    pub fn add_tokens(&mut self, name: impl Into<Vec<u8>>, tokens: Vec<Token>) {
        self.fields.push((name.into(), tokens));
    }

    fn scoped<'a>(&'a self, scope: &'a FieldScope) -> impl Iterator<Item = &'a [Token]> + 'a {
        self.fields
            .iter()
            .filter(move |(name, _)| scope.contains(name))
            .map(|(_, tokens)| tokens.as_slice())
    }

    fn any_token(&self, scope: &FieldScope, pred: impl Fn(&[u8]) -> bool) -> bool {
        self.scoped(scope)
            .any(|tokens| tokens.iter().any(|t| pred(&t.text)))
    }
}

/// Whether `doc` satisfies `node`. Text leaves (terms, prefixes, suffixes, fuzzy
/// terms, phrases) are decided here; `*` matches, an empty node does not; for tag,
/// numeric, geo and vector leaves, `other` decides (the caller holds those values).
///
/// A phrase matches when its words (stopwords left out, since they are not indexed)
/// appear at consecutive positions, in order, within one field.
pub fn matches(node: &Node, doc: &TextDocument, other: &mut dyn FnMut(&Node) -> bool) -> bool {
    match node {
        Node::Empty => false,
        Node::MatchAll => true,
        Node::Term { fields, term, .. } => doc.any_token(fields, |t| t == term.as_slice()),
        Node::Prefix { fields, prefix } => doc.any_token(fields, |t| t.starts_with(prefix)),
        Node::Suffix { fields, suffix } => doc.any_token(fields, |t| t.ends_with(suffix)),
        Node::Fuzzy {
            fields,
            term,
            distance,
        } => doc.any_token(fields, |t| fuzzy_match(t, term, *distance as usize)),
        Node::Phrase { fields, terms } => {
            let words: Vec<&[u8]> = terms
                .iter()
                .map(Vec::as_slice)
                .filter(|w| !is_stopword(w))
                .collect();
            !words.is_empty() && doc.scoped(fields).any(|tokens| phrase_in(tokens, &words))
        }
        Node::Intersect { children, .. } => children.iter().all(|c| matches(c, doc, other)),
        Node::Union { children, .. } => children.iter().any(|c| matches(c, doc, other)),
        Node::Not { child, .. } => !matches(child, doc, other),
        Node::Optional { .. } => true,
        Node::Tag { .. } | Node::Numeric { .. } | Node::Geo { .. } | Node::VectorRange(_) => {
            other(node)
        }
    }
}

/// Whether `words` occur at consecutive positions in `tokens`.
fn phrase_in(tokens: &[Token], words: &[&[u8]]) -> bool {
    tokens.iter().any(|start| {
        start.text == words[0]
            && words[1..].iter().enumerate().all(|(i, w)| {
                let want = start.position + 1 + i as u32;
                tokens.iter().any(|t| t.position == want && t.text == *w)
            })
    })
}

/// Whether a fuzzy query term (`%pattern%`, up to `max` edits) matches `word`, as
/// RediSearch's term-trie walk decides. Its automaton reports a match for a word's
/// last character when the state before it matched, provided the walk can go on
/// through that character: so `word` matches when it is within `max` edits of the
/// pattern, or when the word without its last character is and the whole word is
/// still within `max` edits of some prefix of the pattern (`%alpah%` finds `alpha`
/// through `alph`; `%xie%` does not find `ies`). Distances count characters.
pub fn fuzzy_match(word: &[u8], pattern: &[u8], max: usize) -> bool {
    let word: Vec<char> = String::from_utf8_lossy(word).chars().collect();
    let pattern: Vec<char> = String::from_utf8_lossy(pattern).chars().collect();
    if word.len() > pattern.len() + max + 1 {
        return false;
    }
    // `row[j]`: the distance between the word so far and the pattern's first j.
    let mut row: Vec<usize> = (0..=pattern.len()).collect();
    let last = pattern.len();
    let mut before_last = false;
    for (i, &c) in word.iter().enumerate() {
        if i + 1 == word.len() {
            before_last = row[last] <= max;
        }
        let mut next = vec![i + 1; pattern.len() + 1];
        for (j, &p) in pattern.iter().enumerate() {
            next[j + 1] = (row[j] + usize::from(c != p))
                .min(row[j + 1] + 1)
                .min(next[j] + 1);
        }
        row = next;
        // The automaton dies once no prefix of the pattern is within reach.
        if row.iter().all(|&d| d > max) {
            return false;
        }
    }
    row[last] <= max || before_last
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::query::{parse, FieldKind, FieldList, Params};

    fn words(text: &str) -> Vec<String> {
        tokenize(text.as_bytes())
            .into_iter()
            .map(|t| String::from_utf8(t.text).expect("utf-8"))
            .collect()
    }

    #[test]
    fn tokenizer_splits_lowercases_and_drops_stopwords() {
        assert_eq!(words("Hello, World!"), ["hello", "world"]);
        assert_eq!(words("The cat is on the mat"), ["cat", "mat"]);
        assert_eq!(words("foo-bar_baz 42"), ["foo", "bar_baz", "42"]);
        assert_eq!(
            words("a.b;c:d(e)f{g}h[i]j<k>l"),
            ["b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"]
        );
        assert_eq!(words(r"foo\-bar a\ b"), ["foo-bar", "a b"]);
        assert_eq!(words("HÉLLO Wörld"), ["héllo", "wörld"]);
        assert_eq!(words("it's"), ["s"]);
        // Only space and tab of the whitespace separate; control bytes are dropped.
        assert_eq!(
            words("alpha\nbeta gamma\r \nand x\ty \n"),
            ["alphabeta", "gamma", "x", "y"]
        );
        let toks = tokenize(b"the quick brown");
        assert_eq!(toks[0].position, 0);
        assert_eq!(toks[1].position, 1);
        assert_eq!(DEFAULT_STOPWORDS.len(), 33);
    }

    #[test]
    fn tag_values_split_trim_and_fold_case() {
        assert_eq!(
            tag_values(b" Red , blue,,GREEN ", b',', false),
            [b"red".to_vec(), b"blue".to_vec(), b"green".to_vec()]
        );
        assert_eq!(
            tag_values(b"A;b", b';', true),
            [b"A".to_vec(), b"b".to_vec()]
        );
        assert!(tag_values(b" , ", b',', false).is_empty());
    }

    fn doc_matches(query: &str, title: &str, body: &str) -> bool {
        let fields = FieldList::new([
            ("title", FieldKind::Text),
            ("body", FieldKind::Text),
            ("n", FieldKind::Numeric),
        ]);
        let q = parse(query.as_bytes(), &Params::new(), 2, &fields).expect("valid query");
        let mut doc = TextDocument::new();
        doc.add_field("title", title.as_bytes());
        doc.add_field("body", body.as_bytes());
        matches(&q.filter, &doc, &mut |_| true)
    }

    #[test]
    fn matcher_evaluates_text_nodes() {
        assert!(doc_matches("hello", "Hello there", ""));
        assert!(!doc_matches("hello", "goodbye", ""));
        assert!(doc_matches("hel*", "", "helium"));
        assert!(doc_matches("*lium", "", "helium"));
        assert!(doc_matches("%helo%", "", "hello"));
        assert!(!doc_matches("%hexo%", "", "hello world"));
        assert!(doc_matches("@title:hello", "hello", ""));
        assert!(!doc_matches("@body:hello", "hello", ""));
        assert!(doc_matches("\"quick brown\"", "the quick brown fox", ""));
        assert!(!doc_matches("\"brown quick\"", "the quick brown fox", ""));
        assert!(doc_matches("\"the quick\"", "a quick fox", ""));
        assert!(doc_matches("quick -slow", "quick fox", ""));
        assert!(!doc_matches("quick -fox", "quick fox", ""));
        assert!(doc_matches("slow | fox", "quick fox", ""));
        assert!(doc_matches("~slow fox", "quick fox", ""));
        assert!(doc_matches("fox @n:[1 2]", "quick fox", ""));
        assert!(!doc_matches("the", "the", ""));
        assert!(!doc_matches("@nosuch:fox", "fox", "fox"));
    }

    #[test]
    fn fuzzy_terms_match_as_the_term_trie_walk_does() {
        // Within the distance.
        assert!(fuzzy_match(b"alpha", b"alpxa", 1));
        assert!(fuzzy_match(b"alpha", b"lpha", 1));
        // The word less its last character is within it, and the walk goes on.
        assert!(fuzzy_match(b"alpha", b"alpah", 1));
        // ... but not when the last character ends every path of the automaton.
        assert!(!fuzzy_match(b"ies", b"xie", 1));
        assert!(!fuzzy_match(b"alpha", b"aplha", 1));
        assert!(fuzzy_match(b"alpha", b"aplha", 2));
        // Characters, not bytes.
        assert!(fuzzy_match("straße".as_bytes(), b"strase", 1));
        assert!(!fuzzy_match(b"gamma", b"delta", 3));
    }
}
