//! Access control lists: users with passwords, the commands, keys and channels each may
//! use, the check every command passes before it runs, and the log of denials.
//!
//! `requirepass` is the default user's password, as in Redis 6 and later. The default
//! user of a fresh server allows everything, and a client of such a user pays one
//! atomic flag read per command; the full check runs only for restricted users.

pub mod catalog;
pub mod describe;
pub mod file;
pub mod log;
pub mod protected;
pub mod rules;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use crate::error::OpError;
use crate::util::glob::glob_match;
pub use log::Reason;
pub use rules::{RuleError, UserRules};

/// A user. Clients hold it while authenticated as it; rule changes apply to them at
/// once.
#[derive(Debug)]
pub struct User {
    name: String,
    rules: RwLock<UserRules>,
    unrestricted: AtomicBool,
}

impl User {
    fn new(name: &str, rules: UserRules) -> User {
        let unrestricted = AtomicBool::new(rules.unrestricted());
        User {
            name: name.to_string(),
            rules: RwLock::new(rules),
            unrestricted,
        }
    }

    /// The user name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// A copy of the rules.
    pub fn rules(&self) -> UserRules {
        self.rules.read().clone()
    }

    /// Whether some selector of the user limits the keys (so a check needs the
    /// command's keys).
    pub fn restricts_keys(&self) -> bool {
        let rules = self.rules.read();
        std::iter::once(&rules.root)
            .chain(rules.selectors.iter())
            .any(|sel| !sel.all_keys)
    }

    /// Whether the user's root selector allows every channel (`allchannels`).
    pub fn all_channels(&self) -> bool {
        self.rules.read().root.all_channels
    }

    fn set_rules(&self, rules: UserRules) {
        let mut r = self.rules.write();
        self.unrestricted
            .store(rules.unrestricted(), Ordering::Relaxed);
        *r = rules;
    }

    /// Whether the user may run anything on any key and channel (no check needed).
    pub fn unrestricted(&self) -> bool {
        self.unrestricted.load(Ordering::Relaxed)
    }
}

/// Why a command was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Denial {
    /// The (sub)command, by full name.
    Command(String),
    /// A key, by name.
    Key(Vec<u8>),
    /// A channel, by name.
    Channel(Vec<u8>),
}

impl Denial {
    /// The error reply.
    pub fn error(&self) -> OpError {
        OpError::custom(match self {
            Denial::Command(name) => {
                format!("NOPERM this user has no permissions to run the '{name}' command")
            }
            Denial::Key(_) => {
                "NOPERM this user has no permissions to access one of the keys used as arguments"
                    .to_string()
            }
            Denial::Channel(_) => {
                "NOPERM this user has no permissions to access one of the channels used as arguments"
                    .to_string()
            }
        })
    }

    /// The `ACL DRYRUN` explanation.
    pub fn explain(&self) -> String {
        match self {
            Denial::Command(name) => {
                format!("This user has no permissions to run the '{name}' command")
            }
            Denial::Key(k) => format!(
                "This user has no permissions to access the '{}' key",
                String::from_utf8_lossy(k)
            ),
            Denial::Channel(c) => format!(
                "This user has no permissions to access the '{}' channel",
                String::from_utf8_lossy(c)
            ),
        }
    }

    /// Redis's order of refusals: command, key, (auth), channel.
    fn rank(&self) -> u8 {
        match self {
            Denial::Command(_) => 1,
            Denial::Key(_) => 2,
            Denial::Channel(_) => 4,
        }
    }

    /// The `ACL LOG` reason and object of this refusal.
    pub fn reason(&self) -> (Reason, String) {
        match self {
            Denial::Command(n) => (Reason::Command, n.clone()),
            Denial::Key(k) => (Reason::Key, String::from_utf8_lossy(k).into_owned()),
            Denial::Channel(c) => (Reason::Channel, String::from_utf8_lossy(c).into_owned()),
        }
    }
}

/// Why `ACL SETUSER` refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetUserError {
    /// The name has spaces or NULs.
    BadName,
    /// A modifier was refused.
    Rule(String, RuleError),
    /// A selector opened by this argument is never closed.
    Unmatched(String),
}

impl SetUserError {
    /// The error reply.
    pub fn error(&self) -> OpError {
        match self {
            SetUserError::BadName => {
                OpError::custom("ERR Usernames can't contain spaces or null characters")
            }
            SetUserError::Unmatched(start) => OpError::custom(format!(
                "ERR Unmatched parenthesis in acl selector starting at '{start}'."
            )),
            SetUserError::Rule(op, e) => OpError::custom(format!(
                "ERR Error in ACL SETUSER modifier '{op}': {}",
                e.text()
            )),
        }
    }
}

/// Every user, the default one, the denial log and the ACL file.
pub struct Acl {
    users: RwLock<BTreeMap<String, Arc<User>>>,
    default: Arc<User>,
    auth_required: AtomicBool,
    log: Mutex<log::AclLog>,
    file: RwLock<Option<PathBuf>>,
    /// `acl-pubsub-default allchannels`.
    channels_default_all: AtomicBool,
}

impl Default for Acl {
    fn default() -> Self {
        Acl::new()
    }
}

impl Acl {
    /// A fresh set of users: only `default`, allowed everything, with no password.
    pub fn new() -> Acl {
        let default = Arc::new(User::new("default", UserRules::permissive()));
        let mut users = BTreeMap::new();
        users.insert("default".to_string(), Arc::clone(&default));
        Acl {
            users: RwLock::new(users),
            default,
            auth_required: AtomicBool::new(false),
            log: Mutex::new(log::AclLog::default()),
            file: RwLock::new(None),
            channels_default_all: AtomicBool::new(false),
        }
    }

    /// Follows `acl-pubsub-default`: whether new users and selectors allow every
    /// channel.
    pub fn set_channels_default(&self, all_channels: bool) {
        self.channels_default_all
            .store(all_channels, Ordering::Relaxed);
    }

    /// The rules of a user about to be created.
    pub fn new_rules(&self) -> UserRules {
        UserRules::with_channel_default(self.channels_default_all.load(Ordering::Relaxed))
    }

    /// The default user (never removed; ACL LOAD changes it in place).
    pub fn default_user(&self) -> &Arc<User> {
        &self.default
    }

    /// Whether a new connection must authenticate: the default user has a password or
    /// is off.
    pub fn auth_required(&self) -> bool {
        self.auth_required.load(Ordering::Relaxed)
    }

    fn default_changed(&self) {
        let r = self.default.rules.read();
        self.auth_required
            .store(!r.nopass || !r.enabled, Ordering::Relaxed);
    }

    /// A user by name.
    pub fn user(&self, name: &str) -> Option<Arc<User>> {
        self.users.read().get(name).cloned()
    }

    /// Every user name, sorted.
    pub fn names(&self) -> Vec<String> {
        self.users.read().keys().cloned().collect()
    }

    /// `ACL LIST`: one `user <name> <rules>` line per user, sorted by name.
    pub fn list(&self) -> Vec<String> {
        self.users
            .read()
            .values()
            .map(|u| format!("user {} {}", u.name, describe::rules(&u.rules.read())))
            .collect()
    }

    /// Applies `ACL SETUSER` modifiers to a user (created if missing): all or nothing.
    pub fn set_user(&self, name: &str, ops: &[String]) -> Result<(), SetUserError> {
        if name.bytes().any(|c| c.is_ascii_whitespace() || c == 0) {
            return Err(SetUserError::BadName);
        }
        let ops = rules::join_selectors(ops).map_err(SetUserError::Unmatched)?;
        let mut users = self.users.write();
        let mut next = users
            .get(name)
            .map_or_else(|| self.new_rules(), |u| u.rules());
        next.channels_default_all = self.channels_default_all.load(Ordering::Relaxed);
        for op in &ops {
            next.apply(op)
                .map_err(|e| SetUserError::Rule(op.clone(), e))?;
        }
        match users.get(name) {
            Some(u) => u.set_rules(next),
            None => {
                users.insert(name.to_string(), Arc::new(User::new(name, next)));
            }
        }
        drop(users);
        self.default_changed();
        Ok(())
    }

    /// Sets the default user's password from `requirepass` (empty: `nopass`).
    pub fn set_default_password(&self, pass: &str) {
        let mut r = self.default.rules();
        r.apply("resetpass").expect("a valid rule");
        if pass.is_empty() {
            r.apply("nopass").expect("a valid rule");
        } else {
            r.apply(&format!(">{pass}")).expect("a valid rule");
        }
        self.default.set_rules(r);
        self.default_changed();
    }

    /// Removes users; returns those that existed. `default` cannot be removed.
    pub fn delete(&self, names: &[String]) -> Result<Vec<Arc<User>>, OpError> {
        if names.iter().any(|n| n == "default") {
            return Err(OpError::custom("ERR The 'default' user cannot be removed"));
        }
        let mut users = self.users.write();
        Ok(names.iter().filter_map(|n| users.remove(n)).collect())
    }

    /// The user `name` if `pass` opens it.
    pub fn authenticate(&self, name: &[u8], pass: &[u8]) -> Option<Arc<User>> {
        let name = std::str::from_utf8(name).ok()?;
        let user = self.user(name)?;
        let ok = user.rules.read().accepts(pass);
        ok.then_some(user)
    }

    /// Records a denial or failed login.
    pub fn log(&self, entry: log::Denied, max_len: usize) {
        self.log
            .lock()
            .add(entry, max_len, crate::util::clock::system_unix_ms());
    }

    /// The denial log.
    pub fn log_book(&self) -> &Mutex<log::AclLog> {
        &self.log
    }

    /// The ACL file (`aclfile`), if any.
    pub fn file(&self) -> Option<PathBuf> {
        self.file.read().clone()
    }

    /// Sets the ACL file users are loaded from and saved to.
    pub fn set_file(&self, path: Option<PathBuf>) {
        *self.file.write() = path;
    }

    /// Replaces every user at once (ACL LOAD): the default user keeps its identity and
    /// takes the new rules (or the permissive ones when the file has none). Returns the
    /// users that were replaced, whose clients must go.
    pub fn replace_all(&self, new: Vec<(String, UserRules)>) -> Vec<Arc<User>> {
        let mut users = self.users.write();
        let old: Vec<Arc<User>> = users
            .values()
            .filter(|u| u.name != "default")
            .cloned()
            .collect();
        users.clear();
        let mut default_rules = UserRules::permissive();
        for (name, rules) in new {
            if name == "default" {
                default_rules = rules;
            } else {
                users.insert(name.clone(), Arc::new(User::new(&name, rules)));
            }
        }
        self.default.set_rules(default_rules);
        users.insert("default".into(), Arc::clone(&self.default));
        drop(users);
        self.default_changed();
        old
    }
}

/// Whether `user` may read any key: a selector with `allkeys`, or a readable key
/// pattern that covers the pattern `*` (Redis's test for SORT's BY and GET).
pub fn reads_every_key(user: &User) -> bool {
    if user.unrestricted() {
        return true;
    }
    let rules = user.rules.read();
    std::iter::once(&rules.root)
        .chain(rules.selectors.iter())
        .any(|sel| {
            sel.all_keys
                || sel
                    .keys
                    .iter()
                    .any(|p| p.read && glob_match(&p.pattern, b"*", false))
        })
}

/// A command as the permission check sees it; the dispatcher reads it from the command
/// table ([`command::access`](crate::command::access)).
pub struct Request<'a> {
    /// The full name (`config|get` for a subcommand).
    pub full_name: &'a str,
    /// Its slot in the command table (what command rules are kept by).
    pub slot: usize,
    /// It may run before authentication (`AUTH`, `HELLO`): no command rule refuses it.
    pub no_auth: bool,
    /// The whole argument vector, the name first.
    pub argv: &'a [Vec<u8>],
    /// Its keys with the access each needs: (position in `argv`, reads, writes).
    pub keys: &'a [(usize, bool, bool)],
    /// Its "keys" are channels (`SPUBLISH`'s shard channel): checked as channels.
    pub keys_are_channels: bool,
}

/// Checks a command against a user's rules (root selector, then each extra one).
pub fn check(user: &User, req: &Request<'_>) -> Result<(), Denial> {
    if user.unrestricted() {
        return Ok(());
    }
    let rules = user.rules.read();
    // As Redis, the refusal reported is the most telling one: a channel over a key over
    // a command, and between two of a kind the one at the later argument.
    let mut worst: Option<(Denial, usize)> = None;
    for sel in std::iter::once(&rules.root).chain(rules.selectors.iter()) {
        match check_selector(sel, req) {
            Ok(()) => return Ok(()),
            Err((denial, at)) => {
                let telling = |(d, i): &(Denial, usize)| (d.rank(), *i);
                if worst
                    .as_ref()
                    .is_none_or(|w| (denial.rank(), at) > telling(w))
                {
                    worst = Some((denial, at));
                }
            }
        }
    }
    match worst {
        Some((denial, _)) => Err(denial),
        None => Ok(()),
    }
}

/// One selector's verdict; a refusal comes with the index of the argument refused (0
/// for the command itself).
fn check_selector(sel: &rules::Selector, req: &Request<'_>) -> Result<(), (Denial, usize)> {
    let (full_name, slot, argv) = (req.full_name, req.slot, req.argv);
    if !sel.all_commands && !req.no_auth && !sel.bit(slot) {
        let arg_at = if full_name.contains('|') { 2 } else { 1 };
        let ok = argv
            .get(arg_at)
            .is_some_and(|a| sel.first_arg_allowed(slot, a));
        if !ok {
            return Err((Denial::Command(full_name.to_string()), 0));
        }
    }
    // Channels that only look like keys (SPUBLISH's shard channel) are checked as
    // channels below, not as keys.
    if !sel.all_keys && !req.keys_are_channels {
        for &(pos, read, write) in req.keys {
            let key = &argv[pos];
            let allowed = sel.keys.iter().any(|p| {
                (p.read || !read) && (p.write || !write) && glob_match(&p.pattern, key, false)
            });
            if !allowed {
                return Err((Denial::Key(key.clone()), pos));
            }
        }
    }
    if !sel.all_channels {
        let (channels, is_pattern) = channels_of(full_name, argv);
        for (i, channel) in channels.iter().enumerate() {
            if !selector_allows_channel(sel, channel, is_pattern) {
                return Err((Denial::Channel(channel.clone()), i + 1));
            }
        }
    }
    Ok(())
}

/// The channels a command publishes or subscribes to, and whether they are patterns
/// (as Redis, unsubscribing is never refused).
fn channels_of<'a>(full_name: &str, argv: &'a [Vec<u8>]) -> (&'a [Vec<u8>], bool) {
    let rest = argv.get(1..).unwrap_or_default();
    match full_name {
        "publish" | "spublish" => (argv.get(1..2).unwrap_or_default(), false),
        "subscribe" | "ssubscribe" => (rest, false),
        "psubscribe" => (rest, true),
        _ => (&[], false),
    }
}

/// Whether one selector allows `channel`: a channel must match one of its patterns, a
/// pattern must be one of them literally.
fn selector_allows_channel(sel: &rules::Selector, channel: &[u8], is_pattern: bool) -> bool {
    sel.all_channels
        || sel.channels.iter().any(|p| {
            if is_pattern {
                p == channel
            } else {
                glob_match(p, channel, false)
            }
        })
}

/// Whether a user may use a Pub/Sub channel: `PUBLISH` and `SUBSCRIBE` name channels
/// (matched against the user's patterns), `PSUBSCRIBE` names patterns (which must be
/// one of the user's patterns exactly).
pub fn check_channel(user: &User, channel: &[u8], is_pattern: bool) -> Result<(), Denial> {
    if user.unrestricted() {
        return Ok(());
    }
    let rules = user.rules.read();
    let allows = |sel: &rules::Selector| selector_allows_channel(sel, channel, is_pattern);
    if allows(&rules.root) || rules.selectors.iter().any(allows) {
        Ok(())
    } else {
        Err(Denial::Channel(channel.to_vec()))
    }
}

#[cfg(test)]
mod tests;
