//! The server log. Operators and tools read Redis's log format (`pid:role day month
//! year time level message`) and wait for its lines (`Ready to accept connections`), so
//! every message of the engine and the server goes through here: one sink (standard
//! error by default, so an embedding process keeps its standard output; standard output
//! or a file once the server applies `logfile`), one level (`loglevel`).

use std::fmt;
use std::fs::File;
use std::io::Write;
use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use parking_lot::Mutex;

/// How important a message is, in Redis's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum Level {
    /// `debug`: everything.
    Debug = 0,
    /// `verbose`: details an operator rarely needs.
    Verbose = 1,
    /// `notice`: the default; what happened.
    Notice = 2,
    /// `warning`: only what needs attention.
    Warning = 3,
}

impl Level {
    /// Parses a `loglevel` value.
    pub fn parse(name: &str) -> Option<Level> {
        Some(match name.to_ascii_lowercase().as_str() {
            "debug" => Level::Debug,
            "verbose" => Level::Verbose,
            "notice" => Level::Notice,
            "warning" => Level::Warning,
            _ => return None,
        })
    }

    /// The `loglevel` name.
    pub fn name(self) -> &'static str {
        match self {
            Level::Debug => "debug",
            Level::Verbose => "verbose",
            Level::Notice => "notice",
            Level::Warning => "warning",
        }
    }

    /// The mark Redis puts before the message.
    fn mark(self) -> char {
        match self {
            Level::Debug => '.',
            Level::Verbose => '-',
            Level::Notice => '*',
            Level::Warning => '#',
        }
    }

    fn from_u8(v: u8) -> Level {
        match v {
            0 => Level::Debug,
            1 => Level::Verbose,
            2 => Level::Notice,
            _ => Level::Warning,
        }
    }
}

/// Where log lines go.
enum Sink {
    Stderr,
    Stdout,
    File(File),
}

static SINK: Mutex<Sink> = Mutex::new(Sink::Stderr);
static LEVEL: AtomicU8 = AtomicU8::new(Level::Notice as u8);

/// Sends the log to `logfile`: standard output when empty (as redis-server does),
/// otherwise appended to that file, created if missing.
pub fn set_file(logfile: &str) -> std::io::Result<()> {
    let sink = if logfile.is_empty() {
        Sink::Stdout
    } else {
        Sink::File(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(logfile)?,
        )
    };
    *SINK.lock() = sink;
    Ok(())
}

/// Sets the least important level that is still written.
pub fn set_level(level: Level) {
    LEVEL.store(level as u8, Ordering::Relaxed);
}

/// The current level.
pub fn level() -> Level {
    Level::from_u8(LEVEL.load(Ordering::Relaxed))
}

/// Whether a message at `level` would be written.
pub fn enabled(level: Level) -> bool {
    level >= self::level()
}

/// Writes one message at `level`, if that level is enabled.
pub fn write(level: Level, message: fmt::Arguments) {
    if !enabled(level) {
        return;
    }
    let line = format!(
        "{}:M {} {} {}\n",
        std::process::id(),
        timestamp(SystemTime::now()),
        level.mark(),
        message
    );
    write_raw(&line);
}

/// Writes raw text (the start-up banner) to the sink, whatever the level. A log that
/// cannot be written has nowhere to report to: the text is dropped.
pub fn write_raw(text: &str) {
    let mut sink = SINK.lock();
    let _ = match &mut *sink {
        Sink::Stderr => std::io::stderr().write_all(text.as_bytes()),
        Sink::Stdout => {
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes()).and_then(|_| out.flush())
        }
        Sink::File(f) => f.write_all(text.as_bytes()),
    };
}

/// `30 Nov 2026 14:05:09.123`, in UTC.
fn timestamp(now: SystemTime) -> String {
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let since = now.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since.as_secs();
    let (year, month, day) = civil_from_days((secs / 86_400) as i64);
    let rem = secs % 86_400;
    format!(
        "{day:02} {} {year} {:02}:{:02}:{:02}.{:03}",
        MONTHS[(month - 1) as usize],
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        since.subsec_millis()
    )
}

/// (year, month 1–12, day 1–31) of a count of days since 1970-01-01, in the proleptic
/// Gregorian calendar (Howard Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Logs at notice level, with `format!` arguments.
#[macro_export]
macro_rules! log_notice {
    ($($arg:tt)*) => { $crate::util::log::write($crate::util::log::Level::Notice, format_args!($($arg)*)) };
}

/// Logs at warning level, with `format!` arguments.
#[macro_export]
macro_rules! log_warning {
    ($($arg:tt)*) => { $crate::util::log::write($crate::util::log::Level::Warning, format_args!($($arg)*)) };
}

/// Logs at verbose level, with `format!` arguments.
#[macro_export]
macro_rules! log_verbose {
    ($($arg:tt)*) => { $crate::util::log::write($crate::util::log::Level::Verbose, format_args!($($arg)*)) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calendar_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(civil_from_days(20_787), (2026, 11, 30));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        let t = UNIX_EPOCH + std::time::Duration::from_millis(1_796_051_109_123);
        assert_eq!(timestamp(t), "30 Nov 2026 15:05:09.123");
    }

    #[test]
    fn levels_filter_and_parse() {
        for l in [Level::Debug, Level::Verbose, Level::Notice, Level::Warning] {
            assert_eq!(Level::parse(l.name()), Some(l));
        }
        assert_eq!(Level::parse("loud"), None);
        assert!(Level::Warning > Level::Notice);
    }
}
