//! `CLIENT PAUSE`: while a pause lasts, clients' commands (all of them, or only those
//! that write or may replicate) are held, not run. The state lives here; a connection
//! asks [`PauseState::holds`] before running a command and, when held, keeps the
//! command and stops reading until the pause ends (its worker re-checks on its timer,
//! and `CLIENT UNPAUSE` wakes every client).

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};

use parking_lot::Mutex;

use crate::command::{flags, CommandSpec};

/// The engine's pause: until when, and whether every command is held.
#[derive(Debug, Default)]
pub struct PauseState {
    /// Unix ms the pause ends at; 0 when there is none.
    until_ms: AtomicI64,
    /// `ALL` (every command held) rather than `WRITE`.
    all: AtomicBool,
    /// Serialises pause and unpause (the two fields change together).
    change: Mutex<()>,
    /// Clients whose command is held now: Redis counts them among `blocked_clients`.
    held_clients: AtomicUsize,
}

impl PauseState {
    /// Pauses until `until_ms`. As in Redis, a pause already under way only grows: the
    /// later end and the stricter mode win. Returns when the pause now ends.
    pub fn pause(&self, until_ms: i64, all: bool, now_ms: i64) -> i64 {
        let _g = self.change.lock();
        let active = self.until_ms.load(Ordering::Acquire) > now_ms;
        let all = all || (active && self.all.load(Ordering::Relaxed));
        let until = if active {
            until_ms.max(self.until_ms.load(Ordering::Relaxed))
        } else {
            until_ms
        };
        self.all.store(all, Ordering::Relaxed);
        self.until_ms.store(until.max(1), Ordering::Release);
        until.max(1)
    }

    /// A client's command is now held.
    pub fn client_held(&self) {
        self.held_clients.fetch_add(1, Ordering::Relaxed);
    }

    /// A held command ran, or its client went away.
    pub fn client_released(&self) {
        self.held_clients.fetch_sub(1, Ordering::Relaxed);
    }

    /// How many clients have a command held (part of `INFO`'s `blocked_clients`).
    pub fn held_clients(&self) -> usize {
        self.held_clients.load(Ordering::Relaxed)
    }

    /// Ends the pause now (`CLIENT UNPAUSE`).
    pub fn unpause(&self) {
        let _g = self.change.lock();
        self.until_ms.store(0, Ordering::Release);
        self.all.store(false, Ordering::Relaxed);
    }

    /// When a command of this kind is held at `now_ms`: the Unix ms the pause ends at.
    pub fn holds(&self, spec: &CommandSpec, now_ms: i64) -> Option<i64> {
        let until = self.until_ms.load(Ordering::Acquire);
        if until == 0 || until <= now_ms {
            return None;
        }
        let held = self.all.load(Ordering::Relaxed)
            || spec.has(flags::WRITE)
            || spec.has(flags::MAY_REPLICATE);
        held.then_some(until)
    }

    /// Whether the command in `argv` is held now (a command that fails to resolve is
    /// not: its error is the reply, as in Redis).
    pub fn holds_argv(&self, argv: &[Vec<u8>]) -> bool {
        self.holds_argv_queued(argv, &[], |_| None)
    }

    /// [`holds_argv`](Self::holds_argv) for a client whose transaction has `queued`
    /// commands, with `declared_no_writes` saying, for a script or function that declared
    /// flags, whether they include `no-writes` (`None`: it declared none). Under a write pause, as in Redis, `EXEC` is held
    /// when a queued command would be; a script (`EVAL`, `FCALL`, not their `_RO`
    /// forms) is held as a possible writer unless it declared `no-writes`, and held
    /// as a writer when it declared flags without it.
    pub fn holds_argv_queued(
        &self,
        argv: &[Vec<u8>],
        queued: &[Vec<Vec<u8>>],
        declared_no_writes: impl Fn(&[Vec<u8>]) -> Option<bool>,
    ) -> bool {
        if self.until_ms.load(Ordering::Acquire) == 0 {
            return false;
        }
        let now = crate::util::clock::system_unix_ms();
        let held = |argv: &[Vec<u8>]| {
            crate::command::resolve(argv).is_ok_and(|r| {
                let script = r.spec.group == crate::command::Group::Scripting
                    && r.spec.has(flags::EXCLUSIVE);
                match declared_no_writes(argv).filter(|_| script) {
                    // What the script declared stands for the command's own flags.
                    Some(no_writes) => {
                        self.holds_everything(now) || (!no_writes && self.holds_writes(now))
                    }
                    None => self.holds(r.spec, now).is_some(),
                }
            })
        };
        let Ok(r) = crate::command::resolve(argv) else {
            // It fails to resolve: its error is the reply, as in Redis.
            return false;
        };
        if r.spec.has(flags::TX_CONTROL) && r.spec.has(flags::EXCLUSIVE) {
            // EXEC: held with what it would run.
            return self.holds(r.spec, now).is_some() || queued.iter().any(|q| held(q));
        }
        held(argv)
    }

    /// Whether a pause of everything is in force at `now_ms`.
    fn holds_everything(&self, now_ms: i64) -> bool {
        self.holds_writes(now_ms) && self.all.load(Ordering::Relaxed)
    }

    /// Whether a write pause (or a pause of everything) is in force at `now_ms`.
    fn holds_writes(&self, now_ms: i64) -> bool {
        let until = self.until_ms.load(Ordering::Acquire);
        until != 0 && until > now_ms
    }

    /// Whether writes are paused now (eviction and active expiry wait too).
    pub fn writes_paused(&self) -> bool {
        let until = self.until_ms.load(Ordering::Acquire);
        until != 0 && until > crate::util::clock::system_unix_ms()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::resolve;

    fn spec(args: &[&str]) -> &'static CommandSpec {
        let argv: Vec<Vec<u8>> = args.iter().map(|a| a.as_bytes().to_vec()).collect();
        resolve(&argv).expect("known command").spec
    }

    #[test]
    fn write_mode_holds_writes_and_replicating_commands_only() {
        let p = PauseState::default();
        p.pause(2000, false, 1000);
        assert_eq!(p.holds(spec(&["SET", "k", "v"]), 1500), Some(2000));
        assert_eq!(p.holds(spec(&["GET", "k"]), 1500), None);
        // Scripts may write; a transaction is held when a queued command writes.
        let argv = |a: &[&str]| a.iter().map(|s| s.as_bytes().to_vec()).collect::<Vec<_>>();
        let q = PauseState::default();
        q.pause(
            crate::util::clock::system_unix_ms() + 60_000,
            false,
            crate::util::clock::system_unix_ms(),
        );
        assert!(q.holds_argv(&argv(&["EVAL", "return 1", "0"])));
        assert!(!q.holds_argv(&argv(&["EVAL_RO", "return 1", "0"])));
        // A script that declared no-writes is not held; one that declared flags
        // without it is.
        let declared = |a: &[Vec<u8>]| {
            crate::scripting::eval::parse_shebang(&a[1])
                .ok()
                .map(|f| f.no_writes)
        };
        let ro_script = argv(&["EVAL", "#!lua flags=no-writes\nreturn 1", "0"]);
        assert!(!q.holds_argv_queued(&ro_script, &[], declared));
        let rw_script = argv(&["EVAL", "#!lua\nreturn 1", "0"]);
        assert!(q.holds_argv_queued(&rw_script, &[], declared));
        assert!(!q.holds_argv_queued(&argv(&["EXEC"]), std::slice::from_ref(&ro_script), declared));
        assert!(!q.holds_argv_queued(&argv(&["DEBUG", "HELP"]), &[], |_| None));
        assert!(!q.holds_argv_queued(&argv(&["EXEC"]), &[argv(&["GET", "k"])], |_| None));
        assert!(q.holds_argv_queued(
            &argv(&["EXEC"]),
            &[argv(&["GET", "k"]), argv(&["SET", "k", "v"])],
            |_| None
        ));
        assert_eq!(p.holds(spec(&["SET", "k", "v"]), 2000), None, "ended");
        // A shorter, laxer pause does not shorten or relax one under way.
        p.pause(3000, true, 1500);
        p.pause(2500, false, 1600);
        assert_eq!(p.holds(spec(&["GET", "k"]), 2800), Some(3000));
        p.unpause();
        assert_eq!(p.holds(spec(&["SET", "k", "v"]), 2800), None);
    }
}
