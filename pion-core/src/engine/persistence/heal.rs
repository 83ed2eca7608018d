//! Healing after the disk failed (see [`super::health`]): a snapshot of a new
//! generation — payloads of untrusted block files written again, the snapshot of
//! memory fsynced with its directory, every old segment removed and the log restarted
//! in a fresh one — and only then are writes accepted again. Attempted by the log's
//! background thread, with a growing wait between failed attempts.

use super::snapshotter::{run_claimed_as, Generation};
use super::turn::{SnapshotKind, Waiting};
use crate::Engine;

/// Tries to heal now if the disk failed and an attempt is due. Returns whether the
/// engine is healthy afterwards.
pub(crate) fn attempt_if_due(engine: &Engine) -> bool {
    let Some(d) = engine.durability() else {
        return true;
    };
    let health = d.health();
    if !health.heal_due() {
        return !health.is_failed();
    }
    // One snapshot at a time: a running one is waited for by the next attempt.
    let Ok(claim) = d
        .snapshots()
        .turn
        .claim(SnapshotKind::Rewrite, Waiting::Never, false)
    else {
        return false;
    };
    match run_claimed_as(engine, claim, Generation::Fresh) {
        Ok(_) => {
            health.healed();
            true
        }
        Err(e) => {
            health.attempt_failed(&e);
            false
        }
    }
}
