//! The store's side that faces the disk: where each layer's payload is in the block
//! files, the export files of stored prefixes, and putting blocks back as recovery
//! reads them from a snapshot or the log.

use bytes::Bytes;
use std::sync::Arc;

use smallvec::SmallVec;

use super::{err, Block, LayerData, PrefixError, PrefixStore};
use crate::prefix::block_id::BlockId;
use crate::prefix::blockfile::{BlockFiles, Loc};
use crate::prefix::export::Exports;

impl PrefixStore {
    /// Keeps payloads in these block files from now on (durable engines, set before
    /// recovery).
    pub fn set_files(&mut self, files: Arc<BlockFiles>) {
        self.files = Some(files);
    }

    /// The block files, if payloads are kept on disk.
    pub fn files(&self) -> Option<&Arc<BlockFiles>> {
        self.files.as_ref()
    }

    /// Keeps export files in this directory from now on (engines with a data
    /// directory).
    pub fn set_exports(&mut self, exports: Exports) {
        self.exports = Some(exports);
    }

    /// The export files, if the engine has a data directory.
    pub fn exports(&self) -> Option<&Exports> {
        self.exports.as_ref()
    }

    pub(crate) fn exports_mut(&mut self) -> Option<&mut Exports> {
        self.exports.as_mut()
    }

    /// A block left the store: so do the files exported for the prefix it ends.
    pub(super) fn forget_exports(&mut self, ns_id: u32, id: BlockId) {
        if let Some(e) = &mut self.exports {
            e.forget_block(ns_id, id);
        }
    }

    /// A namespace's generation: a number no other registration in this process
    /// gets (a namespace dropped and registered again gets a new one).
    pub fn generation(&self, name: &str) -> Option<u32> {
        self.namespaces.get(name).map(|ns| ns.id)
    }

    /// A stored block.
    pub fn block(&self, name: &str, id: BlockId) -> Option<&Block> {
        self.namespaces.get(name)?.blocks.get(&id)
    }

    pub(super) fn release(&self, b: &Block) {
        if let Some(files) = &self.files {
            for loc in b.locs.iter().flatten() {
                files.release(*loc);
            }
        }
    }

    /// A stored layer's bytes.
    pub fn layer(&self, name: &str, id: BlockId, idx: usize) -> Option<Bytes> {
        self.namespaces
            .get(name)?
            .blocks
            .get(&id)?
            .layers
            .get(idx)?
            .clone()
    }

    /// Where a stored layer's payload is on disk (`None`: not written, or no such
    /// layer).
    pub fn loc(&self, name: &str, id: BlockId, idx: usize) -> Option<Loc> {
        *self.namespaces.get(name)?.blocks.get(&id)?.locs.get(idx)?
    }

    /// Records where a layer's payload is on disk (replacing, and releasing, an older
    /// location: compaction), and keeps `view` (the same bytes as a view of that file's
    /// mapping) in place of the layer's own copy. Returns false if the block or layer
    /// is gone.
    pub fn set_loc(
        &mut self,
        name: &str,
        id: BlockId,
        idx: usize,
        loc: Loc,
        view: Option<Bytes>,
    ) -> bool {
        let Some(block) = self
            .namespaces
            .get_mut(name)
            .and_then(|ns| ns.blocks.get_mut(&id))
        else {
            return false;
        };
        let (Some(slot), Some(data)) = (block.locs.get_mut(idx), block.layers.get_mut(idx)) else {
            return false;
        };
        let old = slot.replace(loc);
        if let Some(view) = view {
            *data = Some(view);
        }
        if let (Some(old), Some(files)) = (old, &self.files) {
            files.release(old);
        }
        true
    }

    /// Every stored layer whose location `pick` chooses (`None`: not on disk).
    pub fn layers_where(
        &self,
        pick: impl Fn(Option<Loc>) -> bool,
    ) -> Vec<(String, BlockId, usize)> {
        let mut out = Vec::new();
        for (name, ns) in &self.namespaces {
            for (id, b) in &ns.blocks {
                for (i, (data, loc)) in b.layers.iter().zip(&b.locs).enumerate() {
                    if data.is_some() && pick(*loc) {
                        out.push((name.clone(), *id, i));
                    }
                }
            }
        }
        out
    }

    /// Every live layer whose payload is in block file `file`.
    pub fn layers_in_file(&self, file: u32) -> Vec<(String, BlockId, usize)> {
        let mut out = Vec::new();
        for (name, ns) in &self.namespaces {
            for (id, b) in &ns.blocks {
                for (i, loc) in b.locs.iter().enumerate() {
                    if loc.is_some_and(|l| l.file == file) {
                        out.push((name.clone(), *id, i));
                    }
                }
            }
        }
        out
    }

    /// Puts back a logged store at recovery: the block (or the layers it added to a
    /// stored block), with payloads already read from the block files.
    pub fn replay_put(
        &mut self,
        name: &str,
        parent: BlockId,
        tokens: &[u32],
        layers: Vec<(usize, Bytes, Loc)>,
    ) -> Result<BlockId, PrefixError> {
        let id = BlockId::chain(parent, tokens);
        let nl = self.manifest(name)?.layers.len();
        if layers.iter().any(|(i, _, _)| *i >= nl) {
            return err("ERR logged layer out of range");
        }
        if !self.contains(name, id) {
            let mut data: Vec<LayerData> = vec![None; nl];
            for (i, d, _) in &layers {
                data[*i] = Some(d.clone());
            }
            self.restore_block(name, id, parent, tokens.len() as u32, data)?;
            // A replayed block is as recently used as the order of the log says.
            self.touch_replayed(name, id);
        } else {
            let ns = self.ns_mut(name)?;
            let mut added = 0;
            if let Some(b) = ns.blocks.get_mut(&id) {
                for (i, d, _) in &layers {
                    if b.layers[*i].is_none() {
                        added += d.len() as u64;
                        b.layers[*i] = Some(d.clone());
                    }
                }
                b.bytes += added;
            }
            self.bytes += added;
        }
        for (i, _, loc) in layers {
            if let Some(files) = &self.files {
                files.retain(loc);
            }
            self.set_loc_quiet(name, id, i, loc);
        }
        Ok(id)
    }

    /// Records a layer's location read from a snapshot (already counted live).
    pub fn set_loc_restored(&mut self, name: &str, id: BlockId, idx: usize, loc: Loc) {
        self.set_loc_quiet(name, id, idx, loc);
    }

    fn set_loc_quiet(&mut self, name: &str, id: BlockId, idx: usize, loc: Loc) {
        if let Some(slot) = self
            .namespaces
            .get_mut(name)
            .and_then(|ns| ns.blocks.get_mut(&id))
            .and_then(|b| b.locs.get_mut(idx))
        {
            *slot = Some(loc);
        }
    }

    fn touch_replayed(&mut self, name: &str, id: BlockId) {
        if let Ok(ns) = self.ns(name) {
            let ns_id = ns.id;
            self.touch(ns_id, name, id);
        }
    }

    /// A namespace's blocks, every parent before its children (for a snapshot).
    pub fn blocks_parent_first(&self, name: &str) -> Vec<(BlockId, &Block)> {
        let Some(ns) = self.namespaces.get(name) else {
            return Vec::new();
        };
        let mut out = Vec::with_capacity(ns.blocks.len());
        let mut stack: Vec<BlockId> = ns
            .blocks
            .iter()
            .filter(|(_, b)| b.parent == BlockId::ROOT || !ns.blocks.contains_key(&b.parent))
            .map(|(id, _)| *id)
            .collect();
        while let Some(id) = stack.pop() {
            if let Some(b) = ns.blocks.get(&id) {
                out.push((id, b));
                stack.extend(b.children.iter().copied());
            }
        }
        out
    }

    /// Puts back a block read from a snapshot (its id as stored, not recomputed: the
    /// snapshot does not keep token ids). Its parent must already be back.
    pub fn restore_block(
        &mut self,
        name: &str,
        id: BlockId,
        parent: BlockId,
        tokens: u32,
        layers: Vec<LayerData>,
    ) -> Result<(), PrefixError> {
        let ns = self.ns_mut(name)?;
        let ns_id = ns.id;
        if parent != BlockId::ROOT && !ns.blocks.contains_key(&parent) {
            return err(format!("ERR block {} comes before its parent", id.hex()));
        }
        if ns.blocks.contains_key(&id) {
            return err(format!("ERR block {} twice", id.hex()));
        }
        let bytes = layers.iter().flatten().map(|d| d.len() as u64).sum();
        let nl = layers.len();
        let summaries = (0..nl).map(|_| super::SummaryCell::new()).collect();
        ns.blocks.insert(
            id,
            Block {
                parent,
                tokens,
                layers,
                locs: vec![None; nl],
                summaries,
                children: SmallVec::new(),
                last_used: 0,
                bytes,
            },
        );
        self.link_child(name, ns_id, parent, id);
        self.leaves.insert((0, ns_id, id));
        self.bytes += bytes;
        Ok(())
    }
}
