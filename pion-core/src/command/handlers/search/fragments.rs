//! The fragmenter behind `HIGHLIGHT` and `SUMMARIZE`: a field's matched words are
//! grouped into fragments (runs of matches at most eight words apart), each scored by
//! the idf of the distinct terms it holds; a summary is the best fragments, in text
//! order, each with some words of context around it.
//!
//! The arithmetic is RediSearch's, so summaries agree with it byte for byte: context
//! is the summary length less the unmatched words inside the fragment, halved, at six
//! bytes a word, cut back to whole words (so a field's last word is cut too); a field
//! without a match is summarised by its head.

use std::ops::Range;

use crate::index::tokens::is_separator;

/// Matches farther apart than this many words start a new fragment.
const MAX_DISTANCE: u32 = 8;

/// The bytes a context word is estimated at.
const WORD_BYTES: usize = 6;

/// A matched word of a field: where it stands and which query term it matched.
#[derive(Debug, Clone)]
pub(super) struct Match {
    /// The word's position among the field's indexed words.
    pub position: u32,
    /// Where the word starts in the text.
    pub start: usize,
    /// The matched term (an index into the query's matched terms).
    pub term: usize,
    /// The term's idf.
    pub idf: f32,
}

/// `SUMMARIZE`'s settings.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Summary {
    /// `FRAGS`: how many fragments at most.
    pub frags: usize,
    /// `LEN`: words of context per fragment.
    pub len: usize,
    /// `SEPARATOR`: written after each fragment.
    pub separator: Vec<u8>,
}

impl Default for Summary {
    fn default() -> Summary {
        Summary {
            frags: 3,
            len: 20,
            separator: b"... ".to_vec(),
        }
    }
}

/// Opening and closing tags around a matched word.
pub(super) type Tags = (Vec<u8>, Vec<u8>);

#[derive(Debug)]
struct Fragment {
    /// The first matched word's start.
    start: usize,
    /// The last matched word's end.
    end: usize,
    last_position: u32,
    score: f32,
    matches: usize,
    /// Words from the first match to the last, matched or not.
    words: usize,
    /// The matched words: their bytes and terms.
    marks: Vec<(Range<usize>, usize)>,
}

/// The fragments of a text, in text order, from its matches in position order.
fn fragments(text: &[u8], matches: &[Match], unmatched_before: &[usize]) -> Vec<Fragment> {
    let mut out: Vec<Fragment> = Vec::new();
    for (m, &skipped) in matches.iter().zip(unmatched_before) {
        // A matched word runs to the next separator, escapes or not.
        let len = text[m.start..]
            .iter()
            .take_while(|&&c| !is_separator(c))
            .count();
        let span = m.start..m.start + len;
        let fresh = match out.last() {
            Some(f) => m.position.wrapping_sub(f.last_position) > MAX_DISTANCE,
            None => true,
        };
        if fresh {
            out.push(Fragment {
                start: m.start,
                end: span.end,
                last_position: m.position,
                score: 0.0,
                matches: 0,
                words: 0,
                marks: Vec::new(),
            });
        }
        let Some(f) = out.last_mut() else {
            continue;
        };
        if !f.marks.iter().any(|(_, t)| *t == m.term) {
            f.score += m.idf;
        }
        f.end = span.end;
        f.last_position = m.position;
        f.matches += 1;
        f.words += if fresh { 1 } else { skipped + 1 };
        f.marks.push((span, m.term));
    }
    out
}

/// The field's matches with, for each, how many unmatched words come right before it.
pub(super) struct FieldMatches {
    matches: Vec<Match>,
    unmatched_before: Vec<usize>,
}

impl FieldMatches {
    /// Collects a field's words in order: `Some(m)` for a matched word, `None` for
    /// another indexed word.
    pub(super) fn new(words: impl IntoIterator<Item = Option<Match>>) -> FieldMatches {
        let mut out = FieldMatches {
            matches: Vec::new(),
            unmatched_before: Vec::new(),
        };
        let mut skipped = 0;
        for w in words {
            match w {
                Some(m) => {
                    out.matches.push(m);
                    out.unmatched_before.push(skipped);
                    skipped = 0;
                }
                None => skipped += 1,
            }
        }
        out
    }

    /// Whether no word of the field matched.
    pub(super) fn is_empty(&self) -> bool {
        self.matches.is_empty()
    }
}

fn write_marked(out: &mut Vec<u8>, text: &[u8], f: &Fragment, tags: Option<&Tags>, from: usize) {
    let mut at = from;
    for (span, _) in &f.marks {
        out.extend_from_slice(&text[at..span.start]);
        if let Some((open, _)) = tags {
            out.extend_from_slice(open);
        }
        out.extend_from_slice(&text[span.clone()]);
        if let Some((_, close)) = tags {
            out.extend_from_slice(close);
        }
        at = span.end;
    }
}

/// The whole text with every matched word wrapped in the tags.
pub(super) fn highlight_whole(text: &[u8], m: &FieldMatches, tags: &Tags) -> Vec<u8> {
    let frags = fragments(text, &m.matches, &m.unmatched_before);
    let mut out = Vec::with_capacity(text.len() + 16);
    let mut at = 0;
    for f in &frags {
        write_marked(&mut out, text, f, Some(tags), at);
        at = f.end;
    }
    out.extend_from_slice(&text[at..]);
    out
}

/// The summary of a text: its best fragments with context, matched words tagged
/// when `tags` is given.
pub(super) fn summarize(
    text: &[u8],
    m: &FieldMatches,
    summary: &Summary,
    tags: Option<&Tags>,
) -> Vec<u8> {
    let frags = fragments(text, &m.matches, &m.unmatched_before);
    // Best first (ties in text order), then the chosen ones back in text order.
    let mut order: Vec<usize> = (0..frags.len()).collect();
    order.sort_by(|&a, &b| frags[b].score.total_cmp(&frags[a].score).then(a.cmp(&b)));
    order.truncate(summary.frags);
    order.sort_unstable();
    let mut out = Vec::new();
    for (k, &i) in order.iter().enumerate() {
        let f = &frags[i];
        let before_limit = k.checked_sub(1).map(|p| frags[order[p]].end);
        let after_limit = order.get(k + 1).map(|&n| frags[n].start);
        let (before, after) = context(text, f, before_limit, after_limit, summary.len);
        let mut snippet = text[before].to_vec();
        write_marked(&mut snippet, text, f, tags, f.start);
        snippet.extend_from_slice(&text[after]);
        out.extend_from_slice(&collapse_spaces(&snippet));
        out.extend_from_slice(&summary.separator);
    }
    out
}

/// The context before and after a fragment, within the neighbours' limits.
fn context(
    text: &[u8],
    f: &Fragment,
    before_limit: Option<usize>,
    after_limit: Option<usize>,
    len: usize,
) -> (Range<usize>, Range<usize>) {
    let inside = f.words - f.matches;
    if len <= inside {
        return (f.start..f.start, f.end..f.end);
    }
    let bytes = (len - inside) / 2 * WORD_BYTES;
    let mut lo = f.start.saturating_sub(bytes).max(before_limit.unwrap_or(0));
    // `text` is not empty: the fragment holds a word of it.
    let mut hi = (f.end + bytes).min(after_limit.unwrap_or(text.len() - 1));
    // Whole words only: skip a partial word and the separators after it.
    while lo < f.start && !is_separator(text[lo]) {
        lo += 1;
    }
    while lo < f.start && is_separator(text[lo]) {
        lo += 1;
    }
    while hi > f.end && !is_separator(text[hi]) {
        hi -= 1;
    }
    while hi > f.end && is_separator(text[hi]) {
        hi -= 1;
    }
    (lo..f.start, f.end..(hi + 1).max(f.end))
}

/// A field without matches, summarised: its head, as many bytes as the fragments'
/// context would take, cut back to the last separator.
pub(super) fn head(text: &[u8], summary: &Summary) -> Vec<u8> {
    let n = (WORD_BYTES * summary.len * summary.frags + WORD_BYTES).min(text.len());
    let mut out = collapse_spaces(&text[..n]);
    while out.len() > 1 && !out.last().is_some_and(|&c| is_separator(c)) {
        out.pop();
    }
    while out.last().is_some_and(|&c| is_c_space(c)) {
        out.pop();
    }
    out
}

/// C's `isspace`.
fn is_c_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// Runs of whitespace as one space.
fn collapse_spaces(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut last_space = false;
    for &c in text {
        if is_c_space(c) {
            if !last_space {
                out.push(b' ');
            }
            last_space = true;
        } else {
            out.push(c);
            last_space = false;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::tokens::tokenize;

    /// The matches of `terms` (idf 1 each) in `text`.
    fn matches_of(text: &[u8], terms: &[&str]) -> FieldMatches {
        FieldMatches::new(tokenize(text).into_iter().map(|t| {
            terms
                .iter()
                .position(|w| w.as_bytes() == t.text)
                .map(|term| Match {
                    position: t.position,
                    start: t.span.start,
                    term,
                    idf: 1.0,
                })
        }))
    }

    fn s(v: Vec<u8>) -> String {
        String::from_utf8(v).expect("the test texts are UTF-8")
    }

    const BODY: &[u8] = b"The quick brown fox jumps over the lazy dog. Running is healthy and \
running every day keeps the doctor away. Many runners prefer shoes with soft soles, and a fox \
was seen running near the road in the early morning while the dog slept quietly by the fire.";

    #[test]
    fn summaries_keep_the_best_fragments_with_context() {
        let m = matches_of(BODY, &["fox", "running"]);
        let summary = Summary::default();
        assert_eq!(
            s(summarize(BODY, &m, &summary, None)),
            "quick brown fox jumps over the lazy dog. Running is healthy and running every day \
keeps the doctor away. Many... Many runners prefer shoes with soft soles, and a fox was seen \
running near the road in the early morning while the dog... "
        );
        let short = Summary {
            frags: 2,
            len: 5,
            separator: b" | ".to_vec(),
        };
        let tags = (b"<b>".to_vec(), b"</b>".to_vec());
        assert_eq!(
            s(summarize(BODY, &m, &short, Some(&tags))),
            "<b>fox</b> jumps over the lazy dog. <b>Running</b> is healthy and <b>running</b> | \
and a <b>fox</b> was seen <b>running</b> near the | "
        );
    }

    #[test]
    fn the_last_word_of_a_field_is_cut_as_redisearch_cuts_it() {
        let title = b"Running shoes for the long road";
        let m = matches_of(title, &["running"]);
        assert_eq!(
            s(summarize(title, &m, &Summary::default(), None)),
            "Running shoes for the long... "
        );
    }

    #[test]
    fn fields_without_matches_keep_their_head() {
        let summary = Summary::default();
        assert_eq!(s(head(b"hello world 42", &summary)), "hello world");
        assert_eq!(s(head(b"100", &summary)), "1");
        assert_eq!(s(head(b"a,b", &summary)), "a,");
        assert_eq!(s(head(b"x  \t y z", &summary)), "x y");
    }

    #[test]
    fn whole_text_highlighting_marks_every_match() {
        let m = matches_of(BODY, &["fox"]);
        let tags = (b"[".to_vec(), b"]".to_vec());
        let out = s(highlight_whole(BODY, &m, &tags));
        assert_eq!(out.matches("[fox]").count(), 2);
        assert_eq!(out.replace(['[', ']'], ""), s(BODY.to_vec()));
    }

    #[test]
    fn no_fragments_asked_gives_an_empty_summary() {
        let m = matches_of(BODY, &["fox"]);
        let none = Summary {
            frags: 0,
            ..Summary::default()
        };
        assert!(summarize(BODY, &m, &none, None).is_empty());
        assert!(!m.is_empty());
    }
}
