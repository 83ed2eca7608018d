//! A value in the RDB object encoding Redis 7.0 would write for it.

use super::listpack::Builder;
use super::wire::Writer;
use super::{intset, module, stream, types, DumpOptions};
use crate::util::lzf;
use crate::value::{HashValue, ListValue, SetValue, Value, ZSetValue};

/// Elements this long get a quicklist node of their own (Redis's `packed_threshold`).
const PLAIN_THRESHOLD: usize = 1 << 30;
/// A list node never grows past this when its limit is a count.
const NODE_SAFETY_LIMIT: usize = 8192;
/// The byte limits `list-max-listpack-size` -1 to -5 name.
const NODE_SIZE_LEVELS: [usize; 5] = [4096, 8192, 16384, 32768, 65536];
/// What Redis adds to an element's length when it estimates a node's growth.
const SIZE_ESTIMATE_OVERHEAD: usize = 8;
/// Quicklist nodes smaller than this are never compressed.
const MIN_COMPRESS_BYTES: usize = 48;
/// A node's compression must save at least this much.
const MIN_COMPRESS_IMPROVE: usize = 8;

/// Writes the type byte and the body of `value`.
pub(super) fn value(value: &Value, w: &mut Writer, opts: &DumpOptions) {
    match value {
        Value::Str(s) => {
            w.byte(types::STRING);
            w.string(s.as_bytes());
        }
        Value::List(l) => list(l, w, opts),
        Value::Set(s) => set(s, w),
        Value::Hash(h) => hash(h, w),
        Value::ZSet(z) => zset(z, w),
        Value::Stream(s) => stream::encode(s, w),
        Value::Json(j) => module::encode_json(j, w),
        Value::VectorSet(v) => module::encode_vset(v, w),
        Value::Suggestions(v) => module::encode_suggestions(v, w),
    }
}

/// One node of a list being split as `RPUSH` would have filled it.
enum Node<'a> {
    Packed(Builder),
    Plain(&'a [u8]),
}

/// Whether a node of `bytes` bytes holding `count` elements takes another of `len`
/// bytes under `list-max-listpack-size` `fill` (Redis 7.0.15 overestimates an
/// entry's growth by 8 bytes).
fn node_takes(bytes: usize, count: usize, fill: i64, len: usize) -> bool {
    let grown = bytes + len + SIZE_ESTIMATE_OVERHEAD;
    if fill < 0 {
        let level = usize::try_from(-fill - 1).map_or(0, |i| i.min(4));
        grown <= NODE_SIZE_LEVELS[level]
    } else {
        let most = if fill == 0 { 1 } else { fill as usize };
        grown <= NODE_SAFETY_LIMIT && count < most
    }
}

fn list(l: &ListValue, w: &mut Writer, opts: &DumpOptions) {
    let fill = opts.list_fill.clamp(-5, i64::from(i16::MAX));
    let mut nodes: Vec<Node<'_>> = Vec::new();
    for item in l.iter() {
        if item.len() >= PLAIN_THRESHOLD {
            nodes.push(Node::Plain(item));
            continue;
        }
        match nodes.last_mut() {
            Some(Node::Packed(b)) if node_takes(b.bytes(), b.count(), fill, item.len()) => {
                b.push(item)
            }
            _ => {
                let mut b = Builder::new();
                b.push(item);
                nodes.push(Node::Packed(b));
            }
        }
    }
    w.byte(types::LIST_QUICKLIST_2);
    w.len(nodes.len() as u64);
    let depth = usize::try_from(opts.list_compress_depth).unwrap_or(0);
    let n = nodes.len();
    for (i, node) in nodes.into_iter().enumerate() {
        match node {
            Node::Plain(item) => {
                w.len(1);
                w.string(item);
            }
            Node::Packed(b) => {
                w.len(2);
                let lp = b.finish();
                // With list-compress-depth, Redis keeps the inner nodes compressed in
                // memory and writes them as they are.
                let inner = depth > 0 && n >= depth * 2 && i >= depth && i < n - depth;
                match inner.then(|| compress_node(&lp)).flatten() {
                    Some(packed) => w.lzf_blob(&packed, lp.len()),
                    None => w.string(&lp),
                }
            }
        }
    }
}

/// A quicklist node's in-memory compression, when it succeeds.
fn compress_node(lp: &[u8]) -> Option<Vec<u8>> {
    if lp.len() < MIN_COMPRESS_BYTES {
        return None;
    }
    lzf::compress(lp, lp.len()).filter(|p| p.len() + MIN_COMPRESS_IMPROVE < lp.len())
}

fn set(s: &SetValue, w: &mut Writer) {
    if s.is_compact() {
        let mut members = Vec::with_capacity(s.len());
        s.for_each(|m| members.extend(crate::util::num::parse_i64(m)));
        w.byte(types::SET_INTSET);
        w.string(&intset::build(&members));
    } else {
        w.byte(types::SET);
        w.len(s.len() as u64);
        s.for_each(|m| w.string(m));
    }
}

fn hash(h: &HashValue, w: &mut Writer) {
    if h.is_compact() {
        let mut b = Builder::new();
        for (f, v) in h.iter() {
            b.push(f);
            b.push(v);
        }
        w.byte(types::HASH_LISTPACK);
        w.string(&b.finish());
    } else {
        w.byte(types::HASH);
        w.len(h.len() as u64);
        for (f, v) in h.iter() {
            w.string(f);
            w.string(v);
        }
    }
}

/// A score as a listpack stores it: an integer when it is one (within ±2⁶²), else
/// its `%.17g` text.
fn push_score(b: &mut Builder, score: f64) {
    const LIMIT: f64 = (i64::MAX / 2) as f64;
    if (-LIMIT..=LIMIT).contains(&score) && score.trunc() == score {
        b.push_int(score as i64);
    } else {
        b.push(crate::util::num::fmt_g17(score).as_bytes());
    }
}

fn zset(z: &ZSetValue, w: &mut Writer) {
    if z.is_listpack() {
        let mut b = Builder::new();
        for m in z.iter() {
            b.push(m.member);
            push_score(&mut b, m.score);
        }
        w.byte(types::ZSET_LISTPACK);
        w.string(&b.finish());
    } else {
        // Highest score first, so that loading inserts each at the skiplist's head.
        w.byte(types::ZSET_2);
        w.len(z.len() as u64);
        for m in z.iter().rev() {
            w.string(m.member);
            w.binary_double(m.score);
        }
    }
}
