//! The blocking sorted-set pops: `BZPOPMIN`, `BZPOPMAX` and `BZMPOP`. With data they
//! do (and log) what `ZPOPMIN`/`ZPOPMAX`/`ZMPOP` do; otherwise the client waits on
//! the keys (see [`crate::clients::blocking`]).

use super::pop::{pop_end, zmpop};
use super::write_zset;
use crate::clients::blocking::parse_timeout;
use crate::command::ctx::Ctx;
use crate::error::OpResult;
use crate::reply::Reply;

/// `[key, member, score]` from the first non-empty sorted set, logged as a pop of one
/// member from that key.
fn bzpop(ctx: &mut Ctx<'_>, argv: &[Vec<u8>], max: bool) -> OpResult<Reply> {
    let timeout = parse_timeout(&argv[argv.len() - 1])?;
    let keys = &argv[1..argv.len() - 1];
    for key in keys {
        let Some(z) = write_zset(ctx, key)? else {
            continue;
        };
        let Some(top) = pop_end(z, 1, max).pop() else {
            continue;
        };
        let (pop, event): (&[u8], _) = if max {
            (b"ZPOPMAX", "zpopmax")
        } else {
            (b"ZPOPMIN", "zpopmin")
        };
        ctx.notify(crate::pubsub::notify::ZSET, event, key);
        ctx.log_as(vec![vec![pop.to_vec(), key.clone()]]);
        return Ok(Reply::Array(vec![
            Reply::bulk(key),
            Reply::Bulk(top.member),
            Reply::Double(top.score),
        ]));
    }
    ctx.wait_for_keys(keys, timeout, Reply::NullArray)
}

/// `BZPOPMIN key [key …] timeout`.
pub(super) fn bzpopmin(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    bzpop(ctx, argv, false)
}

/// `BZPOPMAX key [key …] timeout`.
pub(super) fn bzpopmax(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    bzpop(ctx, argv, true)
}

/// Key finder for `BZMPOP timeout numkeys key …`.
pub(super) fn bzmpop_keys(argv: &[Vec<u8>]) -> OpResult<Vec<usize>> {
    crate::command::handlers::lists::push_pop::mpop_numkeys_keys(argv, 2)
}

/// `BZMPOP timeout numkeys key [key …] MIN|MAX [COUNT count]`, logged as the same
/// `ZMPOP`.
pub(super) fn bzmpop(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let timeout = parse_timeout(&argv[1])?;
    // ZMPOP's arguments are BZMPOP's without the timeout.
    let reply = zmpop(ctx, &argv[1..])?;
    if reply != Reply::NullArray {
        let mut logged = vec![b"ZMPOP".to_vec()];
        logged.extend(argv[2..].iter().cloned());
        ctx.log_as(vec![logged]);
        return Ok(reply);
    }
    let keys: Vec<Vec<u8>> = bzmpop_keys(argv)?
        .into_iter()
        .map(|i| argv[i].clone())
        .collect();
    ctx.wait_for_keys(&keys, timeout, Reply::NullArray)
}
