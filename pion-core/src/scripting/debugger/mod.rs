//! The Lua debugger (`SCRIPT DEBUG YES|SYNC`, Redis's "ldb", what `redis-cli --ldb`
//! drives): a client that turned it on has its next `EVAL` run step by step, the
//! server talking with it directly over its connection while the script is stopped.
//!
//! The protocol is Redis's: at each stop the server sends an array of status lines
//! (`* Stopped at 3, stop reason = step over`, the source line, logged commands and
//! replies), and reads one command (`step`, `continue`, `list`, `print`, `break`,
//! `eval`, `redis`, `trace`, `maxlen`, `abort`, `help`). When the script ends the
//! server sends the remaining lines and `<endsession>`, then the script's reply, and
//! closes the connection.
//!
//! The server reaches the connection through a [`Console`] that the network layer
//! lends the client (an embedded caller has none, and cannot debug). Pion does not
//! fork: in both modes the script runs in the server, which waits meanwhile (other
//! clients get `-BUSY` past `busy-reply-threshold`, and `SCRIPT KILL` stops the
//! session). `YES` rolls back what the script wrote when the session ends, as Redis's
//! forked session leaves the dataset untouched; `SYNC` keeps it.

mod frames;
pub mod render;
mod repl;

use std::sync::Arc;
use std::time::{Duration, Instant};

use mlua::{Lua, MultiValue};
use parking_lot::Mutex;

use super::sandbox::HookState;
use crate::reply::Reply;

pub use crate::clients::script_debug::{Console, ConsoleOpener, DebugMode};

/// Most breakpoints a session keeps.
const MAX_BREAKPOINTS: usize = 64;
/// Default length past which logged replies and values are cut (`maxlen`).
const DEFAULT_MAXLEN: usize = 256;

/// One debugging session: what the client sees and has set.
pub(crate) struct Session {
    console: Box<dyn Console>,
    /// The script's source lines (1-based in what the client sees).
    lines: Vec<Vec<u8>>,
    breakpoints: Vec<i64>,
    /// Stop at the next line (and log the commands the script runs meanwhile).
    step: bool,
    /// `redis.breakpoint()` asked to stop at the next line.
    lua_breakpoint: bool,
    /// Cut logged replies and values past this many bytes (0: never).
    maxlen: usize,
    maxlen_hint_sent: bool,
    /// Lines not sent yet.
    logs: Vec<Vec<u8>>,
    /// Bytes of the client's next command.
    input: Vec<u8>,
    current_line: i64,
    /// When the script last resumed (the infinite-loop guard counts from here).
    resumed: Instant,
    /// How long the script may run between two stops before it is stopped as a
    /// probable infinite loop.
    loop_limit: Duration,
    /// A forked session's record of what to restore at its end.
    undo: Option<Undo>,
}

/// What a forked session (`SCRIPT DEBUG YES`) restores when it ends: each key the
/// script wrote, as it was before the script first wrote it (`None`: absent).
#[derive(Default)]
pub(crate) struct Undo {
    saved: Vec<(usize, Vec<u8>, Option<crate::keyspace::DetachedEntry>)>,
}

impl Session {
    fn new(
        console: Box<dyn Console>,
        source: &[u8],
        loop_limit: Duration,
        undo: Option<Undo>,
    ) -> Session {
        let mut end = source.len();
        while end > 0 && matches!(source[end - 1], b'\n' | b'\r') {
            end -= 1;
        }
        Session {
            console,
            lines: source[..end]
                .split(|&b| b == b'\n')
                .map(<[u8]>::to_vec)
                .collect(),
            breakpoints: Vec::new(),
            step: true,
            lua_breakpoint: false,
            maxlen: DEFAULT_MAXLEN,
            maxlen_hint_sent: false,
            logs: Vec::new(),
            input: Vec::new(),
            current_line: 0,
            resumed: Instant::now(),
            loop_limit,
            undo,
        }
    }

    /// Queues one line for the client.
    fn log(&mut self, line: impl Into<Vec<u8>>) {
        self.logs.push(line.into());
    }

    /// Queues a line that may be long (a reply, a value): cut at `maxlen`, with a hint
    /// the first time.
    fn log_long(&mut self, line: impl Into<Vec<u8>>) {
        let mut line = line.into();
        let cut = self.maxlen > 0 && line.len() > self.maxlen;
        if cut {
            line.truncate(self.maxlen);
            line.extend_from_slice(b" ...");
        }
        self.log(line);
        if cut && !self.maxlen_hint_sent {
            self.maxlen_hint_sent = true;
            self.log("<hint> The above reply was trimmed. Use 'maxlen 0' to disable trimming.");
        }
    }

    /// Sends the queued lines as one array of status replies (line breaks inside a
    /// line become spaces). A failed write is left for the next read to notice.
    fn send_logs(&mut self) {
        let mut out = format!("*{}\r\n", self.logs.len()).into_bytes();
        for line in self.logs.drain(..) {
            out.push(b'+');
            out.extend(
                line.iter()
                    .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b }),
            );
            out.extend_from_slice(b"\r\n");
        }
        let _ = self.console.send(&out);
    }

    /// The source line `n` (1-based), or Redis's marker when out of range.
    fn source_line(&self, n: i64) -> &[u8] {
        usize::try_from(n - 1)
            .ok()
            .and_then(|i| self.lines.get(i))
            .map_or(b"<out of range source code line>", Vec::as_slice)
    }

    /// Queues source line `n` with its markers (`->` current, `#` breakpoint).
    fn log_source_line(&mut self, n: i64) {
        let prefix = match (self.current_line == n, self.breakpoints.contains(&n)) {
            (true, true) => "->#",
            (true, false) => "-> ",
            (false, true) => "  #",
            (false, false) => "   ",
        };
        let mut line = format!("{prefix}{n:<3} ").into_bytes();
        line.extend_from_slice(self.source_line(n));
        self.log(line);
    }
}

/// The running session, kept in the Lua state's app data while a debugged script runs
/// (the line hook, `redis.call` and `redis.debug` find it there).
#[derive(Clone)]
pub(crate) struct Active(Arc<Mutex<Session>>);

/// Runs `body` (the script) as a debugging session over `console`: the client sees
/// the first line before anything runs, and `<endsession>` after the last. Returns
/// what `body` returned, and for a `forked` session what to restore ([`undo`]).
/// `hook` is the state's normal hook, which the session's hook also serves (kill
/// requests, the busy pump) and which is put back afterwards.
pub(crate) fn run_session<R>(
    lua: &Lua,
    hook: &Arc<HookState>,
    console: Box<dyn Console>,
    source: &[u8],
    busy_threshold_ms: u64,
    forked: bool,
    body: impl FnOnce() -> R,
) -> (R, Option<Undo>) {
    // Redis stops a script that runs this long without a stop, as a likely loop.
    let limit_ms = if busy_threshold_ms > 0 {
        busy_threshold_ms
    } else {
        5000
    };
    let active = Active(Arc::new(Mutex::new(Session::new(
        console,
        source,
        Duration::from_millis(limit_ms),
        forked.then(Undo::default),
    ))));
    lua.set_app_data(active.clone());
    repl::install_hook(lua, Arc::clone(hook), active.clone());
    let result = body();
    super::sandbox::install_hook(lua, Arc::clone(hook));
    lua.remove_app_data::<Active>();
    let mut s = active.0.lock();
    s.log("<endsession>");
    s.send_logs();
    (result, s.undo.take())
}

/// Before a script's write command runs in a forked session: saves how its keys are
/// now (`peek` reads a key's entry), so the session's end can put them back. A
/// command whose effect cannot be undone key by key (`undoable` false: a flush,
/// `SWAPDB`, `MOVE`, `COPY`, search indexes, the prompt cache) is refused with the
/// error text returned.
pub(crate) fn before_write(
    lua: &Lua,
    db: usize,
    undoable: bool,
    keys: &[&[u8]],
    peek: &mut dyn FnMut(&[u8]) -> Option<crate::keyspace::DetachedEntry>,
) -> Result<(), &'static str> {
    let Some(active) = lua.app_data_ref::<Active>().map(|a| a.clone()) else {
        return Ok(());
    };
    let mut s = active.0.lock();
    let Some(undo) = s.undo.as_mut() else {
        return Ok(());
    };
    if !undoable {
        return Err("ERR This command cannot be rolled back at the end of a SCRIPT DEBUG YES session; use SCRIPT DEBUG SYNC");
    }
    for &key in keys {
        if undo.saved.iter().any(|(d, k, _)| *d == db && k == key) {
            continue;
        }
        let before = peek(key);
        undo.saved.push((db, key.to_vec(), before));
    }
    Ok(())
}

impl Undo {
    /// What a forked session's end puts back: each key the script wrote, with its
    /// entry before (`None`: it did not exist).
    pub(crate) fn into_saved(
        self,
    ) -> Vec<(usize, Vec<u8>, Option<crate::keyspace::DetachedEntry>)> {
        self.saved
    }
}

/// The session, when one runs and is stepping: the commands a script runs are then
/// logged with their replies.
fn stepping(lua: &Lua) -> Option<Active> {
    let active = lua.app_data_ref::<Active>()?.clone();
    let step = active.0.lock().step;
    step.then_some(active)
}

/// Logs a command a script is about to run (`<redis> SET k v`, at most ten
/// arguments shown).
pub(crate) fn log_command(lua: &Lua, argv: &[Vec<u8>]) {
    let Some(active) = stepping(lua) else { return };
    let mut line = b"<redis>".to_vec();
    for (i, a) in argv.iter().enumerate() {
        if i == 10 {
            line.extend(format!(" ... ({} more)", argv.len() - i - 1).bytes());
            break;
        }
        line.push(b' ');
        line.extend_from_slice(a);
    }
    active.0.lock().log(line);
}

/// Logs the reply a script got (`<reply> "+OK"`), in the protocol it asked for.
pub(crate) fn log_reply(lua: &Lua, reply: &Reply, resp: u8) {
    let Some(active) = stepping(lua) else { return };
    let mut line = String::from("<reply> ");
    render::reply(&mut line, reply, resp);
    active.0.lock().log_long(line);
}

/// Logs an error a script's command raised (`<error> …`).
pub(crate) fn log_error(lua: &Lua, text: &str) {
    let Some(active) = stepping(lua) else { return };
    active.0.lock().log(format!("<error> {text}"));
}

/// `redis.breakpoint()`: stop at the next line; false when no session runs.
pub(crate) fn breakpoint(lua: &Lua) -> bool {
    match lua.app_data_ref::<Active>() {
        Some(active) => {
            active.0.lock().lua_breakpoint = true;
            true
        }
        None => false,
    }
}

/// `redis.debug(…)`: logs its arguments (`<debug> line 3: "a", 1`); nothing when no
/// session runs.
pub(crate) fn debug_log(lua: &Lua, args: MultiValue) {
    let Some(active) = lua.app_data_ref::<Active>().map(|a| a.clone()) else {
        return;
    };
    let mut s = active.0.lock();
    let mut line = format!("<debug> line {}: ", s.current_line);
    for (i, v) in args.iter().enumerate() {
        if i > 0 {
            line.push_str(", ");
        }
        render::lua_value(&mut line, v);
    }
    s.log(line);
}
