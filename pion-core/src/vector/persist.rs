//! The on-disk form of an index, so a graph survives a restart without a rebuild.
//!
//! Little-endian, in order:
//!
//! ```text
//! magic "PIONVIX1" | u32 version (2)
//! params: u32 dim | u8 metric | u8 algorithm | u8 quantization | u8 flags (bit 0 exact
//!         rows, bit 1 unit inputs)
//!         u32 M | u32 ef_construction | u32 ef_runtime | f32 epsilon | u64 initial_cap
//! u64 n | n × (u64 label, dim × f32)          -- FLAT vectors, or the HNSW pending tail
//! HNSW only:
//!   u64 slots | u64 entry (slot << 8 | level, or u64::MAX)
//!   slots × ( u64 label | u8 flags | u8 level | f32 norm | row | exact
//!             | (level+1) × (u32 n, n × u32) )
//!   row: f32 × dim (None) | f32 scale, i8 × dim (Int8) | u64 × ⌈dim/64⌉ (Binary)
//!   exact: f32 × dim with exact rows, else nothing
//! u32 CRC32C of everything above
//! ```
//!
//! Version 1 (no exact rows byte, no exact rows) is still read.
//!
//! Reading checks the magic, version and checksum first, then every count against the
//! bytes left and every link against the slot count and levels, so corrupt input is an
//! error rather than a panic or a huge allocation.

use std::sync::atomic::Ordering::Relaxed;

use super::graph::{Codes, Graph, DEAD, FREE, IN_FLIGHT};
use super::hnsw::Hnsw;
use super::pending::Pending;
use super::{quant, Algorithm, IndexParams, Inner, Metric, Quantization, VectorIndex};
use crate::util::codec::DecodeError;

const MAGIC: &[u8; 8] = b"PIONVIX1";
const VERSION: u32 = 2;
/// Largest dimension accepted when loading.
const MAX_DIM: usize = 1 << 16;
/// Highest layer accepted when loading.
const MAX_LEVEL: usize = 32;

fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_f32(out: &mut Vec<u8>, v: f32) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_row(out: &mut Vec<u8>, label: u64, v: &[f32]) {
    put_u64(out, label);
    for &x in v {
        put_f32(out, x);
    }
}

/// Whether the index keeps exact rows (what the file says, not what was asked).
fn exact_rows(idx: &VectorIndex) -> bool {
    match &idx.inner {
        Inner::Hnsw(h) => h.graph.read().exact.is_some(),
        Inner::Flat(_) => false,
    }
}

/// Serialises `idx` onto `out`.
pub(crate) fn write(idx: &VectorIndex, out: &mut Vec<u8>) {
    let start = out.len();
    let p = &idx.params;
    out.extend_from_slice(MAGIC);
    put_u32(out, VERSION);
    put_u32(out, p.dim as u32);
    out.push(match p.metric {
        Metric::L2 => 0,
        Metric::Cosine => 1,
        Metric::Ip => 2,
    });
    out.push(match p.algorithm {
        Algorithm::Flat => 0,
        Algorithm::Hnsw => 1,
    });
    out.push(match p.quantization {
        Quantization::None => 0,
        Quantization::Int8 => 1,
        Quantization::Binary => 2,
    });
    // Bit 0: exact rows; bit 1: unit inputs (version 2 wrote only bit 0).
    out.push(u8::from(exact_rows(idx)) | u8::from(p.unit_inputs) << 1);
    put_u32(out, p.m as u32);
    put_u32(out, p.ef_construction as u32);
    put_u32(out, p.ef_runtime as u32);
    put_f32(out, p.epsilon);
    put_u64(out, p.initial_cap as u64);
    match &idx.inner {
        Inner::Flat(f) => {
            let entries = f.entries();
            put_u64(out, entries.len() as u64);
            for (l, v) in entries {
                put_row(out, l, &v);
            }
        }
        Inner::Hnsw(h) => write_hnsw(h, out),
    }
    let crc = crc32c::crc32c(&out[start..]);
    put_u32(out, crc);
}

fn write_hnsw(h: &Hnsw, out: &mut Vec<u8>) {
    let pend = h.pending.read();
    let g = h.graph.read();
    let dim = h.params.dim;
    put_u64(out, pend.len() as u64);
    for (r, &l) in pend.labels.iter().enumerate() {
        put_row(out, l, &pend.data[r * dim..(r + 1) * dim]);
    }
    put_u64(out, g.slots() as u64);
    put_u64(
        out,
        g.entry()
            .map_or(u64::MAX, |(s, l)| (s as u64) << 8 | l as u64),
    );
    let words = quant::binary_words(dim);
    for s in 0..g.slots() {
        put_u64(out, g.labels[s]);
        let mut flags = g.flags[s].load(Relaxed);
        if flags & IN_FLIGHT != 0 {
            // Its label is in the pending tail written above.
            flags = (flags & !IN_FLIGHT) | DEAD;
        }
        out.push(flags);
        out.push(g.levels[s]);
        put_f32(out, g.norms[s]);
        match &g.codes {
            Codes::F32(c) => c[s * dim..(s + 1) * dim]
                .iter()
                .for_each(|&x| put_f32(out, x)),
            Codes::I8 { codes, scales } => {
                put_f32(out, scales[s]);
                out.extend(codes[s * dim..(s + 1) * dim].iter().map(|&c| c as u8));
            }
            Codes::Bin(c) => c[s * words..(s + 1) * words]
                .iter()
                .for_each(|&w| put_u64(out, w)),
        }
        if let Some(exact) = &g.exact {
            let zeros = vec![0.0; dim];
            let row = exact.row(s as u32).unwrap_or(&zeros);
            row.iter().for_each(|&x| put_f32(out, x));
        }
        for l in 0..=g.levels[s] as usize {
            let ids = g.neighbours(s as u32, l);
            put_u32(out, ids.len() as u32);
            ids.iter().for_each(|&x| put_u32(out, x));
        }
    }
}

/// A decoding error in the vector index format.
fn bad(what: impl Into<std::borrow::Cow<'static, str>>) -> DecodeError {
    DecodeError::new("vector index", what)
}

/// A bounds-checked cursor.
struct Reader<'a> {
    b: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.b.len())
            .ok_or_else(|| bad("truncated").at(self.pos))?;
        let s = &self.b[self.pos..end];
        self.pos = end;
        Ok(s)
    }

    fn left(&self) -> usize {
        self.b.len() - self.pos
    }

    fn u8(&mut self) -> Result<u8, DecodeError> {
        Ok(self.take(1)?[0])
    }

    fn u32(&mut self) -> Result<u32, DecodeError> {
        let mut a = [0u8; 4];
        a.copy_from_slice(self.take(4)?);
        Ok(u32::from_le_bytes(a))
    }

    fn u64(&mut self) -> Result<u64, DecodeError> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(a))
    }

    fn f32(&mut self) -> Result<f32, DecodeError> {
        Ok(f32::from_bits(self.u32()?))
    }

    /// A count whose items need at least `min_size` bytes each.
    fn count(&mut self, min_size: usize) -> Result<usize, DecodeError> {
        let n = self.u64()?;
        let n = usize::try_from(n).map_err(|_| bad("bad count").at(self.pos))?;
        if n.checked_mul(min_size.max(1))
            .is_none_or(|b| b > self.left())
        {
            return Err(bad("count larger than the input").at(self.pos));
        }
        Ok(n)
    }

    fn f32s(&mut self, n: usize) -> Result<Vec<f32>, DecodeError> {
        let raw = self.take(
            n.checked_mul(4)
                .ok_or_else(|| bad("bad size").at(self.pos))?,
        )?;
        Ok(raw
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    }
}

/// Parses what `write` produced.
pub(crate) fn read(bytes: &[u8]) -> Result<VectorIndex, DecodeError> {
    if bytes.len() < MAGIC.len() + 8 || &bytes[..MAGIC.len()] != MAGIC {
        return Err(bad("bad magic"));
    }
    let (body, tail) = bytes.split_at(bytes.len() - 4);
    let crc = u32::from_le_bytes([tail[0], tail[1], tail[2], tail[3]]);
    if crc32c::crc32c(body) != crc {
        return Err(bad("checksum mismatch"));
    }
    let mut r = Reader { b: body, pos: 8 };
    let version = r.u32()?;
    if version != 1 && version != VERSION {
        return Err(bad(format!("unknown version {version}")));
    }
    let dim = r.u32()? as usize;
    if dim == 0 || dim > MAX_DIM {
        return Err(bad("bad dimension"));
    }
    let metric = match r.u8()? {
        0 => Metric::L2,
        1 => Metric::Cosine,
        2 => Metric::Ip,
        _ => return Err(bad("bad metric")),
    };
    let algorithm = match r.u8()? {
        0 => Algorithm::Flat,
        1 => Algorithm::Hnsw,
        _ => return Err(bad("bad algorithm")),
    };
    let quantization = match r.u8()? {
        0 => Quantization::None,
        1 => Quantization::Int8,
        2 => Quantization::Binary,
        _ => return Err(bad("bad quantization")),
    };
    let flags = match version {
        1 => 0,
        _ => r.u8()?,
    };
    if flags > 3 {
        return Err(bad("bad exact rows flag"));
    }
    let exact_rows = flags & 1 == 1;
    if exact_rows && (algorithm != Algorithm::Hnsw || quantization == Quantization::None) {
        return Err(bad("bad exact rows flag"));
    }
    let unit_inputs = flags & 2 == 2;
    let m = r.u32()? as usize;
    if !(2..=255).contains(&m) {
        return Err(bad("bad M"));
    }
    let params = IndexParams {
        dim,
        metric,
        algorithm,
        quantization,
        m,
        ef_construction: r.u32()? as usize,
        ef_runtime: r.u32()? as usize,
        epsilon: r.f32()?,
        initial_cap: 0,
        exact_rows,
        unit_inputs,
    };
    let _initial_cap = r.u64()?;
    let n = r.count(8 + 4 * dim)?;
    let mut rows = Vec::with_capacity(n);
    for _ in 0..n {
        let l = r.u64()?;
        rows.push((l, r.f32s(dim)?));
    }
    let idx = match algorithm {
        Algorithm::Flat => {
            let idx = VectorIndex::new(params);
            if let Inner::Flat(f) = &idx.inner {
                for (l, v) in rows {
                    f.upsert(l, &v);
                }
            }
            idx
        }
        Algorithm::Hnsw => {
            let mut pend = Pending::new(params.quantization == Quantization::Int8, params.metric);
            for (l, v) in rows {
                Hnsw::restore_pending(&mut pend, dim, l, &v);
            }
            let graph = read_graph(&mut r, &params)?;
            VectorIndex {
                params: params.clone(),
                inner: Inner::Hnsw(Box::new(Hnsw::from_parts(params, pend, graph))),
            }
        }
    };
    if r.left() != 0 {
        return Err(bad("trailing bytes"));
    }
    Ok(idx)
}

fn read_graph(r: &mut Reader<'_>, p: &IndexParams) -> Result<Graph, DecodeError> {
    let dim = p.dim;
    let words = quant::binary_words(dim);
    let row = match p.quantization {
        Quantization::None => 4 * dim,
        Quantization::Int8 => 4 + dim,
        Quantization::Binary => 8 * words,
    } + if p.exact_rows { 4 * dim } else { 0 };
    let slots = r.count(8 + 1 + 1 + 4 + row + 4)?;
    if slots > u32::MAX as usize / 2 {
        return Err(bad("too many slots"));
    }
    let entry = r.u64()?;
    let mut g = Graph::new(
        dim,
        p.metric,
        p.quantization,
        p.m,
        p.ef_construction,
        slots,
        p.exact_rows,
    );
    g.unit_inputs = p.unit_inputs;
    let (m, m0) = (g.m, g.m0);
    struct Slot {
        label: u64,
        flags: u8,
        level: usize,
        norm: f32,
        f: Vec<f32>,
        i: (Vec<i8>, f32),
        b: Vec<u64>,
        exact: Vec<f32>,
        lists: Vec<Vec<u32>>,
    }
    let mut all = Vec::with_capacity(slots);
    for _ in 0..slots {
        let label = r.u64()?;
        let flags = r.u8()?;
        if flags & !(DEAD | FREE) != 0 {
            return Err(bad("bad slot flags"));
        }
        let level = r.u8()? as usize;
        if level > MAX_LEVEL {
            return Err(bad("bad level"));
        }
        let norm = r.f32()?;
        let mut s = Slot {
            label,
            flags,
            level,
            norm,
            f: Vec::new(),
            i: (Vec::new(), 0.0),
            b: Vec::new(),
            exact: Vec::new(),
            lists: Vec::with_capacity(level + 1),
        };
        match p.quantization {
            Quantization::None => s.f = r.f32s(dim)?,
            Quantization::Int8 => {
                let scale = r.f32()?;
                s.i = (r.take(dim)?.iter().map(|&c| c as i8).collect(), scale);
            }
            Quantization::Binary => {
                for _ in 0..words {
                    s.b.push(r.u64()?);
                }
            }
        }
        if p.exact_rows {
            s.exact = r.f32s(dim)?;
        }
        for l in 0..=level {
            let n = r.u32()? as usize;
            if n > if l == 0 { m0 } else { m } {
                return Err(bad("list too long"));
            }
            let mut ids = Vec::with_capacity(n);
            for _ in 0..n {
                ids.push(r.u32()?);
            }
            s.lists.push(ids);
        }
        all.push(s);
    }
    for s in &all {
        for (l, ids) in s.lists.iter().enumerate() {
            if ids
                .iter()
                .any(|&x| x as usize >= slots || all[x as usize].level < l)
            {
                return Err(bad("bad link"));
            }
        }
    }
    let entry = if entry == u64::MAX {
        None
    } else {
        let (s, l) = ((entry >> 8) as usize, (entry & 0xff) as usize);
        if s >= slots || all[s].level != l {
            return Err(bad("bad entry point"));
        }
        Some((s as u32, l))
    };
    for s in &all {
        g.push_raw(
            s.label,
            s.flags,
            s.level,
            s.norm,
            &s.f,
            (&s.i.0, s.i.1),
            &s.b,
            &s.exact,
            &s.lists,
        );
    }
    g.rebuild_free();
    g.set_entry(entry);
    Ok(g)
}
