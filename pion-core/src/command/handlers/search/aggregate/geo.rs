//! `geodistance(…)` in `APPLY`/`FILTER`: the great-circle distance in meters between
//! two points, each given as a `"lon,lat"` (or `"lon lat"`) string — a GEO field's
//! value — or as two numbers, rounded to centimeters, as RediSearch 2.10 computes it.
//!
//! RediSearch's rules, kept: an argument that converts to a number (C's `strtod` over
//! the whole string, so `""` is 0 and leading blanks pass) starts a longitude/latitude
//! pair, anything else is read as one point string; a malformed point string fails
//! the whole command (`Invalid geo string`), a missing number or a `NULL` point gives
//! NaN. The distance is the haversine over Redis's Earth radius, without Redis 7's
//! shortcut for equal longitudes.

use super::eval::EvalError;
use super::value::Value;

/// Redis's Earth radius for geo distances.
const EARTH_RADIUS_IN_METERS: f64 = 6_372_797.560_856;
/// Point strings longer than this are refused.
const MAX_POINT_TEXT: usize = 128;

/// `geodistance` over already evaluated arguments.
pub(super) fn geodistance(args: &[Value]) -> Result<Value, EvalError> {
    if !(2..=4).contains(&args.len()) {
        return Err("Invalid arguments for function 'geodistance'".into());
    }
    let mut points = [[0.0f64; 2]; 2];
    let mut at = 0;
    for point in &mut points {
        let Some(arg) = args.get(at) else {
            return Ok(Value::Num(f64::NAN));
        };
        if let Some(lon) = c_number(arg) {
            let Some(lat) = args.get(at + 1).and_then(c_number) else {
                return Ok(Value::Num(f64::NAN));
            };
            *point = [lon, lat];
            at += 2;
        } else {
            match arg {
                Value::Str(text) => *point = parse_point(text)?,
                _ => return Ok(Value::Num(f64::NAN)),
            }
            at += 1;
        }
    }
    let [[lon1, lat1], [lon2, lat2]] = points;
    let d = distance(lon1, lat1, lon2, lat2);
    if d.is_nan() {
        return Ok(Value::Num(nan_of(&[lat2, lat1, lon2, lon1])));
    }
    Ok(Value::Num((d * 100.0).round() / 100.0))
}

/// The NaN x86 arithmetic ends with: the first NaN operand in the order the formula
/// meets them, else the default NaN (sign bit set; RediSearch prints `-nan`).
fn nan_of(inputs: &[f64]) -> f64 {
    inputs
        .iter()
        .copied()
        .find(|x| x.is_nan())
        .unwrap_or(-f64::NAN)
}

/// The haversine distance between two points, in meters.
pub(super) fn distance(lon1: f64, lat1: f64, lon2: f64, lat2: f64) -> f64 {
    let (lat1r, lon1r) = (lat1.to_radians(), lon1.to_radians());
    let (lat2r, lon2r) = (lat2.to_radians(), lon2.to_radians());
    let u = ((lat2r - lat1r) / 2.0).sin();
    let v = ((lon2r - lon1r) / 2.0).sin();
    2.0 * EARTH_RADIUS_IN_METERS * (u * u + lat1r.cos() * lat2r.cos() * v * v).sqrt().asin()
}

/// A value as C's `strtod` reads a whole string (RediSearch's `RSValue_ToNumber`):
/// leading blanks allowed, nothing after the number, `nan` and `inf` accepted, the
/// empty string 0, out-of-range values refused.
fn c_number(v: &Value) -> Option<f64> {
    match v {
        Value::Num(n) => Some(*n),
        Value::Str(s) => c_strtod_whole(s, true),
        _ => None,
    }
}

/// C's `strtod` over all of `s` (leading blanks allowed, nothing after the number;
/// an empty string reads as 0), refusing values out of range when asked.
fn c_strtod_whole(s: &[u8], refuse_out_of_range: bool) -> Option<f64> {
    if s.is_empty() {
        return Some(0.0);
    }
    let start = s
        .iter()
        .position(|&c| !crate::util::strtod::is_c_space(c))
        .unwrap_or(s.len());
    let r = crate::util::strtod::strtod(&s[start..]);
    if r.len == 0 || start + r.len != s.len() {
        return None;
    }
    let out_of_range = r.range_error && (r.value.is_infinite() || r.value == 0.0);
    (!(refuse_out_of_range && out_of_range)).then_some(r.value)
}

/// `"lon,lat"` or `"lon lat"`: split at the first comma or space, each side a whole
/// number (an empty side is 0).
fn parse_point(text: &[u8]) -> Result<[f64; 2], EvalError> {
    if text.len() > MAX_POINT_TEXT {
        return Err("Geo string cannot be longer than 128 bytes".into());
    }
    let invalid = || EvalError::from("Invalid geo string");
    let split = text
        .iter()
        .position(|&c| c == b',' || c == b' ')
        .ok_or_else(invalid)?;
    let lon = side(&text[..split]).ok_or_else(invalid)?;
    let lat = side(&text[split + 1..]).ok_or_else(invalid)?;
    Ok([lon, lat])
}

/// One side of a point string: `parseGeo` checks only `strtod`'s end pointer.
fn side(s: &[u8]) -> Option<f64> {
    c_strtod_whole(s, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn num(v: Result<Value, EvalError>) -> f64 {
        match v {
            Ok(Value::Num(n)) => n,
            other => panic!("not a number: {other:?}"),
        }
    }

    #[test]
    fn distances_match_redisearch_to_the_centimeter() {
        // Figures from RediSearch 2.10 for the same arguments.
        let paris = Value::str("2.35,48.85");
        let london = || Value::str("-0.12 51.5");
        assert_eq!(num(geodistance(&[paris.clone(), london()])), 343224.69);
        let pair = [
            Value::Num(2.35),
            Value::Num(48.85),
            Value::Num(-0.12),
            Value::Num(51.5),
        ];
        assert_eq!(num(geodistance(&pair)), 343224.69);
        assert_eq!(
            num(geodistance(&[paris.clone(), Value::str("1,2")])),
            5212546.45
        );
        assert_eq!(
            num(geodistance(&[
                paris.clone(),
                Value::str(""),
                Value::str("")
            ])),
            5438086.94
        );
        assert_eq!(
            num(geodistance(&[paris.clone(), Value::str("1,")])),
            5434950.42
        );
        assert_eq!(
            num(geodistance(&[paris.clone(), Value::str("0x10,2")])),
            5371327.03
        );
        let poles = [
            Value::Num(0.0),
            Value::Num(90.0),
            Value::Num(0.0),
            Value::Num(-90.0),
        ];
        assert_eq!(num(geodistance(&poles)), 20020734.0);
    }

    #[test]
    fn bad_points_fail_or_give_nan_as_in_redisearch() {
        let paris = Value::str("2.35,48.85");
        for bad in ["abc", "1,abc", "1,,2", "1,2 "] {
            assert_eq!(
                geodistance(&[paris.clone(), Value::str(bad)]),
                Err("Invalid geo string".to_string()),
                "{bad}"
            );
        }
        assert!(num(geodistance(&[
            paris.clone(),
            Value::Num(1.0),
            Value::str("x")
        ]))
        .is_nan());
        assert!(num(geodistance(&[paris.clone(), Value::Null])).is_nan());
        let inf = num(geodistance(&[
            paris.clone(),
            Value::str("inf"),
            Value::Num(2.0),
        ]));
        assert!(inf.is_nan() && inf.is_sign_negative());
        let nan = num(geodistance(&[paris.clone(), Value::str("nan,2")]));
        assert!(nan.is_nan() && nan.is_sign_positive());
        assert!(geodistance(std::slice::from_ref(&paris)).is_err());
        assert!(geodistance(&[
            paris.clone(),
            paris.clone(),
            paris.clone(),
            paris.clone(),
            paris
        ])
        .is_err());
    }
}
