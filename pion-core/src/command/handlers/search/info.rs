//! `FT.INFO`: an index's definition as it was declared (RedisVL compares it with its
//! own schema to detect changes) and its statistics, in RediSearch's key order. RESP2
//! sends numbers as strings and nested maps as flat arrays; RESP3 sends doubles and
//! maps.

use std::sync::atomic::Ordering;

use crate::command::ctx::Ctx;
use crate::error::{OpError, OpResult};
use crate::index::schema::{short_float, FieldKind, FieldSpec};
use crate::index::stem::Language;
use crate::reply::Reply;
use crate::vector::Algorithm;

/// Builds replies in the connection's protocol.
struct Shape {
    resp3: bool,
}

impl Shape {
    fn map(&self, pairs: Vec<(&'static str, Reply)>) -> Reply {
        if self.resp3 {
            Reply::Map(
                pairs
                    .into_iter()
                    .map(|(k, v)| (Reply::status(k), v))
                    .collect(),
            )
        } else {
            Reply::Array(
                pairs
                    .into_iter()
                    .flat_map(|(k, v)| [Reply::status(k), v])
                    .collect(),
            )
        }
    }

    /// A number RediSearch sends as a string in RESP2 and a double in RESP3.
    fn num(&self, x: f64) -> Reply {
        if self.resp3 {
            Reply::Double(x)
        } else if x.is_nan() {
            Reply::bulk("nan")
        } else {
            Reply::bulk(short_float(x))
        }
    }
}

fn field_attributes(shape: &Shape, f: &FieldSpec) -> Reply {
    if !shape.resp3 {
        return crate::index::schema::field_info(f);
    }
    let mut pairs = vec![
        ("identifier", Reply::bulk(&f.path)),
        ("attribute", Reply::bulk(&f.name)),
        ("type", Reply::bulk(f.kind.type_name())),
    ];
    let mut flags = Vec::new();
    match &f.kind {
        FieldKind::Text { weight, nostem } => {
            pairs.push(("WEIGHT", Reply::Double(*weight)));
            if *nostem {
                flags.push(Reply::bulk("NOSTEM"));
            }
        }
        FieldKind::Tag {
            separator,
            case_sensitive,
        } => {
            let separator = separator.map_or(Vec::new(), |s| vec![s]);
            pairs.push(("SEPARATOR", Reply::bulk(separator)));
            if *case_sensitive {
                flags.push(Reply::bulk("CASESENSITIVE"));
            }
        }
        FieldKind::Numeric | FieldKind::Geo => {}
        FieldKind::Vector(v) => {
            let p = &v.params;
            let hnsw = p.algorithm == Algorithm::Hnsw;
            pairs.push(("algorithm", Reply::bulk(if hnsw { "HNSW" } else { "FLAT" })));
            pairs.push(("data_type", Reply::bulk(v.ty.name())));
            pairs.push(("dim", Reply::Integer(p.dim as i64)));
            pairs.push(("distance_metric", Reply::bulk(p.metric.name())));
            if hnsw {
                pairs.push(("M", Reply::Integer(p.m as i64)));
                pairs.push(("ef_construction", Reply::Integer(p.ef_construction as i64)));
            }
        }
    }
    if f.sortable {
        flags.push(Reply::bulk("SORTABLE"));
        flags.push(Reply::bulk("UNF"));
    }
    if f.noindex {
        flags.push(Reply::bulk("NOINDEX"));
    }
    pairs.push(("flags", Reply::Array(flags)));
    shape.map(pairs)
}

fn errors(shape: &Shape, failures: u64, last: Option<&(String, Vec<u8>)>) -> Reply {
    let (text, key) = match last {
        Some((t, k)) => (Reply::bulk(t), Reply::bulk(k)),
        None => (Reply::bulk("N/A"), Reply::bulk("N/A")),
    };
    shape.map(vec![
        ("indexing failures", Reply::Integer(failures as i64)),
        ("last indexing error", text),
        ("last indexing error key", key),
    ])
}

/// `FT.INFO index`.
pub(super) fn info(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let Some(index) = ctx.search().get(&argv[1]) else {
        return Err(OpError::custom("Unknown index name"));
    };
    let shape = Shape {
        resp3: ctx.client.resp >= 3,
    };
    let def = index.def.read();
    // Before the documents' lock: the sum takes it itself.
    let vector_bytes = index.vector_bytes();
    let docs = index.docs.read();
    let mb = |bytes: usize| bytes as f64 / (1024.0 * 1024.0);
    let n = docs.len();
    let records = docs.records as f64;
    let per_doc = if n == 0 { f64::NAN } else { records / n as f64 };
    let mut definition = vec![
        ("key_type", Reply::bulk(def.on.name())),
        (
            "prefixes",
            Reply::Array(def.prefixes.iter().map(Reply::bulk).collect()),
        ),
    ];
    // RediSearch names the language only when it is not the default.
    if def.language != Language::ENGLISH {
        definition.push(("default_language", Reply::bulk(def.language.name())));
    }
    definition.push(("default_score", shape.num(def.score)));
    let definition = shape.map(definition);
    let attributes = Reply::Array(
        def.fields
            .iter()
            .map(|f| field_attributes(&shape, f))
            .collect(),
    );
    let uses = index.uses.load(Ordering::Relaxed);
    let dialects = shape.map(
        ["dialect_1", "dialect_2", "dialect_3", "dialect_4"]
            .into_iter()
            .zip(&index.dialects)
            .map(|(k, c)| (k, Reply::Integer(c.load(Ordering::Relaxed) as i64)))
            .collect(),
    );
    let field_stats = Reply::Array(
        def.fields
            .iter()
            .map(|f| {
                shape.map(vec![
                    ("identifier", Reply::bulk(&f.path)),
                    ("attribute", Reply::bulk(&f.name)),
                    ("Index Errors", errors(&shape, 0, None)),
                ])
            })
            .collect(),
    );
    let zero = || shape.num(0.0);
    Ok(shape.map(vec![
        ("index_name", Reply::bulk(&def.name)),
        ("index_options", Reply::Array(Vec::new())),
        ("index_definition", definition),
        ("attributes", attributes),
        ("num_docs", Reply::Integer(n as i64)),
        ("max_doc_id", Reply::Integer(docs.max_id() as i64)),
        ("num_terms", Reply::Integer(docs.term_count() as i64)),
        ("num_records", Reply::Integer(docs.records as i64)),
        ("inverted_sz_mb", zero()),
        ("vector_index_sz_mb", shape.num(mb(vector_bytes))),
        ("total_inverted_index_blocks", Reply::Integer(0)),
        ("offset_vectors_sz_mb", zero()),
        ("doc_table_size_mb", zero()),
        ("sortable_values_size_mb", zero()),
        ("key_table_size_mb", zero()),
        ("tag_overhead_sz_mb", zero()),
        ("text_overhead_sz_mb", zero()),
        ("total_index_memory_sz_mb", shape.num(mb(vector_bytes))),
        ("geoshapes_sz_mb", zero()),
        ("records_per_doc_avg", shape.num(per_doc)),
        ("bytes_per_record_avg", shape.num(f64::NAN)),
        ("offsets_per_term_avg", shape.num(f64::NAN)),
        ("offset_bits_per_record_avg", shape.num(f64::NAN)),
        (
            "hash_indexing_failures",
            Reply::Integer(docs.failures as i64),
        ),
        (
            "total_indexing_time",
            shape.num(index.indexing_us.load(Ordering::Relaxed) as f64 / 1000.0),
        ),
        (
            "indexing",
            Reply::Integer(i64::from(index.scanning.load(Ordering::Relaxed))),
        ),
        ("percent_indexed", shape.num(index.percent_indexed())),
        ("number_of_uses", Reply::Integer(uses as i64)),
        ("cleaning", Reply::Integer(0)),
        (
            "gc_stats",
            shape.map(vec![
                ("bytes_collected", zero()),
                ("total_ms_run", zero()),
                ("total_cycles", zero()),
                ("average_cycle_time_ms", shape.num(f64::NAN)),
                ("last_run_time_ms", zero()),
                ("gc_numeric_trees_missed", zero()),
                ("gc_blocks_denied", zero()),
            ]),
        ),
        (
            "cursor_stats",
            shape.map(vec![
                ("global_idle", Reply::Integer(0)),
                ("global_total", Reply::Integer(0)),
                ("index_capacity", Reply::Integer(128)),
                ("index_total", Reply::Integer(0)),
            ]),
        ),
        ("dialect_stats", dialects),
        (
            "Index Errors",
            errors(&shape, docs.failures, docs.last_failure.as_ref()),
        ),
        ("field statistics", field_stats),
    ]))
}
