//! `FT.CURSOR READ|DEL|GC` over `FT.AGGREGATE … WITHCURSOR` results. A cursor keeps
//! the compiled pipeline itself, paused between reads, so each read continues where
//! the last stopped (reading documents as they are then), as RediSearch's cursors do;
//! the cursors are the engine's ([`index::cursor`](crate::index::cursor)).

use std::sync::Arc;

use super::aggregate::{chunk_reply, read_chunk, Pipeline};
use crate::command::ctx::Ctx;
use crate::error::{OpError, OpResult};
use crate::reply::Reply;

fn err(text: &'static str) -> OpError {
    OpError::custom(text)
}

fn parse_i64(b: &[u8]) -> Option<i64> {
    crate::util::num::parse_i64(b)
}

/// `FT.CURSOR READ index id [COUNT n]`, `FT.CURSOR DEL index id`, `FT.CURSOR GC index id`.
pub(super) fn cursor(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    if argv.len() < 4 {
        return Err(err("ERR wrong number of arguments for 'FT.CURSOR' command"));
    }
    let sub = argv[1].to_ascii_uppercase();
    if !matches!(sub.as_slice(), b"READ" | b"DEL" | b"GC") {
        return Err(err("Unknown subcommand"));
    }
    let id = parse_i64(&argv[3]).ok_or_else(|| err("Bad cursor ID"))?;
    let engine = ctx.engine();
    let cursors = &engine.search_cursors();
    match sub.as_slice() {
        b"DEL" => {
            let found = u64::try_from(id).ok().and_then(|id| cursors.take(id));
            match found {
                Some(_) => Ok(Reply::ok()),
                None => Err(err("Cursor does not exist")),
            }
        }
        b"GC" => Ok(Reply::Integer(cursors.collect_idle() as i64)),
        _ => {
            // RediSearch reads the count from the sixth argument, whatever precedes it.
            let count = match argv.get(5) {
                Some(a) => parse_i64(a).ok_or_else(|| err("Bad value for COUNT"))?,
                None => 0,
            };
            let Some(id) = u64::try_from(id).ok() else {
                return Err(err("Cursor not found"));
            };
            let Some(mut cursor) = cursors.take(id) else {
                return Err(err("Cursor not found"));
            };
            let live = engine
                .search()
                .get(&cursor.index.def.read().name)
                .is_some_and(|i| Arc::ptr_eq(&i, &cursor.index));
            if !live {
                return Err(err("Cursor not found"));
            }
            // A count sticks for later reads; a negative one reads everything.
            match count {
                0 => {}
                n if n < 0 => cursor.count = None,
                n => cursor.count = Some(n as usize),
            }
            let size = cursor.count;
            let env = super::aggregate::pipeline::Env {
                engine,
                index: &cursor.index,
                now_ms: ctx.now_ms(),
            };
            let Some(pipe) = cursor.paused.downcast_mut::<Pipeline>() else {
                // Only FT.AGGREGATE opens cursors, always over its pipeline.
                return Err(err("Cursor not found"));
            };
            let chunk = read_chunk(pipe, &env, size)?;
            let done = chunk.done;
            let reply = chunk_reply(chunk, ctx.client.resp >= 3);
            let next = if done {
                0
            } else {
                cursors.put_back(id, cursor);
                id
            };
            Ok(Reply::Array(vec![reply, Reply::Integer(next as i64)]))
        }
    }
}
