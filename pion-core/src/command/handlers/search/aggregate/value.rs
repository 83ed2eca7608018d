//! The values an `FT.AGGREGATE` pipeline carries between its steps: numbers, strings,
//! null and arrays (`TOLIST`, `split`), with RediSearch's rules for printing numbers,
//! comparing mixed types, truthiness and hashing.
//!
//! Hashing matters for output order, not only for grouping: RediSearch keys its groups
//! by a 64-bit FNV-1a hash of the group values and lists them in hash-table order, so
//! [`Value::hash`] reproduces that hash bit for bit (see `group.rs`).

use std::cmp::Ordering;

use crate::reply::Reply;
use crate::util::num::fmt_g;

/// One value of a row.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// No value (`NULL`, a reducer over nothing).
    Null,
    /// A double.
    Num(f64),
    /// A byte string.
    Str(Vec<u8>),
    /// An array (`TOLIST`, `split`).
    Array(Vec<Value>),
}

/// A double as RediSearch prints it: integral values within `i64` as integers,
/// others like `%.12g`; NaN keeps its sign as glibc prints it (`-nan`).
pub fn format_number(x: f64) -> String {
    if x.is_nan() {
        return if x.is_sign_negative() { "-nan" } else { "nan" }.into();
    }
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    if x.fract() == 0.0 && (-LIMIT..LIMIT).contains(&x) {
        return (x as i64).to_string();
    }
    fmt_g(x, 12)
}

/// Parses a string the way RediSearch converts strings to numbers (`strtod` over the
/// whole text).
pub fn parse_number(s: &[u8]) -> Option<f64> {
    crate::util::num::parse_f64(s)
}

/// FNV-1a over `bytes`, continuing from `h` (RediSearch starts from 0, not the usual
/// offset basis).
pub fn fnv1a(bytes: &[u8], mut h: u64) -> u64 {
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

impl Value {
    /// A string value.
    pub fn str(s: impl AsRef<[u8]>) -> Value {
        Value::Str(s.as_ref().to_vec())
    }

    /// A number from a boolean (predicates give 1 or 0).
    pub fn bool(b: bool) -> Value {
        Value::Num(if b { 1.0 } else { 0.0 })
    }

    /// The value as a number: numbers as they are, strings when the whole text parses.
    pub fn as_number(&self) -> Option<f64> {
        match self {
            Value::Num(n) => Some(*n),
            Value::Str(s) => parse_number(s),
            _ => None,
        }
    }

    /// The text of the value as RediSearch converts it to a string (`NULL` is empty).
    pub fn to_text(&self) -> Vec<u8> {
        match self {
            Value::Num(n) => format_number(*n).into_bytes(),
            Value::Str(s) => s.clone(),
            Value::Null => Vec::new(),
            Value::Array(items) => {
                let parts: Vec<Vec<u8>> = items.iter().map(Value::to_text).collect();
                parts.join(&b","[..])
            }
        }
    }

    /// Whether the value counts as true: a non-zero number, a non-empty string or
    /// array.
    pub fn truthy(&self) -> bool {
        match self {
            Value::Null => false,
            Value::Num(n) => *n != 0.0,
            Value::Str(s) => !s.is_empty(),
            Value::Array(a) => !a.is_empty(),
        }
    }

    /// RediSearch's hash of the value, continuing from `h`.
    pub fn hash(&self, h: u64) -> u64 {
        match self {
            Value::Null => h.wrapping_add(1),
            Value::Num(n) => fnv1a(&n.to_le_bytes(), h),
            Value::Str(s) => fnv1a(s, h),
            Value::Array(items) => items.iter().fold(h, |h, v| v.hash(h)),
        }
    }

    /// Equality as `==` sees it: a number and a string are equal when the string
    /// parses to that number.
    pub fn loose_eq(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::Null, Value::Null) => true,
            (Value::Num(a), Value::Num(b)) => a == b,
            (Value::Str(a), Value::Str(b)) => a == b,
            (Value::Num(a), Value::Str(s)) | (Value::Str(s), Value::Num(a)) => {
                parse_number(s) == Some(*a)
            }
            (Value::Array(a), Value::Array(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.loose_eq(y))
            }
            _ => false,
        }
    }

    /// The order of two values for sorting and `MIN`/`MAX`-like choices: null first,
    /// numbers numerically, strings bytewise, a number against a string numerically
    /// when the string parses and as text otherwise.
    pub fn order(&self, other: &Value) -> Ordering {
        match (self, other) {
            (Value::Null, Value::Null) => Ordering::Equal,
            (Value::Null, _) => Ordering::Less,
            (_, Value::Null) => Ordering::Greater,
            (Value::Num(a), Value::Num(b)) => a.partial_cmp(b).unwrap_or(Ordering::Equal),
            (Value::Str(a), Value::Str(b)) => a.cmp(b),
            (Value::Num(a), Value::Str(s)) => match parse_number(s) {
                Some(b) => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
                None => format_number(*a).as_bytes().cmp(s.as_slice()),
            },
            (Value::Str(s), Value::Num(b)) => match parse_number(s) {
                Some(a) => a.partial_cmp(b).unwrap_or(Ordering::Equal),
                None => s.as_slice().cmp(format_number(*b).as_bytes()),
            },
            (a, b) => a.to_text().cmp(&b.to_text()),
        }
    }

    /// The value in a reply: numbers as their text, strings as bulk strings, null as
    /// the null reply, arrays as arrays.
    pub fn to_reply(&self) -> Reply {
        match self {
            Value::Null => Reply::Null,
            Value::Num(n) => Reply::Bulk(format_number(*n).into_bytes()),
            Value::Str(s) => Reply::Bulk(s.clone()),
            Value::Array(items) => Reply::Array(items.iter().map(Value::to_reply).collect()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_print_like_redisearch() {
        assert_eq!(format_number(6.0), "6");
        assert_eq!(format_number(1.5), "1.5");
        assert_eq!(format_number(1.0 / 3.0), "0.333333333333");
        assert_eq!(format_number(1e15), "1000000000000000");
        assert_eq!(format_number(123456789012345678.0), "123456789012345680");
        assert_eq!(format_number(1e19), "1e+19");
        assert_eq!(format_number(-1e20), "-1e+20");
        assert_eq!(format_number(0.000001234), "1.234e-06");
        assert_eq!(format_number(-0.0), "0");
        assert_eq!(format_number(f64::INFINITY), "inf");
        assert_eq!(format_number(f64::NAN), "nan");
        assert_eq!(format_number(-f64::NAN), "-nan");
    }

    #[test]
    fn hashes_follow_fnv1a_from_zero() {
        assert_eq!(Value::Null.hash(0), 1);
        assert_eq!(Value::str("").hash(7), 7);
        assert_eq!(fnv1a(b"a", 0), 0x61u64.wrapping_mul(0x0000_0100_0000_01b3));
    }

    #[test]
    fn loose_equality_and_order() {
        assert!(Value::Num(5.0).loose_eq(&Value::str("5.0")));
        assert!(!Value::str("abc").loose_eq(&Value::Num(5.0)));
        assert_eq!(Value::str("10").order(&Value::str("9")), Ordering::Less);
        assert_eq!(Value::Num(10.0).order(&Value::str("9")), Ordering::Greater);
        assert_eq!(Value::Null.order(&Value::Num(-1.0)), Ordering::Less);
    }
}
