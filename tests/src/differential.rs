//! Replaying corpus files against an oracle server and Pion side by side, collecting
//! every reply that differs.

use std::path::{Path, PathBuf};

use crate::corpus::{self, Compare, Step};
use crate::Client;

/// The `.txt` corpus files of a directory under the tests crate, sorted.
pub fn corpus_files(dir: &str) -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "txt"))
        .collect();
    files.sort();
    files
}

/// Replays one file against both servers (`FLUSHALL` first, then `HELLO 3` for
/// RESP3) and appends a description of every difference to `failures`.
pub fn replay(oracle: u16, pion: u16, resp: u8, file: &Path, failures: &mut Vec<String>) {
    let text = std::fs::read_to_string(file).expect("corpus file");
    let steps = corpus::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let mut r = Client::connect(oracle).expect("connect redis");
    let mut p = Client::connect(pion).expect("connect pion");
    for c in [&mut r, &mut p] {
        c.cmd(&["FLUSHALL"]);
        if resp == 3 {
            c.cmd(&["HELLO", "3"]);
        }
    }
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    for step in steps {
        match step {
            Step::Sleep(ms) => std::thread::sleep(std::time::Duration::from_millis(ms)),
            Step::Command {
                line,
                compare,
                args,
            } => {
                let (rv, rraw) = r
                    .call(&args)
                    .unwrap_or_else(|e| panic!("{name}:{line}: redis: {e}"));
                let (pv, praw) = match p.call(&args) {
                    Ok(x) => x,
                    Err(e) => {
                        failures.push(format!(
                            "{name}:{line} RESP{resp}: pion connection error {e}"
                        ));
                        return;
                    }
                };
                let same = match compare {
                    Compare::Exact => rraw == praw,
                    Compare::Unordered => rv.normalized() == pv.normalized(),
                    Compare::Shape => rv.shape() == pv.shape(),
                    Compare::Skip => true,
                };
                if !same {
                    let cmd: Vec<String> = args
                        .iter()
                        .map(|a| String::from_utf8_lossy(a).into_owned())
                        .collect();
                    failures.push(format!(
                        "{name}:{line} RESP{resp} {:?}\n    redis: {}\n    pion:  {}",
                        cmd.join(" "),
                        rv.render(),
                        pv.render()
                    ));
                }
            }
        }
    }
}
