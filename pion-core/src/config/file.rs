//! The configuration file, as redis-server reads and rewrites it: `directive arg …`
//! lines with Redis's quoting, `#` comments and `include`. Reading yields directives
//! that remember their file and line (so an error can name them); `CONFIG REWRITE`
//! writes the live values back into the same file, keeping its comments and the lines
//! it does not own, updating the others in place and appending the rest.

use std::path::{Path, PathBuf};

use crate::config::{all_params, ConfigValues};

/// Splits a line into arguments the way Redis's `sdssplitargs` does: spaces separate,
/// `"…"` takes `\n`, `\t`, `\"`, `\\` and `\xHH` escapes, `'…'` takes `\'`. A closing
/// quote must be followed by a space or the end. `None` for unbalanced quotes.
pub fn split_args(line: &str) -> Option<Vec<String>> {
    let b = line.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    loop {
        while i < b.len() && b[i].is_ascii_whitespace() {
            i += 1;
        }
        if i >= b.len() {
            return Some(out);
        }
        let mut cur: Vec<u8> = Vec::new();
        let (mut dq, mut sq) = (false, false);
        loop {
            if dq {
                match b.get(i) {
                    None => return None,
                    Some(b'\\') if i + 3 < b.len() && b[i + 1] == b'x' => {
                        let hex = std::str::from_utf8(&b[i + 2..i + 4]).ok();
                        match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                            Some(v) => {
                                cur.push(v);
                                i += 3;
                            }
                            None => cur.push(b'\\'),
                        }
                    }
                    Some(b'\\') if i + 1 < b.len() => {
                        i += 1;
                        cur.push(match b[i] {
                            b'n' => b'\n',
                            b'r' => b'\r',
                            b't' => b'\t',
                            b'b' => 8,
                            b'a' => 7,
                            c => c,
                        });
                    }
                    Some(b'"') => {
                        if b.get(i + 1).is_some_and(|c| !c.is_ascii_whitespace()) {
                            return None;
                        }
                        dq = false;
                        i += 1;
                        break;
                    }
                    Some(&c) => cur.push(c),
                }
            } else if sq {
                match b.get(i) {
                    None => return None,
                    Some(b'\\') if b.get(i + 1) == Some(&b'\'') => {
                        i += 1;
                        cur.push(b'\'');
                    }
                    Some(b'\'') => {
                        if b.get(i + 1).is_some_and(|c| !c.is_ascii_whitespace()) {
                            return None;
                        }
                        sq = false;
                        i += 1;
                        break;
                    }
                    Some(&c) => cur.push(c),
                }
            } else {
                match b.get(i) {
                    None => break,
                    Some(c) if c.is_ascii_whitespace() => break,
                    Some(b'"') => dq = true,
                    Some(b'\'') => sq = true,
                    Some(&c) => cur.push(c),
                }
            }
            i += 1;
        }
        let _ = (dq, sq);
        out.push(String::from_utf8_lossy(&cur).into_owned());
    }
}

/// Writes an argument so that [`split_args`] reads it back: bare when it can be,
/// double-quoted with escapes otherwise.
pub fn quote(arg: &str) -> String {
    let plain = !arg.is_empty()
        && arg
            .bytes()
            .all(|c| c.is_ascii_graphic() && !matches!(c, b'"' | b'\'' | b'\\'));
    if plain {
        return arg.to_string();
    }
    let mut out = String::from("\"");
    for c in arg.bytes() {
        match c {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            c if c.is_ascii_graphic() || c == b' ' => out.push(c as char),
            c => out.push_str(&format!("\\x{c:02x}")),
        }
    }
    out.push('"');
    out
}

/// One directive of a configuration file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Directive {
    /// The directive, lower-case.
    pub name: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// The file it is in.
    pub file: PathBuf,
    /// Its 1-based line number.
    pub line: usize,
    /// The line as written.
    pub text: String,
}

impl Directive {
    /// A start-up error about this directive, in redis-server's layout.
    pub fn error(&self, reason: &str) -> String {
        format!(
            "\n*** FATAL CONFIG FILE ERROR (Pion {}) ***\nReading the configuration file {}, at line {}\n>>> '{}'\n{reason}",
            crate::VERSION,
            self.file.display(),
            self.line,
            self.text.trim()
        )
    }
}

/// Reads a configuration file and the files it includes, in order.
pub fn read(path: &Path) -> Result<Vec<Directive>, String> {
    let mut out = Vec::new();
    read_into(path, &mut out, 0)?;
    Ok(out)
}

fn read_into(path: &Path, out: &mut Vec<Directive>, depth: usize) -> Result<(), String> {
    if depth > 16 {
        return Err(format!(
            "{}: includes nest too deeply (an include loop?)",
            path.display()
        ));
    }
    let text = std::fs::read_to_string(path).map_err(|e| {
        format!(
            "Fatal error, can't open config file '{}': {e}",
            path.display()
        )
    })?;
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut d = Directive {
            name: String::new(),
            args: Vec::new(),
            file: path.to_path_buf(),
            line: i + 1,
            text: raw.to_string(),
        };
        let Some(mut args) = split_args(line) else {
            return Err(d.error("Unbalanced quotes in configuration line"));
        };
        d.name = args.remove(0).to_ascii_lowercase();
        d.args = args;
        if d.name == "include" {
            let [file] = d.args.as_slice() else {
                return Err(d.error("wrong number of arguments"));
            };
            let target = PathBuf::from(file);
            let target = if target.is_relative() {
                path.parent().map_or(target.clone(), |p| p.join(&target))
            } else {
                target
            };
            read_into(&target, out, depth + 1).map_err(|e| d.error(&e))?;
            continue;
        }
        out.push(d);
    }
    Ok(())
}

/// The file the server was started with, and the values it had before the file was
/// read (a value still at its default is not written unless the file had it).
#[derive(Debug, Clone)]
pub struct ConfigFile {
    /// The file.
    pub path: PathBuf,
    /// Built-in defaults.
    pub defaults: ConfigValues,
}

const MARKER: &str = "# Generated by CONFIG REWRITE";

fn param_line(name: &str, value: &str) -> String {
    if matches!(name, "bind" | "save") && !value.trim().is_empty() {
        format!("{name} {value}")
    } else {
        format!("{name} {}", quote(value))
    }
}

/// `CONFIG REWRITE`: rewrites `file` with `values`. Directives the table owns are
/// updated where they stand (later repeats dropped), everything else is kept, and
/// values that differ from the defaults but were not in the file are appended.
/// `users` (when the server keeps its users in this file) replace its `user` lines.
/// The new file replaces the old one by a rename.
pub fn rewrite(
    file: &ConfigFile,
    values: &ConfigValues,
    users: Option<Vec<String>>,
) -> std::io::Result<()> {
    let text = std::fs::read_to_string(&file.path).unwrap_or_default();
    let mut seen: Vec<&'static str> = Vec::new();
    let mut out: Vec<String> = Vec::new();
    for raw in text.lines() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            out.push(raw.to_string());
            continue;
        }
        let name = split_args(line)
            .and_then(|a| a.into_iter().next())
            .map(|n| n.to_ascii_lowercase())
            .unwrap_or_default();
        if name == "user" && users.is_some() {
            continue;
        }
        match crate::config::Config::param(&name) {
            Some(p) if !seen.contains(&p.name) => {
                seen.push(p.name);
                out.push(param_line(p.name, &(p.get)(values)));
            }
            Some(_) => {}
            None => out.push(raw.to_string()),
        }
    }
    let mut appended: Vec<String> = Vec::new();
    for p in all_params() {
        if seen.contains(&p.name) {
            continue;
        }
        let value = (p.get)(values);
        if value != (p.get)(&file.defaults) {
            appended.push(param_line(p.name, &value));
        }
    }
    appended.extend(users.unwrap_or_default());
    if !appended.is_empty() {
        if !out.iter().any(|l| l.trim() == MARKER) {
            while out.last().is_some_and(|l| l.trim().is_empty()) {
                out.pop();
            }
            out.push(MARKER.to_string());
        }
        out.extend(appended);
    }
    let mut body = out.join("\n");
    body.push('\n');
    let tmp = file
        .path
        .with_extension(format!("rewrite-{}", std::process::id()));
    let result = std::fs::write(&tmp, body)
        .and_then(|()| std::fs::File::open(&tmp).and_then(|f| f.sync_all()))
        .and_then(|()| std::fs::rename(&tmp, &file.path));
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_like_redis() {
        let s = |l: &str| split_args(l).expect("balanced");
        assert_eq!(s("port 7000"), vec!["port", "7000"]);
        assert_eq!(s("save ''"), vec!["save", ""]);
        assert_eq!(s(r#"requirepass "a b\"c""#), vec!["requirepass", "a b\"c"]);
        assert_eq!(s(r#"x "\x41\n""#), vec!["x", "A\n"]);
        assert_eq!(s("  a   b  "), vec!["a", "b"]);
        assert!(split_args("x \"open").is_none());
        assert!(split_args("x \"a\"b").is_none());
        for v in ["", "a b", "q\"uote", "back\\slash", "plain"] {
            assert_eq!(s(&format!("k {}", quote(v))), vec!["k", v]);
        }
    }

    #[test]
    fn rewrite_keeps_comments_and_updates_in_place() {
        let dir = std::env::temp_dir().join(format!("pion-conf-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let path = dir.join("pion.conf");
        std::fs::write(
            &path,
            "# top comment\nmaxmemory 100\ndaemonize no\nmaxmemory 200\n\n# tail\n",
        )
        .expect("write");
        let file = ConfigFile {
            path: path.clone(),
            defaults: ConfigValues::default(),
        };
        let values = ConfigValues {
            maxmemory: 5000,
            hz: 50,
            ..ConfigValues::default()
        };
        rewrite(&file, &values, None).expect("rewrite");
        let text = std::fs::read_to_string(&path).expect("read");
        assert_eq!(
            text,
            "# top comment\nmaxmemory 5000\ndaemonize no\n\n# tail\n# Generated by CONFIG REWRITE\nhz 50\n"
        );
        // A second rewrite with the same values changes nothing.
        rewrite(&file, &values, None).expect("rewrite again");
        assert_eq!(std::fs::read_to_string(&path).expect("read"), text);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
