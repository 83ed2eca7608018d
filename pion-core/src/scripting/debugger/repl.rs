//! The session's line hook and the commands the client sends while the script is
//! stopped.

use std::sync::Arc;
use std::time::{Duration, Instant};

use mlua::{DebugEvent, HookTriggers, Lua, Table, Value, VmState};

use super::frames::{locals, Frames};
use super::{render, Active, Session, MAX_BREAKPOINTS};
use crate::scripting::api;
use crate::scripting::sandbox::{self, HookState};

/// How long one wait for the client's next command lasts before the session looks at
/// kill requests and serves this thread's other clients.
const POLL: Duration = Duration::from_millis(100);
/// Largest command the client may send (Redis's limit too).
const MAX_INPUT: usize = 1 << 20;

/// Replaces the state's hook with the session's: every line, and every so many
/// instructions for kill requests and the infinite-loop guard.
pub(super) fn install_hook(lua: &Lua, hook: Arc<HookState>, active: Active) {
    lua.set_hook(
        HookTriggers::new()
            .every_line()
            .every_nth_instruction(sandbox::HOOK_EVERY),
        move |lua, debug| {
            if debug.event() == DebugEvent::Count {
                sandbox::check_interrupts(&hook, debug.curr_line())?;
            }
            let source = debug.source();
            let short = source.short_src.as_deref().unwrap_or("").to_string();
            let line = i64::from(debug.curr_line());
            let count_event = debug.event() == DebugEvent::Count;
            drop(debug);
            on_line(lua, &active, &hook, &short, line, count_event)?;
            Ok(VmState::Continue)
        },
    );
}

/// What the hook does at a line (or an instruction count): stop when stepping, at a
/// breakpoint, or when the script ran too long since it last stopped.
fn on_line(
    lua: &Lua,
    active: &Active,
    hook: &HookState,
    short_src: &str,
    line: i64,
    count_event: bool,
) -> mlua::Result<()> {
    let reason = {
        // Lines of the sandbox's own Lua code (the `redis` table's wrappers) are not
        // the script's.
        if !short_src.contains("user_script") {
            return Ok(());
        }
        let mut s = active.0.lock();
        s.current_line = line;
        let at_breakpoint = s.breakpoints.contains(&line) || s.lua_breakpoint;
        let mut timeout = false;
        if count_event && !s.step && !at_breakpoint {
            if s.resumed.elapsed() < s.loop_limit {
                return Ok(());
            }
            timeout = true;
            s.step = true;
        }
        if !s.step && !at_breakpoint {
            return Ok(());
        }
        let reason = if at_breakpoint {
            if s.lua_breakpoint {
                "redis.breakpoint() called"
            } else {
                "break point"
            }
        } else if timeout {
            "timeout reached, infinite loop?"
        } else {
            "step over"
        };
        s.step = false;
        s.lua_breakpoint = false;
        s.log(format!("* Stopped at {line}, stop reason = {reason}"));
        s.log_source_line(line);
        s.send_logs();
        (reason, timeout)
    };
    let gone = matches!(repl(lua, active, hook)?, Resume::ClientGone);
    if gone && reason.1 {
        // Nobody will ever continue it: a loop would hold the server for good.
        return Err(api::fail(
            lua,
            "timeout during Lua debugging with client closing connection",
        ));
    }
    active.0.lock().resumed = Instant::now();
    Ok(())
}

/// How a stop ended.
enum Resume {
    /// `step`, `next` or `continue`.
    Run,
    /// The client went away: the script runs on without stopping.
    ClientGone,
}

/// One parsed command, or why there is none yet.
enum Parsed {
    Command(Vec<Vec<u8>>),
    Incomplete,
    Malformed,
}

/// The leading integer of `s` as C's `atoi` reads it (0 when there is none).
fn atoi(s: &[u8]) -> i64 {
    let text = String::from_utf8_lossy(s);
    let t = text.trim_start();
    let (sign, digits) = match t.as_bytes().first() {
        Some(b'-') => (-1, &t[1..]),
        Some(b'+') => (1, &t[1..]),
        _ => (1, t),
    };
    let end = digits
        .bytes()
        .position(|b| !b.is_ascii_digit())
        .unwrap_or(digits.len());
    sign * digits[..end].parse::<i64>().unwrap_or(0)
}

/// Reads one command in the request protocol (`*N` then `$len` arguments), as
/// forgivingly as Redis's debugger does: at most 1,024 arguments of 1 to 1,024 bytes.
fn parse(buf: &[u8]) -> Parsed {
    if buf.is_empty() {
        return Parsed::Incomplete;
    }
    let crlf = |from: usize| {
        buf[from..]
            .windows(2)
            .position(|w| w == b"\r\n")
            .map(|p| from + p)
    };
    let Some(star) = buf.iter().position(|&b| b == b'*') else {
        return Parsed::Malformed;
    };
    let Some(end) = crlf(star) else {
        return Parsed::Incomplete;
    };
    let argc = atoi(&buf[star + 1..end]);
    if !(1..=1024).contains(&argc) {
        return Parsed::Malformed;
    }
    let mut p = end + 2;
    let mut argv = Vec::with_capacity(argc as usize);
    while argv.len() < argc as usize {
        match buf.get(p) {
            None => return Parsed::Incomplete,
            Some(b'$') => {}
            Some(_) => return Parsed::Malformed,
        }
        let Some(end) = crlf(p) else {
            return Parsed::Incomplete;
        };
        let len = atoi(&buf[p + 1..end]);
        if !(1..=1024).contains(&len) {
            return Parsed::Malformed;
        }
        let start = end + 2;
        let stop = start + len as usize;
        if stop + 2 > buf.len() {
            return Parsed::Incomplete;
        }
        argv.push(buf[start..stop].to_vec());
        if &buf[stop..stop + 2] != b"\r\n" {
            return Parsed::Malformed;
        }
        p = stop + 2;
    }
    Parsed::Command(argv)
}

/// Waits for the client's next command. `None`: the client went away.
fn next_command(
    lua: &Lua,
    active: &Active,
    hook: &HookState,
) -> mlua::Result<Option<Vec<Vec<u8>>>> {
    let mut buf = [0u8; 1024];
    loop {
        let mut s = active.0.lock();
        match parse(&s.input) {
            Parsed::Command(argv) => {
                // As in Redis, whatever else came with the command is dropped.
                s.input.clear();
                return Ok(Some(argv));
            }
            Parsed::Malformed => {
                s.input.clear();
                return Err(api::fail(lua, "protocol error"));
            }
            Parsed::Incomplete => {}
        }
        match s.console.recv(&mut buf, POLL) {
            Ok(Some(0)) | Err(_) => {
                // Nobody to stop for any more: the script runs to its end.
                s.step = false;
                s.breakpoints.clear();
                return Ok(None);
            }
            Ok(Some(n)) => {
                s.input.extend_from_slice(&buf[..n]);
                if s.input.len() > MAX_INPUT {
                    s.input.clear();
                    return Err(api::fail(lua, "max client buffer reached"));
                }
            }
            Ok(None) => {
                drop(s);
                // SCRIPT KILL (past the busy threshold) ends the session; this
                // thread's other clients are answered meanwhile.
                sandbox::check_interrupts(hook, 0)?;
                crate::server::gate::pump_while_busy();
            }
        }
    }
}

fn is(arg: &[u8], names: &[&str]) -> bool {
    names.iter().any(|n| arg.eq_ignore_ascii_case(n.as_bytes()))
}

/// Serves the client's commands until one resumes the script.
fn repl(lua: &Lua, active: &Active, hook: &HookState) -> mlua::Result<Resume> {
    loop {
        let Some(argv) = next_command(lua, active, hook)? else {
            return Ok(Resume::ClientGone);
        };
        let cmd = argv[0].as_slice();
        if is(cmd, &["s", "step", "n", "next"]) {
            active.0.lock().step = true;
            return Ok(Resume::Run);
        }
        if is(cmd, &["c", "continue"]) {
            return Ok(Resume::Run);
        }
        if is(cmd, &["a", "abort"]) {
            return Err(api::fail(lua, "script aborted for user request"));
        }
        if is(cmd, &["e", "eval"]) {
            eval(lua, active, &argv);
        } else if argv.len() > 1 && is(cmd, &["r", "redis"]) {
            redis(lua, active, &argv);
        } else if is(cmd, &["p", "print"]) {
            print(lua, active, argv.get(1).filter(|_| argv.len() == 2));
        } else if is(cmd, &["t", "trace"]) {
            trace(lua, active);
        } else {
            let mut s = active.0.lock();
            if is(cmd, &["h", "help"]) {
                for line in HELP {
                    s.log(*line);
                }
            } else if is(cmd, &["m", "maxlen"]) {
                maxlen(&mut s, &argv);
            } else if is(cmd, &["b", "break"]) {
                breakpoints(&mut s, &argv);
            } else if is(cmd, &["l", "list"]) {
                let mut around = s.current_line;
                if let Some(n) = argv.get(1).map(|a| atoi(a)).filter(|&n| n > 0) {
                    around = n;
                }
                let context = argv.get(2).map_or(5, |a| atoi(a));
                list(&mut s, around, context);
            } else if is(cmd, &["w", "whole"]) {
                list(&mut s, 1, 1_000_000);
            } else {
                s.log("<error> Unknown Redis Lua debugger command or wrong number of arguments.");
            }
        }
        active.0.lock().send_logs();
    }
}

const HELP: &[&str] = &[
    "Redis Lua debugger help:",
    "[h]elp               Show this help.",
    "[s]tep               Run current line and stop again.",
    "[n]ext               Alias for step.",
    "[c]ontinue           Run till next breakpoint.",
    "[l]ist               List source code around current line.",
    "[l]ist [line]        List source code around [line].",
    "                     line = 0 means: current position.",
    "[l]ist [line] [ctx]  In this form [ctx] specifies how many lines",
    "                     to show before/after [line].",
    "[w]hole              List all source code. Alias for 'list 1 1000000'.",
    "[p]rint              Show all the local variables.",
    "[p]rint <var>        Show the value of the specified variable.",
    "                     Can also show global vars KEYS and ARGV.",
    "[b]reak              Show all breakpoints.",
    "[b]reak <line>       Add a breakpoint to the specified line.",
    "[b]reak -<line>      Remove breakpoint from the specified line.",
    "[b]reak 0            Remove all breakpoints.",
    "[t]race              Show a backtrace.",
    "[e]val <code>        Execute some Lua code (in a different callframe).",
    "[r]edis <cmd>        Execute a Redis command.",
    "[m]axlen [len]       Trim logged Redis replies and Lua var dumps to len.",
    "                     Specifying zero as <len> means unlimited.",
    "[a]bort              Stop the execution of the script. In sync",
    "                     mode dataset changes will be retained.",
    "",
    "Debugger functions you can call from Lua scripts:",
    "redis.debug()        Produce logs in the debugger console.",
    "redis.breakpoint()   Stop execution like if there was a breakpoint in the",
    "                     next line of code.",
];

/// `list`: the source lines within `context` of `around` (every line when `around`
/// is 0).
fn list(s: &mut Session, around: i64, context: i64) {
    for n in 1..=s.lines.len() as i64 {
        if around != 0 && (around - n).abs() > context {
            continue;
        }
        s.log_source_line(n);
    }
}

/// `maxlen [len]`: shows, or sets, where logged replies and values are cut (values
/// up to 60 become 60; 0 means never).
fn maxlen(s: &mut Session, argv: &[Vec<u8>]) {
    if argv.len() == 2 {
        let mut len = atoi(&argv[1]);
        s.maxlen_hint_sent = true;
        if len != 0 && len <= 60 {
            len = 60;
        }
        s.maxlen = len as usize;
    }
    if s.maxlen > 0 {
        let line = format!("<value> replies are truncated at {} bytes.", s.maxlen);
        s.log(line);
    } else {
        s.log("<value> replies are unlimited.");
    }
}

/// `break`: lists the breakpoints, or adds (`n`), removes (`-n`) or clears (`0`)
/// them.
fn breakpoints(s: &mut Session, argv: &[Vec<u8>]) {
    if argv.len() == 1 {
        if s.breakpoints.is_empty() {
            s.log("No breakpoints set. Use 'b <line>' to add one.");
        } else {
            let line = format!("{} breakpoints set:", s.breakpoints.len());
            s.log(line);
            for bp in s.breakpoints.clone() {
                s.log_source_line(bp);
            }
        }
        return;
    }
    for arg in &argv[1..] {
        let Some(n) = std::str::from_utf8(arg)
            .ok()
            .and_then(|t| crate::util::num::parse_i64(t.as_bytes()))
        else {
            let mut line = b"Invalid argument:'".to_vec();
            line.extend_from_slice(arg);
            line.push(b'\'');
            s.log(line);
            continue;
        };
        if n == 0 {
            s.breakpoints.clear();
            s.log("All breakpoints removed.");
        } else if n > 0 {
            if s.breakpoints.len() == MAX_BREAKPOINTS {
                s.log("Too many breakpoints set.");
            } else if n <= s.lines.len() as i64 && !s.breakpoints.contains(&n) {
                s.breakpoints.push(n);
                list(s, n, 1);
            } else {
                s.log("Wrong line number.");
            }
        } else if let Some(at) = s.breakpoints.iter().position(|&b| b == -n) {
            s.breakpoints.remove(at);
            s.log("Breakpoint removed.");
        } else {
            s.log("No breakpoint in the specified line.");
        }
    }
}

/// The text of an error raised by Lua code the client ran.
fn error_text(lua: &Lua, e: mlua::Error) -> String {
    if let mlua::Error::SyntaxError { message, .. } = &e {
        return message.clone();
    }
    match api::unwrap_error(lua, Value::Error(Box::new(e))) {
        // The message, without the traceback the runtime appends.
        Ok(Value::String(s)) => {
            let text = s.to_string_lossy().to_string();
            match text.find("\nstack traceback:") {
                Some(at) => text[..at].to_string(),
                None => text,
            }
        }
        Ok(Value::Table(t)) => t.raw_get::<String>("err").unwrap_or_default(),
        Ok(other) => format!("{other:?}"),
        Err(e) => e.to_string(),
    }
}

/// `eval <code>`: runs code in a frame of its own, as an expression when it is one.
fn eval(lua: &Lua, active: &Active, argv: &[Vec<u8>]) {
    let code = argv[1..].join(&b' ');
    let mut expr = b"return ".to_vec();
    expr.extend_from_slice(&code);
    let compiled = lua
        .load(expr.as_slice())
        .set_name("@ldb_eval")
        .into_function()
        .or_else(|_| {
            lua.load(code.as_slice())
                .set_name("@ldb_eval")
                .into_function()
        });
    let line = match compiled {
        Err(e) => format!("<error> {}", error_text(lua, e)),
        Ok(f) => match f.call::<Value>(()) {
            Err(e) => format!("<error> {}", error_text(lua, e)),
            Ok(v) => {
                let mut line = String::from("<retval> ");
                render::lua_value(&mut line, &v);
                active.0.lock().log_long(line);
                return;
            }
        },
    };
    active.0.lock().log(line);
}

/// `redis <cmd> …`: runs the command through `redis.call` with logging on, so the
/// client sees it and its reply.
fn redis(lua: &Lua, active: &Active, argv: &[Vec<u8>]) {
    let call = lua
        .globals()
        .get::<Table>("redis")
        .and_then(|r| r.get::<mlua::Function>("call"));
    let Ok(call) = call else { return };
    let args: mlua::Result<Vec<mlua::String>> =
        argv[1..].iter().map(|a| lua.create_string(a)).collect();
    let Ok(args) = args else { return };
    active.0.lock().step = true;
    let _ = call.call::<Value>(mlua::MultiValue::from_iter(
        args.into_iter().map(Value::String),
    ));
    active.0.lock().step = false;
}

/// `print [var]`: one variable (the innermost frame that has it, or the globals
/// `KEYS` and `ARGV`), or every local of the current frame.
fn print(lua: &Lua, active: &Active, var: Option<&Vec<u8>>) {
    match var {
        Some(name) => {
            let found = locals(lua, Frames::All)
                .into_iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v)
                .or_else(|| {
                    ["KEYS", "ARGV"]
                        .into_iter()
                        .find(|g| g.as_bytes() == name.as_slice())
                        .and_then(|g| lua.globals().raw_get::<Value>(g).ok())
                });
            let mut s = active.0.lock();
            match found {
                Some(v) => {
                    let mut line = String::from("<value> ");
                    render::lua_value(&mut line, &v);
                    s.log_long(line);
                }
                None => s.log("No such variable."),
            }
        }
        None => {
            let vars: Vec<_> = locals(lua, Frames::Current)
                .into_iter()
                .filter(|(n, _)| !n.windows(12).any(|w| w == b"(*temporary)"))
                .collect();
            let mut s = active.0.lock();
            if vars.is_empty() {
                s.log("No local variables in the current context.");
            }
            for (name, v) in vars {
                let mut line = format!("<value> {} = ", String::from_utf8_lossy(&name));
                render::lua_value(&mut line, &v);
                s.log_long(line);
            }
        }
    }
}

/// `trace`: the script's frames, innermost first, each with its current line.
fn trace(lua: &Lua, active: &Active) {
    let mut frames = Vec::new();
    let mut level = 0;
    while let Some(frame) = lua.inspect_stack(level) {
        let src = frame.source();
        if src
            .short_src
            .as_deref()
            .is_some_and(|s| s.contains("user_script"))
        {
            let name = frame
                .names()
                .name
                .map_or_else(|| "top level".to_string(), |n| n.to_string());
            frames.push((level == 0, name, i64::from(frame.curr_line())));
        }
        level += 1;
    }
    let mut s = active.0.lock();
    if level == 0 {
        s.log("<error> Can't retrieve Lua stack.");
    }
    for (innermost, name, line) in frames {
        s.log(format!("{} {name}:", if innermost { "In" } else { "From" }));
        s.log_source_line(line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command(buf: &[u8]) -> Option<Vec<String>> {
        match parse(buf) {
            Parsed::Command(argv) => Some(
                argv.iter()
                    .map(|a| String::from_utf8_lossy(a).into_owned())
                    .collect(),
            ),
            _ => None,
        }
    }

    #[test]
    fn parses_the_request_protocol_forgivingly() {
        assert_eq!(
            command(b"*2\r\n$4\r\nlist\r\n$1\r\n3\r\n"),
            Some(vec!["list".into(), "3".into()])
        );
        assert!(matches!(parse(b"*2\r\n$4\r\nlist\r\n"), Parsed::Incomplete));
        assert!(matches!(parse(b"*1\r\n$4\r\nli"), Parsed::Incomplete));
        assert!(matches!(parse(b"*1"), Parsed::Incomplete));
        assert!(matches!(parse(b"list\r\n"), Parsed::Malformed));
        assert!(matches!(parse(b"*0\r\n"), Parsed::Malformed));
        assert!(matches!(parse(b"*1\r\n$0\r\n\r\n"), Parsed::Malformed));
        assert!(matches!(parse(b"*1\r\n+x\r\n"), Parsed::Malformed));
        assert!(matches!(parse(b"*1\r\n$1\r\nab\r\n"), Parsed::Malformed));
        assert_eq!(
            command(b"*1\r\n$11\r\nhello\0world\r\n"),
            Some(vec!["hello\0world".into()])
        );
    }

    #[test]
    fn atoi_reads_like_c() {
        assert_eq!(atoi(b"12abc"), 12);
        assert_eq!(atoi(b" -5"), -5);
        assert_eq!(atoi(b"x"), 0);
        assert_eq!(atoi(b""), 0);
    }
}
