//! The documents of one search index: which hashes are in it, under which document
//! ids, and the per-field structures queries read (tag and term postings, numbers,
//! sortable values, vectors).
//!
//! A document id is assigned each time a hash is (re)indexed, as RediSearch does, so
//! ids grow in indexing order; sets of documents are bitsets over ids.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::document::Document;
use super::frequencies::{TermFrequencies, TermPostings};
use super::schema::{FieldKind, FieldSpec, IndexDef};
use super::stem::{stem_weight, word_weight};
use super::text;
use super::vectors::FieldVectors;
use crate::vector::VectorIndex;

/// A map keyed by document id, with a fast hasher (ids are ours, not a client's).
pub type IdMap<V> = HashMap<u64, V, ahash::RandomState>;

/// Values by document id in a vector: ids are dense (each indexing takes the next),
/// and what ranking reads of every matched document is then one load, not a hash
/// probe. A removed document's slot goes back to the default.
#[derive(Debug, Clone, Default)]
struct IdVec<T> {
    items: Vec<T>,
}

impl<T: Default> IdVec<T> {
    fn get(&self, id: u64) -> Option<&T> {
        self.items.get(usize::try_from(id).ok()?)
    }

    fn set(&mut self, id: u64, value: T) {
        let Ok(i) = usize::try_from(id) else {
            return;
        };
        if self.items.len() <= i {
            self.items.resize_with(i + 1, T::default);
        }
        self.items[i] = value;
    }

    fn clear(&mut self, id: u64) {
        if let Some(slot) = usize::try_from(id).ok().and_then(|i| self.items.get_mut(i)) {
            *slot = T::default();
        }
    }

    fn iter_mut(&mut self) -> impl Iterator<Item = &mut T> {
        self.items.iter_mut()
    }
}

/// A set of document ids (a bitset over ids).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DocSet {
    words: Vec<u64>,
}

impl DocSet {
    /// An empty set.
    pub fn new() -> DocSet {
        DocSet::default()
    }

    /// Adds an id.
    pub fn insert(&mut self, id: u64) {
        let w = (id / 64) as usize;
        if self.words.len() <= w {
            self.words.resize(w + 1, 0);
        }
        self.words[w] |= 1 << (id % 64);
    }

    /// Removes an id.
    pub fn remove(&mut self, id: u64) {
        if let Some(w) = self.words.get_mut((id / 64) as usize) {
            *w &= !(1 << (id % 64));
        }
    }

    /// The bitmap itself: id `i` is bit `i % 64` of word `i / 64`.
    pub fn words(&self) -> &[u64] {
        &self.words
    }

    /// Whether the id is in the set.
    pub fn contains(&self, id: u64) -> bool {
        self.words
            .get((id / 64) as usize)
            .is_some_and(|w| w & (1 << (id % 64)) != 0)
    }

    /// Number of ids.
    pub fn len(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|w| *w == 0)
    }

    /// Keeps only ids also in `other`.
    pub fn and(&mut self, other: &DocSet) {
        self.words.truncate(other.words.len());
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            *a &= b;
        }
    }

    /// Adds every id of `other`.
    pub fn or(&mut self, other: &DocSet) {
        if self.words.len() < other.words.len() {
            self.words.resize(other.words.len(), 0);
        }
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            *a |= b;
        }
    }

    /// Removes every id of `other`.
    pub fn and_not(&mut self, other: &DocSet) {
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            *a &= !b;
        }
    }

    /// The ids, ascending.
    pub fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        self.words.iter().enumerate().flat_map(|(i, &w)| {
            let mut w = w;
            std::iter::from_fn(move || {
                if w == 0 {
                    return None;
                }
                let bit = w.trailing_zeros() as u64;
                w &= w - 1;
                Some(i as u64 * 64 + bit)
            })
        })
    }
}

/// One field's searchable structure.
pub enum FieldIndex {
    /// Text: term → documents, and each document's tokens in order (for phrases).
    Text {
        /// Postings: words and `+stem`s alike.
        terms: BTreeMap<Vec<u8>, DocSet>,
        /// Tokens of each document, in order.
        tokens: IdMap<Vec<Vec<u8>>>,
        /// The terms indexed beside a document's words at their positions: `+stem`s
        /// (none in a `NOSTEM` field) and `~group`s of synonyms.
        extras: IdMap<Vec<Extra>>,
    },
    /// Tags: tag → documents.
    Tag {
        /// Postings.
        tags: BTreeMap<Vec<u8>, DocSet>,
        /// Tags of each document.
        of_doc: IdMap<Vec<Vec<u8>>>,
    },
    /// Numbers of each document.
    Numeric(IdMap<Numbers>),
    /// The point of each document (longitude, latitude), as its geohash decodes.
    Geo(IdMap<(f64, f64)>),
    /// Vectors of each document (the graph is shared, so the builder links without
    /// holding the document lock).
    Vector(FieldVectors),
    /// `NOINDEX`: nothing searchable.
    None,
}

impl FieldIndex {
    /// An empty structure for a field.
    pub fn for_field(f: &FieldSpec) -> FieldIndex {
        if f.noindex {
            return FieldIndex::None;
        }
        match &f.kind {
            FieldKind::Text { .. } => FieldIndex::Text {
                terms: BTreeMap::new(),
                tokens: IdMap::default(),
                extras: IdMap::default(),
            },
            FieldKind::Tag { .. } => FieldIndex::Tag {
                tags: BTreeMap::new(),
                of_doc: IdMap::default(),
            },
            FieldKind::Numeric => FieldIndex::Numeric(IdMap::default()),
            FieldKind::Geo => FieldIndex::Geo(IdMap::default()),
            FieldKind::Vector(v) => {
                FieldIndex::Vector(FieldVectors::new(v.params.clone(), f.holds_many_vectors()))
            }
        }
    }
}

/// A term indexed beside a word of a TEXT field, at its position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Extra {
    /// The word's position.
    pub position: u32,
    /// `+stem` or `~group`.
    pub term: Vec<u8>,
    /// A stem counts less than its word ([`crate::index::stem::stem_weight`]); a
    /// synonym group as much.
    pub stem: bool,
}

impl Extra {
    /// What this term adds to its frequency in a field of weight `weight`.
    pub fn weight(&self, weight: f64) -> f64 {
        if self.stem {
            stem_weight(weight)
        } else {
            word_weight(weight)
        }
    }
}

/// The extra terms of one field's words: each word's synonym groups (`~g`), then its
/// `+stem` where it has one, as RediSearch indexes them.
fn extras_of(def: &IndexDef, field: &FieldSpec, words: &[Vec<u8>]) -> Vec<Extra> {
    let stemmed = matches!(field.kind, FieldKind::Text { nostem: false, .. });
    let mut out = Vec::new();
    for (p, w) in words.iter().enumerate() {
        let position = p as u32;
        for group in def.synonyms.get(w).into_iter().flatten() {
            out.push(Extra {
                position,
                term: crate::index::stem::synonym_term(group),
                stem: false,
            });
        }
        if let Some(term) = stemmed.then(|| def.language.indexed_stem(w)).flatten() {
            out.push(Extra {
                position,
                term,
                stem: true,
            });
        }
    }
    out
}

/// The numbers of a NUMERIC field in one document: one from a hash, any number from
/// a JSON array.
#[derive(Debug, Clone, PartialEq)]
pub enum Numbers {
    /// One number (every hash, most JSON documents).
    One(f64),
    /// Several numbers (a JSON array); a range query matches when any is in range.
    Many(Box<[f64]>),
}

impl Numbers {
    /// The numbers of a list, or `None` when it is empty.
    pub fn from_vec(mut v: Vec<f64>) -> Option<Numbers> {
        match v.len() {
            0 => None,
            1 => Some(Numbers::One(v.remove(0))),
            _ => Some(Numbers::Many(v.into_boxed_slice())),
        }
    }

    /// Every number, in document order.
    pub fn iter(&self) -> impl Iterator<Item = f64> + '_ {
        match self {
            Numbers::One(x) => std::slice::from_ref(x).iter().copied(),
            Numbers::Many(xs) => xs.iter().copied(),
        }
    }
}

/// A value a field contributes to a document, parsed and checked.
pub(super) enum Parsed {
    /// A TEXT field's tokens, in order.
    Text(Vec<Vec<u8>>),
    /// A TAG field's tags.
    Tag(Vec<Vec<u8>>),
    /// A NUMERIC field's numbers.
    Numeric(Numbers),
    /// A VECTOR field's vectors: one, or those a multi-value JSON path matched.
    Vector(Vec<Vec<f32>>),
    /// A GEO field's point (longitude, latitude).
    Geo(f64, f64),
}

/// A GEO value as RediSearch reads one: `lon,lat` or `lon lat`, within the ranges
/// geohashes cover. The point is kept as its 52-bit geohash decodes, as RediSearch
/// keeps it.
pub(super) fn parse_geo(raw: &[u8]) -> Result<(f64, f64), IndexingFailure> {
    let bad = || IndexingFailure {
        text: "Invalid geo string".to_string(),
    };
    let text = std::str::from_utf8(raw).map_err(|_| bad())?;
    let mut parts = text.split([',', ' ']).filter(|p| !p.is_empty());
    let (Some(lon), Some(lat), None) = (parts.next(), parts.next(), parts.next()) else {
        return Err(bad());
    };
    let num = |s: &str| crate::util::num::parse_f64(s.as_bytes()).filter(|v| v.is_finite());
    let (Some(lon), Some(lat)) = (num(lon), num(lat)) else {
        return Err(bad());
    };
    let score = crate::util::geohash::encode_score(lon, lat).ok_or_else(|| IndexingFailure {
        text: format!("Invalid geo coordinates: {lon:.6}, {lat:.6}"),
    })?;
    // A 52-bit geohash is exact in an f64.
    Ok(crate::util::geohash::decode_score(score as f64))
}

/// Why a hash could not be indexed (counted in `FT.INFO`'s indexing failures).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexingFailure {
    /// RediSearch's description.
    pub text: String,
}

/// The documents of an index.
#[derive(Default)]
pub struct Docs {
    next_id: u64,
    by_key: HashMap<Vec<u8>, u64>,
    keys: IdMap<Vec<u8>>,
    live: DocSet,
    /// Sortable/returnable values by document: one slot per schema field (`None`
    /// for an id without a document).
    values: IdVec<Option<Vec<Option<Vec<u8>>>>>,
    /// Each NUMERIC field's value as a number, by document (`SORTBY` reads them for
    /// every match): one column per schema field, empty for the others.
    numbers: Vec<IdVec<Option<f64>>>,
    /// One structure per schema field.
    pub fields: Vec<FieldIndex>,
    /// Hashes that could not be indexed.
    pub failures: u64,
    /// The last failure and its key.
    pub last_failure: Option<(String, Vec<u8>)>,
    /// Distinct terms of each document ever indexed, summed (`FT.INFO num_records`).
    pub records: u64,
    /// Tokens of each text field over all documents, by field position (the average
    /// document length of the BM25 scorers).
    token_totals: Vec<u64>,
    /// What the scorers read of each document, kept from indexing so that ranking
    /// every document stays cheap.
    stats: IdVec<DocStats>,
    /// Each term's weighted frequency in each document.
    term_freqs: TermFrequencies,
}

/// What the scorers read of one document.
#[derive(Debug, Clone, Copy, Default)]
struct DocStats {
    /// The largest weighted term frequency over its TEXT fields (TFIDF's norm).
    max_freq: f64,
    /// Its weighted token count (TFIDF.DOCNORM's norm, BM25STD's length).
    len: f64,
}

impl Docs {
    /// An empty document set for a schema.
    pub fn new(def: &IndexDef) -> Docs {
        Docs {
            fields: def.fields.iter().map(FieldIndex::for_field).collect(),
            numbers: def.fields.iter().map(|_| IdVec::default()).collect(),
            ..Docs::default()
        }
    }

    /// Number of documents.
    pub fn len(&self) -> usize {
        self.by_key.len()
    }

    /// Whether there is no document.
    pub fn is_empty(&self) -> bool {
        self.by_key.is_empty()
    }

    /// The highest id assigned so far.
    pub fn max_id(&self) -> u64 {
        self.next_id
    }

    /// Every live document.
    pub fn all(&self) -> &DocSet {
        &self.live
    }

    /// A document's key.
    pub fn key(&self, id: u64) -> Option<&[u8]> {
        self.keys.get(&id).map(Vec::as_slice)
    }

    /// A key's document id.
    pub fn id_of(&self, key: &[u8]) -> Option<u64> {
        self.by_key.get(key).copied()
    }

    /// Tokens of text field `field` over all documents.
    pub fn token_total(&self, field: usize) -> u64 {
        self.token_totals.get(field).copied().unwrap_or(0)
    }

    /// A document's value of schema field `field` (as stored in the hash).
    pub fn value(&self, id: u64, field: usize) -> Option<&[u8]> {
        self.values.get(id)?.as_ref()?.get(field)?.as_deref()
    }

    /// A NUMERIC field's value as a number (NaN when it does not parse); `None`
    /// when the document has none.
    pub fn number(&self, id: u64, field: usize) -> Option<f64> {
        self.numbers.get(field)?.get(id).copied().flatten()
    }

    /// Adds a field to every document's structures (`FT.ALTER … SCHEMA ADD`); existing
    /// documents gain it when next indexed.
    pub fn add_field(&mut self, f: &FieldSpec) {
        self.fields.push(FieldIndex::for_field(f));
        self.numbers.push(IdVec::default());
        for v in self.values.iter_mut().flatten() {
            v.push(None);
        }
    }

    /// Indexes (or re-indexes) a document under `key`. A document with a value that
    /// cannot be indexed is left out entirely and counted as a failure, as RediSearch
    /// does.
    pub fn index(&mut self, def: &IndexDef, key: &[u8], doc: Document<'_>) {
        let id = self.next_id + 1;
        self.index_as(def, key, doc, id, true);
    }

    /// Indexes a document under a given document id. Without `link_vectors` the
    /// vector fields are left alone: a snapshot's saved graphs already hold this id.
    pub fn index_as(
        &mut self,
        def: &IndexDef,
        key: &[u8],
        doc: Document<'_>,
        id: u64,
        link_vectors: bool,
    ) {
        self.remove(key);
        let parsed = match parse_fields(def, doc) {
            Ok(p) => p,
            Err(f) => {
                self.failures += 1;
                self.last_failure = Some((f.text, key.to_vec()));
                return;
            }
        };
        // Vectors first: a refused vector leaves nothing half-indexed.
        for (i, p) in parsed.iter().enumerate().filter(|_| link_vectors) {
            if let (Some(Parsed::Vector(v)), FieldIndex::Vector(index)) = (p, &self.fields[i]) {
                if let Err(e) = index.insert(id, v) {
                    for field in &self.fields {
                        if let FieldIndex::Vector(index) = field {
                            index.remove(id);
                        }
                    }
                    self.failures += 1;
                    self.last_failure = Some((e.to_string(), key.to_vec()));
                    return;
                }
            }
        }
        self.next_id = self.next_id.max(id);
        self.by_key.insert(key.to_vec(), id);
        self.keys.insert(id, key.to_vec());
        self.live.insert(id);
        let values: Vec<Option<Vec<u8>>> = def
            .fields
            .iter()
            .map(|f| match f.kind {
                // Vectors are in the document and the index already: no third copy.
                FieldKind::Vector(_) => None,
                _ => doc.sort_value(f),
            })
            .collect();
        for (i, f) in def.fields.iter().enumerate() {
            if let (FieldKind::Numeric, Some(column)) = (&f.kind, self.numbers.get_mut(i)) {
                let number = values[i]
                    .as_deref()
                    .map(|v| crate::util::num::parse_f64(v.trim_ascii()).unwrap_or(f64::NAN));
                column.set(id, number);
            }
        }
        self.values.set(id, Some(values));
        // Each distinct term's weighted frequency over every TEXT field: RediSearch's
        // records, one per distinct term of a document, whatever the fields.
        let mut freqs: HashMap<Vec<u8>, f64, ahash::RandomState> = HashMap::default();
        let mut count = |term: &[u8], add: f64| match freqs.get_mut(term) {
            Some(f) => *f += add,
            None => {
                freqs.insert(term.to_vec(), add);
            }
        };
        let mut len = 0.0;
        for (i, p) in parsed.into_iter().enumerate() {
            match (p, &mut self.fields[i]) {
                (
                    Some(Parsed::Text(toks)),
                    FieldIndex::Text {
                        terms,
                        tokens,
                        extras,
                    },
                ) => {
                    let weight = match def.fields[i].kind {
                        FieldKind::Text { weight, .. } => weight,
                        _ => 1.0,
                    };
                    let doc_extras = extras_of(def, &def.fields[i], &toks);
                    for t in &toks {
                        count(t, word_weight(weight));
                    }
                    for e in &doc_extras {
                        count(&e.term, e.weight(weight));
                    }
                    for t in toks.iter().chain(doc_extras.iter().map(|e| &e.term)) {
                        match terms.get_mut(t) {
                            Some(set) => set.insert(id),
                            None => {
                                let mut set = DocSet::new();
                                set.insert(id);
                                terms.insert(t.clone(), set);
                            }
                        }
                    }
                    if self.token_totals.len() <= i {
                        self.token_totals.resize(i + 1, 0);
                    }
                    self.token_totals[i] += toks.len() as u64;
                    len += word_weight(weight) * toks.len() as f64;
                    tokens.insert(id, toks);
                    if !doc_extras.is_empty() {
                        extras.insert(id, doc_extras);
                    }
                }
                (Some(Parsed::Tag(vals)), FieldIndex::Tag { tags, of_doc }) => {
                    for t in &vals {
                        tags.entry(t.clone()).or_default().insert(id);
                    }
                    of_doc.insert(id, vals);
                }
                (Some(Parsed::Numeric(n)), FieldIndex::Numeric(map)) => {
                    map.insert(id, n);
                }
                (Some(Parsed::Geo(lon, lat)), FieldIndex::Geo(map)) => {
                    map.insert(id, (lon, lat));
                }
                _ => {}
            }
        }
        self.records += freqs.len() as u64;
        let max_freq = freqs.values().copied().fold(0.0, f64::max);
        self.term_freqs
            .add(id, freqs.iter().map(|(t, f)| (t.as_slice(), *f)));
        self.stats.set(id, DocStats { max_freq, len });
    }

    /// A document's largest weighted term frequency over its TEXT fields: each word
    /// counts its field's weight, each `+stem` or synonym group as
    /// [`Extra::weight`] says.
    pub fn max_freq(&self, id: u64) -> f64 {
        self.stats.get(id).map_or(0.0, |s| s.max_freq)
    }

    /// A document's weighted token count over its TEXT fields (each token counts its
    /// field's weight).
    pub fn doc_len(&self, id: u64) -> f64 {
        self.stats.get(id).map_or(0.0, |s| s.len)
    }

    /// A term's postings with frequencies, over every TEXT field.
    pub fn term_postings(&self, term: &[u8]) -> Option<&TermPostings> {
        self.term_freqs.get(term)
    }

    /// Documents holding `term` in any TEXT field.
    pub fn document_frequency(&self, term: &[u8]) -> usize {
        self.term_freqs.document_frequency(term)
    }

    /// A term's weighted frequency in a document, over every TEXT field.
    pub fn term_frequency(&self, term: &[u8], id: u64) -> f64 {
        self.term_freqs.get(term).map_or(0.0, |p| p.frequency(id))
    }

    /// Removes the document of `key`, if any; returns whether there was one.
    pub fn remove(&mut self, key: &[u8]) -> bool {
        let Some(id) = self.by_key.remove(key) else {
            return false;
        };
        self.keys.remove(&id);
        self.values.clear(id);
        self.stats.clear(id);
        for column in &mut self.numbers {
            column.clear(id);
        }
        self.live.remove(id);
        let mut doc_terms: HashSet<Vec<u8>, ahash::RandomState> = HashSet::default();
        for (i, field) in self.fields.iter_mut().enumerate() {
            match field {
                FieldIndex::Text {
                    terms,
                    tokens,
                    extras,
                } => {
                    let toks = tokens.remove(&id).unwrap_or_default();
                    if let Some(total) = self.token_totals.get_mut(i) {
                        *total = total.saturating_sub(toks.len() as u64);
                    }
                    let doc_extras = extras.remove(&id).unwrap_or_default();
                    for t in toks
                        .into_iter()
                        .chain(doc_extras.into_iter().map(|e| e.term))
                    {
                        if let Some(set) = terms.get_mut(&t) {
                            set.remove(id);
                            if set.is_empty() {
                                terms.remove(&t);
                            }
                        }
                        doc_terms.insert(t);
                    }
                }
                FieldIndex::Tag { tags, of_doc } => {
                    for t in of_doc.remove(&id).unwrap_or_default() {
                        if let Some(set) = tags.get_mut(&t) {
                            set.remove(id);
                            if set.is_empty() {
                                tags.remove(&t);
                            }
                        }
                    }
                }
                FieldIndex::Numeric(map) => {
                    map.remove(&id);
                }
                FieldIndex::Geo(map) => {
                    map.remove(&id);
                }
                FieldIndex::Vector(index) => {
                    index.remove(id);
                }
                FieldIndex::None => {}
            }
        }
        self.term_freqs
            .remove(doc_terms.iter().map(Vec::as_slice), &self.live);
        true
    }

    /// Removes every document (after `FLUSHALL`), keeping the schema.
    pub fn clear(&mut self, def: &IndexDef) {
        let next_id = self.next_id;
        *self = Docs::new(def);
        self.next_id = next_id;
    }

    /// Every document as (id, key), ascending by id (a snapshot's doc table).
    pub fn table(&self) -> Vec<(u64, Vec<u8>)> {
        self.live
            .iter()
            .filter_map(|id| self.keys.get(&id).map(|k| (id, k.clone())))
            .collect()
    }

    /// Sets the next id to assign after a restore.
    pub fn set_next_id(&mut self, next_id: u64) {
        self.next_id = self.next_id.max(next_id);
    }

    /// Replaces a vector field's index (a graph loaded from a snapshot).
    pub fn set_vector_index(&mut self, field: usize, index: VectorIndex) -> bool {
        match self.fields.get_mut(field) {
            Some(FieldIndex::Vector(slot)) => {
                *slot = FieldVectors::with_index(index, slot.is_multi());
                true
            }
            _ => false,
        }
    }

    /// Distinct text terms.
    pub fn term_count(&self) -> usize {
        let mut seen: HashSet<&[u8]> = HashSet::new();
        for f in &self.fields {
            if let FieldIndex::Text { terms, .. } = f {
                seen.extend(terms.keys().map(Vec::as_slice));
            }
        }
        seen.len()
    }
}

fn parse_fields(def: &IndexDef, doc: Document<'_>) -> Result<Vec<Option<Parsed>>, IndexingFailure> {
    def.fields
        .iter()
        .map(|f| {
            if f.noindex {
                return Ok(None);
            }
            let hash = match doc {
                Document::Hash(h) => h,
                Document::Json(root) => return super::json_fields::parse(def, f, root),
            };
            let Some(raw) = hash.get(&f.path) else {
                return Ok(None);
            };
            Ok(Some(match &f.kind {
                FieldKind::Text { .. } => {
                    Parsed::Text(text::tokenize(raw, def.stopwords.as_deref()))
                }
                FieldKind::Tag {
                    separator,
                    case_sensitive,
                } => Parsed::Tag(text::tag_values(raw, *separator, *case_sensitive)),
                FieldKind::Numeric => Parsed::Numeric(Numbers::One(
                    std::str::from_utf8(raw)
                        .ok()
                        .and_then(|s| crate::util::num::parse_f64(s.trim().as_bytes()))
                        .filter(|n| !n.is_nan())
                        .ok_or_else(|| IndexingFailure {
                            text: format!(
                                "Invalid numeric value: '{}'",
                                String::from_utf8_lossy(raw)
                            ),
                        })?,
                )),
                FieldKind::Geo => {
                    let (lon, lat) = parse_geo(raw)?;
                    Parsed::Geo(lon, lat)
                }
                FieldKind::Vector(v) => Parsed::Vector(vec![v
                    .ty
                    .decode(raw, v.params.dim)
                    .ok_or_else(|| IndexingFailure {
                        text: format!(
                            "Could not add vector with blob size {} (expected size {})",
                            raw.len(),
                            v.params.dim * v.ty.width()
                        ),
                    })?]),
            }))
        })
        .collect()
}
