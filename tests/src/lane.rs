//! Helpers for tests of the binary lane (port + 1): a lane connection that speaks its
//! frames, a server started with its lane on a known port, and the error texts of
//! replies on either side.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use pion_server::binary::codec::{self, encode_request, Request, HEADER_LEN};

use crate::process::{temp_dir, PionProcess, TempDir};
use crate::RespValue;

/// A client connection to a server's binary lane.
pub struct Lane(pub TcpStream);

impl Lane {
    /// Connects to the lane on `port`.
    pub fn connect(port: u16) -> Lane {
        let s = TcpStream::connect(("127.0.0.1", port)).expect("connect to the binary lane");
        s.set_read_timeout(Some(Duration::from_secs(20)))
            .expect("timeout");
        Lane(s)
    }

    /// Sends bytes as they are.
    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.0.write_all(bytes).expect("send");
    }

    /// Reads one reply frame: its opcode and body.
    pub fn reply(&mut self) -> (u8, Vec<u8>) {
        let mut h = [0u8; HEADER_LEN];
        self.0.read_exact(&mut h).expect("reply header");
        let hd = codec::parse_header(&h).expect("reply magic");
        let mut body = vec![0u8; hd.len as usize];
        self.0.read_exact(&mut body).expect("reply body");
        (hd.opcode, body)
    }

    /// Sends a request and reads its reply.
    pub fn call(&mut self, req: &Request) -> (u8, Vec<u8>) {
        self.send_raw(&encode_request(req));
        self.reply()
    }
}

/// A pion-server with its binary lane on a free port: (its directory, the server, the
/// lane's port).
pub fn start(extra: &[&str]) -> (TempDir, PionProcess, u16) {
    let dir = temp_dir("binary-lane");
    let mut last = String::new();
    // A lane port another test took between choosing and binding it is chosen again
    // (the server's own port is retried by `PionProcess`).
    for _ in 0..5 {
        let lane_port = crate::free_port();
        let port_arg = lane_port.to_string();
        let mut args = vec!["--kvcache-port", port_arg.as_str()];
        args.extend_from_slice(extra);
        match PionProcess::try_start(dir.path(), &args) {
            Ok(server) => return (dir, server, lane_port),
            Err(e) if e.contains("Cannot serve the binary lane") => last = e,
            Err(e) => panic!("pion-server on {} did not start: {e}", dir.path().display()),
        }
    }
    panic!(
        "pion-server on {} did not start: {last}",
        dir.path().display()
    )
}

/// The error text of a lane reply, or `None` for a success.
pub fn lane_error((opc, body): &(u8, Vec<u8>)) -> Option<String> {
    (*opc == codec::ERROR).then(|| String::from_utf8_lossy(body).into_owned())
}

/// The error text of a RESP reply, or `None` for a success.
pub fn resp_error(v: &RespValue) -> Option<String> {
    match v {
        RespValue::Line(b'-', text) => Some(String::from_utf8_lossy(text).into_owned()),
        _ => None,
    }
}
