//! Sorted-set commands (`ZADD`, `ZRANGE` and the rest of Redis's `Z*` family).
//!
//! The family is split by concern: [`parse`] reads scores and range bounds the way
//! Redis's `strtod` does, `basic` holds the single-key reads and writes, `range` the
//! `ZRANGE` family and range removals, `pop` the pops, and `store` the multi-key
//! algebra (`ZUNION`, `ZINTER`, `ZDIFF`, their `STORE` forms and `ZINTERCARD`).

pub(crate) mod basic;
mod blocking;
pub(crate) mod parse;
mod pop;
mod range;
mod store;

use crate::command::ctx::Ctx;
use crate::command::flags::*;
use crate::command::KeySpecDoc;
use crate::command::{CommandSpec, Group};
use crate::error::OpResult;
use crate::reply::Reply;
use crate::value::zset::ZEntry;
use crate::value::ZSetValue;

const Z: Group = Group::SortedSet;

/// This family's part of the command table.
pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("zadd", -4, WRITE | DENYOOM | FAST, Z, basic::zadd)
        .key_specs(&[KeySpecDoc::range(&["RW", "update"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc("Adds one or more members to a sorted set, or updates their scores. Creates the key if it doesn't exist.", "1.2.0"),
    CommandSpec::new("zincrby", 4, WRITE | DENYOOM | FAST, Z, basic::zincrby)
        .key_specs(&[KeySpecDoc::range(&["RW", "access", "update"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc("Increments the score of a member in a sorted set.", "1.2.0"),
    CommandSpec::new("zrem", -3, NOOP_ON_ZERO | WRITE | FAST, Z, basic::zrem)
        .key_specs(&[KeySpecDoc::range(&["RW", "delete"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc("Removes one or more members from a sorted set. Deletes the sorted set if all members were removed.", "1.2.0"),
    CommandSpec::new("zcard", 2, READONLY | FAST, Z, basic::zcard)
        .key_specs(&[KeySpecDoc::range(&["RO"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc("Returns the number of members in a sorted set.", "1.2.0"),
    CommandSpec::new("zscore", 3, READONLY | FAST, Z, basic::zscore)
        .key_specs(&[KeySpecDoc::range(&["RO", "access"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc("Returns the score of a member in a sorted set.", "1.2.0"),
    CommandSpec::new("zmscore", -3, READONLY | FAST, Z, basic::zmscore)
        .key_specs(&[KeySpecDoc::range(&["RO", "access"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc("Returns the score of one or more members in a sorted set.", "6.2.0"),
    CommandSpec::new("zrank", 3, READONLY | FAST, Z, basic::zrank)
        .key_specs(&[KeySpecDoc::range(&["RO", "access"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc("Returns the index of a member in a sorted set ordered by ascending scores.", "2.0.0"),
    CommandSpec::new("zrevrank", 3, READONLY | FAST, Z, basic::zrevrank)
        .key_specs(&[KeySpecDoc::range(&["RO", "access"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc("Returns the index of a member in a sorted set ordered by descending scores.", "2.0.0"),
    CommandSpec::new("zcount", 4, READONLY | FAST, Z, basic::zcount)
        .key_specs(&[KeySpecDoc::range(&["RO", "access"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc("Returns the count of members in a sorted set that have scores within a range.", "2.0.0"),
    CommandSpec::new("zlexcount", 4, READONLY | FAST, Z, basic::zlexcount)
        .key_specs(&[KeySpecDoc::range(&["RO", "access"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc("Returns the number of members in a sorted set within a lexicographical range.", "2.8.9"),
    CommandSpec::new("zrange", -4, READONLY, Z, range::zrange)
        .key_specs(&[KeySpecDoc::range(&["RO", "access"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc("Returns members in a sorted set within a range of indexes.", "1.2.0"),
    CommandSpec::new("zrangestore", -5, WRITE | DENYOOM, Z, range::zrangestore)
        .key_specs(&[KeySpecDoc::range(&["OW", "update"], 1, 0, 1, 0), KeySpecDoc::range(&["RO", "access"], 2, 0, 1, 0)])
        .keys(1, 2, 1)
        .doc("Stores a range of members from sorted set in a key.", "6.2.0"),
    CommandSpec::new("zrevrange", -4, READONLY, Z, range::zrevrange)
        .key_specs(&[KeySpecDoc::range(&["RO", "access"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc("Returns members in a sorted set within a range of indexes in reverse order.", "1.2.0"),
    CommandSpec::new("zrangebyscore", -4, READONLY, Z, range::zrangebyscore)
        .key_specs(&[KeySpecDoc::range(&["RO", "access"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc("Returns members in a sorted set within a range of scores.", "1.0.5"),
    CommandSpec::new("zrevrangebyscore", -4, READONLY, Z, range::zrevrangebyscore)
        .key_specs(&[KeySpecDoc::range(&["RO", "access"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc("Returns members in a sorted set within a range of scores in reverse order.", "2.2.0"),
    CommandSpec::new("zrangebylex", -4, READONLY, Z, range::zrangebylex)
        .key_specs(&[KeySpecDoc::range(&["RO", "access"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc("Returns members in a sorted set within a lexicographical range.", "2.8.9"),
    CommandSpec::new("zrevrangebylex", -4, READONLY, Z, range::zrevrangebylex)
        .key_specs(&[KeySpecDoc::range(&["RO", "access"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc("Returns members in a sorted set within a lexicographical range in reverse order.", "2.8.9"),
    CommandSpec::new("zremrangebyrank", 4, NOOP_ON_ZERO | WRITE, Z, range::zremrangebyrank)
        .key_specs(&[KeySpecDoc::range(&["RW", "delete"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc("Removes members in a sorted set within a range of indexes. Deletes the sorted set if all members were removed.", "2.0.0"),
    CommandSpec::new("zremrangebyscore", 4, NOOP_ON_ZERO | WRITE, Z, range::zremrangebyscore)
        .key_specs(&[KeySpecDoc::range(&["RW", "delete"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc("Removes members in a sorted set within a range of scores. Deletes the sorted set if all members were removed.", "1.2.0"),
    CommandSpec::new("zremrangebylex", 4, NOOP_ON_ZERO | WRITE, Z, range::zremrangebylex)
        .key_specs(&[KeySpecDoc::range(&["RW", "delete"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc("Removes members in a sorted set within a lexicographical range. Deletes the sorted set if all members were removed.", "2.8.9"),
    CommandSpec::new("zpopmin", -2, WRITE | FAST, Z, pop::zpopmin)
        .key_specs(&[KeySpecDoc::range(&["RW", "access", "delete"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc("Returns the lowest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped.", "5.0.0"),
    CommandSpec::new("zpopmax", -2, WRITE | FAST, Z, pop::zpopmax)
        .key_specs(&[KeySpecDoc::range(&["RW", "access", "delete"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc("Returns the highest-scoring members from a sorted set after removing them. Deletes the sorted set if the last member was popped.", "5.0.0"),
    CommandSpec::new("zmpop", -4, WRITE, Z, pop::zmpop)
        .key_specs(&[KeySpecDoc::keynum(&["RW", "access", "delete"], 1, 0, 1, 1)])
        .movable(pop::zmpop_keys)
        .doc("Returns the highest- or lowest-scoring members from one or more sorted sets after removing them. Deletes the sorted set if the last member was popped.", "7.0.0"),
    CommandSpec::new("bzpopmin", -3, WRITE | NOSCRIPT | BLOCKING | FAST, Z, blocking::bzpopmin)
        .key_specs(&[KeySpecDoc::range(&["RW", "access", "delete"], 1, -2, 1, 0)])
        .keys(1, -2, 1)
        .doc("Remove and return the member with the lowest score from one or more sorted sets, or block until one is available", "5.0.0"),
    CommandSpec::new("bzpopmax", -3, WRITE | NOSCRIPT | BLOCKING | FAST, Z, blocking::bzpopmax)
        .key_specs(&[KeySpecDoc::range(&["RW", "access", "delete"], 1, -2, 1, 0)])
        .keys(1, -2, 1)
        .doc("Remove and return the member with the highest score from one or more sorted sets, or block until one is available", "5.0.0"),
    CommandSpec::new("bzmpop", -5, WRITE | BLOCKING, Z, blocking::bzmpop)
        .key_specs(&[KeySpecDoc::keynum(&["RW", "access", "delete"], 2, 0, 1, 1)])
        .movable(blocking::bzmpop_keys)
        .doc("Remove and return members with scores in a sorted set or block until one is available", "7.0.0"),
    CommandSpec::new("zrandmember", -2, READONLY, Z, basic::zrandmember)
        .key_specs(&[KeySpecDoc::range(&["RO", "access"], 1, 0, 1, 0)])
        .tips(&["nondeterministic_output"])
        .keys(1, 1, 1)
        .doc("Returns one or more random members from a sorted set.", "6.2.0"),
    CommandSpec::new("zunion", -3, READONLY, Z, store::zunion)
        .key_specs(&[KeySpecDoc::keynum(&["RO", "access"], 1, 0, 1, 1)])
        .movable(store::numkeys_at_1)
        .doc("Returns the union of multiple sorted sets.", "6.2.0"),
    CommandSpec::new("zinter", -3, READONLY, Z, store::zinter)
        .key_specs(&[KeySpecDoc::keynum(&["RO", "access"], 1, 0, 1, 1)])
        .movable(store::numkeys_at_1)
        .doc("Returns the intersect of multiple sorted sets.", "6.2.0"),
    CommandSpec::new("zdiff", -3, READONLY, Z, store::zdiff)
        .key_specs(&[KeySpecDoc::keynum(&["RO", "access"], 1, 0, 1, 1)])
        .movable(store::numkeys_at_1)
        .doc("Returns the difference between multiple sorted sets.", "6.2.0"),
    CommandSpec::new("zunionstore", -4, WRITE | DENYOOM, Z, store::zunionstore)
        .key_specs(&[KeySpecDoc::range(&["OW", "update"], 1, 0, 1, 0), KeySpecDoc::keynum(&["RO", "access"], 2, 0, 1, 1)])
        .keys(1, 1, 1)
        .movable(store::dest_and_numkeys_at_2)
        .doc("Stores the union of multiple sorted sets in a key.", "2.0.0"),
    CommandSpec::new("zinterstore", -4, WRITE | DENYOOM, Z, store::zinterstore)
        .key_specs(&[KeySpecDoc::range(&["OW", "update"], 1, 0, 1, 0), KeySpecDoc::keynum(&["RO", "access"], 2, 0, 1, 1)])
        .keys(1, 1, 1)
        .movable(store::dest_and_numkeys_at_2)
        .doc("Stores the intersect of multiple sorted sets in a key.", "2.0.0"),
    CommandSpec::new("zdiffstore", -4, WRITE | DENYOOM, Z, store::zdiffstore)
        .key_specs(&[KeySpecDoc::range(&["OW", "update"], 1, 0, 1, 0), KeySpecDoc::keynum(&["RO", "access"], 2, 0, 1, 1)])
        .keys(1, 1, 1)
        .movable(store::dest_and_numkeys_at_2)
        .doc("Stores the difference of multiple sorted sets in a key.", "6.2.0"),
    CommandSpec::new("zintercard", -3, READONLY, Z, store::zintercard)
        .key_specs(&[KeySpecDoc::keynum(&["RO", "access"], 1, 0, 1, 1)])
        .movable(store::numkeys_at_1)
        .doc("Returns the number of members of the intersect of multiple sorted sets.", "7.0.0"),
    CommandSpec::new("zscan", -3, READONLY, Z, basic::zscan)
        .key_specs(&[KeySpecDoc::range(&["RO", "access"], 1, 0, 1, 0)])
        .tips(&["nondeterministic_output"])
        .keys(1, 1, 1)
        .doc("Iterates over members and scores of a sorted set.", "2.8.0"),
];

/// The sorted set at `key` for reading: `Ok(None)` when missing, `WRONGTYPE` for
/// other types.
pub(crate) fn read_zset<'c>(ctx: &'c mut Ctx<'_>, key: &[u8]) -> OpResult<Option<&'c ZSetValue>> {
    let db = ctx.db();
    match ctx.ks.get(db, key)? {
        None => Ok(None),
        Some(v) => Ok(Some(v.as_zset()?)),
    }
}

/// The sorted set at `key` for writing: `Ok(None)` when missing, `WRONGTYPE` for
/// other types.
pub(crate) fn write_zset<'c>(
    ctx: &'c mut Ctx<'_>,
    key: &[u8],
) -> OpResult<Option<&'c mut ZSetValue>> {
    let db = ctx.db();
    match ctx.ks.get_mut(db, key)? {
        None => Ok(None),
        Some(v) => Ok(Some(v.as_zset_mut()?)),
    }
}

/// Members, or member/score pairs with `withscores`, as `ZRANGE` replies.
pub(crate) fn members_reply<'a>(
    items: impl Iterator<Item = ZEntry<'a>>,
    withscores: bool,
) -> Reply {
    if withscores {
        Reply::Pairs(
            items
                .map(|e| (Reply::bulk(e.member), Reply::Double(e.score)))
                .collect(),
        )
    } else {
        Reply::Array(items.map(|e| Reply::bulk(e.member)).collect())
    }
}

#[cfg(test)]
mod tests;
