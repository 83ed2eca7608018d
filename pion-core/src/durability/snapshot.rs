//! The snapshot file format: every key of the keyspace as of one log sequence number,
//! written shard by shard, each section checksummed, so that recovery is "load the
//! snapshot, replay the log after its sequence number".
//!
//! ```text
//! file    = header section* end
//! header  = "PIONSNP1" seq:u64 created_ms:i64 databases:u32 crc:u32      (32 bytes)
//! section = 'S' shard:u32 keys:u32 len:u64 crc:u32 body[len]       (crc of the 17 bytes before, then the body)
//! library = 'L' len:u64 body[len] crc:u32                         (FUNCTION DUMP payload)
//! end     = 'E' sections:u32 keys:u64 crc:u32                            (crc of the 13 bytes before)
//! body    = entry*
//! entry   = db:u32 key:bytes deadline:i64 (i64::MIN: none) type:u8 value
//! value   = string: bytes | hash: n:u32 (field:bytes value:bytes)*
//!         | list: n:u32 bytes* | set: n:u32 bytes* | zset: n:u32 (member:bytes score:f64)*
//!         | vset: dim:u32 quant:u8 m:u32 projection_input:u32 (0: none) n:u32 velem*
//!               graph:bytes (the HNSW graph, labels as below; relinked if unusable)
//! velem   = name:bytes norm:f32 attr:(0 | 1 bytes) vector
//! vector  = f32: f32[dim] | int8: range:f32 codes:bytes | bin: u64[ceil(dim/64)]
//! bytes   = len:u32 byte[len]
//! ```
//!
//! A snapshot is written to a temporary file, fsynced, and renamed over its final
//! name; a crash at any point leaves the previous snapshot intact.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::keyspace::dump::{decode_entry, LoadedKey};
use crate::storage::{Open, SeqWriter, Storage};
use crate::util::codec::{
    crc, crc_extend, put_i64, put_u32, put_u64, DecodeError, Malformed, Reader,
};
use crate::value::EncodingLimits;

const MAGIC: &[u8; 8] = b"PIONSNP1";
/// The format name in decoding errors.
const FORMAT: &str = "snapshot";
const HEADER_LEN: usize = 32;

/// A section body written as it streams, with its length known first and its CRC32C
/// computed on the way (the prompt cache's, from the shared block buffers).
pub trait StreamedBody {
    /// Bytes [`write_to`](Self::write_to) will produce.
    fn len(&self) -> u64;
    /// Whether there is nothing to write (the section is left out).
    fn is_empty(&self) -> bool;
    /// Writes the body; returns its CRC32C.
    fn write_to(&self, out: &mut dyn Write) -> io::Result<u32>;
}

/// The file name of the snapshot taken at sequence number `seq`.
pub fn snapshot_name(seq: u64) -> String {
    format!("snapshot-{seq:020}.pion")
}

/// The sequence number a snapshot file name declares.
pub fn parse_snapshot_name(name: &str) -> Option<u64> {
    name.strip_prefix("snapshot-")?
        .strip_suffix(".pion")?
        .parse()
        .ok()
}

/// Snapshot files of a directory, oldest first.
pub fn list_snapshots(storage: &dyn Storage, dir: &Path) -> io::Result<Vec<(u64, PathBuf)>> {
    crate::storage::list_numbered(storage, dir, parse_snapshot_name)
}

/// Writes a snapshot: sections as the shards are dumped, then the end marker.
pub struct SnapshotWriter {
    storage: Arc<dyn Storage>,
    out: SeqWriter,
    tmp: PathBuf,
    dir: PathBuf,
    seq: u64,
    sections: u32,
    keys: u64,
    bytes: u64,
}

impl SnapshotWriter {
    /// Starts a snapshot of the state at log sequence number `seq`.
    pub fn create(
        storage: Arc<dyn Storage>,
        dir: &Path,
        seq: u64,
        created_ms: i64,
        databases: usize,
    ) -> io::Result<Self> {
        let tmp = dir.join("snapshot.tmp");
        let mut out = SeqWriter::new(storage.open(&tmp, Open::Create)?);
        let mut h = Vec::with_capacity(HEADER_LEN);
        h.extend_from_slice(MAGIC);
        put_u64(&mut h, seq);
        put_i64(&mut h, created_ms);
        put_u32(&mut h, databases as u32);
        let c = crc(&h);
        put_u32(&mut h, c);
        out.write_all(&h)?;
        Ok(SnapshotWriter {
            storage,
            out,
            tmp,
            dir: dir.to_path_buf(),
            seq,
            sections: 0,
            keys: 0,
            bytes: HEADER_LEN as u64,
        })
    }

    /// Writes one shard's dumped keys.
    pub fn section(&mut self, shard: usize, keys: usize, body: &[u8]) -> io::Result<()> {
        let mut h = Vec::with_capacity(21);
        h.push(b'S');
        put_u32(&mut h, shard as u32);
        put_u32(&mut h, keys as u32);
        put_u64(&mut h, body.len() as u64);
        let c = crc_extend(crc(&h), body);
        put_u32(&mut h, c);
        self.out.write_all(&h)?;
        self.out.write_all(body)?;
        self.sections += 1;
        self.keys += keys as u64;
        self.bytes += (h.len() + body.len()) as u64;
        Ok(())
    }

    /// Writes the prompt cache (`P` section: tag, body length, body, CRC32C of the body
    /// after it, so the body streams from the shared block buffers).
    pub fn prefix_section(&mut self, export: &dyn StreamedBody) -> io::Result<()> {
        if export.is_empty() {
            return Ok(());
        }
        let len = export.len();
        let mut h = Vec::with_capacity(9);
        h.push(b'P');
        put_u64(&mut h, len);
        self.out.write_all(&h)?;
        let c = export.write_to(&mut self.out)?;
        self.out.write_all(&c.to_le_bytes())?;
        self.bytes += 9 + len + 4;
        Ok(())
    }

    /// Writes the search indexes (`F` section); the body is
    /// `crate::index::persist`'s format.
    pub fn search_section(&mut self, body: &[u8]) -> io::Result<()> {
        self.tagged_section(b'F', body)
    }

    /// Writes the function libraries (`L` section); the body is a `FUNCTION DUMP`
    /// payload.
    pub fn functions_section(&mut self, body: &[u8]) -> io::Result<()> {
        self.tagged_section(b'L', body)
    }

    /// Writes a section made of a tag, the body length, the body and the CRC32C of the
    /// body (nothing for an empty body).
    fn tagged_section(&mut self, tag: u8, body: &[u8]) -> io::Result<()> {
        if body.is_empty() {
            return Ok(());
        }
        let mut h = Vec::with_capacity(9);
        h.push(tag);
        put_u64(&mut h, body.len() as u64);
        self.out.write_all(&h)?;
        self.out.write_all(body)?;
        self.out.write_all(&crc(body).to_le_bytes())?;
        self.bytes += 9 + body.len() as u64 + 4;
        Ok(())
    }

    /// Ends the file, makes it durable and gives it its final name; returns the path,
    /// the number of keys and the file size.
    pub fn finish(mut self) -> io::Result<(PathBuf, u64, u64)> {
        let mut end = Vec::with_capacity(17);
        end.push(b'E');
        put_u32(&mut end, self.sections);
        put_u64(&mut end, self.keys);
        let c = crc(&end);
        put_u32(&mut end, c);
        self.out.write_all(&end)?;
        self.bytes += end.len() as u64;
        drop(self.out.finish()?);
        let path = self.dir.join(snapshot_name(self.seq));
        self.storage.rename(&self.tmp, &path)?;
        self.storage.sync_dir(&self.dir)?;
        Ok((path, self.keys, self.bytes))
    }
}

/// Reads the body of a tagged section (length, body, CRC32C of the body) after its
/// tag, checking the checksum and that the section appears once.
fn tagged_body(
    r: &mut Reader<'_>,
    seen: bool,
    what: &str,
    at: usize,
) -> Result<std::ops::Range<usize>, DecodeError> {
    let bad = |msg: &str| DecodeError::new(FORMAT, format!("{what} section {msg}")).at(at);
    let len = r.u64().map_err(|_| bad("truncated"))?;
    let start = r.position();
    let body = usize::try_from(len)
        .ok()
        .and_then(|l| r.take(l).ok())
        .ok_or_else(|| bad("runs past the end"))?;
    let c = r.u32().map_err(|_| bad("truncated"))?;
    if crc(body) != c || seen {
        return Err(bad("checksum mismatch"));
    }
    Ok(start..start + body.len())
}

/// What a snapshot file holds, read and checked in full.
#[derive(Debug)]
pub struct SnapshotContents {
    /// The log sequence number it covers.
    pub seq: u64,
    /// When it was taken (Unix ms).
    pub created_ms: i64,
    /// Databases of the server that wrote it.
    pub databases: usize,
    /// Section bodies with their key counts, in file order.
    sections: Vec<(usize, std::ops::Range<usize>)>,
    /// The prompt cache's section body, if the snapshot has one.
    prefix: Option<std::ops::Range<usize>>,
    /// The search-index definitions' section body, if any.
    search: Option<std::ops::Range<usize>>,
    /// The function libraries' section body, if any.
    libraries: Option<std::ops::Range<usize>>,
    bytes: Vec<u8>,
    /// Keys in the file.
    pub keys: u64,
}

impl SnapshotContents {
    /// Checks a whole snapshot file (header, every section checksum, end marker).
    pub fn parse(bytes: Vec<u8>) -> Result<SnapshotContents, DecodeError> {
        let mut r = Reader::new(&bytes);
        let bad = |what: &'static str, at: usize| DecodeError::new(FORMAT, what).at(at);
        let head = r.take(HEADER_LEN).map_err(|_| bad("truncated header", 0))?;
        if &head[..8] != MAGIC {
            return Err(bad("not a Pion snapshot (bad magic)", 0));
        }
        let stored = u32::from_le_bytes([head[28], head[29], head[30], head[31]]);
        if crc(&head[..28]) != stored {
            return Err(bad("header checksum mismatch", 0));
        }
        let mut hr = Reader::new(&head[8..28]);
        let (seq, created_ms, databases) = match (hr.u64(), hr.i64(), hr.u32()) {
            (Ok(s), Ok(c), Ok(d)) => (s, c, d as usize),
            _ => return Err(bad("truncated header", 0)),
        };
        let mut sections = Vec::new();
        let mut prefix = None;
        let mut search = None;
        let mut libraries = None;
        let mut keys = 0u64;
        loop {
            let at = r.position();
            match r
                .u8()
                .map_err(|_| bad("missing end marker (file cut short)", at))?
            {
                b'S' => {
                    let (_, n, len, c) =
                        (|| Ok::<_, Malformed>((r.u32()?, r.u32()?, r.u64()?, r.u32()?)))()
                            .map_err(|_| bad("truncated section header", at))?;
                    let start = r.position();
                    let body = usize::try_from(len)
                        .ok()
                        .and_then(|l| r.take(l).ok())
                        .ok_or_else(|| bad("section runs past the end of the file", at))?;
                    if crc_extend(crc(&bytes[at..at + 17]), body) != c {
                        return Err(bad("section checksum mismatch", at));
                    }
                    sections.push((n as usize, start..start + body.len()));
                    keys += u64::from(n);
                }
                b'P' => {
                    let len = r
                        .u64()
                        .map_err(|_| bad("truncated prompt-cache section", at))?;
                    let start = r.position();
                    let body = usize::try_from(len)
                        .ok()
                        .and_then(|l| r.take(l).ok())
                        .ok_or_else(|| bad("prompt-cache section runs past the end", at))?;
                    let c = r
                        .u32()
                        .map_err(|_| bad("truncated prompt-cache section", at))?;
                    if crc(body) != c || prefix.is_some() {
                        return Err(bad("prompt-cache section checksum mismatch", at));
                    }
                    prefix = Some(start..start + body.len());
                }
                b'F' => search = Some(tagged_body(&mut r, search.is_some(), "search-index", at)?),
                b'L' => libraries = Some(tagged_body(&mut r, libraries.is_some(), "library", at)?),
                b'E' => {
                    let parsed = (|| Ok::<_, Malformed>((r.u32()?, r.u64()?, r.u32()?)))()
                        .map_err(|_| bad("truncated end marker", at))?;
                    let (n_sections, n_keys, c) = parsed;
                    if crc(&bytes[at..at + 13]) != c
                        || n_sections as usize != sections.len()
                        || n_keys != keys
                    {
                        return Err(bad("end marker does not match the sections", at));
                    }
                    if r.remaining() != 0 {
                        return Err(bad("bytes after the end marker", r.position()));
                    }
                    break;
                }
                _ => return Err(bad("unknown section tag", at)),
            }
        }
        Ok(SnapshotContents {
            seq,
            created_ms,
            databases,
            sections,
            prefix,
            search,
            libraries,
            bytes,
            keys,
        })
    }

    /// The prompt cache's section body, if any.
    pub fn prefix_body(&self) -> Option<&[u8]> {
        self.prefix.clone().map(|r| &self.bytes[r])
    }

    /// The search indexes' section body, if any.
    pub fn search_body(&self) -> Option<&[u8]> {
        self.search.clone().map(|r| &self.bytes[r])
    }

    /// The function libraries' section body (a `FUNCTION DUMP` payload), if any.
    pub fn functions_body(&self) -> Option<&[u8]> {
        self.libraries.clone().map(|r| &self.bytes[r])
    }

    /// Decodes every key, calling `each` in file order.
    pub fn for_each_key(
        &self,
        limits: &EncodingLimits,
        mut each: impl FnMut(LoadedKey),
    ) -> Result<(), DecodeError> {
        for (n, range) in &self.sections {
            let mut r = Reader::new(&self.bytes[range.clone()]);
            for _ in 0..*n {
                let key = decode_entry(&mut r, limits).map_err(|e| {
                    DecodeError::new(FORMAT, format!("bad key in section: {}", e.0))
                        .at(range.start + r.position())
                })?;
                if key.db >= self.databases {
                    return Err(DecodeError::new(
                        FORMAT,
                        format!("key in database {} of {}", key.db, self.databases),
                    )
                    .at(range.start + r.position()));
                }
                each(key);
            }
            if r.remaining() != 0 {
                return Err(DecodeError::new(FORMAT, "trailing bytes in section")
                    .at(range.start + r.position()));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keyspace::dump::encode_entry;
    use crate::keyspace::{DetachedEntry, Entry};
    use crate::value::{HashValue, ListValue, SetValue, Value, ZSetValue};

    fn entry(value: Value, deadline: Option<i64>) -> DetachedEntry {
        DetachedEntry {
            entry: Entry::new(value, 0),
            deadline,
        }
    }

    fn sample() -> Vec<(usize, Vec<u8>, DetachedEntry)> {
        let limits = EncodingLimits::default();
        let mut h = HashValue::new();
        h.insert(b"f".to_vec(), b"v".to_vec(), &limits);
        let mut l = ListValue::new();
        l.push(crate::value::list::End::Right, b"a".to_vec());
        l.push(crate::value::list::End::Right, b"".to_vec());
        let mut s = SetValue::for_first_member(b"7");
        s.insert(b"7", &limits);
        s.insert(b"x", &limits);
        let mut z = ZSetValue::new();
        z.insert(b"m", f64::NEG_INFINITY, &limits);
        z.insert(b"n", 1.5, &limits);
        vec![
            (
                0,
                b"s".to_vec(),
                entry(Value::string(b"\x00bin".to_vec()), Some(123)),
            ),
            (1, b"h".to_vec(), entry(Value::Hash(h), None)),
            (2, b"l".to_vec(), entry(Value::List(l), None)),
            (0, b"set".to_vec(), entry(Value::Set(s), Some(i64::MAX - 1))),
            (3, b"z".to_vec(), entry(Value::ZSet(z), None)),
        ]
    }

    fn write(dir: &Path) -> PathBuf {
        let mut w =
            SnapshotWriter::create(crate::storage::local(), dir, 42, 1000, 4).expect("create");
        let mut body = Vec::new();
        let keys = sample();
        for (db, k, e) in &keys {
            encode_entry(*db, k, &e.entry, e.deadline, &mut body);
        }
        w.section(5, keys.len(), &body).expect("section");
        w.section(6, 0, &[]).expect("section");
        w.finish().expect("finish").0
    }

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("pion-snap-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("temp dir");
        d
    }

    #[test]
    fn every_type_round_trips() {
        let dir = tmp("roundtrip");
        let path = write(&dir);
        assert_eq!(
            list_snapshots(&crate::storage::Local, &dir).expect("list"),
            vec![(42, path.clone())]
        );
        let snap = SnapshotContents::parse(std::fs::read(&path).expect("read")).expect("parse");
        assert_eq!(
            (snap.seq, snap.created_ms, snap.databases, snap.keys),
            (42, 1000, 4, 5)
        );
        let mut got = Vec::new();
        snap.for_each_key(&EncodingLimits::default(), |k| got.push(k))
            .expect("decode");
        let want: Vec<LoadedKey> = sample()
            .into_iter()
            .map(|(db, key, e)| LoadedKey {
                db,
                key,
                deadline: e.deadline,
                value: e.entry.value,
            })
            .collect();
        assert_eq!(got.len(), want.len());
        for (g, w) in got.iter().zip(&want) {
            assert_eq!((g.db, &g.key, g.deadline), (w.db, &w.key, w.deadline));
            assert_eq!(g.value.type_name(), w.value.type_name());
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn any_damage_is_detected() {
        let dir = tmp("damage");
        let bytes = std::fs::read(write(&dir)).expect("read");
        for cut in 0..bytes.len() {
            assert!(
                SnapshotContents::parse(bytes[..cut].to_vec()).is_err(),
                "cut {cut}"
            );
        }
        for pos in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[pos] ^= 0x10;
            assert!(SnapshotContents::parse(bad).is_err(), "flip at {pos}");
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
