//! `LCS`: the longest common subsequence of two string values, as a string, its
//! length, or the matching ranges (`IDX`) found by walking the dynamic-programming
//! table back from its end, like Redis does.

use super::len_reply;
use crate::command::ctx::Ctx;
use crate::command::handlers::util::{int, is_kw};
use crate::error::{OpError, OpResult};
use crate::reply::Reply;

/// What `LCS` was asked to return.
#[derive(Debug, Default)]
struct LcsOptions {
    /// `LEN`: only the length.
    len: bool,
    /// `IDX`: the matching ranges and the length.
    idx: bool,
    /// `WITHMATCHLEN`: each range also carries its length.
    with_match_len: bool,
    /// `MINMATCHLEN n`: ranges shorter than this are left out (negative reads as 0).
    min_match_len: usize,
}

fn parse_options(args: &[Vec<u8>]) -> OpResult<LcsOptions> {
    let mut o = LcsOptions::default();
    let mut j = 0;
    while j < args.len() {
        let opt = &args[j];
        if is_kw(opt, "idx") {
            o.idx = true;
        } else if is_kw(opt, "len") {
            o.len = true;
        } else if is_kw(opt, "withmatchlen") {
            o.with_match_len = true;
        } else if is_kw(opt, "minmatchlen") && j + 1 < args.len() {
            let n = int(&args[j + 1])?;
            o.min_match_len = usize::try_from(n.max(0)).unwrap_or(usize::MAX);
            j += 1;
        } else {
            return Err(OpError::Syntax);
        }
        j += 1;
    }
    if o.idx && o.len {
        return Err(OpError::custom(
            "ERR If you want both the length and indexes, please just use IDX.",
        ));
    }
    Ok(o)
}

/// One maximal run of matching bytes: inclusive ranges in `a` and in `b`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct LcsMatch {
    /// First and last index in the first string.
    pub a: (usize, usize),
    /// First and last index in the second string.
    pub b: (usize, usize),
}

impl LcsMatch {
    /// Number of bytes in the run.
    pub fn len(&self) -> usize {
        self.a.1 - self.a.0 + 1
    }
}

/// The result of comparing two strings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LcsResult {
    /// The common subsequence itself.
    pub common: Vec<u8>,
    /// Its runs, from the end of the strings towards their start.
    pub matches: Vec<LcsMatch>,
}

/// Computes the longest common subsequence of `a` and `b` with Redis's tie-breaking
/// (when both directions keep the same length, the walk moves back in `b`).
/// `Err` when the table cannot be allocated.
pub(crate) fn lcs_table_walk(a: &[u8], b: &[u8]) -> OpResult<LcsResult> {
    let (alen, blen) = (a.len(), b.len());
    let width = blen + 1;
    let cells = (alen + 1)
        .checked_mul(width)
        .ok_or_else(insufficient_memory)?;
    let mut dp: Vec<u32> = Vec::new();
    dp.try_reserve_exact(cells)
        .map_err(|_| insufficient_memory())?;
    dp.resize(cells, 0);
    for i in 1..=alen {
        for j in 1..=blen {
            dp[i * width + j] = if a[i - 1] == b[j - 1] {
                dp[(i - 1) * width + j - 1] + 1
            } else {
                dp[(i - 1) * width + j].max(dp[i * width + j - 1])
            };
        }
    }
    // Walk back from the end, collecting matched bytes and grouping adjacent ones.
    let mut common = Vec::with_capacity(dp[alen * width + blen] as usize);
    let mut matches = Vec::new();
    let mut run: Option<LcsMatch> = None;
    let (mut i, mut j) = (alen, blen);
    while i > 0 && j > 0 {
        if a[i - 1] == b[j - 1] {
            common.push(a[i - 1]);
            run = Some(match run {
                Some(r) if r.a.0 == i && r.b.0 == j => LcsMatch {
                    a: (i - 1, r.a.1),
                    b: (j - 1, r.b.1),
                },
                other => {
                    matches.extend(other);
                    LcsMatch {
                        a: (i - 1, i - 1),
                        b: (j - 1, j - 1),
                    }
                }
            });
            i -= 1;
            j -= 1;
        } else {
            matches.extend(run.take());
            if dp[(i - 1) * width + j] > dp[i * width + j - 1] {
                i -= 1;
            } else {
                j -= 1;
            }
        }
    }
    matches.extend(run);
    common.reverse();
    Ok(LcsResult { common, matches })
}

fn insufficient_memory() -> OpError {
    OpError::custom("ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len")
}

/// `LCS key1 key2 [LEN] [IDX] [MINMATCHLEN len] [WITHMATCHLEN]`. Missing keys read
/// as empty strings; other types are refused before the options are parsed.
pub(super) fn lcs(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let a = string_or_empty(ctx, &argv[1])?;
    let b = string_or_empty(ctx, &argv[2])?;
    let opts = parse_options(&argv[3..])?;
    // Redis refuses when the table of (alen+1)*(blen+1) 32-bit cells would exceed
    // proto-max-bulk-len.
    let max = ctx.config().with(|c| c.proto_max_bulk_len);
    let table_bytes = (a.len() as u128 + 1) * (b.len() as u128 + 1) * 4;
    if table_bytes > u128::from(max) {
        return Err(insufficient_memory());
    }
    let result = lcs_table_walk(&a, &b)?;
    let total = len_reply(result.common.len());
    if opts.len {
        return Ok(Reply::Integer(total));
    }
    if !opts.idx {
        return Ok(Reply::Bulk(result.common));
    }
    let matches = result
        .matches
        .iter()
        .filter(|m| m.len() >= opts.min_match_len)
        .map(|m| {
            let range = |(s, e): (usize, usize)| {
                Reply::Array(vec![
                    Reply::Integer(len_reply(s)),
                    Reply::Integer(len_reply(e)),
                ])
            };
            let mut item = vec![range(m.a), range(m.b)];
            if opts.with_match_len {
                item.push(Reply::Integer(len_reply(m.len())));
            }
            Reply::Array(item)
        })
        .collect();
    Ok(Reply::Map(vec![
        (Reply::bulk("matches"), Reply::Array(matches)),
        (Reply::bulk("len"), Reply::Integer(total)),
    ]))
}

/// The string at `key`, empty when missing, or LCS's own wrong-type error.
fn string_or_empty(ctx: &mut Ctx<'_>, key: &[u8]) -> OpResult<Vec<u8>> {
    let db = ctx.db();
    match ctx.ks.get(db, key)? {
        None => Ok(Vec::new()),
        Some(v) => match v.as_str() {
            Ok(s) => Ok(s.as_bytes().to_vec()),
            Err(_) => Err(OpError::custom(
                "ERR The specified keys must contain string values",
            )),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::{lcs_table_walk, LcsMatch};
    use proptest::prelude::*;

    /// `(a, b, common, matches)` cases whose replies were recorded from Redis 7.0.15
    /// (`LCS a b` and `LCS a b IDX WITHMATCHLEN`); ties in the walk must break the
    /// same way.
    /// One run: inclusive ranges in the first and the second string.
    type Run = ((usize, usize), (usize, usize));

    const RECORDED: &[(&str, &str, &str, &[Run])] = &[
        ("da", "a", "a", &[((1, 1), (0, 0))]),
        (
            "abaaddaba",
            "daabadab",
            "aaadab",
            &[
                ((5, 7), (5, 7)),
                ((3, 3), (4, 4)),
                ((2, 2), (2, 2)),
                ((0, 0), (1, 1)),
            ],
        ),
        (
            "abbaabaa",
            "abaaaabbb",
            "abaaaa",
            &[((6, 7), (4, 5)), ((2, 4), (1, 3)), ((0, 0), (0, 0))],
        ),
        (
            "ohmytext",
            "mynewtext",
            "mytext",
            &[((4, 7), (5, 8)), ((2, 3), (0, 1))],
        ),
        ("", "abc", "", &[]),
    ];

    #[test]
    fn walk_matches_recorded_redis_replies() {
        for (a, b, common, matches) in RECORDED {
            let r = lcs_table_walk(a.as_bytes(), b.as_bytes()).expect("small table");
            assert_eq!(r.common, common.as_bytes(), "{a} {b}");
            let want: Vec<LcsMatch> = matches.iter().map(|&(a, b)| LcsMatch { a, b }).collect();
            assert_eq!(r.matches, want, "{a} {b}");
        }
    }

    /// LCS length by plain recursion with memoisation over suffixes: a model that
    /// shares no code with the table walk.
    fn model_len(a: &[u8], b: &[u8]) -> usize {
        fn go(a: &[u8], b: &[u8], i: usize, j: usize, memo: &mut Vec<Vec<Option<usize>>>) -> usize {
            if i == a.len() || j == b.len() {
                return 0;
            }
            if let Some(v) = memo[i][j] {
                return v;
            }
            let v = if a[i] == b[j] {
                1 + go(a, b, i + 1, j + 1, memo)
            } else {
                go(a, b, i + 1, j, memo).max(go(a, b, i, j + 1, memo))
            };
            memo[i][j] = Some(v);
            v
        }
        let mut memo = vec![vec![None; b.len()]; a.len()];
        go(a, b, 0, 0, &mut memo)
    }

    fn is_subsequence(sub: &[u8], of: &[u8]) -> bool {
        let mut it = of.iter();
        sub.iter().all(|c| it.any(|x| x == c))
    }

    proptest! {
        #[test]
        fn walk_agrees_with_model(
            a in proptest::collection::vec(0u8..4, 0..24),
            b in proptest::collection::vec(0u8..4, 0..24),
        ) {
            let r = lcs_table_walk(&a, &b).expect("small table");
            prop_assert_eq!(r.common.len(), model_len(&a, &b));
            prop_assert!(is_subsequence(&r.common, &a));
            prop_assert!(is_subsequence(&r.common, &b));
            // The runs cover the common bytes exactly, from the end backwards, with no
            // two runs adjacent in both strings (they would have been one run).
            let mut rebuilt = Vec::new();
            let mut prev: Option<LcsMatch> = None;
            for m in &r.matches {
                prop_assert_eq!(m.a.1 - m.a.0, m.b.1 - m.b.0);
                prop_assert_eq!(&a[m.a.0..=m.a.1], &b[m.b.0..=m.b.1]);
                if let Some(p) = prev {
                    prop_assert!(m.a.1 < p.a.0 && m.b.1 < p.b.0);
                    prop_assert!(!(m.a.1 + 1 == p.a.0 && m.b.1 + 1 == p.b.0));
                }
                rebuilt.splice(0..0, a[m.a.0..=m.a.1].iter().copied());
                prev = Some(*m);
            }
            prop_assert_eq!(rebuilt, r.common);
        }
    }
}
