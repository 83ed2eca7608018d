//! Streams in RDB: each node a listpack keyed by its master id, then the stream's
//! counters, then the consumer groups with their pending entries and consumers.
//!
//! A node's listpack starts with the master entry (live count, deleted count, the
//! master fields, a 0), then one record per entry: flags (1 deleted, 2 same fields as
//! the master), the id as deltas from the master id, the field count and fields
//! unless the flags say they are the master's, the values, and the record's element
//! count (so it can be walked backwards).
//!
//! | type | after the nodes |
//! |---|---|
//! | 15 (Redis 5–6.2) | length, last id |
//! | 19 (Redis 7.0) | length, last id, first id, max deleted id, entries added; each group also has its entries read |
//! | 21 (Redis 7.2) | as 19; each consumer also has its active time |
//!
//! Pion keeps no deleted entries inside its nodes, so it writes each node compacted:
//! its live entries under its master fields, with no deleted count.

use super::listpack::{self, Builder, Item};
use super::wire::{Reader, Writer};
use super::{types, RdbError};
use crate::value::stream::{ConsumerGroup, Fields, Pending, StreamId, StreamValue};

const FLAG_DELETED: i64 = 1;
const FLAG_SAME_FIELDS: i64 = 2;

/// A stream id as a radix-tree key: milliseconds and sequence, big-endian.
fn id_key(id: StreamId) -> [u8; 16] {
    let mut k = [0u8; 16];
    k[..8].copy_from_slice(&id.ms.to_be_bytes());
    k[8..].copy_from_slice(&id.seq.to_be_bytes());
    k
}

fn id_from_key(k: &[u8]) -> Result<StreamId, RdbError> {
    if k.len() != 16 {
        return Err(RdbError::bad("stream id of the wrong size"));
    }
    let mut ms = [0u8; 8];
    let mut seq = [0u8; 8];
    ms.copy_from_slice(&k[..8]);
    seq.copy_from_slice(&k[8..]);
    Ok(StreamId::new(
        u64::from_be_bytes(ms),
        u64::from_be_bytes(seq),
    ))
}

/// Writes a stream as `RDB_TYPE_STREAM_LISTPACKS_2`.
pub(super) fn encode(s: &StreamValue, w: &mut Writer) {
    w.byte(types::STREAM_LISTPACKS_2);
    w.len(s.node_count() as u64);
    for node in s.nodes() {
        w.string(&id_key(node.key));
        w.string(&node_listpack(node.key, node.master, node.entries));
    }
    w.len(s.len());
    for id in [s.last_id, s.first_id, s.max_deleted] {
        w.len(id.ms);
        w.len(id.seq);
    }
    w.len(s.entries_added);
    w.len(s.groups.len() as u64);
    for (name, g) in &s.groups {
        w.string(name);
        w.len(g.last_id.ms);
        w.len(g.last_id.seq);
        w.len(g.entries_read as u64);
        w.len(g.pel.len() as u64);
        for (id, p) in &g.pel {
            w.raw(&id_key(*id));
            w.millis(p.delivery_time);
            w.len(p.delivery_count);
        }
        w.len(g.consumers.len() as u64);
        for (cname, c) in &g.consumers {
            w.string(cname);
            w.millis(c.seen_time);
            w.len(c.pel.len() as u64);
            for id in &c.pel {
                w.raw(&id_key(*id));
            }
        }
    }
}

/// The listpack of one node's live entries, laid out as `XADD` lays them out.
fn node_listpack(master: StreamId, names: &Fields, entries: &[(StreamId, Fields)]) -> Vec<u8> {
    let mut b = Builder::new();
    let master_fields: Vec<&[u8]> = names.iter().map(Vec::as_slice).collect();
    b.push_int(entries.len() as i64);
    b.push_int(0);
    b.push_int(master_fields.len() as i64);
    for f in &master_fields {
        b.push(f);
    }
    b.push_int(0);
    for (id, fields) in entries {
        let nfields = fields.len() / 2;
        let same = nfields == master_fields.len()
            && fields
                .iter()
                .step_by(2)
                .zip(&master_fields)
                .all(|(a, b)| a.as_slice() == *b);
        b.push_int(if same { FLAG_SAME_FIELDS } else { 0 });
        b.push_int(id.ms.wrapping_sub(master.ms) as i64);
        b.push_int(id.seq.wrapping_sub(master.seq) as i64);
        if !same {
            b.push_int(nfields as i64);
        }
        for pair in fields.chunks_exact(2) {
            if !same {
                b.push(&pair[0]);
            }
            b.push(&pair[1]);
        }
        let mut count = nfields as i64 + 3;
        if !same {
            count += nfields as i64 + 1;
        }
        b.push_int(count);
    }
    b.finish()
}

/// One node read back: its live entries, deleted count and last id.
struct LoadedNode {
    master: Fields,
    entries: Vec<(StreamId, Fields)>,
    deleted: usize,
    last: StreamId,
}

/// Walks a node's listpack, checking every record as Redis's deep sanitisation does.
fn parse_node(master: StreamId, lp: &[u8]) -> Result<LoadedNode, RdbError> {
    let bad = || RdbError::bad("invalid stream node");
    let items = listpack::parse(lp)?;
    let mut it = items.into_iter();
    let int = |it: &mut std::vec::IntoIter<Item<'_>>| -> Result<i64, RdbError> {
        it.next().and_then(Item::as_int).ok_or_else(bad)
    };
    let live = int(&mut it)?;
    let deleted = int(&mut it)?;
    let nmaster = int(&mut it)?;
    if live < 0 || deleted < 0 || nmaster <= 0 || nmaster as usize > lp.len() {
        return Err(bad());
    }
    let master_fields: Vec<Vec<u8>> = (0..nmaster)
        .map(|_| it.next().map(Item::to_bytes).ok_or_else(bad))
        .collect::<Result<_, _>>()?;
    if int(&mut it)? != 0 {
        return Err(bad());
    }
    let mut entries = Vec::new();
    let (mut seen_live, mut seen_deleted) = (0i64, 0i64);
    let mut last: Option<StreamId> = None;
    while let Some(flags) = it.next() {
        let flags = flags.as_int().ok_or_else(bad)?;
        if !(0..=3).contains(&flags) {
            return Err(bad());
        }
        let ms = master.ms.wrapping_add(int(&mut it)? as u64);
        let seq = master.seq.wrapping_add(int(&mut it)? as u64);
        let id = StreamId::new(ms, seq);
        if id < master || last.is_some_and(|l| id <= l) {
            return Err(bad());
        }
        let same = flags & FLAG_SAME_FIELDS != 0;
        let nfields = if same {
            master_fields.len() as i64
        } else {
            int(&mut it)?
        };
        if nfields <= 0 || nfields as usize > lp.len() {
            return Err(bad());
        }
        let mut fields = Vec::with_capacity(nfields as usize * 2);
        let mut master = master_fields.iter();
        for _ in 0..nfields {
            let field = match master.next() {
                Some(f) if same => f.clone(),
                _ => it.next().map(Item::to_bytes).ok_or_else(bad)?,
            };
            fields.push(field);
            fields.push(it.next().map(Item::to_bytes).ok_or_else(bad)?);
        }
        let mut count = nfields + 3;
        if !same {
            count += nfields + 1;
        }
        if int(&mut it)? != count {
            return Err(bad());
        }
        last = Some(id);
        if flags & FLAG_DELETED != 0 {
            seen_deleted += 1;
        } else {
            seen_live += 1;
            entries.push((id, fields.into_boxed_slice()));
        }
    }
    if seen_live != live || seen_deleted != deleted {
        return Err(bad());
    }
    Ok(LoadedNode {
        master: master_fields.into_boxed_slice(),
        entries,
        deleted: deleted as usize,
        last: last.ok_or_else(bad)?,
    })
}

fn read_id(r: &mut Reader<'_>) -> Result<StreamId, RdbError> {
    Ok(StreamId::new(r.len()?, r.len()?))
}

/// Reads a stream of RDB type `t` (15, 19 or 21).
pub(super) fn decode(r: &mut Reader<'_>, t: u8) -> Result<StreamValue, RdbError> {
    let mut s = StreamValue::new();
    let nodes = r.count(2)?;
    for _ in 0..nodes {
        let master = id_from_key(&r.string()?)?;
        let lp = r.string()?;
        if lp.len() <= 7 {
            return Err(RdbError::bad("empty stream node"));
        }
        let node = parse_node(master, &lp)?;
        if node.entries.is_empty() {
            // A node of deleted entries only: nothing of it is left to keep.
            continue;
        }
        let fields = Some(node.master);
        if !s.restore_node(
            master,
            node.entries,
            node.deleted,
            node.last,
            fields,
            lp.len(),
        ) {
            return Err(RdbError::bad("stream nodes out of order"));
        }
    }
    let length = r.len()?;
    s.last_id = read_id(r)?;
    if length != s.len() {
        return Err(RdbError::bad("stream length does not match its entries"));
    }
    if s.last_entry().is_some_and(|(id, _)| id > s.last_id) {
        return Err(RdbError::bad("stream last id below its entries"));
    }
    let first = s.first_entry().map_or(StreamId::MIN, |(id, _)| id);
    if t == types::STREAM_LISTPACKS {
        s.first_id = first;
        s.max_deleted = StreamId::MIN;
        s.entries_added = s.len();
    } else {
        s.first_id = read_id(r)?;
        s.max_deleted = read_id(r)?;
        s.entries_added = r.len()?;
        if s.first_id != first {
            return Err(RdbError::bad("stream first id does not match its entries"));
        }
    }
    let groups = r.count(3)?;
    for _ in 0..groups {
        let name = r.string()?.into_owned();
        let last_id = read_id(r)?;
        let entries_read = if t == types::STREAM_LISTPACKS {
            s.estimate_distance(last_id)
        } else {
            r.len()? as i64
        };
        let mut g = ConsumerGroup::new(last_id, entries_read);
        let mut owned_ids = std::collections::BTreeSet::new();
        let pending = r.count(16 + 8 + 1)?;
        for _ in 0..pending {
            let id = id_from_key(r.take(16)?)?;
            let delivery_time = r.millis()?;
            let delivery_count = r.len()?;
            let p = Pending {
                consumer: Vec::new(),
                delivery_time,
                delivery_count,
            };
            if g.pel.insert(id, p).is_some() {
                return Err(RdbError::bad("duplicate pending entry"));
            }
        }
        let consumers = r.count(1 + 8 + 1)?;
        for _ in 0..consumers {
            let cname = r.string()?.into_owned();
            let seen = r.millis()?;
            if t == types::STREAM_LISTPACKS_3 {
                // The active time of Redis 7.2, which Pion does not keep.
                r.millis()?;
            }
            if !g.create_consumer(&cname, seen) {
                return Err(RdbError::bad("duplicate consumer"));
            }
            let owned = r.count(16)?;
            for _ in 0..owned {
                let id = id_from_key(r.take(16)?)?;
                match g.pel.get_mut(&id) {
                    Some(p) if owned_ids.insert(id) => p.consumer = cname.clone(),
                    _ => return Err(RdbError::bad("consumer pending entry not in its group")),
                }
                if let Some(c) = g.consumers.get_mut(&cname) {
                    c.pel.insert(id);
                }
            }
        }
        if owned_ids.len() != g.pel.len() {
            return Err(RdbError::bad("pending entry without a consumer"));
        }
        if s.groups.insert(name, g).is_some() {
            return Err(RdbError::bad("duplicate consumer group"));
        }
    }
    Ok(s)
}
