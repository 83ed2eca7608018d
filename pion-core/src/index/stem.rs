//! Stemming as RediSearch applies it: an index's `LANGUAGE` picks a Snowball stemmer,
//! each indexed word of four bytes or more whose stem differs from it is indexed a
//! second time as `+stem` at the same position, and a query term (outside `VERBATIM`)
//! matches its own postings, those of `+stem`, and those of the stem as a plain word.
//!
//! Both sides live here so that indexing and querying agree on every byte of a stem.
//! Synonym groups (`FT.SYNUPDATE`) work the same way: a word of a group is also
//! indexed as `~group`, which a query term of the group also searches.
//! The stemmers are the Snowball algorithms, as generated Rust (`rust-stemmers`).

use rust_stemmers::{Algorithm, Stemmer};

/// The byte that marks a stem in the term dictionary (`+run`).
pub const STEM_PREFIX: u8 = b'+';

/// The byte that marks a synonym group in the term dictionary (`~g1`).
pub const SYNONYM_PREFIX: u8 = b'~';

/// Indexed words shorter than this (in bytes) are not stemmed.
pub const MIN_STEM_LENGTH: usize = 4;

/// How much an indexed stem counts against a word (see [`stem_weight`]).
const STEM_WEIGHT_FACTOR: f32 = 0.2;

/// A stemming language (`FT.CREATE … LANGUAGE`, `FT.SEARCH … LANGUAGE`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Language {
    name: &'static str,
    algorithm: Algorithm,
}

/// Every language RediSearch names, with the Snowball stemmer Pion has for it.
const LANGUAGES: &[(&str, Option<Algorithm>)] = &[
    ("arabic", Some(Algorithm::Arabic)),
    ("armenian", None),
    ("basque", None),
    ("catalan", None),
    ("chinese", None),
    ("danish", Some(Algorithm::Danish)),
    ("dutch", Some(Algorithm::Dutch)),
    ("english", Some(Algorithm::English)),
    ("finnish", Some(Algorithm::Finnish)),
    ("french", Some(Algorithm::French)),
    ("german", Some(Algorithm::German)),
    ("greek", Some(Algorithm::Greek)),
    ("hindi", None),
    ("hungarian", Some(Algorithm::Hungarian)),
    ("indonesian", None),
    ("irish", None),
    ("italian", Some(Algorithm::Italian)),
    ("lithuanian", None),
    ("nepali", None),
    ("norwegian", Some(Algorithm::Norwegian)),
    ("portuguese", Some(Algorithm::Portuguese)),
    ("romanian", Some(Algorithm::Romanian)),
    ("russian", Some(Algorithm::Russian)),
    ("serbian", None),
    ("spanish", Some(Algorithm::Spanish)),
    ("swedish", Some(Algorithm::Swedish)),
    ("tamil", Some(Algorithm::Tamil)),
    ("turkish", Some(Algorithm::Turkish)),
    ("yiddish", None),
];

/// Why a language name cannot be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LanguageError {
    /// Not a language RediSearch knows.
    Unknown,
    /// A language RediSearch stems and Pion has no Snowball stemmer for.
    NoStemmer,
}

impl Default for Language {
    fn default() -> Language {
        Language::ENGLISH
    }
}

impl Language {
    /// English, every index's default.
    pub const ENGLISH: Language = Language {
        name: "english",
        algorithm: Algorithm::English,
    };

    /// The language of a `LANGUAGE` argument (any case).
    pub fn parse(name: &[u8]) -> Result<Language, LanguageError> {
        let (name, algorithm) = LANGUAGES
            .iter()
            .find(|(n, _)| n.as_bytes().eq_ignore_ascii_case(name))
            .ok_or(LanguageError::Unknown)?;
        Ok(Language {
            name,
            algorithm: algorithm.ok_or(LanguageError::NoStemmer)?,
        })
    }

    /// The lowercase name (`FT.INFO`'s `default_language`).
    pub fn name(self) -> &'static str {
        self.name
    }

    /// The Snowball stem of a lowercase word; `None` when the word is not UTF-8.
    pub fn stem(self, word: &[u8]) -> Option<Vec<u8>> {
        let text = std::str::from_utf8(word).ok()?;
        Some(
            Stemmer::create(self.algorithm)
                .stem(text)
                .into_owned()
                .into_bytes(),
        )
    }

    /// The `+stem` an indexed word is also indexed as, when it has one: words of
    /// [`MIN_STEM_LENGTH`] bytes or more whose stem differs from them.
    pub fn indexed_stem(self, word: &[u8]) -> Option<Vec<u8>> {
        if word.len() < MIN_STEM_LENGTH {
            return None;
        }
        let stem = self.stem(word)?;
        (stem != word).then(|| marked(&stem))
    }

    /// The terms a query term expands to beyond itself: `+stem`, then the stem as a
    /// word when it differs from the term.
    pub fn expansions(self, term: &[u8]) -> Vec<Vec<u8>> {
        let Some(stem) = self.stem(term) else {
            return Vec::new();
        };
        let mut out = vec![marked(&stem)];
        if stem != term {
            out.push(stem);
        }
        out
    }
}

/// The term a synonym group is indexed and searched as (`~group`).
pub fn synonym_term(group: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(group.len() + 1);
    out.push(SYNONYM_PREFIX);
    out.extend_from_slice(group);
    out
}

fn marked(stem: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(stem.len() + 1);
    out.push(STEM_PREFIX);
    out.extend_from_slice(stem);
    out
}

/// What one occurrence of a word adds to its frequency in a document, for a field of
/// weight `weight`: the weight rounded down, at least 1 (RediSearch keeps whole
/// frequencies).
pub fn word_weight(weight: f64) -> f64 {
    f64::from(((weight as f32) as u32).max(1))
}

/// What one occurrence of an indexed stem adds to its frequency, for a field of
/// weight `weight`: a fifth of the weight, rounded down, at least 1.
pub fn stem_weight(weight: f64) -> f64 {
    f64::from(((weight as f32 * STEM_WEIGHT_FACTOR) as u32).max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn english_words_index_their_stem_marked() {
        let en = Language::ENGLISH;
        assert_eq!(en.indexed_stem(b"running"), Some(b"+run".to_vec()));
        assert_eq!(en.indexed_stem(b"studies"), Some(b"+studi".to_vec()));
        // Already a stem, or too short to be stemmed.
        assert_eq!(en.indexed_stem(b"run"), None);
        assert_eq!(en.indexed_stem(b"ies"), None);
        assert_eq!(en.indexed_stem(b"\xff\xfe\xfd\xfc"), None);
    }

    #[test]
    fn query_terms_expand_to_the_marked_stem_and_the_stem() {
        let en = Language::ENGLISH;
        assert_eq!(
            en.expansions(b"running"),
            vec![b"+run".to_vec(), b"run".to_vec()]
        );
        assert_eq!(en.expansions(b"run"), vec![b"+run".to_vec()]);
        assert_eq!(en.expansions(b"ie"), vec![b"+ie".to_vec()]);
    }

    #[test]
    fn languages_parse_in_any_case() {
        assert_eq!(Language::parse(b"GERMAN").map(Language::name), Ok("german"));
        assert_eq!(
            Language::parse(b"german")
                .expect("a stemmed language")
                .stem("häuser".as_bytes()),
            Some(b"haus".to_vec())
        );
        assert_eq!(Language::parse(b"klingon"), Err(LanguageError::Unknown));
        assert_eq!(Language::parse(b"chinese"), Err(LanguageError::NoStemmer));
    }

    #[test]
    fn words_weigh_their_field_rounded_down_at_least_one() {
        assert_eq!(word_weight(0.5), 1.0);
        assert_eq!(word_weight(2.5), 2.0);
        assert_eq!(word_weight(10.0), 10.0);
    }

    #[test]
    fn stems_weigh_a_fifth_of_their_field_rounded_down_at_least_one() {
        assert_eq!(stem_weight(1.0), 1.0);
        assert_eq!(stem_weight(5.0), 1.0);
        assert_eq!(stem_weight(10.0), 2.0);
    }
}
