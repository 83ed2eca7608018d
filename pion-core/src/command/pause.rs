//! Which commands a `CLIENT PAUSE` holds (the pause itself is
//! [`server::pause`](crate::server::pause)'s): under a write pause, those that write
//! or may replicate, a transaction with such a command queued, and a script unless it
//! declared `no-writes`.

use super::{flags, CommandSpec};
use crate::server::pause::PauseState;

/// When `spec`'s command is held at `now_ms`: the Unix ms the pause ends at.
pub fn holds(pause: &PauseState, spec: &CommandSpec, now_ms: i64) -> Option<i64> {
    pause.holds(
        spec.has(flags::WRITE) || spec.has(flags::MAY_REPLICATE),
        now_ms,
    )
}

/// Whether the command in `argv` is held now (a command that fails to resolve is
/// not: its error is the reply, as in Redis).
pub fn holds_argv(pause: &PauseState, argv: &[Vec<u8>]) -> bool {
    holds_argv_queued(pause, argv, &[], |_| None)
}

/// [`holds_argv`] for a client whose transaction has `queued`
/// commands, with `declared_no_writes` saying, for a script or function that declared
/// flags, whether they include `no-writes` (`None`: it declared none). Under a write pause, as in Redis, `EXEC` is held
/// when a queued command would be; a script (`EVAL`, `FCALL`, not their `_RO`
/// forms) is held as a possible writer unless it declared `no-writes`, and held
/// as a writer when it declared flags without it.
pub fn holds_argv_queued(
    pause: &PauseState,
    argv: &[Vec<u8>],
    queued: &[Vec<Vec<u8>>],
    declared_no_writes: impl Fn(&[Vec<u8>]) -> Option<bool>,
) -> bool {
    if !pause.any() {
        return false;
    }
    let now = crate::util::clock::system_unix_ms();
    let held = |argv: &[Vec<u8>]| {
        super::resolve(argv).is_ok_and(|r| {
            let script = r.spec.group == super::Group::Scripting && r.spec.has(flags::EXCLUSIVE);
            match declared_no_writes(argv).filter(|_| script) {
                // What the script declared stands for the command's own flags.
                Some(no_writes) => {
                    pause.holds_everything(now) || (!no_writes && pause.holds_writes(now))
                }
                None => holds(pause, r.spec, now).is_some(),
            }
        })
    };
    let Ok(r) = super::resolve(argv) else {
        // It fails to resolve: its error is the reply, as in Redis.
        return false;
    };
    if r.spec.has(flags::TX_CONTROL) && r.spec.has(flags::EXCLUSIVE) {
        // EXEC: held with what it would run.
        return holds(pause, r.spec, now).is_some() || queued.iter().any(|q| held(q));
    }
    held(argv)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::resolve;
    use crate::server::pause::PauseState;

    fn spec(args: &[&str]) -> &'static CommandSpec {
        let argv: Vec<Vec<u8>> = args.iter().map(|a| a.as_bytes().to_vec()).collect();
        resolve(&argv).expect("known command").spec
    }

    #[test]
    fn write_mode_holds_writes_and_replicating_commands_only() {
        let p = PauseState::default();
        p.pause(2000, false, 1000);
        assert_eq!(holds(&p, spec(&["SET", "k", "v"]), 1500), Some(2000));
        assert_eq!(holds(&p, spec(&["GET", "k"]), 1500), None);
        // Scripts may write; a transaction is held when a queued command writes.
        let argv = |a: &[&str]| a.iter().map(|s| s.as_bytes().to_vec()).collect::<Vec<_>>();
        let q = PauseState::default();
        q.pause(
            crate::util::clock::system_unix_ms() + 60_000,
            false,
            crate::util::clock::system_unix_ms(),
        );
        assert!(holds_argv(&q, &argv(&["EVAL", "return 1", "0"])));
        assert!(!holds_argv(&q, &argv(&["EVAL_RO", "return 1", "0"])));
        // A script that declared no-writes is not held; one that declared flags
        // without it is.
        let declared = |a: &[Vec<u8>]| {
            crate::scripting::eval::parse_shebang(&a[1])
                .ok()
                .map(|f| f.no_writes)
        };
        let ro_script = argv(&["EVAL", "#!lua flags=no-writes\nreturn 1", "0"]);
        assert!(!holds_argv_queued(&q, &ro_script, &[], declared));
        let rw_script = argv(&["EVAL", "#!lua\nreturn 1", "0"]);
        assert!(holds_argv_queued(&q, &rw_script, &[], declared));
        assert!(!holds_argv_queued(
            &q,
            &argv(&["EXEC"]),
            std::slice::from_ref(&ro_script),
            declared
        ));
        assert!(!holds_argv_queued(
            &q,
            &argv(&["DEBUG", "HELP"]),
            &[],
            |_| None
        ));
        assert!(!holds_argv_queued(
            &q,
            &argv(&["EXEC"]),
            &[argv(&["GET", "k"])],
            |_| None
        ));
        assert!(holds_argv_queued(
            &q,
            &argv(&["EXEC"]),
            &[argv(&["GET", "k"]), argv(&["SET", "k", "v"])],
            |_| None
        ));
        assert_eq!(holds(&p, spec(&["SET", "k", "v"]), 2000), None, "ended");
        // A shorter, laxer pause does not shorten or relax one under way.
        p.pause(3000, true, 1500);
        p.pause(2500, false, 1600);
        assert_eq!(holds(&p, spec(&["GET", "k"]), 2800), Some(3000));
        p.unpause();
        assert_eq!(holds(&p, spec(&["SET", "k", "v"]), 2800), None);
    }
}
