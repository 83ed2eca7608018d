//! The prompt cache in a snapshot: every namespace's manifest and blocks, parents
//! before children, written as the snapshot's `P` section and read back at recovery.
//! Payloads stay in the block files: the section holds their locations only.
//!
//! ```text
//! body      = count:u32 namespace*
//! namespace = name:bytes manifest_json:bytes blocks:u32 block*
//! block     = id:u128 parent:u128 tokens:u32 layers:u32 (present:u8 [location])*
//! bytes     = len:u32 byte[len]
//! location  = file:u32 offset:u64 len:u64 crc:u32      (see blockfile)
//! ```

use std::io::{self, Write};

use super::block_id::BlockId;
use super::blockfile::{Loc, LOC_LEN};
use super::manifest::Manifest;
use super::store::PrefixStore;
use crate::util::codec::{DecodeError, Reader};

/// One block as exported: cheap to take under the store's lock (payloads are shared).
pub struct ExportBlock {
    id: BlockId,
    parent: BlockId,
    tokens: u32,
    locs: Vec<Option<Loc>>,
}

/// The store's content at one instant.
pub struct Export {
    namespaces: Vec<(String, String, Vec<ExportBlock>)>,
}

impl PrefixStore {
    /// Everything, parents before children (payloads shared, not copied).
    pub fn export(&self) -> Export {
        let mut namespaces = Vec::new();
        for name in self.names() {
            let Ok(m) = self.manifest(&name) else {
                continue;
            };
            let json = m.to_json();
            let blocks = self
                .blocks_parent_first(&name)
                .into_iter()
                .map(|(id, b)| ExportBlock {
                    id,
                    parent: b.parent,
                    tokens: b.tokens,
                    locs: b.locs.clone(),
                })
                .collect();
            namespaces.push((name, json, blocks));
        }
        Export { namespaces }
    }
}

impl crate::durability::snapshot::StreamedBody for Export {
    fn len(&self) -> u64 {
        Export::len(self)
    }

    fn is_empty(&self) -> bool {
        Export::is_empty(self)
    }

    fn write_to(&self, mut out: &mut dyn Write) -> io::Result<u32> {
        self.write(&mut out)
    }
}

impl Export {
    /// Bytes [`write`](Self::write) will produce.
    pub fn len(&self) -> u64 {
        let mut n = 4u64;
        for (name, json, blocks) in &self.namespaces {
            n += 4 + name.len() as u64 + 4 + json.len() as u64 + 4;
            for b in blocks {
                n += 16 + 16 + 4 + 4;
                for l in &b.locs {
                    n += 1 + if l.is_some() { LOC_LEN as u64 } else { 0 };
                }
            }
        }
        n
    }

    /// Whether there is nothing to write.
    pub fn is_empty(&self) -> bool {
        self.namespaces.is_empty()
    }

    /// Writes the body; returns its CRC32C.
    pub fn write(&self, out: &mut impl Write) -> io::Result<u32> {
        let mut crc = 0u32;
        let mut put = |out: &mut dyn Write, bytes: &[u8]| -> io::Result<()> {
            crc = crc32c::crc32c_append(crc, bytes);
            out.write_all(bytes)
        };
        put(out, &(self.namespaces.len() as u32).to_le_bytes())?;
        for (name, json, blocks) in &self.namespaces {
            put(out, &(name.len() as u32).to_le_bytes())?;
            put(out, name.as_bytes())?;
            put(out, &(json.len() as u32).to_le_bytes())?;
            put(out, json.as_bytes())?;
            put(out, &(blocks.len() as u32).to_le_bytes())?;
            for b in blocks {
                put(out, &b.id.0.to_le_bytes())?;
                put(out, &b.parent.0.to_le_bytes())?;
                put(out, &b.tokens.to_le_bytes())?;
                put(out, &(b.locs.len() as u32).to_le_bytes())?;
                for l in &b.locs {
                    match l {
                        None => put(out, &[0])?,
                        Some(loc) => {
                            let mut enc = vec![1];
                            loc.encode(&mut enc);
                            put(out, &enc)?;
                        }
                    }
                }
            }
        }
        Ok(crc)
    }
}

/// Loads a `P` section body into `store` (empty at recovery).
pub fn load(store: &mut PrefixStore, body: &[u8]) -> Result<u64, DecodeError> {
    let bad = |what: &str| DecodeError::new("prompt-cache section", what.to_string());
    let mut r = Reader::new(body);
    let n = r.count(12).map_err(|_| bad("truncated"))?;
    let mut loaded = 0u64;
    for _ in 0..n {
        let name = std::str::from_utf8(r.bytes().map_err(|_| bad("truncated name"))?)
            .map_err(|_| bad("namespace name not UTF-8"))?
            .to_string();
        let manifest = Manifest::parse(r.bytes().map_err(|_| bad("truncated manifest"))?)
            .map_err(|e| bad(&e))?;
        store
            .register(&name, manifest)
            .map_err(|e| bad(&e.to_string()))?;
        let blocks = r.count(40).map_err(|_| bad("truncated"))?;
        for _ in 0..blocks {
            let u128_at = |r: &mut Reader<'_>| -> Result<u128, DecodeError> {
                let b = r.take(16).map_err(|_| bad("truncated block"))?;
                let mut a = [0u8; 16];
                a.copy_from_slice(b);
                Ok(u128::from_le_bytes(a))
            };
            let id = BlockId(u128_at(&mut r)?);
            let parent = BlockId(u128_at(&mut r)?);
            let tokens = r.u32().map_err(|_| bad("truncated block"))?;
            let nl = r.count(1).map_err(|_| bad("truncated block"))?;
            let mut layers = Vec::with_capacity(nl);
            let mut locs = Vec::with_capacity(nl);
            for _ in 0..nl {
                match r.u8().map_err(|_| bad("truncated layer"))? {
                    0 => {
                        layers.push(None);
                        locs.push(None);
                    }
                    1 => {
                        let loc = Loc::decode(&mut r).ok_or_else(|| bad("truncated location"))?;
                        let files = store
                            .files()
                            .ok_or_else(|| bad("no block files to read payloads from"))?;
                        let data = files.read(loc).map_err(|e| bad(&e))?;
                        files.retain(loc);
                        layers.push(Some(data));
                        locs.push(Some(loc));
                    }
                    _ => return Err(bad("bad layer marker")),
                }
            }
            store
                .restore_block(&name, id, parent, tokens, layers)
                .map_err(|e| bad(&e.to_string()))?;
            for (i, loc) in locs.into_iter().enumerate() {
                if let Some(loc) = loc {
                    store.set_loc_restored(&name, id, i, loc);
                }
            }
            loaded += 1;
        }
    }
    if r.remaining() != 0 {
        return Err(bad("trailing bytes"));
    }
    Ok(loaded)
}
