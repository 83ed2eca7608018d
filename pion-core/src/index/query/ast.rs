//! The typed syntax tree a query parses into.

/// A parsed query: the filter tree, plus the KNN clause when the query ends with
/// `=>[KNN …]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    /// Which documents qualify. For a KNN query this is the pre-filter (`*` gives
    /// [`Node::MatchAll`]).
    pub filter: Node,
    /// The `=>[KNN k @field $blob …]` clause, if any.
    pub vector: Option<VectorClause>,
}

/// The TEXT fields a text node is restricted to (`@title|body:term`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldScope {
    /// No `@field:` modifier: every TEXT field.
    All,
    /// Only these TEXT fields, in schema order. An empty list (a modifier naming
    /// only unknown or non-TEXT fields) matches nothing; `FT.EXPLAIN` shows `@NULL`.
    Fields(Vec<Vec<u8>>),
}

impl FieldScope {
    /// Whether text in `field` is in scope.
    pub fn contains(&self, field: &[u8]) -> bool {
        match self {
            FieldScope::All => true,
            FieldScope::Fields(fields) => fields.iter().any(|f| f == field),
        }
    }

    /// The scope both `self` and `inner` allow (a modifier nested in another, which
    /// only DIALECT 1 accepts).
    pub fn intersect(&self, inner: &FieldScope) -> FieldScope {
        match (self, inner) {
            (FieldScope::All, other) | (other, FieldScope::All) => other.clone(),
            (FieldScope::Fields(a), FieldScope::Fields(b)) => {
                FieldScope::Fields(a.iter().filter(|f| b.contains(f)).cloned().collect())
            }
        }
    }
}

/// One node of the filter tree.
#[derive(Debug, Clone, PartialEq)]
pub enum Node {
    /// Nothing left to match: every term was a stopword (`FT.EXPLAIN`: `<empty>`).
    /// Matches no document.
    Empty,
    /// `*`: every document.
    MatchAll,
    /// A single text term, already tokenized (lowercase, escapes removed).
    Term {
        /// The fields searched.
        fields: FieldScope,
        /// The term.
        term: Vec<u8>,
        /// Added by stemming a written term ([`super::expand_terms`]); `FT.EXPLAIN`
        /// marks it `(expanded)`.
        expanded: bool,
    },
    /// `term*`: terms starting with `prefix`.
    Prefix {
        /// The fields searched.
        fields: FieldScope,
        /// The prefix (without `*`).
        prefix: Vec<u8>,
    },
    /// `*term`: terms ending with `suffix`.
    Suffix {
        /// The fields searched.
        fields: FieldScope,
        /// The suffix (without `*`).
        suffix: Vec<u8>,
    },
    /// `%term%` (distance 1) up to `%%%term%%%` (distance 3): Levenshtein matches.
    Fuzzy {
        /// The fields searched.
        fields: FieldScope,
        /// The term.
        term: Vec<u8>,
        /// Maximum edit distance, 1 to 3.
        distance: u8,
    },
    /// `"a b c"`: the terms adjacent and in order (stopwords are kept).
    Phrase {
        /// The fields searched.
        fields: FieldScope,
        /// The terms in order.
        terms: Vec<Vec<u8>>,
    },
    /// All children match.
    Intersect {
        /// The modifier written on this group (`@f:(a b)`), shown by `FT.EXPLAIN`.
        fields: FieldScope,
        /// The children (at least two).
        children: Vec<Node>,
    },
    /// At least one child matches.
    Union {
        /// The modifier written on this group.
        fields: FieldScope,
        /// The children (at least two).
        children: Vec<Node>,
    },
    /// `-x`: documents that do not match the child.
    Not {
        /// The modifier in effect.
        fields: FieldScope,
        /// The negated node.
        child: Box<Node>,
    },
    /// `~x`: the child only affects scoring; every document qualifies.
    Optional {
        /// The modifier in effect.
        fields: FieldScope,
        /// The optional node.
        child: Box<Node>,
    },
    /// `@tag:{a | b c | d*}`: any alternative matches.
    Tag {
        /// The TAG field's name as written.
        field: Vec<u8>,
        /// The alternatives (`|`-separated).
        alternatives: Vec<TagAlternative>,
    },
    /// `@n:[lo hi]`.
    Numeric {
        /// The NUMERIC field's name as written.
        field: Vec<u8>,
        /// The range.
        range: NumericRange,
    },
    /// `@g:[lon lat radius unit]`.
    Geo {
        /// The GEO field's name as written.
        field: Vec<u8>,
        /// Longitude.
        lon: f64,
        /// Latitude.
        lat: f64,
        /// Radius, in `unit`.
        radius: f64,
        /// `m`, `km`, `mi` or `ft`.
        unit: GeoUnit,
    },
    /// `@v:[VECTOR_RANGE r $blob]=>{…}`: vectors within a distance.
    VectorRange(VectorRange),
}

/// One `|`-separated alternative of a tag query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TagAlternative {
    /// A tag value. Kept as written (case and backslashes included) for
    /// `FT.EXPLAIN`; [`TagAlternative::value`] gives the unescaped bytes.
    Exact(Vec<u8>),
    /// `abc*`: tags starting with the prefix (as written, without `*`).
    Prefix(Vec<u8>),
    /// Several words (`{b c}`): every one must be a tag of the document.
    All(Vec<TagAlternative>),
}

impl TagAlternative {
    /// The tag bytes with escaping backslashes removed (for `Exact` and `Prefix`).
    pub fn value(&self) -> Vec<u8> {
        match self {
            TagAlternative::Exact(v) | TagAlternative::Prefix(v) => unescape(v),
            TagAlternative::All(_) => Vec::new(),
        }
    }
}

/// Removes query-language backslash escapes (`a\ b` → `a b`).
pub fn unescape(raw: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        if raw[i] == b'\\' && i + 1 < raw.len() {
            i += 1;
        }
        out.push(raw[i]);
        i += 1;
    }
    out
}

/// A numeric range; either bound may be infinite.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NumericRange {
    /// Lower bound.
    pub min: f64,
    /// Whether `min` itself is included (no `(`).
    pub min_inclusive: bool,
    /// Upper bound.
    pub max: f64,
    /// Whether `max` itself is included.
    pub max_inclusive: bool,
}

impl NumericRange {
    /// Whether `v` lies in the range.
    pub fn contains(&self, v: f64) -> bool {
        let lo = if self.min_inclusive {
            v >= self.min
        } else {
            v > self.min
        };
        let hi = if self.max_inclusive {
            v <= self.max
        } else {
            v < self.max
        };
        lo && hi
    }
}

/// Distance units of a geo filter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GeoUnit {
    /// Metres.
    M,
    /// Kilometres.
    Km,
    /// Miles.
    Mi,
    /// Feet.
    Ft,
}

impl GeoUnit {
    /// Metres per unit (Redis's conversions).
    pub fn meters(self) -> f64 {
        match self {
            GeoUnit::M => 1.0,
            GeoUnit::Km => 1000.0,
            GeoUnit::Mi => 1609.34,
            GeoUnit::Ft => 0.3048,
        }
    }

    /// The unit as written in queries and `FT.EXPLAIN`.
    pub fn as_str(self) -> &'static str {
        match self {
            GeoUnit::M => "m",
            GeoUnit::Km => "km",
            GeoUnit::Mi => "mi",
            GeoUnit::Ft => "ft",
        }
    }
}

/// The `=>[KNN k @field $blob …]` clause.
#[derive(Debug, Clone, PartialEq)]
pub struct VectorClause {
    /// The VECTOR field's name as written.
    pub field: Vec<u8>,
    /// Number of neighbours.
    pub k: u64,
    /// The query vector: the raw bytes of the blob parameter.
    pub blob: Vec<u8>,
    /// The blob parameter's name (`FT.EXPLAIN` shows it).
    pub blob_param: Vec<u8>,
    /// `EF_RUNTIME n` (or `$EF_RUNTIME: n` in the attributes).
    pub ef_runtime: Option<VectorOption>,
    /// The options as written, in order: name and value. `FT.EXPLAIN` echoes them;
    /// `HYBRID_POLICY` and `BATCH_SIZE` are only checked when the query runs
    /// ([`VectorClause::hybrid`]), as in RediSearch.
    pub written: Vec<(Vec<u8>, Vec<u8>)>,
    /// The name the distance is returned under (`AS d` or `$YIELD_DISTANCE_AS: d`);
    /// `None` means the default `__<field>_score`.
    pub yield_distance_as: Option<Vec<u8>>,
}

/// How a filtered KNN query combines its filter with the vector search.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HybridPolicy {
    /// `ADHOC_BF`: exact distances over every document the filter passes.
    AdhocBf,
    /// `BATCHES`: the graph search, keeping the neighbours the filter passes.
    Batches,
}

/// A KNN clause's hybrid options, checked ([`VectorClause::hybrid`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Hybrid {
    /// `HYBRID_POLICY`.
    pub policy: Option<HybridPolicy>,
    /// `BATCH_SIZE`.
    pub batch_size: Option<u64>,
}

impl VectorClause {
    /// The name the distance is returned under: the alias, or `__<field>_score`.
    pub fn score_field(&self) -> Vec<u8> {
        match &self.yield_distance_as {
            Some(alias) => alias.clone(),
            None => [b"__".as_slice(), &self.field, b"_score"].concat(),
        }
    }
}

/// A vector-search option whose spelling `FT.EXPLAIN` echoes (`EF_RUNTIME = 20`,
/// `ef_runtime = 20`).
#[derive(Debug, Clone, PartialEq)]
pub struct VectorOption {
    /// The option's name as written (without `$`).
    pub name: Vec<u8>,
    /// The value as given (after parameter substitution).
    pub raw: Vec<u8>,
    /// The value as a number.
    pub value: f64,
}

/// `@v:[VECTOR_RANGE radius $blob]=>{$EPSILON: e; $YIELD_DISTANCE_AS: d}`.
#[derive(Debug, Clone, PartialEq)]
pub struct VectorRange {
    /// The VECTOR field's name as written.
    pub field: Vec<u8>,
    /// The radius (not negative).
    pub radius: f64,
    /// The query vector: the raw bytes of the blob parameter.
    pub blob: Vec<u8>,
    /// The blob parameter's name.
    pub blob_param: Vec<u8>,
    /// `$EPSILON` (HNSW search boundary factor).
    pub epsilon: Option<VectorOption>,
    /// The attributes besides `$YIELD_DISTANCE_AS`, as written, in order (`FT.EXPLAIN`
    /// echoes them). Hybrid ones (`$HYBRID_POLICY`, `$BATCH_SIZE`) make the query
    /// fail when it runs: a range query is not hybrid.
    pub written: Vec<(Vec<u8>, Vec<u8>)>,
    /// `$YIELD_DISTANCE_AS`.
    pub yield_distance_as: Option<Vec<u8>>,
}
