//! A command's reply as a tree C walks: each node has a kind, a number or bytes, and
//! children. The tree is owned by the caller from [`crate::pion_execute`] until
//! [`pion_reply_free`] of its root; the nodes and bytes reached from it are borrowed
//! from that root and live exactly as long.
//!
//! RESP3's shapes fold into a few kinds: every map-like reply is `PION_REPLY_MAP`
//! with its keys and values alternating (`len` counts both), doubles carry their
//! value and their text as Redis prints it, attributes are dropped.

use std::ptr;

use pion_core::Reply;

/// What a reply node is.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[allow(non_camel_case_types)]
pub enum PionReplyKind {
    /// A status line (`OK`): bytes.
    PION_REPLY_STATUS = 1,
    /// An error line with its code (`ERR …`, `WRONGTYPE …`): bytes.
    PION_REPLY_ERROR = 2,
    /// A 64-bit integer.
    PION_REPLY_INTEGER = 3,
    /// A binary-safe string: bytes.
    PION_REPLY_BULK = 4,
    /// No value (a missing key, a null array).
    PION_REPLY_NIL = 5,
    /// An ordered array: children.
    PION_REPLY_ARRAY = 6,
    /// Keys and values alternating: children (`len` is twice the pairs).
    PION_REPLY_MAP = 7,
    /// An unordered set: children.
    PION_REPLY_SET = 8,
    /// A double: its value, and bytes with its text.
    PION_REPLY_DOUBLE = 9,
    /// A boolean: the integer 1 or 0.
    PION_REPLY_BOOL = 10,
    /// Verbatim text: bytes (without its format prefix).
    PION_REPLY_VERBATIM = 11,
    /// A big number: bytes with its decimal digits.
    PION_REPLY_BIGNUM = 12,
    /// An out-of-band message: children.
    PION_REPLY_PUSH = 13,
}

/// One node of a reply tree (opaque to C: read it through the accessors).
pub struct PionReply {
    kind: PionReplyKind,
    integer: i64,
    double: f64,
    bytes: Vec<u8>,
    children: Vec<PionReply>,
}

impl PionReply {
    fn leaf(kind: PionReplyKind, bytes: Vec<u8>) -> PionReply {
        PionReply {
            kind,
            integer: 0,
            double: 0.0,
            bytes,
            children: Vec::new(),
        }
    }

    fn number(kind: PionReplyKind, integer: i64, double: f64, bytes: Vec<u8>) -> PionReply {
        PionReply {
            integer,
            double,
            ..PionReply::leaf(kind, bytes)
        }
    }

    fn aggregate(kind: PionReplyKind, children: Vec<PionReply>) -> PionReply {
        PionReply {
            children,
            ..PionReply::leaf(kind, Vec::new())
        }
    }

    fn pairs(pairs: Vec<(Reply, Reply)>) -> PionReply {
        let children = pairs
            .into_iter()
            .flat_map(|(k, v)| [PionReply::from(k), PionReply::from(v)])
            .collect();
        PionReply::aggregate(PionReplyKind::PION_REPLY_MAP, children)
    }

    fn list(kind: PionReplyKind, items: Vec<Reply>) -> PionReply {
        PionReply::aggregate(kind, items.into_iter().map(PionReply::from).collect())
    }

    fn double(x: f64) -> PionReply {
        let text = pion_core::util::num::fmt_shortest(x).into_bytes();
        PionReply::number(PionReplyKind::PION_REPLY_DOUBLE, 0, x, text)
    }
}

impl From<Reply> for PionReply {
    fn from(reply: Reply) -> PionReply {
        use PionReplyKind::*;
        match reply {
            Reply::Status(s) => PionReply::leaf(PION_REPLY_STATUS, s.as_bytes().to_vec()),
            Reply::Error(e) => PionReply::leaf(PION_REPLY_ERROR, e.as_bytes().to_vec()),
            Reply::Integer(n) => PionReply::number(PION_REPLY_INTEGER, n, n as f64, Vec::new()),
            Reply::Bulk(b) => PionReply::leaf(PION_REPLY_BULK, b),
            Reply::Null | Reply::NullArray => PionReply::leaf(PION_REPLY_NIL, Vec::new()),
            Reply::Array(items) | Reply::Several(items) => PionReply::list(PION_REPLY_ARRAY, items),
            Reply::Map(pairs) | Reply::Pairs(pairs) | Reply::PairsMap(pairs) => {
                PionReply::pairs(pairs)
            }
            Reply::Set(items) => PionReply::list(PION_REPLY_SET, items),
            Reply::Push(items) => PionReply::list(PION_REPLY_PUSH, items),
            Reply::Double(x) | Reply::ShortDouble(x) | Reply::HumanDouble(x) => {
                PionReply::double(x)
            }
            Reply::Bool(b) => PionReply::number(
                PION_REPLY_BOOL,
                i64::from(b),
                f64::from(u8::from(b)),
                Vec::new(),
            ),
            Reply::Verbatim(_, text) => PionReply::leaf(PION_REPLY_VERBATIM, text),
            Reply::BigNumber(digits) => PionReply::leaf(PION_REPLY_BIGNUM, digits.into_bytes()),
            Reply::Attributed(_, inner) => PionReply::from(*inner),
        }
    }
}

/// The node behind a pointer the caller holds (`None` for null).
///
/// # Safety
/// `reply` is null or a node of a tree not yet freed.
unsafe fn node<'a>(reply: *const PionReply) -> Option<&'a PionReply> {
    // SAFETY: the caller's contract; null is checked by `as_ref`.
    unsafe { reply.as_ref() }
}

/// The kind of a node; 0 for null.
///
/// # Safety
/// `reply` is null or a node of a reply tree not yet freed.
#[no_mangle]
pub unsafe extern "C" fn pion_reply_kind(reply: *const PionReply) -> i32 {
    // SAFETY: the caller's contract.
    unsafe { node(reply) }.map_or(0, |r| r.kind as i32)
}

/// The integer of an `INTEGER` or `BOOL` node (0 for other kinds and null).
///
/// # Safety
/// `reply` is null or a node of a reply tree not yet freed.
#[no_mangle]
pub unsafe extern "C" fn pion_reply_integer(reply: *const PionReply) -> i64 {
    // SAFETY: the caller's contract.
    unsafe { node(reply) }.map_or(0, |r| r.integer)
}

/// The value of a `DOUBLE` node (an `INTEGER`'s as a double; 0 otherwise).
///
/// # Safety
/// `reply` is null or a node of a reply tree not yet freed.
#[no_mangle]
pub unsafe extern "C" fn pion_reply_double(reply: *const PionReply) -> f64 {
    // SAFETY: the caller's contract.
    unsafe { node(reply) }.map_or(0.0, |r| r.double)
}

/// The bytes of a `STATUS`, `ERROR`, `BULK`, `DOUBLE`, `VERBATIM` or `BIGNUM` node,
/// with their length in `*len` (which may be null). Not NUL-terminated; borrowed
/// from the tree. Null (and length 0) for other kinds and a null node.
///
/// # Safety
/// `reply` is null or a node of a reply tree not yet freed; `len` is null or valid
/// for a write.
#[no_mangle]
pub unsafe extern "C" fn pion_reply_bytes(reply: *const PionReply, len: *mut usize) -> *const u8 {
    // SAFETY: the caller's contract.
    let bytes = unsafe { node(reply) }
        .filter(|r| r.children.is_empty() && has_bytes(r.kind))
        .map(|r| r.bytes.as_slice());
    if !len.is_null() {
        // SAFETY: checked non-null; the caller's contract makes it writable.
        unsafe { *len = bytes.map_or(0, <[u8]>::len) };
    }
    bytes.map_or(ptr::null(), <[u8]>::as_ptr)
}

fn has_bytes(kind: PionReplyKind) -> bool {
    use PionReplyKind::*;
    matches!(
        kind,
        PION_REPLY_STATUS
            | PION_REPLY_ERROR
            | PION_REPLY_BULK
            | PION_REPLY_DOUBLE
            | PION_REPLY_VERBATIM
            | PION_REPLY_BIGNUM
    )
}

/// How many children a node has (`ARRAY`, `SET`, `PUSH`; a `MAP`'s keys and values
/// together); 0 for other kinds and null.
///
/// # Safety
/// `reply` is null or a node of a reply tree not yet freed.
#[no_mangle]
pub unsafe extern "C" fn pion_reply_len(reply: *const PionReply) -> usize {
    // SAFETY: the caller's contract.
    unsafe { node(reply) }.map_or(0, |r| r.children.len())
}

/// Child `index` of a node, borrowed from the tree; null when out of range.
///
/// # Safety
/// `reply` is null or a node of a reply tree not yet freed.
#[no_mangle]
pub unsafe extern "C" fn pion_reply_element(
    reply: *const PionReply,
    index: usize,
) -> *const PionReply {
    // SAFETY: the caller's contract.
    unsafe { node(reply) }
        .and_then(|r| r.children.get(index))
        .map_or(ptr::null(), |c| c as *const PionReply)
}

/// Frees a reply tree given its root (null is allowed and does nothing). Nodes
/// reached from it must not be used afterwards; a child must never be freed alone.
///
/// # Safety
/// `reply` is null or a root returned by `pion_execute` and not yet freed.
#[no_mangle]
pub unsafe extern "C" fn pion_reply_free(reply: *mut PionReply) {
    if !reply.is_null() {
        // SAFETY: the caller's contract: a root from `Box::into_raw`, freed once.
        drop(unsafe { Box::from_raw(reply) });
    }
}

/// Hands a reply to C as the root of its tree.
pub(crate) fn into_raw(reply: Reply) -> *mut PionReply {
    Box::into_raw(Box::new(PionReply::from(reply)))
}
