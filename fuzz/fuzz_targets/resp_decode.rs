//! Fuzzes the RESP request decoder: no panic, no out-of-bounds, progress on every step.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pion_server::resp::{decode, Decoded, Limits};

fuzz_target!(|data: &[u8]| {
    for unauthenticated in [false, true] {
        let limits = Limits { unauthenticated, ..Limits::default() };
        let mut at = 0;
        while at < data.len() {
            match decode(&data[at..], &limits) {
                Ok(Decoded::Command(_, used)) | Ok(Decoded::Skip(used)) => {
                    assert!(used > 0 && at + used <= data.len());
                    at += used;
                }
                Ok(Decoded::Incomplete) | Err(_) => break,
            }
        }
    }
});
