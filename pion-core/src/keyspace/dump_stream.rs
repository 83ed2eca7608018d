//! How a stream is written into a snapshot and read back: its ids and counters,
//! its nodes as they are (so `~` trims after a restart cut where they cut before),
//! and its consumer groups with their pending entries and consumers.
//!
//! Layout (integers little-endian, `bytes` = u32 length + bytes):
//!
//! | field | encoding |
//! |---|---|
//! | last id, first id, max deleted id | 2 × u64 each |
//! | entries added | u64 |
//! | nodes | u32 count, then per node: key id, last id, u32 deleted, u64 size estimate, u32 entries, per entry: id, u32 field count, `bytes` each |
//! | groups | u32 count, then per group: `bytes` name, last id, i64 entries read, u32 pending, per pending: id, `bytes` consumer, i64 delivery time, u64 delivery count; u32 consumers, per consumer: `bytes` name, i64 seen time |
//!
//! A consumer's own pending list is rebuilt from the group's, which names the owner.

use crate::util::codec::{put_bytes, put_i64, put_u32, put_u64, Malformed, Reader};
use crate::value::stream::{ConsumerGroup, Fields, Pending, StreamId, StreamValue};

fn put_id(out: &mut Vec<u8>, id: StreamId) {
    put_u64(out, id.ms);
    put_u64(out, id.seq);
}

fn id(r: &mut Reader<'_>) -> Result<StreamId, Malformed> {
    Ok(StreamId::new(r.u64()?, r.u64()?))
}

/// Appends a stream's body.
pub(super) fn encode_stream(s: &StreamValue, out: &mut Vec<u8>) {
    put_id(out, s.last_id);
    put_id(out, s.first_id);
    put_id(out, s.max_deleted);
    put_u64(out, s.entries_added);
    put_u32(out, s.node_count() as u32);
    for node in s.nodes() {
        put_id(out, node.key);
        put_id(out, node.last);
        put_u32(out, node.deleted as u32);
        put_u64(out, node.bytes as u64);
        put_u32(out, node.entries.len() as u32);
        for (eid, fields) in node.entries {
            put_id(out, *eid);
            put_u32(out, fields.len() as u32);
            for f in fields.iter() {
                put_bytes(out, f);
            }
        }
    }
    put_u32(out, s.groups.len() as u32);
    for (name, g) in &s.groups {
        put_bytes(out, name);
        put_id(out, g.last_id);
        put_i64(out, g.entries_read);
        put_u32(out, g.pel.len() as u32);
        for (pid, p) in &g.pel {
            put_id(out, *pid);
            put_bytes(out, &p.consumer);
            put_i64(out, p.delivery_time);
            put_u64(out, p.delivery_count);
        }
        put_u32(out, g.consumers.len() as u32);
        for (cname, c) in &g.consumers {
            put_bytes(out, cname);
            put_i64(out, c.seen_time);
        }
    }
}

/// Reads a stream's body, checking that its nodes are ordered, its length and ids
/// agree with them, and every pending entry names a consumer of its group.
pub(super) fn decode_stream(r: &mut Reader<'_>) -> Result<StreamValue, Malformed> {
    let mut s = StreamValue::new();
    s.last_id = id(r)?;
    s.first_id = id(r)?;
    s.max_deleted = id(r)?;
    s.entries_added = r.u64()?;
    let nodes = r.count(48)?;
    for _ in 0..nodes {
        let key = id(r)?;
        let last = id(r)?;
        let deleted = r.u32()? as usize;
        let bytes = usize::try_from(r.u64()?).map_err(|_| Malformed("bad stream node size"))?;
        let n = r.count(20)?;
        let mut entries = Vec::with_capacity(n);
        for _ in 0..n {
            let eid = id(r)?;
            let nf = r.count(4)?;
            if nf == 0 || !nf.is_multiple_of(2) {
                return Err(Malformed("bad stream entry fields"));
            }
            let fields: Fields = (0..nf)
                .map(|_| r.bytes().map(<[u8]>::to_vec))
                .collect::<Result<Vec<_>, _>>()?
                .into_boxed_slice();
            entries.push((eid, fields));
        }
        if !s.restore_node(key, entries, deleted, last, None, bytes) {
            return Err(Malformed("stream nodes out of order"));
        }
    }
    let first = s.first_entry().map_or(StreamId::MIN, |(id, _)| id);
    if s.first_id != first || s.last_entry().is_some_and(|(id, _)| id > s.last_id) {
        return Err(Malformed("stream ids do not match its entries"));
    }
    let groups = r.count(36)?;
    for _ in 0..groups {
        let name = r.bytes()?.to_vec();
        let mut g = ConsumerGroup::new(id(r)?, r.i64()?);
        let pending = r.count(36)?;
        for _ in 0..pending {
            let pid = id(r)?;
            let consumer = r.bytes()?.to_vec();
            let delivery_time = r.i64()?;
            let delivery_count = r.u64()?;
            g.pel.insert(
                pid,
                Pending {
                    consumer,
                    delivery_time,
                    delivery_count,
                },
            );
        }
        let consumers = r.count(12)?;
        for _ in 0..consumers {
            let cname = r.bytes()?.to_vec();
            let seen = r.i64()?;
            g.create_consumer(&cname, seen);
        }
        let owned: Vec<(StreamId, Vec<u8>)> = g
            .pel
            .iter()
            .map(|(i, p)| (*i, p.consumer.clone()))
            .collect();
        for (pid, owner) in owned {
            match g.consumers.get_mut(&owner) {
                Some(c) => {
                    c.pel.insert(pid);
                }
                None => return Err(Malformed("pending entry of an unknown consumer")),
            }
        }
        if s.groups.insert(name, g).is_some() {
            return Err(Malformed("duplicate consumer group"));
        }
    }
    Ok(s)
}
