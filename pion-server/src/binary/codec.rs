//! The binary lane's frames (port + 1): bulk K/V without RESP's text framing. Every
//! frame, both ways:
//!
//! ```text
//! frame = magic:u16 (0xCA5E, little-endian: bytes 5E CA) opcode:u8 length:u32 body[length]
//! ```
//!
//! Requests (integers little-endian; `ns` = namespace as len:u16 + UTF-8 bytes; ids are
//! 16-byte little-endian u128 block ids, 0 = root):
//!
//! | op | name | body |
//! |---|---|---|
//! | 0x01 | PING | anything (echoed) |
//! | 0x02 | AUTH | password, or `user\0password` |
//! | 0x10 | MATCH | ns, tokens: u32* |
//! | 0x11 | PUT | ns, parent:id, count:u32, tokens:u32*count, layers:u32, (len:u64 data)*layers |
//! | 0x12 | FETCH | ns, id, nlayers:u32 (0: all), layer:u32*nlayers |
//! | 0x13 | BATCH FETCH | ns, count:u32, id*count, nlayers:u32 (0: all), layer:u32*nlayers |
//! | 0x14 | ATTEND | ns, view (len:u16 bytes), positions:u32, scale:f32 (NaN: 1/sqrt(head_dim)), budget:u32 (0: dense), nlayers:u32, (layer:u32 count:u32 f32*count)*nlayers |
//!
//! Replies carry the request's opcode with the high bit set (0x81, 0x82, 0x90 …), or
//! 0xFF with a UTF-8 error message (Redis's wording where Redis has one):
//!
//! | reply | body |
//! |---|---|
//! | 0x81 PING | the request's body |
//! | 0x82 AUTH | empty |
//! | 0x90 MATCH | tokens:u64, count:u32, id*count |
//! | 0x91 PUT | id (computed by the server: the same as the client's) |
//! | 0x92 FETCH | block |
//! | 0x93 BATCH FETCH | count:u32, block*count |
//! | 0x94 ATTEND | nlayers:u32, (rows:u32 head_dim:u32 tokens:u64 blocks:u64 f32*(rows*head_dim) f32*rows)*nlayers |
//!
//! `block = tokens:u32 layers:u32 (present:u8 [len:u64 data])*layers`.

use pion_core::Bytes;

/// The two magic bytes that start every frame.
pub const MAGIC: [u8; 2] = [0x5E, 0xCA];
/// Bytes of a frame header.
pub const HEADER_LEN: usize = 7;
/// Reply opcode of an error.
pub const ERROR: u8 = 0xFF;

/// Request opcodes.
pub mod op {
    /// Liveness check.
    pub const PING: u8 = 0x01;
    /// Authenticate (when the server has a password).
    pub const AUTH: u8 = 0x02;
    /// Longest stored prefix of a token sequence.
    pub const MATCH: u8 = 0x10;
    /// Store one block.
    pub const PUT: u8 = 0x11;
    /// Fetch one block.
    pub const FETCH: u8 = 0x12;
    /// Fetch several blocks.
    pub const BATCH_FETCH: u8 = 0x13;
    /// Attend query heads over a view of a stored prefix (`ATTEND.QUERY`).
    pub const ATTEND: u8 = 0x14;
}

/// A decoded request.
#[derive(Debug, Clone, PartialEq)]
pub enum Request {
    /// `PING`, with the body to echo.
    Ping(Vec<u8>),
    /// `AUTH`: user (if given) and password.
    Auth(Option<Vec<u8>>, Vec<u8>),
    /// `MATCH`.
    Match {
        /// Namespace.
        ns: String,
        /// Token ids.
        tokens: Vec<u32>,
    },
    /// `PUT`.
    Put {
        /// Namespace.
        ns: String,
        /// Parent block id (0: root).
        parent: u128,
        /// The block's token ids.
        tokens: Vec<u32>,
        /// Each layer's bytes, copied once out of the frame into the buffer the
        /// store keeps.
        layers: Vec<Bytes>,
    },
    /// `FETCH` / `BATCH FETCH`.
    Fetch {
        /// Namespace.
        ns: String,
        /// Block ids.
        ids: Vec<u128>,
        /// Layers wanted (`None`: all).
        layers: Option<Vec<usize>>,
        /// Sent as a batch (reply 0x93) or a single fetch (0x92).
        batch: bool,
    },
    /// `ATTEND`.
    Attend(Attend),
}

/// One layer's queries in an `ATTEND` request.
#[derive(Debug, Clone, PartialEq)]
pub struct LayerQueries {
    /// The layer.
    pub layer: u32,
    /// Its post-RoPE queries, `[positions, q_heads, head_dim]`.
    pub queries: Vec<f32>,
}

/// An `ATTEND` request.
#[derive(Debug, Clone, PartialEq)]
pub struct Attend {
    /// Namespace.
    pub ns: String,
    /// The view's name.
    pub view: Vec<u8>,
    /// Positions per layer's queries.
    pub positions: u32,
    /// Softmax scale (`None`: the server's default).
    pub scale: Option<f32>,
    /// Sparse token budget (`None`: dense).
    pub budget: Option<u32>,
    /// Each layer's queries.
    pub layers: Vec<LayerQueries>,
}

/// A frame header: opcode and body length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Opcode.
    pub opcode: u8,
    /// Body length.
    pub len: u32,
}

/// Reads a frame header. Errors on a wrong magic.
pub fn parse_header(h: &[u8; HEADER_LEN]) -> Result<Header, String> {
    if h[..2] != MAGIC {
        return Err(format!(
            "ERR Protocol error: expected the binary-lane magic 0xCA5E, got 0x{:02X}{:02X}",
            h[1], h[0]
        ));
    }
    Ok(Header {
        opcode: h[2],
        len: u32::from_le_bytes([h[3], h[4], h[5], h[6]]),
    })
}

/// A frame header for a reply.
pub fn header(opcode: u8, len: usize) -> [u8; HEADER_LEN] {
    let l = (len as u32).to_le_bytes();
    [MAGIC[0], MAGIC[1], opcode, l[0], l[1], l[2], l[3]]
}

struct Body<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Body<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if self.b.len() - self.at < n {
            return Err("ERR Protocol error: binary-lane body is truncated".into());
        }
        let out = &self.b[self.at..self.at + n];
        self.at += n;
        Ok(out)
    }

    fn u16(&mut self) -> Result<u16, String> {
        let b = self.take(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    fn u32(&mut self) -> Result<u32, String> {
        let b = self.take(4)?;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self) -> Result<u64, String> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.take(8)?);
        Ok(u64::from_le_bytes(a))
    }

    fn id(&mut self) -> Result<u128, String> {
        let mut a = [0u8; 16];
        a.copy_from_slice(self.take(16)?);
        Ok(u128::from_le_bytes(a))
    }

    fn ns(&mut self) -> Result<String, String> {
        let n = self.u16()? as usize;
        String::from_utf8(self.take(n)?.to_vec())
            .map_err(|_| "ERR namespace names must be UTF-8".to_string())
    }

    /// A count whose items need at least `min` bytes each (so a bad count cannot make
    /// the server reserve more than the frame holds).
    fn count(&mut self, min: usize) -> Result<usize, String> {
        let n = self.u32()? as usize;
        if n.saturating_mul(min.max(1)) > self.b.len() - self.at {
            return Err("ERR Protocol error: binary-lane count larger than the body".into());
        }
        Ok(n)
    }

    fn tokens(&mut self, n: usize) -> Result<Vec<u32>, String> {
        let raw = self.take(n.checked_mul(4).ok_or("ERR too many tokens")?)?;
        Ok(raw
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect())
    }

    fn layers(&mut self) -> Result<Option<Vec<usize>>, String> {
        let n = self.count(4)?;
        if n == 0 {
            return Ok(None);
        }
        (0..n)
            .map(|_| self.u32().map(|l| l as usize))
            .collect::<Result<Vec<_>, _>>()
            .map(Some)
    }

    fn done(&self) -> Result<(), String> {
        if self.at == self.b.len() {
            Ok(())
        } else {
            Err("ERR Protocol error: bytes after the end of a binary-lane request".into())
        }
    }
}

/// Decodes a request body. Never panics; every malformed body is an error message.
pub fn parse_request(opcode: u8, body: &[u8]) -> Result<Request, String> {
    parse_request_in(opcode, body, None)
}

/// Decodes a request body that lies in `shared` when given (its bytes are `body`): a
/// `PUT`'s layers are then views of it, not copies.
pub fn parse_request_in(
    opcode: u8,
    body: &[u8],
    shared: Option<&Bytes>,
) -> Result<Request, String> {
    let mut b = Body { b: body, at: 0 };
    let req = match opcode {
        op::PING => return Ok(Request::Ping(body.to_vec())),
        op::AUTH => {
            return Ok(match body.iter().position(|&c| c == 0) {
                Some(i) => Request::Auth(Some(body[..i].to_vec()), body[i + 1..].to_vec()),
                None => Request::Auth(None, body.to_vec()),
            })
        }
        op::MATCH => {
            let ns = b.ns()?;
            let rest = body.len() - b.at;
            if !rest.is_multiple_of(4) {
                return Err("ERR tokens must be little-endian u32 values".into());
            }
            let tokens = b.tokens(rest / 4)?;
            Request::Match { ns, tokens }
        }
        op::PUT => {
            let ns = b.ns()?;
            let parent = b.id()?;
            let n = b.count(4)?;
            let tokens = b.tokens(n)?;
            let nl = b.count(8)?;
            let mut layers = Vec::with_capacity(nl);
            for _ in 0..nl {
                let len = usize::try_from(b.u64()?).map_err(|_| "ERR layer too large")?;
                let data = b.take(len)?;
                layers.push(match shared {
                    Some(whole) => whole.slice_ref(data),
                    None => pion_core::util::shared_copy::shared_copy(data),
                });
            }
            Request::Put {
                ns,
                parent,
                tokens,
                layers,
            }
        }
        op::FETCH => {
            let ns = b.ns()?;
            let id = b.id()?;
            let layers = b.layers()?;
            Request::Fetch {
                ns,
                ids: vec![id],
                layers,
                batch: false,
            }
        }
        op::BATCH_FETCH => {
            let ns = b.ns()?;
            let n = b.count(16)?;
            let ids = (0..n).map(|_| b.id()).collect::<Result<Vec<_>, _>>()?;
            let layers = b.layers()?;
            Request::Fetch {
                ns,
                ids,
                layers,
                batch: true,
            }
        }
        op::ATTEND => {
            let ns = b.ns()?;
            let n = b.u16()? as usize;
            let view = b.take(n)?.to_vec();
            let positions = b.u32()?;
            let scale = f32::from_bits(b.u32()?);
            let budget = b.u32()?;
            let nl = b.count(8)?;
            let mut layers = Vec::with_capacity(nl);
            for _ in 0..nl {
                let layer = b.u32()?;
                let count = b.count(4)?;
                let raw = b.take(count * 4)?;
                let queries = raw
                    .chunks_exact(4)
                    .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                    .collect();
                layers.push(LayerQueries { layer, queries });
            }
            Request::Attend(Attend {
                ns,
                view,
                positions,
                scale: (!scale.is_nan()).then_some(scale),
                budget: (budget > 0).then_some(budget),
                layers,
            })
        }
        other => return Err(format!("ERR unknown binary-lane opcode 0x{other:02X}")),
    };
    b.done()?;
    Ok(req)
}

/// Encodes a request (the client side; tests and benchmarks use it).
pub fn encode_request(req: &Request) -> Vec<u8> {
    let mut body = Vec::new();
    let ns = |body: &mut Vec<u8>, ns: &str| {
        body.extend_from_slice(&(ns.len() as u16).to_le_bytes());
        body.extend_from_slice(ns.as_bytes());
    };
    let opcode = match req {
        Request::Ping(b) => {
            body.extend_from_slice(b);
            op::PING
        }
        Request::Auth(user, pass) => {
            if let Some(u) = user {
                body.extend_from_slice(u);
                body.push(0);
            }
            body.extend_from_slice(pass);
            op::AUTH
        }
        Request::Match { ns: n, tokens } => {
            ns(&mut body, n);
            tokens
                .iter()
                .for_each(|t| body.extend_from_slice(&t.to_le_bytes()));
            op::MATCH
        }
        Request::Put {
            ns: n,
            parent,
            tokens,
            layers,
        } => {
            ns(&mut body, n);
            body.extend_from_slice(&parent.to_le_bytes());
            body.extend_from_slice(&(tokens.len() as u32).to_le_bytes());
            tokens
                .iter()
                .for_each(|t| body.extend_from_slice(&t.to_le_bytes()));
            body.extend_from_slice(&(layers.len() as u32).to_le_bytes());
            for l in layers {
                body.extend_from_slice(&(l.len() as u64).to_le_bytes());
                body.extend_from_slice(&l[..]);
            }
            op::PUT
        }
        Request::Fetch {
            ns: n,
            ids,
            layers,
            batch,
        } => {
            ns(&mut body, n);
            if *batch {
                body.extend_from_slice(&(ids.len() as u32).to_le_bytes());
            }
            for id in ids {
                body.extend_from_slice(&id.to_le_bytes());
            }
            let list = layers.clone().unwrap_or_default();
            body.extend_from_slice(&(list.len() as u32).to_le_bytes());
            list.iter()
                .for_each(|l| body.extend_from_slice(&(*l as u32).to_le_bytes()));
            if *batch {
                op::BATCH_FETCH
            } else {
                op::FETCH
            }
        }
        Request::Attend(a) => {
            ns(&mut body, &a.ns);
            body.extend_from_slice(&(a.view.len() as u16).to_le_bytes());
            body.extend_from_slice(&a.view);
            body.extend_from_slice(&a.positions.to_le_bytes());
            body.extend_from_slice(&a.scale.unwrap_or(f32::NAN).to_bits().to_le_bytes());
            body.extend_from_slice(&a.budget.unwrap_or(0).to_le_bytes());
            body.extend_from_slice(&(a.layers.len() as u32).to_le_bytes());
            for l in &a.layers {
                body.extend_from_slice(&l.layer.to_le_bytes());
                body.extend_from_slice(&(l.queries.len() as u32).to_le_bytes());
                l.queries
                    .iter()
                    .for_each(|q| body.extend_from_slice(&q.to_le_bytes()));
            }
            op::ATTEND
        }
    };
    let mut out = header(opcode, body.len()).to_vec();
    out.extend_from_slice(&body);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_round_trip_and_bad_bodies_are_errors() {
        let reqs = [
            Request::Ping(b"hi".to_vec()),
            Request::Auth(Some(b"u".to_vec()), b"p".to_vec()),
            Request::Auth(None, b"p".to_vec()),
            Request::Match {
                ns: "m".into(),
                tokens: vec![1, 2, 3],
            },
            Request::Put {
                ns: "m".into(),
                parent: 7,
                tokens: vec![4, 5],
                layers: vec![Bytes::from_static(&[1u8, 2, 3]), Bytes::new()],
            },
            Request::Fetch {
                ns: "m".into(),
                ids: vec![9],
                layers: Some(vec![0, 2]),
                batch: false,
            },
            Request::Fetch {
                ns: "m".into(),
                ids: vec![9, 10],
                layers: None,
                batch: true,
            },
            Request::Attend(Attend {
                ns: "m".into(),
                view: b"v1".to_vec(),
                positions: 2,
                scale: Some(0.125),
                budget: Some(512),
                layers: vec![
                    LayerQueries {
                        layer: 3,
                        queries: vec![0.5, -1.0],
                    },
                    LayerQueries {
                        layer: 4,
                        queries: vec![],
                    },
                ],
            }),
            Request::Attend(Attend {
                ns: "m".into(),
                view: vec![],
                positions: 1,
                scale: None,
                budget: None,
                layers: vec![],
            }),
        ];
        for r in reqs {
            let frame = encode_request(&r);
            let mut h = [0u8; HEADER_LEN];
            h.copy_from_slice(&frame[..HEADER_LEN]);
            let hd = parse_header(&h).expect("header");
            assert_eq!(hd.len as usize, frame.len() - HEADER_LEN);
            assert_eq!(
                parse_request(hd.opcode, &frame[HEADER_LEN..]),
                Ok(r.clone())
            );
            // Every truncation of a structured body is an error, never a panic.
            if !matches!(r, Request::Ping(_) | Request::Auth(..)) {
                for cut in 0..frame.len() - HEADER_LEN {
                    let _ = parse_request(hd.opcode, &frame[HEADER_LEN..HEADER_LEN + cut]);
                }
                let mut long = frame[HEADER_LEN..].to_vec();
                long.push(0);
                assert!(parse_request(hd.opcode, &long).is_err());
            }
        }
        assert!(parse_header(&[0, 0, 1, 0, 0, 0, 0]).is_err());
        assert!(parse_request(0x77, b"").is_err());
        // A count that promises more than the body holds.
        let mut body = vec![1, 0, b'm'];
        body.extend_from_slice(&u32::MAX.to_le_bytes());
        assert!(parse_request(op::BATCH_FETCH, &body).is_err());
    }
}
