//! Ziplists, the compact encoding of Redis before 7.0: read (never written) when an
//! old payload is restored, with the checks of Redis's deep sanitisation.
//!
//! | part | bytes |
//! |---|---|
//! | header | total bytes (u32 LE), offset of the last entry (u32 LE), entry count (u16 LE, 65535 = unknown) |
//! | entry | previous entry's size (1 byte, or `0xFE` + u32 LE), encoding, data |
//! | end | `0xFF` |
//!
//! | encoding | meaning |
//! |---|---|
//! | `00LLLLLL` | string up to 63 bytes |
//! | `01LLLLLL` `LLLLLLLL` | string up to 16383 bytes (length big-endian) |
//! | `0x80` + u32 BE | longer string |
//! | `0xC0` / `0xD0` / `0xE0` / `0xF0` / `0xFE` | 16 / 32 / 64 / 24 / 8-bit signed integer, LE |
//! | `0xF1`–`0xFD` | the integers 0–12 |

use super::listpack::Item;
use super::RdbError;

const HEADER: usize = 10;
const EOF: u8 = 0xFF;

/// One entry at the start of `p`: its total size and element, or `None` when it is
/// invalid or overruns `p`.
fn entry(p: &[u8]) -> Option<(usize, usize, Item<'_>)> {
    let (prevlen, prev_size) = match *p.first()? {
        0xFE => (
            u32::from_le_bytes(p.get(1..5)?.try_into().ok()?) as usize,
            5,
        ),
        0xFF => return None,
        n => (usize::from(n), 1),
    };
    let e = p.get(prev_size..)?;
    let b = *e.first()?;
    let int = |n: usize| e.get(1..1 + n);
    let (size, item) = match b >> 6 {
        0 => {
            let n = usize::from(b & 0x3f);
            (1 + n, Item::Str(e.get(1..1 + n)?))
        }
        1 => {
            let n = (usize::from(b & 0x3f) << 8) | usize::from(*e.get(1)?);
            (2 + n, Item::Str(e.get(2..2 + n)?))
        }
        2 if b == 0x80 => {
            let n = u32::from_be_bytes(e.get(1..5)?.try_into().ok()?) as usize;
            (5 + n, Item::Str(e.get(5..5usize.checked_add(n)?)?))
        }
        2 => return None,
        _ => match b {
            0xC0 => (
                3,
                Item::Int(i64::from(i16::from_le_bytes(int(2)?.try_into().ok()?))),
            ),
            0xD0 => (
                5,
                Item::Int(i64::from(i32::from_le_bytes(int(4)?.try_into().ok()?))),
            ),
            0xE0 => (9, Item::Int(i64::from_le_bytes(int(8)?.try_into().ok()?))),
            0xF0 => {
                let b3 = int(3)?;
                (
                    4,
                    Item::Int(i64::from(i32::from_le_bytes([0, b3[0], b3[1], b3[2]]) >> 8)),
                )
            }
            0xFE => (2, Item::Int(i64::from(*e.get(1)? as i8))),
            0xF1..=0xFD => (1, Item::Int(i64::from(b & 0x0f) - 1)),
            _ => return None,
        },
    };
    Some((prevlen, prev_size + size, item))
}

/// Parses and validates a whole ziplist.
pub fn parse(zl: &[u8]) -> Result<Vec<Item<'_>>, RdbError> {
    let bad = || RdbError::bad("invalid ziplist");
    if zl.len() < HEADER + 1 {
        return Err(bad());
    }
    let total = u32::from_le_bytes([zl[0], zl[1], zl[2], zl[3]]) as usize;
    let tail = u32::from_le_bytes([zl[4], zl[5], zl[6], zl[7]]) as usize;
    let declared = u16::from_le_bytes([zl[8], zl[9]]);
    if total != zl.len() || zl[zl.len() - 1] != EOF {
        return Err(bad());
    }
    let end = zl.len() - 1;
    let mut items = Vec::with_capacity(usize::from(declared).min(end));
    let mut at = HEADER;
    let mut prev_size = 0;
    let mut last_start = HEADER;
    while at < end {
        let (prevlen, size, item) = entry(&zl[at..end]).ok_or_else(bad)?;
        if prevlen != prev_size {
            return Err(bad());
        }
        items.push(item);
        last_start = at;
        prev_size = size;
        at += size;
    }
    if at != end || tail != last_start {
        return Err(bad());
    }
    if declared != u16::MAX && usize::from(declared) != items.len() {
        return Err(bad());
    }
    Ok(items)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ziplist built by hand: entries as (encoding+data) byte strings.
    pub(crate) fn build(entries: &[&[u8]]) -> Vec<u8> {
        let mut body = Vec::new();
        let mut prev = 0usize;
        let mut last = HEADER;
        for e in entries {
            last = HEADER + body.len();
            if prev < 254 {
                body.push(prev as u8);
            } else {
                body.push(0xFE);
                body.extend_from_slice(&(prev as u32).to_le_bytes());
            }
            body.extend_from_slice(e);
            prev = e.len() + if prev < 254 { 1 } else { 5 };
        }
        let mut zl = Vec::new();
        zl.extend_from_slice(&((HEADER + body.len() + 1) as u32).to_le_bytes());
        zl.extend_from_slice(&(last as u32).to_le_bytes());
        zl.extend_from_slice(&(entries.len() as u16).to_le_bytes());
        zl.extend_from_slice(&body);
        zl.push(EOF);
        zl
    }

    #[test]
    fn reads_every_encoding() {
        let long = [&[0x80u8, 0, 0, 1, 0][..], &[b'z'; 256][..]].concat();
        let mid = [&[0x41u8, 0x2c][..], &[b'y'; 300][..]].concat();
        let zl = build(&[
            b"\x03abc",
            &mid,
            &long,
            b"\xc0\x00\x80",
            b"\xd0\xff\xff\xff\x7f",
            b"\xe0\x00\x00\x00\x00\x00\x00\x00\x80",
            b"\xf0\xff\xff\xff",
            b"\xfe\x80",
            b"\xf1",
            b"\xfd",
        ]);
        let items = parse(&zl).expect("valid");
        assert_eq!(items[0], Item::Str(b"abc"));
        assert_eq!(items[1].text_len(), 300);
        assert_eq!(items[2].text_len(), 256);
        let ints: Vec<Option<i64>> = items[3..].iter().map(|i| i.as_int()).collect();
        assert_eq!(
            ints,
            [
                Some(-32768),
                Some(i32::MAX as i64),
                Some(i64::MIN),
                Some(-1),
                Some(-128),
                Some(0),
                Some(12)
            ]
        );
        for i in 0..zl.len() {
            let mut bad = zl.clone();
            bad[i] = bad[i].wrapping_add(1);
            let _ = parse(&bad);
        }
        assert!(parse(&zl[..zl.len() - 2]).is_err());
    }
}
