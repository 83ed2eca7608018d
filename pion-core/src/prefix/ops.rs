//! The prompt cache's typed operations: register, match, put, get, delete, drop,
//! compaction, the byte budget, and the replay of their log records. The `KV.*`
//! handlers, the binary lane (through those handlers) and the engine's background
//! work all call these, so how a block reaches the block files and the log, and how
//! its eviction is recorded, is decided in this one place.
//!
//! Every change is logged while the store's lock is held, so the log's order is the
//! store's. A durable store writes a block's payloads to the block files first and
//! logs where they are (`KV.PUTREF`), with the evictions the store caused, in one
//! record: recovery applies the two together or not at all, and rebuilds exactly what
//! was acknowledged and nothing evicted.

use parking_lot::Mutex;

use super::block_id::BlockId;
use super::blockfile::{BlockFiles, Loc, LOC_LEN};
use super::store::{LayerData, LayerIn, Match, PrefixError, PrefixStore};
use super::Manifest;
use crate::durability::Wal;
use crate::util::codec::Reader;

/// Where the prompt cache's changes are recorded: the write-ahead log of a durable
/// engine (none for an in-memory one), at the time of the change.
#[derive(Clone, Copy)]
pub struct ChangeLog<'a> {
    wal: Option<&'a Wal>,
    now_ms: i64,
}

impl<'a> ChangeLog<'a> {
    /// Records into `wal` (nothing when `None`) as changes made at `now_ms`.
    pub fn new(wal: Option<&'a Wal>, now_ms: i64) -> ChangeLog<'a> {
        ChangeLog { wal, now_ms }
    }

    /// Appends `commands` as one record; its sequence number, or 0 when nothing was
    /// logged.
    fn append(&self, commands: &[Vec<Vec<u8>>]) -> u64 {
        match self.wal {
            Some(wal) if !commands.is_empty() => {
                wal.append(self.now_ms, commands.iter().map(|c| (0usize, c.as_slice())))
            }
            _ => 0,
        }
    }

    fn durable(&self) -> bool {
        self.wal.is_some()
    }
}

/// One fetched block: its token count and the layers asked for (`None`: a recurrent
/// layer with no state at this block). The layers share the store's buffers.
#[derive(Debug, Clone)]
pub struct Fetched {
    /// Tokens the block covers.
    pub tokens: u32,
    /// The layers, in the order asked for.
    pub layers: Vec<LayerData>,
}

/// What a typed caller (the binary lane) gets back from a prompt-cache command,
/// beside the command's ordinary reply.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// `KV.MATCH`: the longest stored usable prefix.
    Matched(Match),
    /// `KV.PUT`: the stored block's id.
    Stored(BlockId),
    /// `KV.GET` / `KV.MGET`: the blocks.
    Fetched(Vec<Fetched>),
}

/// Why a block file refused a payload (the disk is failing: writes are refused until
/// it is healed).
fn block_file_error(e: std::io::Error) -> PrefixError {
    PrefixError::Disk(e.to_string())
}

/// Registers namespace `name` with the manifest given as JSON; returns whether it
/// was new and the log record's sequence number (0: nothing logged).
pub fn register(
    store: &Mutex<PrefixStore>,
    log: ChangeLog<'_>,
    name: &str,
    manifest_json: &[u8],
) -> Result<(bool, u64), PrefixError> {
    if name.is_empty() || name.len() > 256 {
        return Err(PrefixError::Refused(
            "ERR namespace names are 1 to 256 bytes".into(),
        ));
    }
    let manifest =
        Manifest::parse(manifest_json).map_err(|e| PrefixError::Refused(format!("ERR {e}")))?;
    let mut store = store.lock();
    let created = store.register(name, manifest)?;
    // A re-registration of the same manifest changes nothing and logs nothing.
    let seq = if created {
        log.append(&[vec![
            b"KV.REGISTER".to_vec(),
            name.as_bytes().to_vec(),
            manifest_json.to_vec(),
        ]])
    } else {
        0
    };
    Ok((created, seq))
}

/// The longest stored usable prefix of `tokens` (counted as a hit or a miss).
pub fn match_prefix(
    store: &Mutex<PrefixStore>,
    name: &str,
    tokens: &[u32],
) -> Result<Match, PrefixError> {
    store.lock().longest_prefix(name, tokens)
}

/// Stores one block after `parent`; returns its id and the log record's sequence
/// number. In a durable engine the new payloads are in the block files before the
/// record that names them is appended.
///
/// A new block of a namespace that keeps layers as sent is written to the block files
/// first, straight from the caller's bytes, and the store keeps the written bytes as
/// views of the files (where the storage maps them): one copy, into the page cache,
/// instead of a copy into fresh memory and another into the file.
pub fn put(
    store: &Mutex<PrefixStore>,
    log: ChangeLog<'_>,
    name: &str,
    parent: BlockId,
    tokens: &[u32],
    layers: &[LayerIn<'_>],
) -> Result<(BlockId, u64), PrefixError> {
    let mut store = store.lock();
    let files = store.files().cloned().filter(|_| log.durable());
    let mut written: Vec<Option<Loc>> = vec![None; layers.len()];
    let mut handed: Option<Vec<LayerIn<'_>>> = None;
    if let Some(files) = &files {
        let (_, exists) = store.check_put(name, parent, tokens, layers)?;
        if !exists && store.keeps_as_given(name) {
            handed = Some(write_first(files, layers, &mut written)?);
        }
    }
    let stored = match store.put(name, parent, tokens, handed.as_deref().unwrap_or(layers)) {
        Ok(stored) => stored,
        Err(e) => {
            // Nothing names what was written: its space is dead (compaction's).
            if let Some(files) = &files {
                written.iter().flatten().for_each(|&loc| files.release(loc));
            }
            return Err(e);
        }
    };
    let mut records = Vec::new();
    if let Some(files) = files {
        if !stored.new_layers.is_empty() {
            let mut refs = Vec::with_capacity(stored.new_layers.len() * (4 + LOC_LEN));
            for &i in &stored.new_layers {
                let (loc, view) = match written.get(i).copied().flatten() {
                    // Written first: the store already holds the view (or its copy).
                    Some(loc) => (loc, None),
                    None => {
                        let Some(data) = store.layer(name, stored.id, i) else {
                            continue;
                        };
                        match files.append_view(&data) {
                            Ok(written) => written,
                            Err(e) => {
                                // Refused: the block is not kept (a store that added
                                // state to a stored block keeps it in memory; healing
                                // writes it).
                                if stored.created {
                                    let _ = store.delete(name, stored.id);
                                }
                                return Err(block_file_error(e));
                            }
                        }
                    }
                };
                store.set_loc(name, stored.id, i, loc, view);
                refs.extend_from_slice(&(i as u32).to_le_bytes());
                loc.encode(&mut refs);
            }
            records.push(vec![
                b"KV.PUTREF".to_vec(),
                name.as_bytes().to_vec(),
                parent.hex().into_bytes(),
                tokens.iter().flat_map(|t| t.to_le_bytes()).collect(),
                refs,
            ]);
        }
    }
    records.extend(eviction_records(&stored.evicted));
    Ok((stored.id, log.append(&records)))
}

/// Writes each non-empty layer of a new block to the block files (noting where in
/// `written`), and returns the layers to store: the written bytes as views of the
/// files, or the layers as given where the storage maps nothing. On a failed write,
/// what was written is released and nothing is stored.
fn write_first<'a>(
    files: &BlockFiles,
    layers: &[LayerIn<'a>],
    written: &mut [Option<Loc>],
) -> Result<Vec<LayerIn<'a>>, PrefixError> {
    let mut out = Vec::with_capacity(layers.len());
    for (i, layer) in layers.iter().enumerate() {
        let bytes = layer.bytes();
        if bytes.is_empty() {
            out.push(layer.clone());
            continue;
        }
        match files.append_view(bytes) {
            Ok((loc, view)) => {
                written[i] = Some(loc);
                out.push(view.map_or_else(|| layer.clone(), LayerIn::Adopt));
            }
            Err(e) => {
                written.iter().flatten().for_each(|&loc| files.release(loc));
                return Err(block_file_error(e));
            }
        }
    }
    Ok(out)
}

/// Blocks of namespace `name` with the layers asked for (all when `None`). Fails on
/// the first block that is not stored.
pub fn get(
    store: &Mutex<PrefixStore>,
    name: &str,
    ids: &[BlockId],
    layers: Option<&[usize]>,
) -> Result<Vec<Fetched>, PrefixError> {
    let mut store = store.lock();
    ids.iter()
        .map(|&id| {
            store
                .get(name, id, layers)
                .map(|(tokens, layers)| Fetched { tokens, layers })
        })
        .collect()
}

/// Deletes block `id` and every block after it; returns how many went and the log
/// record's sequence number.
pub fn delete(
    store: &Mutex<PrefixStore>,
    log: ChangeLog<'_>,
    name: &str,
    id: BlockId,
) -> Result<(usize, u64), PrefixError> {
    let mut store = store.lock();
    let removed = store.delete(name, id)?;
    let seq = if removed > 0 {
        log.append(&[vec![
            b"KV.DEL".to_vec(),
            name.as_bytes().to_vec(),
            id.hex().into_bytes(),
        ]])
    } else {
        0
    };
    Ok((removed, seq))
}

/// Deletes namespace `name` and its blocks; returns whether it existed and the log
/// record's sequence number.
pub fn drop_namespace(store: &Mutex<PrefixStore>, log: ChangeLog<'_>, name: &str) -> (bool, u64) {
    let mut store = store.lock();
    let existed = store.drop_namespace(name);
    let seq = if existed {
        log.append(&[vec![b"KV.DROP".to_vec(), name.as_bytes().to_vec()]])
    } else {
        0
    };
    (existed, seq)
}

/// Sets the byte budget (0: none) and evicts down to it, logging the evictions (so
/// recovery does not bring those blocks back); returns the log record's sequence
/// number.
pub fn apply_budget(store: &Mutex<PrefixStore>, log: ChangeLog<'_>, budget: u64) -> u64 {
    let mut store = store.lock();
    let evicted = store.set_budget(budget);
    log.append(&eviction_records(&evicted))
}

/// Moves the live payloads of the most wasteful block file to the active one, logging
/// the new locations; retires files left empty (deleted once a snapshot covers the
/// log up to here). Returns the bytes moved.
pub fn compact(store: &Mutex<PrefixStore>, wal: &Wal, now_ms: i64, budget_bytes: u64) -> u64 {
    let log = ChangeLog::new(Some(wal), now_ms);
    let mut store = store.lock();
    let Some(files) = store.files().cloned() else {
        return 0;
    };
    let mut moved = 0u64;
    let mut records = Vec::new();
    if let Some(&file) = files.compaction_candidates().first() {
        let mut by_block: std::collections::BTreeMap<(String, BlockId), Vec<u8>> =
            std::collections::BTreeMap::new();
        for (name, id, i) in store.layers_in_file(file) {
            if moved >= budget_bytes {
                break;
            }
            let Some(data) = store.layer(&name, id, i) else {
                continue;
            };
            let Ok((loc, view)) = files.append_view(&data) else {
                break;
            };
            store.set_loc(&name, id, i, loc, view);
            moved += loc.len;
            let refs = by_block.entry((name, id)).or_default();
            refs.extend_from_slice(&(i as u32).to_le_bytes());
            loc.encode(refs);
        }
        for ((name, id), refs) in by_block {
            records.push(vec![
                b"KV.RELOC".to_vec(),
                name.into_bytes(),
                id.hex().into_bytes(),
                refs,
            ]);
        }
    }
    log.append(&records);
    files.note_compacted(moved);
    files.retire_empty(wal.appended_seq());
    moved
}

/// Healing: writes again every payload that is not on disk, or is in a block file
/// not trusted since the disk failed, into a fresh file, and fsyncs it; a snapshot
/// taken next then names only trusted files.
pub fn rewrite_untrusted(store: &Mutex<PrefixStore>) -> Result<u64, String> {
    let mut store = store.lock();
    let Some(files) = store.files().cloned() else {
        return Ok(0);
    };
    let io = |e: std::io::Error| format!("cannot rewrite prompt-cache payloads: {e}");
    // What the active file holds must be on disk too (a failure here makes it
    // untrusted, and its payloads are among those written again).
    let _ = files.heal_sync_active();
    let todo = store.layers_where(|loc| files.needs_rewrite(loc));
    if todo.is_empty() {
        return Ok(0);
    }
    files.heal_begin().map_err(io)?;
    let mut moved = 0;
    for (name, id, i) in todo {
        let Some(data) = store.layer(&name, id, i) else {
            continue;
        };
        // A payload held as a view of a failed file reads that file's pages: one the
        // kernel dropped after it failed to write back reads what the disk holds. A
        // payload that no longer matches the checksum it was written with is dropped
        // with its block (and the blocks after it), never written again as good.
        if store
            .loc(&name, id, i)
            .is_some_and(|old| crate::util::codec::crc(&data) != old.crc)
        {
            crate::log_warning!(
                "prompt-cache block {} of namespace '{name}' no longer matches its checksum after a block-file failure: dropped",
                id.hex()
            );
            let _ = store.delete(&name, id);
            continue;
        }
        let (loc, view) = files.heal_append(&data).map_err(io)?;
        store.set_loc(&name, id, i, loc, view);
        moved += loc.len;
    }
    files.heal_sync_active().map_err(io)?;
    Ok(moved)
}

/// Whether some payload is not on disk, or is in an untrusted block file (see
/// [`rewrite_untrusted`]).
pub fn needs_rewrite(store: &PrefixStore) -> bool {
    store.files().is_some_and(|files| {
        !store
            .layers_where(|loc| files.needs_rewrite(loc))
            .is_empty()
    })
}

/// The log records of evictions: `KV.EVICT ns id` per block.
fn eviction_records(evicted: &[(String, BlockId)]) -> Vec<Vec<Vec<u8>>> {
    evicted
        .iter()
        .map(|(ns, id)| {
            vec![
                b"KV.EVICT".to_vec(),
                ns.as_bytes().to_vec(),
                id.hex().into_bytes(),
            ]
        })
        .collect()
}

/// `(layer, location)` pairs of a `KV.PUTREF`/`KV.RELOC` record.
fn refs_arg(arg: &[u8]) -> Result<Vec<(usize, Loc)>, PrefixError> {
    let bad = || PrefixError::Refused("ERR malformed block-file references".into());
    if !arg.len().is_multiple_of(4 + LOC_LEN) {
        return Err(bad());
    }
    let mut r = Reader::new(arg);
    let mut out = Vec::new();
    while r.remaining() > 0 {
        let i = r.u32().map_err(|_| bad())? as usize;
        out.push((i, Loc::decode(&mut r).ok_or_else(bad)?));
    }
    Ok(out)
}

/// Replays a logged store whose payloads are in the block files (`KV.PUTREF`).
pub fn replay_put_ref(
    store: &Mutex<PrefixStore>,
    name: &str,
    parent: BlockId,
    tokens: &[u32],
    refs: &[u8],
) -> Result<BlockId, PrefixError> {
    let refs = refs_arg(refs)?;
    let mut store = store.lock();
    let files = store
        .files()
        .cloned()
        .ok_or_else(|| PrefixError::Refused("ERR no block files".into()))?;
    let mut layers = Vec::with_capacity(refs.len());
    for (i, loc) in refs {
        let data = files
            .read(loc)
            .map_err(|e| PrefixError::Refused(format!("ERR {e}")))?;
        layers.push((i, data, loc));
    }
    store.replay_put(name, parent, tokens, layers)
}

/// Replays compaction's new payload locations (`KV.RELOC`); returns how many layers
/// moved.
pub fn replay_reloc(
    store: &Mutex<PrefixStore>,
    name: &str,
    id: BlockId,
    refs: &[u8],
) -> Result<usize, PrefixError> {
    let refs = refs_arg(refs)?;
    let mut store = store.lock();
    let files = store.files().cloned();
    let mut n = 0;
    for (i, loc) in refs {
        if let Some(f) = &files {
            f.retain(loc);
        }
        // The payload as a view of its new file, so that the old one can go.
        let view = files.as_ref().and_then(|f| f.view(loc));
        if store.set_loc(name, id, i, loc, view) {
            n += 1;
        } else if let Some(f) = &files {
            f.release(loc);
        }
    }
    Ok(n)
}

/// Replays logged evictions (`KV.EVICT`); returns how many blocks went.
pub fn replay_evict(store: &Mutex<PrefixStore>, name: &str, ids: &[BlockId]) -> usize {
    let mut store = store.lock();
    ids.iter().filter(|&&id| store.evict(name, id)).count()
}
