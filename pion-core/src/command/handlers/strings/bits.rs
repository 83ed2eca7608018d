//! Bitmap commands: `SETBIT`, `GETBIT`, `BITCOUNT`, `BITPOS` and `BITOP`.
//!
//! Redis has no bitmap type: these commands read and edit string values bit by bit
//! (bit 0 is the most significant bit of the first byte), so the values stay strings
//! and every other string command sees the same bytes. They live apart from the rest
//! of the family because they share their own argument rules (bit offsets bounded by
//! `proto-max-bulk-len`, `BYTE|BIT` ranges) and the word-at-a-time scans that keep
//! `BITCOUNT`, `BITPOS` and `BITOP` fast on large values. `BITFIELD` is in the sibling
//! `bitfield` module.
//!
//! Edits grow the string in place with zero bytes, which makes the value `raw` and
//! keeps its time to live, as `SETRANGE` does.

use super::len_reply;
use crate::command::ctx::{Ctx, Effect};
use crate::command::handlers::util::{int, is_kw};
use crate::error::{OpError, OpResult};
use crate::pubsub::notify;
use crate::reply::Reply;
use crate::util::num::parse_i64;
use crate::value::{StrValue, Value};

/// The error for a bit offset that is not an integer, negative, or past
/// `proto-max-bulk-len`.
const BAD_OFFSET: &str = "ERR bit offset is not an integer or out of range";

/// The error for a `SETBIT` value other than 0 or 1.
const BAD_BIT: &str = "ERR bit is not an integer or out of range";

/// Parses a bit offset as Redis does: a non-negative integer whose byte (`offset / 8`)
/// lies below `proto-max-bulk-len`. With `hash_width`, `BITFIELD`'s `#N` form is also
/// read, meaning `N` times the field width.
pub(super) fn bit_offset(ctx: &Ctx<'_>, arg: &[u8], hash_width: Option<u32>) -> OpResult<u64> {
    let bad = || OpError::custom(BAD_OFFSET);
    let (digits, width) = match (arg.first(), hash_width) {
        (Some(b'#'), Some(w)) => (&arg[1..], Some(w)),
        _ => (arg, None),
    };
    let mut offset = parse_i64(digits).ok_or_else(bad)?;
    if let Some(w) = width {
        // Redis multiplies in a C `long long` without an overflow check; the wrapped
        // product is then range-checked like any other offset.
        offset = offset.wrapping_mul(i64::from(w));
    }
    let max = ctx.config().with(|c| c.proto_max_bulk_len);
    let offset = u64::try_from(offset).map_err(|_| bad())?;
    if offset >> 3 >= max {
        return Err(bad());
    }
    Ok(offset)
}

/// The string at `key` made long enough to hold bit `max_bit` (created, or padded with
/// zero bytes), as Redis's `lookupStringForBitCommand`; also whether it was created or
/// grew. `WRONGTYPE` for other types. Looked up as a write: no keyspace hit or miss.
pub(super) fn string_for_bits<'c>(
    ctx: &'c mut Ctx<'_>,
    key: &[u8],
    max_bit: u64,
) -> OpResult<(&'c mut Vec<u8>, bool)> {
    let db = ctx.db();
    let need = usize::try_from(max_bit >> 3)
        .ok()
        .and_then(|b| b.checked_add(1))
        .ok_or_else(|| OpError::custom(BAD_OFFSET))?;
    let exists = match ctx.ks.get_mut(db, key)? {
        None => false,
        Some(v) => {
            v.as_str()?;
            true
        }
    };
    if !exists {
        ctx.ks
            .set(db, key, Value::Str(StrValue::raw(vec![0; need])))?;
    }
    match ctx.ks.get_mut(db, key)? {
        Some(Value::Str(s)) => {
            let bytes = s.bytes_mut();
            let grew = !exists || bytes.len() < need;
            if bytes.len() < need {
                bytes.resize(need, 0);
            }
            Ok((bytes, grew))
        }
        Some(_) => Err(OpError::WrongType),
        None => Err(OpError::custom("ERR internal error: string vanished")),
    }
}

/// `SETBIT key offset value`: sets or clears one bit, growing the string as needed;
/// replies with the bit's old value. A call that neither grows the string nor flips
/// the bit changes nothing (no event, no log record), as in Redis.
pub(super) fn setbit(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let offset = bit_offset(ctx, &argv[2], None)?;
    let on = parse_i64(&argv[3]).ok_or_else(|| OpError::custom(BAD_BIT))?;
    if on & !1 != 0 {
        return Err(OpError::custom(BAD_BIT));
    }
    let key = &argv[1];
    let (bytes, grew) = string_for_bits(ctx, key, offset)?;
    let (byte, mask) = bit_position(offset);
    let Some(slot) = bytes.get_mut(byte) else {
        return Err(OpError::custom("ERR internal error: bitmap too short"));
    };
    let old = *slot & mask != 0;
    if grew || old != (on == 1) {
        if on == 1 {
            *slot |= mask;
        } else {
            *slot &= !mask;
        }
        ctx.notify(notify::STRING, "setbit", key);
    } else {
        ctx.effect = Effect::Nothing;
    }
    Ok(Reply::Integer(i64::from(old)))
}

/// `GETBIT key offset`: the bit, 0 past the end or for a missing key.
pub(super) fn getbit(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let offset = bit_offset(ctx, &argv[2], None)?;
    let db = ctx.db();
    let Some(v) = ctx.ks.get(db, &argv[1])? else {
        return Ok(Reply::Integer(0));
    };
    let (byte, mask) = bit_position(offset);
    let bit = v
        .as_str()?
        .as_bytes()
        .get(byte)
        .is_some_and(|b| b & mask != 0);
    Ok(Reply::Integer(i64::from(bit)))
}

/// The byte index and in-byte mask of a bit offset (bit 0 is the high bit). Offsets
/// were checked against `proto-max-bulk-len`, so the index fits memory sizes; an index
/// that does not fit `usize` saturates and reads as past the end.
fn bit_position(offset: u64) -> (usize, u8) {
    let byte = usize::try_from(offset >> 3).unwrap_or(usize::MAX);
    (byte, 0x80 >> (offset & 7))
}

/// Whether a `BYTE|BIT` keyword says bits; `ERR syntax error` for anything else.
fn unit_is_bit(arg: &[u8]) -> OpResult<bool> {
    if is_kw(arg, "bit") {
        Ok(true)
    } else if is_kw(arg, "byte") {
        Ok(false)
    } else {
        Err(OpError::Syntax)
    }
}

/// Converts a `start end` pair to an inclusive range over `total` units (bytes or
/// bits) with Redis's rules: negative indexes count from the end, both ends clamp to
/// the string. `None` when the range is empty.
fn clamp(start: i64, end: i64, total: i64) -> Option<(u64, u64)> {
    let (mut start, mut end) = (start, end);
    if start < 0 {
        start = start.saturating_add(total);
    }
    if end < 0 {
        end = end.saturating_add(total);
    }
    let start = start.max(0);
    let end = end.max(0).min(total - 1);
    if start > end {
        return None;
    }
    // Both are non-negative here.
    Some((start as u64, end as u64))
}

/// The length of a string in bits as an `i64` (strings are far below 2^60 bytes).
fn bit_len(bytes: &[u8]) -> i64 {
    len_reply(bytes.len()).saturating_mul(8)
}

/// `BITCOUNT key [start end [BYTE|BIT]]`: the number of set bits, in the whole string
/// or a range. As in Redis 7.0 a missing key counts 0 before the arguments are
/// checked, and a range with both ends negative and reversed counts 0 before the unit
/// keyword is.
pub(super) fn bitcount(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let db = ctx.db();
    let Some(v) = ctx.ks.get(db, &argv[1])? else {
        return Ok(Reply::Integer(0));
    };
    let bytes = v.as_str()?.as_bytes();
    let count = match argv.len() {
        2 => popcount(bytes),
        4 | 5 => {
            let start = int(&argv[2])?;
            let end = int(&argv[3])?;
            if start < 0 && end < 0 && start > end {
                return Ok(Reply::Integer(0));
            }
            let bits = match argv.get(4) {
                Some(unit) => unit_is_bit(unit)?,
                None => false,
            };
            let total = if bits {
                bit_len(bytes)
            } else {
                len_reply(bytes.len())
            };
            match clamp(start, end, total) {
                None => 0,
                Some((s, e)) if bits => count_bit_range(bytes, s, e),
                Some((s, e)) => count_bit_range(bytes, s * 8, e * 8 + 7),
            }
        }
        _ => return Err(OpError::Syntax),
    };
    Ok(Reply::Integer(count))
}

/// Set bits in the inclusive bit range `[from, to]`, which lies inside `bytes`: whole
/// bytes counted a word at a time, the bits outside the range in the edge bytes taken
/// off.
fn count_bit_range(bytes: &[u8], from: u64, to: u64) -> i64 {
    let (first, last) = (byte_index(from), byte_index(to));
    let Some(span) = bytes.get(first..=last) else {
        return 0;
    };
    let mut count = popcount(span);
    let head = span.first().map_or(0, |b| b & !(0xFF >> (from & 7)));
    let tail = span.last().map_or(0, |b| b & !(0xFF << (7 - (to & 7))));
    count -= i64::from(head.count_ones()) + i64::from(tail.count_ones());
    count
}

/// A bit offset's byte index (range-checked offsets always fit).
fn byte_index(bit: u64) -> usize {
    usize::try_from(bit >> 3).unwrap_or(usize::MAX)
}

/// Set bits in `bytes`, eight bytes at a time with `count_ones` (a `popcnt` per word
/// where the target has it), four independent sums so the additions do not wait on
/// each other.
pub fn popcount(bytes: &[u8]) -> i64 {
    let (blocks, rest) = bytes.as_chunks::<32>();
    let mut sums = [0u64; 4];
    for block in blocks {
        let (words, _) = block.as_chunks::<8>();
        for (sum, w) in sums.iter_mut().zip(words) {
            *sum += u64::from(u64::from_ne_bytes(*w).count_ones());
        }
    }
    let (words, tail) = rest.as_chunks::<8>();
    let mut total: u64 = sums.iter().sum();
    total += words
        .iter()
        .map(|w| u64::from(u64::from_ne_bytes(*w).count_ones()))
        .sum::<u64>();
    total += tail.iter().map(|b| u64::from(b.count_ones())).sum::<u64>();
    i64::try_from(total).unwrap_or(i64::MAX)
}

/// `BITPOS key bit [start [end [BYTE|BIT]]]`: the first bit equal to `bit` in the
/// string or range. A missing key is all zeros (0 for a clear bit, -1 for a set one);
/// a search for a clear bit without an explicit end that finds none reports the first
/// bit past the string, with an explicit end -1, as in Redis.
pub(super) fn bitpos(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let bit = int(&argv[2])?;
    if bit != 0 && bit != 1 {
        return Err(OpError::custom("ERR The bit argument must be 1 or 0."));
    }
    let want = bit == 1;
    let db = ctx.db();
    let Some(v) = ctx.ks.get(db, &argv[1])? else {
        return Ok(Reply::Integer(if want { -1 } else { 0 }));
    };
    let bytes = v.as_str()?.as_bytes();
    let byte_len = len_reply(bytes.len());
    let (range, bits, end_given) = match argv.len() {
        3 => (clamp(0, byte_len - 1, byte_len), false, false),
        4..=6 => {
            let start = int(&argv[3])?;
            let bits = match argv.get(5) {
                Some(unit) => unit_is_bit(unit)?,
                None => false,
            };
            let end = match argv.get(4) {
                Some(e) => Some(int(e)?),
                None => None,
            };
            let total = if bits { bit_len(bytes) } else { byte_len };
            let range = clamp(start, end.unwrap_or(total - 1), total);
            (range, bits, end.is_some())
        }
        _ => return Err(OpError::Syntax),
    };
    let Some((s, e)) = range else {
        return Ok(Reply::Integer(-1));
    };
    let (from, to) = if bits { (s, e) } else { (s * 8, e * 8 + 7) };
    let pos = match find_bit(bytes, want, from, to) {
        Some(p) => i64::try_from(p).unwrap_or(i64::MAX),
        None if want || end_given => -1,
        // The string reads as zero-padded on the right: the first bit past the range.
        None => i64::try_from(to + 1).unwrap_or(i64::MAX),
    };
    Ok(Reply::Integer(pos))
}

/// The first bit equal to `want` in the inclusive bit range `[from, to]` of `bytes`
/// (which the range lies inside), skipping whole words that cannot hold it.
fn find_bit(bytes: &[u8], want: bool, from: u64, to: u64) -> Option<u64> {
    let (first, last) = (byte_index(from), byte_index(to));
    // Bits to look at in the first and last bytes (the first bit is the high one).
    let head_mask = 0xFFu8 >> (from & 7);
    let tail_mask = 0xFFu8 << (7 - (to & 7));
    // A byte with the wanted bits set.
    let probe = |i: usize| -> u8 {
        let b = bytes.get(i).copied().unwrap_or(0);
        if want {
            b
        } else {
            !b
        }
    };
    let found = |i: usize, v: u8| (i as u64) * 8 + u64::from(v.leading_zeros());
    if first == last {
        let v = probe(first) & head_mask & tail_mask;
        return (v != 0).then(|| found(first, v));
    }
    let v = probe(first) & head_mask;
    if v != 0 {
        return Some(found(first, v));
    }
    let middle = bytes.get(first + 1..last).unwrap_or(&[]);
    if let Some(p) = first_bit(middle, want) {
        return Some((first as u64 + 1) * 8 + p);
    }
    let v = probe(last) & tail_mask;
    (v != 0).then(|| found(last, v))
}

/// The first bit equal to `want` in `bytes`: 64-byte blocks that cannot hold it are
/// skipped with one test each (eight words folded together), then the block that can
/// is searched a word at a time.
fn first_bit(bytes: &[u8], want: bool) -> Option<u64> {
    let skip = if want { 0 } else { u64::MAX };
    let (blocks, rest) = bytes.as_chunks::<64>();
    let start = blocks
        .iter()
        .position(|block| {
            let (words, _) = block.as_chunks::<8>();
            let folded = words.iter().fold(skip, |acc, w| {
                let w = u64::from_ne_bytes(*w);
                if want {
                    acc | w
                } else {
                    acc & w
                }
            });
            folded != skip
        })
        .map_or(blocks.len() * 64, |i| i * 64);
    let tail = bytes.get(start..).unwrap_or(rest);
    let (words, tail) = tail.as_chunks::<8>();
    let base = start as u64 * 8;
    for (i, w) in words.iter().enumerate() {
        let w = u64::from_be_bytes(*w);
        if w != skip {
            let w = if want { w } else { !w };
            return Some(base + i as u64 * 64 + u64::from(w.leading_zeros()));
        }
    }
    let base = base + words.len() as u64 * 64;
    tail.iter().enumerate().find_map(|(i, &b)| {
        let b = if want { b } else { !b };
        (b != 0).then(|| base + i as u64 * 8 + u64::from(b.leading_zeros()))
    })
}

/// A `BITOP` operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BitOp {
    And,
    Or,
    Xor,
    Not,
}

/// `BITOP AND|OR|XOR|NOT destkey key [key ...]`: combines the sources (missing keys
/// and the ends of shorter strings read as zero bytes) into `destkey`, as long as the
/// longest source; an empty result deletes `destkey`. Replies with the length.
pub(super) fn bitop(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let op = match &argv[1] {
        a if is_kw(a, "and") => BitOp::And,
        a if is_kw(a, "or") => BitOp::Or,
        a if is_kw(a, "xor") => BitOp::Xor,
        a if is_kw(a, "not") => BitOp::Not,
        _ => return Err(OpError::Syntax),
    };
    if op == BitOp::Not && argv.len() != 4 {
        return Err(OpError::custom(
            "ERR BITOP NOT must be called with a single source key.",
        ));
    }
    let db = ctx.db();
    let mut result: Vec<u8> = Vec::new();
    for (i, key) in argv[3..].iter().enumerate() {
        let src: &[u8] = match ctx.ks.get(db, key)? {
            None => &[],
            Some(v) => v.as_str()?.as_bytes(),
        };
        if i == 0 {
            result = src.to_vec();
            if op == BitOp::Not {
                combine(&mut result, &[], BitOp::Not);
            }
        } else {
            combine(&mut result, src, op);
        }
    }
    let dest = &argv[2];
    let len = result.len();
    if len > 0 {
        ctx.ks.set(db, dest, Value::Str(StrValue::raw(result)))?;
        ctx.notify(notify::STRING, "set", dest);
    } else if ctx.ks.remove(db, dest)?.is_some() {
        ctx.notify(notify::GENERIC, "del", dest);
    } else {
        ctx.effect = Effect::Nothing;
    }
    Ok(Reply::Integer(len_reply(len)))
}

/// Folds one more source into a `BITOP` result, eight bytes at a time. The result
/// grows to the longer of the two, the missing bytes of either reading as zeros
/// (`NOT` inverts the result and ignores `src`).
fn combine(result: &mut Vec<u8>, src: &[u8], op: BitOp) {
    let word_op = |a: u64, b: u64| match op {
        BitOp::And => a & b,
        BitOp::Or => a | b,
        BitOp::Xor => a ^ b,
        BitOp::Not => !a,
    };
    if op == BitOp::Not {
        let (words, tail) = result.as_chunks_mut::<8>();
        for w in words {
            *w = (!u64::from_ne_bytes(*w)).to_ne_bytes();
        }
        for b in tail {
            *b = !*b;
        }
        return;
    }
    if src.len() > result.len() {
        result.resize(src.len(), 0);
    }
    let (head, rest) = result.split_at_mut(src.len());
    let (words, tail) = head.as_chunks_mut::<8>();
    let (src_words, src_tail) = src.as_chunks::<8>();
    for (w, s) in words.iter_mut().zip(src_words) {
        *w = word_op(u64::from_ne_bytes(*w), u64::from_ne_bytes(*s)).to_ne_bytes();
    }
    for (b, s) in tail.iter_mut().zip(src_tail) {
        // The low byte of a byte-wide operation is the operation on the bytes.
        *b = word_op(u64::from(*b), u64::from(*s)) as u8;
    }
    // Past the end of `src` it reads as zeros: AND clears, OR and XOR keep.
    if op == BitOp::And {
        rest.fill(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Bit-by-bit reference counts, to check the word-at-a-time paths against.
    fn naive_count(bytes: &[u8], from: u64, to: u64) -> i64 {
        (from..=to)
            .filter(|&i| bytes[(i / 8) as usize] & (0x80 >> (i % 8)) != 0)
            .count() as i64
    }

    fn naive_find(bytes: &[u8], want: bool, from: u64, to: u64) -> Option<u64> {
        (from..=to).find(|&i| (bytes[(i / 8) as usize] & (0x80 >> (i % 8)) != 0) == want)
    }

    fn sample(len: usize, seed: u64) -> Vec<u8> {
        let mut x = seed | 1;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                // Runs of all-zero and all-one bytes, so the word skips are exercised.
                match x % 5 {
                    0 => 0,
                    1 => 0xFF,
                    _ => (x >> 8) as u8,
                }
            })
            .collect()
    }

    #[test]
    fn popcount_matches_a_bit_loop() {
        for len in [0, 1, 7, 8, 9, 31, 32, 33, 64, 100, 257] {
            let b = sample(len, len as u64 + 3);
            let naive = if len == 0 {
                0
            } else {
                naive_count(&b, 0, len as u64 * 8 - 1)
            };
            assert_eq!(popcount(&b), naive, "len {len}");
        }
    }

    #[test]
    fn ranges_match_a_bit_loop() {
        let b = sample(70, 11);
        for from in (0..560).step_by(13) {
            for to in (from..560).step_by(17) {
                assert_eq!(count_bit_range(&b, from, to), naive_count(&b, from, to));
                for want in [false, true] {
                    assert_eq!(
                        find_bit(&b, want, from, to),
                        naive_find(&b, want, from, to),
                        "{from}..={to} for {want}"
                    );
                }
            }
        }
        let zeros = vec![0u8; 40];
        assert_eq!(find_bit(&zeros, true, 3, 300), None);
        assert_eq!(find_bit(&zeros, false, 3, 300), Some(3));
        let ones = vec![0xFFu8; 40];
        assert_eq!(find_bit(&ones, false, 0, 319), None);
        assert_eq!(find_bit(&ones, true, 9, 9), Some(9));
    }

    #[test]
    fn one_odd_bit_is_found_past_skipped_blocks() {
        for pos in [0u64, 7, 63, 64, 511, 512, 513, 4000, 7999] {
            let mut zeros = vec![0u8; 1000];
            zeros[(pos / 8) as usize] |= 0x80 >> (pos % 8);
            let ones: Vec<u8> = zeros.iter().map(|b| !b).collect();
            assert_eq!(first_bit(&zeros, true), Some(pos));
            assert_eq!(first_bit(&ones, false), Some(pos));
            assert_eq!(find_bit(&zeros, true, 0, 7999), Some(pos));
            assert_eq!(find_bit(&ones, false, 3.min(pos), 7999), Some(pos));
            assert_eq!(count_bit_range(&zeros, 0, 7999), 1);
        }
        assert_eq!(first_bit(&[0u8; 1000], true), None);
        assert_eq!(first_bit(&[0xFFu8; 1000], false), None);
    }

    #[test]
    fn clamping_follows_redis() {
        assert_eq!(clamp(0, -1, 3), Some((0, 2)));
        assert_eq!(clamp(-100, 100, 3), Some((0, 2)));
        assert_eq!(clamp(2, 1, 3), None);
        assert_eq!(clamp(0, -1, 0), None);
        assert_eq!(clamp(i64::MIN, i64::MAX, 24), Some((0, 23)));
        assert_eq!(clamp(5, -100, 24), None);
    }

    #[test]
    fn combine_pads_with_zeros() {
        let long: Vec<u8> = (0..21).collect();
        let short = vec![0xF0u8; 10];
        for (op, f) in [
            (BitOp::And, (|a, b| a & b) as fn(u8, u8) -> u8),
            (BitOp::Or, |a, b| a | b),
            (BitOp::Xor, |a, b| a ^ b),
        ] {
            for (x, y) in [(&long, &short), (&short, &long)] {
                let mut r = x.clone();
                combine(&mut r, y, op);
                let expect: Vec<u8> = (0..21)
                    .map(|i| f(*x.get(i).unwrap_or(&0), *y.get(i).unwrap_or(&0)))
                    .collect();
                assert_eq!(r, expect, "{op:?}");
            }
        }
        let mut r = long.clone();
        combine(&mut r, &[], BitOp::Not);
        assert_eq!(r, long.iter().map(|b| !b).collect::<Vec<_>>());
    }
}
