//! The semantic reply a command produces.
//!
//! Handlers never see the wire: they return a [`Reply`] that says *what* the answer is
//! (a map, a double, a null …). Only the encoder in the server decides how it looks in
//! RESP2 or RESP3, so the embedded engine and the wire share every handler.

use std::borrow::Cow;

/// One reply value, independent of the protocol version.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// A simple status line such as `OK` or `PONG`.
    Status(Cow<'static, str>),
    /// An error line; the text includes its code prefix (`ERR …`, `WRONGTYPE …`).
    Error(ErrorText),
    /// A signed 64-bit integer.
    Integer(i64),
    /// A binary-safe bulk string.
    Bulk(Vec<u8>),
    /// The null bulk string (RESP2 `$-1`, RESP3 `_`).
    Null,
    /// The null array (RESP2 `*-1`, RESP3 `_`).
    NullArray,
    /// An ordered array.
    Array(Vec<Reply>),
    /// A map (RESP3 `%`); RESP2 flattens it into an array of key, value, ….
    Map(Vec<(Reply, Reply)>),
    /// Pairs that RESP3 sends as an array of two-element arrays and RESP2 flattens
    /// (`ZRANGE … WITHSCORES`, `HRANDFIELD … WITHVALUES`).
    Pairs(Vec<(Reply, Reply)>),
    /// A map that RESP2 sends as an array of two-element arrays (`XREAD`'s streams).
    PairsMap(Vec<(Reply, Reply)>),
    /// A set (RESP3 `~`); RESP2 sends an array.
    Set(Vec<Reply>),
    /// A double (RESP3 `,`); RESP2 sends it as a bulk string formatted like `%.17g`.
    Double(f64),
    /// A double in its shortest round-trip form (RESP3 `,`; RESP2 a bulk string), as
    /// Redis modules reply with doubles (vector-set scores and components).
    ShortDouble(f64),
    /// A double as Redis's `addReplyHumanLongDouble` sends it (geo coordinates):
    /// `%.17Lf` without trailing zeros (see [`crate::util::num::fmt_human`]), RESP3
    /// `,`, RESP2 a bulk string.
    HumanDouble(f64),
    /// A boolean (RESP3 `#`); RESP2 sends the integer 1 or 0.
    Bool(bool),
    /// Verbatim text (RESP3 `=` with a three-letter format); RESP2 sends a bulk string.
    Verbatim(&'static str, Vec<u8>),
    /// A big number (RESP3 `(`, its decimal digits); RESP2 sends a bulk string.
    BigNumber(String),
    /// A reply with attributes before it (RESP3 `|`); RESP2, and scripts, see only
    /// the reply.
    Attributed(Vec<(Reply, Reply)>, Box<Reply>),
    /// An out-of-band push message (RESP3 `>`); RESP2 sends an array.
    Push(Vec<Reply>),
    /// Several replies sent one after the other (`SUBSCRIBE a b` confirms each
    /// channel separately).
    Several(Vec<Reply>),
}

impl Reply {
    /// The `+OK` status.
    pub const fn ok() -> Reply {
        Reply::Status(Cow::Borrowed("OK"))
    }

    /// A status line from a static string.
    pub const fn status(s: &'static str) -> Reply {
        Reply::Status(Cow::Borrowed(s))
    }

    /// A bulk string copied from bytes.
    pub fn bulk(b: impl AsRef<[u8]>) -> Reply {
        Reply::Bulk(b.as_ref().to_vec())
    }

    /// A bulk string, or null when absent.
    pub fn bulk_or_null(b: Option<impl AsRef<[u8]>>) -> Reply {
        match b {
            Some(b) => Reply::bulk(b),
            None => Reply::Null,
        }
    }

    /// An array of bulk strings.
    pub fn bulks<I, B>(items: I) -> Reply
    where
        I: IntoIterator<Item = B>,
        B: AsRef<[u8]>,
    {
        // `for_each` lets a nested iterator (a list's nodes, then each node's
        // elements) run as nested loops rather than one `next` at a time.
        let items = items.into_iter();
        let mut out = Vec::with_capacity(items.size_hint().0);
        items.for_each(|b| out.push(Reply::bulk(b)));
        Reply::Array(out)
    }

    /// An error reply with the full Redis text (prefix included).
    pub fn error(text: impl Into<ErrorText>) -> Reply {
        Reply::Error(text.into())
    }

    /// Whether this reply is an error.
    pub fn is_error(&self) -> bool {
        matches!(self, Reply::Error(_))
    }

    /// The bytes of a bulk or status reply, if it is one.
    pub fn as_bytes(&self) -> Option<&[u8]> {
        match self {
            Reply::Bulk(b) | Reply::Verbatim(_, b) => Some(b),
            Reply::Status(s) => Some(s.as_bytes()),
            _ => None,
        }
    }
}

impl Reply {
    /// A status line from an owned string.
    pub fn status_owned(s: String) -> Reply {
        Reply::Status(Cow::Owned(s))
    }
}

/// The text of an error reply, code first (`ERR …`). Nearly always UTF-8 text; an error
/// that quotes what a client sent (an unknown command's name and arguments) keeps
/// those bytes exactly as they came, since Redis echoes them raw. Everything inside
/// reads the text (with any invalid UTF-8 replaced); the wire gets the bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ErrorText {
    text: Cow<'static, str>,
    raw: Option<Box<[u8]>>,
}

impl ErrorText {
    /// An error whose wire form is `bytes` exactly (CR and LF aside, which the encoder
    /// turns into spaces as for every error).
    pub fn from_bytes(bytes: Vec<u8>) -> ErrorText {
        match String::from_utf8(bytes) {
            Ok(text) => ErrorText {
                text: Cow::Owned(text),
                raw: None,
            },
            Err(e) => ErrorText {
                text: Cow::Owned(String::from_utf8_lossy(e.as_bytes()).into_owned()),
                raw: Some(e.into_bytes().into_boxed_slice()),
            },
        }
    }

    /// What the wire shows.
    pub fn as_bytes(&self) -> &[u8] {
        self.raw.as_deref().unwrap_or(self.text.as_bytes())
    }

    /// The text, owned.
    pub fn into_owned(self) -> String {
        self.text.into_owned()
    }
}

impl std::ops::Deref for ErrorText {
    type Target = str;
    fn deref(&self) -> &str {
        &self.text
    }
}

impl std::fmt::Display for ErrorText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl From<&'static str> for ErrorText {
    fn from(text: &'static str) -> ErrorText {
        ErrorText {
            text: Cow::Borrowed(text),
            raw: None,
        }
    }
}

impl From<String> for ErrorText {
    fn from(text: String) -> ErrorText {
        ErrorText {
            text: Cow::Owned(text),
            raw: None,
        }
    }
}

impl From<Cow<'static, str>> for ErrorText {
    fn from(text: Cow<'static, str>) -> ErrorText {
        ErrorText { text, raw: None }
    }
}

impl From<ErrorText> for Cow<'static, str> {
    fn from(e: ErrorText) -> Cow<'static, str> {
        e.text
    }
}
