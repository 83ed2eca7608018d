//! The argument handling and step loop shared by `HSCAN` and `SSCAN` (and usable by
//! `ZSCAN`): Redis's cursor syntax, the `MATCH`/`COUNT` options and the reply shape.

use crate::command::handlers::util::{int, is_kw};
use crate::error::{OpError, OpResult};
use crate::reply::Reply;
use crate::util::glob::glob_match;

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
