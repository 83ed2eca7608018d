//! `LCS`: the longest common subsequence of two string values, as a string, its
//! length, or the matching ranges (`IDX`) found by walking the dynamic-programming
//! table back from its end, like Redis does.

use crate::commands::util::{int, is_kw};
use crate::error::{OpError, OpResult};
use crate::exec::Ctx;
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
    let max = ctx.engine.config().with(|c| c.proto_max_bulk_len);
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

/// An index or length as a reply integer (allocations never exceed `i64::MAX`).
fn len_reply(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
