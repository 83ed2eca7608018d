//! The RESP request decoder: multibulk frames and inline commands, with Redis's
//! protocol limits and error texts. It does no I/O: it looks at a buffer and says
//! "here is a command and how many bytes it used", "need more bytes", or "protocol
//! error" (after which Redis replies with the error and closes the connection).

use memchr::memchr;

/// Longest inline command or multibulk/bulk header line Redis accepts (`PROTO_INLINE_MAX_SIZE`).
pub const INLINE_MAX: usize = 64 * 1024;

/// Most arguments one multibulk request may carry.
pub const MULTIBULK_MAX: i64 = i32::MAX as i64;

/// Before authentication Redis accepts only small requests: at most this many arguments…
pub const UNAUTH_MULTIBULK_MAX: i64 = 10;

/// …each at most this long.
pub const UNAUTH_BULK_MAX: u64 = 16384;

/// Limits the decoder enforces.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// `proto-max-bulk-len`.
    pub max_bulk_len: u64,
    /// The client must still authenticate: only small requests are accepted.
    pub unauthenticated: bool,
    /// `client-query-buffer-limit`: most unparsed input a connection may hold.
    pub max_query_buffer: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_bulk_len: 512 * 1024 * 1024,
            unauthenticated: false,
            max_query_buffer: 1024 * 1024 * 1024,
        }
    }
}

/// The outcome of one decoding step.
#[derive(Debug, PartialEq, Eq)]
pub enum Decoded {
    /// A complete command and the bytes it used.
    Command(Vec<Vec<u8>>, usize),
    /// Bytes that carry no command (an empty line, `*0`); skip them.
    Skip(usize),
    /// More bytes are needed.
    Incomplete,
}

/// A protocol violation: the text of the error reply (without the leading `-`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtocolError(pub String);

fn perr(what: &str) -> ProtocolError {
    ProtocolError(format!("ERR Protocol error: {what}"))
}

/// Finds a `\r\n`-terminated line starting at `from`; returns the line (without CRLF)
/// and the index just after it.
fn line(buf: &[u8], from: usize) -> Option<(&[u8], usize)> {
    let mut at = from;
    loop {
        let nl = memchr(b'\r', &buf[at..])? + at;
        if nl + 1 >= buf.len() {
            return None;
        }
        if buf[nl + 1] == b'\n' {
            return Some((&buf[from..nl], nl + 2));
        }
        at = nl + 1;
    }
}

/// The common header, read in one pass: up to 18 digits with no leading zero (or a
/// lone `0`) and `\r\n`, starting at `from`; its value and the index after it.
/// `None` for anything else (more bytes needed, a sign, an error), which the
/// general path then decides.
#[inline]
fn short_header(buf: &[u8], from: usize) -> Option<(i64, usize)> {
    let digits = buf.get(from..)?;
    let mut value: i64 = 0;
    let mut n = 0;
    for &c in digits.iter().take(18) {
        if !c.is_ascii_digit() {
            break;
        }
        value = value * 10 + i64::from(c - b'0');
        n += 1;
    }
    let leading_zero = n > 1 && digits[0] == b'0';
    let end = from + n;
    (n > 0 && !leading_zero && buf.get(end..end + 2) == Some(b"\r\n")).then_some((value, end + 2))
}

/// Parses a signed decimal header value strictly (Redis's `string2ll`).
fn header_int(s: &[u8]) -> Option<i64> {
    pion_core::util::num::parse_i64(s)
}

/// Decodes the next request in `buf` from scratch (no saved state). A connection uses
/// a [`Decoder`] instead, which resumes a partly received request.
pub fn decode(buf: &[u8], limits: &Limits) -> Result<Decoded, ProtocolError> {
    Decoder::default().decode(buf, limits)
}

/// A multibulk request received in part: the arguments already complete and where the
/// next one starts, so the next read does not parse them again.
#[derive(Debug, Default)]
struct Partial {
    args: Vec<Vec<u8>>,
    count: usize,
    /// Offset of the next element's header, from the start of the request.
    pos: usize,
    /// Bytes from the start of the request known to be needed (through the bulk
    /// being read), 0 when not known yet.
    need: usize,
}

/// Most argument buffers a decoder keeps for reuse…
const SPARE_ARGS: usize = 32;
/// …and most bytes they may hold together (an idle connection keeps at most this).
const SPARE_BYTES: usize = 8 * 1024;

/// A resumable request decoder: a large request that arrives over many reads costs
/// time linear in its size, not quadratic. It reuses the buffers of the commands
/// handed back to it ([`recycle`](Self::recycle)): a pipeline of small commands
/// decodes without an allocation per argument.
#[derive(Debug, Default)]
pub struct Decoder {
    partial: Option<Partial>,
    /// Emptied argument lists and argument buffers of commands that have run.
    spare_lists: Vec<Vec<Vec<u8>>>,
    spare_args: Vec<Vec<u8>>,
    /// The capacity of `spare_args`, in bytes.
    spare_bytes: usize,
}

impl Decoder {
    /// Bytes the request in progress needs from its start, as far as its headers
    /// tell (0: unknown or none in progress).
    pub fn wanted(&self) -> usize {
        self.partial.as_ref().map_or(0, |p| p.need)
    }

    /// Takes back a decoded command that has run: its buffers serve the next ones
    /// (small ones, and a bounded number of them).
    pub fn recycle(&mut self, mut argv: Vec<Vec<u8>>) {
        for arg in argv.drain(..) {
            let bytes = arg.capacity();
            if self.spare_args.len() < SPARE_ARGS && self.spare_bytes + bytes <= SPARE_BYTES {
                self.spare_bytes += bytes;
                self.spare_args.push(arg);
            }
        }
        if self.spare_lists.len() < 2 && argv.capacity() <= SPARE_ARGS {
            self.spare_lists.push(argv);
        }
    }

    /// An empty argument list with room for `count` arguments.
    fn arg_list(&mut self, count: usize) -> Vec<Vec<u8>> {
        let mut list = self.spare_lists.pop().unwrap_or_default();
        list.reserve(count);
        list
    }

    /// A copy of `bytes` in a reused buffer when one is spare.
    fn arg(&mut self, bytes: &[u8]) -> Vec<u8> {
        match self.spare_args.pop() {
            Some(mut arg) => {
                self.spare_bytes -= arg.capacity();
                arg.clear();
                arg.extend_from_slice(bytes);
                arg
            }
            None => bytes.to_vec(),
        }
    }

    /// Decodes the next request; `buf` must start where the request starts (the
    /// bytes of a request in progress must still be there, unchanged).
    pub fn decode(&mut self, buf: &[u8], limits: &Limits) -> Result<Decoded, ProtocolError> {
        if let Some(partial) = self.partial.take() {
            return self.resume(buf, limits, partial);
        }
        match buf.first() {
            None => Ok(Decoded::Incomplete),
            Some(b'*') => self.start_multibulk(buf, limits),
            Some(_) => decode_inline(buf),
        }
    }

    fn start_multibulk(&mut self, buf: &[u8], limits: &Limits) -> Result<Decoded, ProtocolError> {
        let (count, pos) = match short_header(buf, 1) {
            Some(header) => header,
            None => {
                let Some((count_text, pos)) = line(buf, 1) else {
                    if buf.len() > INLINE_MAX {
                        return Err(perr("too big mbulk count string"));
                    }
                    return Ok(Decoded::Incomplete);
                };
                let count = header_int(count_text)
                    .filter(|&n| n <= MULTIBULK_MAX)
                    .ok_or_else(|| perr("invalid multibulk length"))?;
                (count, pos)
            }
        };
        if count > MULTIBULK_MAX {
            return Err(perr("invalid multibulk length"));
        }
        if limits.unauthenticated && count > UNAUTH_MULTIBULK_MAX {
            return Err(perr("unauthenticated multibulk length"));
        }
        if count <= 0 {
            return Ok(Decoded::Skip(pos));
        }
        let partial = Partial {
            args: self.arg_list(count.min(1024) as usize),
            count: count as usize,
            pos,
            need: 0,
        };
        self.resume(buf, limits, partial)
    }

    fn resume(
        &mut self,
        buf: &[u8],
        limits: &Limits,
        mut p: Partial,
    ) -> Result<Decoded, ProtocolError> {
        let max_bulk = limits.max_bulk_len;
        while p.args.len() < p.count {
            let pos = p.pos;
            if pos >= buf.len() {
                self.partial = Some(p);
                return Ok(Decoded::Incomplete);
            }
            if buf[pos] != b'$' {
                let got = String::from_utf8_lossy(&buf[pos..pos + 1]).into_owned();
                return Err(perr(&format!("expected '$', got '{got}'")));
            }
            let (len, data) = match short_header(buf, pos + 1) {
                Some(header) => header,
                None => {
                    let Some((len_text, data)) = line(buf, pos + 1) else {
                        if buf.len() - pos > INLINE_MAX {
                            return Err(perr("too big bulk count string"));
                        }
                        self.partial = Some(p);
                        return Ok(Decoded::Incomplete);
                    };
                    (header_int(len_text).unwrap_or(-1), data)
                }
            };
            if limits.unauthenticated && len > UNAUTH_BULK_MAX as i64 {
                return Err(perr("unauthenticated bulk length"));
            }
            if len < 0 || len as u64 > max_bulk {
                return Err(perr("invalid bulk length"));
            }
            let len = len as usize;
            if buf.len() < data + len + 2 {
                p.need = data + len + 2;
                self.partial = Some(p);
                return Ok(Decoded::Incomplete);
            }
            let arg = self.arg(&buf[data..data + len]);
            p.args.push(arg);
            // Redis does not check the two bytes after a bulk; it skips them.
            p.pos = data + len + 2;
        }
        Ok(Decoded::Command(p.args, p.pos))
    }
}

fn decode_inline(buf: &[u8]) -> Result<Decoded, ProtocolError> {
    let Some(nl) = memchr(b'\n', buf) else {
        if buf.len() > INLINE_MAX {
            return Err(perr("too big inline request"));
        }
        return Ok(Decoded::Incomplete);
    };
    let mut text = &buf[..nl];
    if text.last() == Some(&b'\r') {
        text = &text[..text.len() - 1];
    }
    let args = split_args(text).ok_or_else(|| perr("unbalanced quotes in request"))?;
    if args.is_empty() {
        return Ok(Decoded::Skip(nl + 1));
    }
    Ok(Decoded::Command(args, nl + 1))
}

fn hex_val(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// Splits an inline command line into arguments with Redis's quoting rules (double
/// quotes with `\n`, `\xHH` escapes; single quotes with only `\'`). `None` on
/// unbalanced quotes or a closing quote not followed by a space.
pub fn split_args(line: &[u8]) -> Option<Vec<Vec<u8>>> {
    let mut args = Vec::new();
    let mut i = 0;
    loop {
        while i < line.len() && line[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= line.len() {
            return Some(args);
        }
        let mut cur = Vec::new();
        let (mut in_dq, mut in_sq) = (false, false);
        loop {
            if in_dq {
                let c = *line.get(i)?;
                if c == b'\\' && i + 3 < line.len() && line[i + 1] == b'x' {
                    if let (Some(h), Some(l)) = (hex_val(line[i + 2]), hex_val(line[i + 3])) {
                        cur.push(h * 16 + l);
                        i += 4;
                        continue;
                    }
                }
                if c == b'\\' && i + 1 < line.len() {
                    i += 1;
                    cur.push(match line[i] {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 8,
                        b'a' => 7,
                        other => other,
                    });
                } else if c == b'"' {
                    // A closing quote must be followed by a space or the end.
                    if i + 1 < line.len() && !line[i + 1].is_ascii_whitespace() {
                        return None;
                    }
                    in_dq = false;
                    i += 1;
                    break;
                } else {
                    cur.push(c);
                }
            } else if in_sq {
                let c = *line.get(i)?;
                if c == b'\\' && i + 1 < line.len() && line[i + 1] == b'\'' {
                    i += 1;
                    cur.push(b'\'');
                } else if c == b'\'' {
                    if i + 1 < line.len() && !line[i + 1].is_ascii_whitespace() {
                        return None;
                    }
                    in_sq = false;
                    i += 1;
                    break;
                } else {
                    cur.push(c);
                }
            } else {
                match line.get(i) {
                    None => break,
                    Some(c) if c.is_ascii_whitespace() => break,
                    Some(b'"') => in_dq = true,
                    Some(b'\'') => in_sq = true,
                    Some(&c) => cur.push(c),
                }
            }
            i += 1;
        }
        if in_dq || in_sq {
            return None;
        }
        args.push(cur);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd(buf: &[u8]) -> Vec<Vec<u8>> {
        match decode(buf, &Limits::default()) {
            Ok(Decoded::Command(args, used)) => {
                assert_eq!(used, buf.len());
                args
            }
            other => panic!("expected a command, got {other:?}"),
        }
    }

    #[test]
    fn multibulk() {
        assert_eq!(
            cmd(b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"),
            vec![b"GET".to_vec(), b"k".to_vec()]
        );
        assert_eq!(cmd(b"*1\r\n$0\r\n\r\n"), vec![Vec::<u8>::new()]);
    }

    #[test]
    fn headers_read_in_one_pass_keep_redis_rules() {
        let l = Limits::default();
        // A leading zero, a sign or 19 digits leave the one-pass reading to the
        // strict parser, which refuses them as Redis's `string2ll` does.
        assert_eq!(
            decode(b"*1\r\n$01\r\nx\r\n", &l),
            Err(perr("invalid bulk length"))
        );
        assert_eq!(
            decode(b"*01\r\n$1\r\nx\r\n", &l),
            Err(perr("invalid multibulk length"))
        );
        assert_eq!(
            decode(b"*1\r\n$1234567890123456789\r\n", &l),
            Err(perr("invalid bulk length"))
        );
        assert_eq!(
            decode(b"*999999999999999999\r\n", &l),
            Err(perr("invalid multibulk length"))
        );
        assert_eq!(decode(b"*-1\r\n", &l), Ok(Decoded::Skip(5)));
        assert_eq!(
            cmd(b"*1\r\n$10\r\n0123456789\r\n"),
            vec![b"0123456789".to_vec()]
        );
    }

    #[test]
    fn recycled_buffers_carry_nothing_over() {
        let l = Limits::default();
        let mut d = Decoder::default();
        let big = vec![b'v'; 100_000];
        let mut first = b"*3\r\n$3\r\nSET\r\n$4\r\nkey1\r\n$100000\r\n".to_vec();
        first.extend_from_slice(&big);
        first.extend_from_slice(b"\r\n");
        let Ok(Decoded::Command(argv, _)) = d.decode(&first, &l) else {
            panic!("a command");
        };
        assert_eq!(argv[2], big);
        d.recycle(argv);
        // The large argument was not kept; the small ones were.
        assert!(d.spare_bytes <= SPARE_BYTES);
        assert_eq!(d.spare_args.len(), 2);
        for round in 0..3 {
            let Ok(Decoded::Command(argv, used)) = d.decode(b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n", &l)
            else {
                panic!("a command");
            };
            assert_eq!(used, 20, "round {round}");
            assert_eq!(argv, vec![b"GET".to_vec(), b"k".to_vec()], "round {round}");
            d.recycle(argv);
        }
        assert_eq!(d.spare_lists.len(), 1);
    }

    #[test]
    fn incomplete_at_every_cut() {
        let full = b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$5\r\nhello\r\n";
        for cut in 0..full.len() {
            assert_eq!(
                decode(&full[..cut], &Limits::default()),
                Ok(Decoded::Incomplete),
                "cut {cut}"
            );
        }
    }

    #[test]
    fn protocol_errors() {
        let l = Limits::default();
        assert_eq!(decode(b"*x\r\n", &l), Err(perr("invalid multibulk length")));
        assert_eq!(
            decode(b"*1\r\n+a\r\n", &l),
            Err(perr("expected '$', got '+'"))
        );
        assert_eq!(
            decode(b"*1\r\n$-2\r\n", &l),
            Err(perr("invalid bulk length"))
        );
        assert_eq!(
            decode(b"*1\r\n$600000000\r\n", &l),
            Err(perr("invalid bulk length"))
        );
        assert_eq!(
            decode(b"*2147483648\r\n", &l),
            Err(perr("invalid multibulk length"))
        );
        let unauth = Limits {
            unauthenticated: true,
            ..Limits::default()
        };
        assert_eq!(
            decode(b"*11\r\n", &unauth),
            Err(perr("unauthenticated multibulk length"))
        );
        assert_eq!(
            decode(b"*1\r\n$16385\r\n", &unauth),
            Err(perr("unauthenticated bulk length"))
        );
        assert_eq!(
            decode(b"SET \"a\r\n", &l),
            Err(perr("unbalanced quotes in request"))
        );
        assert_eq!(
            decode(&vec![b'a'; INLINE_MAX + 1], &l),
            Err(perr("too big inline request"))
        );
    }

    #[test]
    fn inline() {
        assert_eq!(cmd(b"PING\r\n"), vec![b"PING".to_vec()]);
        assert_eq!(
            cmd(b"set k \"a b\\x41\"\n"),
            vec![b"set".to_vec(), b"k".to_vec(), b"a bA".to_vec()]
        );
        assert_eq!(
            cmd(b"echo 'it\\'s'\r\n"),
            vec![b"echo".to_vec(), b"it's".to_vec()]
        );
        assert_eq!(decode(b"\r\n", &Limits::default()), Ok(Decoded::Skip(2)));
        assert_eq!(decode(b"*0\r\n", &Limits::default()), Ok(Decoded::Skip(4)));
    }
}

#[cfg(test)]
mod proptests {
    use super::*;
    use proptest::prelude::*;

    fn encode_request(args: &[Vec<u8>]) -> Vec<u8> {
        let mut out = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
            out.extend_from_slice(a);
            out.extend_from_slice(b"\r\n");
        }
        out
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Garbage never panics or loops: each step consumes bytes, asks for more, or
        /// reports a protocol error.
        #[test]
        fn garbage_is_decoded_or_refused(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
            let limits = Limits::default();
            let mut at = 0;
            let mut steps = 0;
            while at < bytes.len() {
                steps += 1;
                prop_assert!(steps <= bytes.len() + 1);
                match decode(&bytes[at..], &limits) {
                    Ok(Decoded::Command(_, used)) | Ok(Decoded::Skip(used)) => {
                        prop_assert!(used > 0 && at + used <= bytes.len());
                        at += used;
                    }
                    Ok(Decoded::Incomplete) | Err(_) => break,
                }
            }
        }

        /// A resumable decoder fed a pipeline in arbitrary pieces returns exactly the
        /// commands a one-shot decode would.
        #[test]
        fn resumed_decoding_matches_one_shot(
            requests in proptest::collection::vec(
                proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..40), 1..6),
                1..6,
            ),
            cuts in proptest::collection::vec(1usize..64, 1..40),
        ) {
            let mut wire = Vec::new();
            for r in &requests {
                wire.extend(encode_request(r));
            }
            let limits = Limits::default();
            let mut decoder = Decoder::default();
            let mut got = Vec::new();
            let (mut start, mut filled, mut cut) = (0usize, 0usize, 0usize);
            while start < wire.len() {
                filled = (filled + cuts[cut % cuts.len()]).min(wire.len());
                cut += 1;
                loop {
                    match decoder.decode(&wire[start..filled], &limits) {
                        Ok(Decoded::Command(args, used)) => {
                            got.push(args);
                            start += used;
                        }
                        Ok(Decoded::Skip(used)) => start += used,
                        Ok(Decoded::Incomplete) => break,
                        Err(e) => return Err(TestCaseError::fail(format!("{e:?}"))),
                    }
                }
            }
            prop_assert_eq!(got, requests);
        }

        /// Any well-formed request round-trips, whole or split at any point.
        #[test]
        fn valid_requests_round_trip(
            args in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..64), 1..8),
            cut in 0usize..1000,
        ) {
            let wire = encode_request(&args);
            let limits = Limits::default();
            prop_assert_eq!(decode(&wire, &limits), Ok(Decoded::Command(args.clone(), wire.len())));
            let cut = cut % wire.len();
            prop_assert_eq!(decode(&wire[..cut], &limits), Ok(Decoded::Incomplete));
        }
    }
}
