//! Scripts and functions run on the engine: `EVAL`/`EVALSHA` and `FCALL` find their
//! script in [`Scripting`](crate::scripting::Scripting) and run it here, where
//! `redis.call` goes through the dispatcher ([`call`]). The Lua states, the script
//! cache and the libraries are [`scripting`](crate::scripting)'s.

pub mod call;
mod run;

use crate::clients::ClientState;
use crate::engine::Engine;
use crate::error::OpResult;
use crate::keyspace::DetachedEntry;
use crate::reply::Reply;

/// `EVAL`/`EVALSHA` (`by_sha`) and their `_RO` forms.
pub fn eval(
    engine: &Engine,
    client: &mut ClientState,
    argv: &[Vec<u8>],
    by_sha: bool,
    ro_command: bool,
) -> OpResult<Reply> {
    engine.scripting().eval(
        client,
        argv,
        by_sha,
        ro_command,
        &mut |scripting, state, func, client, inv| {
            run::run(scripting, state, func, engine, client, inv)
        },
    )
}

/// `FCALL`/`FCALL_RO`.
pub fn fcall(
    engine: &Engine,
    client: &mut ClientState,
    argv: &[Vec<u8>],
    ro_command: bool,
) -> OpResult<Reply> {
    engine.scripting().fcall(
        client,
        argv,
        ro_command,
        &mut |scripting, state, func, client, inv| {
            run::run(scripting, state, func, engine, client, inv)
        },
    )
}

/// Whether used memory passed `maxmemory` (scripts do not evict: as under
/// `noeviction`).
fn over_maxmemory(engine: &Engine) -> bool {
    let limit = engine.maxmemory();
    limit > 0 && engine.used_memory_for_eviction() > limit
}

/// Ends a forked debugging session: every key its script wrote is as it was before,
/// in the keyspace and in the search indexes.
fn rollback_forked(engine: &Engine, undo: crate::scripting::debugger::Undo) {
    for (db, key, before) in undo.into_saved() {
        let mut ks = engine.keyspace().lock_keys(&[&key], engine.now_ms());
        let _ = match before {
            Some(entry) => ks.put_entry(db, &key, entry),
            None => ks.take_entry(db, &key).map(drop),
        };
        engine.search().key_written(&mut ks, db, &key);
    }
}

/// Before a script's write command runs in a forked debugging session: the keys it
/// may change are saved for the rollback, or the command is refused when it cannot be
/// undone key by key.
fn save_for_rollback(
    lua: &mlua::Lua,
    engine: &Engine,
    db: usize,
    spec: &crate::command::CommandSpec,
    argv: &[Vec<u8>],
) -> Result<(), &'static str> {
    use crate::command::Group;
    let undoable = !(spec.whole_keyspace
        || matches!(spec.name, "move" | "copy")
        || matches!(spec.group, Group::Search | Group::PrefixCache));
    let positions = crate::command::key_indices(spec, argv).unwrap_or_default();
    let keys: Vec<&[u8]> = positions.iter().map(|&i| argv[i].as_slice()).collect();
    let mut peek = |key: &[u8]| -> Option<DetachedEntry> {
        let mut ks = engine.keyspace().lock_keys(&[key], engine.now_ms());
        ks.detached(db, key).ok().flatten()
    };
    crate::scripting::debugger::before_write(lua, db, undoable, &keys, &mut peek)
}
