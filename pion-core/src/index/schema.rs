//! What `FT.CREATE` declares: the index definition (key type, prefixes, score) and its
//! fields, parsed with RediSearch's error texts, and written back out in the shape
//! `FT.INFO` reports (clients such as RedisVL compare it to detect schema changes).
//!
//! Every option is either applied or refused with an error; none is accepted and
//! ignored.

use super::stem::{Language, LanguageError};
use super::tokens::lowercase;
use crate::error::{OpError, OpResult};
use crate::reply::Reply;
use crate::vector::{Algorithm, IndexParams, Metric};
use std::collections::BTreeMap;

/// How a vector field's values are encoded in the hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VectorType {
    /// Little-endian IEEE binary32, `4 * dim` bytes.
    Float32,
    /// Little-endian IEEE binary16, `2 * dim` bytes.
    Float16,
    /// Little-endian IEEE binary64, `8 * dim` bytes.
    Float64,
}

impl VectorType {
    fn parse(s: &[u8]) -> Option<VectorType> {
        match s.to_ascii_uppercase().as_slice() {
            b"FLOAT32" => Some(VectorType::Float32),
            b"FLOAT16" => Some(VectorType::Float16),
            b"FLOAT64" => Some(VectorType::Float64),
            _ => None,
        }
    }

    /// The name `FT.INFO` reports.
    pub fn name(self) -> &'static str {
        match self {
            VectorType::Float32 => "FLOAT32",
            VectorType::Float16 => "FLOAT16",
            VectorType::Float64 => "FLOAT64",
        }
    }

    /// Bytes per component.
    pub fn width(self) -> usize {
        match self {
            VectorType::Float32 => 4,
            VectorType::Float16 => 2,
            VectorType::Float64 => 8,
        }
    }

    /// Decodes a blob of exactly `dim` components; `None` when its length is wrong.
    pub fn decode(self, blob: &[u8], dim: usize) -> Option<Vec<f32>> {
        if blob.len() != dim * self.width() {
            return None;
        }
        Some(match self {
            VectorType::Float32 => blob
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
            VectorType::Float16 => blob
                .chunks_exact(2)
                .map(|c| half::f16::from_le_bytes([c[0], c[1]]).to_f32())
                .collect(),
            VectorType::Float64 => blob
                .chunks_exact(8)
                .map(|c| {
                    let mut b = [0u8; 8];
                    b.copy_from_slice(c);
                    f64::from_le_bytes(b) as f32
                })
                .collect(),
        })
    }
}

/// A vector field's declaration.
#[derive(Debug, Clone, PartialEq)]
pub struct VectorSpec {
    /// Blob encoding.
    pub ty: VectorType,
    /// Index parameters (dimension, metric, algorithm, HNSW knobs).
    pub params: IndexParams,
    /// Which HNSW knobs were given explicitly (`FT.INFO` echoes the declaration).
    pub declared_ef_runtime: bool,
    /// Whether `EPSILON` was given.
    pub declared_epsilon: bool,
}

/// The kind of key an index covers (`ON HASH`, `ON JSON`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyType {
    /// Hashes: a field's identifier is a hash field.
    Hash,
    /// JSON documents: a field's identifier is a JSONPath.
    Json,
}

impl KeyType {
    /// The name `FT.INFO` reports.
    pub fn name(self) -> &'static str {
        match self {
            KeyType::Hash => "HASH",
            KeyType::Json => "JSON",
        }
    }
}

/// What kind of field, with its options.
#[derive(Debug, Clone, PartialEq)]
pub enum FieldKind {
    /// Full text: tokenised, searched by terms, prefixes and phrases.
    Text {
        /// Score weight (`WEIGHT`).
        weight: f64,
        /// `NOSTEM` was given (Pion never stems; kept for `FT.INFO`).
        nostem: bool,
    },
    /// Exact-match tags, split on a separator.
    Tag {
        /// Separator byte (`,` by default on hashes; JSON strings are whole tags
        /// unless `SEPARATOR` is given).
        separator: Option<u8>,
        /// Whether matching keeps case.
        case_sensitive: bool,
    },
    /// A number, searched by ranges.
    Numeric,
    /// A point (`"lon,lat"`), searched by radius (`@f:[lon lat r unit]`, `GEOFILTER`).
    Geo,
    /// A vector, searched by KNN and ranges.
    Vector(VectorSpec),
}

impl FieldKind {
    /// The type name `FT.INFO` reports.
    pub fn type_name(&self) -> &'static str {
        match self {
            FieldKind::Text { .. } => "TEXT",
            FieldKind::Tag { .. } => "TAG",
            FieldKind::Numeric => "NUMERIC",
            FieldKind::Geo => "GEO",
            FieldKind::Vector(_) => "VECTOR",
        }
    }
}

/// One field of the schema.
#[derive(Debug, Clone, PartialEq)]
pub struct FieldSpec {
    /// The hash field or JSONPath it reads (`identifier`).
    pub path: Vec<u8>,
    /// The parsed JSONPath of a field of an `ON JSON` index.
    pub json_path: Option<crate::value::json::Path>,
    /// The name queries use (`attribute`: the `AS` alias, or the path).
    pub name: Vec<u8>,
    /// Kind and options.
    pub kind: FieldKind,
    /// `SORTABLE`.
    pub sortable: bool,
    /// `NOINDEX` (sortable only, not searchable).
    pub noindex: bool,
}

impl FieldSpec {
    /// Whether a document may hold several vectors in this field: a VECTOR field of
    /// an `ON JSON` index whose path may match several values (RediSearch indexes
    /// each of them; a definite path such as `$.embedding` holds one vector).
    pub fn holds_many_vectors(&self) -> bool {
        matches!(self.kind, FieldKind::Vector(_))
            && self.json_path.as_ref().is_some_and(|p| !p.is_definite())
    }
}

/// An index definition.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexDef {
    /// The index name.
    pub name: Vec<u8>,
    /// The kind of key it covers.
    pub on: KeyType,
    /// Key prefixes (plain byte prefixes); one empty prefix = every key.
    pub prefixes: Vec<Vec<u8>>,
    /// `SCORE`: the default document score.
    pub score: f64,
    /// `SKIPINITIALSCAN`: existing hashes are not indexed.
    pub skip_initial_scan: bool,
    /// `STOPWORDS`: the stopword list, when not the default.
    pub stopwords: Option<Vec<Vec<u8>>>,
    /// `LANGUAGE`: how TEXT fields and query terms are stemmed.
    pub language: Language,
    /// `FT.SYNUPDATE`: each term's synonym groups, in the order they were given.
    pub synonyms: BTreeMap<Vec<u8>, Vec<Vec<u8>>>,
    /// The fields, in declaration order.
    pub fields: Vec<FieldSpec>,
}

impl IndexDef {
    /// Adds `terms` (lowercased) to synonym group `group` (`FT.SYNUPDATE`).
    pub fn add_synonyms(&mut self, group: &[u8], terms: &[Vec<u8>]) {
        for t in terms {
            let groups = self.synonyms.entry(lowercase(t)).or_default();
            if !groups.iter().any(|g| g == group) {
                groups.push(group.to_vec());
            }
        }
    }

    /// Whether a key is under one of the prefixes.
    pub fn covers(&self, key: &[u8]) -> bool {
        self.prefixes.iter().any(|p| key.starts_with(p))
    }

    /// The field a query names (by attribute name, case-sensitive as RediSearch).
    pub fn field(&self, name: &[u8]) -> Option<(usize, &FieldSpec)> {
        self.fields.iter().enumerate().find(|(_, f)| f.name == name)
    }
}

/// The most memory `INITIAL_CAP` may reserve for a field's vectors (1 GiB).
pub const INITIAL_CAP_BYTES: usize = 1 << 30;

/// HNSW fields of fewer dimensions keep f32 in the graph instead of INT8 codes.
pub const INT8_MIN_DIM: usize = 32;

/// A cursor over `FT.CREATE`/`FT.ALTER` arguments.
type Args<'a> = crate::util::args::ArgCursor<'a>;

fn err(text: impl Into<String>) -> OpError {
    OpError::custom(text.into())
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Why `FT.CREATE … LANGUAGE l` is refused: RediSearch's text for a name it does not
/// know, Pion's for a language it has no stemmer for.
fn language_error(e: LanguageError, name: &[u8]) -> OpError {
    match e {
        LanguageError::Unknown => err("Invalid language"),
        LanguageError::NoStemmer => no_stemmer(name),
    }
}

/// The refusal of a language RediSearch stems and Pion cannot.
pub fn no_stemmer(name: &[u8]) -> OpError {
    err(format!("Pion has no stemmer for LANGUAGE {}", lossy(name)))
}

fn parse_num<T: std::str::FromStr>(b: &[u8]) -> Option<T> {
    std::str::from_utf8(b).ok()?.parse().ok()
}

const REFUSED_INDEX_OPTIONS: &[&str] = &[
    "FILTER",
    "LANGUAGE_FIELD",
    "SCORE_FIELD",
    "PAYLOAD_FIELD",
    "MAXTEXTFIELDS",
    "TEMPORARY",
    "NOOFFSETS",
    "NOHL",
    "NOFIELDS",
    "NOFREQS",
];

/// What one `FT.SYNUPDATE` asks.
pub struct SynonymUpdate<'a> {
    /// The group id.
    pub group: &'a [u8],
    /// `SKIPINITIALSCAN`: documents are left as indexed.
    pub skip_scan: bool,
    /// The terms to add to the group.
    pub terms: &'a [Vec<u8>],
}

/// `FT.SYNUPDATE index group [SKIPINITIALSCAN] term…` (the whole argument vector).
pub fn parse_synupdate(argv: &[Vec<u8>]) -> OpResult<SynonymUpdate<'_>> {
    if argv.len() < 4 {
        return Err(OpError::WrongArity("FT.SYNUPDATE".into()));
    }
    let skip_scan = argv[3].eq_ignore_ascii_case(b"SKIPINITIALSCAN");
    Ok(SynonymUpdate {
        group: &argv[2],
        skip_scan,
        terms: &argv[if skip_scan { 4 } else { 3 }..],
    })
}

/// Parses `FT.CREATE name [options] SCHEMA field…` (the whole argument vector).
pub fn parse_create(argv: &[Vec<u8>]) -> OpResult<IndexDef> {
    let mut a = Args { argv, at: 2 };
    let mut def = IndexDef {
        name: argv[1].clone(),
        on: KeyType::Hash,
        prefixes: Vec::new(),
        score: 1.0,
        skip_initial_scan: false,
        stopwords: None,
        language: Language::ENGLISH,
        synonyms: BTreeMap::new(),
        fields: Vec::new(),
    };
    loop {
        let Some(word) = a.next() else {
            return Err(err("No schema found"));
        };
        let upper = word.to_ascii_uppercase();
        match upper.as_slice() {
            b"SCHEMA" => break,
            b"ON" => match a.next().map(<[u8]>::to_ascii_uppercase).as_deref() {
                Some(b"HASH") => def.on = KeyType::Hash,
                Some(b"JSON") => def.on = KeyType::Json,
                Some(other) => return Err(err(format!("Invalid rule type: {}", lossy(other)))),
                None => return Err(err("Bad arguments for ON: Expected an argument")),
            },
            b"PREFIX" => {
                let n: usize = a.next().and_then(parse_num).ok_or_else(|| {
                    err("Bad arguments for PREFIX: Could not convert argument to expected type")
                })?;
                for _ in 0..n {
                    let p = a.next().ok_or_else(|| {
                        err("Bad arguments for PREFIX: Expected an argument, but none provided")
                    })?;
                    def.prefixes.push(p.to_vec());
                }
            }
            b"SCORE" => {
                def.score = a
                    .next()
                    .and_then(parse_num::<f64>)
                    .filter(|s| (0.0..=1.0).contains(s))
                    .ok_or_else(|| err("Invalid score"))?;
            }
            b"LANGUAGE" => match a.next() {
                Some(l) => def.language = Language::parse(l).map_err(|e| language_error(e, l))?,
                None => return Err(err("Bad arguments for LANGUAGE: Expected an argument")),
            },
            b"SKIPINITIALSCAN" => def.skip_initial_scan = true,
            b"STOPWORDS" => {
                let n: usize = a.next().and_then(parse_num).ok_or_else(|| {
                    err("Bad arguments for STOPWORDS: Could not convert argument to expected type")
                })?;
                let mut words = Vec::with_capacity(n.min(1024));
                for _ in 0..n {
                    let w = a.next().ok_or_else(|| {
                        err("Bad arguments for STOPWORDS: Expected an argument, but none provided")
                    })?;
                    words.push(w.to_ascii_lowercase());
                }
                def.stopwords = Some(words);
            }
            _ if REFUSED_INDEX_OPTIONS
                .iter()
                .any(|o| o.as_bytes() == upper.as_slice()) =>
            {
                return Err(err(format!(
                    "FT.CREATE option `{}` is not supported by Pion",
                    lossy(word)
                )))
            }
            _ => return Err(err(format!("Unknown argument `{}`", lossy(word)))),
        }
    }
    if def.prefixes.is_empty() {
        def.prefixes.push(Vec::new());
    }
    parse_fields(&mut a, def.on, &mut def.fields)?;
    if def.fields.is_empty() {
        return Err(err("Fields arguments are missing"));
    }
    Ok(def)
}

/// Parses the field list after `SCHEMA` (or `SCHEMA ADD`) of an index on `on` keys
/// into `fields`, refusing duplicates of fields already there.
pub fn parse_alter(
    argv: &[Vec<u8>],
    at: usize,
    on: KeyType,
    fields: &mut Vec<FieldSpec>,
) -> OpResult<()> {
    let mut a = Args { argv, at };
    parse_fields(&mut a, on, fields)
}

/// The parsed JSONPath of a field identifier of an `ON JSON` index. RediSearch takes
/// any text here and indexes nothing under an identifier that is not a JSONPath;
/// Pion says so at once.
fn json_field_path(path: &[u8]) -> OpResult<crate::value::json::Path> {
    let parsed = crate::value::json::Path::parse(path)
        .map_err(|e| err(format!("Invalid JSONPath `{}`: {e}", lossy(path))))?;
    if parsed.legacy {
        return Err(err(format!(
            "Invalid JSONPath `{}`: a JSON index's fields are JSONPaths starting with `$`",
            lossy(path)
        )));
    }
    Ok(parsed)
}

fn parse_fields(a: &mut Args<'_>, on: KeyType, fields: &mut Vec<FieldSpec>) -> OpResult<()> {
    while let Some(path) = a.next() {
        let json_path = match on {
            KeyType::Json => Some(json_field_path(path)?),
            KeyType::Hash => None,
        };
        let mut name = path.to_vec();
        if a.is("AS") {
            a.next();
            name = a
                .next()
                .ok_or_else(|| err(format!("Field `{}` does not have a type", lossy(path))))?
                .to_vec();
        }
        if fields.iter().any(|f| f.name == name || f.path == path) {
            return Err(err(format!("Duplicate field in schema - {}", lossy(&name))));
        }
        let ty = a
            .next()
            .ok_or_else(|| err(format!("Field `{}` does not have a type", lossy(path))))?;
        let kind = match ty.to_ascii_uppercase().as_slice() {
            b"TEXT" => FieldKind::Text {
                weight: 1.0,
                nostem: false,
            },
            b"TAG" => FieldKind::Tag {
                separator: (on == KeyType::Hash).then_some(b','),
                case_sensitive: false,
            },
            b"NUMERIC" => FieldKind::Numeric,
            b"GEO" => FieldKind::Geo,
            b"VECTOR" => FieldKind::Vector(parse_vector(a)?),
            b"GEOSHAPE" => {
                return Err(err(format!(
                    "Pion does not index {} fields yet (field `{}`)",
                    lossy(ty).to_ascii_uppercase(),
                    lossy(path)
                )))
            }
            _ => {
                return Err(err(format!(
                    "Invalid field type for field `{}`",
                    lossy(&name)
                )))
            }
        };
        let mut field = FieldSpec {
            path: path.to_vec(),
            json_path,
            name,
            kind,
            sortable: false,
            noindex: false,
        };
        parse_field_options(a, &mut field)?;
        fields.push(field);
    }
    Ok(())
}

fn parse_field_options(a: &mut Args<'_>, field: &mut FieldSpec) -> OpResult<()> {
    while let Some(opt) = a.peek() {
        let upper = opt.to_ascii_uppercase();
        let is_vector = matches!(field.kind, FieldKind::Vector(_));
        match (&mut field.kind, upper.as_slice()) {
            (_, b"SORTABLE") if !is_vector => {
                field.sortable = true;
                if a.argv
                    .get(a.at + 1)
                    .is_some_and(|n| n.eq_ignore_ascii_case(b"UNF"))
                {
                    a.at += 1;
                }
            }
            (_, b"NOINDEX") if !is_vector => field.noindex = true,
            (FieldKind::Text { weight, .. }, b"WEIGHT") => {
                a.at += 1;
                *weight = a.peek().and_then(parse_num::<f64>).ok_or_else(|| {
                    err("Bad arguments for weight: Could not convert argument to expected type")
                })?;
            }
            (FieldKind::Text { nostem, .. }, b"NOSTEM") => *nostem = true,
            (FieldKind::Tag { separator, .. }, b"SEPARATOR") => {
                a.at += 1;
                let s = a.peek().ok_or_else(|| {
                    err("Bad arguments for SEPARATOR: Expected an argument, but none provided")
                })?;
                if s.len() != 1 {
                    return Err(err(format!(
                        "Tag separator must be a single character. Got `{}`",
                        lossy(s)
                    )));
                }
                *separator = Some(s[0]);
            }
            (FieldKind::Tag { case_sensitive, .. }, b"CASESENSITIVE") => *case_sensitive = true,
            (_, b"PHONETIC" | b"WITHSUFFIXTRIE" | b"INDEXEMPTY" | b"INDEXMISSING") => {
                return Err(err(format!(
                    "field option `{}` is not supported by Pion",
                    lossy(opt)
                )))
            }
            _ => return Ok(()),
        }
        a.at += 1;
    }
    Ok(())
}

fn parse_vector(a: &mut Args<'_>) -> OpResult<VectorSpec> {
    let algo = a.next().unwrap_or_default().to_ascii_uppercase();
    let algorithm = match algo.as_slice() {
        b"HNSW" => Algorithm::Hnsw,
        b"FLAT" => Algorithm::Flat,
        _ => {
            return Err(err(
                "Bad arguments for vector similarity algorithm: Unknown argument",
            ))
        }
    };
    let aname = if algorithm == Algorithm::Hnsw {
        "HNSW"
    } else {
        "FLAT"
    };
    let count: usize = a.next().and_then(parse_num).ok_or_else(|| {
        err("Bad arguments for vector similarity number of parameters: Could not convert argument to expected type")
    })?;
    if !count.is_multiple_of(2) {
        return Err(err(format!("Bad number of arguments for vector similarity index: got {count} but expected even number (as algorithm parameters should be submitted as named arguments)")));
    }
    let bad = |what: &str, why: &str| {
        err(format!(
            "Bad arguments for vector similarity {aname} index {what}: {why}"
        ))
    };
    let conv = "Could not convert argument to expected type";
    let mut ty = None;
    let mut dim = None;
    let mut metric = None;
    let mut params = IndexParams::new(0, Metric::L2, algorithm);
    let (mut ef_rt, mut eps) = (false, false);
    for _ in 0..count / 2 {
        let key = a.next().unwrap_or_default().to_ascii_uppercase();
        let val = a.next().ok_or_else(|| {
            err("Bad arguments for vector similarity index: Expected an argument")
        })?;
        let positive = |what: &str| -> OpResult<usize> {
            parse_num::<usize>(val)
                .filter(|&n| n > 0)
                .ok_or_else(|| bad(what, conv))
        };
        match (key.as_slice(), algorithm) {
            (b"TYPE", _) => {
                ty = Some(VectorType::parse(val).ok_or_else(|| bad("type", "Unknown argument"))?)
            }
            (b"DIM", _) => dim = Some(positive("dim")?),
            (b"DISTANCE_METRIC", _) => {
                metric = Some(Metric::parse(val).ok_or_else(|| bad("metric", "Unknown argument"))?)
            }
            (b"INITIAL_CAP", _) => {
                params.initial_cap = parse_num(val).ok_or_else(|| bad("initial cap", conv))?
            }
            (b"BLOCK_SIZE", Algorithm::Flat) => {
                positive("block size")?;
            }
            (b"M", Algorithm::Hnsw) => params.m = positive("m")?.clamp(2, 512),
            (b"EF_CONSTRUCTION", Algorithm::Hnsw) => {
                params.ef_construction = positive("efConstruction")?
            }
            (b"EF_RUNTIME", Algorithm::Hnsw) => {
                params.ef_runtime = positive("efRuntime")?;
                ef_rt = true;
            }
            (b"EPSILON", Algorithm::Hnsw) => {
                params.epsilon = parse_num::<f32>(val)
                    .filter(|e| *e > 0.0)
                    .ok_or_else(|| bad("epsilon", conv))?;
                eps = true;
            }
            _ => {
                return Err(err(format!(
                    "Bad arguments for vector similarity {aname} index: Unknown argument `{}`",
                    lossy(&key)
                )))
            }
        }
    }
    let missing = |what: &str| {
        err(format!(
            "Missing mandatory parameter: cannot create {aname} index without specifying {what} argument"
        ))
    };
    let ty = ty.ok_or_else(|| missing("TYPE"))?;
    params.dim = dim.ok_or_else(|| missing("DIM"))?;
    params.metric = metric.ok_or_else(|| missing("DISTANCE_METRIC"))?;
    // INITIAL_CAP reserves memory up front: bounded, with RediSearch's refusal text.
    let limit = INITIAL_CAP_BYTES / (params.dim * ty.width()).max(1);
    if params.initial_cap > limit {
        return Err(err(format!(
            "Vector index initial capacity {} exceeded server limit ({limit} with the given parameters)",
            params.initial_cap
        )));
    }
    if params.algorithm == Algorithm::Hnsw && params.dim < INT8_MIN_DIM {
        // With few dimensions one coarse code dominates a distance and saves little
        // memory: the graph keeps full precision there.
        params.quantization = crate::vector::Quantization::None;
    }
    // The walk reads INT8 codes; the vectors as given re-rank its candidates, so a
    // query gets the recall and the exact distances of a FLOAT32 index without
    // reading each candidate back from its document (doc/vector-index.md).
    params.exact_rows = params.algorithm == Algorithm::Hnsw;
    Ok(VectorSpec {
        ty,
        params,
        declared_ef_runtime: ef_rt,
        declared_epsilon: eps,
    })
}

fn bulk(s: &str) -> Reply {
    Reply::bulk(s)
}

/// A float as RediSearch prints declaration values (`1`, `0.5`).
pub fn short_float(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

/// The `attributes` entry of `FT.INFO` for one field.
pub fn field_info(f: &FieldSpec) -> Reply {
    let mut out = vec![
        bulk("identifier"),
        Reply::bulk(&f.path),
        bulk("attribute"),
        Reply::bulk(&f.name),
        bulk("type"),
        bulk(f.kind.type_name()),
    ];
    match &f.kind {
        FieldKind::Text { weight, nostem } => {
            out.push(bulk("WEIGHT"));
            out.push(Reply::bulk(short_float(*weight)));
            if *nostem {
                out.push(bulk("NOSTEM"));
            }
        }
        FieldKind::Tag {
            separator,
            case_sensitive,
        } => {
            out.push(bulk("SEPARATOR"));
            out.push(Reply::bulk(separator.map_or(Vec::new(), |s| vec![s])));
            if *case_sensitive {
                out.push(bulk("CASESENSITIVE"));
            }
        }
        FieldKind::Numeric | FieldKind::Geo => {}
        FieldKind::Vector(v) => {
            let p = &v.params;
            out.push(bulk("algorithm"));
            out.push(bulk(match p.algorithm {
                Algorithm::Hnsw => "HNSW",
                Algorithm::Flat => "FLAT",
            }));
            out.push(bulk("data_type"));
            out.push(bulk(v.ty.name()));
            out.push(bulk("dim"));
            out.push(Reply::Integer(p.dim as i64));
            out.push(bulk("distance_metric"));
            out.push(bulk(p.metric.name()));
            if p.algorithm == Algorithm::Hnsw {
                out.push(bulk("M"));
                out.push(Reply::Integer(p.m as i64));
                out.push(bulk("ef_construction"));
                out.push(Reply::Integer(p.ef_construction as i64));
            }
        }
    }
    if f.sortable {
        out.push(bulk("SORTABLE"));
        out.push(bulk("UNF"));
    }
    if f.noindex {
        out.push(bulk("NOINDEX"));
    }
    Reply::Array(out)
}
