//! The differential corpus format: one command per line, arguments split the way
//! `redis-cli` splits them, an optional connection and directive in front.
//!
//! ```text
//! # comment
//! SET k v                   replies must be byte-identical
//! !unordered SMEMBERS s     aggregate compared as a multiset
//! !shape SRANDMEMBER s 2    only reply type and element count compared
//! !untimed FT.PROFILE …     compared with every value after a `… time` key masked
//! !skip CLIENT ID           sent to both, not compared
//! !sleep 20                 pause
//! @1 GET k                  on connection 1 (connection 0 when no `@`)
//! @1 !send BLPOP q 0        sent on connection 1; its reply is read later
//! !wait-blocked 1           until both servers count 1 blocked client
//! @1 !recv                  read one reply (or push message) and compare
//! @1 !noreply 100           neither server sends connection 1 anything in 100 ms
//! @1 !close                 close connection 1 (a new `@1` line opens a new one)
//! ```
//!
//! Connections open on first use, each with `HELLO 3` when the file runs in RESP3, so
//! a file can interleave a blocked client, a subscriber and a writer the way separate
//! applications would; at `--threads 4` they land on different worker threads.

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
    /// Exact, except the value after each key that ends in `time` (`FT.PROFILE`'s
    /// timings).
    Untimed,
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
        /// The connection it is sent on.
        conn: usize,
        /// How to compare.
        compare: Compare,
        /// The arguments.
        args: Vec<Vec<u8>>,
    },
    /// Send a command without reading its reply (a blocking command, say).
    Send {
        /// 1-based line number.
        line: usize,
        /// The connection it is sent on.
        conn: usize,
        /// The arguments.
        args: Vec<Vec<u8>>,
    },
    /// Read one reply from a connection and compare.
    Recv {
        /// 1-based line number.
        line: usize,
        /// The connection read.
        conn: usize,
        /// How to compare.
        compare: Compare,
    },
    /// Neither server sends anything on this connection for this many milliseconds.
    NoReply {
        /// 1-based line number.
        line: usize,
        /// The connection watched.
        conn: usize,
        /// How long.
        ms: u64,
    },
    /// Wait until both servers report this many blocked clients.
    WaitBlocked {
        /// 1-based line number.
        line: usize,
        /// The count of `blocked_clients` in `INFO clients`.
        count: usize,
    },
    /// Close a connection.
    Close {
        /// The connection.
        conn: usize,
    },
    /// Sleep this many milliseconds.
    Sleep(u64),
}

fn number<T: std::str::FromStr>(text: &str, line: usize, what: &str) -> Result<T, String> {
    text.trim()
        .parse()
        .map_err(|_| format!("line {line}: bad {what}"))
}

fn compare_mode(word: &str) -> Option<Compare> {
    match word {
        "!unordered" => Some(Compare::Unordered),
        "!shape" => Some(Compare::Shape),
        "!untimed" => Some(Compare::Untimed),
        "!skip" => Some(Compare::Skip),
        _ => None,
    }
}

/// Parses a corpus file.
pub fn parse(text: &str) -> Result<Vec<Step>, String> {
    let mut steps = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let mut rest = raw.trim();
        if rest.is_empty() || rest.starts_with('#') {
            continue;
        }
        let mut conn = 0;
        if let Some(tail) = rest.strip_prefix('@') {
            let (n, r) = tail.split_once(' ').unwrap_or((tail, ""));
            conn = number(n, line, "connection")?;
            rest = r.trim();
        }
        let (word, after) = rest.split_once(' ').unwrap_or((rest, ""));
        let mut compare = Compare::Exact;
        if let Some(mode) = compare_mode(word) {
            compare = mode;
            rest = after;
        } else if word.starts_with('!') {
            let step = match word {
                "!sleep" => Step::Sleep(number(after, line, "sleep")?),
                "!recv" => Step::Recv {
                    line,
                    conn,
                    compare: compare_mode(after.trim()).unwrap_or(Compare::Exact),
                },
                "!noreply" => Step::NoReply {
                    line,
                    conn,
                    ms: number(after, line, "wait")?,
                },
                "!wait-blocked" => Step::WaitBlocked {
                    line,
                    count: number(after, line, "count")?,
                },
                "!close" => Step::Close { conn },
                "!send" => Step::Send {
                    line,
                    conn,
                    args: split_args(after.as_bytes())
                        .ok_or_else(|| format!("line {line}: unbalanced quotes"))?,
                },
                _ => return Err(format!("line {line}: unknown directive")),
            };
            steps.push(step);
            continue;
        }
        let args =
            split_args(rest.as_bytes()).ok_or_else(|| format!("line {line}: unbalanced quotes"))?;
        if args.is_empty() {
            continue;
        }
        steps.push(Step::Command {
            line,
            conn,
            compare,
            args,
        });
    }
    Ok(steps)
}
