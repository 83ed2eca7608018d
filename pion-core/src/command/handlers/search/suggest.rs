//! `FT.SUGADD`, `FT.SUGGET`, `FT.SUGDEL` and `FT.SUGLEN`: autocomplete dictionaries
//! kept under ordinary keys (the value type is [`SuggestionsValue`]), with
//! RediSearch 2.10's arguments, error texts and replies.
//!
//! Like RediSearch, a dictionary key stays when its last suggestion is deleted (and
//! `FT.SUGADD` with a zero score creates an empty one); unlike it, `COPY` copies one.

use crate::command::ctx::Ctx;
use crate::command::flags::*;
use crate::command::{CommandSpec, Group, KeySpecDoc};
use crate::error::{OpError, OpResult};
use crate::reply::Reply;
use crate::util::num::parse_f64;
use crate::value::suggest::{LookupOptions, MAX_PREFIX_BYTES};
use crate::value::{SuggestionsValue, Value};

const KEY: &[KeySpecDoc] = &[KeySpecDoc::range(&["RW", "access", "update"], 1, 0, 1, 0)];

const fn sug(
    name: &'static str,
    flags: u64,
    handler: crate::command::Handler,
    summary: &'static str,
) -> CommandSpec {
    CommandSpec::new(name, -1, flags | MODULE, Group::Search, handler)
        .key_specs(KEY)
        .keys(1, 1, 1)
        .doc(summary, "1.0.0")
}

/// This family's part of the command table.
pub static COMMANDS: &[CommandSpec] = &[
    sug(
        "ft.sugadd",
        WRITE | DENYOOM,
        add,
        "Adds a suggestion string to an auto-complete suggestion dictionary",
    ),
    sug(
        "ft.sugget",
        READONLY,
        get,
        "Gets completion suggestions for a prefix",
    ),
    sug(
        "ft.sugdel",
        WRITE,
        del,
        "Deletes a string from a suggestion index",
    ),
    sug(
        "ft.suglen",
        READONLY,
        len,
        "Gets the size of an auto-complete suggestion dictionary",
    ),
];

const NONE_PROVIDED: &str = "Expected an argument, but none provided";
const NOT_CONVERTED: &str = "Could not convert argument to expected type";
const OUT_OF_BOUNDS: &str = "Value is outside acceptable bounds";

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The dictionary under `key` for reading: `None` when missing, `WRONGTYPE` for
/// another type.
fn read<'c>(ctx: &'c mut Ctx<'_>, key: &[u8]) -> OpResult<Option<&'c SuggestionsValue>> {
    let db = ctx.db();
    match ctx.ks.get(db, key)? {
        None => Ok(None),
        Some(v) => v.as_suggestions().map(Some),
    }
}

/// `FT.SUGADD key string score [INCR] [PAYLOAD payload]`: the dictionary's size.
fn add(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    if !(4..=7).contains(&argv.len()) {
        return Err(OpError::WrongArity("FT.SUGADD".into()));
    }
    let mut incr = false;
    let mut payload: &[u8] = b"";
    let mut i = 4;
    while i < argv.len() {
        let arg = &argv[i];
        if arg.eq_ignore_ascii_case(b"INCR") {
            incr = true;
            i += 1;
        } else if arg.eq_ignore_ascii_case(b"PAYLOAD") {
            let Some(p) = argv.get(i + 1) else {
                return Err(OpError::custom(format!("Invalid payload: {NONE_PROVIDED}")));
            };
            payload = p;
            i += 2;
        } else {
            return Err(OpError::custom(format!(
                "Unknown argument `{}`",
                lossy(arg)
            )));
        }
    }
    // WRONGTYPE before a bad score, as RediSearch checks them.
    let score = || parse_f64(&argv[3]).ok_or(OpError::custom("ERR invalid score"));
    let db = ctx.db();
    let size = match ctx.ks.get_mut(db, &argv[1])? {
        Some(value) => {
            let dict = value.as_suggestions_mut()?;
            dict.add(&argv[2], score()?, incr, payload);
            dict.len()
        }
        None => {
            let mut dict = SuggestionsValue::new();
            dict.add(&argv[2], score()?, incr, payload);
            let len = dict.len();
            ctx.ks
                .set(db, &argv[1], Value::Suggestions(Box::new(dict)))?;
            len
        }
    };
    Ok(Reply::Integer(size as i64))
}

/// `FT.SUGGET`'s options.
fn parse_options(args: &[Vec<u8>]) -> OpResult<(LookupOptions, bool, bool)> {
    let mut opts = LookupOptions {
        max: 5,
        fuzzy: false,
        trim: false,
    };
    let (mut with_scores, mut with_payloads) = (false, false);
    let mut i = 0;
    while i < args.len() {
        let arg = args[i].to_ascii_uppercase();
        i += 1;
        match arg.as_slice() {
            b"FUZZY" => opts.fuzzy = true,
            b"WITHSCORES" => with_scores = true,
            b"WITHPAYLOADS" => with_payloads = true,
            b"TRIM" => opts.trim = true,
            // Accepted and without effect in RediSearch 2.10 as well.
            b"OPTIMIZE" => {}
            b"MAX" => {
                let n = args
                    .get(i)
                    .ok_or_else(|| OpError::custom(format!("MAX: {NONE_PROVIDED}")))?;
                opts.max = max_count(n).map_err(|why| OpError::custom(format!("MAX: {why}")))?;
                i += 1;
            }
            _ => {
                return Err(OpError::custom(format!(
                    "Unrecognized argument: {}",
                    lossy(&args[i - 1])
                )))
            }
        }
    }
    Ok((opts, with_scores, with_payloads))
}

/// `MAX n` as RediSearch reads it: an integer from 1 to 2³²−1, or a number of at
/// least 1 whose fraction is dropped (`2.9`, `1e1`, `0x3`).
fn max_count(arg: &[u8]) -> Result<usize, &'static str> {
    let n = match crate::util::num::parse_i64(arg) {
        Some(n) => n,
        None => match parse_f64(arg) {
            Some(d) if d >= 1.0 => d as i64,
            _ => return Err(NOT_CONVERTED),
        },
    };
    if n < 1 || n > i64::from(u32::MAX) {
        return Err(OUT_OF_BOUNDS);
    }
    usize::try_from(n).map_err(|_| OUT_OF_BOUNDS)
}

/// `FT.SUGGET key prefix [FUZZY] [WITHSCORES] [WITHPAYLOADS] [MAX n] [TRIM]`.
fn get(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    if !(3..=10).contains(&argv.len()) {
        return Err(OpError::WrongArity("FT.SUGGET".into()));
    }
    if argv[2].len() >= MAX_PREFIX_BYTES {
        return Err(OpError::custom("Invalid query length"));
    }
    let (opts, with_scores, with_payloads) = parse_options(&argv[3..])?;
    let Some(dict) = read(ctx, &argv[1])? else {
        return Ok(Reply::Null);
    };
    let found = dict
        .lookup(&argv[2], opts)
        .ok_or(OpError::custom("Invalid query"))?;
    let mut out = Vec::with_capacity(found.len() * 3);
    for s in found {
        out.push(Reply::Bulk(s.text));
        if with_scores {
            out.push(Reply::ShortDouble(f64::from(s.score)));
        }
        if with_payloads {
            out.push(s.payload.map_or(Reply::Null, |p| Reply::Bulk(p.into_vec())));
        }
    }
    Ok(Reply::Array(out))
}

/// `FT.SUGDEL key string`: 1 when it was there.
fn del(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    if argv.len() != 3 {
        return Err(OpError::WrongArity("FT.SUGDEL".into()));
    }
    let db = ctx.db();
    let deleted = match ctx.ks.get_mut(db, &argv[1])? {
        Some(v) => v.as_suggestions_mut()?.delete(&argv[2]),
        None => false,
    };
    if !deleted {
        ctx.log_as(Vec::new());
    }
    Ok(Reply::Integer(i64::from(deleted)))
}

/// `FT.SUGLEN key`.
fn len(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    if argv.len() != 2 {
        return Err(OpError::WrongArity("FT.SUGLEN".into()));
    }
    let n = read(ctx, &argv[1])?.map_or(0, SuggestionsValue::len);
    Ok(Reply::Integer(n as i64))
}
