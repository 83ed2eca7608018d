//! `GEOADD`, `GEOPOS`, `GEODIST` and `GEOHASH`, and the argument readers the whole
//! family shares (coordinates, units).
//!
//! `GEOADD` is `ZADD` with each longitude/latitude pair turned into its score, as in
//! Redis: the same options, replies, events and encodings follow.

use super::hash;
use crate::command::ctx::Ctx;
use crate::command::handlers::zsets::{self, parse::parse_double, read_zset};
use crate::error::{GeoError, OpError, OpResult};
use crate::reply::Reply;

/// Reads a longitude and latitude with Redis's float parsing and range check.
pub(crate) fn lon_lat(lon: &[u8], lat: &[u8]) -> OpResult<(f64, f64)> {
    let lon = parse_double(lon).ok_or(OpError::NotFloat)?;
    let lat = parse_double(lat).ok_or(OpError::NotFloat)?;
    if !(hash::LONG_MIN..=hash::LONG_MAX).contains(&lon)
        || !(hash::LAT_MIN..=hash::LAT_MAX).contains(&lat)
    {
        return Err(GeoError::InvalidLonLat(format!("{lon:.6},{lat:.6}")).into());
    }
    Ok((lon, lat))
}

/// The size of a distance unit in metres.
pub(crate) fn unit(arg: &[u8]) -> OpResult<f64> {
    match arg.to_ascii_lowercase().as_slice() {
        b"m" => Ok(1.0),
        b"km" => Ok(1000.0),
        b"ft" => Ok(0.3048),
        b"mi" => Ok(1609.34),
        _ => Err(GeoError::UnsupportedUnit.into()),
    }
}

/// A distance as Redis replies it: `%.4f`, a bulk string in both protocols.
pub(crate) fn distance_reply(d: f64) -> Reply {
    Reply::Bulk(format!("{d:.4}").into_bytes())
}

/// `GEOADD key [NX|XX] [CH] longitude latitude member [...]`: `ZADD` with the
/// encoded scores.
pub(super) fn geoadd(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let mut first = 2;
    let (mut nx, mut xx) = (false, false);
    while let Some(opt) = argv.get(first) {
        match opt.to_ascii_lowercase().as_slice() {
            b"nx" => nx = true,
            b"xx" => xx = true,
            b"ch" => {}
            _ => break,
        }
        first += 1;
    }
    let triples = &argv[first..];
    if !triples.len().is_multiple_of(3) || (nx && xx) {
        return Err(OpError::Syntax);
    }
    let mut zadd = Vec::with_capacity(first + triples.len() / 3 * 2);
    zadd.push(b"zadd".to_vec());
    zadd.extend(argv[1..first].iter().cloned());
    for t in triples.chunks(3) {
        let (lon, lat) = lon_lat(&t[0], &t[1])?;
        let bits = hash::encode_score(lon, lat).unwrap_or(0);
        zadd.push(bits.to_string().into_bytes());
        zadd.push(t[2].clone());
    }
    zsets::basic::zadd(ctx, &zadd)
}

/// `GEOPOS key [member ...]`: each member's longitude and latitude, or a null array.
pub(super) fn geopos(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let z = read_zset(ctx, &argv[1])?;
    let out = argv[2..]
        .iter()
        .map(|m| match z.and_then(|z| z.score(m)) {
            None => Reply::NullArray,
            Some(score) => {
                let (lon, lat) = hash::decode_score(score);
                Reply::Array(vec![Reply::HumanDouble(lon), Reply::HumanDouble(lat)])
            }
        })
        .collect();
    Ok(Reply::Array(out))
}

/// `GEODIST key member1 member2 [M|KM|FT|MI]`: null when the key or either member
/// is missing.
pub(super) fn geodist(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let to_metres = match argv.len() {
        4 => 1.0,
        5 => unit(&argv[4])?,
        _ => return Err(OpError::Syntax),
    };
    let Some(z) = read_zset(ctx, &argv[1])? else {
        return Ok(Reply::Null);
    };
    let (Some(a), Some(b)) = (z.score(&argv[2]), z.score(&argv[3])) else {
        return Ok(Reply::Null);
    };
    let (lon1, lat1) = hash::decode_score(a);
    let (lon2, lat2) = hash::decode_score(b);
    Ok(distance_reply(
        hash::distance(lon1, lat1, lon2, lat2) / to_metres,
    ))
}

/// `GEOHASH key [member ...]`: each member's 11-character geohash, or null.
pub(super) fn geohash(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let z = read_zset(ctx, &argv[1])?;
    let out = argv[2..]
        .iter()
        .map(|m| match z.and_then(|z| z.score(m)) {
            None => Reply::Null,
            Some(score) => Reply::bulk(hash::geohash_string(score)),
        })
        .collect();
    Ok(Reply::Array(out))
}
