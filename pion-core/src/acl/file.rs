//! The ACL file (`aclfile`): one `user <name> <rules…>` line per user, read whole at
//! start-up and by `ACL LOAD` (all users or none), written by `ACL SAVE` through a
//! temporary file and a rename, so a crash never leaves half a file.

use std::io::Write;
use std::path::Path;

use super::rules::UserRules;
use super::{describe, Acl};
use crate::config::file::split_args;

/// Parses an ACL file's text. Errors name the file and line, as Redis's do.
/// `channels_default_all` is `acl-pubsub-default allchannels`.
pub fn parse(
    path: &Path,
    text: &str,
    channels_default_all: bool,
) -> Result<Vec<(String, UserRules)>, String> {
    let mut users: Vec<(String, UserRules)> = Vec::new();
    let mut errors = String::new();
    let shown = path.display();
    for (i, raw) in text.lines().enumerate() {
        let line_no = i + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some(args) = split_args(line) else {
            errors += &format!("{shown}:{line_no}: unbalanced quotes in acl line. ");
            continue;
        };
        if args.first().map(String::as_str) != Some("user") {
            errors += &format!("{shown}:{line_no}: line should start with user keyword. ");
            continue;
        }
        let Some(name) = args.get(1) else {
            errors += &format!("{shown}:{line_no}: user name is missing. ");
            continue;
        };
        if name.bytes().any(|c| c.is_ascii_whitespace() || c == 0) {
            errors +=
                &format!("{shown}:{line_no}: Usernames can't contain spaces or null characters. ");
            continue;
        }
        if users.iter().any(|(n, _)| n == name) {
            errors += &format!("WARNING: Duplicate user '{name}' found on line {line_no}. ");
            continue;
        }
        let ops = match super::rules::join_selectors(&args[2..]) {
            Ok(ops) => ops,
            Err(_) => {
                errors +=
                    &format!("{shown}:{line_no}: Unmatched parenthesis in selector definition. ");
                continue;
            }
        };
        let mut rules = UserRules::with_channel_default(channels_default_all);
        let mut failed = false;
        for op in &ops {
            if let Err(e) = rules.apply(op) {
                errors += &format!(
                    "{shown}:{line_no}: Error in applying operation '{op}': {}. ",
                    e.text()
                );
                failed = true;
                break;
            }
        }
        if !failed {
            users.push((name.clone(), rules));
        }
    }
    if errors.is_empty() {
        Ok(users)
    } else {
        Err(errors.trim_end().to_string())
    }
}

/// Reads the ACL file and replaces every user with its users, or changes nothing and
/// says why. Returns the users replaced (their clients must be disconnected).
pub fn load(acl: &Acl, path: &Path) -> Result<Vec<std::sync::Arc<super::User>>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("Error loading ACLs, opening file '{}': {e}", path.display()))?;
    let users = parse(path, &text, acl.new_rules().channels_default_all)?;
    Ok(acl.replace_all(users))
}

/// Writes every user to `path` atomically (a temporary file renamed over it).
pub fn save(acl: &Acl, path: &Path) -> std::io::Result<()> {
    let mut text = String::new();
    for line in acl.list() {
        text.push_str(&line);
        text.push('\n');
    }
    let tmp = path.with_extension(format!("tmp-{}", std::process::id()));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// One user as a file line.
pub fn line(name: &str, rules: &UserRules) -> String {
    format!("user {name} {}", describe::rules(rules))
}
