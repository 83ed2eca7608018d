//! Intsets, the encoding of small sets of integers: a width (2, 4 or 8 bytes), a
//! count, then the members sorted ascending, all little-endian.
//!
//! Pion writes the narrowest width that holds every member (Redis never narrows an
//! intset after a large member is removed, so its width can be wider for the same
//! members) and reads any width, checking that the members are sorted and distinct.

use super::RdbError;

/// The intset of `members` (sorted ascending, distinct).
pub fn build(members: &[i64]) -> Vec<u8> {
    let width: usize = if members.iter().all(|&v| i16::try_from(v).is_ok()) {
        2
    } else if members.iter().all(|&v| i32::try_from(v).is_ok()) {
        4
    } else {
        8
    };
    let mut out = Vec::with_capacity(8 + width * members.len());
    out.extend_from_slice(&(width as u32).to_le_bytes());
    out.extend_from_slice(&(members.len() as u32).to_le_bytes());
    for &v in members {
        out.extend_from_slice(&v.to_le_bytes()[..width]);
    }
    out
}

/// The members of an intset, validated.
pub fn parse(blob: &[u8]) -> Result<Vec<i64>, RdbError> {
    let bad = || RdbError::bad("invalid intset");
    if blob.len() < 8 {
        return Err(bad());
    }
    let width = u32::from_le_bytes([blob[0], blob[1], blob[2], blob[3]]) as usize;
    let count = u32::from_le_bytes([blob[4], blob[5], blob[6], blob[7]]) as usize;
    if !matches!(width, 2 | 4 | 8) || count.checked_mul(width) != Some(blob.len() - 8) {
        return Err(bad());
    }
    let mut out = Vec::with_capacity(count);
    for c in blob[8..].chunks_exact(width) {
        let v = match width {
            2 => i64::from(i16::from_le_bytes([c[0], c[1]])),
            4 => i64::from(i32::from_le_bytes([c[0], c[1], c[2], c[3]])),
            _ => i64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]),
        };
        if out.last().is_some_and(|&last| last >= v) {
            return Err(bad());
        }
        out.push(v);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_at_each_width() {
        // `SADD st 1 2 3` on redis-server 7.0.
        assert_eq!(
            build(&[1, 2, 3]),
            b"\x02\x00\x00\x00\x03\x00\x00\x00\x01\x00\x02\x00\x03\x00"
        );
        for set in [vec![-5, 7], vec![1, 70_000], vec![i64::MIN, 0, i64::MAX]] {
            assert_eq!(parse(&build(&set)), Ok(set));
        }
        assert!(parse(b"\x02\x00\x00\x00\x02\x00\x00\x00\x02\x00\x01\x00").is_err());
        assert!(parse(b"\x03\x00\x00\x00\x00\x00\x00\x00").is_err());
        assert!(parse(b"\x02\x00\x00\x00\xff\xff\xff\xff").is_err());
    }
}
