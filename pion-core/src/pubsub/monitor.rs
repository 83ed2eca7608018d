//! `MONITOR`: clients that receive a line for every command the server runs, in
//! Redis's format (`+<unix>.<micros> [<db> <addr>] "cmd" "arg" …`).

use std::fmt::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::RwLock;

use crate::client::{ClientShared, ClientState};
use crate::command::flags::{ADMIN, REDACTS_AUTH, SKIP_MONITOR};
use crate::command::CommandSpec;
use crate::reply::Reply;

/// The clients in `MONITOR` mode.
#[derive(Default)]
pub struct Monitors {
    clients: RwLock<Vec<Arc<ClientShared>>>,
    count: AtomicUsize,
}

impl Monitors {
    /// Adds a client (`MONITOR`).
    pub fn add(&self, c: &Arc<ClientShared>) {
        let mut v = self.clients.write();
        if !v.iter().any(|m| m.id == c.id) {
            v.push(Arc::clone(c));
            c.pubsub.monitor.store(true, Ordering::Relaxed);
            self.count.store(v.len(), Ordering::Relaxed);
        }
    }

    /// Removes a client (`RESET`, disconnect).
    pub fn remove(&self, id: u64) {
        let mut v = self.clients.write();
        v.retain(|m| {
            if m.id == id {
                m.pubsub.monitor.store(false, Ordering::Relaxed);
            }
            m.id != id
        });
        self.count.store(v.len(), Ordering::Relaxed);
    }

    /// Sends the line for a command that ran to every monitor.
    pub fn feed(&self, spec: &CommandSpec, client: &ClientState, argv: &[Vec<u8>]) {
        if self.count.load(Ordering::Relaxed) == 0 || spec.has(SKIP_MONITOR) || spec.has(ADMIN) {
            return;
        }
        let line = format_line(spec, client, argv, crate::engine::unix_us());
        let size = line.len();
        for m in self.clients.read().iter() {
            let msg = Reply::status_owned(line.clone());
            if m.id == client.id() {
                m.pubsub.push_after_reply(msg, size);
            } else {
                m.pubsub.push(msg, size);
            }
        }
    }
}

/// One monitor line (without the `+`).
fn format_line(spec: &CommandSpec, client: &ClientState, argv: &[Vec<u8>], now_us: i64) -> String {
    let mut out = format!(
        "{}.{:06} [{} {}]",
        now_us.div_euclid(1_000_000),
        now_us.rem_euclid(1_000_000),
        client.db,
        client.shared.addr
    );
    let mut redact = 0;
    for a in argv {
        out.push(' ');
        if redact > 0 {
            out.push_str("\"(redacted)\"");
            redact -= 1;
            continue;
        }
        quote(&mut out, a);
        if spec.has(REDACTS_AUTH) && a.eq_ignore_ascii_case(b"auth") {
            redact = 2;
        }
    }
    out
}

/// Appends `s` quoted and escaped the way Redis's `sdscatrepr` does.
fn quote(out: &mut String, s: &[u8]) {
    out.push('"');
    for &c in s {
        match c {
            b'\\' => out.push_str("\\\\"),
            b'"' => out.push_str("\\\""),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            7 => out.push_str("\\a"),
            8 => out.push_str("\\b"),
            c if c.is_ascii_graphic() || c == b' ' => out.push(char::from(c)),
            c => {
                let _ = write!(out, "\\x{c:02x}");
            }
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_matches_sdscatrepr() {
        let mut s = String::new();
        quote(&mut s, b"a b\n\"\\\x01\xff");
        assert_eq!(s, "\"a b\\n\\\"\\\\\\x01\\xff\"");
    }
}
