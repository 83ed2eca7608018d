//! The differential corpus format: one command per line, arguments split the way
//! `redis-cli` splits them, an optional directive in front.
//!
//! ```text
//! # comment
//! SET k v                   replies must be byte-identical
//! !unordered SMEMBERS s     aggregate compared as a multiset
//! !shape SRANDMEMBER s 2    only reply type and element count compared
//! !skip CLIENT ID           sent to both, not compared
//! !sleep 20                 pause
//! ```

use pion_server::resp::decode::split_args;

/// How a line's replies are compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compare {
    /// Byte-identical.
    Exact,
    /// Aggregates compared as multisets.
    Unordered,
    /// Type and element count only.
    Shape,
    /// Not compared.
    Skip,
}

/// One step of a corpus file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Send a command and compare replies.
    Command {
        /// 1-based line number.
        line: usize,
        /// How to compare.
        compare: Compare,
        /// The arguments.
        args: Vec<Vec<u8>>,
    },
    /// Sleep this many milliseconds.
    Sleep(u64),
}

/// Parses a corpus file.
pub fn parse(text: &str) -> Result<Vec<Step>, String> {
    let mut steps = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (compare, rest) = match line.split_once(' ') {
            Some(("!unordered", r)) => (Compare::Unordered, r),
            Some(("!shape", r)) => (Compare::Shape, r),
            Some(("!skip", r)) => (Compare::Skip, r),
            Some(("!sleep", ms)) => {
                steps.push(Step::Sleep(
                    ms.trim()
                        .parse()
                        .map_err(|_| format!("line {}: bad sleep", i + 1))?,
                ));
                continue;
            }
            _ if line.starts_with('!') => return Err(format!("line {}: unknown directive", i + 1)),
            _ => (Compare::Exact, line),
        };
        let args = split_args(rest.as_bytes())
            .ok_or_else(|| format!("line {}: unbalanced quotes", i + 1))?;
        if args.is_empty() {
            continue;
        }
        steps.push(Step::Command {
            line: i + 1,
            compare,
            args,
        });
    }
    Ok(steps)
}
