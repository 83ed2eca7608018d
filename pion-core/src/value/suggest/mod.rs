//! Suggestion dictionaries: the key type behind RediSearch's `FT.SUGADD`,
//! `FT.SUGGET`, `FT.SUGDEL` and `FT.SUGLEN` (`TYPE` says `trietype0`, as it does
//! with the RediSearch module).
//!
//! Autocomplete users compare the suggestions they get, so the dictionary is
//! RediSearch's own design rather than a sorted map: text is kept as 16-bit runes in
//! a radix trie ([`trie`]) that splits, merges and records scores as RediSearch's does,
//! and a lookup ([`lookup`]) walks it with the same automaton, scoring and heap. The
//! text rules follow RediSearch too: a string stops at its first NUL, code points
//! above U+FFFF keep their low 16 bits, lookups fold case one code point at a time
//! (`ß` folds to `s`, `ς` to `σ`), and strings longer than 255 runes (or 512 bytes)
//! are not added.

mod lookup;
mod trie;

use std::fmt;

pub use lookup::{LookupOptions, Suggestion};
pub use trie::Rune;

use crate::util::codec::{put_bytes, put_u32, Malformed, Reader};
use trie::Node;

/// The longest suggestion, in runes, and in bytes as sent.
const MAX_RUNES: usize = 255;
const MAX_BYTES: usize = 512;
/// `FT.SUGGET` refuses prefixes of this many bytes (`Invalid query length`) …
pub const MAX_PREFIX_BYTES: usize = 200;
/// … and of this many runes (`Invalid query`).
pub const MAX_PREFIX_RUNES: usize = 100;

/// A suggestion dictionary.
#[derive(Clone)]
pub struct SuggestionsValue {
    root: Node,
    len: usize,
    /// Runes and payload bytes of the live suggestions, kept as they come and go so
    /// the memory estimate (read after every write) costs nothing to make.
    runes: usize,
    payload_bytes: usize,
}

impl Default for SuggestionsValue {
    fn default() -> Self {
        SuggestionsValue::new()
    }
}

impl fmt::Debug for SuggestionsValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SuggestionsValue")
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

/// Two dictionaries are equal when they hold the same suggestions, scores and
/// payloads in the same order (their trie shapes may differ).
impl PartialEq for SuggestionsValue {
    fn eq(&self, other: &Self) -> bool {
        self.len == other.len && self.entries() == other.entries()
    }
}

/// One stored suggestion, as persistence sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredSuggestion {
    /// The text (UTF-8 from the stored runes).
    pub text: Vec<u8>,
    /// The score.
    pub score: f32,
    /// The payload (empty: none).
    pub payload: Vec<u8>,
}

impl SuggestionsValue {
    /// An empty dictionary.
    pub fn new() -> Self {
        SuggestionsValue {
            root: Node::root(),
            len: 0,
            runes: 0,
            payload_bytes: 0,
        }
    }

    /// How many suggestions it holds (`FT.SUGLEN`).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Adds `text` with `score` (or adds `score` to its score with `incr`), setting
    /// the payload when one is given. Returns whether the dictionary grew. Nothing is
    /// added for a zero score, an empty string or one past the length limits.
    pub fn add(&mut self, text: &[u8], score: f64, incr: bool, payload: &[u8]) -> bool {
        if text.len() > MAX_BYTES {
            return false;
        }
        let score = score as f32;
        if score == 0.0 {
            return false;
        }
        self.insert(text, score, incr, payload)
    }

    fn insert(&mut self, text: &[u8], score: f32, incr: bool, payload: &[u8]) -> bool {
        let runes = utf8_to_runes(text);
        if runes.is_empty() || runes.len() > MAX_RUNES {
            return false;
        }
        let added = self.root.add(&runes, score, incr, payload);
        if added {
            self.len += 1;
            self.runes += runes.len();
            self.payload_bytes += payload.len();
        }
        added
    }

    /// Deletes `text`; returns whether it was there.
    pub fn delete(&mut self, text: &[u8]) -> bool {
        let runes = utf8_to_runes(text);
        if runes.len() > MAX_RUNES {
            return false;
        }
        let deleted = self.root.delete(&runes);
        if deleted {
            // The payload's own size is not known here: the average goes.
            self.payload_bytes -= self.payload_bytes / self.len.max(1);
            self.len -= 1;
            self.runes -= runes.len().min(self.runes);
        }
        deleted
    }

    /// The suggestions completing `prefix` (see [`lookup`] for how they are found
    /// and ranked). `None` when the prefix has [`MAX_PREFIX_RUNES`] runes or more.
    pub fn lookup(&self, prefix: &[u8], opts: LookupOptions) -> Option<Vec<Suggestion>> {
        let folded: Vec<Rune> = utf8_to_runes(prefix).into_iter().map(fold).collect();
        if folded.len() >= MAX_PREFIX_RUNES {
            return None;
        }
        Some(lookup::lookup(&self.root, &folded, prefix.len(), opts))
    }

    /// Every suggestion, depth first through the trie (RediSearch's save order).
    pub fn entries(&self) -> Vec<StoredSuggestion> {
        let mut out = Vec::with_capacity(self.len);
        self.root.for_each(&mut Vec::new(), &mut |runes, node| {
            out.push(StoredSuggestion {
                text: runes_to_utf8(runes),
                score: node.score,
                payload: node.payload.as_deref().unwrap_or_default().to_vec(),
            });
        });
        out
    }

    /// A dictionary holding `entries`, added in order (as RediSearch loads a saved
    /// one). A suggestion whose score `INCR` brought to zero is kept, where
    /// RediSearch's loader would drop it.
    pub fn from_entries(entries: impl IntoIterator<Item = StoredSuggestion>) -> Self {
        let mut v = SuggestionsValue::new();
        for e in entries {
            v.insert(&e.text, e.score, false, &e.payload);
        }
        v
    }

    /// Estimated bytes held, in constant time: a node per suggestion (a radix trie
    /// has fewer, splits add some) with its runes and payload.
    pub fn mem_usage(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.len * (std::mem::size_of::<Node>() + std::mem::size_of::<Box<[u8]>>())
            + self.runes * std::mem::size_of::<Rune>()
            + self.payload_bytes
    }
}

/// Writes a dictionary into a snapshot or Pion's own records.
pub fn encode(v: &SuggestionsValue, out: &mut Vec<u8>) {
    let entries = v.entries();
    put_u32(out, entries.len() as u32);
    for e in entries {
        put_bytes(out, &e.text);
        put_u32(out, e.score.to_bits());
        put_bytes(out, &e.payload);
    }
}

/// Reads what [`encode`] wrote.
pub fn decode(r: &mut Reader<'_>) -> Result<SuggestionsValue, Malformed> {
    let n = r.count(12)?;
    let mut entries = Vec::with_capacity(n);
    for _ in 0..n {
        let text = r.bytes()?.to_vec();
        let score = f32::from_bits(r.u32()?);
        let payload = r.bytes()?.to_vec();
        entries.push(StoredSuggestion {
            text,
            score,
            payload,
        });
    }
    Ok(SuggestionsValue::from_entries(entries))
}

/// Decodes UTF-8 into runes as RediSearch's reader does: the lead byte alone says
/// how many bytes follow (no validation), code points keep their low 16 bits, and a
/// NUL ends the string. A sequence cut short by the end of input ends it too.
pub fn utf8_to_runes(s: &[u8]) -> Vec<Rune> {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        let b = s[i];
        let (extra, bits) = match b {
            _ if b & 0x80 == 0 => (0, u32::from(b)),
            _ if b & 0xe0 == 0xc0 => (1, u32::from(b & 0x1f)),
            _ if b & 0xf0 == 0xe0 => (2, u32::from(b & 0x0f)),
            _ => (3, u32::from(b & 0x07)),
        };
        let Some(tail) = s.get(i + 1..i + 1 + extra) else {
            break;
        };
        let cp = tail
            .iter()
            .fold(bits, |cp, &c| (cp << 6) | u32::from(c & 0x3f));
        if cp == 0 {
            break;
        }
        out.push(cp as Rune);
        i += 1 + extra;
    }
    out
}

/// Encodes runes as UTF-8 (one to three bytes each; surrogate halves as they are).
pub fn runes_to_utf8(runes: &[Rune]) -> Vec<u8> {
    let mut out = Vec::with_capacity(runes.len());
    for &r in runes {
        let r = u32::from(r);
        if r < 0x80 {
            out.push(r as u8);
        } else if r < 0x800 {
            out.extend_from_slice(&[0xc0 | (r >> 6) as u8, 0x80 | (r & 0x3f) as u8]);
        } else {
            out.extend_from_slice(&[
                0xe0 | (r >> 12) as u8,
                0x80 | ((r >> 6) & 0x3f) as u8,
                0x80 | (r & 0x3f) as u8,
            ]);
        }
    }
    out
}

/// Folds a rune's case: the first code point of its Unicode case folding.
pub fn fold(r: Rune) -> Rune {
    match r {
        // Cherokee folds to its capital letters.
        0x13f8..=0x13fd => r - 8,
        0xab70..=0xabbf => r - 0xab70 + 0x13a0,
        0x13a0..=0x13f5 => r,
        _ => match FOLD_EXCEPTIONS.binary_search_by_key(&r, |&(from, _)| from) {
            Ok(i) => FOLD_EXCEPTIONS[i].1,
            Err(_) => char::from_u32(u32::from(r))
                .and_then(|c| c.to_lowercase().next())
                .map_or(r, |c| c as u32 as Rune),
        },
    }
}

/// Runes whose case folding starts with something other than their lower case
/// (from Unicode's `CaseFolding.txt`, first code point of each full folding).
#[rustfmt::skip]
const FOLD_EXCEPTIONS: &[(Rune, Rune)] = &[
    (0x00b5, 0x03bc), (0x00df, 0x0073), (0x0149, 0x02bc), (0x017f, 0x0073),
    (0x01f0, 0x006a), (0x0345, 0x03b9), (0x0390, 0x03b9), (0x03b0, 0x03c5),
    (0x03c2, 0x03c3), (0x03d0, 0x03b2), (0x03d1, 0x03b8), (0x03d5, 0x03c6),
    (0x03d6, 0x03c0), (0x03f0, 0x03ba), (0x03f1, 0x03c1), (0x03f5, 0x03b5),
    (0x0587, 0x0565), (0x1c80, 0x0432), (0x1c81, 0x0434), (0x1c82, 0x043e),
    (0x1c83, 0x0441), (0x1c84, 0x0442), (0x1c85, 0x0442), (0x1c86, 0x044a),
    (0x1c87, 0x0463), (0x1c88, 0xa64b), (0x1e96, 0x0068), (0x1e97, 0x0074),
    (0x1e98, 0x0077), (0x1e99, 0x0079), (0x1e9a, 0x0061), (0x1e9b, 0x1e61),
    (0x1e9e, 0x0073), (0x1f50, 0x03c5), (0x1f52, 0x03c5), (0x1f54, 0x03c5),
    (0x1f56, 0x03c5), (0x1f80, 0x1f00), (0x1f81, 0x1f01), (0x1f82, 0x1f02),
    (0x1f83, 0x1f03), (0x1f84, 0x1f04), (0x1f85, 0x1f05), (0x1f86, 0x1f06),
    (0x1f87, 0x1f07), (0x1f88, 0x1f00), (0x1f89, 0x1f01), (0x1f8a, 0x1f02),
    (0x1f8b, 0x1f03), (0x1f8c, 0x1f04), (0x1f8d, 0x1f05), (0x1f8e, 0x1f06),
    (0x1f8f, 0x1f07), (0x1f90, 0x1f20), (0x1f91, 0x1f21), (0x1f92, 0x1f22),
    (0x1f93, 0x1f23), (0x1f94, 0x1f24), (0x1f95, 0x1f25), (0x1f96, 0x1f26),
    (0x1f97, 0x1f27), (0x1f98, 0x1f20), (0x1f99, 0x1f21), (0x1f9a, 0x1f22),
    (0x1f9b, 0x1f23), (0x1f9c, 0x1f24), (0x1f9d, 0x1f25), (0x1f9e, 0x1f26),
    (0x1f9f, 0x1f27), (0x1fa0, 0x1f60), (0x1fa1, 0x1f61), (0x1fa2, 0x1f62),
    (0x1fa3, 0x1f63), (0x1fa4, 0x1f64), (0x1fa5, 0x1f65), (0x1fa6, 0x1f66),
    (0x1fa7, 0x1f67), (0x1fa8, 0x1f60), (0x1fa9, 0x1f61), (0x1faa, 0x1f62),
    (0x1fab, 0x1f63), (0x1fac, 0x1f64), (0x1fad, 0x1f65), (0x1fae, 0x1f66),
    (0x1faf, 0x1f67), (0x1fb2, 0x1f70), (0x1fb3, 0x03b1), (0x1fb4, 0x03ac),
    (0x1fb6, 0x03b1), (0x1fb7, 0x03b1), (0x1fbc, 0x03b1), (0x1fbe, 0x03b9),
    (0x1fc2, 0x1f74), (0x1fc3, 0x03b7), (0x1fc4, 0x03ae), (0x1fc6, 0x03b7),
    (0x1fc7, 0x03b7), (0x1fcc, 0x03b7), (0x1fd2, 0x03b9), (0x1fd3, 0x03b9),
    (0x1fd6, 0x03b9), (0x1fd7, 0x03b9), (0x1fe2, 0x03c5), (0x1fe3, 0x03c5),
    (0x1fe4, 0x03c1), (0x1fe6, 0x03c5), (0x1fe7, 0x03c5), (0x1ff2, 0x1f7c),
    (0x1ff3, 0x03c9), (0x1ff4, 0x03ce), (0x1ff6, 0x03c9), (0x1ff7, 0x03c9),
    (0x1ffc, 0x03c9), (0xfb00, 0x0066), (0xfb01, 0x0066), (0xfb02, 0x0066),
    (0xfb03, 0x0066), (0xfb04, 0x0066), (0xfb05, 0x0073), (0xfb06, 0x0073),
    (0xfb13, 0x0574), (0xfb14, 0x0574), (0xfb15, 0x0574), (0xfb16, 0x057e),
    (0xfb17, 0x0574),
];

#[cfg(test)]
mod tests;
