//! A small blocking RESP2 client for the comparison harnesses: binary-safe command
//! encoding, a reply parser and a connection that can keep many requests in flight
//! (write several frames, then read their replies in order).

use std::io::{self, BufRead, BufReader, BufWriter, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// One RESP2 reply.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `+OK`-style status line.
    Simple(Vec<u8>),
    /// `-ERR …` error line (the text after the `-`).
    Error(Vec<u8>),
    /// `:n` integer.
    Int(i64),
    /// `$n` bulk string.
    Bulk(Vec<u8>),
    /// `$-1` or `*-1`.
    Nil,
    /// `*n` array.
    Array(Vec<Value>),
}

impl Value {
    /// The reply as text: strings and integers as written, anything else empty.
    pub fn text(&self) -> String {
        match self {
            Value::Simple(b) | Value::Bulk(b) | Value::Error(b) => {
                String::from_utf8_lossy(b).into_owned()
            }
            Value::Int(i) => i.to_string(),
            Value::Nil | Value::Array(_) => String::new(),
        }
    }

    /// The error text when this is an error reply.
    pub fn error(&self) -> Option<String> {
        match self {
            Value::Error(e) => Some(String::from_utf8_lossy(e).into_owned()),
            _ => None,
        }
    }

    /// For a flat `[key, value, key, value, …]` array (as `FT.INFO` replies in RESP2),
    /// the value after `key`.
    pub fn field(&self, key: &str) -> Option<&Value> {
        let Value::Array(items) = self else {
            return None;
        };
        items
            .chunks_exact(2)
            .find(|kv| matches!(&kv[0], Value::Simple(k) | Value::Bulk(k) if k == key.as_bytes()))
            .map(|kv| &kv[1])
    }
}

/// Appends one command, as a RESP array of bulk strings, to `buf`.
pub fn encode(buf: &mut Vec<u8>, args: &[&[u8]]) {
    buf.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for a in args {
        buf.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        buf.extend_from_slice(a);
        buf.extend_from_slice(b"\r\n");
    }
}

/// A connection to one server on 127.0.0.1.
pub struct Conn {
    w: BufWriter<TcpStream>,
    r: BufReader<TcpStream>,
}

impl Conn {
    /// Connects with `TCP_NODELAY` and a read timeout (a stuck server fails the run
    /// instead of hanging it).
    pub fn connect(port: u16, timeout: Duration) -> io::Result<Conn> {
        let s = TcpStream::connect(("127.0.0.1", port))?;
        s.set_nodelay(true)?;
        s.set_read_timeout(Some(timeout))?;
        Ok(Conn {
            w: BufWriter::with_capacity(1 << 16, s.try_clone()?),
            r: BufReader::with_capacity(1 << 16, s),
        })
    }

    /// Buffers already-encoded frames (sent by [`Conn::flush`] or a full buffer).
    pub fn queue(&mut self, frames: &[u8]) -> io::Result<()> {
        self.w.write_all(frames)
    }

    /// Sends everything buffered.
    pub fn flush(&mut self) -> io::Result<()> {
        self.w.flush()
    }

    /// Writes already-encoded frames and flushes them.
    pub fn send(&mut self, frames: &[u8]) -> io::Result<()> {
        self.queue(frames)?;
        self.flush()
    }

    /// Sends one command and reads its reply.
    pub fn call(&mut self, args: &[&[u8]]) -> io::Result<Value> {
        let mut buf = Vec::new();
        encode(&mut buf, args);
        self.send(&buf)?;
        self.read()
    }

    /// [`Conn::call`] with text arguments.
    pub fn call_str(&mut self, args: &[&str]) -> io::Result<Value> {
        let a: Vec<&[u8]> = args.iter().map(|s| s.as_bytes()).collect();
        self.call(&a)
    }

    /// Reads the next reply.
    pub fn read(&mut self) -> io::Result<Value> {
        let mut line = Vec::with_capacity(32);
        self.r.read_until(b'\n', &mut line)?;
        if line.len() < 3 || !line.ends_with(b"\r\n") {
            return Err(bad("connection closed or short line"));
        }
        line.truncate(line.len() - 2);
        let body = line[1..].to_vec();
        let num = |b: &[u8]| -> io::Result<i64> {
            std::str::from_utf8(b)
                .ok()
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| bad("bad length or integer"))
        };
        Ok(match line[0] {
            b'+' => Value::Simple(body),
            b'-' => Value::Error(body),
            b':' => Value::Int(num(&body)?),
            b'$' => {
                let n = num(&body)?;
                if n < 0 {
                    return Ok(Value::Nil);
                }
                let mut data = vec![0u8; n as usize + 2];
                self.r.read_exact(&mut data)?;
                data.truncate(n as usize);
                Value::Bulk(data)
            }
            b'*' => {
                let n = num(&body)?;
                if n < 0 {
                    return Ok(Value::Nil);
                }
                let mut items = Vec::with_capacity(n as usize);
                for _ in 0..n {
                    items.push(self.read()?);
                }
                Value::Array(items)
            }
            _ => return Err(bad("unexpected reply type")),
        })
    }
}

fn bad(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_binary_arguments() {
        let mut b = Vec::new();
        encode(&mut b, &[b"SET", b"k", b"a\r\nb"]);
        assert_eq!(b, b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$4\r\na\r\nb\r\n");
    }

    #[test]
    fn finds_fields_of_flat_maps() {
        let v = Value::Array(vec![
            Value::Simple(b"num_docs".to_vec()),
            Value::Bulk(b"7".to_vec()),
            Value::Bulk(b"indexing".to_vec()),
            Value::Int(0),
        ]);
        assert_eq!(v.field("num_docs").map(Value::text), Some("7".into()));
        assert_eq!(v.field("indexing"), Some(&Value::Int(0)));
        assert_eq!(v.field("missing"), None);
    }
}
