//! The searches: `GEORADIUS`, `GEORADIUSBYMEMBER` (and their `_RO` forms),
//! `GEOSEARCH` and `GEOSEARCHSTORE`.
//!
//! One parser reads all of them in Redis's order, so the first error Redis would
//! report is the one reported here. The search visits the cells
//! [`hash::Search::cells`] picks, each as a score range of the sorted set, in
//! Redis's order; without sorting, results come back in that order.

use std::cmp::Ordering;

use super::commands::{distance_reply, lon_lat, unit};
use super::hash::{self, Search, Shape};
use super::pqsort::pqsort;
use crate::command::ctx::{Ctx, Effect};
use crate::command::handlers::util::{int, is_kw};
use crate::command::handlers::zsets::{parse::parse_double, read_zset};
use crate::error::{GeoError, OpError, OpResult};
use crate::pubsub::notify;
use crate::reply::Reply;
use crate::value::{Value, ZSetValue};

/// Which command of the family is running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `GEORADIUS` (`store`: whether `STORE`/`STOREDIST` are allowed).
    Radius { store: bool },
    /// `GEORADIUSBYMEMBER`.
    ByMember { store: bool },
    /// `GEOSEARCH`.
    Search,
    /// `GEOSEARCHSTORE`.
    SearchStore,
}

/// Result order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sort {
    /// As found.
    None,
    /// Nearest first.
    Asc,
    /// Farthest first.
    Desc,
}

/// Where the centre comes from before the sorted set is read.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Origin {
    /// Explicit coordinates.
    Point(f64, f64),
    /// A member of the sorted set.
    Member(Vec<u8>),
}

/// A parsed search request.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Request {
    /// The centre.
    pub origin: Origin,
    /// The shape, and the metres in its unit.
    pub shape: Shape,
    /// Metres per unit.
    pub conversion: f64,
    /// Reply with distances.
    pub withdist: bool,
    /// Reply with raw scores.
    pub withhash: bool,
    /// Reply with coordinates.
    pub withcoord: bool,
    /// Order.
    pub sort: Sort,
    /// At most this many results (0: all).
    pub count: u64,
    /// Stop at the first `count` found rather than the nearest.
    pub any: bool,
    /// The destination key's argument index, and whether distances are stored.
    pub store: Option<(usize, bool)>,
}

/// Reads a radius or box side, with Redis's error naming it.
fn number(arg: &[u8], what: &'static str) -> OpResult<f64> {
    parse_double(arg).ok_or(GeoError::NotNumeric(what).into())
}

/// A radius and unit.
fn radius(args: &[Vec<u8>]) -> OpResult<(f64, f64)> {
    let r = number(&args[0], "radius")?;
    if r < 0.0 {
        return Err(GeoError::NegativeRadius.into());
    }
    Ok((r, unit(&args[1])?))
}

/// Parses a search command's arguments. The member a search starts from is only
/// named here; `source_exists` says whether the sorted set is there (Redis checks a
/// member inline, so a missing member of an existing key fails at its place in
/// the arguments: the caller passes `member_ok` to check it then).
pub(crate) fn parse(
    argv: &[Vec<u8>],
    kind: Kind,
    source_exists: bool,
    member_ok: &dyn Fn(&[u8]) -> bool,
) -> OpResult<Request> {
    let mut req = Request {
        origin: Origin::Point(0.0, 0.0),
        shape: Shape::Radius(0.0),
        conversion: 1.0,
        withdist: false,
        withhash: false,
        withcoord: false,
        sort: Sort::None,
        count: 0,
        any: false,
        store: None,
    };
    let undecodable = || OpError::from(GeoError::UndecodableMember);
    let base = match kind {
        Kind::Radius { .. } => {
            let (lon, lat) = lon_lat(&argv[2], &argv[3])?;
            req.origin = Origin::Point(lon, lat);
            let (r, c) = radius(&argv[4..6])?;
            (req.shape, req.conversion) = (Shape::Radius(r), c);
            6
        }
        Kind::ByMember { .. } => {
            if source_exists {
                if !member_ok(&argv[2]) {
                    return Err(undecodable());
                }
                req.origin = Origin::Member(argv[2].clone());
                let (r, c) = radius(&argv[3..5])?;
                (req.shape, req.conversion) = (Shape::Radius(r), c);
            }
            5
        }
        Kind::Search => 2,
        Kind::SearchStore => {
            req.store = Some((1, false));
            3
        }
    };
    let search = matches!(kind, Kind::Search | Kind::SearchStore);
    let can_store = matches!(
        kind,
        Kind::Radius { store: true } | Kind::ByMember { store: true }
    );
    let (mut from_member, mut from_lonlat, mut by_radius, mut by_box) =
        (false, false, false, false);
    let rest = &argv[base..];
    let mut i = 0;
    while i < rest.len() {
        let arg = &rest[i];
        let left = rest.len() - i - 1;
        if is_kw(arg, "withdist") {
            req.withdist = true;
        } else if is_kw(arg, "withhash") {
            req.withhash = true;
        } else if is_kw(arg, "withcoord") {
            req.withcoord = true;
        } else if is_kw(arg, "any") {
            req.any = true;
        } else if is_kw(arg, "asc") {
            req.sort = Sort::Asc;
        } else if is_kw(arg, "desc") {
            req.sort = Sort::Desc;
        } else if is_kw(arg, "count") && left >= 1 {
            let n = int(&rest[i + 1])?;
            if n <= 0 {
                return Err(GeoError::CountNotPositive.into());
            }
            req.count = n as u64;
            i += 1;
        } else if (is_kw(arg, "store") || is_kw(arg, "storedist")) && left >= 1 && can_store {
            req.store = Some((base + i + 1, is_kw(arg, "storedist")));
            i += 1;
        } else if is_kw(arg, "storedist") && kind == Kind::SearchStore {
            req.store = Some((1, true));
        } else if is_kw(arg, "frommember") && left >= 1 && search && !from_lonlat {
            let m = &rest[i + 1];
            if source_exists && !member_ok(m) {
                return Err(undecodable());
            }
            req.origin = Origin::Member(m.clone());
            from_member = true;
            i += 1;
        } else if is_kw(arg, "fromlonlat") && left >= 2 && search && !from_member {
            let (lon, lat) = lon_lat(&rest[i + 1], &rest[i + 2])?;
            req.origin = Origin::Point(lon, lat);
            from_lonlat = true;
            i += 2;
        } else if is_kw(arg, "byradius") && left >= 2 && search && !by_box {
            let (r, c) = radius(&rest[i + 1..i + 3])?;
            (req.shape, req.conversion) = (Shape::Radius(r), c);
            by_radius = true;
            i += 2;
        } else if is_kw(arg, "bybox") && left >= 3 && search && !by_radius {
            let w = number(&rest[i + 1], "width")?;
            let h = number(&rest[i + 2], "height")?;
            if h < 0.0 || w < 0.0 {
                return Err(GeoError::NegativeBox.into());
            }
            let c = unit(&rest[i + 3])?;
            (req.shape, req.conversion) = (Shape::Box(w, h), c);
            by_box = true;
            i += 3;
        } else {
            return Err(OpError::Syntax);
        }
        i += 1;
    }
    if req.store.is_some() && (req.withdist || req.withhash || req.withcoord) {
        let what = if kind == Kind::SearchStore {
            "GEOSEARCHSTORE"
        } else {
            "STORE option in GEORADIUS"
        };
        return Err(GeoError::StoreWithReplyOptions(what).into());
    }
    let name = || String::from_utf8_lossy(&argv[0]).into_owned();
    if search && !(from_member || from_lonlat) {
        return Err(GeoError::NoOrigin(name()).into());
    }
    if search && !(by_radius || by_box) {
        return Err(GeoError::NoShape(name()).into());
    }
    if req.any && req.count == 0 {
        return Err(GeoError::AnyWithoutCount.into());
    }
    if req.count != 0 && req.sort == Sort::None && !req.any {
        req.sort = Sort::Asc;
    }
    Ok(req)
}

/// One point found.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Found {
    /// The member.
    pub member: Vec<u8>,
    /// Its score.
    pub score: f64,
    /// Its distance from the centre, in metres.
    pub dist: f64,
    /// Its longitude.
    pub lon: f64,
    /// Its latitude.
    pub lat: f64,
}

/// The points of `z` inside the search, in Redis's order of discovery; with
/// `limit`, the first `limit` found.
pub(crate) fn find(z: &ZSetValue, search: &Search, limit: u64) -> Vec<Found> {
    let mut out: Vec<Found> = Vec::new();
    let cells = search.cells();
    let mut last: Option<usize> = None;
    let full = |out: &Vec<Found>| limit != 0 && out.len() as u64 >= limit;
    for (i, cell) in cells.iter().enumerate() {
        if cell.is_zero() {
            continue;
        }
        if last.is_some_and(|l| cells[l] == *cell) {
            continue;
        }
        if full(&out) {
            break;
        }
        let (min, max) = cell.score_range();
        let (min, max) = (min as f64, max as f64);
        let start = z.partition_point(|e| e.score < min);
        for e in z.range(start, z.len()) {
            if e.score >= max || full(&out) {
                break;
            }
            let (lon, lat) = hash::decode_score(e.score);
            if let Some(dist) = search.contains(lon, lat) {
                out.push(Found {
                    member: e.member.to_vec(),
                    score: e.score,
                    dist,
                    lon,
                    lat,
                });
            }
        }
        last = Some(i);
    }
    out
}

/// Runs a search command.
pub(crate) fn run(ctx: &mut Ctx<'_>, argv: &[Vec<u8>], kind: Kind) -> OpResult<Reply> {
    let src = match kind {
        Kind::SearchStore => 2,
        _ => 1,
    };
    // Checked before any argument, as Redis looks the key up first.
    let req = {
        let z = read_zset(ctx, &argv[src])?;
        let exists = z.is_some();
        parse(argv, kind, exists, &|m| {
            z.is_some_and(|z| z.score(m).is_some())
        })?
    };
    let found = {
        let z = read_zset(ctx, &argv[src])?;
        match z {
            None => None,
            Some(z) => {
                let (lon, lat) = match &req.origin {
                    Origin::Point(lon, lat) => (*lon, *lat),
                    Origin::Member(m) => hash::decode_score(z.score(m).unwrap_or(0.0)),
                };
                let search = Search {
                    lon,
                    lat,
                    shape: req.shape,
                    conversion: req.conversion,
                };
                Some(find(z, &search, if req.any { req.count } else { 0 }))
            }
        }
    };
    let Some(mut found) = found else {
        return match req.store {
            Some((dst, _)) => store(ctx, &argv[dst], Vec::new(), false, kind),
            None => {
                ctx.effect = Effect::Nothing;
                Ok(Reply::Array(Vec::new()))
            }
        };
    };
    let returned = match usize::try_from(req.count) {
        Ok(0) | Err(_) => found.len(),
        Ok(c) => c.min(found.len()),
    };
    let cmp = |a: &Found, b: &Found| match req.sort {
        Sort::Desc => b.dist.partial_cmp(&a.dist).unwrap_or(Ordering::Equal),
        _ => a.dist.partial_cmp(&b.dist).unwrap_or(Ordering::Equal),
    };
    if req.sort != Sort::None {
        if returned == found.len() {
            // Redis's qsort: stable, equal distances keep the order they were found in.
            found.sort_by(cmp);
        } else {
            pqsort(&mut found, &cmp, 0, returned - 1);
        }
    }
    found.truncate(returned);
    for f in &mut found {
        f.dist /= req.conversion;
    }
    if let Some((dst, storedist)) = req.store {
        // Only the destination is written: the source's watchers and trackers are
        // not told (unless it is the destination too).
        if argv[dst] != argv[src] {
            ctx.unmodified_keys.push(src);
        }
        return store(ctx, &argv[dst], found, storedist, kind);
    }
    ctx.effect = Effect::Nothing;
    let options = req.withdist || req.withhash || req.withcoord;
    let items = found
        .into_iter()
        .map(|f| {
            if !options {
                return Reply::Bulk(f.member);
            }
            let mut item = vec![Reply::Bulk(f.member)];
            if req.withdist {
                item.push(distance_reply(f.dist));
            }
            if req.withhash {
                item.push(Reply::Integer(f.score as i64));
            }
            if req.withcoord {
                item.push(Reply::Array(vec![
                    Reply::HumanDouble(f.lon),
                    Reply::HumanDouble(f.lat),
                ]));
            }
            Reply::Array(item)
        })
        .collect();
    Ok(Reply::Array(items))
}

/// Stores the results at `dst` (scores, or distances with `STOREDIST`); no results
/// delete it. Replies with the number stored.
fn store(
    ctx: &mut Ctx<'_>,
    dst: &[u8],
    found: Vec<Found>,
    storedist: bool,
    kind: Kind,
) -> OpResult<Reply> {
    let db = ctx.db();
    if found.is_empty() {
        if ctx.ks.remove(db, dst)?.is_some() {
            ctx.notify(notify::GENERIC, "del", dst);
        } else {
            ctx.effect = Effect::Nothing;
        }
        return Ok(Reply::Integer(0));
    }
    let limits = ctx.limits();
    let mut z = ZSetValue::with_hint(usize::MAX, 0, &limits);
    for f in &found {
        let score = if storedist { f.dist } else { f.score };
        z.insert(&f.member, score, &limits);
    }
    z.convert_to_listpack_if_fits(&limits);
    let n = z.len();
    ctx.ks.set(db, dst, Value::ZSet(z))?;
    let event = match kind {
        Kind::Search | Kind::SearchStore => "geosearchstore",
        _ => "georadiusstore",
    };
    ctx.notify(notify::ZSET, event, dst);
    Ok(Reply::Integer(n as i64))
}

/// Key finder for `GEORADIUS`/`GEORADIUSBYMEMBER`: the source, then the last
/// `STORE`/`STOREDIST` destination (searched from `from`).
pub(crate) fn store_keys(argv: &[Vec<u8>], from: usize) -> Vec<usize> {
    let mut keys = vec![1];
    let mut stored = None;
    let mut i = from;
    while i < argv.len() {
        if (is_kw(&argv[i], "store") || is_kw(&argv[i], "storedist")) && i + 1 < argv.len() {
            stored = Some(i + 1);
            i += 1;
        }
        i += 1;
    }
    keys.extend(stored);
    keys
}
