//! The Lua debugger's line to its client: while a script is stopped, the debugger
//! (in `pion-core`) sends the client its lines and reads its commands directly, as
//! Redis's debugger does, not through the event loop, which waits for the command
//! that runs the script. The console works on a duplicate of the connection's socket
//! with a poller of its own, so the event loop's registration is left alone.

use std::io::{self, Read, Write};
use std::os::fd::{BorrowedFd, RawFd};
use std::time::{Duration, Instant};

use mio::net::{TcpStream, UnixStream};
use mio::{Events, Interest, Poll, Token};
use pion_core::scripting::debugger::{Console, ConsoleOpener};

/// How long a write may wait for the client to read (Redis's debugger allows 5 s).
const SEND_TIMEOUT: Duration = Duration::from_secs(5);

enum Socket {
    Tcp(TcpStream),
    Unix(UnixStream),
}

/// A debugging client's connection.
struct SocketConsole {
    socket: Socket,
    poll: Poll,
    events: Events,
}

/// The opener the client of the connection on `fd` gets: a console on a duplicate of
/// that socket (`unix`: a Unix-domain socket).
pub fn opener(fd: RawFd, unix: bool) -> ConsoleOpener {
    Box::new(move || {
        // SAFETY: `fd` is the socket of the connection whose client calls this, from a
        // command of that connection: the event loop keeps the socket open until the
        // connection (and with it the client and this opener) is gone.
        let borrowed = unsafe { BorrowedFd::borrow_raw(fd) };
        let owned = borrowed.try_clone_to_owned()?;
        let mut socket = if unix {
            Socket::Unix(UnixStream::from_std(owned.into()))
        } else {
            Socket::Tcp(TcpStream::from_std(owned.into()))
        };
        let poll = Poll::new()?;
        let interest = Interest::READABLE | Interest::WRITABLE;
        match &mut socket {
            Socket::Tcp(s) => poll.registry().register(s, Token(0), interest)?,
            Socket::Unix(s) => poll.registry().register(s, Token(0), interest)?,
        }
        Ok(Box::new(SocketConsole {
            socket,
            poll,
            events: Events::with_capacity(4),
        }) as Box<dyn Console>)
    })
}

impl SocketConsole {
    fn wait(&mut self, timeout: Duration) -> io::Result<()> {
        match self.poll.poll(&mut self.events, Some(timeout)) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(()),
            other => other,
        }
    }

    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match &mut self.socket {
            Socket::Tcp(s) => s.read(buf),
            Socket::Unix(s) => s.read(buf),
        }
    }

    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.socket {
            Socket::Tcp(s) => s.write(buf),
            Socket::Unix(s) => s.write(buf),
        }
    }
}

impl Console for SocketConsole {
    fn send(&mut self, mut bytes: &[u8]) -> io::Result<()> {
        let deadline = Instant::now() + SEND_TIMEOUT;
        while !bytes.is_empty() {
            match self.write(bytes) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => bytes = &bytes[n..],
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        return Err(io::ErrorKind::TimedOut.into());
                    }
                    self.wait(left)?;
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }

    fn recv(&mut self, buf: &mut [u8], wait: Duration) -> io::Result<Option<usize>> {
        for attempt in 0..2 {
            match self.read(buf) {
                Ok(n) => return Ok(Some(n)),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    if attempt == 0 {
                        self.wait(wait)?;
                    }
                }
                Err(e) => return Err(e),
            }
        }
        Ok(None)
    }
}
