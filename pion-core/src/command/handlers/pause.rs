//! `CLIENT PAUSE timeout [WRITE|ALL]` and `CLIENT UNPAUSE`: the handlers over the
//! engine's [`PauseState`](crate::server::pause::PauseState).

use crate::command::ctx::Ctx;
use crate::error::{OpError, OpResult};
use crate::reply::Reply;

/// `CLIENT PAUSE timeout [WRITE|ALL]`.
pub(crate) fn client_pause(ctx: &mut Ctx<'_>, argv: &[Vec<u8>]) -> OpResult<Reply> {
    if argv.len() > 4 {
        return Err(OpError::subcommand_syntax(argv));
    }
    let timeout = crate::util::num::parse_i64(&argv[2])
        .ok_or_else(|| OpError::custom("ERR timeout is not an integer or out of range"))?;
    if timeout < 0 {
        return Err(OpError::custom("ERR timeout is negative"));
    }
    let all = match argv.get(3) {
        None => true,
        Some(m) if m.eq_ignore_ascii_case(b"all") => true,
        Some(m) if m.eq_ignore_ascii_case(b"write") => false,
        Some(_) => {
            return Err(OpError::custom(
                "ERR CLIENT PAUSE mode must be WRITE or ALL",
            ))
        }
    };
    let now = ctx.engine().now_ms();
    let until = ctx
        .operator()
        .pause
        .pause(now.saturating_add(timeout), all, now);
    // Keys do not expire while clients are paused (either mode), as in Redis: they
    // read as missing, and are removed once the pause ends.
    ctx.keyspace().hold_expiry_until(until);
    Ok(Reply::ok())
}

/// `CLIENT UNPAUSE`: ends the pause and wakes every client, so held commands run now
/// rather than at their worker's next timer tick.
pub(crate) fn client_unpause(ctx: &mut Ctx<'_>, _: &[Vec<u8>]) -> OpResult<Reply> {
    ctx.operator().pause.unpause();
    ctx.keyspace().hold_expiry_until(0);
    for client in ctx.clients().snapshot() {
        if let Some(wake) = client.waker.lock().as_ref() {
            wake();
        }
    }
    Ok(Reply::ok())
}
