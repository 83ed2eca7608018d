//! Fuzzes RESTORE's payload decoder: arbitrary bytes as a body, wrapped with a valid
//! RDB version and CRC-64 (so the input reaches the decoder instead of stopping at the
//! checksum), under tiny and default encoding thresholds. No input may panic or
//! allocate past what it carries; a payload either restores, after which the value
//! DUMPs and that payload restores to the same DUMP, or it is refused with Redis's
//! `Bad data format`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pion_core::util::crc64::crc64;
use pion_core::value::rdb::{self, DumpOptions, LoadOptions};
use pion_core::value::EncodingLimits;

fuzz_target!(|data: &[u8]| {
    let Some((&head, body)) = data.split_first() else {
        return;
    };
    let mut payload = body.to_vec();
    payload.extend_from_slice(&u16::from(head % 13).to_le_bytes());
    let crc = crc64(0, &payload);
    payload.extend_from_slice(&crc.to_le_bytes());
    let limits = if head & 0x80 != 0 {
        EncodingLimits {
            hash_max_listpack_entries: 2,
            hash_max_listpack_value: 4,
            set_max_intset_entries: 2,
            zset_max_listpack_entries: 2,
            zset_max_listpack_value: 4,
            ..EncodingLimits::default()
        }
    } else {
        EncodingLimits::default()
    };
    let opts = LoadOptions {
        limits,
        max_string: 1 << 20,
    };
    if let Ok(value) = rdb::restore(&payload, &opts) {
        let again = rdb::dump(&value, &DumpOptions::default());
        let back = rdb::restore(&again, &opts).expect("a value Pion dumped restores");
        assert_eq!(back.type_name(), value.type_name());
    }
});
