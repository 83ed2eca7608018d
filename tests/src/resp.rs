//! A blocking RESP client for tests: sends commands as multibulk, reads one reply,
//! and keeps both the parsed tree and the exact bytes.

use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// A parsed reply.
#[derive(Debug, Clone, PartialEq)]
pub enum RespValue {
    /// `+`, `-`, `:`, `,`, `#`, `(`, `_` lines: the type byte and the line.
    Line(u8, Vec<u8>),
    /// `$` or `=` with payload; `None` for `$-1`.
    Bulk(u8, Option<Vec<u8>>),
    /// `*`, `~`, `%`, `>` aggregates; `None` for `*-1`. Maps hold keys and values flat.
    Agg(u8, Option<Vec<RespValue>>),
}

impl RespValue {
    /// Whether this is an error reply.
    pub fn is_error(&self) -> bool {
        matches!(self, RespValue::Line(b'-', _))
    }

    /// The reply rendered as readable text (for failure messages).
    pub fn render(&self) -> String {
        match self {
            RespValue::Line(t, l) => format!("{}{}", *t as char, String::from_utf8_lossy(l)),
            RespValue::Bulk(_, None) => "(nil)".into(),
            RespValue::Bulk(_, Some(b)) => format!("{:?}", String::from_utf8_lossy(b)),
            RespValue::Agg(_, None) => "(nil array)".into(),
            RespValue::Agg(t, Some(items)) => {
                let inner: Vec<String> = items.iter().map(RespValue::render).collect();
                format!("{}[{}]", *t as char, inner.join(", "))
            }
        }
    }

    /// Items of an aggregate, sorted by their rendering (map entries kept as pairs), for
    /// order-insensitive comparison.
    pub fn normalized(&self) -> RespValue {
        match self {
            RespValue::Agg(b'%', Some(items)) => {
                let mut pairs: Vec<(String, RespValue, RespValue)> = items
                    .chunks(2)
                    .map(|c| {
                        (
                            c[0].render() + &c.get(1).map(RespValue::render).unwrap_or_default(),
                            c[0].clone(),
                            c.get(1).cloned().unwrap_or(RespValue::Line(b'_', vec![])),
                        )
                    })
                    .collect();
                pairs.sort_by(|a, b| a.0.cmp(&b.0));
                RespValue::Agg(
                    b'%',
                    Some(pairs.into_iter().flat_map(|(_, k, v)| [k, v]).collect()),
                )
            }
            RespValue::Agg(t, Some(items)) => {
                let mut v: Vec<RespValue> = items.clone();
                v.sort_by_key(|a| a.render());
                RespValue::Agg(*t, Some(v))
            }
            other => other.clone(),
        }
    }

    /// The reply with every value that follows a key ending in `time` (any case)
    /// replaced by a placeholder: `FT.PROFILE`'s timings, which no two runs share.
    pub fn untimed(&self) -> RespValue {
        let RespValue::Agg(t, Some(items)) = self else {
            return self.clone();
        };
        let mut out = Vec::with_capacity(items.len());
        let mut after_time = false;
        for item in items {
            let timing = matches!(item, RespValue::Line(..) | RespValue::Bulk(..));
            out.push(if after_time && timing {
                RespValue::Line(b'+', b"<time>".to_vec())
            } else {
                item.untimed()
            });
            after_time = match item {
                RespValue::Line(b'+', k) | RespValue::Bulk(_, Some(k)) => {
                    k.to_ascii_lowercase().ends_with(b"time")
                }
                _ => false,
            };
        }
        RespValue::Agg(*t, Some(out))
    }

    /// Type byte and element count (the `!shape` comparison).
    pub fn shape(&self) -> (u8, Option<usize>) {
        match self {
            RespValue::Line(t, _) => (*t, None),
            RespValue::Bulk(t, b) => (*t, b.as_ref().map(|_| 1)),
            RespValue::Agg(t, items) => (*t, items.as_ref().map(Vec::len)),
        }
    }
}

/// A blocking test client.
pub struct Client {
    stream: TcpStream,
    buf: Vec<u8>,
}

fn bad(msg: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.to_string())
}

impl Client {
    /// Connects to `127.0.0.1:port`.
    pub fn connect(port: u16) -> io::Result<Client> {
        let stream = TcpStream::connect(("127.0.0.1", port))?;
        stream.set_read_timeout(Some(Duration::from_secs(20)))?;
        stream.set_nodelay(true)?;
        Ok(Client {
            stream,
            buf: Vec::new(),
        })
    }

    /// Encodes a command as a multibulk request.
    pub fn encode<A: AsRef<[u8]>>(args: &[A]) -> Vec<u8> {
        let mut out = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            let a = a.as_ref();
            out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            out.extend_from_slice(a);
            out.extend_from_slice(b"\r\n");
        }
        out
    }

    /// Changes how long a read waits before failing (20 s by default).
    pub fn set_read_timeout(&self, timeout: Duration) -> io::Result<()> {
        self.stream.set_read_timeout(Some(timeout))
    }

    /// Sends raw bytes.
    pub fn send_raw(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.stream.write_all(bytes)
    }

    /// Sends a command and reads its reply (parsed, plus the exact bytes).
    pub fn call<A: AsRef<[u8]>>(&mut self, args: &[A]) -> io::Result<(RespValue, Vec<u8>)> {
        self.send_raw(&Client::encode(args))?;
        self.read_reply()
    }

    /// Sends a command and returns only the parsed reply.
    pub fn cmd<A: AsRef<[u8]>>(&mut self, args: &[A]) -> RespValue {
        match self.call(args) {
            Ok((v, _)) => v,
            Err(e) => RespValue::Line(b'!', format!("io error: {e}").into_bytes()),
        }
    }

    /// Reads one reply.
    pub fn read_reply(&mut self) -> io::Result<(RespValue, Vec<u8>)> {
        loop {
            if let Some((v, used)) = parse(&self.buf)? {
                let raw: Vec<u8> = self.buf.drain(..used).collect();
                return Ok((v, raw));
            }
            let mut chunk = [0u8; 65536];
            let n = self.stream.read(&mut chunk)?;
            if n == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "connection closed",
                ));
            }
            self.buf.extend_from_slice(&chunk[..n]);
        }
    }
}

fn line(buf: &[u8], from: usize) -> Option<(&[u8], usize)> {
    let pos = buf[from..].windows(2).position(|w| w == b"\r\n")?;
    Some((&buf[from..from + pos], from + pos + 2))
}

/// Parses one reply from the start of `buf`: `Ok(None)` if incomplete.
pub fn parse(buf: &[u8]) -> io::Result<Option<(RespValue, usize)>> {
    parse_at(buf, 0)
}

fn parse_at(buf: &[u8], at: usize) -> io::Result<Option<(RespValue, usize)>> {
    let Some(&t) = buf.get(at) else {
        return Ok(None);
    };
    let Some((text, next)) = line(buf, at + 1) else {
        return Ok(None);
    };
    let num = || -> io::Result<i64> {
        std::str::from_utf8(text)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| bad("bad length"))
    };
    match t {
        b'+' | b'-' | b':' | b',' | b'#' | b'(' | b'_' => {
            Ok(Some((RespValue::Line(t, text.to_vec()), next)))
        }
        b'$' | b'=' | b'!' => {
            let n = num()?;
            if n < 0 {
                return Ok(Some((RespValue::Bulk(t, None), next)));
            }
            let end = next + n as usize;
            if buf.len() < end + 2 {
                return Ok(None);
            }
            Ok(Some((
                RespValue::Bulk(t, Some(buf[next..end].to_vec())),
                end + 2,
            )))
        }
        b'*' | b'~' | b'%' | b'>' | b'|' => {
            let n = num()?;
            if n < 0 {
                return Ok(Some((RespValue::Agg(t, None), next)));
            }
            let count = if t == b'%' || t == b'|' { n * 2 } else { n } as usize;
            let mut items = Vec::with_capacity(count);
            let mut pos = next;
            for _ in 0..count {
                match parse_at(buf, pos)? {
                    Some((v, p)) => {
                        items.push(v);
                        pos = p;
                    }
                    None => return Ok(None),
                }
            }
            Ok(Some((RespValue::Agg(t, Some(items)), pos)))
        }
        other => Err(bad(&format!("unknown reply type byte {other}"))),
    }
}
