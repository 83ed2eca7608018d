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

/// A string value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StrValue {
    bytes: Vec<u8>,
    encoding: StrEncoding,
}

/// Longest string Redis stores as `embstr`.
const EMBSTR_MAX: usize = 44;

impl StrValue {
    /// A string created from bytes in one piece, encoded as Redis would.
    pub fn new(bytes: Vec<u8>) -> StrValue {
        let encoding = if bytes.len() <= 20 && crate::util::num::parse_i64(&bytes).is_some() {
            StrEncoding::Int
        } else if bytes.len() <= EMBSTR_MAX {
            StrEncoding::Embstr
        } else {
            StrEncoding::Raw
        };
        StrValue { bytes, encoding }
    }

    /// A string built from text that Redis never tries to store as an integer
    /// (`INCRBYFLOAT` results): `embstr` when short, `raw` otherwise.
    pub fn text(bytes: Vec<u8>) -> StrValue {
        let encoding = if bytes.len() <= EMBSTR_MAX {
            StrEncoding::Embstr
        } else {
            StrEncoding::Raw
        };
        StrValue { bytes, encoding }
    }

    /// A string that starts out `raw`, as one grown in place by `SETRANGE` does.
    pub fn raw(bytes: Vec<u8>) -> StrValue {
        StrValue {
            bytes,
            encoding: StrEncoding::Raw,
        }
    }

    /// A string holding an integer.
    pub fn from_int(v: i64) -> StrValue {
        StrValue {
            bytes: v.to_string().into_bytes(),
            encoding: StrEncoding::Int,
        }
    }

    /// The bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// Consumes the value, returning its bytes.
    pub fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Whether the string is empty.
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// The integer this string holds, if it is a strict decimal `i64`.
    pub fn as_int(&self) -> Option<i64> {
        crate::util::num::parse_i64(&self.bytes)
    }

    /// Mutable access to the bytes for in-place edits; the encoding becomes `raw`,
    /// as it does in Redis after `APPEND` or `SETRANGE`.
    pub fn bytes_mut(&mut self) -> &mut Vec<u8> {
        self.encoding = StrEncoding::Raw;
        &mut self.bytes
    }

    /// The encoding name.
    pub fn encoding(&self) -> &'static str {
        match self.encoding {
            StrEncoding::Int => "int",
            StrEncoding::Embstr => "embstr",
            StrEncoding::Raw => "raw",
        }
    }

    /// The encoding.
    pub fn encoding_kind(&self) -> StrEncoding {
        self.encoding
    }

    pub(crate) fn mem_usage(&self) -> usize {
        match self.encoding {
            StrEncoding::Int => 0,
            _ => self.bytes.capacity() + 3,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::StrValue;

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
}
