//! `ACL LOG`: the recent denials and failed logins, newest first. A denial like one
//! logged less than a minute ago (same reason, context, object and user) counts on that
//! entry instead of adding one, as in Redis.

use std::collections::VecDeque;

use crate::reply::Reply;

/// One refusal, as the dispatcher or `AUTH` reports it.
#[derive(Debug, Clone)]
pub struct Denied {
    /// Why.
    pub reason: Reason,
    /// Where: `toplevel`, `multi` (in a transaction) or `lua` (in a script).
    pub context: &'static str,
    /// The command, key, channel or user refused.
    pub object: String,
    /// Who was refused.
    pub username: String,
    /// `CLIENT INFO` of the refused client.
    pub client_info: String,
}

/// Entries this close together (ms) are grouped.
const GROUP_MS: i64 = 60_000;

/// Why an entry was logged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// A command the user may not run.
    Command,
    /// A key the user may not touch.
    Key,
    /// A channel the user may not use.
    Channel,
    /// A failed `AUTH`/`HELLO AUTH`.
    Auth,
}

impl Reason {
    fn name(self) -> &'static str {
        match self {
            Reason::Command => "command",
            Reason::Key => "key",
            Reason::Channel => "channel",
            Reason::Auth => "auth",
        }
    }
}

/// One entry.
#[derive(Debug, Clone)]
struct Entry {
    count: u64,
    reason: Reason,
    context: &'static str,
    object: String,
    username: String,
    created_ms: i64,
    updated_ms: i64,
    client_info: String,
}

/// The log.
#[derive(Debug, Default)]
pub struct AclLog {
    entries: VecDeque<Entry>,
}

impl AclLog {
    /// Records a denial at `now_ms`, keeping at most `max_len` entries
    /// (`acllog-max-len`).
    pub fn add(&mut self, denied: Denied, max_len: usize, now_ms: i64) {
        let Denied {
            reason,
            context,
            object,
            username,
            client_info,
        } = denied;
        let similar = self.entries.iter().position(|e| {
            e.reason == reason
                && e.context == context
                && e.object == object
                && e.username == username
                && now_ms - e.updated_ms < GROUP_MS
        });
        if let Some(i) = similar {
            let mut e = self.entries.remove(i).expect("position is in range");
            e.count += 1;
            e.updated_ms = now_ms;
            e.client_info = client_info;
            self.entries.push_front(e);
            return;
        }
        self.entries.push_front(Entry {
            count: 1,
            reason,
            context,
            object,
            username,
            created_ms: now_ms,
            updated_ms: now_ms,
            client_info,
        });
        self.entries.truncate(max_len);
    }

    /// Forgets every entry.
    pub fn reset(&mut self) {
        self.entries.clear();
    }

    /// The newest `count` entries as `ACL LOG` replies them.
    pub fn reply(&self, count: usize, now_ms: i64) -> Reply {
        let b = |t: &str| Reply::bulk(t.as_bytes());
        Reply::Array(
            self.entries
                .iter()
                .take(count)
                .map(|e| {
                    let age = (now_ms - e.created_ms).max(0) as f64 / 1000.0;
                    Reply::Map(vec![
                        (b("count"), Reply::Integer(e.count as i64)),
                        (b("reason"), b(e.reason.name())),
                        (b("context"), b(e.context)),
                        (b("object"), b(&e.object)),
                        (b("username"), b(&e.username)),
                        (b("age-seconds"), Reply::Double(age)),
                        (b("client-info"), b(&e.client_info)),
                    ])
                })
                .collect(),
        )
    }
}
