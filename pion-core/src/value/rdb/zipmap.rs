//! Zipmaps, the small-hash encoding of Redis before 2.6: read when an old payload is
//! restored.
//!
//! | part | bytes |
//! |---|---|
//! | header | entry count (1 byte; 254 or more: count them) |
//! | entry | key length, key, value length, free bytes (1 byte), value, the free bytes |
//! | end | `0xFF` |
//!
//! A length is one byte below 254, or `0xFE` and a u32 (little-endian).

use super::RdbError;

/// A length at the start of `p` and its size.
fn length(p: &[u8]) -> Option<(usize, usize)> {
    match *p.first()? {
        0xFE => Some((
            u32::from_le_bytes(p.get(1..5)?.try_into().ok()?) as usize,
            5,
        )),
        0xFF => None,
        n => Some((usize::from(n), 1)),
    }
}

/// A field and its value, borrowed from the zipmap.
pub type Pair<'a> = (&'a [u8], &'a [u8]);

/// The field/value pairs of a zipmap, validated.
pub fn parse(zm: &[u8]) -> Result<Vec<Pair<'_>>, RdbError> {
    let bad = || RdbError::bad("invalid zipmap");
    let declared = usize::from(*zm.first().ok_or_else(bad)?);
    let slice = |from: usize, n: usize| from.checked_add(n).and_then(|to| zm.get(from..to));
    let mut at = 1;
    let mut pairs = Vec::new();
    while zm.get(at) != Some(&0xFF) {
        let (klen, ksize) = length(zm.get(at..).ok_or_else(bad)?).ok_or_else(bad)?;
        let key = slice(at + ksize, klen).ok_or_else(bad)?;
        at += ksize + klen;
        let (vlen, vsize) = length(zm.get(at..).ok_or_else(bad)?).ok_or_else(bad)?;
        let free = usize::from(*zm.get(at + vsize).ok_or_else(bad)?);
        let value = slice(at + vsize + 1, vlen).ok_or_else(bad)?;
        at += vsize + 1 + vlen + free;
        if at >= zm.len() {
            return Err(bad());
        }
        pairs.push((key, value));
    }
    if at + 1 != zm.len() || (declared < 254 && declared != pairs.len()) {
        return Err(bad());
    }
    Ok(pairs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_pairs_and_skips_free_bytes() {
        let zm = b"\x02\x03foo\x03\x00bar\x01a\x01\x02b__\xff";
        assert_eq!(
            parse(zm),
            Ok(vec![(&b"foo"[..], &b"bar"[..]), (&b"a"[..], &b"b"[..])])
        );
        assert!(parse(b"\x01\x03foo\x03\x00bar\x01a\x01\x02b__\xff").is_err());
        assert!(parse(b"\x02\x03foo\x03\x00bar\x01a\x01\x09b__\xff").is_err());
        assert!(parse(b"\x00").is_err());
    }
}
