//! Streams: an append-only log of entries (an id and field-value pairs) with
//! consumer groups.
//!
//! # Representation
//!
//! Entries live in *nodes* of up to `stream-node-max-entries` entries and
//! `stream-node-max-bytes` bytes, each keyed in a B-tree by the id of the first
//! entry it ever held, as Redis keys its listpacks in a radix tree. A node keeps
//! the exact size its listpack would have in Redis (its master entry, every entry's
//! record, deleted ones too: [`crate::value::rdb::listpack`]'s sizes), so nodes open
//! where Redis's do, whatever the entries' sizes, and a stream's `DUMP` is Redis's. `XADD` appends to
//! the last node (or opens a new one) in O(log n); a range read seeks the node that
//! holds its start and walks forward or back; `XDEL` finds the entry by binary search
//! in its node. The node layout is observable, so it copies Redis's: `MAXLEN ~` and
//! `MINID ~` only drop whole nodes, a node counts its deleted entries against its
//! size limit, and a node whose last live entry is deleted goes away. Entries inside
//! a node are a sorted vector of (id, fields) rather than a delta-encoded byte string:
//! a read costs no decoding, and the benchmark (`benches/benches/streams.rs`) shows
//! `XADD` and 100-entry `XRANGE` at a million entries are dominated by the reply,
//! not by the lookup.
//!
//! The stream also keeps what Redis 7 keeps for consumer groups' lag: the last
//! generated id, the first live id, the largest deleted id and the count of entries
//! ever added. Groups are in [`group`].

pub mod group;
mod id;

use crate::value::rdb::listpack;

use std::collections::BTreeMap;

pub use group::{Consumer, ConsumerGroup, Pending};
pub use id::StreamId;

/// A stream's fields and values, flattened (`f1 v1 f2 v2 …`).
pub type Fields = Box<[Vec<u8>]>;

/// The `entries-read` value of a group whose count is unknown.
pub const INVALID_ENTRIES_READ: i64 = -1;

/// Node limits (`stream-node-max-entries`, `stream-node-max-bytes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeLimits {
    /// Entries (live and deleted) per node; 0: no limit.
    pub max_entries: usize,
    /// Bytes per node; 0: Redis's hard cap.
    pub max_bytes: usize,
}

impl Default for NodeLimits {
    fn default() -> Self {
        NodeLimits {
            max_entries: 100,
            max_bytes: 4096,
        }
    }
}

/// The most a node's listpack may hold in Redis (1 GiB).
const LISTPACK_MAX_SIZE: usize = 1 << 30;

/// One node: live entries in id order, a count of deleted ones, the id of the last
/// entry it ever held, the field names of the first one (Redis's master entry), and
/// the bytes its entries (deleted ones too) take in Redis's listpack.
#[derive(Debug, Clone, PartialEq)]
struct Node {
    entries: Vec<(StreamId, Fields)>,
    deleted: usize,
    last: StreamId,
    master: Fields,
    records: usize,
}

impl Node {
    /// The size of the node's listpack in Redis (`lpBytes`), which decides when the
    /// next node opens: header and end, the master entry, every entry's record.
    fn bytes(&self) -> usize {
        listpack::OVERHEAD
            + master_size(self.entries.len(), self.deleted, &self.master)
            + self.records
    }
}

/// The master entry's size: live and deleted counts, the field count, the fields, a 0.
fn master_size(live: usize, deleted: usize, master: &[Vec<u8>]) -> usize {
    listpack::int_size(live as i64)
        + listpack::int_size(deleted as i64)
        + listpack::int_size(master.len() as i64)
        + master
            .iter()
            .map(|f| listpack::element_size(f))
            .sum::<usize>()
        + listpack::int_size(0)
}

/// The size of one entry's record in a node keyed `key` with these master fields:
/// flags, the id's deltas, the fields (or only the values when they are the
/// master's), the record's element count.
fn record_size(key: StreamId, master: &[Vec<u8>], id: StreamId, fields: &[Vec<u8>]) -> usize {
    let n = fields.len() / 2;
    let same = n == master.len() && fields.iter().step_by(2).zip(master).all(|(a, b)| a == b);
    let ms = listpack::int_size(id.ms.wrapping_sub(key.ms) as i64);
    let seq = listpack::int_size(id.seq.wrapping_sub(key.seq) as i64);
    let values: usize = fields
        .iter()
        .skip(1)
        .step_by(2)
        .map(|v| listpack::element_size(v))
        .sum();
    let count = if same { n + 3 } else { 2 * n + 4 };
    let mut size = listpack::int_size(0) + ms + seq + values + listpack::int_size(count as i64);
    if !same {
        size += listpack::int_size(n as i64)
            + fields
                .iter()
                .step_by(2)
                .map(|f| listpack::element_size(f))
                .sum::<usize>();
    }
    size
}

/// Field names of an entry.
fn names(fields: &[Vec<u8>]) -> Fields {
    fields
        .iter()
        .step_by(2)
        .cloned()
        .collect::<Vec<_>>()
        .into_boxed_slice()
}

/// Estimated heap bytes of one entry.
fn entry_bytes(fields: &[Vec<u8>]) -> usize {
    fields.iter().map(|f| f.len() + 2).sum::<usize>() + 8
}

/// One node as a snapshot stores it.
#[derive(Debug, Clone, Copy)]
pub struct NodeView<'a> {
    /// The id the node is keyed by (the first it ever held).
    pub key: StreamId,
    /// Its live entries.
    pub entries: &'a [(StreamId, Fields)],
    /// Its deleted entries.
    pub deleted: usize,
    /// The last id it ever held.
    pub last: StreamId,
    /// The field names of its master entry (its first entry's).
    pub master: &'a Fields,
    /// Its size in Redis's listpack, which decides when the next node opens.
    pub bytes: usize,
}

/// How a trim is bounded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrimStrategy {
    /// Keep at most this many entries.
    MaxLen(u64),
    /// Drop entries with smaller ids.
    MinId(StreamId),
}

/// A trim request: its strategy, `~` and the most entries it may drop (0: no limit).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Trim {
    /// What to keep.
    pub strategy: TrimStrategy,
    /// Whole nodes only (`~`).
    pub approx: bool,
    /// The most entries to delete; 0: no limit.
    pub limit: u64,
}

/// A stream value.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct StreamValue {
    nodes: BTreeMap<StreamId, Node>,
    length: u64,
    /// The last id generated (or set by `XSETID`).
    pub last_id: StreamId,
    /// The first live entry's id (0-0 when empty).
    pub first_id: StreamId,
    /// The largest id ever deleted by `XDEL`.
    pub max_deleted: StreamId,
    /// Entries ever added.
    pub entries_added: u64,
    /// Consumer groups by name.
    pub groups: BTreeMap<Vec<u8>, ConsumerGroup>,
}

impl StreamValue {
    /// An empty stream.
    pub fn new() -> StreamValue {
        StreamValue::default()
    }

    /// Live entries.
    pub fn len(&self) -> u64 {
        self.length
    }

    /// Whether it has no live entries (an empty stream is still a key).
    pub fn is_empty(&self) -> bool {
        self.length == 0
    }

    /// Nodes in the tree (`XINFO STREAM`'s `radix-tree-keys`).
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Appends an entry with id `id`, which must be greater than `last_id`
    /// (the caller checks); opens a node when the last one is full.
    pub fn append(&mut self, id: StreamId, fields: Fields, limits: NodeLimits) {
        // Redis compares the node's listpack size plus the new entry's raw length.
        let raw: usize = fields.iter().map(Vec::len).sum();
        let max_bytes = if limits.max_bytes == 0 || limits.max_bytes > LISTPACK_MAX_SIZE {
            LISTPACK_MAX_SIZE
        } else {
            limits.max_bytes
        };
        let fits = self.nodes.values().next_back().is_some_and(|n| {
            n.bytes() + raw < max_bytes
                && (limits.max_entries == 0 || n.entries.len() + n.deleted < limits.max_entries)
        });
        if fits {
            if let Some((&key, node)) = self.nodes.iter_mut().next_back() {
                node.records += record_size(key, &node.master, id, &fields);
                node.entries.push((id, fields));
                node.last = id;
            }
        } else {
            let master = names(&fields);
            let records = record_size(id, &master, id, &fields);
            self.nodes.insert(
                id,
                Node {
                    entries: vec![(id, fields)],
                    deleted: 0,
                    last: id,
                    master,
                    records,
                },
            );
        }
        self.length += 1;
        self.entries_added += 1;
        self.last_id = id;
        if self.length == 1 {
            self.first_id = id;
        }
    }

    /// Live entries from `start` to `end` inclusive, forward or (`rev`) backward.
    pub fn range(
        &self,
        start: StreamId,
        end: StreamId,
        rev: bool,
    ) -> Box<dyn Iterator<Item = (StreamId, &Fields)> + '_> {
        if start > end {
            return Box::new(std::iter::empty());
        }
        // The node holding `start` is the last one keyed at or before it.
        let from = self
            .nodes
            .range(..=start)
            .next_back()
            .map_or(start, |(k, _)| *k);
        let nodes = self.nodes.range(from..=end);
        let in_range = move |e: &&(StreamId, Fields)| e.0 >= start && e.0 <= end;
        if rev {
            Box::new(
                nodes
                    .rev()
                    .flat_map(|(_, n)| n.entries.iter().rev())
                    .skip_while(move |e| e.0 > end)
                    .take_while(move |e| e.0 >= start)
                    .filter(in_range)
                    .map(|(id, f)| (*id, f)),
            )
        } else {
            Box::new(
                nodes
                    .flat_map(|(_, n)| n.entries.iter())
                    .skip_while(move |e| e.0 < start)
                    .take_while(move |e| e.0 <= end)
                    .map(|(id, f)| (*id, f)),
            )
        }
    }

    /// The entry with this id, if live.
    pub fn get(&self, id: StreamId) -> Option<&Fields> {
        let (_, node) = self.nodes.range(..=id).next_back()?;
        let at = node.entries.binary_search_by(|e| e.0.cmp(&id)).ok()?;
        Some(&node.entries[at].1)
    }

    /// The first live entry.
    pub fn first_entry(&self) -> Option<(StreamId, &Fields)> {
        self.range(StreamId::MIN, StreamId::MAX, false).next()
    }

    /// The last live entry.
    pub fn last_entry(&self) -> Option<(StreamId, &Fields)> {
        self.range(StreamId::MIN, StreamId::MAX, true).next()
    }

    /// Deletes a live entry (`XDEL`); returns whether it was there. Keeps
    /// `max_deleted` and `first_id` as Redis does.
    pub fn delete(&mut self, id: StreamId) -> bool {
        let Some((&key, node)) = self.nodes.range_mut(..=id).next_back() else {
            return false;
        };
        let Ok(at) = node.entries.binary_search_by(|e| e.0.cmp(&id)) else {
            return false;
        };
        let was_first = self.first_id == id;
        node.entries.remove(at);
        node.deleted += 1;
        if node.entries.is_empty() {
            self.nodes.remove(&key);
        }
        self.length -= 1;
        if id > self.max_deleted {
            self.max_deleted = id;
        }
        if self.length == 0 {
            self.first_id = StreamId::MIN;
        } else if was_first {
            self.first_id = self.first_entry().map_or(StreamId::MIN, |(id, _)| id);
        }
        true
    }

    /// Trims from the head as Redis's `streamTrim` does; returns the entries removed.
    pub fn trim(&mut self, trim: Trim) -> u64 {
        let mut deleted = 0u64;
        while let Some((&key, node)) = self.nodes.iter_mut().next() {
            if let TrimStrategy::MaxLen(max) = trim.strategy {
                if self.length <= max {
                    break;
                }
            }
            let entries = node.entries.len() as u64;
            if trim.limit != 0 && deleted + entries > trim.limit {
                break;
            }
            let remove_node = match trim.strategy {
                TrimStrategy::MaxLen(max) => self.length - entries >= max,
                TrimStrategy::MinId(min) => node.last < min,
            };
            if remove_node {
                self.nodes.remove(&key);
                self.length -= entries;
                deleted += entries;
                continue;
            }
            if trim.approx {
                break;
            }
            let cut = match trim.strategy {
                TrimStrategy::MaxLen(max) => (self.length - max) as usize,
                TrimStrategy::MinId(min) => node.entries.partition_point(|e| e.0 < min),
            };
            node.entries.drain(..cut);
            node.deleted += cut;
            self.length -= cut as u64;
            deleted += cut as u64;
            break;
        }
        if self.length == 0 {
            self.first_id = StreamId::MIN;
        } else if deleted > 0 {
            self.first_id = self.first_entry().map_or(StreamId::MIN, |(id, _)| id);
        }
        deleted
    }

    /// Whether a deleted entry may lie between `start` and `end` (Redis's
    /// `streamRangeHasTombstones`; `None` end: to the last id).
    pub fn range_has_tombstones(&self, start: StreamId, end: Option<StreamId>) -> bool {
        if self.length == 0 || self.max_deleted.is_zero() || self.first_id > self.max_deleted {
            return false;
        }
        let end = end.unwrap_or(StreamId::MAX);
        start <= self.max_deleted && self.max_deleted <= end
    }

    /// The logical read counter of `id` (Redis's
    /// `streamEstimateDistanceFromFirstEverEntry`), or [`INVALID_ENTRIES_READ`].
    pub fn estimate_distance(&self, id: StreamId) -> i64 {
        if self.entries_added == 0 {
            return 0;
        }
        let added = self.entries_added as i64;
        if self.length == 0 && id <= self.last_id {
            return added;
        }
        if id == self.last_id {
            return added;
        }
        if id > self.last_id {
            return INVALID_ENTRIES_READ;
        }
        if self.max_deleted.is_zero() || self.max_deleted < self.first_id {
            if id < self.first_id {
                return added - self.length as i64;
            }
            if id == self.first_id {
                return added - self.length as i64 + 1;
            }
        }
        INVALID_ENTRIES_READ
    }

    /// A group's lag (`None`: unknown), as Redis's `streamReplyWithCGLag` computes it.
    pub fn lag(&self, group: &ConsumerGroup) -> Option<i64> {
        let added = self.entries_added as i64;
        if self.entries_added == 0 {
            return Some(0);
        }
        if group.entries_read != INVALID_ENTRIES_READ
            && !self.range_has_tombstones(group.last_id, None)
        {
            return Some(added - group.entries_read);
        }
        let read = self.estimate_distance(group.last_id);
        (read != INVALID_ENTRIES_READ).then_some(added - read)
    }

    /// Estimated heap size, sampling `samples` entries.
    pub fn mem_usage(&self, samples: usize) -> usize {
        // Straight from the first nodes (no range lookups): every write to the
        // stream asks for this figure.
        let sampled = self
            .nodes
            .values()
            .flat_map(|n| n.entries.iter())
            .map(|(_, f)| entry_bytes(f) + 16);
        let entries = crate::value::sampled_size(sampled, self.length as usize, 0, samples);
        let groups: usize = self
            .groups
            .iter()
            .map(|(name, g)| name.len() + 64 + g.mem_usage())
            .sum();
        64 + self.nodes.len() * 64 + entries + groups
    }

    /// Every node, for snapshots.
    pub fn nodes(&self) -> impl Iterator<Item = NodeView<'_>> {
        self.nodes.iter().map(|(k, n)| NodeView {
            key: *k,
            entries: &n.entries,
            deleted: n.deleted,
            last: n.last,
            master: &n.master,
            bytes: n.bytes(),
        })
    }

    /// Restores a node read from a snapshot or a payload; returns false when it does
    /// not follow the nodes before it in order. `master`: its master entry's field
    /// names (`None`: its first live entry's); `bytes`: its listpack's size.
    pub fn restore_node(
        &mut self,
        key: StreamId,
        entries: Vec<(StreamId, Fields)>,
        deleted: usize,
        last: StreamId,
        master: Option<Fields>,
        bytes: usize,
    ) -> bool {
        let ordered = entries.windows(2).all(|w| w[0].0 < w[1].0)
            && entries.first().is_none_or(|e| e.0 >= key)
            && entries.last().is_none_or(|e| e.0 <= last)
            && self.nodes.values().next_back().is_none_or(|n| n.last < key);
        if !ordered || entries.is_empty() {
            return false;
        }
        self.length += entries.len() as u64;
        let master = master.unwrap_or_else(|| names(&entries[0].1));
        let fixed = listpack::OVERHEAD + master_size(entries.len(), deleted, &master);
        self.nodes.insert(
            key,
            Node {
                entries,
                deleted,
                last,
                master,
                records: bytes.saturating_sub(fixed),
            },
        );
        true
    }
}

#[cfg(test)]
mod tests;
