//! The reply encoder: the one place that knows how a [`Reply`] looks in RESP2 and in
//! RESP3.

use pion_core::util::num::fmt_g17;
use pion_core::Reply;

/// Appends the encoding of `reply` for protocol `resp` (2 or 3) to `out`.
pub fn encode(reply: &Reply, resp: u8, out: &mut Vec<u8>) {
    let resp3 = resp >= 3;
    match reply {
        Reply::Status(s) => line(out, b'+', s.as_bytes()),
        Reply::Error(s) => line(out, b'-', s.as_bytes()),
        Reply::Integer(n) => {
            out.push(b':');
            push_int(out, *n);
            out.extend_from_slice(b"\r\n");
        }
        Reply::Bulk(b) => bulk(out, b),
        Reply::Null if resp3 => out.extend_from_slice(b"_\r\n"),
        Reply::Null => out.extend_from_slice(b"$-1\r\n"),
        Reply::NullArray if resp3 => out.extend_from_slice(b"_\r\n"),
        Reply::NullArray => out.extend_from_slice(b"*-1\r\n"),
        Reply::Array(items) => {
            header(out, b'*', items.len());
            for r in items {
                encode(r, resp, out);
            }
        }
        Reply::Set(items) => {
            header(out, if resp3 { b'~' } else { b'*' }, items.len());
            for r in items {
                encode(r, resp, out);
            }
        }
        Reply::Several(items) => {
            for r in items {
                encode(r, resp, out);
            }
        }
        Reply::Push(items) => {
            header(out, if resp3 { b'>' } else { b'*' }, items.len());
            for r in items {
                encode(r, resp, out);
            }
        }
        Reply::Map(pairs) => {
            if resp3 {
                header(out, b'%', pairs.len());
            } else {
                header(out, b'*', pairs.len() * 2);
            }
            for (k, v) in pairs {
                encode(k, resp, out);
                encode(v, resp, out);
            }
        }
        Reply::PairsMap(pairs) => {
            header(out, if resp3 { b'%' } else { b'*' }, pairs.len());
            for (k, v) in pairs {
                if !resp3 {
                    header(out, b'*', 2);
                }
                encode(k, resp, out);
                encode(v, resp, out);
            }
        }
        Reply::Pairs(pairs) => {
            if resp3 {
                header(out, b'*', pairs.len());
            } else {
                header(out, b'*', pairs.len() * 2);
            }
            for (k, v) in pairs {
                if resp3 {
                    header(out, b'*', 2);
                }
                encode(k, resp, out);
                encode(v, resp, out);
            }
        }
        Reply::Double(d) => {
            let text = fmt_g17(*d);
            if resp3 {
                line(out, b',', text.as_bytes());
            } else {
                bulk(out, text.as_bytes());
            }
        }
        Reply::HumanDouble(d) => {
            let text = pion_core::util::num::fmt_human(*d);
            if resp3 {
                line(out, b',', text.as_bytes());
            } else {
                bulk(out, text.as_bytes());
            }
        }
        Reply::ShortDouble(d) => {
            let text = pion_core::util::num::fmt_shortest(*d);
            if resp3 {
                line(out, b',', text.as_bytes());
            } else {
                bulk(out, text.as_bytes());
            }
        }
        Reply::Bool(b) => {
            if resp3 {
                out.extend_from_slice(if *b { b"#t\r\n" } else { b"#f\r\n" });
            } else {
                out.extend_from_slice(if *b { b":1\r\n" } else { b":0\r\n" });
            }
        }
        Reply::Verbatim(format, text) => {
            if resp3 {
                header(out, b'=', text.len() + 4);
                out.extend_from_slice(format.as_bytes());
                out.push(b':');
                out.extend_from_slice(text);
                out.extend_from_slice(b"\r\n");
            } else {
                bulk(out, text);
            }
        }
        Reply::BigNumber(digits) => {
            if resp3 {
                line(out, b'(', digits.as_bytes());
            } else {
                bulk(out, digits.as_bytes());
            }
        }
        Reply::Attributed(attributes, reply) => {
            if resp3 {
                header(out, b'|', attributes.len());
                for (k, v) in attributes {
                    encode(k, resp, out);
                    encode(v, resp, out);
                }
            }
            encode(reply, resp, out);
        }
    }
}

/// Appends the decimal form of `n` without allocating.
fn push_int(out: &mut Vec<u8>, n: i64) {
    if n < 0 {
        out.push(b'-');
    }
    pion_core::util::num::push_decimal(out, n.unsigned_abs());
}

fn header(out: &mut Vec<u8>, kind: u8, len: usize) {
    out.push(kind);
    push_int(out, len as i64);
    out.extend_from_slice(b"\r\n");
}

/// A one-line reply. Error and status texts may quote client input; like Redis, CR
/// and LF become spaces so a reply can never smuggle in another frame.
fn line(out: &mut Vec<u8>, kind: u8, text: &[u8]) {
    out.push(kind);
    if text.iter().any(|&c| c == b'\r' || c == b'\n') {
        out.extend(
            text.iter()
                .map(|&c| if c == b'\r' || c == b'\n' { b' ' } else { c }),
        );
    } else {
        out.extend_from_slice(text);
    }
    out.extend_from_slice(b"\r\n");
}

fn bulk(out: &mut Vec<u8>, b: &[u8]) {
    header(out, b'$', b.len());
    out.extend_from_slice(b);
    out.extend_from_slice(b"\r\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn enc(r: Reply, resp: u8) -> String {
        let mut out = Vec::new();
        encode(&r, resp, &mut out);
        String::from_utf8(out).expect("ascii")
    }

    #[test]
    fn error_lines_cannot_inject_frames() {
        let r = Reply::error("ERR Syntax error in HELLO option 'x\r\n+OK'");
        assert_eq!(enc(r, 2), "-ERR Syntax error in HELLO option 'x  +OK'\r\n");
    }

    #[test]
    fn integers() {
        for n in [0, 7, -7, 1234567890, i64::MAX, i64::MIN] {
            assert_eq!(enc(Reply::Integer(n), 2), format!(":{n}\r\n"));
        }
    }

    #[test]
    fn resp2_and_resp3_shapes() {
        assert_eq!(enc(Reply::Null, 2), "$-1\r\n");
        assert_eq!(enc(Reply::Null, 3), "_\r\n");
        assert_eq!(enc(Reply::Double(0.1), 2), "$19\r\n0.10000000000000001\r\n");
        assert_eq!(enc(Reply::Double(1.0), 3), ",1\r\n");
        let m = Reply::Map(vec![(Reply::bulk("a"), Reply::Integer(1))]);
        assert_eq!(enc(m.clone(), 2), "*2\r\n$1\r\na\r\n:1\r\n");
        assert_eq!(enc(m, 3), "%1\r\n$1\r\na\r\n:1\r\n");
        let p = Reply::Pairs(vec![(Reply::bulk("m"), Reply::Double(2.0))]);
        assert_eq!(enc(p.clone(), 2), "*2\r\n$1\r\nm\r\n$1\r\n2\r\n");
        assert_eq!(enc(p, 3), "*1\r\n*2\r\n$1\r\nm\r\n,2\r\n");
        assert_eq!(
            enc(Reply::Verbatim("txt", b"hi".to_vec()), 3),
            "=6\r\ntxt:hi\r\n"
        );
        assert_eq!(enc(Reply::Set(vec![]), 3), "~0\r\n");
        let big = Reply::BigNumber("12345678901234567890".into());
        assert_eq!(enc(big.clone(), 3), "(12345678901234567890\r\n");
        assert_eq!(enc(big, 2), "$20\r\n12345678901234567890\r\n");
        let a = Reply::Attributed(
            vec![(Reply::bulk("k"), Reply::Integer(1))],
            Box::new(Reply::bulk("v")),
        );
        assert_eq!(enc(a.clone(), 3), "|1\r\n$1\r\nk\r\n:1\r\n$1\r\nv\r\n");
        assert_eq!(enc(a, 2), "$1\r\nv\r\n");
    }
}
