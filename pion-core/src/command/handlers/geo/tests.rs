//! Unit tests of the geohash arithmetic against values redis-server 7.0 gives.

use super::hash::*;

#[test]
fn scores_match_redis() {
    assert_eq!(encode_score(0.0, 0.0), Some(3377699720527872));
    assert_eq!(encode_score(13.361389, 38.115556), Some(3479099956230698));
    assert_eq!(encode_score(180.0, LAT_MAX), Some(13510798882111488));
    assert_eq!(encode_score(-180.0, LAT_MIN), Some(0));
    assert_eq!(encode_score(180.1, 0.0), None);
    assert_eq!(encode_score(0.0, 85.06), None);
}

#[test]
fn decoding_gives_the_cell_centre() {
    use crate::util::num::fmt_human;
    let (lon, lat) = decode_score(3479099956230698.0);
    assert_eq!(fmt_human(lon), "13.36138933897018433");
    assert_eq!(fmt_human(lat), "38.11555639549629859");
    let (lon, lat) = decode_score(13510798882111488.0);
    assert_eq!(fmt_human(lon), "180");
    assert_eq!(fmt_human(lat), "85.0511287799999991");
    let (lon, lat) = decode_score(0.0);
    assert_eq!(fmt_human(lon), "-179.99999731779098511");
    assert_eq!(fmt_human(lat), "-85.05112751263942528");
}

#[test]
fn geohash_strings_match_redis() {
    assert_eq!(&geohash_string(13510798882111488.0), b"bp05b5048p0");
    assert_eq!(&geohash_string(0.0), b"00bh0hbj200");
    assert_eq!(&geohash_string(3377699720527872.0), b"s0000000000");
    assert_eq!(&geohash_string(3479099956230698.0), b"sqc8b49rny0");
}

#[test]
fn distances_match_redis() {
    let (a, b) = (
        decode_score(13510798882111488.0),
        decode_score(3377699720527872.0),
    );
    assert_eq!(
        format!("{:.4}", distance(a.0, a.1, b.0, b.1) / 1000.0),
        "10560.8115"
    );
}

#[test]
fn odd_scores_never_panic() {
    for s in [f64::MAX, -1.0, -f64::MAX, 1e300, 4.5e15, f64::INFINITY, 0.5] {
        let (lon, lat) = decode_score(s);
        assert!((LONG_MIN..=LONG_MAX).contains(&lon) && (LAT_MIN..=LAT_MAX).contains(&lat));
        let _ = geohash_string(s);
    }
    for r in [0.0, 1e-300, 1.0, 1e7, 1e300, f64::INFINITY] {
        for (lon, lat) in [
            (0.0, 0.0),
            (180.0, LAT_MAX),
            (-180.0, LAT_MIN),
            (179.9, -84.0),
        ] {
            let s = Search {
                lon,
                lat,
                shape: Shape::Radius(r),
                conversion: 1.0,
            };
            let _ = s.cells();
            let b = Search {
                lon,
                lat,
                shape: Shape::Box(r, r / 2.0),
                conversion: 1609.34,
            };
            let _ = b.cells();
        }
    }
}

#[test]
fn random_arguments_never_panic_and_ro_agrees() {
    const WORDS: &[&str] = &[
        "FROMMEMBER",
        "FROMLONLAT",
        "BYRADIUS",
        "BYBOX",
        "ASC",
        "DESC",
        "COUNT",
        "ANY",
        "WITHDIST",
        "WITHCOORD",
        "WITHHASH",
        "STORE",
        "STOREDIST",
        "NX",
        "XX",
        "CH",
        "m",
        "KM",
        "yd",
        "0",
        "-1",
        "180",
        "-180",
        "85.05112878",
        "90",
        "1e308",
        "inf",
        "nan",
        "5000",
        "m0",
        "m1",
        "m9",
        "k0",
        "k1",
        "",
        "abc",
        "3",
    ];
    let e = crate::Engine::in_memory(crate::EngineOptions::default());
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = |n: usize| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % n as u64) as usize
    };
    e.execute(
        0,
        &[
            "GEOADD",
            "k0",
            "180",
            "85.05112878",
            "m0",
            "-180",
            "-85.05112878",
            "m1",
        ],
    );
    e.execute(
        0,
        &[
            "GEOADD", "k0", "0", "0", "m2", "13.36", "38.11", "m3", "179.99", "-85", "m4",
        ],
    );
    e.execute(0, &["ZADD", "k1", "1e300", "m0", "-5", "m1"]);
    for _ in 0..4000 {
        let args: Vec<&str> = (0..next(12)).map(|_| WORDS[next(WORDS.len())]).collect();
        let key = ["k0", "k1", "k2"][next(3)];
        for cmd in [
            "GEOADD",
            "GEOPOS",
            "GEODIST",
            "GEOHASH",
            "GEORADIUSBYMEMBER",
            "GEOSEARCH",
        ] {
            let mut argv = vec![cmd, key];
            argv.extend(&args);
            let _ = e.execute(0, &argv);
        }
        let mut store = vec!["GEOSEARCHSTORE", "dst", key];
        store.extend(&args);
        let _ = e.execute(0, &store);
        let mut rw = vec!["GEORADIUS", key];
        rw.extend(&args);
        let reply = e.execute(0, &rw);
        // Past the arity check, the two parse and search alike.
        let stores = args
            .iter()
            .any(|a| a.eq_ignore_ascii_case("store") || a.eq_ignore_ascii_case("storedist"));
        if args.len() >= 4 && !stores {
            rw[0] = "GEORADIUS_RO";
            assert_eq!(reply, e.execute(0, &rw), "{rw:?}");
        }
    }
}
