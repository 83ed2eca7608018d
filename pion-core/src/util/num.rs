//! Number parsing and formatting with Redis's exact rules.
//!
//! Redis is strict about integers (`string2ll`: no sign `+`, no leading zeros, no spaces)
//! and formats doubles with `%.17g`; `INCRBYFLOAT` works in C's `long double`. These
//! helpers reproduce that so replies match byte for byte.

use crate::error::OpResult;

/// Appends the decimal digits of `n` without allocating or formatting (replies
/// carry many integers).
pub fn push_decimal(out: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[at..]);
}

/// Parses a strict decimal `i64` the way Redis's `string2ll` does.
///
/// ```
/// use pion_core::util::num::parse_i64;
/// assert_eq!(parse_i64(b"-42"), Some(-42));
/// assert_eq!(parse_i64(b"+1"), None);
/// assert_eq!(parse_i64(b"007"), None);
/// assert_eq!(parse_i64(b" 1"), None);
/// ```
pub fn parse_i64(s: &[u8]) -> Option<i64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    if s == b"0" {
        return Some(0);
    }
    let (neg, digits) = match s[0] {
        b'-' => (true, &s[1..]),
        _ => (false, s),
    };
    match digits.first() {
        Some(b'1'..=b'9') => {}
        _ => return None,
    }
    let mut v: u64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
    }
    if neg {
        if v > (i64::MAX as u64) + 1 {
            None
        } else {
            Some((v as i128).wrapping_neg() as i64)
        }
    } else if v > i64::MAX as u64 {
        None
    } else {
        Some(v as i64)
    }
}

/// Parses a double the way Redis's `string2d` accepts it (C `strtod` on the whole
/// string): decimal or hexadecimal notation, `inf`/`infinity`; no leading blank, no
/// NaN, no overflow to infinity or underflow to zero.
///
/// ```
/// use pion_core::util::num::parse_f64;
/// assert_eq!(parse_f64(b"1.5"), Some(1.5));
/// assert_eq!(parse_f64(b"0x10"), Some(16.0));
/// assert_eq!(parse_f64(b"-inf"), Some(f64::NEG_INFINITY));
/// assert_eq!(parse_f64(b"nan"), None);
/// assert_eq!(parse_f64(b"1e400"), None);
/// ```
pub fn parse_f64(s: &[u8]) -> Option<f64> {
    if s.is_empty() || crate::util::strtod::is_c_space(s[0]) {
        return None;
    }
    let r = crate::util::strtod::strtod(s);
    let bad_range = r.range_error && (r.value.is_infinite() || r.value == 0.0);
    if r.len != s.len() || bad_range || r.value.is_nan() {
        return None;
    }
    Some(r.value)
}

/// Formats a double like C's `printf("%.17g")`, which Redis 7.0 uses for scores.
///
/// ```
/// use pion_core::util::num::fmt_g17;
/// assert_eq!(fmt_g17(0.1), "0.10000000000000001");
/// assert_eq!(fmt_g17(3.0), "3");
/// assert_eq!(fmt_g17(1e20), "1e+20");
/// assert_eq!(fmt_g17(f64::INFINITY), "inf");
/// ```
pub fn fmt_g17(v: f64) -> String {
    fmt_g(v, 17)
}

/// Formats a double as Redis 7.2+ replies print it (Grisu2 digits; see [`crate::util::dtoa`]).
///
/// ```
/// use pion_core::util::num::fmt_shortest;
/// assert_eq!(fmt_shortest(0.8535533845424652), "0.8535533845424652");
/// assert_eq!(fmt_shortest(1.0), "1");
/// assert_eq!(fmt_shortest(-0.5), "-0.5");
/// ```
pub fn fmt_shortest(v: f64) -> String {
    crate::util::dtoa::dtoa(v)
}

/// Formats a double as Redis's human-friendly long double form: C's `%.17Lf` (the
/// double's exact value rounded to 17 decimals), trailing zeros and a trailing dot
/// removed, `-0` written `0`.
///
/// ```
/// use pion_core::util::num::fmt_human;
/// assert_eq!(fmt_human(13.361389338970184), "13.36138933897018433");
/// assert_eq!(fmt_human(180.0), "180");
/// assert_eq!(fmt_human(-0.0), "0");
/// ```
pub fn fmt_human(v: f64) -> String {
    if v.is_nan() {
        return "nan".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf".into() } else { "-inf".into() };
    }
    let s = format!("{v:.17}");
    let t = strip_fraction_zeros(&s);
    if t == "-0" {
        "0".into()
    } else {
        t.to_string()
    }
}

/// Formats a double like C's `printf("%.{precision}g")`.
pub fn fmt_g(v: f64, precision: usize) -> String {
    if v.is_nan() {
        return "nan".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if v == 0.0 {
        return if v.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    let p = precision.max(1);
    // Scientific form with p significant digits gives the decimal exponent after rounding.
    let sci = format!("{:.*e}", p - 1, v);
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if exp < -4 || exp >= p as i32 {
        let m = strip_fraction_zeros(mantissa);
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{m}e{sign}{:02}", exp.abs())
    } else {
        let decimals = (p as i32 - 1 - exp).max(0) as usize;
        strip_fraction_zeros(&format!("{:.*}", decimals, v)).to_string()
    }
}

fn strip_fraction_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// Adds `incr` to the number stored as `current` in C `long double` precision and
/// formats the result as Redis's `INCRBYFLOAT`/`HINCRBYFLOAT` do (`%.17Lf`, trailing
/// zeros removed).
///
/// `current` is the stored text (or `None` for a missing value, read as 0).
pub fn long_double_incr(current: Option<&[u8]>, incr: &[u8]) -> OpResult<Vec<u8>> {
    crate::util::long_double::add_and_format(current.unwrap_or(b"0"), incr)
}

/// Formats bytes like Redis's `bytesToHuman` (`1.50M`).
pub fn human_bytes(n: u64) -> String {
    let n = n as f64;
    let units = [
        ("B", 1.0),
        ("K", 1024.0),
        ("M", 1048576.0),
        ("G", 1073741824.0),
        ("T", 1099511627776.0),
    ];
    for w in units.windows(2) {
        if n < w[1].1 {
            return if w[0].0 == "B" {
                format!("{n}B")
            } else {
                format!("{:.2}{}", n / w[0].1, w[0].0)
            };
        }
    }
    format!("{:.2}T", n / 1099511627776.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers() {
        assert_eq!(parse_i64(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_i64(b"-9223372036854775808"), Some(i64::MIN));
        assert_eq!(parse_i64(b"9223372036854775808"), None);
        assert_eq!(parse_i64(b"-0"), None);
        assert_eq!(parse_i64(b"1a"), None);
        assert_eq!(parse_i64(b""), None);
        assert_eq!(parse_i64(b"-"), None);
    }

    #[test]
    fn floats() {
        assert_eq!(parse_f64(b".5"), Some(0.5));
        assert_eq!(parse_f64(b"+2"), Some(2.0));
        assert_eq!(parse_f64(b"1e-400"), None);
        assert_eq!(parse_f64(b"0e10"), Some(0.0));
        assert_eq!(parse_f64(b" 1"), None);
        assert_eq!(parse_f64(b"1 "), None);
        assert_eq!(parse_f64(b"abc"), None);
        assert_eq!(parse_f64(b"++1"), None);
    }

    #[test]
    fn g17() {
        assert_eq!(fmt_g17(1.5), "1.5");
        assert_eq!(fmt_g17(-2.0), "-2");
        assert_eq!(fmt_g17(0.0001), "0.0001");
        assert_eq!(fmt_g17(0.00001), "1.0000000000000001e-05");
        assert_eq!(fmt_g17(123456789012345678.0), "1.2345678901234568e+17");
        assert_eq!(fmt_g17(12345678901234567.0), "12345678901234568");
        assert_eq!(fmt_g(0.1 + 0.2, 17), "0.30000000000000004");
    }

    #[test]
    fn long_double() {
        let r = long_double_incr(Some(b"0.1"), b"0.2").expect("valid");
        assert_eq!(r, b"0.3");
        let r = long_double_incr(None, b"1e20").expect("valid");
        assert_eq!(r, b"100000000000000000000");
        assert!(long_double_incr(Some(b"abc"), b"1").is_err());
        assert!(long_double_incr(Some(b"1"), b"inf").is_err());
        let r = long_double_incr(Some(b"10.5"), b"-10.5").expect("valid");
        assert_eq!(r, b"0");
    }
}
