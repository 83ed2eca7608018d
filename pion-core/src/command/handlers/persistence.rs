//! Persistence commands: SAVE, BGSAVE, LASTSAVE and BGREWRITEAOF. In Pion a snapshot
//! is what compacts the write-ahead log, so `BGREWRITEAOF` takes one too.

use crate::command::ctx::Ctx;
use crate::command::flags::*;
use crate::command::handlers::util::is_kw;
use crate::command::{CommandSpec, Group};
use crate::durability::{SnapshotKind, Waiting};
use crate::engine::persistence::{
    start_background_snapshot, start_or_schedule, take_snapshot, BackgroundStart, SnapshotError,
};
use crate::error::{OpError, OpResult};
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
/// clients: the snapshot is taken at a cut like `BGSAVE`'s, the caller just waits. A
/// running rewrite is waited for (Redis saves beside it); a running save refuses it.
fn save(ctx: &mut Ctx<'_>, _: &[Vec<u8>]) -> OpResult<Reply> {
    take_snapshot(ctx.engine(), Waiting::ForRewrite)
        .map(|_| Reply::ok())
        .map_err(|e| OpError::custom(format!("ERR {e}")))
}

/// `BGSAVE [SCHEDULE]`: a snapshot on its own thread. During a rewrite it is refused
/// unless `SCHEDULE` asks for it to follow the rewrite; inside `EXEC` it is scheduled
/// (its cut waits for the transaction), as in Redis.
fn bgsave(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    let schedule = match argv.len() {
        1 => false,
        2 if is_kw(&argv[1], "schedule") => true,
        _ => return Err(OpError::Syntax),
    };
    let in_exec = ctx.client.nested.is_some();
    let started = if schedule || in_exec {
        start_or_schedule(ctx.engine(), SnapshotKind::Save)
    } else {
        start_background_snapshot(ctx.engine(), SnapshotKind::Save)
            .map(|()| BackgroundStart::Started)
    };
    match started {
        Ok(BackgroundStart::Started) if !in_exec => {
            Ok(Reply::Status("Background saving started".into()))
        }
        Ok(_) => Ok(Reply::Status("Background saving scheduled".into())),
        Err(SnapshotError::Running(SnapshotKind::Rewrite)) => Err(OpError::custom(
            "ERR Another child process is active (AOF?): can't BGSAVE right now. \
             Use BGSAVE SCHEDULE in order to schedule a BGSAVE whenever possible.",
        )),
        Err(e) => Err(OpError::custom(format!("ERR {e}"))),
    }
}

fn lastsave(ctx: &mut Ctx<'_>, _: &[Vec<u8>]) -> OpResult<Reply> {
    let at = match ctx.durability() {
        Some(d) => d
            .snapshots()
            .last_save_s
            .load(std::sync::atomic::Ordering::Relaxed),
        None => ctx.engine().started_ms() / 1000,
    };
    Ok(Reply::Integer(at))
}

/// `BGREWRITEAOF`: in Pion a snapshot is what compacts the log, so it takes one, of
/// the rewrite kind. During a save (or inside `EXEC`) it is scheduled, as in Redis.
fn bgrewriteaof(ctx: &mut Ctx<'_>, _: &[Vec<u8>]) -> OpResult<Reply> {
    let in_exec = ctx.client.nested.is_some();
    match start_or_schedule(ctx.engine(), SnapshotKind::Rewrite) {
        Ok(BackgroundStart::Started) if !in_exec => Ok(Reply::Status(
            "Background append only file rewriting started".into(),
        )),
        Ok(_) => Ok(Reply::Status(
            "Background append only file rewriting scheduled".into(),
        )),
        Err(e) => Err(OpError::custom(format!("ERR {e}"))),
    }
}
