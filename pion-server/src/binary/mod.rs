//! The binary lane: a second port (the RESP port + 1) for bulk K/V. Requests and
//! replies are length-prefixed frames ([`codec`]); a fetch is written with vectored
//! I/O straight from the stored block buffers, with no RESP encoding and no copy.
//!
//! Lane connections are served by the same event loop as RESP ones, and every request
//! is the command it stands for: `PING`, `AUTH`, `KV.MATCH`, `KV.PUT`, `KV.GET`,
//! `KV.MGET`, `ATTEND.QUERY`. So it passes the same admission (authentication, ACL command and key
//! checks with the namespace as the key, `CLIENT PAUSE`, `maxmemory`, a failing log),
//! is counted in `INFO commandstats`, `SLOWLOG` and `MONITOR`, and its reply waits
//! for the log like any other. Block ids cross the lane as 16 bytes, never as text;
//! the prompt cache hands the lane its typed results ([`Outcome`]) beside the reply.

pub mod codec;

use pion_core::Bytes;

use pion_core::prefix::ops::{Fetched, Outcome};
use pion_core::Reply;

use crate::output::Output;
use codec::{header, op, parse_header, parse_request_in, Request, ERROR, HEADER_LEN};

/// The largest frame body accepted before `AUTH` when the server has a password (as
/// Redis caps an unauthenticated client's requests): a client that has not said who
/// it is cannot make the server hold a large buffer for it.
pub const UNAUTHENTICATED_FRAME_LIMIT: u64 = 16 * 1024;

/// What the reply to a request looks like, by its opcode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// `0x81`: the request's body echoed.
    Ping,
    /// `0x82`: empty.
    Auth,
    /// `0x90`: tokens matched and the block ids.
    Match,
    /// `0x91`: the stored block's id.
    Put,
    /// `0x92`: one block.
    Fetch,
    /// `0x93`: a count and the blocks.
    BatchFetch,
    /// `0x94`: each layer's attention state.
    Attend,
}

impl Answer {
    fn opcode(self) -> u8 {
        0x80 | match self {
            Answer::Ping => op::PING,
            Answer::Auth => op::AUTH,
            Answer::Match => op::MATCH,
            Answer::Put => op::PUT,
            Answer::Fetch => op::FETCH,
            Answer::BatchFetch => op::BATCH_FETCH,
            Answer::Attend => op::ATTEND,
        }
    }
}

/// The next request in a lane connection's input.
#[derive(Debug, PartialEq, Eq)]
pub enum Next {
    /// Not a whole frame yet.
    Incomplete,
    /// A request: the command it stands for, how to answer, and the bytes it took.
    Call {
        /// The command's arguments.
        argv: Vec<Vec<u8>>,
        /// A `PUT`'s layers, handed to the command beside its (placeholder) layer
        /// arguments so the store adopts them without another copy.
        layers: HandedLayers,
        /// The reply's form.
        answer: Answer,
        /// Input bytes consumed.
        used: usize,
    },
    /// A whole frame whose body is malformed: answered with this error; the
    /// connection goes on with the next frame.
    Refused {
        /// The error text.
        text: String,
        /// Input bytes consumed.
        used: usize,
    },
    /// The peer is out of step (a wrong magic) or asks for too much: answered with
    /// this error, then the connection closes.
    Fatal(String),
}

/// A `PUT` frame at least this large has its layers kept as views of the frame's own
/// buffer rather than copied out of it (see [`whole_large_put`]).
pub const SHARE_PUT_FROM: usize = 1 << 20;

/// The length of the `PUT` frame `input` starts with, when the whole frame is there
/// and it is at least [`SHARE_PUT_FROM`] bytes: the connection then hands the frame's
/// buffer to the request (layers as views of it) instead of copying them out.
pub fn whole_large_put(input: &[u8]) -> Option<usize> {
    let len = frame_len(input)?;
    (len >= SHARE_PUT_FROM && input.len() >= len && input[2] == op::PUT).then_some(len)
}

/// Reads the next request from `input`. `max_body` is the largest body accepted now
/// (see [`UNAUTHENTICATED_FRAME_LIMIT`]).
pub fn next_request(input: &[u8], max_body: u64) -> Next {
    next_request_in(input, max_body, None)
}

/// [`next_request`] over `input` that lies in `shared` when given (its bytes are
/// `input`): a `PUT`'s layers are views of it.
pub fn next_request_in(input: &[u8], max_body: u64, shared: Option<&Bytes>) -> Next {
    let Some(head) = input.get(..HEADER_LEN) else {
        return Next::Incomplete;
    };
    let mut h = [0u8; HEADER_LEN];
    h.copy_from_slice(head);
    let hd = match parse_header(&h) {
        Ok(hd) => hd,
        Err(e) => return Next::Fatal(e),
    };
    if u64::from(hd.len) > max_body {
        return Next::Fatal(format!(
            "ERR Protocol error: binary-lane frame of {} bytes is over the limit of {max_body} bytes",
            hd.len
        ));
    }
    let used = HEADER_LEN + hd.len as usize;
    let Some(body) = input.get(HEADER_LEN..used) else {
        return Next::Incomplete;
    };
    match parse_request_in(hd.opcode, body, shared) {
        Ok(req) => {
            let (argv, answer, layers) = command_of(req);
            Next::Call {
                argv,
                layers,
                answer,
                used,
            }
        }
        Err(text) => Next::Refused { text, used },
    }
}

/// A `PUT`'s layers, travelling beside its command.
type HandedLayers = Option<Vec<Bytes>>;

/// The whole length of the frame `input` starts with, once its header is there.
pub fn frame_len(input: &[u8]) -> Option<usize> {
    let h: [u8; HEADER_LEN] = input.get(..HEADER_LEN)?.try_into().ok()?;
    parse_header(&h).ok().map(|hd| HEADER_LEN + hd.len as usize)
}

/// The command a request stands for (and a `PUT`'s layers).
fn command_of(req: Request) -> (Vec<Vec<u8>>, Answer, HandedLayers) {
    let tokens_le =
        |tokens: &[u32]| -> Vec<u8> { tokens.iter().flat_map(|t| t.to_le_bytes()).collect() };
    let layers_of = |argv: &mut Vec<Vec<u8>>, layers: Option<Vec<usize>>| {
        if let Some(list) = layers {
            argv.push(b"LAYERS".to_vec());
            argv.extend(list.iter().map(|l| l.to_string().into_bytes()));
        }
    };
    let (argv, answer) = match req {
        Request::Ping(body) => {
            let mut argv = vec![b"PING".to_vec()];
            if !body.is_empty() {
                argv.push(body);
            }
            (argv, Answer::Ping)
        }
        Request::Auth(user, pass) => {
            let mut argv = vec![b"AUTH".to_vec()];
            argv.extend(user);
            argv.push(pass);
            (argv, Answer::Auth)
        }
        Request::Match { ns, tokens } => (
            vec![b"KV.MATCH".to_vec(), ns.into_bytes(), tokens_le(&tokens)],
            Answer::Match,
        ),
        Request::Put {
            ns,
            parent,
            tokens,
            layers,
        } => {
            let mut argv = vec![
                b"KV.PUT".to_vec(),
                ns.into_bytes(),
                parent.to_le_bytes().to_vec(),
                tokens_le(&tokens),
            ];
            argv.extend(layers.iter().map(|_| Vec::new()));
            return (argv, Answer::Put, Some(layers));
        }
        Request::Fetch {
            ns,
            ids,
            layers,
            batch,
        } => {
            let name: &[u8] = if batch { b"KV.MGET" } else { b"KV.GET" };
            let mut argv = vec![name.to_vec(), ns.into_bytes()];
            argv.extend(ids.iter().map(|id| id.to_le_bytes().to_vec()));
            layers_of(&mut argv, layers);
            let answer = if batch {
                Answer::BatchFetch
            } else {
                Answer::Fetch
            };
            (argv, answer)
        }
        Request::Attend(a) => {
            let mut argv = vec![b"ATTEND.QUERY".to_vec(), a.ns.into_bytes(), a.view];
            for l in a.layers {
                argv.push(b"LAYER".to_vec());
                argv.push(l.layer.to_string().into_bytes());
                argv.push(b"Q".to_vec());
                argv.push(l.queries.iter().flat_map(|q| q.to_le_bytes()).collect());
            }
            argv.push(b"POSITIONS".to_vec());
            argv.push(a.positions.to_string().into_bytes());
            if let Some(s) = a.scale {
                argv.push(b"SCALE".to_vec());
                argv.push(s.to_string().into_bytes());
            }
            if let Some(budget) = a.budget {
                argv.push(b"SPARSE".to_vec());
                argv.push(budget.to_string().into_bytes());
            }
            (argv, Answer::Attend)
        }
    };
    (argv, answer, None)
}

/// The `ATTEND` reply body from `ATTEND.QUERY`'s reply (per layer `[output, lse,
/// tokens, blocks]`); `None` for any other shape.
fn attend_body(reply: &Reply) -> Option<Vec<u8>> {
    let Reply::Array(layers) = reply else {
        return None;
    };
    let mut body = (layers.len() as u32).to_le_bytes().to_vec();
    for l in layers {
        let Reply::Array(parts) = l else { return None };
        let [Reply::Bulk(out), Reply::Bulk(lse), Reply::Integer(tokens), Reply::Integer(blocks)] =
            parts.as_slice()
        else {
            return None;
        };
        let rows = lse.len() / 4;
        let head_dim = out.len().checked_div(lse.len())?;
        body.extend_from_slice(&(rows as u32).to_le_bytes());
        body.extend_from_slice(&(head_dim as u32).to_le_bytes());
        body.extend_from_slice(&(*tokens as u64).to_le_bytes());
        body.extend_from_slice(&(*blocks as u64).to_le_bytes());
        body.extend_from_slice(out);
        body.extend_from_slice(lse);
    }
    Some(body)
}

/// Appends an error frame.
pub fn write_error(text: &str, out: &mut Output) {
    let bytes = out.bytes_mut();
    bytes.extend_from_slice(&header(ERROR, text.len()));
    bytes.extend_from_slice(text.as_bytes());
}

/// Appends the reply frame of a request answered `reply`, with the prompt cache's
/// typed result when the command left one.
pub fn write_reply(answer: Answer, reply: &Reply, outcome: Option<Outcome>, out: &mut Output) {
    if let Reply::Error(text) = reply {
        return write_error(text, out);
    }
    let opcode = answer.opcode();
    let frame = |out: &mut Output, body: &[u8]| {
        let bytes = out.bytes_mut();
        bytes.extend_from_slice(&header(opcode, body.len()));
        bytes.extend_from_slice(body);
    };
    match (answer, outcome) {
        (Answer::Ping, _) => match reply {
            Reply::Bulk(echo) => frame(out, echo),
            _ => frame(out, &[]),
        },
        (Answer::Auth, _) => frame(out, &[]),
        (Answer::Attend, _) => match attend_body(reply) {
            Some(body) => frame(out, &body),
            None => write_error(
                "ERR internal error: ATTEND.QUERY gave no attention state",
                out,
            ),
        },
        (Answer::Match, Some(Outcome::Matched(m))) => {
            let mut body = Vec::with_capacity(12 + m.blocks.len() * 16);
            body.extend_from_slice(&m.tokens.to_le_bytes());
            body.extend_from_slice(&(m.blocks.len() as u32).to_le_bytes());
            for id in &m.blocks {
                body.extend_from_slice(&id.0.to_le_bytes());
            }
            frame(out, &body);
        }
        (Answer::Put, Some(Outcome::Stored(id))) => frame(out, &id.0.to_le_bytes()),
        (Answer::Fetch, Some(Outcome::Fetched(blocks))) if blocks.len() == 1 => {
            write_blocks(opcode, None, &blocks, out)
        }
        (Answer::BatchFetch, Some(Outcome::Fetched(blocks))) => {
            write_blocks(opcode, Some(blocks.len() as u32), &blocks, out)
        }
        // The command answered without the result the lane needs: say so, never
        // make one up.
        _ => write_error(
            "ERR internal error: no prompt-cache result for the binary lane",
            out,
        ),
    }
}

/// A fetch's frame: the headers go into the reply bytes, each layer's stored buffer
/// is attached as it is.
fn write_blocks(opcode: u8, count: Option<u32>, blocks: &[Fetched], out: &mut Output) {
    let mut total = if count.is_some() { 4 } else { 0 };
    for b in blocks {
        total += 8;
        for l in &b.layers {
            total += 1 + l.as_ref().map_or(0, |d| 8 + d.len());
        }
    }
    out.bytes_mut().extend_from_slice(&header(opcode, total));
    if let Some(n) = count {
        out.bytes_mut().extend_from_slice(&n.to_le_bytes());
    }
    for b in blocks {
        let bytes = out.bytes_mut();
        bytes.extend_from_slice(&b.tokens.to_le_bytes());
        bytes.extend_from_slice(&(b.layers.len() as u32).to_le_bytes());
        for l in &b.layers {
            match l {
                None => out.bytes_mut().push(0),
                Some(data) => {
                    let bytes = out.bytes_mut();
                    bytes.push(1);
                    bytes.extend_from_slice(&(data.len() as u64).to_le_bytes());
                    out.attach(data.clone());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use codec::encode_request;

    #[test]
    fn requests_become_the_commands_they_stand_for() {
        let put = encode_request(&Request::Put {
            ns: "m".into(),
            parent: 7,
            tokens: vec![1, 2],
            layers: vec![Bytes::from_static(&[9u8; 4])],
        });
        match next_request(&put, 1 << 20) {
            Next::Call {
                argv,
                layers,
                answer,
                used,
            } => {
                assert_eq!(used, put.len());
                assert_eq!(answer, Answer::Put);
                assert_eq!(argv[0], b"KV.PUT");
                // The parent id as its 16 bytes, not as text.
                assert_eq!(argv[2], 7u128.to_le_bytes());
                assert_eq!(argv[3], [1, 0, 0, 0, 2, 0, 0, 0]);
                // The layer travels beside the command, its argument a placeholder.
                assert!(argv[4].is_empty());
                assert_eq!(
                    layers.as_deref(),
                    Some(&[Bytes::from_static(&[9u8; 4])][..])
                );
            }
            other => panic!("{other:?}"),
        }
        let fetch = encode_request(&Request::Fetch {
            ns: "m".into(),
            ids: vec![3, 4],
            layers: Some(vec![0, 5]),
            batch: true,
        });
        match next_request(&fetch, 1 << 20) {
            Next::Call { argv, answer, .. } => {
                assert_eq!(answer, Answer::BatchFetch);
                let want: Vec<Vec<u8>> = vec![
                    b"KV.MGET".to_vec(),
                    b"m".to_vec(),
                    3u128.to_le_bytes().to_vec(),
                    4u128.to_le_bytes().to_vec(),
                    b"LAYERS".to_vec(),
                    b"0".to_vec(),
                    b"5".to_vec(),
                ];
                assert_eq!(argv, want);
            }
            other => panic!("{other:?}"),
        }
        // A partial frame waits; a frame over the limit is refused before its body.
        assert_eq!(
            next_request(&fetch[..fetch.len() - 1], 1 << 20),
            Next::Incomplete
        );
        assert!(matches!(
            next_request(&fetch[..HEADER_LEN], 4),
            Next::Fatal(_)
        ));
        assert!(matches!(
            next_request(b"\0\0\x01\0\0\0\0", 4),
            Next::Fatal(_)
        ));
        // A namespace longer than the body.
        let mut bad = header(op::MATCH, 3).to_vec();
        bad.extend_from_slice(&[5, 0, b'm']);
        assert!(matches!(next_request(&bad, 1 << 20), Next::Refused { .. }));
    }

    #[test]
    fn a_reply_without_its_result_is_an_error_never_a_default() {
        let mut out = Output::default();
        write_reply(Answer::Match, &Reply::Array(vec![]), None, &mut out);
        let bytes = out.to_vec();
        assert_eq!(bytes[2], ERROR);
    }
}
