//! Small helpers shared by command handlers: keyword matching and argument parsing
//! with Redis's error texts.

use crate::error::{OpError, OpResult};
use crate::num::parse_i64;

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
