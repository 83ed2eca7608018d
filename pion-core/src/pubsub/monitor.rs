//! `MONITOR`: clients that receive a line for every command the server runs, in
//! Redis's format (`+<unix>.<micros> [<db> <addr>] "cmd" "arg" …`).

use std::fmt::Write as _;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use parking_lot::RwLock;

use crate::clients::{ClientShared, ClientState};
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

    /// Whether any client is in `MONITOR` mode (one atomic load: every command asks).
    #[inline]
    pub fn any(&self) -> bool {
        self.count.load(Ordering::Relaxed) > 0
    }

    /// Sends the line for a command that ran to every monitor; `redacts_auth`: its
    /// arguments after the name are hidden (`AUTH`, `HELLO … AUTH`).
    pub fn feed(&self, client: &ClientState, argv: &[Vec<u8>], redacts_auth: bool) {
        if !self.any() {
            return;
        }
        // A command a script runs comes from `lua`.
        let from_script = client.nested.as_ref().is_some_and(|n| n.in_script);
        self.send(client, argv, redacts_auth, from_script);
    }

    /// Shows a command now, before it runs: scripts (`EVAL`, `FCALL`, which skip the
    /// after-command feed) come before the commands they run, as in Redis.
    pub fn feed_now(&self, client: &ClientState, argv: &[Vec<u8>]) {
        self.send(client, argv, false, false);
    }

    fn send(&self, client: &ClientState, argv: &[Vec<u8>], redacts_auth: bool, from_script: bool) {
        if self.count.load(Ordering::Relaxed) == 0 {
            return;
        }
        let line = format_line(
            client,
            argv,
            redacts_auth,
            from_script,
            crate::util::clock::system_unix_us(),
        );
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
fn format_line(
    client: &ClientState,
    argv: &[Vec<u8>],
    redacts_auth: bool,
    from_script: bool,
    now_us: i64,
) -> String {
    let from = if from_script {
        "lua"
    } else {
        client.shared.addr.as_str()
    };
    let mut out = format!(
        "{}.{:06} [{} {from}]",
        now_us.div_euclid(1_000_000),
        now_us.rem_euclid(1_000_000),
        client.db,
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
        if redacts_auth && a.eq_ignore_ascii_case(b"auth") {
            redact = 2;
        }
    }
    out
}

/// Appends `s` quoted and escaped the way Redis's `sdscatrepr` does.
pub(crate) fn quote(out: &mut String, s: &[u8]) {
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

    #[test]
    fn a_script_command_comes_from_lua() {
        let registry = crate::clients::ClientRegistry::default();
        let client = ClientState::detached(&registry, 0);
        let argv = [b"set".to_vec(), b"k".to_vec()];
        let line = format_line(&client, &argv, false, true, 1_500_000);
        assert_eq!(line, "1.500000 [0 lua] \"set\" \"k\"");
        let auth = [b"auth".to_vec(), b"user".to_vec(), b"pw".to_vec()];
        let line = format_line(&client, &auth, true, false, 0);
        assert!(
            line.ends_with("\"auth\" \"(redacted)\" \"(redacted)\""),
            "{line}"
        );
    }
}
