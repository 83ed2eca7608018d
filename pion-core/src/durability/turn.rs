//! Whose turn it is to take a snapshot. One snapshot runs at a time, and what a request
//! does when another one runs follows Redis's rules for its two kinds of child
//! process, which Pion's two kinds of snapshot stand for: a *save* (`SAVE`, `BGSAVE`,
//! the `save` schedule; Redis's RDB child) and a *rewrite* (`BGREWRITEAOF` and the
//! snapshot that the log's growth triggers; Redis's AOF rewrite child).
//!
//! So `SAVE` during a rewrite waits for it and then saves (Redis saves beside the
//! rewrite), `SAVE` during a save is refused, `BGSAVE SCHEDULE` and `BGREWRITEAOF`
//! during the other kind are started as soon as it ends, and a tool that waits for
//! `rdb_bgsave_in_progress:0` or `aof_rewrite_in_progress:0` sees the turn taken from
//! the moment the command answered.

use parking_lot::{Condvar, Mutex};

/// The two kinds of snapshot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SnapshotKind {
    /// `SAVE`, `BGSAVE`, the `save` schedule (Redis's RDB save).
    Save,
    /// `BGREWRITEAOF` and the log-size trigger (Redis's AOF rewrite).
    Rewrite,
}

/// What a request for a turn does when another snapshot runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Waiting {
    /// Nothing: it is refused (background starts).
    Never,
    /// Waits for a rewrite, is refused by a save (`SAVE`).
    ForRewrite,
    /// Waits for either (`DEBUG RELOAD`, `SHUTDOWN SAVE`).
    ForAny,
}

/// A turn that was granted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use = "a claimed turn must be ended"]
pub enum Claim {
    /// This snapshot runs; ending the claim frees the turn.
    Own(SnapshotKind),
    /// Taken on the thread that holds the execution gate exclusively while another
    /// snapshot waits at the gate for its cut: that one cannot move before this one
    /// ends, so this one runs first, inside the other's turn.
    Nested,
}

/// The outcome of a request that may be deferred (`BGSAVE SCHEDULE`, `BGREWRITEAOF`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Deferred {
    /// The turn is this request's now.
    Started(Claim),
    /// It starts when the running snapshot of the other kind ends.
    Scheduled,
    /// A snapshot of the same kind runs; nothing was scheduled.
    Refused(SnapshotKind),
}

#[derive(Debug, Default)]
struct State {
    running: Option<SnapshotKind>,
    /// The running snapshot has passed its cut (it no longer needs the gate).
    cut_passed: bool,
    save_scheduled: bool,
    rewrite_scheduled: bool,
}

/// The snapshot turn of one engine.
#[derive(Debug, Default)]
pub struct SnapshotTurn {
    state: Mutex<State>,
    ended: Condvar,
}

impl SnapshotTurn {
    /// Claims the turn for a snapshot of `kind`, waiting as `waiting` allows.
    /// `exclusive_here` says whether the calling thread holds the execution gate
    /// exclusively. Refused with the kind of the running snapshot.
    pub fn claim(
        &self,
        kind: SnapshotKind,
        waiting: Waiting,
        exclusive_here: bool,
    ) -> Result<Claim, SnapshotKind> {
        let mut state = self.state.lock();
        loop {
            let Some(running) = state.running else {
                state.running = Some(kind);
                state.cut_passed = false;
                return Ok(Claim::Own(kind));
            };
            let waits = match waiting {
                Waiting::Never => false,
                Waiting::ForRewrite => running == SnapshotKind::Rewrite,
                Waiting::ForAny => true,
            };
            if !waits {
                return Err(running);
            }
            if exclusive_here && !state.cut_passed {
                // The running snapshot waits at the gate this thread holds: waiting for
                // it would never end, and it has not touched anything yet.
                return Ok(Claim::Nested);
            }
            self.ended.wait(&mut state);
        }
    }

    /// Claims the turn for `kind` now, or schedules it for when the running snapshot
    /// of the other kind ends.
    pub fn claim_or_schedule(&self, kind: SnapshotKind) -> Deferred {
        let mut state = self.state.lock();
        match state.running {
            None => {
                state.running = Some(kind);
                state.cut_passed = false;
                Deferred::Started(Claim::Own(kind))
            }
            Some(running) if running == kind => Deferred::Refused(kind),
            Some(_) => {
                match kind {
                    SnapshotKind::Save => state.save_scheduled = true,
                    SnapshotKind::Rewrite => state.rewrite_scheduled = true,
                }
                Deferred::Scheduled
            }
        }
    }

    /// Records that the running snapshot has made its cut.
    pub fn cut_passed(&self) {
        self.state.lock().cut_passed = true;
    }

    /// Ends a claim. When a snapshot was scheduled behind it, the turn passes straight
    /// to it and its claim is returned: the caller starts it.
    pub fn end(&self, claim: Claim) -> Option<Claim> {
        let Claim::Own(_) = claim else {
            return None;
        };
        let mut state = self.state.lock();
        let next = if std::mem::take(&mut state.save_scheduled) {
            Some(SnapshotKind::Save)
        } else if std::mem::take(&mut state.rewrite_scheduled) {
            Some(SnapshotKind::Rewrite)
        } else {
            None
        };
        state.running = next;
        state.cut_passed = false;
        drop(state);
        self.ended.notify_all();
        next.map(Claim::Own)
    }

    /// Waits until no snapshot is past its cut: one that is writing its file and
    /// deleting what it covers has finished. Called with the gate held exclusively by
    /// what reads the data directory (`DEBUG RELOAD`, `DEBUG LOADAOF`): a snapshot
    /// still before its cut then stays there until the caller is done.
    pub fn wait_past_cuts(&self) {
        let mut state = self.state.lock();
        while state.running.is_some() && state.cut_passed {
            self.ended.wait(&mut state);
        }
    }

    /// The kind of the running snapshot.
    pub fn running(&self) -> Option<SnapshotKind> {
        self.state.lock().running
    }

    /// Whether a snapshot of `kind` waits for the running one to end.
    pub fn scheduled(&self, kind: SnapshotKind) -> bool {
        let state = self.state.lock();
        match kind {
            SnapshotKind::Save => state.save_scheduled,
            SnapshotKind::Rewrite => state.rewrite_scheduled,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    use SnapshotKind::{Rewrite, Save};

    #[test]
    fn a_running_snapshot_refuses_background_starts_of_either_kind() {
        let turn = SnapshotTurn::default();
        let claim = turn.claim(Save, Waiting::Never, false).expect("free");
        assert_eq!(turn.claim(Save, Waiting::Never, false), Err(Save));
        assert_eq!(turn.claim(Rewrite, Waiting::Never, false), Err(Save));
        // SAVE does not wait for a save: it is refused, as Redis refuses it.
        assert_eq!(turn.claim(Save, Waiting::ForRewrite, false), Err(Save));
        assert_eq!(turn.end(claim), None);
        assert_eq!(turn.running(), None);
    }

    #[test]
    fn save_waits_for_a_rewrite_then_takes_the_turn() {
        let turn = Arc::new(SnapshotTurn::default());
        let rewrite = turn.claim(Rewrite, Waiting::Never, false).expect("free");
        turn.cut_passed();
        let waiter = {
            let turn = Arc::clone(&turn);
            std::thread::spawn(move || turn.claim(Save, Waiting::ForRewrite, false))
        };
        std::thread::sleep(Duration::from_millis(50));
        assert!(
            !waiter.is_finished(),
            "SAVE returned while the rewrite runs"
        );
        assert_eq!(turn.running(), Some(Rewrite));
        assert_eq!(turn.end(rewrite), None);
        let save = waiter.join().expect("waiter").expect("granted");
        assert_eq!(save, Claim::Own(Save));
        assert_eq!(turn.running(), Some(Save));
        assert_eq!(turn.end(save), None);
    }

    #[test]
    fn the_exclusive_thread_nests_inside_a_snapshot_parked_before_its_cut() {
        let turn = SnapshotTurn::default();
        let rewrite = turn.claim(Rewrite, Waiting::Never, false).expect("free");
        let nested = turn.claim(Save, Waiting::ForAny, true).expect("nested");
        assert_eq!(nested, Claim::Nested);
        assert_eq!(turn.end(nested), None);
        // The parked snapshot still holds the turn.
        assert_eq!(turn.running(), Some(Rewrite));
        assert_eq!(turn.end(rewrite), None);
    }

    #[test]
    fn waiting_for_cuts_waits_only_for_a_snapshot_past_its_cut() {
        let turn = Arc::new(SnapshotTurn::default());
        let parked = turn.claim(Rewrite, Waiting::Never, false).expect("free");
        // Before its cut: nothing to wait for.
        turn.wait_past_cuts();
        turn.cut_passed();
        let waiter = {
            let turn = Arc::clone(&turn);
            std::thread::spawn(move || turn.wait_past_cuts())
        };
        std::thread::sleep(Duration::from_millis(50));
        assert!(!waiter.is_finished(), "returned while a snapshot writes");
        assert_eq!(turn.end(parked), None);
        waiter.join().expect("waiter");
    }

    #[test]
    fn a_deferred_request_starts_when_the_other_kind_ends() {
        let turn = SnapshotTurn::default();
        let save = match turn.claim_or_schedule(Save) {
            Deferred::Started(c) => c,
            other => panic!("expected a start, got {other:?}"),
        };
        assert_eq!(turn.claim_or_schedule(Save), Deferred::Refused(Save));
        assert_eq!(turn.claim_or_schedule(Rewrite), Deferred::Scheduled);
        assert!(turn.scheduled(Rewrite));
        // The turn passes straight to the scheduled rewrite: nothing can slip between.
        let next = turn.end(save).expect("the scheduled rewrite");
        assert_eq!(next, Claim::Own(Rewrite));
        assert!(!turn.scheduled(Rewrite));
        assert_eq!(turn.running(), Some(Rewrite));
        assert_eq!(turn.claim(Save, Waiting::Never, false), Err(Rewrite));
        assert_eq!(turn.end(next), None);
        assert_eq!(turn.running(), None);
    }
}
