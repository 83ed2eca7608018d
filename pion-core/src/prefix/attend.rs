//! Attention over a stored prefix (`ATTEND.*`). A client that keeps only its suffix
//! asks the server to attend its query heads over the prefix's stored K/V; it gets
//! back the partial state (output normalised over the prefix, and the log-sum-exp)
//! that merges exactly with its own suffix attention.
//!
//! - A **view** names a prefix once: a namespace's blocks, found by the longest-prefix
//!   match of a token sequence or given as the block ids a match returned. Views are
//!   per namespace, held in memory (they are cheap to recreate and are not logged).
//! - A **query** attends one layer's post-RoPE query heads (a batch of positions) over
//!   the view's blocks, densely or over the blocks the selector keeps within a token
//!   budget, using the block summaries stored with every block.
//!
//! The arithmetic is the kernels crate's; this module finds the blocks, checks that
//! the query fits the namespace's layout (a mismatch fails closed), and counts.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use kernels::quant::{DType, Tier};
use kernels::{
    AttnState, BlockKv, BlockSummary, Device, DevicePolicy, Kernels, KvLayout, Queries, Score,
    SelectOptions, Selection,
};
use parking_lot::Mutex;

use super::block_id::BlockId;
use super::manifest::{Layer, Manifest};
use super::store::{PrefixError, PrefixStore};

/// Views one engine keeps at most (`ATTEND.DROP` frees them).
pub const MAX_VIEWS: usize = 65_536;

/// Query positions one layer's query may carry.
pub const MAX_POSITIONS: usize = 4096;

fn refuse<T>(text: impl Into<String>) -> Result<T, PrefixError> {
    Err(PrefixError::Refused(text.into()))
}

/// The kernels' layout of layer `layer` of a namespace, or why it cannot be attended.
pub fn layer_layout(m: &Manifest, layer: usize) -> Result<KvLayout, PrefixError> {
    let Some(l) = m.layers.get(layer) else {
        return refuse(format!(
            "ERR layer {layer} out of range: the namespace has {} layers",
            m.layers.len()
        ));
    };
    let (Layer::Attention { kv_heads, head_dim }
    | Layer::Sliding {
        kv_heads, head_dim, ..
    }) = *l
    else {
        return refuse(format!(
            "ERR layer {layer} is recurrent: only attention layers can be attended"
        ));
    };
    let dtype = DType::parse(&m.dtype).unwrap_or(DType::F16);
    let tier = Tier::parse(&m.tier).unwrap_or(Tier::AsGiven);
    KvLayout::new(kv_heads as usize, head_dim as usize, dtype, tier)
        .map_err(|e| PrefixError::Refused(format!("ERR layer {layer} cannot be attended: {e}")))
}

/// The summary of a block's layer `layer` holding `data` (`None` for recurrent
/// layers and layouts the kernels do not read).
pub fn summarise_layer(
    m: &Manifest,
    tokens: u32,
    layer: usize,
    data: &[u8],
) -> Option<Arc<BlockSummary>> {
    let layout = layer_layout(m, layer).ok()?;
    let block = layout.split(tokens as usize, data).ok()?;
    kernels::block_summary(&layout, &block).ok().map(Arc::new)
}

/// A view: a namespace's stored prefix as its blocks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct View {
    /// Its blocks, in sequence order.
    pub blocks: Vec<BlockId>,
    /// Tokens they cover.
    pub tokens: u64,
}

/// The selector's settings for a sparse query.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sparse {
    /// Tokens each KV head may attend.
    pub budget: usize,
    /// Leading blocks always kept (default 1).
    pub sink_blocks: Option<usize>,
    /// Trailing tokens always kept (default one block).
    pub recent_tokens: Option<usize>,
    /// How blocks are ranked.
    pub score: Score,
}

/// One layer's query.
#[derive(Debug, Clone, PartialEq)]
pub struct LayerQuery {
    /// The layer.
    pub layer: usize,
    /// `[positions, q_heads, head_dim]` post-RoPE queries.
    pub data: Vec<f32>,
    /// Positions in the batch.
    pub positions: usize,
    /// The softmax scale (`1/sqrt(head_dim)` when not given).
    pub scale: Option<f32>,
    /// Attend only the blocks the selector keeps.
    pub sparse: Option<Sparse>,
}

/// One layer's answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Answer {
    /// Output and LSE per query row.
    pub state: AttnState,
    /// Tokens attended per KV head (the view's, or the selected blocks').
    pub tokens: u64,
    /// Blocks read, summed over KV heads.
    pub blocks: u64,
}

/// Counters for INFO's `attention` section.
#[derive(Debug, Default)]
pub struct AttendStats {
    /// `ATTEND.QUERY` calls answered.
    pub queries: AtomicU64,
    /// Layer queries answered (a call may carry several).
    pub layer_queries: AtomicU64,
    /// Of those, sparse ones.
    pub sparse_queries: AtomicU64,
    /// Blocks read (per KV head).
    pub blocks_read: AtomicU64,
    /// Stored K/V bytes read.
    pub bytes_read: AtomicU64,
    /// Layer queries the GPU answered.
    pub on_gpu: AtomicU64,
    /// Layer queries the CPU answered.
    pub on_cpu: AtomicU64,
}

/// The engine's attention state: its views, the kernels (opened on first use under
/// the configured device policy, and again when it changes) and the counters.
#[derive(Default)]
pub struct Attention {
    views: Mutex<HashMap<(String, Vec<u8>), View>>,
    kernels: Mutex<Option<(DevicePolicy, Arc<Kernels>)>>,
    /// The counters.
    pub stats: AttendStats,
}

impl Attention {
    /// The kernels under `policy`, opened on first use (or when the policy changed).
    /// A GPU policy with no adapter runs on the CPU; INFO says which device is in use.
    pub fn kernels(&self, policy: DevicePolicy) -> Arc<Kernels> {
        let mut slot = self.kernels.lock();
        if let Some((p, k)) = slot.as_ref() {
            if *p == policy {
                return Arc::clone(k);
            }
        }
        let k = Arc::new(Kernels::open(policy).unwrap_or_else(|_| Kernels::cpu()));
        *slot = Some((policy, Arc::clone(&k)));
        k
    }

    /// What the kernels run on, without opening them: `cpu`, `gpu (…)`, or `not
    /// opened` before the first query.
    pub fn device(&self) -> String {
        self.kernels
            .lock()
            .as_ref()
            .map_or_else(|| "not opened".to_string(), |(_, k)| k.describe())
    }

    /// Views held now.
    pub fn views(&self) -> usize {
        self.views.lock().len()
    }

    /// Creates (or replaces) view `name` of namespace `ns`; its blocks must be
    /// stored and form a chain from the sequence's start.
    pub fn create_view(
        &self,
        store: &Mutex<PrefixStore>,
        ns: &str,
        name: &[u8],
        blocks: Vec<BlockId>,
    ) -> Result<View, PrefixError> {
        let tokens = store.lock().chain_tokens(ns, &blocks)?;
        let view = View { blocks, tokens };
        let mut views = self.views.lock();
        let key = (ns.to_string(), name.to_vec());
        if views.len() >= MAX_VIEWS && !views.contains_key(&key) {
            return refuse(format!(
                "ERR too many attention views ({MAX_VIEWS}): drop some with ATTEND.DROP"
            ));
        }
        views.insert(key, view.clone());
        Ok(view)
    }

    /// Drops a view; whether it existed.
    pub fn drop_view(&self, ns: &str, name: &[u8]) -> bool {
        self.views
            .lock()
            .remove(&(ns.to_string(), name.to_vec()))
            .is_some()
    }

    /// Drops every view of a namespace (it was dropped).
    pub fn drop_namespace(&self, ns: &str) {
        self.views.lock().retain(|(n, _), _| n != ns);
    }

    /// A view.
    pub fn view(&self, ns: &str, name: &[u8]) -> Result<View, PrefixError> {
        self.views
            .lock()
            .get(&(ns.to_string(), name.to_vec()))
            .cloned()
            .ok_or_else(|| {
                PrefixError::Refused(format!(
                    "ERR no attention view '{}' in namespace '{ns}'",
                    String::from_utf8_lossy(name)
                ))
            })
    }

    /// Answers each layer query over view `name` of namespace `ns`, on the kernels
    /// `policy` chooses.
    pub fn query(
        &self,
        store: &Mutex<PrefixStore>,
        policy: DevicePolicy,
        ns: &str,
        name: &[u8],
        queries: &[LayerQuery],
    ) -> Result<Vec<Answer>, PrefixError> {
        let view = self.view(ns, name)?;
        let kernels = self.kernels(policy);
        let mut answers = Vec::with_capacity(queries.len());
        for q in queries {
            answers.push(self.layer_query(store, &kernels, ns, &view, q)?);
        }
        self.stats.queries.fetch_add(1, Ordering::Relaxed);
        Ok(answers)
    }

    fn layer_query(
        &self,
        store: &Mutex<PrefixStore>,
        kernels: &Kernels,
        ns: &str,
        view: &View,
        q: &LayerQuery,
    ) -> Result<Answer, PrefixError> {
        // The blocks' data and summaries, shared (the store's lock is held only to
        // find them).
        let (block_tokens, layout, parts) = {
            let mut s = store.lock();
            let m = s.manifest(ns)?;
            let (block_tokens, layout) = (m.block_tokens as usize, layer_layout(m, q.layer)?);
            (
                block_tokens,
                layout,
                s.attend_layer(ns, &view.blocks, q.layer, q.sparse.is_some())?,
            )
        };
        let d = layout.head_dim;
        if q.positions == 0 || q.positions > MAX_POSITIONS {
            return refuse(format!("ERR POSITIONS must be 1..{MAX_POSITIONS}"));
        }
        let per_position = q.data.len() / q.positions;
        if !q.data.len().is_multiple_of(q.positions)
            || !per_position.is_multiple_of(d)
            || per_position == 0
        {
            return refuse(format!(
                "ERR the query is {} floats: not POSITIONS ({}) × query heads × head_dim ({d}) of layer {}",
                q.data.len(),
                q.positions,
                q.layer
            ));
        }
        let q_heads = per_position / d;
        if !q_heads.is_multiple_of(layout.kv_heads) {
            return refuse(format!(
                "ERR {q_heads} query heads do not divide into layer {}'s {} KV heads",
                q.layer, layout.kv_heads
            ));
        }
        let queries = Queries {
            data: &q.data,
            positions: q.positions,
            q_heads,
            scale: q.scale.unwrap_or(1.0 / (d as f32).sqrt()),
        };
        let blocks = parts
            .iter()
            .map(|(tokens, data, _)| layout.split(*tokens as usize, data))
            .collect::<Result<Vec<BlockKv<'_>>, _>>()
            .map_err(|e| {
                PrefixError::Refused(format!("ERR stored block does not fit its layout: {e}"))
            })?;
        let err = |e: kernels::KernelError| PrefixError::Refused(format!("ERR {e}"));
        let (state, device, selection) = match q.sparse {
            None => {
                let (state, device) = kernels
                    .decode_partial(&layout, &blocks, &queries)
                    .map_err(err)?;
                (state, device, None)
            }
            Some(sparse) => {
                let summaries = parts
                    .iter()
                    .map(|(_, _, s)| s.as_deref())
                    .collect::<Option<Vec<&BlockSummary>>>()
                    .ok_or_else(|| {
                        PrefixError::Refused("ERR a block of the view has no summary".into())
                    })?;
                let options = SelectOptions {
                    budget_tokens: sparse.budget,
                    sink_blocks: sparse.sink_blocks.unwrap_or(1),
                    recent_tokens: sparse.recent_tokens.unwrap_or(block_tokens),
                    score: sparse.score,
                };
                let (selection, _) = kernels
                    .block_select(&layout, &summaries, &queries, &options)
                    .map_err(err)?;
                let (state, device) = kernels
                    .sparse_partial(&layout, &blocks, &selection, &queries)
                    .map_err(err)?;
                (state, device, Some(selection))
            }
        };
        let selection = selection.unwrap_or_else(|| Selection::all(layout.kv_heads, blocks.len()));
        let heads = layout.kv_heads.max(1);
        let blocks_read = selection.blocks() as u64;
        let token_sum: usize = selection
            .per_head
            .iter()
            .flatten()
            .map(|&i| blocks[i].tokens)
            .sum();
        let bytes: usize = selection
            .per_head
            .iter()
            .flatten()
            .map(|&i| (blocks[i].keys.len() + blocks[i].values.len()) / heads)
            .sum();
        let s = &self.stats;
        s.layer_queries.fetch_add(1, Ordering::Relaxed);
        if q.sparse.is_some() {
            s.sparse_queries.fetch_add(1, Ordering::Relaxed);
        }
        s.blocks_read.fetch_add(blocks_read, Ordering::Relaxed);
        s.bytes_read.fetch_add(bytes as u64, Ordering::Relaxed);
        match device {
            Device::Gpu => s.on_gpu.fetch_add(1, Ordering::Relaxed),
            Device::Cpu => s.on_cpu.fetch_add(1, Ordering::Relaxed),
        };
        Ok(Answer {
            state,
            tokens: (token_sum / heads) as u64,
            blocks: blocks_read,
        })
    }
}

#[cfg(test)]
mod tests;
