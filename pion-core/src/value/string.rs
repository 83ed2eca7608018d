//! The string type: binary-safe bytes with Redis's `int` / `embstr` / `raw` encodings.

/// How a string is encoded, as `OBJECT ENCODING` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StrEncoding {
    /// A decimal integer that fits in an `i64` (at most 20 bytes).
    Int,
    /// A short string (at most 44 bytes) created in one piece.
    Embstr,
    /// Any other string, or one modified in place (`APPEND`, `SETRANGE`).
    Raw,
}

/// A string value. Strings of up to [`INLINE`] bytes (integers, flags, short ids: most
/// values in real keyspaces) live inside the value itself, with no heap block of their
/// own; longer ones, and any string edited in place, keep their bytes on the heap.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StrValue {
    repr: Repr,
}

/// Longest string held inline (the value stays 32 bytes, the size of its heap form).
pub const INLINE: usize = 29;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Repr {
    Inline {
        encoding: StrEncoding,
        len: u8,
        bytes: [u8; INLINE],
    },
    Heap {
        encoding: StrEncoding,
        bytes: Vec<u8>,
    },
}

/// Longest string Redis stores as `embstr`.
const EMBSTR_MAX: usize = 44;

impl StrValue {
    fn with(bytes: Vec<u8>, encoding: StrEncoding) -> StrValue {
        let repr = match bytes.len() {
            len @ 0..=INLINE if encoding != StrEncoding::Raw => {
                let mut inline = [0u8; INLINE];
                inline[..len].copy_from_slice(&bytes);
                Repr::Inline {
                    encoding,
                    // `len` is at most INLINE (29).
                    len: len as u8,
                    bytes: inline,
                }
            }
            _ => Repr::Heap { encoding, bytes },
        };
        StrValue { repr }
    }

    /// A string created from bytes in one piece, encoded as Redis would.
    pub fn new(bytes: Vec<u8>) -> StrValue {
        let encoding = if bytes.len() <= 20 && crate::util::num::parse_i64(&bytes).is_some() {
            StrEncoding::Int
        } else if bytes.len() <= EMBSTR_MAX {
            StrEncoding::Embstr
        } else {
            StrEncoding::Raw
        };
        StrValue::with(bytes, encoding)
    }

    /// A string built from text that Redis never tries to store as an integer
    /// (`INCRBYFLOAT` results): `embstr` when short, `raw` otherwise.
    pub fn text(bytes: Vec<u8>) -> StrValue {
        let encoding = if bytes.len() <= EMBSTR_MAX {
            StrEncoding::Embstr
        } else {
            StrEncoding::Raw
        };
        StrValue::with(bytes, encoding)
    }

    /// A string that starts out `raw`, as one grown in place by `SETRANGE` does.
    pub fn raw(bytes: Vec<u8>) -> StrValue {
        StrValue::with(bytes, StrEncoding::Raw)
    }

    /// A string holding an integer.
    pub fn from_int(v: i64) -> StrValue {
        StrValue::with(v.to_string().into_bytes(), StrEncoding::Int)
    }

    /// The bytes.
    #[inline]
    pub fn as_bytes(&self) -> &[u8] {
        match &self.repr {
            Repr::Inline { len, bytes, .. } => &bytes[..usize::from(*len)],
            Repr::Heap { bytes, .. } => bytes,
        }
    }

    /// Consumes the value, returning its bytes.
    pub fn into_bytes(self) -> Vec<u8> {
        match self.repr {
            Repr::Inline { len, bytes, .. } => bytes[..usize::from(len)].to_vec(),
            Repr::Heap { bytes, .. } => bytes,
        }
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.as_bytes().len()
    }

    /// Whether the string is empty.
    pub fn is_empty(&self) -> bool {
        self.as_bytes().is_empty()
    }

    /// The integer this string holds, if it is a strict decimal `i64`.
    pub fn as_int(&self) -> Option<i64> {
        crate::util::num::parse_i64(self.as_bytes())
    }

    /// Mutable access to the bytes for in-place edits; the encoding becomes `raw`,
    /// as it does in Redis after `APPEND` or `SETRANGE` (and the bytes move to the
    /// heap, where a string that grows in place belongs).
    pub fn bytes_mut(&mut self) -> &mut Vec<u8> {
        if let Repr::Inline { len, bytes, .. } = &self.repr {
            let heap = bytes[..usize::from(*len)].to_vec();
            self.repr = Repr::Heap {
                encoding: StrEncoding::Raw,
                bytes: heap,
            };
        }
        match &mut self.repr {
            Repr::Heap { encoding, bytes } => {
                *encoding = StrEncoding::Raw;
                bytes
            }
            // Made a heap string just above.
            Repr::Inline { .. } => unreachable!("an inline string was moved to the heap"),
        }
    }

    /// The encoding name.
    pub fn encoding(&self) -> &'static str {
        match self.encoding_kind() {
            StrEncoding::Int => "int",
            StrEncoding::Embstr => "embstr",
            StrEncoding::Raw => "raw",
        }
    }

    /// The encoding.
    pub fn encoding_kind(&self) -> StrEncoding {
        match &self.repr {
            Repr::Inline { encoding, .. } | Repr::Heap { encoding, .. } => *encoding,
        }
    }

    /// Heap bytes the string holds beyond the value itself.
    pub(crate) fn mem_usage(&self) -> usize {
        match &self.repr {
            Repr::Inline { .. } => 0,
            Repr::Heap { bytes, .. } => bytes.capacity() + 3,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{StrValue, INLINE};

    #[test]
    fn encodings_follow_redis() {
        assert_eq!(StrValue::new(b"123".to_vec()).encoding(), "int");
        assert_eq!(
            StrValue::new(b"-9223372036854775808".to_vec()).encoding(),
            "int"
        );
        assert_eq!(
            StrValue::new(b"9223372036854775808".to_vec()).encoding(),
            "embstr"
        );
        assert_eq!(StrValue::new(b"01".to_vec()).encoding(), "embstr");
        assert_eq!(StrValue::new(Vec::new()).encoding(), "embstr");
        assert_eq!(StrValue::new(vec![b'x'; 44]).encoding(), "embstr");
        assert_eq!(StrValue::new(vec![b'x'; 45]).encoding(), "raw");
        assert_eq!(StrValue::text(b"3".to_vec()).encoding(), "embstr");
        assert_eq!(StrValue::text(vec![b'1'; 45]).encoding(), "raw");
        assert_eq!(StrValue::raw(b"1".to_vec()).encoding(), "raw");
        assert_eq!(StrValue::from_int(-5).as_bytes(), b"-5");
        let mut v = StrValue::new(b"12".to_vec());
        v.bytes_mut().push(b'3');
        assert_eq!((v.encoding(), v.as_int()), ("raw", Some(123)));
    }

    #[test]
    fn short_strings_live_inline_and_long_ones_on_the_heap() {
        assert_eq!(std::mem::size_of::<StrValue>(), 32);
        for len in [0, 1, INLINE, INLINE + 1, 44, 45, 1000] {
            let bytes: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
            let v = StrValue::new(bytes.clone());
            assert_eq!(v.as_bytes(), &bytes[..], "{len}");
            assert_eq!(v.len(), len);
            assert_eq!(v.mem_usage() == 0, len <= INLINE, "{len}");
            assert_eq!(v.clone().into_bytes(), bytes);
            assert_eq!(v.encoding(), if len <= 44 { "embstr" } else { "raw" });
        }
        let mut v = StrValue::from_int(i64::MIN);
        assert_eq!(
            (v.as_bytes(), v.encoding()),
            (&b"-9223372036854775808"[..], "int")
        );
        assert_eq!(v.mem_usage(), 0);
        v.bytes_mut().extend_from_slice(b"x");
        assert_eq!(
            (v.as_bytes(), v.encoding()),
            (&b"-9223372036854775808x"[..], "raw")
        );
        // A raw string stays on the heap however short, and equal bytes compare
        // equal only with equal encodings (as before).
        assert_eq!(StrValue::raw(b"ab".to_vec()).as_bytes(), b"ab");
        assert_ne!(StrValue::raw(b"ab".to_vec()), StrValue::new(b"ab".to_vec()));
    }
}
