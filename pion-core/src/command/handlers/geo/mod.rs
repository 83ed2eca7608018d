//! Geo commands: `GEOADD`, `GEOPOS`, `GEODIST`, `GEOHASH`, `GEORADIUS`,
//! `GEORADIUSBYMEMBER` (and their `_RO` forms), `GEOSEARCH` and `GEOSEARCHSTORE`.
//!
//! Redis has no geo type: a geo index is a sorted set whose scores are 52-bit
//! geohashes, so `ZRANGE`, `ZREM` and every sorted-set command see the same
//! members and scores, and a sorted set written by redis-server's `GEOADD` answers
//! the same searches here. The family is split by concern: `hash` is the geohash
//! arithmetic (encoding, cells, neighbours, distances), `commands` the point
//! commands and shared argument readers, `search` the radius and box searches,
//! `pqsort` Redis's partial sort of results cut by `COUNT`.

mod commands;
pub use crate::util::geohash as hash;
mod pqsort;
pub mod search;

use crate::command::ctx::Ctx;
use crate::command::flags::*;
use crate::command::{CommandSpec, Group, KeySpecDoc};
use crate::error::OpResult;
use crate::reply::Reply;
use search::Kind;

const G: Group = Group::Geo;

fn georadius(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    search::run(ctx, argv, Kind::Radius { store: true })
}

fn georadius_ro(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    search::run(ctx, argv, Kind::Radius { store: false })
}

fn georadiusbymember(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    search::run(ctx, argv, Kind::ByMember { store: true })
}

fn georadiusbymember_ro(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    search::run(ctx, argv, Kind::ByMember { store: false })
}

fn geosearch(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    search::run(ctx, argv, Kind::Search)
}

fn geosearchstore(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    search::run(ctx, argv, Kind::SearchStore)
}

fn georadius_keys(argv: &[Vec<u8>]) -> OpResult<Vec<usize>> {
    Ok(search::store_keys(argv, 6))
}

fn georadiusbymember_keys(argv: &[Vec<u8>]) -> OpResult<Vec<usize>> {
    Ok(search::store_keys(argv, 5))
}

const SOURCE: KeySpecDoc = KeySpecDoc::range(&["RO", "access"], 1, 0, 1, 0);

/// `GEORADIUS`'s key specifications: the source, then `STORE` and `STOREDIST`
/// destinations searched from argument 6.
const RADIUS_SPECS: &[KeySpecDoc] = &[
    SOURCE,
    KeySpecDoc::after_keyword(&["OW", "update"], "STORE", 6),
    KeySpecDoc::after_keyword(&["OW", "update"], "STOREDIST", 6),
];

/// `GEORADIUSBYMEMBER`'s, searched from argument 5.
const BYMEMBER_SPECS: &[KeySpecDoc] = &[
    SOURCE,
    KeySpecDoc::after_keyword(&["OW", "update"], "STORE", 5),
    KeySpecDoc::after_keyword(&["OW", "update"], "STOREDIST", 5),
];

const RADIUS_SUMMARY: &str = "Query a sorted set representing a geospatial index to fetch members matching a given maximum distance from a point";

/// This family's part of the command table.
pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("geoadd", -5, WRITE | DENYOOM, G, commands::geoadd)
        .key_specs(&[KeySpecDoc::range(&["RW", "update"], 1, 0, 1, 0)])
        .keys(1, 1, 1)
        .doc("Add one or more geospatial items in the geospatial index represented using a sorted set", "3.2.0"),
    CommandSpec::new("geodist", -4, READONLY, G, commands::geodist)
        .key_specs(&[SOURCE])
        .keys(1, 1, 1)
        .doc("Returns the distance between two members of a geospatial index", "3.2.0"),
    CommandSpec::new("geohash", -2, READONLY, G, commands::geohash)
        .key_specs(&[SOURCE])
        .keys(1, 1, 1)
        .doc("Returns members of a geospatial index as standard geohash strings", "3.2.0"),
    CommandSpec::new("geopos", -2, READONLY, G, commands::geopos)
        .key_specs(&[SOURCE])
        .keys(1, 1, 1)
        .doc("Returns longitude and latitude of members of a geospatial index", "3.2.0"),
    CommandSpec::new("georadius", -6, WRITE | DENYOOM, G, georadius)
        .key_specs(RADIUS_SPECS)
        .keys(1, 1, 1)
        .movable(georadius_keys)
        .doc(RADIUS_SUMMARY, "3.2.0"),
    CommandSpec::new("georadius_ro", -6, READONLY, G, georadius_ro)
        .key_specs(&[SOURCE])
        .keys(1, 1, 1)
        .doc("A read-only variant for GEORADIUS", "3.2.10"),
    CommandSpec::new("georadiusbymember", -5, WRITE | DENYOOM, G, georadiusbymember)
        .key_specs(BYMEMBER_SPECS)
        .keys(1, 1, 1)
        .movable(georadiusbymember_keys)
        .doc("Query a sorted set representing a geospatial index to fetch members matching a given maximum distance from a member", "3.2.0"),
    CommandSpec::new("georadiusbymember_ro", -5, READONLY, G, georadiusbymember_ro)
        .key_specs(&[SOURCE])
        .keys(1, 1, 1)
        .doc("A read-only variant for GEORADIUSBYMEMBER", "3.2.10"),
    CommandSpec::new("geosearch", -7, READONLY, G, geosearch)
        .key_specs(&[SOURCE])
        .keys(1, 1, 1)
        .doc("Query a sorted set representing a geospatial index to fetch members inside an area of a box or a circle.", "6.2.0"),
    CommandSpec::new("geosearchstore", -8, WRITE | DENYOOM, G, geosearchstore)
        .key_specs(&[
            KeySpecDoc::range(&["OW", "update"], 1, 0, 1, 0),
            KeySpecDoc::range(&["RO", "access"], 2, 0, 1, 0),
        ])
        .keys(1, 2, 1)
        .doc("Query a sorted set representing a geospatial index to fetch members inside an area of a box or a circle, and store the result in another key.", "6.2.0"),
];

#[cfg(test)]
mod tests;
