//! The sockets the event loop serves: TCP, and a Unix-domain socket when `unixsocket`
//! is set (as redis-server does, for clients on the same machine that skip TCP). The
//! loop handles both the same way; only accepting and naming the peer differ.

use std::io::{self, Read, Write};

use mio::event::Source;
use mio::net::{TcpListener, TcpStream, UnixListener, UnixStream};
use mio::{Interest, Registry, Token};

/// A listening socket.
pub enum Listener {
    /// A TCP address of `bind`.
    Tcp(TcpListener),
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
    /// Accepts one connection.
    pub fn accept(&self) -> io::Result<Stream> {
        match self {
            Listener::Tcp(l) => {
                let (s, _) = l.accept()?;
                // Small replies go out at once; the loop batches writes itself.
                let _ = s.set_nodelay(true);
                Ok(Stream::Tcp(s))
            }
            Listener::Unix(l, path) => {
                let (s, _) = l.accept()?;
                Ok(Stream::Unix(s, path.clone()))
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
                Ok(s) => break s,
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
