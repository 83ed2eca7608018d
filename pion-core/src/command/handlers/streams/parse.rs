//! Parsing stream ids and the trimming options of `XADD` and `XTRIM`, as Redis's
//! `streamGenericParseIDOrReply` and `streamParseAddOrTrimArgsOrReply` read them
//! (same order of checks, same error texts).

use crate::command::handlers::util::is_kw;
use crate::error::{OpError, OpResult, StreamError};
use crate::util::num::parse_i64;
use crate::value::stream::{StreamId, Trim, TrimStrategy};

/// Parses an unsigned decimal as Redis's `string2ull` does (no sign, no spaces,
/// at most 20 digits that fit in 64 bits).
fn parse_u64(s: &[u8]) -> Option<u64> {
    if s.is_empty() || s.len() > 20 || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(s).ok()?.parse().ok()
}

/// How an id argument is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdRules {
    /// `-` and `+` are refused.
    pub strict: bool,
    /// The sequence when only milliseconds are given.
    pub missing_seq: u64,
    /// `<ms>-*` is accepted (XADD).
    pub auto_seq: bool,
}

/// A parsed id, and whether its sequence was given (false for `<ms>-*`).
pub fn parse_id_with(arg: &[u8], rules: IdRules) -> OpResult<(StreamId, bool)> {
    let invalid = || OpError::from(StreamError::InvalidId);
    if arg.len() > 127 {
        return Err(invalid());
    }
    // As a C string, the argument ends at its first NUL byte.
    let arg = arg.split(|&b| b == 0).next().unwrap_or(&[]);
    if rules.strict && (arg == b"-" || arg == b"+") {
        return Err(invalid());
    }
    match arg {
        b"-" => return Ok((StreamId::MIN, true)),
        b"+" => return Ok((StreamId::MAX, true)),
        _ => {}
    }
    let (ms_part, seq_part) = match arg.iter().position(|&b| b == b'-') {
        Some(at) => (&arg[..at], Some(&arg[at + 1..])),
        None => (arg, None),
    };
    let ms = parse_u64(ms_part).ok_or_else(invalid)?;
    match seq_part {
        None => Ok((StreamId::new(ms, rules.missing_seq), true)),
        Some(b"*") if rules.auto_seq => Ok((StreamId::new(ms, 0), false)),
        Some(seq) => Ok((StreamId::new(ms, parse_u64(seq).ok_or_else(invalid)?), true)),
    }
}

/// A strict id (`-` and `+` refused), missing sequence 0.
pub fn strict_id(arg: &[u8]) -> OpResult<StreamId> {
    parse_id_with(
        arg,
        IdRules {
            strict: true,
            missing_seq: 0,
            auto_seq: false,
        },
    )
    .map(|(id, _)| id)
}

/// An id where `-` and `+` are allowed, with this missing sequence.
pub fn loose_id(arg: &[u8], missing_seq: u64) -> OpResult<StreamId> {
    parse_id_with(
        arg,
        IdRules {
            strict: false,
            missing_seq,
            auto_seq: false,
        },
    )
    .map(|(id, _)| id)
}

/// A range bound: `(` makes it exclusive (and strict); returns the id and whether it
/// was exclusive.
pub fn interval_id(arg: &[u8], missing_seq: u64) -> OpResult<(StreamId, bool)> {
    if arg.len() > 1 && arg[0] == b'(' {
        let (id, _) = parse_id_with(
            &arg[1..],
            IdRules {
                strict: true,
                missing_seq,
                auto_seq: false,
            },
        )?;
        Ok((id, true))
    } else {
        Ok((loose_id(arg, missing_seq)?, false))
    }
}

/// What `XADD`/`XTRIM` read before the id (and, for XTRIM, everything).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AddTrimArgs {
    /// The trim, if any (its limit as given or defaulted).
    pub trim: Option<Trim>,
    /// Index of the trim threshold argument (to rewrite it for the log).
    pub trim_arg: usize,
    /// `NOMKSTREAM`.
    pub no_mkstream: bool,
    /// The explicit id (`None`: `*`), and whether its sequence was given.
    pub id: Option<(StreamId, bool)>,
    /// Index of the id argument (XADD).
    pub id_at: usize,
}

/// Parses the options of `XADD` (`xadd`) or `XTRIM`; `node_max_entries` gives the
/// default `LIMIT` of a `~` trim, and `replaying` lifts the limit as Redis does for
/// commands from its own log.
pub fn add_trim_args(
    argv: &[Vec<u8>],
    xadd: bool,
    node_max_entries: usize,
    replaying: bool,
) -> OpResult<AddTrimArgs> {
    let mut out = AddTrimArgs::default();
    let mut strategy: Option<TrimStrategy> = None;
    let mut approx = false;
    let mut limit: i64 = 0;
    let mut limit_given = false;
    let mut i = 2;
    while i < argv.len() {
        let more = argv.len() - 1 - i;
        let opt = &argv[i];
        if xadd && opt.as_slice() == b"*" {
            break;
        } else if (is_kw(opt, "maxlen") || is_kw(opt, "minid")) && more > 0 {
            if strategy.is_some() {
                return Err(StreamError::MaxlenAndMinid.into());
            }
            approx = false;
            let next = &argv[i + 1];
            if more >= 2 && next.as_slice() == b"~" {
                approx = true;
                i += 1;
            } else if more >= 2 && next.as_slice() == b"=" {
                i += 1;
            }
            let value = &argv[i + 1];
            strategy = Some(if is_kw(opt, "maxlen") {
                let n = parse_i64(value).ok_or(OpError::NotInteger)?;
                if n < 0 {
                    return Err(StreamError::MaxlenNegative.into());
                }
                TrimStrategy::MaxLen(n as u64)
            } else {
                TrimStrategy::MinId(strict_id(value)?)
            });
            i += 1;
            out.trim_arg = i;
        } else if is_kw(opt, "limit") && more > 0 {
            limit = parse_i64(&argv[i + 1]).ok_or(OpError::NotInteger)?;
            if limit < 0 {
                return Err(StreamError::LimitNegative.into());
            }
            limit_given = true;
            i += 1;
        } else if xadd && is_kw(opt, "nomkstream") {
            out.no_mkstream = true;
        } else if xadd {
            out.id = Some(parse_id_with(
                opt,
                IdRules {
                    strict: true,
                    missing_seq: 0,
                    auto_seq: true,
                },
            )?);
            break;
        } else {
            return Err(OpError::Syntax);
        }
        i += 1;
    }
    out.id_at = i;
    if limit != 0 && strategy.is_none() {
        return Err(StreamError::LimitWithoutStrategy.into());
    }
    let Some(strategy) = strategy else {
        if !xadd {
            return Err(StreamError::XtrimWithoutStrategy.into());
        }
        return Ok(out);
    };
    if replaying {
        limit = 0;
    } else if limit_given {
        if !approx {
            return Err(StreamError::LimitWithoutApprox.into());
        }
    } else if approx {
        limit = (100i64).saturating_mul(node_max_entries as i64);
        if limit <= 0 {
            limit = 10_000;
        }
        limit = limit.min(1_000_000);
    } else {
        limit = 0;
    }
    out.trim = Some(Trim {
        strategy,
        approx,
        limit: limit as u64,
    });
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_parse_as_redis_reads_them() {
        assert_eq!(strict_id(b"5").ok(), Some(StreamId::new(5, 0)));
        assert_eq!(
            loose_id(b"5", u64::MAX).ok(),
            Some(StreamId::new(5, u64::MAX))
        );
        assert_eq!(strict_id(b"1-2").ok(), Some(StreamId::new(1, 2)));
        assert!(strict_id(b"-").is_err());
        assert_eq!(loose_id(b"+", 0).ok(), Some(StreamId::MAX));
        assert!(strict_id(b"1-").is_err());
        assert!(strict_id(b"-1").is_err());
        assert!(strict_id(b"1-2-3").is_err());
        assert!(strict_id(b"18446744073709551616").is_err());
        assert_eq!(
            interval_id(b"(1-1", 0).ok(),
            Some((StreamId::new(1, 1), true))
        );
        assert!(interval_id(b"(-", 0).is_err());
    }
}
