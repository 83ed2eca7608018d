//! The sockets the event loop serves: TCP, and a Unix-domain socket when `unixsocket`
//! is set (as redis-server does, for clients on the same machine that skip TCP). The
//! loop handles both the same way; only accepting and naming the peer differ.

use std::io::{self, Read, Write};
use std::os::fd::OwnedFd;

use mio::event::Source;
use mio::net::{TcpListener, TcpStream, UnixListener, UnixStream};
use mio::{Interest, Registry, Token};

use crate::connection::Wire;

/// A listening socket.
pub enum Listener {
    /// A TCP address of `bind`, for RESP or the binary lane.
    Tcp(TcpListener, Wire),
    /// The `unixsocket` path.
    Unix(UnixListener, String),
}

/// One client connection.
pub enum Stream {
    /// Over TCP.
    Tcp(TcpStream),
    /// Over the Unix-domain socket whose path is kept (Redis names such peers
    /// `path:0`).
    Unix(UnixStream, String),
}

impl Listener {
    /// Accepts one connection, and says which protocol it speaks.
    pub fn accept(&self) -> io::Result<(Stream, Wire)> {
        match self {
            Listener::Tcp(l, wire) => {
                let (s, _) = l.accept()?;
                // Small replies go out at once; the loop batches writes itself.
                let _ = s.set_nodelay(true);
                Ok((Stream::Tcp(s), *wire))
            }
            Listener::Unix(l, path) => {
                let (s, _) = l.accept()?;
                Ok((Stream::Unix(s, path.clone()), Wire::Resp))
            }
        }
    }
}

/// Duplicates of the listening sockets, kept so that any thread can stop them
/// accepting at once. `SHUTDOWN` does so before its client's connection closes: a
/// client that saw the server go is refused from then on, as by redis-server, which
/// closes its listeners before it exits. (The event loop's own listeners close only
/// when its first worker leaves its loop, up to a tick later.)
pub struct ListenStop(Vec<OwnedFd>);

impl ListenStop {
    /// Duplicates `tcp` and `unix`.
    pub fn new(
        tcp: &[&std::net::TcpListener],
        unix: Option<&std::os::unix::net::UnixListener>,
    ) -> io::Result<ListenStop> {
        let mut fds = Vec::with_capacity(tcp.len() + 1);
        for l in tcp {
            fds.push(OwnedFd::from(l.try_clone()?));
        }
        if let Some(l) = unix {
            fds.push(OwnedFd::from(l.try_clone()?));
        }
        Ok(ListenStop(fds))
    }

    /// Ends listening on every socket: connecting is refused from now on, and the
    /// event loop's accept reports an error it ignores while stopping.
    pub fn stop(&self) {
        for fd in &self.0 {
            if let Ok(dup) = fd.try_clone() {
                // std offers shutdown(2) on streams only; on a listening socket it ends
                // listening (Linux: the socket leaves the LISTEN state). The stream
                // owns only this extra duplicate, which it closes when dropped.
                let _ = std::net::TcpStream::from(dup).shutdown(std::net::Shutdown::Both);
            }
        }
    }
}

impl Stream {
    /// The peer's address as CLIENT LIST shows it (`ip:port`, or `path:0`).
    pub fn peer_name(&self) -> String {
        match self {
            Stream::Tcp(s) => s.peer_addr().map(|a| a.to_string()).unwrap_or_default(),
            Stream::Unix(_, path) => format!("{path}:0"),
        }
    }

    /// The local address as CLIENT LIST shows it (`laddr`).
    pub fn local_name(&self) -> String {
        match self {
            Stream::Tcp(s) => s.local_addr().map(|a| a.to_string()).unwrap_or_default(),
            Stream::Unix(_, path) => format!("{path}:0"),
        }
    }

    /// The peer's IP address; `None` for a Unix-domain peer (always local).
    pub fn peer_ip(&self) -> Option<std::net::IpAddr> {
        match self {
            Stream::Tcp(s) => s.peer_addr().ok().map(|a| a.ip()),
            Stream::Unix(..) => None,
        }
    }

    /// Shuts both directions down (CLIENT KILL; the socket closes when dropped).
    pub fn shutdown(&self) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.shutdown(std::net::Shutdown::Both),
            Stream::Unix(s, _) => s.shutdown(std::net::Shutdown::Both),
        }
    }

    /// What opens the Lua debugger's line to this connection's client.
    pub fn debug_console_opener(&self) -> pion_core::scripting::debugger::ConsoleOpener {
        use std::os::fd::AsRawFd;
        match self {
            Stream::Tcp(s) => crate::debug_console::opener(s.as_raw_fd(), false),
            Stream::Unix(s, _) => crate::debug_console::opener(s.as_raw_fd(), true),
        }
    }

    /// The file descriptor (CLIENT LIST's `fd`).
    pub fn raw_fd(&self) -> i64 {
        use std::os::fd::AsRawFd;
        match self {
            Stream::Tcp(s) => i64::from(s.as_raw_fd()),
            Stream::Unix(s, _) => i64::from(s.as_raw_fd()),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.read(buf),
            Stream::Unix(s, _) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write(buf),
            Stream::Unix(s, _) => s.write(buf),
        }
    }

    fn write_vectored(&mut self, bufs: &[io::IoSlice<'_>]) -> io::Result<usize> {
        match self {
            Stream::Tcp(s) => s.write_vectored(bufs),
            Stream::Unix(s, _) => s.write_vectored(bufs),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Stream::Tcp(s) => s.flush(),
            Stream::Unix(s, _) => s.flush(),
        }
    }
}

/// Both enums register with mio through whichever socket they hold.
macro_rules! delegate_source {
    ($ty:ident, $($variant:ident),+) => {
        impl Source for $ty {
            fn register(&mut self, r: &Registry, t: Token, i: Interest) -> io::Result<()> {
                match self { $( $ty::$variant(s, ..) => s.register(r, t, i), )+ }
            }
            fn reregister(&mut self, r: &Registry, t: Token, i: Interest) -> io::Result<()> {
                match self { $( $ty::$variant(s, ..) => s.reregister(r, t, i), )+ }
            }
            fn deregister(&mut self, r: &Registry) -> io::Result<()> {
                match self { $( $ty::$variant(s, ..) => s.deregister(r), )+ }
            }
        }
    };
}
delegate_source!(Listener, Tcp, Unix);
delegate_source!(Stream, Tcp, Unix);

/// Binds the `unixsocket` path (a stale socket file left by a previous run is
/// replaced, as redis-server does) and applies `unixsocketperm` when it is not 0.
pub fn bind_unix(path: &str, perm: u32) -> io::Result<std::os::unix::net::UnixListener> {
    use std::os::unix::fs::PermissionsExt;
    let _ = std::fs::remove_file(path);
    let listener = std::os::unix::net::UnixListener::bind(path)?;
    if perm != 0 {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(perm))?;
    }
    Ok(listener)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stopped_listeners_refuse_connections_at_once() {
        let tcp = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = tcp.local_addr().expect("addr");
        let dir = std::env::temp_dir().join(format!("pion-listen-stop-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("s.sock");
        let unix = bind_unix(&path.to_string_lossy(), 0o700).expect("bind unix");
        let stop = ListenStop::new(&[&tcp], Some(&unix)).expect("dup");
        // Listening before: a connection is queued.
        drop(std::net::TcpStream::connect(addr).expect("connect before"));
        drop(std::os::unix::net::UnixStream::connect(&path).expect("connect before"));
        stop.stop();
        // The listeners themselves are still open here, yet nothing connects.
        let err = std::net::TcpStream::connect(addr).expect_err("refused");
        assert_eq!(err.kind(), io::ErrorKind::ConnectionRefused);
        let err = std::os::unix::net::UnixStream::connect(&path).expect_err("refused");
        assert_eq!(err.kind(), io::ErrorKind::ConnectionRefused);
        drop((tcp, unix));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn unix_socket_round_trip() {
        let dir = std::env::temp_dir().join(format!("pion-stream-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("s.sock");
        let path_text = path.to_string_lossy().into_owned();
        let std_listener = bind_unix(&path_text, 0o700).expect("bind");
        std_listener.set_nonblocking(true).expect("nonblocking");
        let listener = Listener::Unix(UnixListener::from_std(std_listener), path_text.clone());
        let mut client = std::os::unix::net::UnixStream::connect(&path).expect("connect");
        client.write_all(b"ping").expect("write");
        let mut stream = loop {
            match listener.accept() {
                Ok((s, wire)) => {
                    assert_eq!(wire, Wire::Resp);
                    break s;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::thread::yield_now(),
                Err(e) => panic!("accept: {e}"),
            }
        };
        assert_eq!(stream.peer_name(), format!("{path_text}:0"));
        assert_eq!(stream.peer_ip(), None);
        let mut buf = [0u8; 4];
        let mut got = 0;
        while got < 4 {
            match stream.read(&mut buf[got..]) {
                Ok(n) => got += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::thread::yield_now(),
                Err(e) => panic!("read: {e}"),
            }
        }
        assert_eq!(&buf, b"ping");
        let mode = std::fs::metadata(&path).expect("meta");
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(mode.permissions().mode() & 0o777, 0o700);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
