//! The block store: namespaces of blocks keyed by their chained ids, each block
//! holding per-layer K/V (or recurrent state) for its tokens. Shared prefixes are
//! stored once — a block's id names its whole prefix, so a second conversation with
//! the same system prompt finds those blocks already there. Blocks form a tree
//! (parent → children); under a byte budget the least recently used *leaf* goes first,
//! so a block is never evicted while a longer stored prefix still needs it.

use bytes::Bytes;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use smallvec::SmallVec;

use super::block_id::BlockId;
use super::blockfile::{BlockFiles, Loc};
use super::export::Exports;
use super::manifest::{dtype_size, Layer, Manifest};
use kernels::BlockSummary;

mod disk;

/// Why a prefix-store operation was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PrefixError {
    /// The request was refused; the text is the wire error.
    Refused(String),
    /// A block file's write failed: the disk is failing, and writes are refused until
    /// it is healed (the command layer answers it as every disk failure, MISCONF).
    Disk(String),
}

impl std::fmt::Display for PrefixError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PrefixError::Refused(text) => f.write_str(text),
            PrefixError::Disk(failure) => write!(f, "block file write failed: {failure}"),
        }
    }
}

fn err<T>(text: impl Into<String>) -> Result<T, PrefixError> {
    Err(PrefixError::Refused(text.into()))
}

/// One layer's stored bytes for a block: `None` for a recurrent layer whose state the
/// client did not supply at this block.
pub type LayerData = Option<Bytes>;

/// One layer's summary for the sparse selector, made on first use (`None` inside: a
/// layer without one).
pub type SummaryCell = std::sync::OnceLock<Option<Arc<BlockSummary>>>;

/// A layer handed to [`PrefixStore::put`]: bytes the store copies, or a buffer it
/// adopts as it is (when it keeps the layer as given) — the one copy a store costs
/// is then the caller's, made straight from its own memory.
#[derive(Debug, Clone)]
pub enum LayerIn<'a> {
    /// Bytes to copy (a command's argument).
    Copy(&'a [u8]),
    /// A buffer to keep without copying.
    Adopt(Bytes),
}

impl LayerIn<'_> {
    /// The layer's bytes.
    pub fn bytes(&self) -> &[u8] {
        match self {
            LayerIn::Copy(b) => b,
            LayerIn::Adopt(a) => a,
        }
    }

    /// The bytes as a shared buffer: the adopted one, or a copy.
    pub fn to_shared(&self) -> Bytes {
        match self {
            LayerIn::Copy(b) => crate::util::shared_copy::shared_copy(b),
            LayerIn::Adopt(a) => a.clone(),
        }
    }
}

/// A stored block.
#[derive(Debug, Clone)]
pub struct Block {
    /// The block before it (`BlockId::ROOT` for a sequence's first block).
    pub parent: BlockId,
    /// Tokens it covers (the namespace's block size, or fewer for a last block).
    pub tokens: u32,
    /// Per layer, in model order.
    pub layers: Vec<LayerData>,
    /// Where each present layer is on disk (durable engines).
    pub locs: Vec<Option<Loc>>,
    /// Per layer, the block's summary for the sparse selector (attention layers the
    /// kernels read): computed the first time a sparse query needs it, not on the
    /// store path (where it cost a tenth of a large store), never logged.
    pub summaries: Vec<SummaryCell>,
    children: SmallVec<[BlockId; 2]>,
    last_used: u64,
    bytes: u64,
}

impl Block {
    /// Whether every layer's data is present (a prefix may end here).
    pub fn complete(&self) -> bool {
        self.layers.iter().all(Option::is_some)
    }
}

/// Per-namespace counters (`KV.INFO`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NamespaceStats {
    /// Blocks stored now.
    pub blocks: u64,
    /// Payload bytes stored now.
    pub bytes: u64,
    /// Prefix lookups that matched at least one block.
    pub hits: u64,
    /// Prefix lookups that matched nothing.
    pub misses: u64,
    /// Tokens matched by lookups, summed.
    pub hit_tokens: u64,
    /// Blocks stored (new).
    pub stores: u64,
    /// Stores of a block that was already there (deduplicated).
    pub dedup: u64,
    /// Blocks fetched.
    pub fetches: u64,
    /// Blocks evicted by the byte budget.
    pub evictions: u64,
}

struct Namespace {
    id: u32,
    manifest: Manifest,
    blocks: HashMap<BlockId, Block>,
    stats: NamespaceStats,
}

/// What a store did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    /// The block's id.
    pub id: BlockId,
    /// False when the block was already there (nothing new was written).
    pub created: bool,
    /// Blocks evicted to make room: (namespace, id).
    pub evicted: Vec<(String, BlockId)>,
    /// Layers this store added (all present ones for a new block; recurrent state
    /// filled into a stored block).
    pub new_layers: Vec<usize>,
}

/// The result of a longest-prefix lookup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Match {
    /// Tokens covered by the usable prefix.
    pub tokens: u64,
    /// Its blocks, in order.
    pub blocks: Vec<BlockId>,
}

/// The store (all namespaces).
#[derive(Default)]
pub struct PrefixStore {
    namespaces: HashMap<String, Namespace>,
    names: HashMap<u32, String>,
    next_ns: u32,
    /// Evictable blocks (leaves), least recently used first: (last use, namespace, id).
    leaves: BTreeSet<(u64, u32, BlockId)>,
    bytes: u64,
    tick: u64,
    budget: u64,
    /// Where payloads are kept on disk (durable engines).
    files: Option<Arc<BlockFiles>>,
    /// Export files of stored prefixes (engines with a data directory).
    exports: Option<Exports>,
}

/// Bytes a client sends for one layer of a block of `tokens` tokens: K then V in the
/// manifest's dtype for attention layers, the state for recurrent ones (which may
/// also be sent empty: no state at this block).
pub fn wire_len(manifest: &Manifest, layer: &Layer, tokens: u32) -> u64 {
    let elem = dtype_size(&manifest.dtype).unwrap_or(2) as u64;
    match *layer {
        Layer::Attention { kv_heads, head_dim }
        | Layer::Sliding {
            kv_heads, head_dim, ..
        } => 2 * u64::from(kv_heads) * u64::from(tokens) * u64::from(head_dim) * elem,
        Layer::Recurrent { state_bytes } => state_bytes,
    }
}

impl PrefixStore {
    /// Sets the byte budget (0: none) and evicts down to it; returns what was evicted.
    pub fn set_budget(&mut self, bytes: u64) -> Vec<(String, BlockId)> {
        self.budget = bytes;
        self.evict_to_budget(None)
    }

    /// The byte budget (0: none).
    pub fn budget(&self) -> u64 {
        self.budget
    }

    /// Payload bytes stored, all namespaces.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Registers a namespace; registering the same manifest again is a no-op, a
    /// different one is refused. Returns whether it was new.
    pub fn register(&mut self, name: &str, manifest: Manifest) -> Result<bool, PrefixError> {
        if let Some(ns) = self.namespaces.get(name) {
            return match ns.manifest.difference(&manifest) {
                None => Ok(false),
                Some(field) => err(format!(
                    "ERR namespace '{name}' is registered with a different manifest ({field} differs); KV.DROP it first"
                )),
            };
        }
        let id = self.next_ns;
        self.next_ns += 1;
        self.names.insert(id, name.to_string());
        self.namespaces.insert(
            name.to_string(),
            Namespace {
                id,
                manifest,
                blocks: HashMap::new(),
                stats: NamespaceStats::default(),
            },
        );
        Ok(true)
    }

    fn ns(&self, name: &str) -> Result<&Namespace, PrefixError> {
        self.namespaces.get(name).ok_or_else(|| {
            PrefixError::Refused(format!(
                "ERR unknown namespace '{name}' (KV.REGISTER it first)"
            ))
        })
    }

    fn ns_mut(&mut self, name: &str) -> Result<&mut Namespace, PrefixError> {
        self.namespaces.get_mut(name).ok_or_else(|| {
            PrefixError::Refused(format!(
                "ERR unknown namespace '{name}' (KV.REGISTER it first)"
            ))
        })
    }

    /// A namespace's manifest.
    pub fn manifest(&self, name: &str) -> Result<&Manifest, PrefixError> {
        Ok(&self.ns(name)?.manifest)
    }

    /// Every namespace name, sorted.
    pub fn names(&self) -> Vec<String> {
        let mut v: Vec<String> = self.namespaces.keys().cloned().collect();
        v.sort();
        v
    }

    /// A namespace's counters.
    pub fn stats(&self, name: &str) -> Result<NamespaceStats, PrefixError> {
        let ns = self.ns(name)?;
        let mut s = ns.stats.clone();
        s.blocks = ns.blocks.len() as u64;
        s.bytes = ns.blocks.values().map(|b| b.bytes).sum();
        Ok(s)
    }

    fn touch(&mut self, ns_id: u32, name: &str, id: BlockId) {
        self.tick += 1;
        let tick = self.tick;
        let Some(ns) = self.namespaces.get_mut(name) else {
            return;
        };
        if let Some(b) = ns.blocks.get_mut(&id) {
            if b.children.is_empty() {
                self.leaves.remove(&(b.last_used, ns_id, id));
                self.leaves.insert((tick, ns_id, id));
            }
            b.last_used = tick;
        }
    }

    /// Checks a store of one block after `parent` without making it: the namespace,
    /// the token count, each layer's length and the parent. Returns the block's id
    /// and whether it is already stored.
    pub fn check_put(
        &self,
        name: &str,
        parent: BlockId,
        tokens: &[u32],
        layers: &[LayerIn<'_>],
    ) -> Result<(BlockId, bool), PrefixError> {
        let ns = self.ns(name)?;
        let m = &ns.manifest;
        let block_tokens = m.block_tokens as usize;
        if tokens.is_empty() || tokens.len() > block_tokens {
            return err(format!(
                "ERR a block holds 1 to {block_tokens} tokens, got {}",
                tokens.len()
            ));
        }
        if layers.len() != m.layers.len() {
            return err(format!(
                "ERR namespace '{name}' has {} layers, got data for {}",
                m.layers.len(),
                layers.len()
            ));
        }
        let n = tokens.len() as u32;
        for (i, (data, layer)) in layers.iter().map(LayerIn::bytes).zip(&m.layers).enumerate() {
            let want = wire_len(m, layer, n);
            let optional = matches!(layer, Layer::Recurrent { .. });
            if data.len() as u64 != want && !(optional && data.is_empty()) {
                return err(format!(
                    "ERR layer {i}: expected {want} bytes for {n} tokens ({}), got {}",
                    describe_layer(m, layer),
                    data.len()
                ));
            }
        }
        if parent != BlockId::ROOT {
            match ns.blocks.get(&parent) {
                None => {
                    return err(format!(
                        "ERR parent block {} is not stored (evicted or never stored)",
                        parent.hex()
                    ))
                }
                Some(p) if (p.tokens as usize) < block_tokens => {
                    return err("ERR the parent is a partial block: only a sequence's last block may be partial")
                }
                Some(_) => {}
            }
        }
        let id = BlockId::chain(parent, tokens);
        Ok((id, ns.blocks.contains_key(&id)))
    }

    /// Whether namespace `name` keeps layers as they are sent (no quantisation): a
    /// layer handed over can then be kept as it is.
    pub fn keeps_as_given(&self, name: &str) -> bool {
        self.ns(name)
            .is_ok_and(|ns| super::encode::keeps_as_given(&ns.manifest))
    }

    /// Stores one block after `parent`: `layers` holds each layer's bytes (K then V for
    /// attention layers; the state, or nothing, for recurrent ones), already in the
    /// namespace's storage tier. Storing a block that exists is a no-op that may add
    /// recurrent state the stored copy lacked.
    pub fn put(
        &mut self,
        name: &str,
        parent: BlockId,
        tokens: &[u32],
        layers: &[LayerIn<'_>],
    ) -> Result<Stored, PrefixError> {
        let (id, exists) = self.check_put(name, parent, tokens, layers)?;
        let ns = self.ns(name)?;
        let m = &ns.manifest;
        let n = tokens.len() as u32;
        let ns_id = ns.id;
        if exists {
            // Shared prefix: nothing new to store, except recurrent state the stored
            // copy was missing (state is kept exactly as sent).
            let ns = self.ns_mut(name)?;
            let mut added = 0u64;
            let mut new_layers = Vec::new();
            if let Some(existing) = ns.blocks.get_mut(&id) {
                for (i, (slot, data)) in existing.layers.iter_mut().zip(layers).enumerate() {
                    if slot.is_none() && !data.bytes().is_empty() {
                        added += data.bytes().len() as u64;
                        *slot = Some(data.to_shared());
                        new_layers.push(i);
                    }
                }
                existing.bytes += added;
            }
            ns.stats.dedup += 1;
            self.bytes += added;
            self.touch(ns_id, name, id);
            let evicted = self.evict_to_budget(Some((ns_id, id)));
            return Ok(Stored {
                id,
                created: false,
                evicted,
                new_layers,
            });
        }
        // Into the namespace's storage tier (as given, or quantised): one copy.
        let layers = layers
            .iter()
            .zip(&m.layers)
            .map(|(data, layer)| super::encode::to_stored(m, layer, n, data))
            .collect::<Result<Vec<LayerData>, PrefixError>>()?;
        let bytes: u64 = layers.iter().flatten().map(|l| l.len() as u64).sum();
        if self.budget > 0 && bytes > self.budget {
            return err(format!(
                "ERR the block is {bytes} bytes, more than the whole kv-budget ({})",
                self.budget
            ));
        }
        let new_layers = (0..layers.len()).filter(|&i| layers[i].is_some()).collect();
        let summaries = (0..layers.len()).map(|_| SummaryCell::new()).collect();
        let ns = self.ns_mut(name)?;
        let nl = layers.len();
        ns.blocks.insert(
            id,
            Block {
                parent,
                tokens: n,
                layers,
                locs: vec![None; nl],
                summaries,
                children: SmallVec::new(),
                last_used: 0,
                bytes,
            },
        );
        ns.stats.stores += 1;
        self.link_child(name, ns_id, parent, id);
        self.bytes += bytes;
        self.tick += 1;
        let tick = self.tick;
        if let Some(b) = self.ns_mut(name)?.blocks.get_mut(&id) {
            b.last_used = tick;
        }
        self.leaves.insert((tick, ns_id, id));
        let evicted = self.evict_to_budget(Some((ns_id, id)));
        Ok(Stored {
            id,
            created: true,
            evicted,
            new_layers,
        })
    }

    /// The longest usable stored prefix of `tokens`: it ends at the last block whose
    /// every layer is present (a hybrid model's prefix never lacks recurrent state).
    pub fn longest_prefix(&mut self, name: &str, tokens: &[u32]) -> Result<Match, PrefixError> {
        let ns = self.ns(name)?;
        let ns_id = ns.id;
        let block_tokens = ns.manifest.block_tokens as usize;
        let mut parent = BlockId::ROOT;
        let mut path = Vec::new();
        let mut usable = 0usize;
        let mut usable_tokens = 0u64;
        let mut covered = 0u64;
        for chunk in tokens.chunks(block_tokens) {
            let id = BlockId::chain(parent, chunk);
            let Some(b) = ns.blocks.get(&id) else { break };
            path.push(id);
            covered += chunk.len() as u64;
            if b.complete() {
                usable = path.len();
                usable_tokens = covered;
            }
            parent = id;
        }
        path.truncate(usable);
        for &id in &path {
            self.touch(ns_id, name, id);
        }
        let ns = self.ns_mut(name)?;
        if path.is_empty() {
            ns.stats.misses += 1;
        } else {
            ns.stats.hits += 1;
            ns.stats.hit_tokens += usable_tokens;
        }
        Ok(Match {
            tokens: usable_tokens,
            blocks: path,
        })
    }

    /// A block's layers (all, or those listed), for a fetch.
    pub fn get(
        &mut self,
        name: &str,
        id: BlockId,
        layers: Option<&[usize]>,
    ) -> Result<(u32, Vec<LayerData>), PrefixError> {
        let ns = self.ns(name)?;
        let ns_id = ns.id;
        let Some(b) = ns.blocks.get(&id) else {
            return err(format!(
                "ERR block {} is not stored (evicted or never stored)",
                id.hex()
            ));
        };
        let out = match layers {
            None => b.layers.clone(),
            Some(list) => {
                let mut v = Vec::with_capacity(list.len());
                for &i in list {
                    match b.layers.get(i) {
                        Some(l) => v.push(l.clone()),
                        None => {
                            return err(format!(
                                "ERR layer {i} out of range: the namespace has {} layers",
                                b.layers.len()
                            ))
                        }
                    }
                }
                v
            }
        };
        let tokens = b.tokens;
        self.touch(ns_id, name, id);
        self.ns_mut(name)?.stats.fetches += 1;
        Ok((tokens, out))
    }

    /// Tokens covered by `ids` if they are stored blocks forming a prefix: the first
    /// a sequence's first block, each the child of the one before, every layer
    /// present, only the last partial.
    pub fn chain_tokens(&self, name: &str, ids: &[BlockId]) -> Result<u64, PrefixError> {
        let ns = self.ns(name)?;
        let full = ns.manifest.block_tokens;
        let mut parent = BlockId::ROOT;
        let mut tokens = 0u64;
        for (i, id) in ids.iter().enumerate() {
            let Some(b) = ns.blocks.get(id) else {
                return err(format!(
                    "ERR block {} is not stored (evicted or never stored)",
                    id.hex()
                ));
            };
            if b.parent != parent {
                return err(format!(
                    "ERR block {} does not follow the block before it: the blocks must be a stored prefix, in order",
                    id.hex()
                ));
            }
            if !b.complete() || (b.tokens < full && i + 1 < ids.len()) {
                return err(format!("ERR block {} cannot continue a prefix", id.hex()));
            }
            parent = *id;
            tokens += u64::from(b.tokens);
        }
        Ok(tokens)
    }

    /// Layer `layer` of each of `ids` for attention: (tokens, stored bytes, summary
    /// when `summaries` asks, made now if it was not yet), shared with the store.
    /// Fails on a block no longer stored; a use for the LRU.
    #[allow(clippy::type_complexity)]
    pub fn attend_layer(
        &mut self,
        name: &str,
        ids: &[BlockId],
        layer: usize,
        summaries: bool,
    ) -> Result<Vec<(u32, Bytes, Option<Arc<BlockSummary>>)>, PrefixError> {
        let ns = self.ns(name)?;
        let ns_id = ns.id;
        let mut out = Vec::with_capacity(ids.len());
        for id in ids {
            let Some(b) = ns.blocks.get(id) else {
                return err(format!(
                    "ERR block {} of the view is no longer stored (evicted or deleted): create the view again",
                    id.hex()
                ));
            };
            let Some(Some(data)) = b.layers.get(layer) else {
                return err(format!(
                    "ERR layer {layer} of block {} is not stored",
                    id.hex()
                ));
            };
            let summary = match b.summaries.get(layer) {
                Some(cell) if summaries => cell
                    .get_or_init(|| {
                        super::attend::summarise_layer(&ns.manifest, b.tokens, layer, data)
                    })
                    .clone(),
                _ => None,
            };
            out.push((b.tokens, data.clone(), summary));
        }
        for id in ids {
            self.touch(ns_id, name, *id);
        }
        Ok(out)
    }

    /// Whether a block is stored.
    pub fn contains(&self, name: &str, id: BlockId) -> bool {
        self.namespaces
            .get(name)
            .is_some_and(|ns| ns.blocks.contains_key(&id))
    }

    /// Deletes a block and every block after it; returns how many went.
    pub fn delete(&mut self, name: &str, id: BlockId) -> Result<usize, PrefixError> {
        let ns = self.ns(name)?;
        let ns_id = ns.id;
        let Some(parent) = ns.blocks.get(&id).map(|b| b.parent) else {
            return Ok(0);
        };
        let mut stack = vec![id];
        let mut removed = 0;
        while let Some(cur) = stack.pop() {
            let ns = self.ns_mut(name)?;
            if let Some(b) = ns.blocks.remove(&cur) {
                stack.extend(b.children.iter().copied());
                self.leaves.remove(&(b.last_used, ns_id, cur));
                self.bytes -= b.bytes;
                self.release(&b);
                self.forget_exports(ns_id, cur);
                removed += 1;
            }
        }
        self.unlink_child(name, ns_id, parent, id);
        Ok(removed)
    }

    /// Adds `child` to `parent`'s children: the parent, with a longer prefix after it
    /// now, is no longer an evictable leaf.
    fn link_child(&mut self, name: &str, ns_id: u32, parent: BlockId, child: BlockId) {
        if parent == BlockId::ROOT {
            return;
        }
        let Some(p) = self
            .namespaces
            .get_mut(name)
            .and_then(|ns| ns.blocks.get_mut(&parent))
        else {
            return;
        };
        if p.children.is_empty() {
            self.leaves.remove(&(p.last_used, ns_id, parent));
        }
        p.children.push(child);
    }

    /// Removes `child` from `parent`'s children; a parent left childless becomes an
    /// evictable leaf.
    fn unlink_child(&mut self, name: &str, ns_id: u32, parent: BlockId, child: BlockId) {
        if parent == BlockId::ROOT {
            return;
        }
        let Some(ns) = self.namespaces.get_mut(name) else {
            return;
        };
        if let Some(p) = ns.blocks.get_mut(&parent) {
            p.children.retain(|c| *c != child);
            if p.children.is_empty() {
                self.leaves.insert((p.last_used, ns_id, parent));
            }
        }
    }

    /// Drops a namespace and all its blocks; returns whether it existed.
    pub fn drop_namespace(&mut self, name: &str) -> bool {
        let Some(ns) = self.namespaces.remove(name) else {
            return false;
        };
        self.names.remove(&ns.id);
        for (id, b) in &ns.blocks {
            self.leaves.remove(&(b.last_used, ns.id, *id));
            self.bytes -= b.bytes;
            self.release(b);
        }
        if let Some(e) = &mut self.exports {
            e.forget_namespace(ns.id);
        }
        true
    }

    /// Evicts one block named by the log (recovery replays evictions so they stay
    /// evicted). Only a leaf can be evicted; anything else is a no-op.
    pub fn evict(&mut self, name: &str, id: BlockId) -> bool {
        let Ok(ns) = self.ns(name) else { return false };
        let ns_id = ns.id;
        match ns.blocks.get(&id) {
            Some(b) if b.children.is_empty() => {
                let key = (b.last_used, ns_id, id);
                self.remove_leaf(key).is_some()
            }
            _ => false,
        }
    }

    fn remove_leaf(&mut self, key: (u64, u32, BlockId)) -> Option<(String, BlockId)> {
        self.leaves.remove(&key);
        let (_, ns_id, id) = key;
        let name = self.names.get(&ns_id)?.clone();
        let ns = self.namespaces.get_mut(&name)?;
        let b = ns.blocks.remove(&id)?;
        ns.stats.evictions += 1;
        self.bytes -= b.bytes;
        self.release(&b);
        self.forget_exports(ns_id, id);
        self.unlink_child(&name, ns_id, b.parent, id);
        Some((name, id))
    }

    /// Evicts least recently used leaves until the budget holds (never `keep`, the
    /// block just stored).
    fn evict_to_budget(&mut self, keep: Option<(u32, BlockId)>) -> Vec<(String, BlockId)> {
        let mut evicted = Vec::new();
        while self.budget > 0 && self.bytes > self.budget {
            let victim = self
                .leaves
                .iter()
                .find(|(_, ns, id)| Some((*ns, *id)) != keep)
                .copied();
            let Some(key) = victim else { break };
            match self.remove_leaf(key) {
                Some(e) => evicted.push(e),
                None => break,
            }
        }
        evicted
    }
}

fn describe_layer(m: &Manifest, layer: &Layer) -> String {
    match *layer {
        Layer::Attention { kv_heads, head_dim } => format!(
            "attention, K and V of [{kv_heads} heads, tokens, {head_dim}] {} at tier {}",
            m.dtype, m.tier
        ),
        Layer::Sliding { kv_heads, head_dim, window } => format!(
            "sliding window {window}, K and V of [{kv_heads} heads, tokens, {head_dim}] {} at tier {}",
            m.dtype, m.tier
        ),
        Layer::Recurrent { state_bytes } => {
            format!("recurrent state of {state_bytes} bytes, or nothing")
        }
    }
}
