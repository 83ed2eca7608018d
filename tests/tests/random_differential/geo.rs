//! The geo family of the randomized differential run: GEOADD, GEOSEARCH(STORE),
//! GEORADIUS and friends over a few sorted sets, points near each other and near the
//! poles and the antimeridian.

use rand::rngs::SmallRng;
use rand::Rng;

use pion_tests::RedisServer;

use super::{pick, run_with, seeds};

/// A random coordinate pair: mostly near one of a few centres (so searches find
/// points and cross cell borders), sometimes anywhere, at the limits, or past them.
fn geo_point(rng: &mut SmallRng) -> (String, String) {
    const CENTRES: &[(f64, f64)] = &[(13.4, 38.1), (-0.1, 51.5), (179.9, -84.9), (-179.95, 0.0)];
    match rng.gen_range(0..20) {
        0 => (
            pick(rng, &["180", "-180", "0", "179.9999999"]).into(),
            pick(rng, &["85.05112878", "-85.05112878", "0", "-85.05"]).into(),
        ),
        1 => (
            pick(rng, &["180.0001", "0", "abc"]).into(),
            pick(rng, &["85.06", "-90", "1"]).into(),
        ),
        2..=5 => (
            format!("{:.6}", rng.gen_range(-180.0..180.0)),
            format!("{:.6}", rng.gen_range(-85.05..85.05)),
        ),
        _ => {
            let (lon, lat) = CENTRES[rng.gen_range(0..CENTRES.len())];
            let spread = pick(rng, &["0.01", "0.3", "3"])
                .parse::<f64>()
                .unwrap_or(1.0);
            let lon = (lon + rng.gen_range(-spread..spread)).clamp(-180.0, 180.0);
            let lat = (lat + rng.gen_range(-spread..spread)).clamp(-85.05, 85.05);
            (format!("{lon:.7}"), format!("{lat:.7}"))
        }
    }
}

/// Geo commands over three keys: GEOADD of up to 30 random points (mostly
/// clustered), GEOSEARCH and GEOSEARCHSTORE from points or members, by radius or
/// box, in every unit, sorted or not, with COUNT [ANY] and the WITH options, the
/// GEORADIUS family with STORE and STOREDIST, GEOPOS, GEODIST, GEOHASH, reads of
/// the stored results, removals and wrong types.
fn gen_geo_command(rng: &mut SmallRng) -> Vec<String> {
    let k = |rng: &mut SmallRng| format!("k{}", rng.gen_range(0..3));
    let member = |rng: &mut SmallRng| format!("m{}", rng.gen_range(0..40));
    let unit = |rng: &mut SmallRng| pick(rng, &["m", "km", "km", "mi", "ft", "KM"]).to_string();
    let size = |rng: &mut SmallRng, unit: &str| -> String {
        let km = match rng.gen_range(0..6) {
            0 => 0.0,
            1 => rng.gen_range(0.0..5.0),
            2 | 3 => rng.gen_range(5.0..200.0),
            4 => rng.gen_range(200.0..3000.0),
            _ => rng.gen_range(3000.0..25000.0),
        };
        let per_unit = match unit {
            "m" => 0.001,
            "mi" => 1.60934,
            "ft" => 0.0003048,
            _ => 1.0,
        };
        format!("{:.3}", km / per_unit)
    };
    let options = |rng: &mut SmallRng, cmd: &mut Vec<String>, store: bool| {
        if !store {
            for opt in ["WITHDIST", "WITHCOORD", "WITHHASH"] {
                if rng.gen_bool(0.3) {
                    cmd.push(opt.into());
                }
            }
        }
        match rng.gen_range(0..4) {
            0 => cmd.push("ASC".into()),
            1 => cmd.push("DESC".into()),
            _ => {}
        }
        if rng.gen_bool(0.4) {
            cmd.push("COUNT".into());
            cmd.push(rng.gen_range(1..12).to_string());
            if rng.gen_bool(0.4) {
                cmd.push("ANY".into());
            }
        }
    };
    match rng.gen_range(0..100) {
        0..=24 => {
            let mut cmd = vec!["GEOADD".to_string(), k(rng)];
            match rng.gen_range(0..8) {
                0 => cmd.push("NX".into()),
                1 => cmd.push("XX".into()),
                2 => cmd.push("CH".into()),
                _ => {}
            }
            for _ in 0..rng.gen_range(1..30) {
                let (lon, lat) = geo_point(rng);
                cmd.extend([lon, lat, member(rng)]);
            }
            cmd
        }
        25..=49 => {
            let store = rng.gen_bool(0.25);
            let mut cmd = if store {
                vec!["GEOSEARCHSTORE".to_string(), k(rng), k(rng)]
            } else {
                vec!["GEOSEARCH".to_string(), k(rng)]
            };
            if rng.gen_bool(0.5) {
                cmd.extend(["FROMMEMBER".into(), member(rng)]);
            } else {
                let (lon, lat) = geo_point(rng);
                cmd.extend(["FROMLONLAT".into(), lon, lat]);
            }
            let u = unit(rng);
            if rng.gen_bool(0.5) {
                cmd.extend(["BYRADIUS".into(), size(rng, &u), u]);
            } else {
                cmd.extend(["BYBOX".into(), size(rng, &u), size(rng, &u), u]);
            }
            options(rng, &mut cmd, store);
            if store && rng.gen_bool(0.5) {
                cmd.push("STOREDIST".into());
            }
            cmd
        }
        50..=69 => {
            let by_member = rng.gen_bool(0.4);
            let ro = rng.gen_bool(0.3);
            let name = match (by_member, ro) {
                (false, false) => "GEORADIUS",
                (false, true) => "GEORADIUS_RO",
                (true, false) => "GEORADIUSBYMEMBER",
                (true, true) => "GEORADIUSBYMEMBER_RO",
            };
            let mut cmd = vec![name.to_string(), k(rng)];
            if by_member {
                cmd.push(member(rng));
            } else {
                let (lon, lat) = geo_point(rng);
                cmd.extend([lon, lat]);
            }
            let u = unit(rng);
            cmd.extend([size(rng, &u), u]);
            let store = !ro && rng.gen_bool(0.3);
            options(rng, &mut cmd, store);
            if store {
                cmd.push(pick(rng, &["STORE", "STOREDIST"]).into());
                cmd.push(k(rng));
            }
            cmd
        }
        70..=75 => {
            let mut cmd = vec!["GEOPOS".to_string(), k(rng)];
            cmd.extend((0..rng.gen_range(1..5)).map(|_| member(rng)));
            cmd
        }
        76..=81 => {
            let mut cmd = vec!["GEODIST".to_string(), k(rng), member(rng), member(rng)];
            if rng.gen_bool(0.6) {
                cmd.push(unit(rng));
            }
            cmd
        }
        82..=86 => {
            let mut cmd = vec!["GEOHASH".to_string(), k(rng)];
            cmd.extend((0..rng.gen_range(1..5)).map(|_| member(rng)));
            cmd
        }
        87..=92 => vec![
            "ZRANGE".into(),
            k(rng),
            "0".into(),
            "-1".into(),
            "WITHSCORES".into(),
        ],
        93..=95 => vec!["ZREM".into(), k(rng), member(rng), member(rng)],
        96 => vec!["DEL".into(), k(rng)],
        97 => vec!["SET".into(), k(rng), "plain".into()],
        _ => vec!["ZADD".into(), k(rng), "1e300".into(), member(rng)],
    }
}

#[test]
fn random_geo_sequences_match_redis() {
    let redis = RedisServer::start();
    for (i, seed) in seeds().into_iter().enumerate() {
        println!("random geo differential: seed {seed}");
        let threads = if i % 2 == 0 { 1 } else { 4 };
        run_with(seed, 3000, threads, &redis, gen_geo_command);
    }
}
