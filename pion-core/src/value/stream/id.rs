//! Stream entry ids (`<ms>-<seq>`): two unsigned 64-bit parts ordered as a pair.

use std::fmt;

use crate::util::num::push_decimal;

/// A stream entry id: milliseconds and a sequence number within them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct StreamId {
    /// The milliseconds part.
    pub ms: u64,
    /// The sequence part.
    pub seq: u64,
}

impl StreamId {
    /// `0-0`, the smallest id.
    pub const MIN: StreamId = StreamId { ms: 0, seq: 0 };
    /// `18446744073709551615-18446744073709551615`, the largest id.
    pub const MAX: StreamId = StreamId {
        ms: u64::MAX,
        seq: u64::MAX,
    };

    /// An id from its two parts.
    pub const fn new(ms: u64, seq: u64) -> StreamId {
        StreamId { ms, seq }
    }

    /// Whether this is `0-0`.
    pub fn is_zero(&self) -> bool {
        self.ms == 0 && self.seq == 0
    }

    /// The next id, or `None` after the largest.
    pub fn next(self) -> Option<StreamId> {
        if self.seq < u64::MAX {
            Some(StreamId::new(self.ms, self.seq + 1))
        } else if self.ms < u64::MAX {
            Some(StreamId::new(self.ms + 1, 0))
        } else {
            None
        }
    }

    /// The previous id, or `None` before the smallest.
    pub fn prev(self) -> Option<StreamId> {
        if self.seq > 0 {
            Some(StreamId::new(self.ms, self.seq - 1))
        } else if self.ms > 0 {
            Some(StreamId::new(self.ms - 1, u64::MAX))
        } else {
            None
        }
    }

    /// The id as `<ms>-<seq>` bytes, as replies carry it.
    pub fn to_bytes(self) -> Vec<u8> {
        // Two u64s and the dash: at most 41 bytes. Written digit by digit (no
        // formatter): every `XADD` replies with one.
        let mut out = Vec::with_capacity(41);
        push_decimal(&mut out, self.ms);
        out.push(b'-');
        push_decimal(&mut out, self.seq);
        out
    }
}

impl fmt::Display for StreamId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.ms, self.seq)
    }
}
