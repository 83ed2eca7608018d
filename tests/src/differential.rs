//! Replaying corpus files against an oracle server and Pion side by side, collecting
//! every reply that differs.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::corpus::{self, Compare, Step};
use crate::{Client, RespValue};

/// The `.txt` corpus files of a directory under the tests crate, sorted.
pub fn corpus_files(dir: &str) -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "txt"))
        .collect();
    files.sort();
    // PION_CORPUS=name,name runs only those files (while working on them).
    if let Ok(only) = std::env::var("PION_CORPUS") {
        let wanted: Vec<&str> = only.split(',').map(str::trim).collect();
        files.retain(|p| {
            p.file_stem()
                .is_some_and(|s| wanted.iter().any(|w| s.to_string_lossy() == *w))
        });
    }
    files
}

/// One corpus connection: the same logical client on both servers.
struct Pair {
    oracle: Client,
    pion: Client,
}

/// The state of one file's replay.
struct Replay<'a> {
    name: String,
    resp: u8,
    ports: (u16, u16),
    conns: Vec<Option<Pair>>,
    failures: &'a mut Vec<String>,
    /// Pion's connection broke: the rest of the file is not comparable.
    broken: bool,
}

impl Replay<'_> {
    fn pair(&mut self, conn: usize) -> &mut Pair {
        if self.conns.len() <= conn {
            self.conns.resize_with(conn + 1, || None);
        }
        let (oracle_port, pion_port, resp) = (self.ports.0, self.ports.1, self.resp);
        self.conns[conn].get_or_insert_with(|| {
            let mut oracle = Client::connect(oracle_port).expect("connect oracle");
            let mut pion = Client::connect(pion_port).expect("connect pion");
            if resp == 3 {
                oracle.cmd(&["HELLO", "3"]);
                pion.cmd(&["HELLO", "3"]);
            }
            Pair { oracle, pion }
        })
    }

    fn compare(&mut self, line: usize, what: &str, compare: Compare, r: &RespValue, p: &RespValue) {
        let same = match compare {
            Compare::Exact => r == p,
            Compare::Unordered => r.normalized() == p.normalized(),
            Compare::Shape => r.shape() == p.shape(),
            Compare::Untimed => r.untimed() == p.untimed(),
            Compare::Skip => true,
        };
        if !same {
            self.failures.push(format!(
                "{}:{line} RESP{} {what}\n    redis: {}\n    pion:  {}",
                self.name,
                self.resp,
                r.render(),
                p.render()
            ));
        }
    }

    /// Compares raw bytes for exact lines (so encodings such as `$` vs `+` differ).
    fn compare_raw(
        &mut self,
        line: usize,
        what: &str,
        compare: Compare,
        r: (RespValue, Vec<u8>),
        p: (RespValue, Vec<u8>),
    ) {
        if compare == Compare::Exact && r.1 != p.1 && r.0 == p.0 {
            self.failures.push(format!(
                "{}:{line} RESP{} {what}: same value, different bytes",
                self.name, self.resp
            ));
            return;
        }
        self.compare(line, what, compare, &r.0, &p.0);
    }

    fn pion_failed(&mut self, line: usize, e: std::io::Error) {
        self.failures.push(format!(
            "{}:{line} RESP{}: pion connection error {e}",
            self.name, self.resp
        ));
        self.broken = true;
    }

    fn step(&mut self, step: Step) {
        match step {
            Step::Sleep(ms) => std::thread::sleep(Duration::from_millis(ms)),
            Step::Command {
                line,
                conn,
                compare,
                args,
            } => {
                let name = self.name.clone();
                let pair = self.pair(conn);
                let r = pair
                    .oracle
                    .call(&args)
                    .unwrap_or_else(|e| panic!("{name}:{line}: redis: {e}"));
                match pair.pion.call(&args) {
                    Ok(p) => self.compare_raw(line, &render(&args), compare, r, p),
                    Err(e) => self.pion_failed(line, e),
                }
            }
            Step::Send { line, conn, args } => {
                let name = self.name.clone();
                let pair = self.pair(conn);
                let bytes = Client::encode(&args);
                pair.oracle
                    .send_raw(&bytes)
                    .unwrap_or_else(|e| panic!("{name}:{line}: redis: {e}"));
                if let Err(e) = pair.pion.send_raw(&bytes) {
                    self.pion_failed(line, e);
                }
            }
            Step::Recv {
                line,
                conn,
                compare,
            } => {
                let name = self.name.clone();
                let pair = self.pair(conn);
                let r = pair
                    .oracle
                    .read_reply()
                    .unwrap_or_else(|e| panic!("{name}:{line}: redis: {e}"));
                match pair.pion.read_reply() {
                    Ok(p) => self.compare_raw(line, "(received)", compare, r, p),
                    Err(e) => self.pion_failed(line, e),
                }
            }
            Step::NoReply { line, conn, ms } => {
                let pair = self.pair(conn);
                let wait = Duration::from_millis(ms.max(1));
                let r = quiet(&mut pair.oracle, wait);
                let p = quiet(&mut pair.pion, wait);
                if let Some(v) = r {
                    panic!("{}:{line}: redis replied {}", self.name, v.render());
                }
                if let Some(v) = p {
                    self.failures.push(format!(
                        "{}:{line} RESP{}: expected no reply, pion sent {}",
                        self.name,
                        self.resp,
                        v.render()
                    ));
                }
            }
            Step::WaitBlocked { line, count } => {
                let (oracle, pion) = self.ports;
                if !wait_blocked(oracle, count) {
                    panic!(
                        "{}:{line}: redis never had {count} blocked clients",
                        self.name
                    );
                }
                if !wait_blocked(pion, count) {
                    self.failures.push(format!(
                        "{}:{line} RESP{}: pion never had {count} blocked clients",
                        self.name, self.resp
                    ));
                    self.broken = true;
                }
            }
            Step::Close { conn } => {
                if let Some(slot) = self.conns.get_mut(conn) {
                    *slot = None;
                }
            }
        }
    }
}

fn render(args: &[Vec<u8>]) -> String {
    let words: Vec<String> = args
        .iter()
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    format!("{:?}", words.join(" "))
}

/// Whatever the server sends within `wait`, if anything.
fn quiet(client: &mut Client, wait: Duration) -> Option<RespValue> {
    client.set_read_timeout(wait).expect("set timeout");
    let got = client.read_reply().ok().map(|(v, _)| v);
    client
        .set_read_timeout(Duration::from_secs(20))
        .expect("set timeout");
    got
}

/// Polls `INFO clients` until `blocked_clients` equals `count` (5 s at most).
fn wait_blocked(port: u16, count: usize) -> bool {
    let mut c = Client::connect(port).expect("connect");
    let want = format!("blocked_clients:{count}\r\n");
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if let RespValue::Bulk(_, Some(text)) = c.cmd(&["INFO", "clients"]) {
            if String::from_utf8_lossy(&text).contains(&want) {
                return true;
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    false
}

/// Replays one file against both servers (`FLUSHALL` first, then `HELLO 3` on every
/// connection for RESP3) and appends a description of every difference to `failures`.
pub fn replay(oracle: u16, pion: u16, resp: u8, file: &Path, failures: &mut Vec<String>) {
    let text = std::fs::read_to_string(file).expect("corpus file");
    let steps = corpus::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut replay = Replay {
        name,
        resp,
        ports: (oracle, pion),
        conns: Vec::new(),
        failures,
        broken: false,
    };
    {
        let pair = replay.pair(0);
        pair.oracle.cmd(&["FLUSHALL"]);
        pair.pion.cmd(&["FLUSHALL"]);
    }
    let trace = std::env::var_os("PION_CORPUS_TRACE").is_some();
    for step in steps {
        if trace {
            eprintln!("{} RESP{resp}: {step:?}", replay.name);
        }
        replay.step(step);
        if replay.broken {
            return;
        }
    }
}
