//! Fuzzes the texts an operator or a client hands the server outside the data path:
//! ACL files and rules, `FUNCTION RESTORE` payloads, `notify-keyspace-events` letters,
//! `client-output-buffer-limit` values and redis.conf-style lines. No input may panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pion_core::pubsub::limits::OutputLimits;

fuzz_target!(|data: &[u8]| {
    let _ = pion_core::scripting::functions::parse_dump(data);
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // Rules are read against the catalogue the command table registers when built.
    pion_core::command::table();
    let _ = pion_core::acl::file::parse(std::path::Path::new("fuzz.acl"), text, false);
    let _ = pion_core::pubsub::notify::parse_flags(text);
    let _ = OutputLimits::default().parse_into(text);
    for line in text.lines() {
        let _ = pion_core::config::file::split_args(line);
    }
});
