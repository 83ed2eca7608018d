//! Argument parsing for the sorted-set commands, with Redis's exact acceptance rules.
//!
//! Redis reads scores and range bounds with C's `strtod`, which is looser than the
//! strict float parser shared by other families: it takes hexadecimal floats
//! (`0x10`), and for range bounds also leading blanks, an empty string (as 0) and
//! out-of-range values (as ±inf or 0). This module reproduces `strtod` so that every
//! accepted and refused argument matches.

use crate::error::{OpError, OpResult};
use crate::util::strtod::strtod;
use crate::value::zset::ZEntry;

/// A score, increment or weight argument the way Redis's `getDoubleFromObject` reads
/// it (see [`crate::util::num::parse_f64`]).
pub(crate) fn parse_double(arg: &[u8]) -> Option<f64> {
    crate::util::num::parse_f64(arg)
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
    pub fn below(&self, e: &ZEntry<'_>) -> bool {
        if self.min_ex {
            e.score <= self.min
        } else {
            e.score < self.min
        }
    }

    /// Whether an entry is not after the interval's end.
    pub fn not_above(&self, e: &ZEntry<'_>) -> bool {
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
    pub fn below(&self, e: &ZEntry<'_>) -> bool {
        match &self.min {
            LexBound::NegInf => false,
            LexBound::PosInf => true,
            LexBound::Incl(x) => e.member < x.as_slice(),
            LexBound::Excl(x) => e.member <= x.as_slice(),
        }
    }

    /// Whether an entry is not after the interval's end.
    pub fn not_above(&self, e: &ZEntry<'_>) -> bool {
        match &self.max {
            LexBound::NegInf => false,
            LexBound::PosInf => true,
            LexBound::Incl(x) => e.member <= x.as_slice(),
            LexBound::Excl(x) => e.member < x.as_slice(),
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
