//! The TCP dialer the server hands its engine: how `MIGRATE` reaches its target
//! (pion-core opens no socket itself).

use std::io;
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use pion_core::server::outbound::{Dialer, Link};

/// Dials TCP, with Nagle's algorithm off (a `MIGRATE` is one write, then replies).
pub struct TcpDialer;

struct TcpLink(TcpStream);

impl io::Read for TcpLink {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read(buf)
    }
}

impl io::Write for TcpLink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

impl Link for TcpLink {
    fn set_timeout(&mut self, timeout: Duration) -> io::Result<()> {
        let t = Some(timeout.max(Duration::from_millis(1)));
        self.0.set_read_timeout(t)?;
        self.0.set_write_timeout(t)
    }
}

impl Dialer for TcpDialer {
    fn dial(&self, host: &str, port: u16, timeout: Duration) -> io::Result<Box<dyn Link>> {
        let timeout = timeout.max(Duration::from_millis(1));
        let mut last = io::Error::from(io::ErrorKind::AddrNotAvailable);
        for addr in (host, port).to_socket_addrs()? {
            match TcpStream::connect_timeout(&addr, timeout) {
                Ok(s) => {
                    s.set_nodelay(true)?;
                    return Ok(Box::new(TcpLink(s)));
                }
                Err(e) => last = e,
            }
        }
        Err(last)
    }
}
