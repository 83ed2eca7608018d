//! Listpacks, Redis 7's compact sequence of strings and integers: built entry by
//! entry exactly as `lpAppend` lays them out, and parsed with every check Redis's
//! deep sanitisation makes (sizes, back-lengths, element count, terminator).
//!
//! | part | bytes |
//! |---|---|
//! | header | total bytes (u32 LE), element count (u16 LE, 65535 = unknown) |
//! | entry | encoding and data, then the entry's length as a back-length |
//! | end | `0xFF` |
//!
//! | encoding | meaning |
//! |---|---|
//! | `0xxxxxxx` | 7-bit unsigned integer |
//! | `10LLLLLL` + L bytes | string up to 63 bytes |
//! | `110xxxxx` `xxxxxxxx` | 13-bit signed integer |
//! | `1110LLLL` `LLLLLLLL` + L bytes | string up to 4095 bytes |
//! | `0xF0` u32 LE + bytes | longer string |
//! | `0xF1` / `0xF2` / `0xF3` / `0xF4` | 16/24/32/64-bit signed integer, LE |
//!
//! A back-length is the entry's size in 7-bit groups, most significant first, every
//! byte but the first with its top bit set, so the list can be walked backwards.

use super::RdbError;

/// One element of a listpack (or ziplist): a string or an integer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Item<'a> {
    /// A string.
    Str(&'a [u8]),
    /// An integer (stored in an integer encoding).
    Int(i64),
}

impl Item<'_> {
    /// The element as the string Redis returns for it.
    pub fn to_bytes(self) -> Vec<u8> {
        match self {
            Item::Str(s) => s.to_vec(),
            Item::Int(v) => v.to_string().into_bytes(),
        }
    }

    /// The element as an integer: an integer entry, or a string that is one.
    pub fn as_int(self) -> Option<i64> {
        match self {
            Item::Int(v) => Some(v),
            Item::Str(s) => crate::util::num::parse_i64(s),
        }
    }

    /// Length of the element as a string.
    pub fn text_len(self) -> usize {
        match self {
            Item::Str(s) => s.len(),
            Item::Int(v) => v.to_string().len(),
        }
    }
}

const HEADER: usize = 6;
const EOF: u8 = 0xFF;
/// The element count that means "count them".
const COUNT_UNKNOWN: u16 = u16::MAX;

/// The size of a back-length for an entry of `len` bytes.
fn backlen_size(len: usize) -> usize {
    match len {
        0..=127 => 1,
        128..=16382 => 2,
        16383..=2_097_150 => 3,
        2_097_151..=268_435_454 => 4,
        _ => 5,
    }
}

/// The bytes an integer entry takes in a listpack (back-length included).
pub fn int_size(v: i64) -> usize {
    let size = if (0..=127).contains(&v) {
        1
    } else if (-4096..=4095).contains(&v) {
        2
    } else if i16::try_from(v).is_ok() {
        3
    } else if (-(1 << 23)..(1 << 23)).contains(&v) {
        4
    } else if i32::try_from(v).is_ok() {
        5
    } else {
        9
    };
    size + 1
}

/// The bytes a string entry takes in a listpack as `lpAppend` stores it (a canonical
/// integer as an integer; back-length included).
pub fn element_size(s: &[u8]) -> usize {
    if let Some(v) = crate::util::num::parse_i64(s) {
        return int_size(v);
    }
    let header = match s.len() {
        0..=63 => 1,
        64..=4095 => 2,
        _ => 5,
    };
    let size = header + s.len();
    size + backlen_size(size)
}

/// A listpack's header and end byte.
pub const OVERHEAD: usize = HEADER + 1;

/// A listpack being built.
#[derive(Debug, Clone)]
pub struct Builder {
    buf: Vec<u8>,
    count: usize,
}

impl Default for Builder {
    fn default() -> Self {
        Builder::new()
    }
}

/// Writes the back-length of an entry of `len` bytes.
fn push_backlen(out: &mut Vec<u8>, len: usize) {
    let l = len as u64;
    let groups = backlen_size(len) as u32;
    for g in (0..groups).rev() {
        let bits = ((l >> (7 * g)) & 127) as u8;
        out.push(if g == groups - 1 { bits } else { bits | 128 });
    }
}

impl Builder {
    /// An empty listpack.
    pub fn new() -> Builder {
        Builder {
            buf: vec![0; HEADER],
            count: 0,
        }
    }

    /// Elements so far.
    pub fn count(&self) -> usize {
        self.count
    }

    /// The listpack's total size if it were finished now (Redis's `lpBytes`).
    pub fn bytes(&self) -> usize {
        self.buf.len() + 1
    }

    /// Appends a string; one that is a canonical integer is stored as an integer, as
    /// `lpAppend` does.
    pub fn push(&mut self, s: &[u8]) {
        match crate::util::num::parse_i64(s) {
            Some(v) => self.push_int(v),
            None => self.push_str(s),
        }
    }

    /// Appends an integer.
    pub fn push_int(&mut self, v: i64) {
        let start = self.buf.len();
        if (0..=127).contains(&v) {
            self.buf.push(v as u8);
        } else if (-4096..=4095).contains(&v) {
            let u = if v < 0 { (1 << 13) + v } else { v } as u16;
            self.buf.push(0xC0 | (u >> 8) as u8);
            self.buf.push(u as u8);
        } else if let Ok(h) = i16::try_from(v) {
            self.buf.push(0xF1);
            self.buf.extend_from_slice(&h.to_le_bytes());
        } else if (-(1 << 23)..(1 << 23)).contains(&v) {
            self.buf.push(0xF2);
            self.buf.extend_from_slice(&(v as i32).to_le_bytes()[..3]);
        } else if let Ok(w) = i32::try_from(v) {
            self.buf.push(0xF3);
            self.buf.extend_from_slice(&w.to_le_bytes());
        } else {
            self.buf.push(0xF4);
            self.buf.extend_from_slice(&v.to_le_bytes());
        }
        let len = self.buf.len() - start;
        push_backlen(&mut self.buf, len);
        self.count += 1;
    }

    fn push_str(&mut self, s: &[u8]) {
        let start = self.buf.len();
        let n = s.len();
        if n < 64 {
            self.buf.push(0x80 | n as u8);
        } else if n < 4096 {
            self.buf.push(0xE0 | (n >> 8) as u8);
            self.buf.push(n as u8);
        } else {
            self.buf.push(0xF0);
            self.buf.extend_from_slice(&(n as u32).to_le_bytes());
        }
        self.buf.extend_from_slice(s);
        let len = self.buf.len() - start;
        push_backlen(&mut self.buf, len);
        self.count += 1;
    }

    /// The finished listpack.
    pub fn finish(mut self) -> Vec<u8> {
        self.buf.push(EOF);
        let total = self.buf.len() as u32;
        self.buf[..4].copy_from_slice(&total.to_le_bytes());
        let count = u16::try_from(self.count).unwrap_or(COUNT_UNKNOWN);
        self.buf[4..6].copy_from_slice(&count.to_le_bytes());
        self.buf
    }
}

/// The size of the entry encoding at `p[0]` (encoding and data, without the
/// back-length) and its element, or `None` when it is invalid or overruns `p`.
fn entry(p: &[u8]) -> Option<(usize, Item<'_>)> {
    let b = *p.first()?;
    let byte = |i: usize| p.get(i).copied();
    let (size, item) = if b & 0x80 == 0 {
        (1, Item::Int(i64::from(b)))
    } else if b & 0xC0 == 0x80 {
        let n = usize::from(b & 0x3f);
        (1 + n, Item::Str(p.get(1..1 + n)?))
    } else if b & 0xE0 == 0xC0 {
        let u = (i64::from(b & 0x1f) << 8) | i64::from(byte(1)?);
        let v = if u >= 1 << 12 { u - (1 << 13) } else { u };
        (2, Item::Int(v))
    } else if b & 0xF0 == 0xE0 {
        let n = (usize::from(b & 0x0f) << 8) | usize::from(byte(1)?);
        (2 + n, Item::Str(p.get(2..2 + n)?))
    } else {
        match b {
            0xF0 => {
                let n = u32::from_le_bytes(p.get(1..5)?.try_into().ok()?) as usize;
                (5 + n, Item::Str(p.get(5..5usize.checked_add(n)?)?))
            }
            0xF1 => (
                3,
                Item::Int(i64::from(i16::from_le_bytes(p.get(1..3)?.try_into().ok()?))),
            ),
            0xF2 => {
                let b3 = p.get(1..4)?;
                let v = i32::from_le_bytes([0, b3[0], b3[1], b3[2]]) >> 8;
                (4, Item::Int(i64::from(v)))
            }
            0xF3 => (
                5,
                Item::Int(i64::from(i32::from_le_bytes(p.get(1..5)?.try_into().ok()?))),
            ),
            0xF4 => (
                9,
                Item::Int(i64::from_le_bytes(p.get(1..9)?.try_into().ok()?)),
            ),
            _ => return None,
        }
    };
    Some((size, item))
}

/// Parses and validates a whole listpack.
pub fn parse(lp: &[u8]) -> Result<Vec<Item<'_>>, RdbError> {
    let bad = || RdbError::bad("invalid listpack");
    if lp.len() < HEADER + 1 {
        return Err(bad());
    }
    let total = u32::from_le_bytes([lp[0], lp[1], lp[2], lp[3]]) as usize;
    let declared = u16::from_le_bytes([lp[4], lp[5]]);
    if total != lp.len() || lp[lp.len() - 1] != EOF {
        return Err(bad());
    }
    let body = &lp[HEADER..lp.len() - 1];
    let mut items = Vec::with_capacity(usize::from(declared).min(body.len()));
    let mut at = 0;
    let mut backlen = Vec::with_capacity(5);
    while at < body.len() {
        let (size, item) = entry(&body[at..]).ok_or_else(bad)?;
        backlen.clear();
        push_backlen(&mut backlen, size);
        let end = at + size;
        if body.get(end..end + backlen.len()) != Some(&backlen[..]) {
            return Err(bad());
        }
        items.push(item);
        at = end + backlen.len();
    }
    if declared != COUNT_UNKNOWN && usize::from(declared) != items.len() {
        return Err(bad());
    }
    Ok(items)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn lays_out_entries_as_redis_does() {
        // The listpack of `HSET h f v n 1`, as redis-server 7.0 DUMPs it.
        let mut b = Builder::new();
        for s in [&b"f"[..], b"v", b"n", b"1"] {
            b.push(s);
        }
        assert_eq!(
            b.finish(),
            b"\x12\x00\x00\x00\x04\x00\x81f\x02\x81v\x02\x81n\x02\x01\x01\xff".to_vec()
        );
    }

    #[test]
    fn integers_take_their_smallest_encoding() {
        for (v, size) in [
            (0i64, 1usize),
            (127, 1),
            (128, 2),
            (-4096, 2),
            (4096, 3),
            (-32769, 4),
            (1 << 23, 5),
            (i64::MIN, 9),
        ] {
            let mut b = Builder::new();
            b.push_int(v);
            let lp = b.finish();
            assert_eq!(lp.len(), HEADER + size + 1 + 1, "{v}");
            assert_eq!(parse(&lp).expect("valid"), vec![Item::Int(v)]);
        }
    }

    #[test]
    fn refuses_damage() {
        let mut b = Builder::new();
        b.push(b"hello");
        b.push(&vec![b'x'; 5000]);
        let lp = b.finish();
        assert!(parse(&lp).is_ok());
        for cut in 0..lp.len() {
            let mut bad = lp.clone();
            bad[cut] ^= 0x41;
            // Only a flip inside a string's data may still parse.
            if let Ok(items) = parse(&bad) {
                assert_eq!(items.len(), 2);
            }
        }
        let mut wrong_count = lp.clone();
        wrong_count[4] = 3;
        assert!(parse(&wrong_count).is_err());
        assert!(parse(&lp[..lp.len() - 1]).is_err());
    }

    proptest! {
        #[test]
        fn sizes_match_what_is_built(items in proptest::collection::vec(prop_oneof![
            any::<i64>().prop_map(|v| v.to_string().into_bytes()),
            proptest::collection::vec(any::<u8>(), 0..5000),
        ], 0..10)) {
            let mut b = Builder::new();
            let mut want = OVERHEAD;
            for s in &items {
                b.push(s);
                want += element_size(s);
            }
            prop_assert_eq!(b.finish().len(), want);
        }

        #[test]
        fn round_trips(items in proptest::collection::vec(prop_oneof![
            any::<i64>().prop_map(|v| v.to_string().into_bytes()),
            proptest::collection::vec(any::<u8>(), 0..300),
        ], 0..40)) {
            let mut b = Builder::new();
            for s in &items { b.push(s); }
            let n = b.bytes();
            let lp = b.finish();
            prop_assert_eq!(lp.len(), n);
            let back: Vec<Vec<u8>> = parse(&lp).expect("valid").into_iter().map(Item::to_bytes).collect();
            prop_assert_eq!(back, items);
        }

        #[test]
        fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..100)) {
            let _ = parse(&data);
        }
    }
}
