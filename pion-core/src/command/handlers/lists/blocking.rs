//! The blocking list commands: `BLPOP`, `BRPOP`, `BLMOVE`, `BRPOPLPUSH`, `BLMPOP`.
//! Each does what its non-blocking form does when a key has data (and logs that
//! form); otherwise the client waits on the keys (see [`crate::clients::blocking`]).

use super::push_pop::{move_one, mpop, parse_mpop};
use super::{parse_end, write_list};
use crate::clients::blocking::parse_timeout;
use crate::command::ctx::Ctx;
use crate::error::OpResult;
use crate::reply::Reply;
use crate::value::list::End;

/// `BLPOP`/`BRPOP key [key …] timeout`: `[key, element]` from the first non-empty
/// list, logged as `LPOP`/`RPOP` of that key.
fn bpop(ctx: &mut Ctx<'_>, argv: &[Vec<u8>], end: End) -> OpResult<Reply> {
    let timeout = parse_timeout(&argv[argv.len() - 1])?;
    let keys = &argv[1..argv.len() - 1];
    for key in keys {
        let Some(list) = write_list(ctx, key)? else {
            continue;
        };
        let Some(elem) = list.pop(end) else {
            continue;
        };
        let (pop, event): (&[u8], _) = if end == End::Left {
            (b"LPOP", "lpop")
        } else {
            (b"RPOP", "rpop")
        };
        ctx.notify(crate::pubsub::notify::LIST, event, key);
        ctx.log_as(vec![vec![pop.to_vec(), key.clone()]]);
        return Ok(Reply::Array(vec![Reply::bulk(key), Reply::Bulk(elem)]));
    }
    ctx.wait_for_keys(keys, timeout, Reply::NullArray)
}

/// `BLPOP key [key …] timeout`.
pub(super) fn blpop(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    bpop(ctx, argv, End::Left)
}

/// `BRPOP key [key …] timeout`.
pub(super) fn brpop(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    bpop(ctx, argv, End::Right)
}

/// Moves one element, or waits on the source; logged as `LMOVE`.
fn bmove(
    ctx: &mut Ctx<'_>,
    argv: &[Vec<u8>],
    from: End,
    to: End,
    timeout_at: usize,
) -> OpResult<Reply> {
    let timeout = parse_timeout(&argv[timeout_at])?;
    let (src, dst) = (&argv[1], &argv[2]);
    match move_one(ctx, src, dst, from, to)? {
        // Inside a transaction it answers a nil string at once; a wait that times
        // out answers the nil array (Redis's two replies differ).
        Reply::Null if ctx.client.nested.is_some() => {
            ctx.effect = crate::command::ctx::Effect::Nothing;
            Ok(Reply::Null)
        }
        Reply::Null => ctx.wait_for_keys(std::slice::from_ref(src), timeout, Reply::NullArray),
        moved => {
            let side = |e: End| {
                if e == End::Left {
                    b"LEFT".to_vec()
                } else {
                    b"RIGHT".to_vec()
                }
            };
            ctx.log_as(vec![vec![
                b"LMOVE".to_vec(),
                src.clone(),
                dst.clone(),
                side(from),
                side(to),
            ]]);
            Ok(moved)
        }
    }
}

/// `BLMOVE source destination LEFT|RIGHT LEFT|RIGHT timeout`.
pub(super) fn blmove(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let from = parse_end(&argv[3])?;
    let to = parse_end(&argv[4])?;
    bmove(ctx, argv, from, to, 5)
}

/// `BRPOPLPUSH source destination timeout`.
pub(super) fn brpoplpush(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    bmove(ctx, argv, End::Right, End::Left, 3)
}

/// Key finder for `BLMPOP timeout numkeys key …`.
pub(super) fn blmpop_keys(argv: &[Vec<u8>]) -> OpResult<Vec<usize>> {
    super::push_pop::mpop_numkeys_keys(argv, 2)
}

/// `BLMPOP timeout numkeys key [key …] LEFT|RIGHT [COUNT count]`, logged as the
/// same `LMPOP` (which pops the same elements from the same state).
pub(super) fn blmpop(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let timeout = parse_timeout(&argv[1])?;
    let args = parse_mpop(argv, 2)?;
    if let Some(reply) = mpop(ctx, argv, &args)? {
        let mut logged = vec![b"LMPOP".to_vec()];
        logged.extend(argv[2..].iter().cloned());
        ctx.log_as(vec![logged]);
        return Ok(reply);
    }
    let keys: Vec<Vec<u8>> = args.keys.iter().map(|&i| argv[i].clone()).collect();
    ctx.wait_for_keys(&keys, timeout, Reply::NullArray)
}
