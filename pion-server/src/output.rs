//! A connection's pending output: reply bytes the encoders wrote, interleaved with
//! stored buffers a reply points into (the binary lane's fetches), which are written
//! from where they are with vectored I/O, never copied into the reply.

use pion_core::Bytes;
use std::collections::VecDeque;
use std::io::IoSlice;

/// Slices given to one vectored write at most.
const MAX_SLICES: usize = 64;

/// The reply buffer a connection keeps, made with it and kept for the next replies
/// once the rest is written (Redis keeps a client's 16 KiB reply buffer and frees the
/// rest): a big reply, or a burst of pushed messages, leaves no memory held behind it.
const KEPT_CAPACITY: usize = 16 * 1024;

/// A shared buffer that goes out right after `bytes[..at]`.
struct Attached {
    at: usize,
    data: Bytes,
}

/// Bytes not yet written to the socket, in order.
pub struct Output {
    /// Encoded reply bytes; `bytes[..written]` are gone already.
    bytes: Vec<u8>,
    written: usize,
    /// Shared buffers, by position in `bytes`; the first has `sent` bytes gone.
    attached: VecDeque<Attached>,
    sent: usize,
}

impl Default for Output {
    /// An empty output with its reply buffer made at once, as Redis makes each
    /// client's: a connection's memory is counted from the start, not when a burst
    /// of replies or pushed messages first fills it (which, under `maxmemory`, would
    /// count against the keys).
    fn default() -> Output {
        Output {
            bytes: Vec::with_capacity(KEPT_CAPACITY),
            written: 0,
            attached: VecDeque::new(),
            sent: 0,
        }
    }
}

impl Output {
    /// The buffer encoders append reply bytes to.
    pub fn bytes_mut(&mut self) -> &mut Vec<u8> {
        &mut self.bytes
    }

    /// Queues a shared buffer after every byte queued so far.
    pub fn attach(&mut self, data: Bytes) {
        if !data.is_empty() {
            self.attached.push_back(Attached {
                at: self.bytes.len(),
                data,
            });
        }
    }

    /// Bytes still to write.
    #[inline]
    pub fn len(&self) -> usize {
        let own = self.bytes.len() - self.written;
        if self.attached.is_empty() {
            return own;
        }
        let shared: usize = self.attached.iter().map(|a| a.data.len()).sum();
        own + shared - self.sent
    }

    /// Whether everything was written.
    pub fn is_empty(&self) -> bool {
        self.written == self.bytes.len() && self.attached.is_empty()
    }

    /// The encoded bytes' buffer capacity (`CLIENT LIST`'s `omem`).
    pub fn capacity(&self) -> usize {
        self.bytes.capacity() + self.attached.iter().map(|a| a.data.len()).sum::<usize>()
    }

    /// The bytes to write when no shared buffer is queued (the usual case: RESP
    /// replies), without building slices; `None` when one is.
    #[inline]
    pub fn plain(&self) -> Option<&[u8]> {
        self.attached
            .is_empty()
            .then(|| &self.bytes[self.written..])
    }

    /// The next bytes to write, as slices in order (at most [`MAX_SLICES`]).
    pub fn slices(&self) -> Vec<IoSlice<'_>> {
        let mut out = Vec::with_capacity(self.attached.len().min(MAX_SLICES / 2) * 2 + 1);
        let mut at = self.written;
        for (i, a) in self.attached.iter().enumerate() {
            if out.len() + 2 > MAX_SLICES {
                return out;
            }
            if a.at > at {
                out.push(IoSlice::new(&self.bytes[at..a.at]));
            }
            let skip = if i == 0 { self.sent } else { 0 };
            out.push(IoSlice::new(&a.data[skip..]));
            at = a.at;
        }
        if at < self.bytes.len() {
            out.push(IoSlice::new(&self.bytes[at..]));
        }
        out
    }

    /// Records that `n` bytes (from the front) were written.
    pub fn advance(&mut self, mut n: usize) {
        while n > 0 {
            let upto = self.attached.front().map_or(self.bytes.len(), |a| a.at);
            let own = (upto - self.written).min(n);
            self.written += own;
            n -= own;
            if n == 0 {
                break;
            }
            let Some(front) = self.attached.front() else {
                break;
            };
            let left = front.data.len() - self.sent;
            if n >= left {
                n -= left;
                self.attached.pop_front();
                self.sent = 0;
            } else {
                self.sent += n;
                n = 0;
            }
        }
        if self.is_empty() {
            self.bytes.clear();
            self.written = 0;
            if self.bytes.capacity() > KEPT_CAPACITY {
                self.bytes = Vec::with_capacity(KEPT_CAPACITY);
            }
        }
    }

    /// Everything still to write, copied (tests).
    pub fn to_vec(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.len());
        let mut at = self.written;
        for (i, a) in self.attached.iter().enumerate() {
            out.extend_from_slice(&self.bytes[at..a.at]);
            out.extend_from_slice(&a.data[if i == 0 { self.sent } else { 0 }..]);
            at = a.at;
        }
        out.extend_from_slice(&self.bytes[at..]);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filled(parts: &[&[u8]], shared_after: &[usize]) -> (Output, Vec<u8>) {
        let mut out = Output::default();
        let mut whole = Vec::new();
        for (i, p) in parts.iter().enumerate() {
            out.bytes_mut().extend_from_slice(p);
            whole.extend_from_slice(p);
            if shared_after.contains(&i) {
                let data: Vec<u8> = (0..(i as u8 * 3 + 5)).collect();
                whole.extend_from_slice(&data);
                out.attach(Bytes::from(data));
            }
        }
        (out, whole)
    }

    #[test]
    fn shared_buffers_go_out_in_place_whatever_the_write_sizes() {
        for step in 1..12 {
            let (mut out, whole) = filled(&[b"head", b"", b"mid", b"tail"], &[0, 1, 2]);
            assert_eq!(out.len(), whole.len());
            assert_eq!(out.to_vec(), whole);
            let mut got = Vec::new();
            while !out.is_empty() {
                let next = out.to_vec();
                let sliced: Vec<u8> = out.slices().iter().flat_map(|s| s.to_vec()).collect();
                assert_eq!(sliced, next);
                let n = step.min(next.len());
                got.extend_from_slice(&next[..n]);
                out.advance(n);
                assert_eq!(out.len(), whole.len() - got.len());
            }
            assert_eq!(got, whole, "writes of {step} bytes");
        }
    }

    #[test]
    fn many_buffers_are_written_a_bounded_number_of_slices_at_a_time() {
        let mut out = Output::default();
        for i in 0..200u8 {
            out.bytes_mut().push(i);
            out.attach(Bytes::from(vec![i; 3]));
        }
        let first = out.slices();
        assert!(first.len() <= MAX_SLICES);
        let n: usize = first.iter().map(|s| s.len()).sum();
        out.advance(n);
        assert_eq!(out.len(), 200 * 4 - n);
    }

    #[test]
    fn a_written_buffer_keeps_at_most_a_reply_chunk() {
        let mut out = Output::default();
        out.bytes_mut().extend_from_slice(&[b'x'; 100]);
        out.advance(100);
        assert_eq!(
            out.capacity(),
            KEPT_CAPACITY,
            "the buffer stays for the next replies"
        );
        out.bytes_mut().extend_from_slice(&vec![b'y'; 1 << 20]);
        out.advance(1 << 19);
        assert!(
            out.capacity() >= 1 << 20,
            "still writing: nothing is dropped"
        );
        out.advance(1 << 19);
        assert!(out.is_empty());
        assert_eq!(
            out.capacity(),
            KEPT_CAPACITY,
            "a written megabyte is given back"
        );
    }
}
