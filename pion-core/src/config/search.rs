//! The search engine's run-time settings: query deadlines and what passing one does,
//! the most results a query may ask for, the default query dialect and the longest a
//! cursor may idle. They are `CONFIG` parameters under the names Redis 8 gives them
//! (`search-timeout`, …) and `FT.CONFIG` options under RediSearch's older names
//! (`TIMEOUT`, …), one table row each, so both commands read and change the same
//! values with the same checks.

use super::{ConfigValues, Param};

/// What a query past its deadline replies (`ON_TIMEOUT`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnTimeout {
    /// The results found so far, with a warning (RediSearch's default).
    Return,
    /// The error `Timeout limit was reached`.
    Fail,
}

impl OnTimeout {
    /// Its name as `FT.CONFIG` shows it.
    pub fn name(self) -> &'static str {
        match self {
            OnTimeout::Return => "return",
            OnTimeout::Fail => "fail",
        }
    }
}

/// The search settings.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchSettings {
    /// `TIMEOUT`: a query's deadline in milliseconds when it gives none (0: none).
    pub timeout_ms: u64,
    /// `ON_TIMEOUT`.
    pub on_timeout: OnTimeout,
    /// `MAXSEARCHRESULTS`: the most results `FT.SEARCH` replies (`None`: unlimited).
    pub max_search_results: Option<u64>,
    /// `MAXAGGREGATERESULTS`: the most rows `FT.AGGREGATE` replies (`None`: unlimited).
    pub max_aggregate_results: Option<u64>,
    /// `DEFAULT_DIALECT`: the dialect of a query that names none.
    pub default_dialect: u8,
    /// `CURSOR_MAX_IDLE`: the longest `MAXIDLE` a cursor may have, and its default.
    pub cursor_max_idle_ms: u64,
    /// `MAXEXPANSIONS` (also `MAXPREFIXEXPANSIONS`): how many terms a prefix, suffix
    /// or fuzzy term, or tags a tag prefix, stands for at most.
    pub max_expansions: u64,
}

impl Default for SearchSettings {
    /// RediSearch's defaults, but for `TIMEOUT`: a query runs to its end unless it
    /// gives a deadline. Pion evaluates a query a set of documents at a time, so a
    /// query past its deadline has nothing to show for it; a default deadline would
    /// turn a slow query into an empty one.
    fn default() -> Self {
        SearchSettings {
            timeout_ms: 0,
            on_timeout: OnTimeout::Return,
            max_search_results: Some(1_000_000),
            max_aggregate_results: None,
            default_dialect: 1,
            cursor_max_idle_ms: 300_000,
            max_expansions: 200,
        }
    }
}

/// Why a search setting refused a value, in RediSearch's words.
pub const NOT_A_NUMBER: &str = "Could not convert argument to expected type";
/// A number out of the setting's range.
pub const OUT_OF_BOUNDS: &str = "Value is outside acceptable bounds";

fn integer(v: &str) -> Result<i64, String> {
    v.trim().parse().map_err(|_| NOT_A_NUMBER.to_string())
}

fn non_negative(v: &str) -> Result<u64, String> {
    u64::try_from(integer(v)?).map_err(|_| OUT_OF_BOUNDS.to_string())
}

/// A result limit: a negative number is unlimited, as in RediSearch, and so is
/// `unlimited` (how it is shown, so a value read back sets again).
fn limit(v: &str) -> Result<Option<u64>, String> {
    if v.trim().eq_ignore_ascii_case("unlimited") {
        return Ok(None);
    }
    Ok(u64::try_from(integer(v)?).ok())
}

fn show_limit(n: Option<u64>) -> String {
    n.map_or_else(|| "unlimited".to_string(), |n| n.to_string())
}

/// One setting: its `FT.CONFIG` name and description, and its `CONFIG` parameter.
pub struct SearchOption {
    /// The `FT.CONFIG` name.
    pub name: &'static str,
    /// What `FT.CONFIG HELP` says of it.
    pub description: &'static str,
    /// The `CONFIG` parameter behind it.
    pub param: Param,
}

/// `MAXEXPANSIONS` and `MAXPREFIXEXPANSIONS`, two `FT.CONFIG` names of one setting.
const MAX_EXPANSIONS: Param = Param {
    name: "search-max-prefix-expansions",
    aliases: &[],
    get: |c| c.search.max_expansions.to_string(),
    set: Some(|c, v| {
        let n = non_negative(v)?;
        if n == 0 {
            return Err(OUT_OF_BOUNDS.into());
        }
        c.search.max_expansions = n;
        Ok(())
    }),
};

/// Every search setting, in `FT.CONFIG GET *`'s order.
pub static SEARCH_OPTIONS: &[SearchOption] = &[
    SearchOption {
        name: "MAXSEARCHRESULTS",
        description: "The most results FT.SEARCH replies (-1: unlimited)",
        param: Param {
            name: "search-max-search-results",
            aliases: &[],
            get: |c| show_limit(c.search.max_search_results),
            set: Some(|c, v| {
                c.search.max_search_results = limit(v)?;
                Ok(())
            }),
        },
    },
    SearchOption {
        name: "MAXAGGREGATERESULTS",
        description: "The most rows FT.AGGREGATE replies (-1: unlimited)",
        param: Param {
            name: "search-max-aggregate-results",
            aliases: &[],
            get: |c| show_limit(c.search.max_aggregate_results),
            set: Some(|c, v| {
                c.search.max_aggregate_results = limit(v)?;
                Ok(())
            }),
        },
    },
    SearchOption {
        name: "MAXEXPANSIONS",
        description: "Maximum prefix expansions to be used in a query",
        param: MAX_EXPANSIONS,
    },
    SearchOption {
        name: "MAXPREFIXEXPANSIONS",
        description: "Maximum prefix expansions to be used in a query",
        param: MAX_EXPANSIONS,
    },
    SearchOption {
        name: "TIMEOUT",
        description: "Query (search) timeout, in milliseconds (0: none)",
        param: Param {
            name: "search-timeout",
            aliases: &[],
            get: |c| c.search.timeout_ms.to_string(),
            set: Some(|c, v| {
                c.search.timeout_ms = non_negative(v)?;
                Ok(())
            }),
        },
    },
    SearchOption {
        name: "ON_TIMEOUT",
        description:
            "What a query past its timeout replies: RETURN (the results so far) or FAIL (an error)",
        param: Param {
            name: "search-on-timeout",
            aliases: &[],
            get: |c| c.search.on_timeout.name().to_string(),
            set: Some(|c, v| {
                c.search.on_timeout = match v.to_ascii_lowercase().as_str() {
                    "return" => OnTimeout::Return,
                    "fail" => OnTimeout::Fail,
                    _ => return Err("Invalid ON_TIMEOUT value".into()),
                };
                Ok(())
            }),
        },
    },
    SearchOption {
        name: "CURSOR_MAX_IDLE",
        description:
            "The longest a cursor may idle, in milliseconds (its MAXIDLE's default and cap)",
        param: Param {
            name: "search-cursor-max-idle",
            aliases: &[],
            get: |c| c.search.cursor_max_idle_ms.to_string(),
            set: Some(|c, v| {
                let n = non_negative(v)?;
                if n == 0 {
                    return Err(OUT_OF_BOUNDS.into());
                }
                c.search.cursor_max_idle_ms = n;
                Ok(())
            }),
        },
    },
    SearchOption {
        name: "DEFAULT_DIALECT",
        description: "The dialect of a query that names none (1 to 4)",
        param: Param {
            name: "search-default-dialect",
            aliases: &[],
            get: |c| c.search.default_dialect.to_string(),
            set: Some(|c, v| {
                let n = integer(v)?;
                if n > 4 {
                    return Err("Default dialect version cannot be higher than 4".into());
                }
                if n < 1 {
                    return Err(OUT_OF_BOUNDS.into());
                }
                c.search.default_dialect = n as u8;
                Ok(())
            }),
        },
    },
];

/// The setting `FT.CONFIG` calls `name` (any case).
pub fn option(name: &str) -> Option<&'static SearchOption> {
    SEARCH_OPTIONS
        .iter()
        .find(|o| o.name.eq_ignore_ascii_case(name))
}

/// The `CONFIG` parameters of the search settings, each once (two `FT.CONFIG` names
/// may share one).
pub fn params() -> impl Iterator<Item = &'static Param> {
    SEARCH_OPTIONS
        .iter()
        .enumerate()
        .filter(|(i, o)| {
            SEARCH_OPTIONS[..*i]
                .iter()
                .all(|earlier| earlier.param.name != o.param.name)
        })
        .map(|(_, o)| &o.param)
}

/// A setting's value as `FT.CONFIG` shows it.
pub fn show(option: &SearchOption, values: &ConfigValues) -> String {
    (option.param.get)(values)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(name: &str, v: &str) -> Result<ConfigValues, String> {
        let mut c = ConfigValues::default();
        let o = option(name).expect("an option");
        (o.param.set.expect("settable"))(&mut c, v)?;
        Ok(c)
    }

    #[test]
    fn values_are_checked_as_redisearch_checks_them() {
        assert_eq!(set("timeout", "abc").err().as_deref(), Some(NOT_A_NUMBER));
        assert_eq!(set("TIMEOUT", "-1").err().as_deref(), Some(OUT_OF_BOUNDS));
        assert_eq!(set("TIMEOUT", "42").map(|c| c.search.timeout_ms), Ok(42));
        assert_eq!(
            set("ON_TIMEOUT", "maybe").err().as_deref(),
            Some("Invalid ON_TIMEOUT value")
        );
        assert_eq!(
            set("on_timeout", "FAIL").map(|c| c.search.on_timeout),
            Ok(OnTimeout::Fail)
        );
        let unlimited = set("MAXAGGREGATERESULTS", "-1").expect("set");
        assert_eq!(
            set("MAXSEARCHRESULTS", "unlimited").map(|c| c.search.max_search_results),
            Ok(None)
        );
        assert_eq!(
            show(option("MAXAGGREGATERESULTS").expect("o"), &unlimited),
            "unlimited"
        );
        assert_eq!(
            set("MAXSEARCHRESULTS", "7").map(|c| c.search.max_search_results),
            Ok(Some(7))
        );
        assert!(set("DEFAULT_DIALECT", "5").is_err() && set("DEFAULT_DIALECT", "0").is_err());
        assert_eq!(
            set("DEFAULT_DIALECT", "3").map(|c| c.search.default_dialect),
            Ok(3)
        );
        assert!(set("CURSOR_MAX_IDLE", "0").is_err());
        assert!(option("NOGC").is_none());
    }
}
