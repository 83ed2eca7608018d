//! Consumer groups: the last delivered id, the read counter behind `lag`, the
//! pending entries list (PEL) and the consumers, each with its own PEL.
//!
//! The group's PEL owns each pending entry's delivery time and count and names its
//! consumer; a consumer's PEL is the set of ids it owns. Both are ordered by id, as
//! `XPENDING` and `XAUTOCLAIM` walk them in order.

use std::collections::{BTreeMap, BTreeSet};

use super::StreamId;

/// One pending entry: delivered, not yet acknowledged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    /// The consumer that owns it.
    pub consumer: Vec<u8>,
    /// When it was last delivered (Unix ms).
    pub delivery_time: i64,
    /// How many times it was delivered.
    pub delivery_count: u64,
}

/// A consumer of a group.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Consumer {
    /// When it last read or claimed (Unix ms).
    pub seen_time: i64,
    /// The ids it owns.
    pub pel: BTreeSet<StreamId>,
}

/// A consumer group.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConsumerGroup {
    /// The last id delivered to the group.
    pub last_id: StreamId,
    /// Entries read by the group ([`super::INVALID_ENTRIES_READ`]: unknown).
    pub entries_read: i64,
    /// Pending entries by id.
    pub pel: BTreeMap<StreamId, Pending>,
    /// Consumers by name.
    pub consumers: BTreeMap<Vec<u8>, Consumer>,
}

impl ConsumerGroup {
    /// A group delivering after `last_id`, with this read counter.
    pub fn new(last_id: StreamId, entries_read: i64) -> ConsumerGroup {
        ConsumerGroup {
            last_id,
            entries_read,
            pel: BTreeMap::new(),
            consumers: BTreeMap::new(),
        }
    }

    /// Creates a consumer seen at `now`; returns false if it existed.
    pub fn create_consumer(&mut self, name: &[u8], now: i64) -> bool {
        if self.consumers.contains_key(name) {
            return false;
        }
        self.consumers.insert(
            name.to_vec(),
            Consumer {
                seen_time: now,
                pel: BTreeSet::new(),
            },
        );
        true
    }

    /// Deletes a consumer and its pending entries; returns how many it had, or
    /// `None` when there was no such consumer.
    pub fn delete_consumer(&mut self, name: &[u8]) -> Option<usize> {
        let consumer = self.consumers.remove(name)?;
        for id in &consumer.pel {
            self.pel.remove(id);
        }
        Some(consumer.pel.len())
    }

    /// Records a delivery of `id` to `consumer` at `now` (taking it from another
    /// consumer if it was pending there), as `XREADGROUP` does: the count starts at 1.
    pub fn deliver(&mut self, id: StreamId, consumer: &[u8], now: i64) {
        if let Some(old) = self.pel.get(&id) {
            if old.consumer != consumer {
                if let Some(c) = self.consumers.get_mut(&old.consumer) {
                    c.pel.remove(&id);
                }
            }
        }
        self.pel.insert(
            id,
            Pending {
                consumer: consumer.to_vec(),
                delivery_time: now,
                delivery_count: 1,
            },
        );
        if let Some(c) = self.consumers.get_mut(consumer) {
            c.pel.insert(id);
        }
    }

    /// Moves a pending entry to `consumer` (which must exist), keeping its metadata.
    pub fn reassign(&mut self, id: StreamId, consumer: &[u8]) {
        let Some(p) = self.pel.get_mut(&id) else {
            return;
        };
        if p.consumer != consumer {
            if let Some(c) = self.consumers.get_mut(&p.consumer) {
                c.pel.remove(&id);
            }
            p.consumer = consumer.to_vec();
        }
        if let Some(c) = self.consumers.get_mut(consumer) {
            c.pel.insert(id);
        }
    }

    /// Acknowledges `id`; returns whether it was pending.
    pub fn ack(&mut self, id: StreamId) -> bool {
        let Some(p) = self.pel.remove(&id) else {
            return false;
        };
        if let Some(c) = self.consumers.get_mut(&p.consumer) {
            c.pel.remove(&id);
        }
        true
    }

    /// Estimated heap size.
    ///
    /// It runs after every write to the stream, so it walks the consumers only, never
    /// the pending entries: each pending entry is in its consumer's list and holds
    /// that consumer's name, so a consumer with `n` entries stands for `n` of them.
    pub fn mem_usage(&self) -> usize {
        self.consumers
            .iter()
            .map(|(n, c)| n.len() + 48 + c.pel.len() * (24 + n.len() + 48))
            .sum::<usize>()
    }
}
