//! Fuzzes command execution: decoded requests run against an engine must never panic,
//! whatever the arguments.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pion_core::{Engine, EngineOptions};
use pion_server::resp::{decode, Decoded, Limits};

fuzz_target!(|data: &[u8]| {
    thread_local! {
        static ENGINE: Engine = Engine::in_memory(EngineOptions { disable_active_expiry: true, ..EngineOptions::default() });
    }
    ENGINE.with(|engine| {
        let mut session = engine.session();
        let mut at = 0;
        while at < data.len() {
            match decode(&data[at..], &Limits::default()) {
                Ok(Decoded::Command(argv, used)) => {
                    at += used;
                    let _ = session.execute_argv(&argv);
                }
                Ok(Decoded::Skip(used)) => at += used,
                _ => break,
            }
        }
    });
});
