//! The date functions of `APPLY` and `FILTER` expressions: `timefmt`, `parsetime`,
//! `minute`, `hour`, `day`, `month` and the calendar fields (`year`, `monthofyear`,
//! `dayofmonth`, `dayofweek`, `dayofyear`), over Unix timestamps in UTC.
//!
//! They follow RediSearch's definitions, which sit on the C library: a timestamp is
//! truncated to whole seconds and broken down by `gmtime_r`, `timefmt` formats with
//! `strftime` (ISO 8601 `%FT%TZ` unless given a format, the C locale), `parsetime`
//! reads with `strptime` (fields it does not set stay zero) and converts with
//! `timegm`. Pion calls the same functions, so every conversion specifier means what
//! it means there. Rounding (`hour`, `day`, `month`) rebuilds the timestamp from the
//! broken-down day of year with RediSearch's leap-year count, `(years + 1) / 4` since
//! 1970, exact until 2100. A value that is not a number, a negative timestamp (all but
//! `timefmt`) or a failed conversion gives null, never an error.

use std::ffi::CString;

use super::value::Value;

/// RediSearch's `timefmt` default: ISO 8601 in UTC.
const ISO_FORMAT: &[u8] = b"%FT%TZ";

/// The longest text `timefmt` gives (RediSearch's buffer); longer is null.
const FORMATTED_MAX: usize = 1024;

/// A timestamp broken down in UTC (`struct tm`'s fields that matter here).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Civil {
    /// Years since 1900.
    year: i64,
    /// Month, 0–11.
    month: i64,
    /// Day of the month, 1–31.
    mday: i64,
    /// Day of the week, 0 (Sunday)–6.
    wday: i64,
    /// Day of the year, 0–365.
    yday: i64,
    hour: i64,
    min: i64,
    sec: i64,
}

/// Seconds a timestamp stands for, as C's `(time_t)d` truncates it (NaN and values
/// past `i64` are out of reach: `None`).
fn whole_seconds(d: f64) -> Option<i64> {
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    (d.is_finite() && (-LIMIT..LIMIT).contains(&d)).then_some(d as i64)
}

/// `gmtime_r` of `t` into a C `tm`; `None` where the year does not fit.
fn gmtime(t: i64) -> Option<libc::tm> {
    let t = libc::time_t::try_from(t).ok()?;
    // SAFETY: `tm` is plain data (integers and a pointer the call sets to a static
    // string), so all-zero is a valid value; `gmtime_r` writes only into it and
    // reads only `t`, both live for the call.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: see above; the pointers are to locals that outlive the call.
    let ok = unsafe { !libc::gmtime_r(&t, &mut tm).is_null() };
    ok.then_some(tm)
}

/// A timestamp broken down in UTC.
pub(super) fn civil(t: i64) -> Option<Civil> {
    let tm = gmtime(t)?;
    Some(Civil {
        year: i64::from(tm.tm_year),
        month: i64::from(tm.tm_mon),
        mday: i64::from(tm.tm_mday),
        wday: i64::from(tm.tm_wday),
        yday: i64::from(tm.tm_yday),
        hour: i64::from(tm.tm_hour),
        min: i64::from(tm.tm_min),
        sec: i64::from(tm.tm_sec),
    })
}

/// RediSearch's conversion back to a timestamp: days from the day of the year and a
/// leap day every fourth year since 1972 (no century rule).
fn rebuild(c: &Civil) -> i64 {
    let years = c.year - 70;
    let leaps = (years + 1) / 4;
    let days = c.yday + years * 365 + leaps;
    days * 86_400 + c.hour * 3_600 + c.min * 60 + c.sec
}

/// The argument of a rounding or calendar function: a non-negative timestamp.
fn timestamp(v: &Value) -> Option<f64> {
    v.as_number().filter(|d| *d >= 0.0)
}

/// The calendar functions and rounding, by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Calendar {
    /// `minute(t)`: the start of its minute.
    Minute,
    /// `hour(t)`: the start of its hour.
    Hour,
    /// `day(t)`: the start of its day.
    Day,
    /// `month(t)`: the start of its month.
    Month,
    /// `year(t)`: the year.
    Year,
    /// `monthofyear(t)`: the month, 0–11.
    MonthOfYear,
    /// `dayofmonth(t)`: the day of the month, 1–31.
    DayOfMonth,
    /// `dayofweek(t)`: the day of the week, 0 (Sunday)–6.
    DayOfWeek,
    /// `dayofyear(t)`: the day of the year, 0–365.
    DayOfYear,
}

/// One calendar function of a value (null where RediSearch gives null).
pub fn calendar(f: Calendar, v: &Value) -> Value {
    let Some(d) = timestamp(v) else {
        return Value::Null;
    };
    let c = match f {
        // Exact at any size (no calendar involved), as RediSearch computes it.
        Calendar::Minute => return Value::Num((d - d % 60.0).floor()),
        _ => match whole_seconds(d).and_then(civil) {
            Some(c) => c,
            None => return Value::Null,
        },
    };
    let n = match f {
        Calendar::Minute => rebuild(&Civil { sec: 0, ..c }),
        Calendar::Hour => rebuild(&Civil {
            min: 0,
            sec: 0,
            ..c
        }),
        Calendar::Day => rebuild(&Civil {
            hour: 0,
            min: 0,
            sec: 0,
            ..c
        }),
        Calendar::Month => rebuild(&Civil {
            hour: 0,
            min: 0,
            sec: 0,
            yday: c.yday - (c.mday - 1),
            ..c
        }),
        Calendar::Year => c.year + 1900,
        Calendar::MonthOfYear => c.month,
        Calendar::DayOfMonth => c.mday,
        Calendar::DayOfWeek => c.wday,
        Calendar::DayOfYear => c.yday,
    };
    Value::Num(n as f64)
}

/// Text up to its first NUL, as a C string (what C would have read of it).
fn c_text(s: &[u8]) -> CString {
    let end = s.iter().position(|b| *b == 0).unwrap_or(s.len());
    // The slice holds no NUL: the conversion cannot fail.
    CString::new(&s[..end]).unwrap_or_default()
}

/// `timefmt(t [, format])`: the timestamp formatted in UTC; null when it is not a
/// number, its year does not fit, or the text is empty or too long.
pub fn timefmt(v: &Value, format: Option<&[u8]>) -> Value {
    let Some(tm) = v.as_number().and_then(whole_seconds).and_then(gmtime) else {
        return Value::Null;
    };
    let format = c_text(format.unwrap_or(ISO_FORMAT));
    let mut buf = vec![0u8; FORMATTED_MAX];
    // SAFETY: `buf` has `FORMATTED_MAX` writable bytes, `format` is NUL-terminated
    // and `tm` is a valid broken-down time from `gmtime_r`; `strftime` writes at most
    // the given size and returns how many bytes it wrote (0 when they did not fit).
    let n = unsafe { libc::strftime(buf.as_mut_ptr().cast(), buf.len(), format.as_ptr(), &tm) };
    if n == 0 {
        return Value::Null;
    }
    buf.truncate(n);
    Value::Str(buf)
}

/// `parsetime(text, format)`: the timestamp `strptime` reads (fields the format does
/// not set are zero: year 1900, day 0), null when the text does not match.
pub fn parsetime(text: &[u8], format: &[u8]) -> Value {
    let (text, format) = (c_text(text), c_text(format));
    // SAFETY: as in `gmtime`, an all-zero `tm` is valid.
    let mut tm: libc::tm = unsafe { std::mem::zeroed() };
    // SAFETY: both strings are NUL-terminated and live for the call; `strptime`
    // writes only into `tm` and returns a pointer into `text` or null.
    let rest = unsafe { libc::strptime(text.as_ptr(), format.as_ptr(), &mut tm) };
    if rest.is_null() {
        return Value::Null;
    }
    // SAFETY: `tm` is a valid broken-down time; `timegm` normalises it in place.
    let t = unsafe { libc::timegm(&mut tm) };
    Value::Num(t as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn num(v: Value) -> f64 {
        match v {
            Value::Num(n) => n,
            other => panic!("not a number: {other:?}"),
        }
    }

    #[test]
    fn civil_breaks_timestamps_down_in_utc() {
        let c = civil(1_700_000_000).expect("in range");
        assert_eq!(
            (c.year, c.month, c.mday, c.wday, c.yday, c.hour, c.min, c.sec),
            (123, 10, 14, 2, 317, 22, 13, 20)
        );
        assert_eq!(rebuild(&c), 1_700_000_000);
        // 29 February of a leap year, and the day after the century's missing one.
        assert_eq!(rebuild(&civil(1_709_208_000).expect("2024")), 1_709_208_000);
    }

    #[test]
    fn rounding_and_calendar_fields() {
        let t = Value::Num(1_700_000_000.9);
        assert_eq!(num(calendar(Calendar::Minute, &t)), 1_699_999_980.0);
        assert_eq!(num(calendar(Calendar::Hour, &t)), 1_699_999_200.0);
        assert_eq!(num(calendar(Calendar::Day, &t)), 1_699_920_000.0);
        assert_eq!(num(calendar(Calendar::Month, &t)), 1_698_796_800.0);
        assert_eq!(num(calendar(Calendar::Year, &t)), 2023.0);
        assert_eq!(num(calendar(Calendar::MonthOfYear, &t)), 10.0);
        assert_eq!(num(calendar(Calendar::DayOfMonth, &t)), 14.0);
        assert_eq!(num(calendar(Calendar::DayOfWeek, &t)), 2.0);
        assert_eq!(num(calendar(Calendar::DayOfYear, &t)), 317.0);
        assert_eq!(num(calendar(Calendar::Year, &Value::str("0"))), 1970.0);
        for bad in [Value::Num(-1.0), Value::Null, Value::str("soon")] {
            assert_eq!(calendar(Calendar::Day, &bad), Value::Null);
        }
    }

    #[test]
    fn timefmt_and_parsetime_round_trip() {
        let t = Value::Num(1_700_000_000.0);
        assert_eq!(timefmt(&t, None), Value::str("2023-11-14T22:13:20Z"));
        assert_eq!(
            timefmt(&Value::Num(-86_401.7), None),
            Value::str("1969-12-30T23:59:59Z")
        );
        assert_eq!(
            timefmt(&t, Some(b"%a %b %e %j %Z".as_slice())),
            Value::str("Tue Nov 14 318 GMT")
        );
        assert_eq!(timefmt(&t, Some(b"".as_slice())), Value::Null);
        assert_eq!(timefmt(&Value::Num(1e300), None), Value::Null);
        assert_eq!(
            parsetime(b"2023-11-14 22:13:20", b"%Y-%m-%d %H:%M:%S"),
            Value::Num(1_700_000_000.0)
        );
        assert_eq!(parsetime(b"12", b"%H"), Value::Num(-2_209_032_000.0));
        assert_eq!(parsetime(b"x", b"%Y"), Value::Null);
    }
}
