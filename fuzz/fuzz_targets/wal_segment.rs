//! Fuzzes the write-ahead log reader: any bytes as a segment file must scan without a
//! panic, and the scan must account for every byte (records, then a clean end followed
//! only by zeros, a torn tail that reaches the end of the file, or damage at a record
//! boundary).
#![no_main]

use libfuzzer_sys::fuzz_target;
use pion_core::durability::record::{decode_payload, scan_segment, ScanEnd, SEGMENT_HEADER_LEN};

fuzz_target!(|data: &[u8]| {
    let scan = scan_segment(data);
    let mut end = SEGMENT_HEADER_LEN.min(data.len());
    let mut seq = scan.first_seq;
    for r in &scan.records {
        assert_eq!(r.offset, end, "records are contiguous");
        assert_eq!(Some(r.seq), seq, "sequence numbers follow the header");
        assert!(decode_payload(r.payload).is_ok(), "a scanned record decodes");
        end = r.offset + 16 + r.payload.len();
        seq = seq.map(|s| s + 1);
    }
    match scan.end {
        // After the last record: nothing, or only the zero-filled rest of the file.
        ScanEnd::Clean => {
            assert_eq!(scan.records_end, end);
            assert!(data[end..].iter().all(|&b| b == 0), "clean end before non-zero bytes");
        }
        ScanEnd::Torn { offset, bytes } => {
            assert!(offset == end || offset == 0);
            assert_eq!(offset + bytes, data.len());
        }
        ScanEnd::Corrupt { offset, .. } => assert!(offset == end || offset == 0),
    }
    // Payloads on their own: never a panic.
    let _ = decode_payload(data);
});
