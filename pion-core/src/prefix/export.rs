//! The export lane: a stored prefix written once as a safetensors file in the data
//! directory, for a client on the same machine.
//!
//! A prompt-cache hit of a long prompt is tens of MiB of K/V. Over TCP every byte is
//! copied through two sockets and into the client's heap; a client on the same machine
//! can instead ask for a file and map it. `KV.EXPORT` answers the matched prefix with the
//! path of a safetensors file holding exactly what `KV.GET` would return for its blocks,
//! concatenated along the token axis, laid out the way mlx-lm's
//! `load_prompt_cache` reads a saved prompt cache (so a Python client loads it with one
//! call). The file is derived data: written on the first request for a (namespace, last
//! block, layout), reused afterwards, deleted when that block leaves the store, and the
//! whole directory is cleared at start-up.
//!
//! The file is written without holding the store's lock (the blocks' buffers are shared,
//! not copied), into a temporary name; renaming it into place and recording it happen
//! under the lock, after checking the block is still stored, so a file is never left
//! behind for a block that is gone.
//!
//! ```text
//! file   = header_len:u64 (little-endian)  header (JSON, space-padded to a multiple of 8)  data
//! header = {"__metadata__": {…strings…}, "<tensor>": {"dtype", "shape", "data_offsets": [begin, end]}, …}
//! ```

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use parking_lot::Mutex;
use xxhash_rust::xxh3::xxh3_64;

use super::block_id::BlockId;
use super::manifest::{Layer, Manifest};
use super::quant::{self, DType, Role, RowLayout, Tier};
use super::store::{LayerData, PrefixError, PrefixStore};

/// The directory under the data directory that holds export files.
pub const DIR: &str = "exports";

/// Group size of the quantised tiers, as mlx-lm's `QuantizedKVCache` records it.
const GROUP_SIZE: i32 = 32;

/// How many times an export is retried when its prefix leaves the store while the
/// file is being written.
const ATTEMPTS: usize = 3;

/// Which reader the file's metadata is written for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Layout {
    /// mlx-lm 0.32.2 and later: offsets and quantisation parameters are scalar tensors.
    MlxLm,
    /// Older mlx-lm: offsets and quantisation parameters are metadata strings.
    MlxLmLegacy,
}

impl Layout {
    /// Parses `mlx-lm` or `mlx-lm-legacy` (ASCII case ignored).
    pub fn parse(arg: &[u8]) -> Option<Layout> {
        if arg.eq_ignore_ascii_case(b"mlx-lm") {
            Some(Layout::MlxLm)
        } else if arg.eq_ignore_ascii_case(b"mlx-lm-legacy") {
            Some(Layout::MlxLmLegacy)
        } else {
            None
        }
    }

    /// The canonical name.
    pub fn name(self) -> &'static str {
        match self {
            Layout::MlxLm => "mlx-lm",
            Layout::MlxLmLegacy => "mlx-lm-legacy",
        }
    }
}

/// Why an export failed. The `Display` text is the wire error.
#[derive(Debug)]
pub enum ExportError {
    /// The engine has no data directory to write into.
    InMemory,
    /// The lookup was refused (unknown namespace …).
    Prefix(PrefixError),
    /// A stored block does not have the size its manifest says.
    Corrupt(String),
    /// The file could not be written or moved into place.
    Io {
        /// The file.
        path: PathBuf,
        /// What the system said.
        source: io::Error,
    },
    /// The prefix kept leaving the store while its file was being written.
    Evicted,
}

impl fmt::Display for ExportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ExportError::InMemory => {
                f.write_str("ERR KV.EXPORT needs a data directory (the engine runs in memory)")
            }
            ExportError::Prefix(e) => write!(f, "{e}"),
            ExportError::Corrupt(what) => write!(f, "ERR KV.EXPORT: {what}"),
            ExportError::Io { path, source } => {
                write!(f, "ERR KV.EXPORT cannot write {}: {source}", path.display())
            }
            ExportError::Evicted => f.write_str(
                "ERR KV.EXPORT: the prefix was evicted while its file was written; try again",
            ),
        }
    }
}

impl std::error::Error for ExportError {}

/// One export file on disk.
#[derive(Debug)]
struct ExportFile {
    layout: Layout,
    path: PathBuf,
    bytes: u64,
}

/// The export files of a data directory.
///
/// Files are keyed by (namespace generation, last block id): every way a block leaves
/// the store (eviction, `KV.DEL`, `KV.DROP`) knows exactly that key, so removing a
/// block's files is one map lookup, with no directory scan. The namespace generation
/// (a number the store gives each registration) keeps a namespace dropped and
/// registered again under the same name from ever seeing the old one's files.
#[derive(Debug)]
pub struct Exports {
    dir: PathBuf,
    files: HashMap<(u32, BlockId), Vec<ExportFile>>,
    count: u64,
    bytes: u64,
    next_tmp: u64,
}

impl Exports {
    /// Opens `<data_dir>/exports`, deleting whatever it holds: files of an earlier run
    /// (after a crash, possibly half-written) name blocks nothing tracks any more.
    pub fn open(data_dir: &Path) -> io::Result<Exports> {
        let dir = data_dir.join(DIR);
        match std::fs::remove_dir_all(&dir) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        std::fs::create_dir_all(&dir)?;
        Ok(Exports {
            dir: std::fs::canonicalize(&dir)?,
            files: HashMap::new(),
            count: 0,
            bytes: 0,
            next_tmp: 0,
        })
    }

    /// The directory (absolute).
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Export files on disk.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Their bytes.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    fn find(&self, key: (u32, BlockId), layout: Layout) -> Option<&Path> {
        self.files
            .get(&key)?
            .iter()
            .find(|f| f.layout == layout)
            .map(|f| f.path.as_path())
    }

    /// Deletes the files of a block that left the store. A file that cannot be deleted
    /// stays until the next start-up clears the directory; it is no longer counted.
    pub fn forget_block(&mut self, generation: u32, id: BlockId) {
        if let Some(files) = self.files.remove(&(generation, id)) {
            self.delete(files);
        }
    }

    /// Deletes every file of a dropped namespace.
    pub fn forget_namespace(&mut self, generation: u32) {
        let mut gone = Vec::new();
        self.files.retain(|&(g, _), files| {
            if g == generation {
                gone.append(files);
                false
            } else {
                true
            }
        });
        self.delete(gone);
    }

    fn delete(&mut self, files: Vec<ExportFile>) {
        for f in files {
            let _ = std::fs::remove_file(&f.path);
            self.count -= 1;
            self.bytes -= f.bytes;
        }
    }
}

/// Everything needed to write one export, gathered under the store's lock: the
/// blocks' buffers are shared with the store, not copied.
struct Job {
    manifest: Manifest,
    namespace: String,
    generation: u32,
    last: BlockId,
    layout: Layout,
    tokens: u64,
    /// Per block of the prefix: its tokens and its stored layers.
    blocks: Vec<(u32, Vec<LayerData>)>,
    tmp: PathBuf,
    path: PathBuf,
}

enum Prepared {
    Miss,
    Ready(u64, PathBuf),
    Write(Box<Job>),
}

/// `KV.EXPORT`: the longest usable stored prefix of `tokens` (counted as a hit or a
/// miss, and refreshed, like `KV.MATCH`) and the path of a safetensors file holding it,
/// written now unless an earlier request wrote it; `None` when nothing matches.
pub fn export(
    store: &Mutex<PrefixStore>,
    namespace: &str,
    tokens: &[u32],
    layout: Layout,
) -> Result<Option<(u64, PathBuf)>, ExportError> {
    for _ in 0..ATTEMPTS {
        let job = match prepare(&mut store.lock(), namespace, tokens, layout)? {
            Prepared::Miss => return Ok(None),
            Prepared::Ready(n, path) => return Ok(Some((n, path))),
            Prepared::Write(job) => job,
        };
        let bytes = match write(&job) {
            Ok(bytes) => bytes,
            Err(e) => {
                let _ = std::fs::remove_file(&job.tmp);
                return Err(e);
            }
        };
        if let Some(path) = finish(&mut store.lock(), &job, bytes)? {
            return Ok(Some((job.tokens, path)));
        }
    }
    Err(ExportError::Evicted)
}

fn prepare(
    store: &mut PrefixStore,
    namespace: &str,
    tokens: &[u32],
    layout: Layout,
) -> Result<Prepared, ExportError> {
    if store.exports().is_none() {
        return Err(ExportError::InMemory);
    }
    let m = store
        .longest_prefix(namespace, tokens)
        .map_err(ExportError::Prefix)?;
    let (Some(&last), Some(generation)) = (m.blocks.last(), store.generation(namespace)) else {
        return Ok(Prepared::Miss);
    };
    if let Some(path) = store
        .exports()
        .and_then(|e| e.find((generation, last), layout))
    {
        return Ok(Prepared::Ready(m.tokens, path.to_path_buf()));
    }
    let manifest = store
        .manifest(namespace)
        .map_err(ExportError::Prefix)?
        .clone();
    let mut blocks = Vec::with_capacity(m.blocks.len());
    for &id in &m.blocks {
        let b = store
            .block(namespace, id)
            .ok_or_else(|| ExportError::Corrupt(format!("block {} vanished", id.hex())))?;
        blocks.push((b.tokens, b.layers.clone()));
    }
    let Some(exports) = store.exports_mut() else {
        return Err(ExportError::InMemory);
    };
    exports.next_tmp += 1;
    let tmp = exports
        .dir
        .join(format!(".tmp-{}.safetensors", exports.next_tmp));
    let path = exports
        .dir
        .join(file_name(namespace, generation, last, layout));
    Ok(Prepared::Write(Box::new(Job {
        manifest,
        namespace: namespace.to_string(),
        generation,
        last,
        layout,
        tokens: m.tokens,
        blocks,
        tmp,
        path,
    })))
}

/// A name that is safe on any filesystem whatever the namespace is called: a hash of
/// the namespace, its generation, the last block's id and the layout.
fn file_name(namespace: &str, generation: u32, last: BlockId, layout: Layout) -> String {
    format!(
        "{:016x}-{generation}-{}-{}.safetensors",
        xxh3_64(namespace.as_bytes()),
        last.hex(),
        layout.name()
    )
}

/// Moves a written file into place and records it, if its last block is still stored
/// (otherwise deletes it and returns `None`: the caller looks the prefix up again).
fn finish(store: &mut PrefixStore, job: &Job, bytes: u64) -> Result<Option<PathBuf>, ExportError> {
    let live = store.generation(&job.namespace) == Some(job.generation)
        && store.contains(&job.namespace, job.last);
    let Some(exports) = store.exports_mut() else {
        return Err(ExportError::InMemory);
    };
    let key = (job.generation, job.last);
    let existing = exports.find(key, job.layout).map(Path::to_path_buf);
    if !live || existing.is_some() {
        // Gone, or another request wrote the same file meanwhile.
        let _ = std::fs::remove_file(&job.tmp);
        return Ok(existing.filter(|_| live));
    }
    if let Err(source) = std::fs::rename(&job.tmp, &job.path) {
        let _ = std::fs::remove_file(&job.tmp);
        return Err(ExportError::Io {
            path: job.path.clone(),
            source,
        });
    }
    exports.files.entry(key).or_default().push(ExportFile {
        layout: job.layout,
        path: job.path.clone(),
        bytes,
    });
    exports.count += 1;
    exports.bytes += bytes;
    Ok(Some(job.path.clone()))
}

/// Which bytes of a layer's stored payload a tensor takes.
#[derive(Debug, Clone, Copy)]
enum Part {
    /// Plain elements (as-given, or decoded `q2`).
    Plain,
    /// Packed codes.
    Codes,
    /// Per-group scales.
    Scales,
    /// Per-group biases.
    Biases,
}

/// Where a tensor's bytes come from.
#[derive(Debug, Clone, Copy)]
enum Source {
    /// Rows of every block's K or V, head by head, concatenated along tokens.
    Rows {
        layer: usize,
        heads: usize,
        role: Role,
        part: Part,
        /// Bytes per (head, token) row.
        row: usize,
    },
    /// A 0-dimensional `I32`.
    Scalar(i32),
    /// The recurrent state of the prefix's last block.
    State(usize),
}

struct Tensor {
    name: String,
    dtype: &'static str,
    shape: Vec<u64>,
    source: Source,
}

/// How one attention layer's payload is laid out in a block.
#[derive(Debug, Clone, Copy)]
enum Form {
    /// K then V, `[heads, tokens, head_dim]` elements of `elem` bytes each.
    Plain { elem: usize, head_dim: usize },
    /// K then V, each codes, scales, biases (row-grouped quantisation).
    Packed { k: RowLayout, v: RowLayout },
}

fn st_dtype(d: DType) -> &'static str {
    match d {
        DType::F16 => "F16",
        DType::BF16 => "BF16",
        DType::F32 => "F32",
    }
}

/// The `__metadata__` map, in the order written.
type Metadata = Vec<(String, String)>;

/// What the file holds: its tensors, in data order, and its metadata.
fn plan(job: &Job) -> Result<(Vec<Tensor>, Metadata), ExportError> {
    let m = &job.manifest;
    let bad = |what: &str| ExportError::Corrupt(format!("the manifest has {what}"));
    let tier = Tier::parse(&m.tier).ok_or_else(|| bad("an unknown tier"))?;
    let dtype = DType::parse(&m.dtype).ok_or_else(|| bad("an unknown dtype"))?;
    let n = job.tokens;
    let mlx = m
        .layers
        .iter()
        .all(|l| !matches!(l, Layer::Recurrent { .. }));
    let scalars = mlx && job.layout == Layout::MlxLm;
    let mut tensors = Vec::new();
    let mut classes = Vec::new();
    for (i, layer) in m.layers.iter().enumerate() {
        let (heads, head_dim) = match *layer {
            Layer::Attention { kv_heads, head_dim }
            | Layer::Sliding {
                kv_heads, head_dim, ..
            } => (kv_heads as usize, head_dim as usize),
            Layer::Recurrent { state_bytes } => {
                tensors.push(Tensor {
                    name: format!("{i}.0"),
                    dtype: "U8",
                    shape: vec![state_bytes],
                    source: Source::State(i),
                });
                continue;
            }
        };
        let h = heads as u64;
        let rows = |name: String, dtype, role, part, row: usize, width: usize| Tensor {
            name,
            dtype,
            shape: vec![1, h, n, width as u64],
            source: Source::Rows {
                layer: i,
                heads,
                role,
                part,
                row,
            },
        };
        match form(tier, dtype, head_dim)? {
            Form::Plain { elem, head_dim } => {
                for (j, role) in [Role::Keys, Role::Values].into_iter().enumerate() {
                    let t = rows(
                        format!("{i}.{j}"),
                        st_dtype(dtype),
                        role,
                        Part::Plain,
                        elem * head_dim,
                        head_dim,
                    );
                    tensors.push(t);
                }
                classes.push(("KVCache", None));
            }
            Form::Packed { k, v } => {
                for (j, role, r) in [(0, Role::Keys, k), (1, Role::Values, v)] {
                    let psize = r.param_dtype.size();
                    let pd = st_dtype(r.param_dtype);
                    let words = r.code_bytes / 4;
                    tensors.push(rows(
                        format!("{i}.{j}.0"),
                        "U32",
                        role,
                        Part::Codes,
                        r.code_bytes,
                        words,
                    ));
                    tensors.push(rows(
                        format!("{i}.{j}.1"),
                        pd,
                        role,
                        Part::Scales,
                        r.param_bytes,
                        r.param_bytes / psize,
                    ));
                    tensors.push(rows(
                        format!("{i}.{j}.2"),
                        pd,
                        role,
                        Part::Biases,
                        r.param_bytes,
                        r.param_bytes / psize,
                    ));
                }
                classes.push(("QuantizedKVCache", Some(k.bits)));
            }
        }
        if scalars {
            let offset = i32::try_from(n).map_err(|_| {
                ExportError::Corrupt(format!("{n} tokens is more than mlx-lm's offsets hold"))
            })?;
            let mut values = vec![offset];
            if let Some((_, Some(bits))) = classes.last() {
                values.extend([GROUP_SIZE, *bits as i32]);
            }
            for (k, value) in values.into_iter().enumerate() {
                tensors.push(Tensor {
                    name: format!("{i}.{}", k + 2),
                    dtype: "I32",
                    shape: Vec::new(),
                    source: Source::Scalar(value),
                });
            }
        }
    }
    let user = [
        ("pion_namespace", job.namespace.clone()),
        ("pion_tokens", n.to_string()),
        ("pion_block", job.last.hex()),
        ("pion_layout", job.layout.name().to_string()),
    ];
    let mut meta = Vec::new();
    let user_prefix = match (mlx, job.layout) {
        (false, _) => "",
        (true, Layout::MlxLm) => "0.",
        (true, Layout::MlxLmLegacy) => "1.",
    };
    for (k, v) in user {
        meta.push((format!("{user_prefix}{k}"), v));
    }
    if mlx {
        let class_prefix = if scalars { 1 } else { 2 };
        for (i, (class, bits)) in classes.iter().enumerate() {
            meta.push((format!("{class_prefix}.{i}"), class.to_string()));
            if !scalars {
                match bits {
                    None => meta.push((format!("0.{i}"), String::new())),
                    Some(bits) => {
                        meta.push((format!("0.{i}.0"), n.to_string()));
                        meta.push((format!("0.{i}.1"), GROUP_SIZE.to_string()));
                        meta.push((format!("0.{i}.2"), bits.to_string()));
                    }
                }
            }
        }
        if scalars {
            meta.push(("2.0".into(), String::new()));
            let names = tensors
                .iter()
                .filter(|t| matches!(t.source, Source::Scalar(_)));
            for (k, t) in names.enumerate() {
                meta.push((format!("2.{}.0", k + 1), t.name.clone()));
                meta.push((format!("2.{}.1", k + 1), "scalar".into()));
            }
        }
    }
    // Widest element type first: the data starts at a multiple of 8 and every tensor's
    // size is a multiple of its element size, so each tensor is naturally aligned in a
    // mapped file. The sort is stable: layer order within a type.
    tensors.sort_by_key(|t| std::cmp::Reverse(element_size(t.dtype)));
    Ok((tensors, meta))
}

/// Bytes per element of a safetensors dtype name.
fn element_size(dtype: &str) -> usize {
    match dtype {
        "F32" | "U32" | "I32" => 4,
        "F16" | "BF16" => 2,
        _ => 1,
    }
}

fn form(tier: Tier, dtype: DType, head_dim: usize) -> Result<Form, ExportError> {
    if matches!(tier, Tier::AsGiven | Tier::Q2) {
        return Ok(Form::Plain {
            elem: dtype.size(),
            head_dim,
        });
    }
    let layout = |role| {
        quant::row_layout(tier, dtype, head_dim, role).ok_or_else(|| {
            ExportError::Corrupt(format!(
                "tier {} cannot hold head_dim {head_dim}",
                tier.name()
            ))
        })
    };
    Ok(Form::Packed {
        k: layout(Role::Keys)?,
        v: layout(Role::Values)?,
    })
}

/// Bytes of a tensor.
fn tensor_len(t: &Tensor, tokens: u64) -> u64 {
    match t.source {
        Source::Rows { heads, row, .. } => heads as u64 * tokens * row as u64,
        Source::Scalar(_) => 4,
        Source::State(_) => t.shape.first().copied().unwrap_or(0),
    }
}

/// The header: JSON, padded with spaces to a multiple of 8 bytes.
fn header(tensors: &[Tensor], meta: &[(String, String)], tokens: u64) -> Vec<u8> {
    let s = |text: &str| serde_json::Value::String(text.to_string()).to_string();
    let mut h = String::from("{\"__metadata__\":{");
    let pairs: Vec<String> = meta
        .iter()
        .map(|(k, v)| format!("{}:{}", s(k), s(v)))
        .collect();
    h.push_str(&pairs.join(","));
    h.push('}');
    let mut at = 0u64;
    for t in tensors {
        let len = tensor_len(t, tokens);
        let shape: Vec<String> = t.shape.iter().map(u64::to_string).collect();
        h.push_str(&format!(
            ",{}:{{\"dtype\":\"{}\",\"shape\":[{}],\"data_offsets\":[{at},{}]}}",
            s(&t.name),
            t.dtype,
            shape.join(","),
            at + len
        ));
        at += len;
    }
    h.push('}');
    let mut bytes = h.into_bytes();
    bytes.resize(bytes.len().next_multiple_of(8), b' ');
    bytes
}

/// Where a part starts in a block's stored layer of `tokens` tokens, and the layer's
/// expected length.
fn section(form: Form, heads: usize, tokens: usize, role: Role, part: Part) -> (usize, usize) {
    let rows = heads * tokens;
    let (k_len, v_len, (codes, params)) = match form {
        Form::Plain { elem, head_dim } => {
            let len = rows * head_dim * elem;
            (len, len, (0, 0))
        }
        Form::Packed { k, v } => {
            let len = |r: RowLayout| rows * (r.code_bytes + 2 * r.param_bytes);
            let r = if role == Role::Keys { k } else { v };
            (len(k), len(v), (rows * r.code_bytes, rows * r.param_bytes))
        }
    };
    let base = if role == Role::Keys { 0 } else { k_len };
    let start = match part {
        Part::Plain | Part::Codes => base,
        Part::Scales => base + codes,
        Part::Biases => base + codes + params,
    };
    (start, k_len + v_len)
}

/// Writes the job's file under its temporary name; returns its size.
fn write(job: &Job) -> Result<u64, ExportError> {
    let (tensors, meta) = plan(job)?;
    let io_err = |source| ExportError::Io {
        path: job.tmp.clone(),
        source,
    };
    let file = File::create(&job.tmp).map_err(io_err)?;
    let mut w = BufWriter::with_capacity(1 << 20, file);
    let head = header(&tensors, &meta, job.tokens);
    w.write_all(&(head.len() as u64).to_le_bytes())
        .map_err(io_err)?;
    w.write_all(&head).map_err(io_err)?;
    let mut total = 8 + head.len() as u64;
    let tier = Tier::parse(&job.manifest.tier).unwrap_or(Tier::AsGiven);
    let dtype = DType::parse(&job.manifest.dtype).unwrap_or(DType::F16);
    // One layer's per-block payloads at a time (decoded for q2, else the stored bytes).
    let mut current: Option<(usize, Vec<Cow<'_, [u8]>>)> = None;
    for t in &tensors {
        match t.source {
            Source::Scalar(v) => w.write_all(&v.to_le_bytes()).map_err(io_err)?,
            Source::State(layer) => {
                let state = job
                    .blocks
                    .last()
                    .and_then(|(_, layers)| layers.get(layer)?.as_ref())
                    .ok_or_else(|| ExportError::Corrupt(format!("no state for layer {layer}")))?;
                w.write_all(state).map_err(io_err)?;
            }
            Source::Rows {
                layer,
                heads,
                role,
                part,
                row,
            } => {
                if current.as_ref().map(|(l, _)| *l) != Some(layer) {
                    current = Some((layer, layer_payloads(job, layer, tier)?));
                }
                let Some((_, payloads)) = &current else {
                    continue;
                };
                let Some(Layer::Attention { head_dim, .. } | Layer::Sliding { head_dim, .. }) =
                    job.manifest.layers.get(layer)
                else {
                    return Err(ExportError::Corrupt(format!(
                        "layer {layer} is not attention"
                    )));
                };
                let form = form(tier, dtype, *head_dim as usize)?;
                for h in 0..heads {
                    for ((tokens, _), data) in job.blocks.iter().zip(payloads) {
                        let t = *tokens as usize;
                        let (start, expected) = section(form, heads, t, role, part);
                        let at = start + h * t * row;
                        let slice = data
                            .get(at..at + t * row)
                            .filter(|_| data.len() == expected)
                            .ok_or_else(|| {
                                ExportError::Corrupt(format!(
                                    "layer {layer} of a block is {} bytes, expected {expected}",
                                    data.len()
                                ))
                            })?;
                        w.write_all(slice).map_err(io_err)?;
                    }
                }
            }
        }
        total += tensor_len(t, job.tokens);
    }
    w.flush().map_err(io_err)?;
    Ok(total)
}

/// Every block's payload of one attention layer, in the form [`section`] reads: as
/// stored, or decoded to the namespace's dtype for `q2` (whose keys are grouped over a
/// whole block, so rows cannot be picked out of the stored bytes).
fn layer_payloads(job: &Job, layer: usize, tier: Tier) -> Result<Vec<Cow<'_, [u8]>>, ExportError> {
    let mut out = Vec::with_capacity(job.blocks.len());
    for (tokens, layers) in &job.blocks {
        let data = layers
            .get(layer)
            .and_then(Option::as_ref)
            .ok_or_else(|| ExportError::Corrupt(format!("layer {layer} missing from a block")))?;
        out.push(if tier == Tier::Q2 {
            Cow::Owned(
                super::decode_layer(&job.manifest, layer, *tokens, data)
                    .map_err(ExportError::Prefix)?,
            )
        } else {
            Cow::Borrowed(&data[..])
        });
    }
    Ok(out)
}

#[cfg(test)]
#[path = "export_tests.rs"]
mod tests;
