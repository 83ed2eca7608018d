//! Argument parsing for the sorted-set commands, with Redis's exact acceptance rules.
//!
//! Redis reads scores and range bounds with C's `strtod`, which is looser than the
//! strict float parser shared by other families: it takes hexadecimal floats
//! (`0x10`), and for range bounds also leading blanks, an empty string (as 0) and
//! out-of-range values (as ±inf or 0). This module reproduces `strtod` so that every
//! accepted and refused argument matches.

use crate::error::{OpError, OpResult};
use crate::value::zset::ScoredMember;

/// What `strtod` made of a prefix of its input.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Strtod {
    value: f64,
    /// Bytes consumed (0 when nothing was converted).
    len: usize,
    /// Whether the value overflowed or underflowed (C's `ERANGE`).
    range_error: bool,
}

fn is_c_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// C's `strtod` on a byte string: decimal and hexadecimal floats, `inf`,
/// `infinity` and `nan`, after optional blanks and one sign.
fn strtod(s: &[u8]) -> Strtod {
    let none = Strtod {
        value: 0.0,
        len: 0,
        range_error: false,
    };
    let mut i = 0;
    while i < s.len() && is_c_space(s[i]) {
        i += 1;
    }
    let neg = s.get(i) == Some(&b'-');
    if matches!(s.get(i), Some(b'+' | b'-')) {
        i += 1;
    }
    let sign = if neg { -1.0 } else { 1.0 };
    let rest = &s[i..];
    let starts = |word: &str| {
        rest.len() >= word.len() && rest[..word.len()].eq_ignore_ascii_case(word.as_bytes())
    };
    if starts("infinity") || starts("inf") {
        let len = if starts("infinity") { 8 } else { 3 };
        return Strtod {
            value: sign * f64::INFINITY,
            len: i + len,
            range_error: false,
        };
    }
    if starts("nan") {
        let mut len = 3;
        if rest.get(3) == Some(&b'(') {
            if let Some(close) = rest[4..].iter().position(|&c| c == b')') {
                if rest[4..4 + close]
                    .iter()
                    .all(|c| c.is_ascii_alphanumeric() || *c == b'_')
                {
                    len = 4 + close + 1;
                }
            }
        }
        return Strtod {
            value: f64::NAN,
            len: i + len,
            range_error: false,
        };
    }
    if (starts("0x")) && hex_digits(&rest[2..]) + dot_hex_digits(&rest[2..]) > 0 {
        let (value, len, range_error) = parse_hex(&rest[2..]);
        return Strtod {
            value: sign * value,
            len: i + 2 + len,
            range_error,
        };
    }
    // Decimal: digits [. digits] [e [sign] digits], at least one mantissa digit.
    let mut j = 0;
    let int_digits = count_digits(rest);
    j += int_digits;
    let mut frac_digits = 0;
    if rest.get(j) == Some(&b'.') {
        frac_digits = count_digits(&rest[j + 1..]);
        if int_digits + frac_digits > 0 {
            j += 1 + frac_digits;
        }
    }
    if int_digits + frac_digits == 0 {
        return none;
    }
    let mantissa_end = j;
    if matches!(rest.get(j), Some(b'e' | b'E')) {
        let mut k = j + 1;
        if matches!(rest.get(k), Some(b'+' | b'-')) {
            k += 1;
        }
        let exp_digits = count_digits(&rest[k.min(rest.len())..]);
        if exp_digits > 0 {
            j = k + exp_digits;
        }
    }
    let text = String::from_utf8_lossy(&rest[..j]);
    let magnitude: f64 = text.parse().unwrap_or(0.0);
    let nonzero_mantissa = rest[..mantissa_end]
        .iter()
        .any(|c| (b'1'..=b'9').contains(c));
    let range_error = magnitude.is_infinite() || (magnitude == 0.0 && nonzero_mantissa);
    Strtod {
        value: sign * magnitude,
        len: i + j,
        range_error,
    }
}

fn count_digits(s: &[u8]) -> usize {
    s.iter().take_while(|c| c.is_ascii_digit()).count()
}

fn hex_digits(s: &[u8]) -> usize {
    s.iter().take_while(|c| c.is_ascii_hexdigit()).count()
}

/// Hex digits after a leading `.` (0 when there is no dot).
fn dot_hex_digits(s: &[u8]) -> usize {
    let int = hex_digits(s);
    if s.get(int) == Some(&b'.') {
        hex_digits(&s[int + 1..])
    } else {
        0
    }
}

/// A hexadecimal float body (after `0x`): value, bytes consumed, range error.
fn parse_hex(s: &[u8]) -> (f64, usize, bool) {
    // Past 15 significant digits an f64 cannot hold more: further integer digits only
    // scale the value and further fraction digits are dropped.
    const KEEP: u32 = 15;
    let mut value = 0.0f64;
    let mut kept = 0u32;
    let mut exp: i64 = 0;
    let mut j = 0;
    let mut any_nonzero = false;
    let digit = |j: usize| s.get(j).and_then(|c| char::from(*c).to_digit(16));
    while let Some(d) = digit(j) {
        if kept < KEEP {
            value = value * 16.0 + f64::from(d);
            kept += u32::from(value != 0.0);
        } else {
            exp += 4;
        }
        any_nonzero |= d != 0;
        j += 1;
    }
    if s.get(j) == Some(&b'.') {
        j += 1;
        while let Some(d) = digit(j) {
            if kept < KEEP {
                value = value * 16.0 + f64::from(d);
                kept += u32::from(value != 0.0);
                exp -= 4;
            }
            any_nonzero |= d != 0;
            j += 1;
        }
    }
    if matches!(s.get(j), Some(b'p' | b'P')) {
        let mut k = j + 1;
        let neg = s.get(k) == Some(&b'-');
        if matches!(s.get(k), Some(b'+' | b'-')) {
            k += 1;
        }
        let n = count_digits(&s[k.min(s.len())..]);
        if n > 0 {
            let digits = String::from_utf8_lossy(&s[k..k + n]);
            let e: i64 = digits.parse().unwrap_or(i64::MAX / 4).min(100_000);
            exp += if neg { -e } else { e };
            j = k + n;
        }
    }
    // Two half steps, so that a large mantissa with a very negative exponent does not
    // underflow before the multiplication.
    let exp = exp.clamp(-4400, 4400) as i32;
    let scaled = value * 2f64.powi(exp / 2) * 2f64.powi(exp - exp / 2);
    let range_error = scaled.is_infinite() || (scaled == 0.0 && any_nonzero);
    (scaled, j, range_error)
}

/// A score, increment or weight argument the way Redis's `getDoubleFromObject` reads
/// it: the whole string, no leading blank, no NaN, no overflow or underflow to zero.
pub(crate) fn parse_double(arg: &[u8]) -> Option<f64> {
    if arg.is_empty() || is_c_space(arg[0]) {
        return None;
    }
    let r = strtod(arg);
    let bad_range = r.range_error && (r.value.is_infinite() || r.value == 0.0);
    if r.len != arg.len() || bad_range || r.value.is_nan() {
        return None;
    }
    Some(r.value)
}

/// [`parse_double`] with `ERR value is not a valid float`.
pub(crate) fn score_arg(arg: &[u8]) -> OpResult<f64> {
    parse_double(arg).ok_or(OpError::NotFloat)
}

/// A score interval such as `(1 +inf`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct ScoreRange {
    /// Lower bound.
    pub min: f64,
    /// Whether the lower bound is excluded.
    pub min_ex: bool,
    /// Upper bound.
    pub max: f64,
    /// Whether the upper bound is excluded.
    pub max_ex: bool,
}

fn score_bound(arg: &[u8]) -> Option<(f64, bool)> {
    let (body, ex) = match arg.first() {
        Some(b'(') => (&arg[1..], true),
        _ => (arg, false),
    };
    let r = strtod(body);
    if r.len != body.len() || r.value.is_nan() {
        return None;
    }
    Some((r.value, ex))
}

impl ScoreRange {
    /// Parses `min max` with `ERR min or max is not a float`.
    pub fn parse(min: &[u8], max: &[u8]) -> OpResult<ScoreRange> {
        let err = || OpError::custom("ERR min or max is not a float");
        let (min, min_ex) = score_bound(min).ok_or_else(err)?;
        let (max, max_ex) = score_bound(max).ok_or_else(err)?;
        Ok(ScoreRange {
            min,
            min_ex,
            max,
            max_ex,
        })
    }

    /// Whether an entry sorts before the interval.
    pub fn below(&self, e: &ScoredMember) -> bool {
        if self.min_ex {
            e.score <= self.min
        } else {
            e.score < self.min
        }
    }

    /// Whether an entry is not after the interval's end.
    pub fn not_above(&self, e: &ScoredMember) -> bool {
        if self.max_ex {
            e.score < self.max
        } else {
            e.score <= self.max
        }
    }
}

/// One end of a lexicographic interval.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum LexBound {
    /// `-`: before every member.
    NegInf,
    /// `+`: after every member.
    PosInf,
    /// `[x`: includes `x`.
    Incl(Vec<u8>),
    /// `(x`: excludes `x`.
    Excl(Vec<u8>),
}

fn lex_bound(arg: &[u8]) -> Option<LexBound> {
    match arg {
        b"+" => Some(LexBound::PosInf),
        b"-" => Some(LexBound::NegInf),
        [b'[', rest @ ..] => Some(LexBound::Incl(rest.to_vec())),
        [b'(', rest @ ..] => Some(LexBound::Excl(rest.to_vec())),
        _ => None,
    }
}

/// A lexicographic interval such as `[a (c`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LexRange {
    /// Lower end.
    pub min: LexBound,
    /// Upper end.
    pub max: LexBound,
}

impl LexRange {
    /// Parses `min max` with `ERR min or max not valid string range item`.
    pub fn parse(min: &[u8], max: &[u8]) -> OpResult<LexRange> {
        let err = || OpError::custom("ERR min or max not valid string range item");
        Ok(LexRange {
            min: lex_bound(min).ok_or_else(err)?,
            max: lex_bound(max).ok_or_else(err)?,
        })
    }

    /// Whether an entry sorts before the interval.
    pub fn below(&self, e: &ScoredMember) -> bool {
        match &self.min {
            LexBound::NegInf => false,
            LexBound::PosInf => true,
            LexBound::Incl(x) => e.member.as_slice() < x.as_slice(),
            LexBound::Excl(x) => e.member.as_slice() <= x.as_slice(),
        }
    }

    /// Whether an entry is not after the interval's end.
    pub fn not_above(&self, e: &ScoredMember) -> bool {
        match &self.max {
            LexBound::NegInf => false,
            LexBound::PosInf => true,
            LexBound::Incl(x) => e.member.as_slice() <= x.as_slice(),
            LexBound::Excl(x) => e.member.as_slice() < x.as_slice(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_follow_strtod() {
        assert_eq!(parse_double(b"1.5"), Some(1.5));
        assert_eq!(parse_double(b"0x10"), Some(16.0));
        assert_eq!(parse_double(b"0x1p3"), Some(8.0));
        assert_eq!(parse_double(b"-0x.8"), Some(-0.5));
        let long = format!("0x1.8{}", "0".repeat(400));
        assert_eq!(parse_double(long.as_bytes()), Some(1.5));
        let wide = format!("0x1{}p-1600", "0".repeat(400));
        assert_eq!(parse_double(wide.as_bytes()), Some(1.0));
        assert_eq!(parse_double(b"0x1p-1074"), Some(f64::from_bits(1)));
        assert_eq!(parse_double(b"0x1p-1080"), None);
        assert_eq!(parse_double(b"+inf"), Some(f64::INFINITY));
        assert_eq!(parse_double(b"-Infinity"), Some(f64::NEG_INFINITY));
        assert_eq!(parse_double(b".5e1"), Some(5.0));
        assert_eq!(parse_double(b"1."), Some(1.0));
        assert_eq!(parse_double(b"nan"), None);
        assert_eq!(parse_double(b" 1"), None);
        assert_eq!(parse_double(b"1 "), None);
        assert_eq!(parse_double(b"1e400"), None);
        assert_eq!(parse_double(b"1e-400"), None);
        assert_eq!(parse_double(b""), None);
        assert_eq!(parse_double(b"0x"), None);
        assert_eq!(parse_double(b"e5"), None);
        assert_eq!(parse_double(b"1e"), None);
    }

    #[test]
    fn score_bounds_are_looser() {
        let r = ScoreRange::parse(b"(", b" 2").expect("valid");
        assert_eq!((r.min, r.min_ex, r.max, r.max_ex), (0.0, true, 2.0, false));
        let r = ScoreRange::parse(b"1e400", b"-1e400").expect("valid");
        assert_eq!((r.min, r.max), (f64::INFINITY, f64::NEG_INFINITY));
        assert!(ScoreRange::parse(b"((1", b"2").is_err());
        assert!(ScoreRange::parse(b"(nan", b"2").is_err());
        assert!(ScoreRange::parse(b"1", b"2 ").is_err());
    }

    #[test]
    fn lex_bounds() {
        assert!(LexRange::parse(b"-", b"+").is_ok());
        assert!(LexRange::parse(b"[", b"(").is_ok());
        assert!(LexRange::parse(b"a", b"+").is_err());
        assert!(LexRange::parse(b"+a", b"+").is_err());
        assert!(LexRange::parse(b"", b"+").is_err());
    }
}
