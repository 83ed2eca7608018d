//! RDB's primitive encodings: lengths, strings (plain, integer-encoded or LZF), doubles
//! and millisecond times, written exactly as Redis writes them and read back with
//! every length checked against the bytes that are really there.
//!
//! | first byte | meaning |
//! |---|---|
//! | `00LLLLLL` | length `L` (0–63) |
//! | `01LLLLLL` `LLLLLLLL` | 14-bit length, big-endian |
//! | `0x80` + 4 bytes | 32-bit length, big-endian |
//! | `0x81` + 8 bytes | 64-bit length, big-endian |
//! | `0xC0` / `0xC1` / `0xC2` | a string that is an 8/16/32-bit integer (little-endian) |
//! | `0xC3` len(compressed) len(original) bytes | an LZF-compressed string |

use std::borrow::Cow;

use super::RdbError;
use crate::util::lzf;

const ENC_INT8: u8 = 0xC0;
const ENC_INT16: u8 = 0xC1;
const ENC_INT32: u8 = 0xC2;
const ENC_LZF: u8 = 0xC3;

/// Strings up to this long are tried as integers.
const INT_ENCODING_MAX: usize = 11;
/// Only strings longer than this are compressed.
const LZF_MIN: usize = 20;

/// Builds an RDB object.
pub(super) struct Writer {
    pub(super) out: Vec<u8>,
    /// `rdbcompression`: compress strings longer than 20 bytes when that saves 4.
    pub(super) compress: bool,
}

impl Writer {
    pub(super) fn new(compress: bool) -> Writer {
        Writer {
            out: Vec::new(),
            compress,
        }
    }

    pub(super) fn byte(&mut self, b: u8) {
        self.out.push(b);
    }

    /// A length (or any unsigned integer Redis saves as one).
    pub(super) fn len(&mut self, n: u64) {
        if n < 1 << 6 {
            self.out.push(n as u8);
        } else if n < 1 << 14 {
            self.out.push(0x40 | (n >> 8) as u8);
            self.out.push(n as u8);
        } else if n <= u64::from(u32::MAX) {
            self.out.push(0x80);
            self.out.extend_from_slice(&(n as u32).to_be_bytes());
        } else {
            self.out.push(0x81);
            self.out.extend_from_slice(&n.to_be_bytes());
        }
    }

    /// A string as `rdbSaveRawString` writes it: short canonical integers in their
    /// integer encoding, long strings LZF-compressed when that pays.
    pub(super) fn string(&mut self, s: &[u8]) {
        if s.len() <= INT_ENCODING_MAX {
            if let Some(v) = crate::util::num::parse_i64(s) {
                if self.int(v) {
                    return;
                }
            }
        }
        if self.compress && s.len() > LZF_MIN {
            if let Some(packed) = lzf::compress(s, s.len() - 4) {
                self.lzf_blob(&packed, s.len());
                return;
            }
        }
        self.len(s.len() as u64);
        self.out.extend_from_slice(s);
    }

    /// An already compressed string (`rdbSaveLzfBlob`).
    pub(super) fn lzf_blob(&mut self, packed: &[u8], original: usize) {
        self.out.push(ENC_LZF);
        self.len(packed.len() as u64);
        self.len(original as u64);
        self.out.extend_from_slice(packed);
    }

    /// An integer in the smallest integer encoding; false when it needs more than 32
    /// bits (the caller then writes it as text).
    fn int(&mut self, v: i64) -> bool {
        if let Ok(b) = i8::try_from(v) {
            self.out.extend_from_slice(&[ENC_INT8, b as u8]);
        } else if let Ok(h) = i16::try_from(v) {
            self.out.push(ENC_INT16);
            self.out.extend_from_slice(&h.to_le_bytes());
        } else if let Ok(w) = i32::try_from(v) {
            self.out.push(ENC_INT32);
            self.out.extend_from_slice(&w.to_le_bytes());
        } else {
            return false;
        }
        true
    }

    /// A double in binary (`RDB_TYPE_ZSET_2` scores).
    pub(super) fn binary_double(&mut self, v: f64) {
        self.out.extend_from_slice(&v.to_le_bytes());
    }

    /// Unix milliseconds (stream delivery and seen times).
    pub(super) fn millis(&mut self, ms: i64) {
        self.out.extend_from_slice(&ms.to_le_bytes());
    }

    /// Bytes as they are.
    pub(super) fn raw(&mut self, b: &[u8]) {
        self.out.extend_from_slice(b);
    }
}

/// Reads an RDB object without trusting any length in it.
pub(super) struct Reader<'a> {
    bytes: crate::util::codec::Reader<'a>,
    /// The longest string a decoded element may be (`proto-max-bulk-len`).
    max_string: usize,
}

/// A length, or the marker of a specially encoded string.
enum Len {
    Plain(u64),
    Encoded(u8),
}

impl<'a> Reader<'a> {
    pub(super) fn new(buf: &'a [u8], max_string: usize) -> Reader<'a> {
        Reader {
            bytes: crate::util::codec::Reader::new(buf),
            max_string,
        }
    }

    /// Bytes not read yet.
    pub(super) fn remaining(&self) -> usize {
        self.bytes.remaining()
    }

    pub(super) fn take(&mut self, n: usize) -> Result<&'a [u8], RdbError> {
        self.bytes.take(n).map_err(|m| RdbError::bad(m.0))
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], RdbError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }

    pub(super) fn byte(&mut self) -> Result<u8, RdbError> {
        Ok(self.array::<1>()?[0])
    }

    fn len_or_encoding(&mut self) -> Result<Len, RdbError> {
        let b = self.byte()?;
        Ok(match b >> 6 {
            0 => Len::Plain(u64::from(b & 0x3f)),
            1 => Len::Plain((u64::from(b & 0x3f) << 8) | u64::from(self.byte()?)),
            3 => Len::Encoded(b & 0x3f),
            _ if b == 0x80 => Len::Plain(u64::from(u32::from_be_bytes(self.array()?))),
            _ if b == 0x81 => Len::Plain(u64::from_be_bytes(self.array()?)),
            _ => return Err(RdbError::bad("unknown length encoding")),
        })
    }

    /// A length or unsigned integer.
    pub(super) fn len(&mut self) -> Result<u64, RdbError> {
        match self.len_or_encoding()? {
            Len::Plain(n) => Ok(n),
            Len::Encoded(_) => Err(RdbError::bad("a string encoding where a length belongs")),
        }
    }

    /// A count of items that each take at least `min_item` bytes: a count the bytes
    /// left cannot hold is refused before anything is reserved for it.
    pub(super) fn count(&mut self, min_item: usize) -> Result<usize, RdbError> {
        let n = self.len()?;
        match usize::try_from(n) {
            Ok(n) if n.saturating_mul(min_item.max(1)) <= self.remaining() => Ok(n),
            _ => Err(RdbError::bad("count larger than the payload")),
        }
    }

    /// A string, decoded from whichever encoding it has.
    pub(super) fn string(&mut self) -> Result<Cow<'a, [u8]>, RdbError> {
        match self.len_or_encoding()? {
            Len::Plain(n) => {
                let n = usize::try_from(n).map_err(|_| RdbError::bad("string too long"))?;
                if n > self.max_string {
                    return Err(RdbError::bad("string longer than proto-max-bulk-len"));
                }
                Ok(Cow::Borrowed(self.take(n)?))
            }
            Len::Encoded(0) => Ok(Cow::Owned(
                i64::from(self.byte()? as i8).to_string().into_bytes(),
            )),
            Len::Encoded(1) => Ok(Cow::Owned(
                i64::from(i16::from_le_bytes(self.array()?))
                    .to_string()
                    .into_bytes(),
            )),
            Len::Encoded(2) => Ok(Cow::Owned(
                i64::from(i32::from_le_bytes(self.array()?))
                    .to_string()
                    .into_bytes(),
            )),
            Len::Encoded(3) => {
                let packed = usize::try_from(self.len()?).unwrap_or(usize::MAX);
                let original = usize::try_from(self.len()?).unwrap_or(usize::MAX);
                if original > self.max_string || packed > self.remaining() {
                    return Err(RdbError::bad("invalid LZF string"));
                }
                let data = self.take(packed)?;
                lzf::decompress(data, original)
                    .map(Cow::Owned)
                    .ok_or(RdbError::bad("invalid LZF string"))
            }
            Len::Encoded(_) => Err(RdbError::bad("unknown string encoding")),
        }
    }

    /// A double in binary.
    pub(super) fn binary_double(&mut self) -> Result<f64, RdbError> {
        Ok(f64::from_le_bytes(self.array()?))
    }

    /// A double written as text (`RDB_TYPE_ZSET` of old Redis): a length byte (253
    /// NaN, 254 +inf, 255 -inf), then the number as `%.17g` printed it.
    pub(super) fn text_double(&mut self) -> Result<f64, RdbError> {
        match self.byte()? {
            253 => Ok(f64::NAN),
            254 => Ok(f64::INFINITY),
            255 => Ok(f64::NEG_INFINITY),
            n => {
                let text = self.take(usize::from(n))?;
                // `sscanf("%lg")`: leading blanks and trailing garbage are allowed.
                let start = text
                    .iter()
                    .position(|&c| !crate::util::strtod::is_c_space(c))
                    .unwrap_or(text.len());
                let r = crate::util::strtod::strtod(&text[start..]);
                if r.len == 0 {
                    return Err(RdbError::bad("invalid double"));
                }
                Ok(r.value)
            }
        }
    }

    /// Unix milliseconds.
    pub(super) fn millis(&mut self) -> Result<i64, RdbError> {
        Ok(i64::from_le_bytes(self.array()?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(f: impl FnOnce(&mut Writer)) -> Vec<u8> {
        let mut w = Writer::new(true);
        f(&mut w);
        w.out
    }

    #[test]
    fn lengths_use_the_shortest_form() {
        assert_eq!(written(|w| w.len(63)), [63]);
        assert_eq!(written(|w| w.len(64)), [0x40, 64]);
        assert_eq!(written(|w| w.len(16383)), [0x7f, 0xff]);
        assert_eq!(written(|w| w.len(16384)), [0x80, 0, 0, 0x40, 0]);
        assert_eq!(written(|w| w.len(u64::MAX))[0], 0x81);
        for n in [0, 63, 64, 16383, 16384, 1 << 32, u64::MAX] {
            let b = written(|w| w.len(n));
            assert_eq!(Reader::new(&b, usize::MAX).len(), Ok(n));
        }
    }

    #[test]
    fn strings_pick_redis_encodings() {
        assert_eq!(written(|w| w.string(b"123")), [0xC0, 123]);
        assert_eq!(written(|w| w.string(b"-129")), [0xC1, 0x7f, 0xff]);
        assert_eq!(written(|w| w.string(b"12345678901")), b"\x0b12345678901");
        assert_eq!(written(|w| w.string(b"007")), b"\x03007");
        let long = vec![b'a'; 40];
        let b = written(|w| w.string(&long));
        assert_eq!(b[0], ENC_LZF);
        let mut r = Reader::new(&b, usize::MAX);
        assert_eq!(r.string().expect("decodes").as_ref(), &long[..]);
        assert_eq!(r.remaining(), 0);
    }

    #[test]
    fn hostile_lengths_are_refused() {
        // A string claiming 2^40 bytes, an LZF string claiming a huge original.
        let mut r = Reader::new(b"\x81\x00\x00\x01\x00\x00\x00\x00\x00abc", 1 << 20);
        assert!(r.string().is_err());
        let mut r = Reader::new(b"\xc3\x02\x80\x7f\xff\xff\xff\x00a", 1 << 20);
        assert!(r.string().is_err());
        let mut r = Reader::new(b"\x80\x7f\xff\xff\xff", 1 << 20);
        assert!(r.count(1).is_err());
    }
}
