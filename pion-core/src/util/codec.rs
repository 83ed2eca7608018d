//! Little-endian framing helpers shared by the log and the snapshot format: a reader
//! that never panics on short or hostile input, and the checksum both formats use.

/// CRC32C (Castagnoli) of `data`, hardware-accelerated where the CPU has it.
pub fn crc(data: &[u8]) -> u32 {
    crc32c::crc32c(data)
}

/// Extends a CRC32C with more bytes.
pub fn crc_extend(crc: u32, data: &[u8]) -> u32 {
    crc32c::crc32c_append(crc, data)
}

/// Appends a `u32`.
pub fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// Appends a `u64`.
pub fn put_u64(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// Appends an `i64`.
pub fn put_i64(out: &mut Vec<u8>, v: i64) {
    out.extend_from_slice(&v.to_le_bytes());
}

/// Appends a length-prefixed byte string.
pub fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_u32(out, b.len() as u32);
    out.extend_from_slice(b);
}

/// What a decoder found wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed(pub &'static str);

impl Malformed {
    /// As a [`DecodeError`] of `format`.
    pub fn in_format(self, format: &'static str) -> DecodeError {
        DecodeError::new(format, self.0)
    }
}

/// Why stored bytes do not decode: the format being read, what is wrong, and where
/// when that is known. Every decoder of a durable format (snapshot sections, keys,
/// log records, search and vector indexes, the prompt cache's state) returns it, and
/// recovery hands it to the operator with the file's name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    /// The format or part of it (`snapshot`, `key`, `vector index`, …).
    pub format: &'static str,
    /// What is wrong.
    pub what: std::borrow::Cow<'static, str>,
    /// The byte offset in the input being read, where known.
    pub offset: Option<u64>,
}

impl DecodeError {
    /// `what` is wrong in `format`.
    pub fn new(
        format: &'static str,
        what: impl Into<std::borrow::Cow<'static, str>>,
    ) -> DecodeError {
        DecodeError {
            format,
            what: what.into(),
            offset: None,
        }
    }

    /// The same, found at byte `offset` (kept if one is set already: the innermost
    /// place is the most precise).
    pub fn at(mut self, offset: usize) -> DecodeError {
        self.offset.get_or_insert(offset as u64);
        self
    }
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.format, self.what)?;
        if let Some(at) = self.offset {
            write!(f, " at offset {at}")?;
        }
        Ok(())
    }
}

impl std::error::Error for DecodeError {}

/// A cursor over untrusted bytes.
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `buf`.
    pub fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader { buf, pos: 0 }
    }

    /// Bytes consumed so far.
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Bytes left.
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// The next `n` bytes.
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], Malformed> {
        if self.remaining() < n {
            return Err(Malformed("truncated"));
        }
        let out = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(out)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], Malformed> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N)?);
        Ok(a)
    }

    /// A byte.
    pub fn u8(&mut self) -> Result<u8, Malformed> {
        Ok(self.array::<1>()?[0])
    }

    /// A `u32`.
    pub fn u32(&mut self) -> Result<u32, Malformed> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    /// A `u64`.
    pub fn u64(&mut self) -> Result<u64, Malformed> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    /// An `i64`.
    pub fn i64(&mut self) -> Result<i64, Malformed> {
        Ok(i64::from_le_bytes(self.array()?))
    }

    /// A length-prefixed byte string.
    pub fn bytes(&mut self) -> Result<&'a [u8], Malformed> {
        let n = self.u32()? as usize;
        self.take(n)
    }

    /// A count that must be plausible for the bytes left (each item needs at least
    /// `min_item` bytes), so a corrupt count cannot make the caller reserve gigabytes.
    pub fn count(&mut self, min_item: usize) -> Result<usize, Malformed> {
        let n = self.u32()? as usize;
        if n.saturating_mul(min_item.max(1)) > self.remaining() {
            return Err(Malformed("count larger than the data"));
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_decode_error_names_its_format_and_keeps_the_innermost_offset() {
        let e = Malformed("truncated").in_format("key").at(17).at(3);
        assert_eq!(e.offset, Some(17));
        assert_eq!(e.to_string(), "key: truncated at offset 17");
        assert_eq!(
            DecodeError::new("snapshot", "bad magic").to_string(),
            "snapshot: bad magic"
        );
    }

    #[test]
    fn reader_refuses_short_input_and_huge_counts() {
        let mut out = Vec::new();
        put_u32(&mut out, 7);
        put_bytes(&mut out, b"abc");
        let mut r = Reader::new(&out);
        assert_eq!(r.u32(), Ok(7));
        assert_eq!(r.bytes(), Ok(&b"abc"[..]));
        assert_eq!(r.u8(), Err(Malformed("truncated")));
        let mut r = Reader::new(&[0xff, 0xff, 0xff, 0x7f, 1]);
        assert!(r.count(4).is_err());
    }

    #[test]
    fn crc_extends_like_one_pass() {
        assert_eq!(crc_extend(crc(b"hello "), b"world"), crc(b"hello world"));
        // The Castagnoli check value.
        assert_eq!(crc(b"123456789"), 0xE306_9283);
    }
}
