//! Small helpers shared by command handlers: keyword matching and argument parsing
//! with Redis's error texts.

use crate::error::{OpError, OpResult};
use crate::util::num::parse_i64;

/// Case-insensitive keyword comparison (`arg` as sent, `kw` upper- or lower-case).
pub fn is_kw(arg: &[u8], kw: &str) -> bool {
    arg.eq_ignore_ascii_case(kw.as_bytes())
}

/// Parses an integer argument (`ERR value is not an integer or out of range`).
pub fn int(arg: &[u8]) -> OpResult<i64> {
    parse_i64(arg).ok_or(OpError::NotInteger)
}

/// Lossy text of an argument, for error messages.
pub fn text(arg: &[u8]) -> String {
    String::from_utf8_lossy(arg).into_owned()
}

/// Parses a `SCAN`-family cursor the way C's `strtoull` reads it in Redis: an optional sign
/// (a negative value wraps around), decimal digits, nothing before or after; an empty
/// argument reads as 0.
pub fn parse_scan_cursor(arg: &[u8]) -> OpResult<u64> {
    let invalid = || OpError::custom("ERR invalid cursor");
    let (negative, digits) = match arg.first() {
        Some(b'-') => (true, &arg[1..]),
        Some(b'+') => (false, &arg[1..]),
        _ => (false, arg),
    };
    if digits.is_empty() {
        // `strtoull("")` converts nothing and leaves the end pointer on the NUL.
        return if arg.is_empty() {
            Ok(0)
        } else {
            Err(invalid())
        };
    }
    let mut v: u64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return Err(invalid());
        }
        v = v
            .checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(c - b'0')))
            .ok_or_else(invalid)?;
    }
    Ok(if negative { v.wrapping_neg() } else { v })
}
