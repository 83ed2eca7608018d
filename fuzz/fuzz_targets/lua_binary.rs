//! Fuzzes the binary formats scripts decode from data they read: `cmsgpack.unpack`
//! and its stepping forms on MessagePack, and `struct.unpack` / `struct.size` on a
//! format and a record (the input split at its first zero byte). Errors are expected;
//! no input may panic, abort or recurse without bound.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mlua::{Function, Lua};

/// A Lua state with the two libraries, and the chunk that feeds them one input.
struct Harness {
    lua: Lua,
    run: Function,
}

fn harness() -> Harness {
    let lua = Lua::new();
    let globals = lua.globals();
    let cmsgpack = pion_core::scripting::cmsgpack::open(&lua).expect("cmsgpack");
    let structs = pion_core::scripting::struct_pack::open(&lua).expect("struct");
    globals.set("cmsgpack", cmsgpack).expect("global");
    globals.set("struct", structs).expect("global");
    let run = lua
        .load(
            "local data, fmt, record = ...
             pcall(cmsgpack.unpack, data)
             local offset = 0
             for _ = 1, 8 do
               local ok, next_offset = pcall(cmsgpack.unpack_one, data, offset)
               if not ok or next_offset == -1 then break end
               offset = next_offset
             end
             pcall(cmsgpack.unpack_limit, data, 3, #data % 5)
             pcall(struct.size, fmt)
             pcall(struct.unpack, fmt, record)
             local ok, packed = pcall(cmsgpack.pack, select(2, pcall(cmsgpack.unpack_one, data)))
             if ok then pcall(cmsgpack.unpack, packed) end",
        )
        .into_function()
        .expect("chunk");
    Harness { lua, run }
}

thread_local! {
    static HARNESS: Harness = harness();
}

fuzz_target!(|data: &[u8]| {
    let split = data.iter().position(|&b| b == 0).unwrap_or(data.len());
    let (fmt, record) = (&data[..split], data.get(split + 1..).unwrap_or(&[]));
    HARNESS.with(|h| {
        let strings = (
            h.lua.create_string(data),
            h.lua.create_string(fmt),
            h.lua.create_string(record),
        );
        if let (Ok(a), Ok(b), Ok(c)) = strings {
            // A Lua error is an answer, not a failure; only a panic or abort is.
            let _ = h.run.call::<()>((a, b, c));
        }
    });
});
