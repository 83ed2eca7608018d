//! Persistence commands: SAVE, BGSAVE, LASTSAVE and BGREWRITEAOF. In Pion a snapshot
//! is what compacts the write-ahead log, so `BGREWRITEAOF` takes one too.

use crate::command::flags::*;
use crate::command::{CommandSpec, Group};
use crate::commands::util::is_kw;
use crate::durability::{start_background_snapshot, take_snapshot};
use crate::error::{OpError, OpResult};
use crate::exec::Ctx;
use crate::reply::Reply;

/// This family's part of the command table.
pub static COMMANDS: &[CommandSpec] = &[
    CommandSpec::new(
        "save",
        1,
        ADMIN | NOSCRIPT | NO_ASYNC_LOADING | NO_MULTI,
        Group::Server,
        save,
    )
    .doc("Synchronously saves the database(s) to disk.", "1.0.0"),
    CommandSpec::new(
        "bgsave",
        -1,
        ADMIN | NOSCRIPT | NO_ASYNC_LOADING,
        Group::Server,
        bgsave,
    )
    .doc("Asynchronously saves the database(s) to disk.", "1.0.0"),
    CommandSpec::new(
        "lastsave",
        1,
        LOADING | STALE | FAST | DANGEROUS,
        Group::Server,
        lastsave,
    )
    .tips(&["nondeterministic_output"])
    .categories(&["admin"])
    .doc(
        "Returns the Unix timestamp of the last successful save to disk.",
        "1.0.0",
    ),
    CommandSpec::new(
        "bgrewriteaof",
        1,
        ADMIN | NOSCRIPT | NO_ASYNC_LOADING,
        Group::Server,
        bgrewriteaof,
    )
    .doc(
        "Asynchronously rewrites the append-only file to disk.",
        "1.0.0",
    ),
];

/// `SAVE`: a snapshot in the calling thread. Unlike Redis's, it does not stop other
/// clients: the snapshot is taken at a cut like `BGSAVE`'s, the caller just waits.
fn save(ctx: &mut Ctx<'_>, _: &[Vec<u8>]) -> OpResult<Reply> {
    take_snapshot(ctx.engine)
        .map(|_| Reply::ok())
        .map_err(|e| OpError::custom(format!("ERR {e}")))
}

fn bgsave(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    match argv.len() {
        1 => {}
        2 if is_kw(&argv[1], "schedule") => {}
        _ => return Err(OpError::Syntax),
    }
    start_background_snapshot(ctx.engine)
        .map(|()| Reply::Status("Background saving started".into()))
        .map_err(|e| OpError::custom(format!("ERR {e}")))
}

fn lastsave(ctx: &mut Ctx<'_>, _: &[Vec<u8>]) -> OpResult<Reply> {
    let at = match ctx.engine.durability() {
        Some(d) => d
            .snapshots()
            .last_save_s
            .load(std::sync::atomic::Ordering::Relaxed),
        None => ctx.engine.started_ms() / 1000,
    };
    Ok(Reply::Integer(at))
}

fn bgrewriteaof(ctx: &mut Ctx<'_>, _: &[Vec<u8>]) -> OpResult<Reply> {
    start_background_snapshot(ctx.engine)
        .map(|()| Reply::Status("Background append only file rewriting started".into()))
        .map_err(|e| {
            OpError::custom(if e.contains("already in progress") {
                "ERR Background append only file rewriting already in progress".to_string()
            } else {
                format!("ERR {e}")
            })
        })
}
