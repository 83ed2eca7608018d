//! The write-ahead log's on-disk format: segment files of checksummed, sequence-numbered
//! records, and the scanner recovery uses to tell a torn tail (a write cut short by a
//! crash, safe to drop) from damage in the middle of the log (never skipped).
//!
//! ```text
//! segment  = header record*
//! header   = "PIONWAL1" first_seq:u64 crc:u32 reserved:u32          (24 bytes)
//! record   = len:u32 crc:u32 seq:u64 payload[len]                    (16 + len bytes)
//!            crc = CRC32C(payload ++ seq as 8 little-endian bytes)
//! payload  = kind:u8 (1 = commands) time_ms:i64 count:u32 command*
//! command  = db:u32 argc:u32 (len:u32 byte[len])*argc
//! ```
//!
//! A record carries the effect of one write: the command as it ran, or for commands
//! whose outcome is random or machine-dependent the commands that reproduce it
//! (`SPOP` is logged as `SREM` of what it popped). `time_ms` is the time the command
//! ran at; replay runs it at that time, so relative expiries (`EXPIRE k 10`) land on the
//! same absolute deadline and lazy expiry decides exactly as it did live. Several
//! commands in one record are applied all or nothing.

use crate::util::codec::{
    crc, crc_extend, put_bytes, put_i64, put_u32, put_u64, Malformed, Reader,
};

/// Magic bytes at the start of every segment.
pub const SEGMENT_MAGIC: &[u8; 8] = b"PIONWAL1";
/// Size of a segment header.
pub const SEGMENT_HEADER_LEN: usize = 24;
/// Size of a record header.
pub const RECORD_HEADER_LEN: usize = 16;
/// Payload kind: a batch of commands.
const KIND_COMMANDS: u8 = 1;

/// One logged command: the database it ran against and its arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggedCommand {
    /// Database index.
    pub db: u32,
    /// The command and its arguments.
    pub argv: Vec<Vec<u8>>,
}

/// A decoded record payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Payload {
    /// Commands applied together at `time_ms` (Unix milliseconds).
    Commands {
        /// When they ran.
        time_ms: i64,
        /// What ran, in order.
        commands: Vec<LoggedCommand>,
    },
}

/// The header of a segment whose first record has sequence number `first_seq`.
pub fn segment_header(first_seq: u64) -> [u8; SEGMENT_HEADER_LEN] {
    let mut h = [0u8; SEGMENT_HEADER_LEN];
    h[..8].copy_from_slice(SEGMENT_MAGIC);
    h[8..16].copy_from_slice(&first_seq.to_le_bytes());
    let c = crc(&h[..16]);
    h[16..20].copy_from_slice(&c.to_le_bytes());
    h
}

/// Encodes a commands payload: `(db, argv)` pairs that ran at `time_ms`.
pub fn encode_commands<'a>(
    time_ms: i64,
    commands: impl ExactSizeIterator<Item = (usize, &'a [Vec<u8>])>,
    out: &mut Vec<u8>,
) {
    out.push(KIND_COMMANDS);
    put_i64(out, time_ms);
    put_u32(out, commands.len() as u32);
    for (db, argv) in commands {
        put_u32(out, db as u32);
        put_u32(out, argv.len() as u32);
        for a in argv {
            put_bytes(out, a);
        }
    }
}

/// Appends a framed record (header and payload) to `out`. `payload_crc` is
/// `crc(payload)`, computed by the caller outside any lock.
pub fn frame(seq: u64, payload: &[u8], payload_crc: u32, out: &mut Vec<u8>) {
    put_u32(out, payload.len() as u32);
    put_u32(out, crc_extend(payload_crc, &seq.to_le_bytes()));
    put_u64(out, seq);
    out.extend_from_slice(payload);
}

/// Decodes a record payload.
pub fn decode_payload(payload: &[u8]) -> Result<Payload, Malformed> {
    let mut r = Reader::new(payload);
    match r.u8()? {
        KIND_COMMANDS => {
            let time_ms = r.i64()?;
            let n = r.count(8)?;
            let mut commands = Vec::with_capacity(n);
            for _ in 0..n {
                let db = r.u32()?;
                let argc = r.count(4)?;
                let mut argv = Vec::with_capacity(argc);
                for _ in 0..argc {
                    argv.push(r.bytes()?.to_vec());
                }
                if argv.is_empty() {
                    return Err(Malformed("empty command"));
                }
                commands.push(LoggedCommand { db, argv });
            }
            if r.remaining() != 0 {
                return Err(Malformed("trailing bytes after the commands"));
            }
            Ok(Payload::Commands { time_ms, commands })
        }
        _ => Err(Malformed("unknown record kind")),
    }
}

/// A record found by [`scan_segment`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Framed<'a> {
    /// Byte offset of the record header in the segment file.
    pub offset: usize,
    /// Sequence number.
    pub seq: u64,
    /// The payload (checksum verified, not yet decoded).
    pub payload: &'a [u8],
}

/// How a segment ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScanEnd {
    /// After the last complete record: nothing more, or only zeros (segment files are
    /// zero-filled ahead of the records).
    Clean,
    /// A record cut short by a crash: `bytes` bytes from `offset` to the end of the
    /// file hold an incomplete or unverifiable record and no valid record after it.
    /// Never acknowledged; safe to truncate when it is the newest segment.
    Torn {
        /// Where the torn record starts.
        offset: usize,
        /// Bytes from there to the end of the file.
        bytes: usize,
    },
    /// A bad record with valid records after it (or a bad header): never skipped
    /// silently.
    Corrupt {
        /// Where the bad record starts.
        offset: usize,
        /// What is wrong.
        reason: &'static str,
    },
}

/// The result of reading one segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scan<'a> {
    /// Sequence number of the segment's first record (from its header); `None` when
    /// the header itself is torn or damaged.
    pub first_seq: Option<u64>,
    /// Every valid record before the end.
    pub records: Vec<Framed<'a>>,
    /// Offset just past the last valid record (or the header).
    pub records_end: usize,
    /// How the segment ends.
    pub end: ScanEnd,
}

/// The record header at `pos`, if the bytes are there: (payload length, crc, seq).
fn header_at(bytes: &[u8], pos: usize) -> Option<(usize, u32, u64)> {
    let mut r = Reader::new(bytes.get(pos..)?);
    Some((r.u32().ok()? as usize, r.u32().ok()?, r.u64().ok()?))
}

/// Whether a complete record with a valid checksum and a sequence number after
/// `after_seq` starts anywhere at or past `from`. A crash only ever tears the newest
/// write, so a bad record followed by a good one is damage, not a torn tail.
fn valid_record_after(bytes: &[u8], from: usize, after_seq: u64) -> bool {
    let last = bytes.len().saturating_sub(RECORD_HEADER_LEN);
    (from..=last).any(|pos| match header_at(bytes, pos) {
        Some((len, stored, seq)) if seq > after_seq && seq - after_seq < 1 << 40 => {
            let end = pos + RECORD_HEADER_LEN;
            end.checked_add(len)
                .and_then(|e| bytes.get(end..e))
                .is_some_and(|p| crc_extend(crc(p), &seq.to_le_bytes()) == stored)
        }
        _ => false,
    })
}

/// Reads a segment: every valid record in order, and how it ends. Never panics.
pub fn scan_segment(bytes: &[u8]) -> Scan<'_> {
    let mut scan = Scan {
        first_seq: None,
        records: Vec::new(),
        records_end: 0,
        end: ScanEnd::Clean,
    };
    if bytes.len() < SEGMENT_HEADER_LEN {
        // Created, header not (fully) written when the crash came.
        scan.end = ScanEnd::Torn {
            offset: 0,
            bytes: bytes.len(),
        };
        return scan;
    }
    let header = &bytes[..SEGMENT_HEADER_LEN];
    let stored_crc = u32::from_le_bytes([header[16], header[17], header[18], header[19]]);
    if &header[..8] != SEGMENT_MAGIC || crc(&header[..16]) != stored_crc {
        scan.end = if bytes.iter().all(|&b| b == 0) {
            ScanEnd::Torn {
                offset: 0,
                bytes: bytes.len(),
            }
        } else {
            ScanEnd::Corrupt {
                offset: 0,
                reason: "bad segment header",
            }
        };
        return scan;
    }
    let mut first = [0u8; 8];
    first.copy_from_slice(&header[8..16]);
    let first_seq = u64::from_le_bytes(first);
    scan.first_seq = Some(first_seq);
    let mut pos = SEGMENT_HEADER_LEN;
    let mut expected = first_seq;
    scan.records_end = pos;
    while pos < bytes.len() {
        let rest = &bytes[pos..];
        if rest.iter().all(|&b| b == 0) {
            return scan; // The zero-filled space after the last record.
        }
        let problem = match header_at(bytes, pos) {
            None => Some("incomplete record header"),
            Some((len, stored, seq)) => {
                match RECORD_HEADER_LEN
                    .checked_add(len)
                    .filter(|&end| end <= rest.len())
                {
                    None => Some("record runs past the end of the file"),
                    Some(end) => {
                        let payload = &rest[RECORD_HEADER_LEN..end];
                        if crc_extend(crc(payload), &seq.to_le_bytes()) != stored {
                            Some("checksum mismatch")
                        } else if seq != expected {
                            Some("sequence number out of order")
                        } else if decode_payload(payload).is_err() {
                            Some("malformed record")
                        } else {
                            scan.records.push(Framed {
                                offset: pos,
                                seq,
                                payload,
                            });
                            expected += 1;
                            pos += end;
                            scan.records_end = pos;
                            None
                        }
                    }
                }
            }
        };
        if let Some(reason) = problem {
            let newest = match reason {
                "sequence number out of order" | "malformed record" => false,
                _ => !valid_record_after(bytes, pos + 1, expected.saturating_sub(1)),
            };
            scan.end = if newest {
                ScanEnd::Torn {
                    offset: pos,
                    bytes: bytes.len() - pos,
                }
            } else {
                ScanEnd::Corrupt {
                    offset: pos,
                    reason,
                }
            };
            return scan;
        }
    }
    scan
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(words: &[&str]) -> Vec<Vec<u8>> {
        words.iter().map(|w| w.as_bytes().to_vec()).collect()
    }

    fn record(seq: u64, words: &[&str], out: &mut Vec<u8>) {
        let a = argv(words);
        let mut payload = Vec::new();
        encode_commands(
            1_700_000_000_000,
            [(3usize, a.as_slice())].into_iter(),
            &mut payload,
        );
        frame(seq, &payload, crc(&payload), out);
    }

    fn segment(first: u64, n: u64) -> Vec<u8> {
        let mut out = segment_header(first).to_vec();
        for i in 0..n {
            record(first + i, &["SET", "k", &i.to_string()], &mut out);
        }
        out
    }

    #[test]
    fn round_trip() {
        let seg = segment(7, 3);
        let scan = scan_segment(&seg);
        assert_eq!(scan.first_seq, Some(7));
        assert_eq!(scan.end, ScanEnd::Clean);
        let seqs: Vec<u64> = scan.records.iter().map(|r| r.seq).collect();
        assert_eq!(seqs, vec![7, 8, 9]);
        assert_eq!(
            decode_payload(scan.records[2].payload),
            Ok(Payload::Commands {
                time_ms: 1_700_000_000_000,
                commands: vec![LoggedCommand {
                    db: 3,
                    argv: argv(&["SET", "k", "2"])
                }]
            })
        );
    }

    #[test]
    fn every_cut_of_the_last_record_is_a_torn_tail() {
        let seg = segment(1, 3);
        let last = scan_segment(&seg).records[2].offset;
        for cut in last + 1..seg.len() {
            let scan = scan_segment(&seg[..cut]);
            assert_eq!(scan.records.len(), 2, "cut at {cut}");
            assert_eq!(
                scan.end,
                ScanEnd::Torn {
                    offset: last,
                    bytes: cut - last
                },
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn a_flipped_byte_before_the_last_record_is_corruption() {
        let seg = segment(1, 3);
        let second = scan_segment(&seg).records[1].offset;
        for pos in second..scan_segment(&seg).records[2].offset {
            for flip in [0x01, 0x40, 0xff] {
                let mut bad = seg.clone();
                bad[pos] ^= flip;
                let scan = scan_segment(&bad);
                assert_eq!(scan.records.len(), 1, "flip at {pos}");
                assert!(
                    matches!(scan.end, ScanEnd::Corrupt { offset, .. } if offset == second),
                    "flip {flip:#x} at {pos}: {:?}",
                    scan.end
                );
            }
        }
    }

    #[test]
    fn zeros_after_the_records_are_the_end_and_a_torn_write_before_them_is_torn() {
        let mut seg = segment(1, 2);
        let records_end = seg.len();
        seg.extend_from_slice(&[0u8; 4096]);
        let scan = scan_segment(&seg);
        assert_eq!((scan.end, scan.records_end), (ScanEnd::Clean, records_end));
        // A record written half-way into the zeros (a crash during the write).
        let mut full = segment(1, 3);
        let third = scan_segment(&full).records[2].offset;
        full.truncate(third + 10);
        full.extend_from_slice(&[0u8; 4096]);
        assert_eq!(
            scan_segment(&full).end,
            ScanEnd::Torn {
                offset: third,
                bytes: full.len() - third
            }
        );
    }

    #[test]
    fn a_flipped_byte_in_the_last_record_is_a_torn_tail() {
        let seg = segment(1, 2);
        let last = scan_segment(&seg).records[1].offset;
        let mut bad = seg.clone();
        let n = bad.len();
        bad[n - 1] ^= 1;
        assert_eq!(
            scan_segment(&bad).end,
            ScanEnd::Torn {
                offset: last,
                bytes: n - last
            }
        );
    }

    #[test]
    fn sequence_gaps_and_bad_headers_are_corruption() {
        let mut seg = segment(1, 1);
        record(5, &["DEL", "k"], &mut seg);
        record(6, &["DEL", "k"], &mut seg);
        assert!(matches!(
            scan_segment(&seg).end,
            ScanEnd::Corrupt {
                reason: "sequence number out of order",
                ..
            }
        ));
        let mut seg = segment(1, 1);
        seg[3] = b'X';
        assert!(matches!(
            scan_segment(&seg).end,
            ScanEnd::Corrupt { offset: 0, .. }
        ));
        assert!(matches!(
            scan_segment(&seg[..10]).end,
            ScanEnd::Torn { offset: 0, .. }
        ));
    }
}
