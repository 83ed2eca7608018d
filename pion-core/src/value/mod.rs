//! Redis values: the five core types, streams, vector sets, JSON documents and
//! suggestion dictionaries, their encodings and their memory estimate.
//!
//! Small collections keep Redis's compact encodings (insertion-ordered `listpack`,
//! sorted `intset`) because clients observe them: `HGETALL` on a small hash returns
//! fields in insertion order, `SMEMBERS` of an intset is sorted, and `OBJECT ENCODING`
//! names the encoding. Large ones switch to hash tables at Redis's thresholds.

pub mod hash;
pub mod intset;
pub mod json;
pub mod list;
pub mod packed;
pub mod rdb;
pub mod set;
pub mod stream;
pub mod string;
pub mod suggest;
pub mod vset;
pub mod zset;

pub use hash::HashValue;
pub use json::JsonValue;
pub use list::ListValue;
pub use set::SetValue;
pub use stream::StreamValue;
pub use string::StrValue;
pub use suggest::SuggestionsValue;
pub use vset::VectorSetValue;
pub use zset::ZSetValue;

use crate::error::{OpError, OpResult};

/// Thresholds at which compact encodings convert to their large forms
/// (`hash-max-listpack-entries` and friends).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EncodingLimits {
    /// `hash-max-listpack-entries`.
    pub hash_max_listpack_entries: usize,
    /// `hash-max-listpack-value`.
    pub hash_max_listpack_value: usize,
    /// `set-max-intset-entries`.
    pub set_max_intset_entries: usize,
    /// `zset-max-listpack-entries`.
    pub zset_max_listpack_entries: usize,
    /// `zset-max-listpack-value`.
    pub zset_max_listpack_value: usize,
    /// `stream-node-max-bytes`.
    pub stream_node_max_bytes: usize,
    /// `stream-node-max-entries`.
    pub stream_node_max_entries: usize,
}

impl EncodingLimits {
    /// The node limits of streams.
    pub fn stream_nodes(&self) -> stream::NodeLimits {
        stream::NodeLimits {
            max_entries: self.stream_node_max_entries,
            max_bytes: self.stream_node_max_bytes,
        }
    }
}

impl Default for EncodingLimits {
    fn default() -> Self {
        EncodingLimits {
            hash_max_listpack_entries: 512,
            hash_max_listpack_value: 64,
            set_max_intset_entries: 512,
            zset_max_listpack_entries: 128,
            zset_max_listpack_value: 64,
            stream_node_max_bytes: 4096,
            stream_node_max_entries: 100,
        }
    }
}

/// A value stored under a key.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A binary-safe string.
    Str(StrValue),
    /// A hash of fields to values.
    Hash(HashValue),
    /// A list.
    List(ListValue),
    /// A set of distinct members.
    Set(SetValue),
    /// A sorted set.
    ZSet(ZSetValue),
    /// A Redis 8 vector set (boxed, like hashes).
    VectorSet(Box<VectorSetValue>),
    /// A stream with its consumer groups (boxed, like hashes).
    Stream(Box<StreamValue>),
    /// A RedisJSON document (boxed, like hashes).
    Json(Box<JsonValue>),
    /// A RediSearch suggestion dictionary (`FT.SUGADD`; boxed, like hashes).
    Suggestions(Box<SuggestionsValue>),
}

/// Elements sampled by the memory estimate unless asked otherwise (Redis's default).
pub const DEFAULT_SAMPLES: usize = 5;

/// Fixed per-key overhead counted by the memory estimate (dict entry, object header).
pub const ENTRY_OVERHEAD: usize = 56;

impl Value {
    /// A string value from bytes, choosing the encoding Redis would.
    pub fn string(bytes: impl Into<Vec<u8>>) -> Value {
        Value::Str(StrValue::new(bytes.into()))
    }

    /// The name `TYPE` reports.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Str(_) => "string",
            Value::Hash(_) => "hash",
            Value::List(_) => "list",
            Value::Set(_) => "set",
            Value::ZSet(_) => "zset",
            Value::VectorSet(_) => "vectorset",
            Value::Stream(_) => "stream",
            Value::Json(_) => "ReJSON-RL",
            Value::Suggestions(_) => "trietype0",
        }
    }

    /// The name `OBJECT ENCODING` reports.
    pub fn encoding(&self) -> &'static str {
        match self {
            Value::Str(s) => s.encoding(),
            Value::Hash(h) => h.encoding(),
            Value::List(_) => "quicklist",
            Value::Set(s) => s.encoding(),
            Value::ZSet(z) => z.encoding(),
            // Redis reports module types as `raw`.
            Value::VectorSet(_) | Value::Json(_) | Value::Suggestions(_) => "raw",
            Value::Stream(_) => "stream",
        }
    }

    /// Whether this is a collection with no elements left (Redis deletes such keys).
    pub fn is_empty_collection(&self) -> bool {
        match self {
            Value::Str(_) => false,
            Value::Hash(h) => h.is_empty(),
            Value::List(l) => l.is_empty(),
            Value::Set(s) => s.is_empty(),
            Value::ZSet(z) => z.is_empty(),
            Value::VectorSet(v) => v.is_empty(),
            Value::Json(_) => false,
            // A dictionary stays when emptied, as RediSearch's does.
            Value::Suggestions(_) => false,
            // An empty stream stays: its last id and groups still matter.
            Value::Stream(_) => false,
        }
    }

    /// Estimated memory used by this value in bytes, cheaply: collections extrapolate
    /// from a sample of their first elements, as Redis's `MEMORY USAGE` does.
    pub fn mem_usage(&self) -> usize {
        self.mem_usage_sampled(DEFAULT_SAMPLES)
    }

    /// [`mem_usage`](Self::mem_usage) with `samples` elements sampled (`usize::MAX`:
    /// every element, as `MEMORY USAGE … SAMPLES 0` asks).
    pub fn mem_usage_sampled(&self, samples: usize) -> usize {
        ENTRY_OVERHEAD
            + match self {
                Value::Str(s) => s.mem_usage(),
                Value::Hash(h) => h.mem_usage(samples),
                Value::List(l) => l.mem_usage(samples),
                Value::Set(s) => s.mem_usage(samples),
                Value::ZSet(z) => z.mem_usage(samples),
                Value::VectorSet(v) => v.mem_usage(),
                Value::Stream(s) => s.mem_usage(samples),
                Value::Json(j) => j.mem_usage(),
                Value::Suggestions(s) => s.mem_usage(),
            }
    }

    /// The string inside, or `WRONGTYPE`.
    pub fn as_str(&self) -> OpResult<&StrValue> {
        match self {
            Value::Str(s) => Ok(s),
            _ => Err(OpError::WrongType),
        }
    }

    /// The hash inside, or `WRONGTYPE`.
    pub fn as_hash(&self) -> OpResult<&HashValue> {
        match self {
            Value::Hash(h) => Ok(h),
            _ => Err(OpError::WrongType),
        }
    }

    /// The hash inside, mutably, or `WRONGTYPE`.
    pub fn as_hash_mut(&mut self) -> OpResult<&mut HashValue> {
        match self {
            Value::Hash(h) => Ok(h),
            _ => Err(OpError::WrongType),
        }
    }

    /// The list inside, or `WRONGTYPE`.
    pub fn as_list(&self) -> OpResult<&ListValue> {
        match self {
            Value::List(l) => Ok(l),
            _ => Err(OpError::WrongType),
        }
    }

    /// The list inside, mutably, or `WRONGTYPE`.
    pub fn as_list_mut(&mut self) -> OpResult<&mut ListValue> {
        match self {
            Value::List(l) => Ok(l),
            _ => Err(OpError::WrongType),
        }
    }

    /// The set inside, or `WRONGTYPE`.
    pub fn as_set(&self) -> OpResult<&SetValue> {
        match self {
            Value::Set(s) => Ok(s),
            _ => Err(OpError::WrongType),
        }
    }

    /// The set inside, mutably, or `WRONGTYPE`.
    pub fn as_set_mut(&mut self) -> OpResult<&mut SetValue> {
        match self {
            Value::Set(s) => Ok(s),
            _ => Err(OpError::WrongType),
        }
    }

    /// The sorted set inside, or `WRONGTYPE`.
    pub fn as_zset(&self) -> OpResult<&ZSetValue> {
        match self {
            Value::ZSet(z) => Ok(z),
            _ => Err(OpError::WrongType),
        }
    }

    /// The vector set inside, or `WRONGTYPE`.
    pub fn as_vset(&self) -> OpResult<&VectorSetValue> {
        match self {
            Value::VectorSet(v) => Ok(v),
            _ => Err(OpError::WrongType),
        }
    }

    /// The vector set inside, mutably, or `WRONGTYPE`.
    pub fn as_vset_mut(&mut self) -> OpResult<&mut VectorSetValue> {
        match self {
            Value::VectorSet(v) => Ok(v),
            _ => Err(OpError::WrongType),
        }
    }

    /// The stream inside, or `WRONGTYPE`.
    pub fn as_stream(&self) -> OpResult<&StreamValue> {
        match self {
            Value::Stream(s) => Ok(s),
            _ => Err(OpError::WrongType),
        }
    }

    /// The stream inside, mutably, or `WRONGTYPE`.
    pub fn as_stream_mut(&mut self) -> OpResult<&mut StreamValue> {
        match self {
            Value::Stream(s) => Ok(s),
            _ => Err(OpError::WrongType),
        }
    }

    /// The JSON document inside, or `None` for another type (RedisJSON words
    /// that error its own way).
    pub fn as_json(&self) -> Option<&JsonValue> {
        match self {
            Value::Json(j) => Some(j),
            _ => None,
        }
    }

    /// The JSON document inside, mutably, or `None` for another type.
    pub fn as_json_mut(&mut self) -> Option<&mut JsonValue> {
        match self {
            Value::Json(j) => Some(j),
            _ => None,
        }
    }

    /// The suggestion dictionary inside, or `WRONGTYPE`.
    pub fn as_suggestions(&self) -> OpResult<&SuggestionsValue> {
        match self {
            Value::Suggestions(s) => Ok(s),
            _ => Err(OpError::WrongType),
        }
    }

    /// The suggestion dictionary inside, mutably, or `WRONGTYPE`.
    pub fn as_suggestions_mut(&mut self) -> OpResult<&mut SuggestionsValue> {
        match self {
            Value::Suggestions(s) => Ok(s),
            _ => Err(OpError::WrongType),
        }
    }

    /// The sorted set inside, mutably, or `WRONGTYPE`.
    pub fn as_zset_mut(&mut self) -> OpResult<&mut ZSetValue> {
        match self {
            Value::ZSet(z) => Ok(z),
            _ => Err(OpError::WrongType),
        }
    }
}

/// Average heap size of up to `SAMPLE` byte strings, times `len`: the O(1) estimate
/// behind [`Value::mem_usage`].
pub(crate) fn sampled_size<I>(
    iter: I,
    len: usize,
    per_item_overhead: usize,
    samples: usize,
) -> usize
where
    I: Iterator<Item = usize>,
{
    let mut n = 0usize;
    let mut total = 0usize;
    for size in iter.take(samples.max(1)) {
        total += size + per_item_overhead;
        n += 1;
    }
    total.checked_div(n).map_or(0, |avg| avg * len)
}
