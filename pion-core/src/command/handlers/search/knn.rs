//! A KNN clause's execution, shared by `FT.SEARCH`, `FT.AGGREGATE` and `FT.HYBRID`:
//! candidates from the graph (or exactly over a small filtered set) under the
//! document lock, then an exact re-rank from the documents after it is released.

use crate::error::{OpError, OpResult};
use crate::index::eval::Matches;
use crate::index::query::{self as q, Query};
use crate::index::schema::{FieldKind as SchemaKind, FieldSpec, IndexDef, KeyType, VectorSpec};
use crate::index::{Docs, Document, FieldIndex};
use crate::vector::{ExactQuery, Neighbor};

/// Filtered KNN switches to exact search over the filtered set below this size.
const EXACT_FILTER_LIMIT: usize = 4096;

/// Extra candidates asked of the graph for the exact re-rank.
const RERANK_EXTRA: usize = 16;

fn err(text: impl Into<String>) -> OpError {
    OpError::custom(text.into())
}

/// A KNN clause's candidates, taken from the index under its document lock.
pub(super) struct KnnPlan {
    /// The field holding the vectors.
    field: FieldSpec,
    /// The kind of key the index covers.
    on: KeyType,
    /// The field's declaration.
    spec: VectorSpec,
    /// The query vector.
    query: Vec<f32>,
    /// How many neighbours the clause asks for.
    pub(super) k: usize,
    /// Candidates from the index and their keys.
    candidates: Vec<(Neighbor, Vec<u8>)>,
    /// Whether the index gave exact distances (nothing to re-rank).
    exact: bool,
}

/// The candidates of a KNN clause: from the graph, or exactly over a small filtered
/// set. Call with the document lock held; re-rank with [`knn_rerank`] after it.
pub(super) fn knn_candidates(
    def: &IndexDef,
    docs: &Docs,
    query: &Query,
    knn: &q::VectorClause,
    matches: &Matches,
) -> OpResult<KnnPlan> {
    let Some((fi, spec)) = def.field(&knn.field) else {
        return Err(err(format!(
            "Unknown field `{}`",
            String::from_utf8_lossy(&knn.field)
        )));
    };
    let (SchemaKind::Vector(vs), FieldIndex::Vector(vindex)) = (&spec.kind, &docs.fields[fi])
    else {
        return Err(err("Expected a VECTOR field"));
    };
    let qv = vs.ty.decode(&knn.blob, vs.params.dim).ok_or_else(|| {
        err(format!(
            "Error parsing vector similarity query: query vector blob size ({}) does not match index's expected size ({}).",
            knn.blob.len(),
            vs.params.dim * vs.ty.width()
        ))
    })?;
    let k = knn.k as usize;
    let ef = knn
        .ef_runtime
        .as_ref()
        .map(|o| o.value as usize)
        .unwrap_or(vs.params.ef_runtime);
    // An index that keeps its vectors as given re-ranks its own candidates exactly;
    // otherwise a few more are asked for, to re-rank from the documents.
    let exact = vindex.index().exact_distances();
    let want = if exact {
        k
    } else {
        k + RERANK_EXTRA.min(k.max(1))
    };
    // INKEYS and GEOFILTER narrow the matches outside the query tree.
    let filtered =
        !matches!(query.filter, q::Node::MatchAll) || matches.set.len() < docs.all().len();
    let hybrid = knn
        .hybrid(filtered)
        .map_err(|e| err(e.message().to_string()))?;
    // HYBRID_POLICY picks how a filter meets the search: ADHOC_BF computes exact
    // distances over every document the filter passes; BATCHES walks the graph
    // keeping the neighbours the filter passes. (BATCH_SIZE sizes RediSearch's rounds
    // of that walk; here it is a single walk, so the size has nothing to set.)
    // Without a policy, small filtered sets are searched exactly.
    let exact_among_matches = match hybrid.policy {
        Some(q::HybridPolicy::AdhocBf) => true,
        Some(q::HybridPolicy::Batches) => false,
        None => matches.set.len() <= EXACT_FILTER_LIMIT,
    };
    let candidates: Vec<Neighbor> = if k == 0 {
        Vec::new()
    } else if !filtered {
        vindex.search(&qv, want, ef, None, false)
    } else if exact_among_matches {
        let ids: Vec<u64> = matches.set.iter().collect();
        vindex.search_among(&qv, want, &ids)
    } else {
        // The index scans instead of walking when the set holds few of its vectors,
        // unless BATCHES asked for the walk.
        let walk = hybrid.policy == Some(q::HybridPolicy::Batches);
        vindex.search(&qv, want, ef, Some(&matches.set), walk)
    };
    Ok(KnnPlan {
        field: spec.clone(),
        on: def.on,
        spec: vs.clone(),
        query: qv,
        k,
        candidates: candidates
            .into_iter()
            .filter_map(|n| docs.key(n.label).map(|key| (n, key.to_vec())))
            .collect(),
        exact,
    })
}

/// The `k` nearest of a plan's candidates, by exact distance from the documents'
/// own vectors, nearest first (ties by document id). Locks the candidates' shards
/// together, once: call without the document lock.
pub(super) fn knn_rerank(engine: &crate::Engine, plan: KnnPlan, now_ms: i64) -> Vec<Neighbor> {
    if plan.exact {
        // Nearest first already, ties by document id as below.
        let mut out: Vec<Neighbor> = plan.candidates.into_iter().map(|(n, _)| n).collect();
        sort_nearest(&mut out);
        out.truncate(plan.k);
        return out;
    }
    let vs = &plan.spec;
    let exact = ExactQuery::new(vs.params.metric, &plan.query);
    let keys: Vec<&[u8]> = plan.candidates.iter().map(|(_, k)| k.as_slice()).collect();
    let mut ks = engine.keyspace().lock_keys(&keys, now_ms);
    let mut out: Vec<Neighbor> = plan
        .candidates
        .iter()
        .map(|(n, key)| {
            // A document of a multi-value field is as near as its nearest vector.
            let distance = ks
                .peek(0, key)
                .ok()
                .flatten()
                .and_then(|e| Document::of(&e.value, plan.on))
                .and_then(|doc| doc.nearest(&plan.field, vs, &exact));
            Neighbor {
                label: n.label,
                distance: distance.unwrap_or(n.distance),
            }
        })
        .collect();
    drop(ks);
    sort_nearest(&mut out);
    out.truncate(plan.k);
    out
}

/// Nearest first, ties by document id.
fn sort_nearest(out: &mut [Neighbor]) {
    out.sort_by(|a, b| {
        a.distance
            .total_cmp(&b.distance)
            .then(a.label.cmp(&b.label))
    });
}
