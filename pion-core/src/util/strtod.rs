//! C's `strtod`, reproduced: Redis reads scores, weights, range bounds and `SORT`
//! weights with it, and it accepts more than Rust's float parser (hexadecimal floats
//! such as `0x1p3`, leading blanks, `inf`/`infinity`, `nan(chars)`), and reports
//! overflow and underflow. Every float argument in Pion goes through this one parser so
//! that what is accepted or refused matches Redis.

/// What `strtod` made of a prefix of its input.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Strtod {
    pub value: f64,
    /// Bytes consumed (0 when nothing was converted).
    pub len: usize,
    /// Whether the value overflowed or underflowed (C's `ERANGE`).
    pub range_error: bool,
}

pub(crate) fn is_c_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// C's `strtod` on a byte string: decimal and hexadecimal floats, `inf`,
/// `infinity` and `nan`, after optional blanks and one sign.
pub(crate) fn strtod(s: &[u8]) -> Strtod {
    let none = Strtod {
        value: 0.0,
        len: 0,
        range_error: false,
    };
    let mut i = 0;
    while i < s.len() && is_c_space(s[i]) {
        i += 1;
    }
    let neg = s.get(i) == Some(&b'-');
    if matches!(s.get(i), Some(b'+' | b'-')) {
        i += 1;
    }
    let sign = if neg { -1.0 } else { 1.0 };
    let rest = &s[i..];
    let starts = |word: &str| {
        rest.len() >= word.len() && rest[..word.len()].eq_ignore_ascii_case(word.as_bytes())
    };
    if starts("infinity") || starts("inf") {
        let len = if starts("infinity") { 8 } else { 3 };
        return Strtod {
            value: sign * f64::INFINITY,
            len: i + len,
            range_error: false,
        };
    }
    if starts("nan") {
        let mut len = 3;
        if rest.get(3) == Some(&b'(') {
            if let Some(close) = rest[4..].iter().position(|&c| c == b')') {
                if rest[4..4 + close]
                    .iter()
                    .all(|c| c.is_ascii_alphanumeric() || *c == b'_')
                {
                    len = 4 + close + 1;
                }
            }
        }
        return Strtod {
            value: f64::NAN,
            len: i + len,
            range_error: false,
        };
    }
    if (starts("0x")) && hex_digits(&rest[2..]) + dot_hex_digits(&rest[2..]) > 0 {
        let (value, len, range_error) = parse_hex(&rest[2..]);
        return Strtod {
            value: sign * value,
            len: i + 2 + len,
            range_error,
        };
    }
    // Decimal: digits [. digits] [e [sign] digits], at least one mantissa digit.
    let mut j = 0;
    let int_digits = count_digits(rest);
    j += int_digits;
    let mut frac_digits = 0;
    if rest.get(j) == Some(&b'.') {
        frac_digits = count_digits(&rest[j + 1..]);
        if int_digits + frac_digits > 0 {
            j += 1 + frac_digits;
        }
    }
    if int_digits + frac_digits == 0 {
        return none;
    }
    let mantissa_end = j;
    if matches!(rest.get(j), Some(b'e' | b'E')) {
        let mut k = j + 1;
        if matches!(rest.get(k), Some(b'+' | b'-')) {
            k += 1;
        }
        let exp_digits = count_digits(&rest[k.min(rest.len())..]);
        if exp_digits > 0 {
            j = k + exp_digits;
        }
    }
    let text = String::from_utf8_lossy(&rest[..j]);
    let magnitude: f64 = text.parse().unwrap_or(0.0);
    let nonzero_mantissa = rest[..mantissa_end]
        .iter()
        .any(|c| (b'1'..=b'9').contains(c));
    // glibc also reports ERANGE for a subnormal result (SORT refuses it, string2d not).
    let range_error = magnitude.is_infinite()
        || magnitude.is_subnormal()
        || (magnitude == 0.0 && nonzero_mantissa);
    Strtod {
        value: sign * magnitude,
        len: i + j,
        range_error,
    }
}

fn count_digits(s: &[u8]) -> usize {
    s.iter().take_while(|c| c.is_ascii_digit()).count()
}

fn hex_digits(s: &[u8]) -> usize {
    s.iter().take_while(|c| c.is_ascii_hexdigit()).count()
}

/// Hex digits after a leading `.` (0 when there is no dot).
fn dot_hex_digits(s: &[u8]) -> usize {
    let int = hex_digits(s);
    if s.get(int) == Some(&b'.') {
        hex_digits(&s[int + 1..])
    } else {
        0
    }
}

/// A hexadecimal float body (after `0x`): value, bytes consumed, range error.
fn parse_hex(s: &[u8]) -> (f64, usize, bool) {
    // Past 15 significant digits an f64 cannot hold more: further integer digits only
    // scale the value and further fraction digits are dropped.
    const KEEP: u32 = 15;
    let mut value = 0.0f64;
    let mut kept = 0u32;
    let mut exp: i64 = 0;
    let mut j = 0;
    let mut any_nonzero = false;
    let digit = |j: usize| s.get(j).and_then(|c| char::from(*c).to_digit(16));
    while let Some(d) = digit(j) {
        if kept < KEEP {
            value = value * 16.0 + f64::from(d);
            kept += u32::from(value != 0.0);
        } else {
            exp += 4;
        }
        any_nonzero |= d != 0;
        j += 1;
    }
    if s.get(j) == Some(&b'.') {
        j += 1;
        while let Some(d) = digit(j) {
            if kept < KEEP {
                value = value * 16.0 + f64::from(d);
                kept += u32::from(value != 0.0);
                exp -= 4;
            }
            any_nonzero |= d != 0;
            j += 1;
        }
    }
    if matches!(s.get(j), Some(b'p' | b'P')) {
        let mut k = j + 1;
        let neg = s.get(k) == Some(&b'-');
        if matches!(s.get(k), Some(b'+' | b'-')) {
            k += 1;
        }
        let n = count_digits(&s[k.min(s.len())..]);
        if n > 0 {
            let digits = String::from_utf8_lossy(&s[k..k + n]);
            let e: i64 = digits.parse().unwrap_or(i64::MAX / 4).min(100_000);
            exp += if neg { -e } else { e };
            j = k + n;
        }
    }
    // Two half steps, so that a large mantissa with a very negative exponent does not
    // underflow before the multiplication.
    let exp = exp.clamp(-4400, 4400) as i32;
    let scaled = value * 2f64.powi(exp / 2) * 2f64.powi(exp - exp / 2);
    let range_error =
        scaled.is_infinite() || scaled.is_subnormal() || (scaled == 0.0 && any_nonzero);
    (scaled, j, range_error)
}
