//! Redis's `DUMP` payload: one value in the RDB object encoding, then the RDB version
//! (2 bytes, little-endian) and a CRC-64 of everything before it (8 bytes,
//! little-endian; see [`crate::util::crc64`]).
//!
//! ```text
//! +------+---------------------+-------------+-----------------+
//! | type | the value's body    | RDB version | CRC-64 (Jones)  |
//! | 1 B  | (per type, below)   | 2 B LE      | 8 B LE          |
//! +------+---------------------+-------------+-----------------+
//! ```
//!
//! Pion writes RDB version 10 (Redis 7.0) and picks each value's encoding as Redis
//! 7.0 does: a string as an integer or LZF-compressed text, a list as a quicklist of
//! listpacks split at `list-max-listpack-size`, a compact hash or sorted set as a
//! listpack, a small integer set as an intset, larger ones element by element, a
//! stream as its nodes' listpacks with its consumer groups. JSON documents are
//! RedisJSON's module payload; vector sets a module payload of Pion's own
//! ([`module`]). It reads every encoding Redis 7.0 still loads (ziplists, zipmaps,
//! linked lists, text scores, the first stream format) and, as a superset of Redis
//! 7.0, the payloads of newer Redis servers up to RDB version 12 for the types they
//! share (listpack sets, the third stream format, RedisJSON from Redis 8).
//!
//! Decoding never trusts the payload: every length is checked against the bytes
//! present, every compact encoding is walked in full (Redis's `sanitize-dump-payload
//! yes`, always), duplicates are refused, and nothing is reserved that the payload's
//! size cannot justify.

mod decode;
mod encode;
pub mod intset;
pub mod listpack;
pub mod module;
mod stream;
mod wire;
pub mod ziplist;
pub mod zipmap;

use super::{EncodingLimits, Value};
use crate::util::crc64::crc64;

/// The RDB version Pion writes (Redis 7.0's).
pub const RDB_VERSION: u16 = 10;

/// The newest RDB version Pion reads (Redis 8.2's). Redis 7.0 itself refuses payloads
/// newer than its own version 10.
pub const MAX_RDB_VERSION: u16 = 12;

/// RDB object types (the first byte of a payload).
pub mod types {
    /// A string.
    pub const STRING: u8 = 0;
    /// A list as a linked list of strings (before Redis 3.2).
    pub const LIST: u8 = 1;
    /// A set as a hash table.
    pub const SET: u8 = 2;
    /// A sorted set with text scores (before Redis 3.0).
    pub const ZSET: u8 = 3;
    /// A hash as a hash table.
    pub const HASH: u8 = 4;
    /// A sorted set with binary scores.
    pub const ZSET_2: u8 = 5;
    /// A module value without annotations (no longer loadable).
    pub const MODULE: u8 = 6;
    /// A module value.
    pub const MODULE_2: u8 = 7;
    /// A hash as a zipmap.
    pub const HASH_ZIPMAP: u8 = 9;
    /// A list as one ziplist.
    pub const LIST_ZIPLIST: u8 = 10;
    /// A set as an intset.
    pub const SET_INTSET: u8 = 11;
    /// A sorted set as a ziplist.
    pub const ZSET_ZIPLIST: u8 = 12;
    /// A hash as a ziplist.
    pub const HASH_ZIPLIST: u8 = 13;
    /// A list as a quicklist of ziplists.
    pub const LIST_QUICKLIST: u8 = 14;
    /// A stream (before Redis 7.0).
    pub const STREAM_LISTPACKS: u8 = 15;
    /// A hash as a listpack.
    pub const HASH_LISTPACK: u8 = 16;
    /// A sorted set as a listpack.
    pub const ZSET_LISTPACK: u8 = 17;
    /// A list as a quicklist of listpacks (or plain nodes).
    pub const LIST_QUICKLIST_2: u8 = 18;
    /// A stream with the Redis 7.0 counters.
    pub const STREAM_LISTPACKS_2: u8 = 19;
    /// A set as a listpack (Redis 7.2).
    pub const SET_LISTPACK: u8 = 20;
    /// A stream whose consumers have an active time (Redis 7.2).
    pub const STREAM_LISTPACKS_3: u8 = 21;
}

/// Why a payload was refused. The command layer turns each into Redis's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RdbError {
    /// Too short, a newer RDB version, or a checksum that does not match.
    Envelope,
    /// The body does not decode to a value (what was wrong, for the log).
    BadData(&'static str),
}

impl RdbError {
    pub(crate) fn bad(why: &'static str) -> RdbError {
        RdbError::BadData(why)
    }
}

/// How values are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DumpOptions {
    /// `rdbcompression`: LZF-compress strings longer than 20 bytes.
    pub compress: bool,
    /// `list-max-listpack-size`: how full a list's nodes get.
    pub list_fill: i64,
    /// `list-compress-depth`: nodes kept uncompressed at each end of a list.
    pub list_compress_depth: i64,
}

impl Default for DumpOptions {
    fn default() -> Self {
        DumpOptions {
            compress: true,
            list_fill: -2,
            list_compress_depth: 0,
        }
    }
}

/// How values are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadOptions {
    /// The thresholds that decide the encoding of what is restored.
    pub limits: EncodingLimits,
    /// The longest string an element may be (`proto-max-bulk-len`).
    pub max_string: usize,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            limits: EncodingLimits::default(),
            max_string: 512 * 1024 * 1024,
        }
    }
}

/// The `DUMP` payload of a value.
pub fn dump(value: &Value, opts: &DumpOptions) -> Vec<u8> {
    let mut w = wire::Writer::new(opts.compress);
    encode::value(value, &mut w, opts);
    let mut out = w.out;
    out.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = crc64(0, &out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// Checks a payload's version and checksum (Redis's `verifyDumpPayload`); returns the
/// body and its RDB version.
pub fn verify(payload: &[u8]) -> Result<(&[u8], u16), RdbError> {
    if payload.len() < 10 {
        return Err(RdbError::Envelope);
    }
    let (rest, crc) = payload.split_at(payload.len() - 8);
    let (body, version) = rest.split_at(rest.len() - 2);
    let version = u16::from_le_bytes([version[0], version[1]]);
    if version > MAX_RDB_VERSION {
        return Err(RdbError::Envelope);
    }
    let mut want = [0u8; 8];
    want.copy_from_slice(crc);
    if crc64(0, rest) != u64::from_le_bytes(want) {
        return Err(RdbError::Envelope);
    }
    Ok((body, version))
}

/// The value of a whole payload: checked ([`verify`]) and decoded.
pub fn restore(payload: &[u8], opts: &LoadOptions) -> Result<Value, RdbError> {
    let (body, _version) = verify(payload)?;
    load(body, opts)
}

/// Decodes a payload's body (without its version and checksum). Redis ignores bytes
/// after the value, and so does this.
pub fn load(body: &[u8], opts: &LoadOptions) -> Result<Value, RdbError> {
    let mut r = wire::Reader::new(body, opts.max_string);
    let value = decode::value(&mut r, opts)?;
    if value.is_empty_collection() {
        return Err(RdbError::bad("empty key"));
    }
    Ok(value)
}

#[cfg(test)]
mod tests;
