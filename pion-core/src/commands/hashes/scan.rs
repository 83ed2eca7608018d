//! The argument handling and step loop shared by `HSCAN` and `SSCAN` (and usable by
//! `ZSCAN`): Redis's cursor syntax, the `MATCH`/`COUNT` options and the reply shape.

use crate::commands::util::{int, is_kw};
use crate::error::{OpError, OpResult};
use crate::glob::glob_match;
use crate::reply::Reply;

/// Parses a scan cursor as Redis does (`strtoull`): an optional sign, decimal digits,
/// no surrounding space, an empty string meaning 0, a minus sign wrapping around, and
/// `ERR invalid cursor` for anything else or for a value past `u64::MAX`.
pub(crate) fn parse_cursor(arg: &[u8]) -> OpResult<u64> {
    let invalid = || OpError::custom("ERR invalid cursor");
    if arg.is_empty() {
        return Ok(0);
    }
    let (neg, digits) = match arg[0] {
        b'-' => (true, &arg[1..]),
        b'+' => (false, &arg[1..]),
        _ => (false, arg),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return Err(invalid());
    }
    let mut v: u64 = 0;
    for &c in digits {
        v = v
            .checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(c - b'0')))
            .ok_or_else(invalid)?;
    }
    Ok(if neg { v.wrapping_neg() } else { v })
}

/// The `MATCH` and `COUNT` options of a scan command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ScanOptions {
    /// Elements to look at per call (a hint, default 10).
    pub count: usize,
    /// Only elements matching this glob are returned.
    pub pattern: Option<Vec<u8>>,
}

impl ScanOptions {
    /// Parses the options after the cursor; the last `MATCH`/`COUNT` wins.
    pub(crate) fn parse(args: &[Vec<u8>]) -> OpResult<ScanOptions> {
        let mut opts = ScanOptions {
            count: 10,
            pattern: None,
        };
        let mut pairs = args.chunks(2);
        for pair in &mut pairs {
            let [name, value] = pair else {
                return Err(OpError::Syntax);
            };
            if is_kw(name, "count") {
                let n = int(value)?;
                if n < 1 {
                    return Err(OpError::Syntax);
                }
                opts.count = usize::try_from(n).unwrap_or(usize::MAX);
            } else if is_kw(name, "match") {
                // "*" matches everything: skip the matching, as Redis does.
                opts.pattern = (value.as_slice() != b"*").then(|| value.clone());
            } else {
                return Err(OpError::Syntax);
            }
        }
        Ok(opts)
    }

    /// Whether an element (a member, or a hash field) passes the `MATCH` filter.
    pub(crate) fn matches(&self, element: &[u8]) -> bool {
        self.pattern
            .as_deref()
            .is_none_or(|p| glob_match(p, element, false))
    }

    /// Runs scan steps from `cursor` until about `count` elements were gathered (at
    /// most `count * 10` steps, as Redis bounds empty buckets) or the walk ends.
    /// `step(cursor, out)` appends what one step visits and returns the next cursor.
    pub(crate) fn drive<T>(
        &self,
        cursor: u64,
        mut step: impl FnMut(u64, &mut Vec<T>) -> u64,
    ) -> (u64, Vec<T>) {
        let mut out = Vec::new();
        let mut cursor = cursor;
        let mut budget = self.count.saturating_mul(10);
        loop {
            cursor = step(cursor, &mut out);
            budget -= 1;
            if cursor == 0 || budget == 0 || out.len() >= self.count {
                return (cursor, out);
            }
        }
    }
}

/// The two-element scan reply: the next cursor as a bulk string, then the elements.
pub(crate) fn scan_reply(cursor: u64, items: Vec<Reply>) -> Reply {
    Reply::Array(vec![
        Reply::Bulk(cursor.to_string().into_bytes()),
        Reply::Array(items),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_parse_like_strtoull() {
        assert_eq!(parse_cursor(b"0"), Ok(0));
        assert_eq!(parse_cursor(b""), Ok(0));
        assert_eq!(parse_cursor(b"+12"), Ok(12));
        assert_eq!(parse_cursor(b"007"), Ok(7));
        assert_eq!(parse_cursor(b"-1"), Ok(u64::MAX));
        assert_eq!(parse_cursor(b"18446744073709551615"), Ok(u64::MAX));
        for bad in [
            &b"18446744073709551616"[..],
            b" 1",
            b"1 ",
            b"1.5",
            b"-",
            b"+",
            b"x",
        ] {
            assert_eq!(
                parse_cursor(bad),
                Err(OpError::custom("ERR invalid cursor")),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn options() {
        let args = |a: &[&str]| a.iter().map(|s| s.as_bytes().to_vec()).collect::<Vec<_>>();
        let o = ScanOptions::parse(&args(&["COUNT", "2", "match", "a*", "count", "5"]));
        assert_eq!(
            o,
            Ok(ScanOptions {
                count: 5,
                pattern: Some(b"a*".to_vec())
            })
        );
        assert_eq!(
            ScanOptions::parse(&args(&["count", "0"])),
            Err(OpError::Syntax)
        );
        assert_eq!(
            ScanOptions::parse(&args(&["count", "x"])),
            Err(OpError::NotInteger)
        );
        assert_eq!(ScanOptions::parse(&args(&["match"])), Err(OpError::Syntax));
        assert_eq!(
            ScanOptions::parse(&args(&["type", "x"])),
            Err(OpError::Syntax)
        );
    }
}
