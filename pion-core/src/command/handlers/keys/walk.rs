//! Walks over a whole database: `KEYS`, `SCAN` and `RANDOMKEY`.
//!
//! `KEYS` and `RANDOMKEY` hold every shard for their short run. `SCAN` holds none: the
//! keyspace walk locks one shard at a time, and its cursor is Pion's own opaque slot
//! position (any value a client got from `SCAN` resumes the walk; 0 starts and ends it).

use crate::command::ctx::Ctx;
use crate::command::handlers::util::{int, is_kw, parse_scan_cursor};
use crate::error::{OpError, OpResult};
use crate::reply::Reply;
use crate::util::glob::glob_match;

/// `KEYS pattern`.
pub(super) fn keys(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let db = ctx.db();
    let pattern = &argv[1];
    let all = pattern.as_slice() == b"*";
    let mut keys = ctx.ks.keys(db)?;
    if !all {
        keys.retain(|k| glob_match(pattern, k, false));
    }
    Ok(Reply::Array(keys.into_iter().map(Reply::Bulk).collect()))
}

/// `SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]`.
pub(super) fn scan(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let cursor = parse_scan_cursor(&argv[1])?;
    let mut count = 10usize;
    let mut pattern: Option<&[u8]> = None;
    let mut type_name: Option<&[u8]> = None;
    let mut j = 2;
    while j < argv.len() {
        let has_arg = j + 1 < argv.len();
        if is_kw(&argv[j], "count") && has_arg {
            let n = int(&argv[j + 1])?;
            if n < 1 {
                return Err(OpError::Syntax);
            }
            count = usize::try_from(n).unwrap_or(usize::MAX);
        } else if is_kw(&argv[j], "match") && has_arg {
            pattern = Some(argv[j + 1].as_slice()).filter(|p| *p != b"*");
        } else if is_kw(&argv[j], "type") && has_arg {
            type_name = Some(&argv[j + 1]);
        } else {
            return Err(OpError::Syntax);
        }
        j += 2;
    }
    let db = ctx.db();
    let mut found = Vec::new();
    let next = ctx
        .keyspace()
        .scan(db, cursor, count, ctx.now_ms(), |key, entry, _| {
            let type_ok = type_name
                .is_none_or(|t| t.eq_ignore_ascii_case(entry.value.type_name().as_bytes()));
            if type_ok && pattern.is_none_or(|p| glob_match(p, key, false)) {
                found.push(Reply::bulk(key));
            }
        });
    Ok(Reply::Array(vec![
        Reply::Bulk(next.to_string().into_bytes()),
        Reply::Array(found),
    ]))
}

/// `RANDOMKEY`: a uniformly chosen live key, or nil in an empty database.
pub(super) fn randomkey(ctx: &mut Ctx<'_>, _: &[Vec<u8>]) -> OpResult<Reply> {
    let db = ctx.db();
    let key = ctx.ks.random_key(db, &mut ctx.client.rng)?;
    Ok(Reply::bulk_or_null(key))
}
