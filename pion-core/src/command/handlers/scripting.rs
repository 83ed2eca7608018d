//! Scripting commands: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO, SCRIPT, FUNCTION, FCALL and
//! FCALL_RO. The engine side (Lua states, caches, conversions) is in `scripting`.

use crate::command::ctx::Ctx;
use crate::command::flags::*;
use crate::command::handlers::util::{is_kw, text};
use crate::command::{CommandSpec, Group, KeySpecDoc};
use crate::error::{OpError, OpResult};
use crate::reply::Reply;

const RUN: u64 = NOSCRIPT | STALE | SKIP_MONITOR | NO_MANDATORY_KEYS | EXCLUSIVE;
const RW_NOTE: &str =
    "We cannot tell how the keys will be used so we assume the worst, RW and UPDATE flags";
const RO_NOTE: &str =
    "We cannot tell how the keys will be used so we assume the worst, RO and ACCESS flags";

/// This family's part of the command table.
pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new("eval", -3, RUN | MAY_REPLICATE, Group::Scripting, eval)
        .key_specs(&[
            KeySpecDoc::keynum(&["RW", "access", "update"], 2, 0, 1, 1).with_notes(RW_NOTE)
        ])
        .movable(numkeys_keys)
        .doc("Executes a server-side Lua script.", "2.6.0"),
    CommandSpec::new(
        "evalsha",
        -3,
        RUN | MAY_REPLICATE,
        Group::Scripting,
        evalsha,
    )
    .key_specs(&[KeySpecDoc::keynum(&["RW", "access", "update"], 2, 0, 1, 1)])
    .movable(numkeys_keys)
    .doc("Executes a server-side Lua script by SHA1 digest.", "2.6.0"),
    CommandSpec::new("eval_ro", -3, RUN | READONLY, Group::Scripting, eval_ro)
        .key_specs(&[KeySpecDoc::keynum(&["RO", "access"], 2, 0, 1, 1).with_notes(RO_NOTE)])
        .movable(numkeys_keys)
        .doc("Executes a read-only server-side Lua script.", "7.0.0"),
    CommandSpec::new(
        "evalsha_ro",
        -3,
        RUN | READONLY,
        Group::Scripting,
        evalsha_ro,
    )
    .key_specs(&[KeySpecDoc::keynum(&["RO", "access"], 2, 0, 1, 1)])
    .movable(numkeys_keys)
    .doc(
        "Executes a read-only server-side Lua script by SHA1 digest.",
        "7.0.0",
    ),
    CommandSpec::new("fcall", -3, RUN | MAY_REPLICATE, Group::Scripting, fcall)
        .key_specs(&[
            KeySpecDoc::keynum(&["RW", "access", "update"], 2, 0, 1, 1).with_notes(RW_NOTE)
        ])
        .movable(numkeys_keys)
        .doc("Invokes a function.", "7.0.0"),
    CommandSpec::new("fcall_ro", -3, RUN | READONLY, Group::Scripting, fcall_ro)
        .key_specs(&[KeySpecDoc::keynum(&["RO", "access"], 2, 0, 1, 1).with_notes(RO_NOTE)])
        .movable(numkeys_keys)
        .doc("Invokes a read-only function.", "7.0.0"),
    CommandSpec::container("script", Group::Scripting, SCRIPT_SUBCOMMANDS)
        .doc("A container for Lua scripts management commands.", "2.6.0"),
    CommandSpec::container("function", Group::Scripting, FUNCTION_SUBCOMMANDS)
        .doc("A container for function commands.", "7.0.0"),
];

static SCRIPT_SUBCOMMANDS: &[CommandSpec] = &[
    CommandSpec::new("debug", 3, NOSCRIPT, Group::Scripting, script_debug)
        .doc("Sets the debug mode of server-side Lua scripts.", "3.2.0"),
    CommandSpec::new("load", 3, NOSCRIPT | STALE, Group::Scripting, script_load)
        .tips(&["request_policy:all_nodes", "response_policy:all_succeeded"])
        .doc(
            "Loads a server-side Lua script to the script cache.",
            "2.6.0",
        ),
    CommandSpec::new("exists", -3, NOSCRIPT, Group::Scripting, script_exists)
        .tips(&[
            "request_policy:all_shards",
            "response_policy:agg_logical_and",
        ])
        .doc(
            "Determines whether server-side Lua scripts exist in the script cache.",
            "2.6.0",
        ),
    CommandSpec::new("flush", -2, NOSCRIPT, Group::Scripting, script_flush)
        .tips(&["request_policy:all_nodes", "response_policy:all_succeeded"])
        .doc(
            "Removes all server-side Lua scripts from the script cache.",
            "2.6.0",
        ),
    CommandSpec::new(
        "kill",
        2,
        NOSCRIPT | ALLOW_BUSY,
        Group::Scripting,
        script_kill,
    )
    .tips(&["request_policy:all_shards", "response_policy:one_succeeded"])
    .doc(
        "Terminates a server-side Lua script during execution.",
        "2.6.0",
    ),
    CommandSpec::new("help", 2, LOADING | STALE, Group::Scripting, script_help).doc(
        "Returns helpful text about the different subcommands.",
        "5.0.0",
    ),
];

static FUNCTION_SUBCOMMANDS: &[CommandSpec] = &[
    CommandSpec::new(
        "load",
        -3,
        WRITE | DENYOOM | NOSCRIPT,
        Group::Scripting,
        function_load,
    )
    .tips(&["request_policy:all_shards", "response_policy:all_succeeded"])
    .doc("Creates a library.", "7.0.0"),
    CommandSpec::new("list", -2, NOSCRIPT, Group::Scripting, function_list)
        .tips(&["nondeterministic_output_order"])
        .doc("Returns information about all libraries.", "7.0.0"),
    CommandSpec::new(
        "delete",
        3,
        WRITE | NOSCRIPT,
        Group::Scripting,
        function_delete,
    )
    .tips(&["request_policy:all_shards", "response_policy:all_succeeded"])
    .doc("Deletes a library and its functions.", "7.0.0"),
    CommandSpec::new(
        "flush",
        -2,
        WRITE | NOSCRIPT,
        Group::Scripting,
        function_flush,
    )
    .tips(&["request_policy:all_shards", "response_policy:all_succeeded"])
    .doc("Deletes all libraries and functions.", "7.0.0"),
    CommandSpec::new("dump", 2, NOSCRIPT, Group::Scripting, function_dump).doc(
        "Dumps all libraries into a serialized binary payload.",
        "7.0.0",
    ),
    CommandSpec::new(
        "restore",
        -3,
        WRITE | DENYOOM | NOSCRIPT,
        Group::Scripting,
        function_restore,
    )
    .tips(&["request_policy:all_shards", "response_policy:all_succeeded"])
    .doc("Restores all libraries from a payload.", "7.0.0"),
    CommandSpec::new(
        "kill",
        2,
        NOSCRIPT | ALLOW_BUSY,
        Group::Scripting,
        function_kill,
    )
    .tips(&["request_policy:all_shards", "response_policy:one_succeeded"])
    .doc("Terminates a function during execution.", "7.0.0"),
    CommandSpec::new(
        "stats",
        2,
        NOSCRIPT | ALLOW_BUSY,
        Group::Scripting,
        function_stats,
    )
    .tips(&[
        "nondeterministic_output",
        "request_policy:all_shards",
        "response_policy:special",
    ])
    .doc(
        "Returns information about a function during execution.",
        "7.0.0",
    ),
    CommandSpec::new("help", 2, LOADING | STALE, Group::Scripting, function_help).doc(
        "Returns helpful text about the different subcommands.",
        "7.0.0",
    ),
];

/// The keys of `EVAL`-style commands: `numkeys` at 2, the keys after it. An invalid
/// count declares no keys; the handler reports it.
fn numkeys_keys(argv: &[Vec<u8>]) -> OpResult<Vec<usize>> {
    let n = argv
        .get(2)
        .and_then(|a| crate::util::num::parse_i64(a))
        .filter(|&n| n >= 0 && (n as usize) <= argv.len().saturating_sub(3));
    Ok(n.map_or_else(Vec::new, |n| (3..3 + n as usize).collect()))
}

fn eval(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    run_script(ctx, argv, false, false)
}

fn evalsha(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    run_script(ctx, argv, true, false)
}

fn eval_ro(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    run_script(ctx, argv, false, true)
}

fn evalsha_ro(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    run_script(ctx, argv, true, true)
}

fn run_script(ctx: &mut Ctx<'_>, argv: &[Vec<u8>], by_sha: bool, ro: bool) -> OpResult<Reply> {
    // As in Redis, MONITOR shows the script before the commands it runs.
    ctx.pubsub().monitors.feed_now(ctx.client, argv);
    crate::command::scripts::eval(ctx.engine(), ctx.client, argv, by_sha, ro)
}

fn fcall(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let engine = ctx.engine();
    engine.pubsub().monitors.feed_now(ctx.client, argv);
    crate::command::scripts::fcall(engine, ctx.client, argv, false)
}

fn fcall_ro(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let engine = ctx.engine();
    engine.pubsub().monitors.feed_now(ctx.client, argv);
    crate::command::scripts::fcall(engine, ctx.client, argv, true)
}

/// `SCRIPT DEBUG YES|SYNC|NO`: whether this client's next `EVAL` runs in the Lua
/// debugger (see [`crate::scripting::debugger`]).
fn script_debug(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    use crate::scripting::debugger::DebugMode;
    let mode = if is_kw(&argv[2], "no") {
        DebugMode::Off
    } else if is_kw(&argv[2], "yes") {
        DebugMode::Forked
    } else if is_kw(&argv[2], "sync") {
        DebugMode::Sync
    } else {
        return Err(OpError::custom("ERR Use SCRIPT DEBUG YES/SYNC/NO"));
    };
    if mode != DebugMode::Off && ctx.client.debug_console.is_none() {
        return Err(OpError::custom(
            "ERR SCRIPT DEBUG needs a client connection: the debugger talks over it",
        ));
    }
    ctx.client.script_debug = mode;
    Ok(Reply::ok())
}

fn script_load(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let sha = ctx.scripting().script_load(&argv[2])?;
    Ok(Reply::bulk(sha))
}

fn script_exists(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let found = ctx.scripting().script_exists(&argv[2..]);
    Ok(Reply::Array(
        found
            .into_iter()
            .map(|f| Reply::Integer(i64::from(f)))
            .collect(),
    ))
}

/// Reads the optional `ASYNC`/`SYNC` of a flush (both flush at once here).
fn flush_mode(argv: &[Vec<u8>], error: &'static str) -> OpResult<()> {
    match argv.get(2) {
        None => Ok(()),
        Some(m) if argv.len() == 3 && (is_kw(m, "async") || is_kw(m, "sync")) => Ok(()),
        Some(_) => Err(OpError::custom(error)),
    }
}

fn script_flush(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    flush_mode(argv, "ERR SCRIPT FLUSH only support SYNC|ASYNC option")?;
    ctx.scripting().script_flush();
    Ok(Reply::ok())
}

fn kill(ctx: &mut Ctx<'_>, function: bool) -> OpResult<Reply> {
    use crate::scripting::busy::KillRefused;
    match ctx.scripting().busy().request_kill(function) {
        Ok(()) => Ok(Reply::ok()),
        Err(KillRefused::NotBusy) => Err(OpError::custom(
            "NOTBUSY No scripts in execution right now.",
        )),
        Err(KillRefused::Unkillable) => Err(OpError::custom(
            "UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.",
        )),
        // The -BUSY that names the kill command for what runs.
        Err(KillRefused::OtherKind) => Err(OpError::custom(ctx.engine().gate().busy().refusal())),
    }
}

fn script_kill(ctx: &mut Ctx<'_>, _: &[Vec<u8>]) -> OpResult<Reply> {
    kill(ctx, false)
}

fn function_kill(ctx: &mut Ctx<'_>, _: &[Vec<u8>]) -> OpResult<Reply> {
    kill(ctx, true)
}

fn help_reply(lines: &[&'static str]) -> Reply {
    Reply::Array(lines.iter().map(|l| Reply::status(l)).collect())
}

fn script_help(_: &mut Ctx<'_>, _: &[Vec<u8>]) -> OpResult<Reply> {
    Ok(help_reply(&[
        "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "DEBUG (YES|SYNC|NO)",
        "    Set the debug mode for subsequent scripts executed.",
        "EXISTS <sha1> [<sha1> ...]",
        "    Return information about the existence of the scripts in the script cache.",
        "FLUSH [ASYNC|SYNC]",
        "    Flush the Lua scripts cache. Very dangerous on replicas.",
        "    When called without the optional mode argument, the behavior is determined by the",
        "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
        "    * ASYNC: Asynchronously flush the scripts cache.",
        "    * SYNC: Synchronously flush the scripts cache.",
        "KILL",
        "    Kill the currently executing Lua script.",
        "LOAD <script>",
        "    Load a script into the scripts cache without executing it.",
        "HELP",
        "    Prints this help.",
    ]))
}

fn function_help(_: &mut Ctx<'_>, _: &[Vec<u8>]) -> OpResult<Reply> {
    Ok(help_reply(&[
        "FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
        "LOAD [REPLACE] <FUNCTION CODE>",
        "    Create a new library with the given library name and code.",
        "DELETE <LIBRARY NAME>",
        "    Delete the given library.",
        "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
        "    Return general information on all the libraries:",
        "    * Library name",
        "    * The engine used to run the Library",
        "    * Library description",
        "    * Functions list",
        "    * Library code (if WITHCODE is given)",
        "    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
        "STATS",
        "    Return information about the current function running:",
        "    * Function name",
        "    * Command used to run the function",
        "    * Duration in MS that the function is running",
        "    If no function is running, return nil",
        "    In addition, returns a list of available engines.",
        "KILL",
        "    Kill the current running function.",
        "FLUSH [ASYNC|SYNC]",
        "    Delete all the libraries.",
        "    When called without the optional mode argument, the behavior is determined by the",
        "    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
        "    * ASYNC: Asynchronously flush the libraries.",
        "    * SYNC: Synchronously flush the libraries.",
        "DUMP",
        "    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
        "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
        "    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
        "    control how to handle existing libraries (default APPEND):",
        "    * FLUSH: delete all existing libraries.",
        "    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
        "    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
        "      libraries with the new libraries (notice that even on this option there is a chance of failure",
        "      in case of functions name collision with another library).",
        "HELP",
        "    Prints this help.",
    ]))
}

fn function_load(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let (replace, code) = match argv.len() {
        3 => (false, &argv[2]),
        4 if is_kw(&argv[2], "replace") => (true, &argv[3]),
        _ => {
            return Err(OpError::custom(format!(
                "ERR Unknown option given: {}",
                text(&argv[2])
            )))
        }
    };
    let name = ctx.scripting().functions(|f| f.load(code, replace))?;
    Ok(Reply::bulk(name))
}

fn function_delete(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let name = text(&argv[2]);
    let found = ctx.scripting().functions(|f| Ok(f.remove(&name)))?;
    if found {
        Ok(Reply::ok())
    } else {
        Err(OpError::custom("ERR Library not found"))
    }
}

fn function_flush(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    // Unlike SCRIPT FLUSH, an extra argument is a syntax error here, as in Redis.
    if argv.len() > 3 {
        return Err(OpError::subcommand_syntax(argv));
    }
    flush_mode(argv, "ERR FUNCTION FLUSH only supports SYNC|ASYNC option")?;
    ctx.scripting().functions_flush();
    Ok(Reply::ok())
}

fn function_list(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let mut pattern: Option<&[u8]> = None;
    let mut with_code = false;
    let mut i = 2;
    while i < argv.len() {
        if is_kw(&argv[i], "withcode") && !with_code {
            with_code = true;
        } else if is_kw(&argv[i], "libraryname") && pattern.is_none() {
            let p = argv
                .get(i + 1)
                .ok_or(OpError::custom("ERR library name argument was not given"))?;
            pattern = Some(p);
            i += 1;
        } else {
            return Err(OpError::custom(format!(
                "ERR Unknown argument {}",
                text(&argv[i])
            )));
        }
        i += 1;
    }
    let s = |t: &'static str| Reply::bulk(t);
    ctx.scripting().functions(|st| {
        let mut libs = Vec::new();
        for (name, lib) in &st.libs {
            if let Some(p) = pattern {
                if !crate::util::glob::glob_match(p, name.as_bytes(), false) {
                    continue;
                }
            }
            let funcs = lib
                .funcs
                .iter()
                .map(|(fname, f)| {
                    Reply::Map(vec![
                        (s("name"), Reply::bulk(fname)),
                        (
                            s("description"),
                            Reply::bulk_or_null(f.description.as_deref()),
                        ),
                        (
                            s("flags"),
                            Reply::Set(f.flags.names().into_iter().map(Reply::status).collect()),
                        ),
                    ])
                })
                .collect();
            let mut fields = vec![
                (s("library_name"), Reply::bulk(name)),
                (s("engine"), s("LUA")),
                (s("functions"), Reply::Array(funcs)),
            ];
            if with_code {
                fields.push((s("library_code"), Reply::bulk(&lib.code)));
            }
            libs.push(Reply::Map(fields));
        }
        Ok(Reply::Array(libs))
    })
}

fn function_dump(ctx: &mut Ctx<'_>, _: &[Vec<u8>]) -> OpResult<Reply> {
    let payload = ctx.scripting().functions(|f| Ok(f.dump()))?;
    Ok(Reply::Bulk(payload))
}

fn function_restore(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    #[derive(PartialEq)]
    enum Policy {
        Flush,
        Append,
        Replace,
    }
    if argv.len() > 4 {
        return Err(OpError::subcommand_syntax(argv));
    }
    let policy =
        match argv.get(3) {
            None => Policy::Append,
            Some(p) if argv.len() == 4 && is_kw(p, "flush") => Policy::Flush,
            Some(p) if argv.len() == 4 && is_kw(p, "append") => Policy::Append,
            Some(p) if argv.len() == 4 && is_kw(p, "replace") => Policy::Replace,
            Some(_) => return Err(OpError::custom(
                "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.",
            )),
        };
    let libs = crate::scripting::functions::parse_dump(&argv[2])?;
    let scripting = ctx.scripting();
    let previous: Vec<Vec<u8>> =
        scripting.functions(|f| Ok(f.libs.values().map(|l| l.code.clone()).collect()))?;
    if policy == Policy::Flush {
        scripting.functions_flush();
    }
    let result = scripting.functions(|f| {
        for code in &libs {
            if policy == Policy::Append {
                let name = crate::scripting::functions::parse_header(code)?;
                if f.libs.contains_key(&name) {
                    return Err(OpError::custom(format!(
                        "ERR Library {name} already exists"
                    )));
                }
            }
            f.load(code, policy != Policy::Append)?;
        }
        Ok(())
    });
    if let Err(e) = result {
        // All or nothing: put the libraries back as they were.
        scripting.functions_flush();
        scripting.functions(|f| {
            for code in &previous {
                f.load(code, true)?;
            }
            Ok(())
        })?;
        return Err(e);
    }
    Ok(Reply::ok())
}

fn function_stats(ctx: &mut Ctx<'_>, _: &[Vec<u8>]) -> OpResult<Reply> {
    let s = |t: &'static str| Reply::bulk(t);
    let scripting = ctx.scripting();
    let running = match scripting.busy().running() {
        Some(r) if r.is_function => Reply::Map(vec![
            (s("name"), Reply::bulk(&r.name)),
            (s("command"), Reply::bulks(&r.command)),
            (
                s("duration_ms"),
                Reply::Integer(r.started.elapsed().as_millis() as i64),
            ),
        ]),
        _ => Reply::Null,
    };
    let (libraries, functions) = scripting.function_counts();
    Ok(Reply::Map(vec![
        (s("running_script"), running),
        (
            s("engines"),
            Reply::Map(vec![(
                s("LUA"),
                Reply::Map(vec![
                    (s("libraries_count"), Reply::Integer(libraries as i64)),
                    (s("functions_count"), Reply::Integer(functions as i64)),
                ]),
            )]),
        ),
    ]))
}
