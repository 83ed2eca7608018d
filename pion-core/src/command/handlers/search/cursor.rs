//! Cursors over `FT.AGGREGATE … WITHCURSOR` results, and `FT.CURSOR READ|DEL|GC`.
//!
//! A cursor keeps the compiled pipeline itself, paused between reads, so each read
//! continues where the last stopped (reading documents as they are then), as
//! RediSearch's cursors do. Cursor ids are random and global (a read names an index,
//! but RediSearch finds the cursor by id alone). A cursor idle for longer than its
//! `MAXIDLE` is gone; RediSearch collects idle cursors from time to time, Pion as soon
//! as any cursor command runs.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use rand::Rng;

use super::aggregate::{chunk_reply, read_chunk, CursorOpts, Pipeline};
use crate::command::ctx::Ctx;
use crate::error::{OpError, OpResult};
use crate::index::SearchIndex;
use crate::reply::Reply;

struct Cursor {
    index: Arc<SearchIndex>,
    pipe: Pipeline,
    /// Rows per read: the last `COUNT` given (`None`: all).
    count: Option<usize>,
    max_idle: Duration,
    last_used: Instant,
}

impl Cursor {
    fn expired(&self, now: Instant) -> bool {
        now.duration_since(self.last_used) > self.max_idle
    }
}

/// Every open cursor of the engine, by id.
#[derive(Default)]
pub struct Cursors {
    map: Mutex<HashMap<u64, Cursor>>,
}

impl Cursors {
    /// Removes the cursors idle past their `MAXIDLE`; returns how many.
    pub fn collect_idle(&self) -> usize {
        let now = Instant::now();
        let mut map = self.map.lock();
        let before = map.len();
        map.retain(|_, c| !c.expired(now));
        before - map.len()
    }

    /// Keeps a pipeline for later reads; returns its new id.
    pub(super) fn open(&self, index: Arc<SearchIndex>, pipe: Pipeline, opts: CursorOpts) -> u64 {
        self.collect_idle();
        let mut map = self.map.lock();
        let mut rng = rand::thread_rng();
        let id = loop {
            let id = rng.gen_range(1..(1u64 << 31));
            if !map.contains_key(&id) {
                break id;
            }
        };
        map.insert(
            id,
            Cursor {
                index,
                pipe,
                count: Some(opts.count),
                max_idle: Duration::from_millis(opts.max_idle_ms),
                last_used: Instant::now(),
            },
        );
        id
    }

    /// Takes a cursor out while it is read (a concurrent read does not find it).
    fn take(&self, id: u64) -> Option<Cursor> {
        self.collect_idle();
        self.map.lock().remove(&id)
    }

    fn put_back(&self, id: u64, mut cursor: Cursor) {
        cursor.last_used = Instant::now();
        self.map.lock().insert(id, cursor);
    }

    /// Forgets every cursor (the indexes were all dropped).
    pub fn clear(&self) {
        self.map.lock().clear();
    }
}

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
    let engine = ctx.engine;
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
            let chunk = read_chunk(&mut cursor.pipe, &env, size)?;
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
