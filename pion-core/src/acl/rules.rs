//! A user's rules and how `ACL SETUSER` modifiers change them: passwords and flags on
//! the user, commands, key and channel patterns on selectors (the root one and any
//! `(…)` extra ones). A modifier either applies whole or fails with Redis's reason.

use std::collections::BTreeMap;

use sha2::{Digest, Sha256};

use super::catalog::{catalog, category_bit};

/// Why a modifier was refused; the text is Redis's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleError {
    /// Not a modifier at all.
    Syntax,
    /// `+foo` or `+@foo` names nothing.
    UnknownCommand,
    /// A key pattern after `allkeys`.
    AfterAllKeys,
    /// A channel pattern after `allchannels`.
    AfterAllChannels,
    /// `<pass` or `!hash` for a password the user does not have.
    NoSuchPassword,
    /// `#hash` that is not 64 lower-case hex digits.
    BadHash,
    /// `+cmd|sub|arg`.
    SubcommandFirstArg,
}

impl RuleError {
    /// Redis's explanation.
    pub fn text(self) -> &'static str {
        match self {
            RuleError::Syntax => "Syntax error",
            RuleError::UnknownCommand => "Unknown command or category name in ACL",
            RuleError::AfterAllKeys => "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns",
            RuleError::AfterAllChannels => "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels",
            RuleError::NoSuchPassword => "The password you are trying to remove from the user does not exist",
            RuleError::BadHash => "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters",
            RuleError::SubcommandFirstArg => "Allowing first-arg of a subcommand is not supported",
        }
    }
}

/// A key pattern with the access it grants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyPattern {
    /// Reading keys that match.
    pub read: bool,
    /// Writing keys that match.
    pub write: bool,
    /// The glob pattern.
    pub pattern: Vec<u8>,
}

/// Commands, keys and channels: what one selector allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selector {
    /// One bit per command slot.
    pub(crate) allowed: Vec<u64>,
    /// Every command, with nothing taken away since (the fast path).
    pub(crate) all_commands: bool,
    /// `+@all` was the start: commands added later are allowed too (shown as `+@all`).
    pub(crate) future: bool,
    /// First arguments allowed for a command whose bit is off (`+select|0`).
    pub(crate) firstargs: BTreeMap<usize, Vec<String>>,
    /// Key patterns, in the order given.
    pub(crate) keys: Vec<KeyPattern>,
    /// `allkeys`.
    pub(crate) all_keys: bool,
    /// Channel patterns.
    pub(crate) channels: Vec<Vec<u8>>,
    /// `allchannels`.
    pub(crate) all_channels: bool,
}

impl Selector {
    /// A selector that allows nothing.
    pub fn empty() -> Selector {
        Selector {
            allowed: vec![0; catalog().slots().div_ceil(64)],
            all_commands: false,
            future: false,
            firstargs: BTreeMap::new(),
            keys: Vec::new(),
            all_keys: false,
            channels: Vec::new(),
            all_channels: false,
        }
    }

    /// Whether the command in `slot` is allowed (first arguments aside).
    pub fn bit(&self, slot: usize) -> bool {
        self.allowed
            .get(slot / 64)
            .is_some_and(|w| w & (1 << (slot % 64)) != 0)
    }

    fn set_bit(&mut self, slot: usize, on: bool) {
        if let Some(w) = self.allowed.get_mut(slot / 64) {
            if on {
                *w |= 1 << (slot % 64);
            } else {
                *w &= !(1 << (slot % 64));
                self.all_commands = false;
            }
        }
    }

    /// Allows or denies a command and, for a container, all its subcommands.
    pub(crate) fn change(&mut self, slot: usize, on: bool) {
        self.set_bit(slot, on);
        self.firstargs.remove(&slot);
        if let Some(e) = catalog().entry(slot) {
            for &sub in &e.subs {
                self.set_bit(sub, on);
                self.firstargs.remove(&sub);
            }
        }
    }

    /// Allows or denies every command of a category.
    pub(crate) fn change_category(&mut self, bit: u32, on: bool) {
        let slots: Vec<usize> = catalog().in_category(bit).collect();
        for slot in slots {
            self.set_bit(slot, on);
            self.firstargs.remove(&slot);
        }
    }

    fn all(&mut self, on: bool) {
        for w in &mut self.allowed {
            *w = if on { u64::MAX } else { 0 };
        }
        self.all_commands = on;
        self.future = on;
        self.firstargs.clear();
    }

    /// Applies one selector modifier.
    pub fn apply(&mut self, op: &str) -> Result<(), RuleError> {
        let lower = op.to_ascii_lowercase();
        match lower.as_str() {
            "allkeys" | "~*" => {
                self.all_keys = true;
                self.keys.clear();
                return Ok(());
            }
            "resetkeys" => {
                self.all_keys = false;
                self.keys.clear();
                return Ok(());
            }
            "allchannels" | "&*" => {
                self.all_channels = true;
                self.channels.clear();
                return Ok(());
            }
            "resetchannels" => {
                self.all_channels = false;
                self.channels.clear();
                return Ok(());
            }
            "allcommands" | "+@all" => {
                self.all(true);
                return Ok(());
            }
            "nocommands" | "-@all" => {
                self.all(false);
                return Ok(());
            }
            _ => {}
        }
        let bytes = op.as_bytes();
        match bytes.first() {
            Some(b'~') | Some(b'%') => self.add_key_pattern(op),
            Some(b'&') => {
                if self.all_channels {
                    return Err(RuleError::AfterAllChannels);
                }
                let pat = &bytes[1..];
                if has_spaces(pat) {
                    return Err(RuleError::Syntax);
                }
                if !self.channels.iter().any(|c| c == pat) {
                    self.channels.push(pat.to_vec());
                }
                Ok(())
            }
            Some(b'+') | Some(b'-') => self.command_rule(&lower),
            _ => Err(RuleError::Syntax),
        }
    }

    fn add_key_pattern(&mut self, op: &str) -> Result<(), RuleError> {
        if self.all_keys {
            return Err(RuleError::AfterAllKeys);
        }
        let bytes = op.as_bytes();
        let (read, write, pat) = if bytes[0] == b'%' {
            let (mut r, mut w) = (false, false);
            let mut i = 1;
            loop {
                match bytes.get(i).map(u8::to_ascii_uppercase) {
                    Some(b'R') if !r => r = true,
                    Some(b'W') if !w => w = true,
                    Some(b'~') if r || w => break,
                    _ => return Err(RuleError::Syntax),
                }
                i += 1;
            }
            (r, w, &bytes[i + 1..])
        } else {
            (true, true, &bytes[1..])
        };
        if read && write && pat == b"*" {
            self.all_keys = true;
            self.keys.clear();
            return Ok(());
        }
        if has_spaces(pat) {
            return Err(RuleError::Syntax);
        }
        match self.keys.iter_mut().find(|k| k.pattern == pat) {
            Some(k) => {
                k.read |= read;
                k.write |= write;
            }
            None => self.keys.push(KeyPattern {
                read,
                write,
                pattern: pat.to_vec(),
            }),
        }
        Ok(())
    }

    fn command_rule(&mut self, op: &str) -> Result<(), RuleError> {
        let allow = op.starts_with('+');
        let body = &op[1..];
        if let Some(cat) = body.strip_prefix('@') {
            let bit = category_bit(cat).ok_or(RuleError::UnknownCommand)?;
            self.change_category(bit, allow);
            return Ok(());
        }
        let cat = catalog();
        // As Redis, the last `|` separates the first argument: `config|get|x` names a
        // subcommand's first argument (refused), `get|a|b` an unknown command.
        let Some((cmd, sub)) = body.rsplit_once('|') else {
            let slot = cat.find(body).ok_or(RuleError::UnknownCommand)?;
            self.change(slot, allow);
            return Ok(());
        };
        if !allow {
            // Only a real subcommand can be denied on its own.
            let slot = cat.find(body).ok_or(RuleError::UnknownCommand)?;
            self.change(slot, false);
            return Ok(());
        }
        let slot = cat.find(cmd).ok_or(RuleError::UnknownCommand)?;
        if cmd.contains('|') {
            return Err(RuleError::SubcommandFirstArg);
        }
        if sub.is_empty() {
            return Err(RuleError::Syntax);
        }
        let entry = cat.entry(slot).ok_or(RuleError::UnknownCommand)?;
        if !entry.subs.is_empty() {
            let sub_slot = cat.find(body).ok_or(RuleError::UnknownCommand)?;
            self.change(sub_slot, true);
        } else {
            let args = self.firstargs.entry(slot).or_default();
            if !args.iter().any(|a| a == sub) {
                args.push(sub.to_string());
            }
        }
        Ok(())
    }

    /// Whether `arg` is an allowed first argument of the command in `slot`.
    pub fn first_arg_allowed(&self, slot: usize, arg: &[u8]) -> bool {
        self.firstargs
            .get(&slot)
            .is_some_and(|args| args.iter().any(|a| a.as_bytes().eq_ignore_ascii_case(arg)))
    }
}

fn has_spaces(s: &[u8]) -> bool {
    s.iter().any(|c| c.is_ascii_whitespace() || *c == 0)
}

/// The SHA-256 of a password in lower-case hex, as Redis stores it.
pub fn hash_password(pass: &[u8]) -> String {
    let digest = Sha256::digest(pass);
    let mut out = String::with_capacity(64);
    for b in digest {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

fn valid_hash(h: &str) -> bool {
    h.len() == 64 && h.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'))
}

/// Everything a user is: flags, passwords and selectors.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserRules {
    /// `on`.
    pub enabled: bool,
    /// `nopass`: any password is accepted.
    pub nopass: bool,
    /// `sanitize-payload` / `skip-sanitize-payload` (None: neither).
    pub sanitize: Option<bool>,
    /// Password hashes, lower-case hex.
    pub passwords: Vec<String>,
    /// The root selector.
    pub root: Selector,
    /// Extra selectors, `(…)`.
    pub selectors: Vec<Selector>,
    /// `acl-pubsub-default allchannels`: new selectors, and `reset`, allow every
    /// channel (otherwise none). Not a rule of the user: it follows the configuration.
    pub channels_default_all: bool,
}

impl UserRules {
    /// A new user: off, no password, no commands, no keys, no channels.
    pub fn new() -> UserRules {
        UserRules {
            enabled: false,
            nopass: false,
            sanitize: None,
            passwords: Vec::new(),
            root: Selector::empty(),
            selectors: Vec::new(),
            channels_default_all: false,
        }
    }

    /// A new user under `acl-pubsub-default` (`all_channels`: `allchannels`).
    pub fn with_channel_default(all_channels: bool) -> UserRules {
        let mut r = UserRules::new();
        r.channels_default_all = all_channels;
        r.root.all_channels = all_channels;
        r
    }

    /// The default user of a fresh server: `on nopass ~* &* +@all`.
    pub fn permissive() -> UserRules {
        let mut r = UserRules::new();
        for op in ["on", "nopass", "~*", "&*", "+@all"] {
            r.apply(op).expect("built-in rules are valid");
        }
        r
    }

    /// Whether nothing is restricted: commands need no check at all.
    pub fn unrestricted(&self) -> bool {
        self.enabled && self.root.all_commands && self.root.all_keys && self.root.all_channels
    }

    /// Applies one `ACL SETUSER` modifier.
    pub fn apply(&mut self, op: &str) -> Result<(), RuleError> {
        let lower = op.to_ascii_lowercase();
        match lower.as_str() {
            "on" => self.enabled = true,
            "off" => self.enabled = false,
            "skip-sanitize-payload" => self.sanitize = Some(false),
            "sanitize-payload" => self.sanitize = Some(true),
            "nopass" => {
                self.nopass = true;
                self.passwords.clear();
            }
            "resetpass" => {
                self.nopass = false;
                self.passwords.clear();
            }
            "clearselectors" => self.selectors.clear(),
            "reset" => {
                *self = UserRules::with_channel_default(self.channels_default_all);
                self.sanitize = Some(true);
            }
            _ => match op.as_bytes().first() {
                Some(b'>') => self.add_hash(hash_password(&op.as_bytes()[1..])),
                Some(b'#') => {
                    if !valid_hash(&op[1..]) {
                        return Err(RuleError::BadHash);
                    }
                    self.add_hash(op[1..].to_string());
                }
                Some(b'<') => self.remove_hash(&hash_password(&op.as_bytes()[1..]))?,
                Some(b'!') => {
                    if !valid_hash(&op[1..]) {
                        return Err(RuleError::BadHash);
                    }
                    self.remove_hash(&op[1..])?;
                }
                Some(b'(') if op.ends_with(')') && op.len() >= 2 => {
                    let mut sel = Selector::empty();
                    sel.all_channels = self.channels_default_all;
                    for part in op[1..op.len() - 1].split_ascii_whitespace() {
                        sel.apply(part)?;
                    }
                    self.selectors.push(sel);
                }
                _ => self.root.apply(op)?,
            },
        }
        Ok(())
    }

    fn add_hash(&mut self, h: String) {
        if !self.passwords.contains(&h) {
            self.passwords.push(h);
        }
        self.nopass = false;
    }

    fn remove_hash(&mut self, h: &str) -> Result<(), RuleError> {
        let before = self.passwords.len();
        self.passwords.retain(|p| p != h);
        if self.passwords.len() == before {
            return Err(RuleError::NoSuchPassword);
        }
        Ok(())
    }

    /// Whether `pass` opens this user (on, and nopass or a matching hash).
    pub fn accepts(&self, pass: &[u8]) -> bool {
        if !self.enabled {
            return false;
        }
        if self.nopass {
            return true;
        }
        let h = hash_password(pass);
        // Every stored hash is compared, whatever matches first.
        self.passwords.iter().fold(false, |hit, p| {
            hit | constant_eq(p.as_bytes(), h.as_bytes())
        })
    }
}

impl Default for UserRules {
    fn default() -> Self {
        UserRules::new()
    }
}

fn constant_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

/// Splits an `ACL SETUSER` argument list into modifiers, joining a selector written
/// over several arguments (`(+get` `~k)`) back into one.
/// An unclosed selector is an error carrying the argument that opened it.
pub fn join_selectors(args: &[String]) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut open: Option<String> = None;
    let mut opened_by = String::new();
    for a in args {
        match open.as_mut() {
            Some(s) => {
                s.push(' ');
                s.push_str(a);
                if a.ends_with(')') {
                    out.push(open.take().expect("a selector is open"));
                }
            }
            None if a.starts_with('(') && !a.ends_with(')') => {
                open = Some(a.clone());
                opened_by = a.clone();
            }
            None => out.push(a.clone()),
        }
    }
    if open.is_some() {
        return Err(opened_by);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn password_hash_is_redis_sha256() {
        assert_eq!(
            hash_password(b"pw"),
            "30c952fab122c3f9759f02a6d95c3758b246b4fee239957b2d4fee46e26170c4"
        );
    }

    #[test]
    fn modifiers_and_errors() {
        // The command table registers the catalogue rules are read against.
        crate::command::table();
        let mut r = UserRules::new();
        assert_eq!(r.apply("bogus"), Err(RuleError::Syntax));
        assert_eq!(r.apply("+nosuch"), Err(RuleError::UnknownCommand));
        assert_eq!(r.apply("+@nosuch"), Err(RuleError::UnknownCommand));
        assert_eq!(r.apply("%X~a"), Err(RuleError::Syntax));
        assert_eq!(r.apply("#abc"), Err(RuleError::BadHash));
        assert_eq!(r.apply("+config|"), Err(RuleError::Syntax));
        assert_eq!(r.apply("+config|get|x"), Err(RuleError::SubcommandFirstArg));
        assert_eq!(r.apply("-select|0"), Err(RuleError::UnknownCommand));
        assert_eq!(r.apply("<nope"), Err(RuleError::NoSuchPassword));
        r.apply("allkeys").expect("allkeys");
        assert_eq!(r.apply("%R~x"), Err(RuleError::AfterAllKeys));
        r.apply("&*").expect("allchannels");
        assert_eq!(r.apply("&x"), Err(RuleError::AfterAllChannels));
        r.apply(">a").expect("password");
        assert!(r.accepts(b"a") == r.enabled);
        r.apply("on").expect("on");
        assert!(r.accepts(b"a") && !r.accepts(b"b"));
        r.apply("<a").expect("remove");
        assert!(!r.accepts(b"a"));
        assert!(UserRules::permissive().unrestricted());
    }

    #[test]
    fn selectors_are_joined() {
        // The command table registers the catalogue rules are read against.
        crate::command::table();
        let args: Vec<String> = ["on", "(+get", "~k)", "(+set)"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(
            join_selectors(&args).expect("balanced"),
            vec!["on", "(+get ~k)", "(+set)"]
        );
        assert!(join_selectors(&["(+get".to_string()]).is_err());
    }
}
