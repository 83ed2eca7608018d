//! A client's script-debugging state: what `SCRIPT DEBUG` set for it and how the Lua
//! debugger ([`scripting::debugger`](crate::scripting::debugger)) reaches its
//! connection.

use std::io;
use std::time::Duration;

/// The debugging client's connection, as the debugger uses it.
pub trait Console: Send {
    /// Sends `bytes` whole (waiting while the socket is full, up to a few seconds).
    fn send(&mut self, bytes: &[u8]) -> io::Result<()>;
    /// Reads what the client sent into `buf`, waiting at most `wait`: `Some(0)` when
    /// the client is gone, `None` when nothing came.
    fn recv(&mut self, buf: &mut [u8], wait: Duration) -> io::Result<Option<usize>>;
}

/// Opens a client's connection for a debugging session.
pub type ConsoleOpener = Box<dyn Fn() -> io::Result<Box<dyn Console>> + Send>;

/// What `SCRIPT DEBUG` set for a client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DebugMode {
    /// Scripts run normally.
    #[default]
    Off,
    /// `YES`: the next `EVAL` is debugged and what it writes is rolled back.
    Forked,
    /// `SYNC`: the next `EVAL` is debugged and what it writes stays.
    Sync,
}
