//! `FT.CONFIG GET|SET|HELP`: RediSearch's older names for the search settings that
//! `CONFIG` holds as `search-*` parameters (see `config::search`). Only the settings
//! Pion acts on are here; any other name is an unknown option.

use crate::command::ctx::Ctx;
use crate::config::search::{option, show, SearchOption, SEARCH_OPTIONS};
use crate::config::ConfigError;
use crate::error::{OpError, OpResult};
use crate::reply::Reply;

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The options a `GET`/`HELP` argument names: `*` for every one, else one by name.
fn named(arg: &[u8]) -> Vec<&'static SearchOption> {
    if arg == b"*" {
        return SEARCH_OPTIONS.iter().collect();
    }
    option(&text(arg)).into_iter().collect()
}

/// `FT.CONFIG GET|SET|HELP …`.
pub(super) fn config(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    if argv.len() < 3 {
        return Err(OpError::WrongArity("FT.CONFIG".into()));
    }
    let resp3 = ctx.client.resp >= 3;
    let verb = argv[1].to_ascii_uppercase();
    match (verb.as_slice(), argv.len()) {
        // Arguments past the option are ignored, as RediSearch does.
        (b"GET", _) => {
            let values = ctx.config().snapshot();
            let rows = named(&argv[2])
                .into_iter()
                .map(|o| (Reply::status(o.name), Reply::bulk(show(o, &values))));
            Ok(if resp3 {
                Reply::Map(rows.collect())
            } else {
                Reply::Array(rows.map(|(k, v)| Reply::Array(vec![k, v])).collect())
            })
        }
        (b"HELP", _) => {
            let values = ctx.config().snapshot();
            let rows = named(&argv[2]).into_iter().map(|o| {
                let (description, value) =
                    (Reply::status(o.description), Reply::bulk(show(o, &values)));
                (Reply::status(o.name), description, value)
            });
            Ok(if resp3 {
                Reply::Map(
                    rows.map(|(name, d, v)| {
                        let about = vec![
                            (Reply::status("Description"), d),
                            (Reply::status("Value"), v),
                        ];
                        (name, Reply::Map(about))
                    })
                    .collect(),
                )
            } else {
                Reply::Array(
                    rows.map(|(name, d, v)| {
                        Reply::Array(vec![
                            name,
                            Reply::status("Description"),
                            d,
                            Reply::status("Value"),
                            v,
                        ])
                    })
                    .collect(),
                )
            })
        }
        (b"SET", 3) => Err(OpError::custom("Expected an argument, but none provided")),
        (b"SET", n) => {
            let name = text(&argv[2]);
            let Some(o) = option(&name) else {
                return Err(OpError::custom("Invalid option"));
            };
            ctx.config()
                .set_many(&[(o.param.name, &text(&argv[3]))])
                .map_err(|e| match e {
                    ConfigError::Invalid(_, why) => OpError::custom(why),
                    ConfigError::Unknown(_) => OpError::custom("Invalid option"),
                    ConfigError::Immutable(_) => OpError::custom("Not modifiable at runtime"),
                })?;
            ctx.engine().config_changed();
            // More arguments: the value is set, and the reply says so (RediSearch's
            // status, not an error).
            Ok(if n > 4 {
                Reply::status("EXCESSARGS")
            } else {
                Reply::ok()
            })
        }
        _ => Ok(Reply::status("No such configuration action")),
    }
}

#[cfg(test)]
mod tests {
    use crate::engine::{Engine, EngineOptions};
    use crate::reply::Reply;

    fn run(e: &Engine, line: &str) -> Reply {
        let argv: Vec<&str> = line.split(' ').collect();
        e.execute(0, &argv)
    }

    fn array_len(r: &Reply) -> usize {
        match r {
            Reply::Array(items) => items.len(),
            other => panic!("not an array: {other:?}"),
        }
    }

    /// An index of `n` documents whose every query word is common.
    fn filled(n: usize) -> Engine {
        let e = Engine::in_memory(EngineOptions::default());
        let create = "FT.CREATE t SCHEMA x TEXT n NUMERIC SORTABLE v VECTOR FLAT 6 TYPE FLOAT32 DIM 2 DISTANCE_METRIC L2";
        assert_eq!(run(&e, create), Reply::ok());
        for i in 0..n {
            let (key, x, n) = (
                format!("d{i}"),
                format!("hello w{} w{}", i % 1000, i % 777),
                i.to_string(),
            );
            // `AAAAAAAA` is two finite floats (12.08…).
            e.execute(0, &["HSET", &key, "x", &x, "n", &n, "v", "AAAAAAAA"]);
        }
        e
    }

    #[test]
    fn ft_config_and_config_read_and_change_the_same_values() {
        let e = Engine::in_memory(EngineOptions::default());
        assert_eq!(run(&e, "FT.CONFIG SET TIMEOUT 42"), Reply::ok());
        let timeout = |v: &str| Reply::Map(vec![(Reply::bulk("search-timeout"), Reply::bulk(v))]);
        assert_eq!(run(&e, "CONFIG GET search-timeout"), timeout("42"));
        assert_eq!(run(&e, "CONFIG SET search-on-timeout fail"), Reply::ok());
        let on_timeout = Reply::Array(vec![Reply::Array(vec![
            Reply::status("ON_TIMEOUT"),
            Reply::bulk("fail"),
        ])]);
        assert_eq!(run(&e, "FT.CONFIG GET on_timeout"), on_timeout);
        assert_eq!(run(&e, "FT.CONFIG GET nothing"), Reply::Array(vec![]));
        assert_eq!(
            run(&e, "FT.CONFIG SET NOGC true"),
            Reply::error("Invalid option")
        );
        assert_eq!(
            run(&e, "FT.CONFIG SET TIMEOUT -1"),
            Reply::error("Value is outside acceptable bounds")
        );
        assert_eq!(array_len(&run(&e, "FT.CONFIG GET *")), 8);
        // Two names of one setting: set under one, read under the other and by CONFIG.
        assert_eq!(run(&e, "FT.CONFIG SET MAXEXPANSIONS 7"), Reply::ok());
        assert_eq!(
            run(&e, "FT.CONFIG GET MAXPREFIXEXPANSIONS"),
            Reply::Array(vec![Reply::Array(vec![
                Reply::status("MAXPREFIXEXPANSIONS"),
                Reply::bulk("7"),
            ])])
        );
        assert_eq!(
            run(&e, "CONFIG GET search-max-prefix-expansions"),
            Reply::Map(vec![(
                Reply::bulk("search-max-prefix-expansions"),
                Reply::bulk("7")
            )]),
            "one CONFIG parameter behind both names"
        );
        assert_eq!(
            run(&e, "FT.CONFIG SET TIMEOUT 7 8"),
            Reply::status("EXCESSARGS")
        );
        assert_eq!(run(&e, "CONFIG GET search-timeout"), timeout("7"));
    }

    #[test]
    fn on_timeout_fail_turns_a_late_query_into_the_error() {
        let e = filled(5000);
        // WITHSCORES: every document is scored, which takes longer than 1 ms here.
        let late = "FT.SEARCH t hello|w1*|w2* SORTBY n LIMIT 0 2 WITHSCORES TIMEOUT 1";
        let aggregate = "FT.AGGREGATE t hello|w1*|w2* TIMEOUT 1 LOAD 1 @x";
        let timed_out = Reply::error("Timeout limit was reached");
        // RETURN: what was found (nothing, set at a time), not an error.
        assert_eq!(run(&e, late), Reply::Array(vec![Reply::Integer(0)]));
        assert_ne!(run(&e, aggregate), timed_out);
        assert_eq!(run(&e, "FT.CONFIG SET ON_TIMEOUT FAIL"), Reply::ok());
        assert_eq!(run(&e, late), timed_out);
        assert_eq!(run(&e, aggregate), timed_out);
        let hybrid = "FT.HYBRID t SEARCH hello|w1*|w2* VSIM @v $q PARAMS 2 q AAAAAAAA TIMEOUT 1";
        assert_eq!(run(&e, hybrid), timed_out);
        // The configured TIMEOUT applies to a query that gives none; TIMEOUT 0 is none.
        assert_eq!(run(&e, "FT.CONFIG SET TIMEOUT 1"), Reply::ok());
        assert_eq!(
            run(&e, "FT.SEARCH t hello|w1*|w2* NOCONTENT LIMIT 0 0"),
            timed_out
        );
        let unbounded = run(
            &e,
            "FT.SEARCH t hello|w1*|w2* NOCONTENT LIMIT 0 0 TIMEOUT 0",
        );
        assert_eq!(unbounded, Reply::Array(vec![Reply::Integer(5000)]));
    }

    #[test]
    fn result_limits_bound_what_a_query_may_ask_for() {
        let e = filled(10);
        assert_eq!(run(&e, "FT.CONFIG SET MAXSEARCHRESULTS 3"), Reply::ok());
        assert_eq!(
            run(&e, "FT.SEARCH t hello NOCONTENT LIMIT 0 5"),
            Reply::error("LIMIT exceeds maximum of 3")
        );
        // A page reaches no further than the limit: offset 2 gets one result.
        let page = run(&e, "FT.SEARCH t hello NOCONTENT SORTBY n LIMIT 2 3");
        assert_eq!(
            page,
            Reply::Array(vec![Reply::Integer(10), Reply::bulk("d2")])
        );
        assert_eq!(run(&e, "FT.CONFIG SET MAXAGGREGATERESULTS 4"), Reply::ok());
        assert_eq!(
            run(&e, "FT.AGGREGATE t hello LOAD 1 @n LIMIT 0 5"),
            Reply::error("LIMIT exceeds maximum of 4")
        );
        // Without LIMIT, the rows stop at the limit.
        assert_eq!(array_len(&run(&e, "FT.AGGREGATE t hello LOAD 1 @n")), 1 + 4);
        assert_eq!(run(&e, "FT.CONFIG SET MAXAGGREGATERESULTS -1"), Reply::ok());
        assert_eq!(
            array_len(&run(&e, "FT.AGGREGATE t hello LOAD 1 @n")),
            1 + 10
        );
    }

    #[test]
    fn the_default_dialect_and_cursor_idle_apply_to_requests_that_name_none() {
        let e = filled(3);
        // `@n:[1 2]` is a range in every dialect; a dialect-2 parameter is not in 1.
        let param = [
            "FT.SEARCH",
            "t",
            "@n:[$lo 2]",
            "NOCONTENT",
            "PARAMS",
            "2",
            "lo",
            "1",
        ];
        assert!(matches!(e.execute(0, &param), Reply::Error(_)));
        assert_eq!(run(&e, "FT.CONFIG SET DEFAULT_DIALECT 2"), Reply::ok());
        // Documents 1 and 2: the count and two ids.
        assert_eq!(array_len(&e.execute(0, &param)), 3);
        assert_eq!(run(&e, "FT.CONFIG SET CURSOR_MAX_IDLE 1"), Reply::ok());
        let reply = run(
            &e,
            "FT.AGGREGATE t hello LOAD 1 @n WITHCURSOR COUNT 1 MAXIDLE 60000",
        );
        let Reply::Array(parts) = reply else {
            panic!("not a cursor reply");
        };
        let Some(Reply::Integer(id)) = parts.get(1) else {
            panic!("no cursor id");
        };
        std::thread::sleep(std::time::Duration::from_millis(20));
        let read = e.execute(0, &["FT.CURSOR", "READ", "t", &id.to_string()]);
        assert_eq!(read, Reply::error("Cursor not found"));
    }
}
