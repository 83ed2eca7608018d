//! Small reply builders shared by the command families' unit tests.

use crate::reply::Reply;

/// `WRONGTYPE` as Redis words it.
pub const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

/// The "not an integer" error.
pub const NOT_INT: &str = "ERR value is not an integer or out of range";

/// The syntax error.
pub const SYNTAX: &str = "ERR syntax error";

/// An integer reply.
pub fn int(n: i64) -> Reply {
    Reply::Integer(n)
}

/// A bulk-string reply.
pub fn bulk(s: &str) -> Reply {
    Reply::bulk(s)
}

/// An array of bulk strings.
pub fn bulks(items: &[&str]) -> Reply {
    Reply::bulks(items)
}

/// An error reply with this exact text.
pub fn err(text: &'static str) -> Reply {
    Reply::error(text)
}
