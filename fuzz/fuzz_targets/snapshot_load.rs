//! Fuzzes the snapshot reader: any bytes as a snapshot file must be refused or loaded
//! without a panic, and no count in the file may make it allocate beyond its size.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pion_core::durability::snapshot::SnapshotContents;
use pion_core::keyspace::dump::decode_body;
use pion_core::value::EncodingLimits;

fuzz_target!(|data: &[u8]| {
    if let Ok(snap) = SnapshotContents::parse(data.to_vec()) {
        let mut keys = 0u64;
        let _ = snap.for_each_key(&EncodingLimits::default(), |_| keys += 1);
        assert!(keys <= snap.keys);
    }
    // The value decoder on its own (random bytes never pass the checksums above).
    let _ = decode_body(data, &EncodingLimits::default(), |k| {
        assert!(!k.value.is_empty_collection());
    });
});
