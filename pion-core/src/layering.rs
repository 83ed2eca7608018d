//! Holds the crate to its layers (doc/design.md, "Layers inside pion-core"): reads
//! every module's `crate::` paths, and fails when a top-level module reaches one in a
//! higher layer, or when top-level modules form a cycle, unless doc/design.md lists
//! the import as a known exception. A listed exception that no longer occurs fails
//! too, so the list only shrinks.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Crate-root items and the module they belong to (re-exports and the version
/// constants defined in lib.rs, which stand at the bottom).
fn root_item(name: &str) -> Option<&'static str> {
    match name {
        "Engine" | "EngineOptions" => Some("engine"),
        "Session" => Some("api"),
        "Reply" => Some("reply"),
        "OpError" | "OpResult" => Some("error"),
        "VERSION" | "REDIS_VERSION" => Some("util"),
        "log_notice" | "log_warning" | "log_verbose" => Some("util"),
        _ => None,
    }
}

/// Whether a file holds only tests.
fn test_only(rel: &str) -> bool {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    rel.contains("/tests/")
        || name == "tests.rs"
        || name.starts_with("tests_")
        || name.ends_with("_tests.rs")
        || matches!(name, "power_cut.rs" | "layering.rs" | "test_support.rs")
}

/// The code of a file without its comments and its test modules (every
/// `#[cfg(test)] mod name { … }`, matched by braces; a `#[cfg(test)] mod name;`
/// declaration names a file the walk skips on its own).
fn code_of(text: &str) -> String {
    let code: String = text
        .lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let mut out = String::with_capacity(code.len());
    let mut rest = code.as_str();
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let after = &rest[at + "#[cfg(test)]".len()..];
        let item = after.trim_start();
        let Some(module) = item.strip_prefix("mod ") else {
            // A test-only item that is not a module (a function, an impl): kept, as
            // it is rare and cheap to check.
            out.push_str("#[cfg(test)]");
            rest = after;
            continue;
        };
        let body = module.trim_start_matches(|c: char| c.is_alphanumeric() || c == '_' || c == ' ');
        if let Some(tail) = body.strip_prefix(';') {
            rest = tail;
            continue;
        }
        let Some(inner) = body.strip_prefix('{') else {
            rest = after;
            continue;
        };
        let mut depth = 1;
        let mut end = inner.len();
        for (i, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = i + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = &inner[end..];
    }
    out.push_str(rest);
    out
}

/// The first segments of the items of a `{…}` use group (`a::{b, c}, d` → a, d),
/// nested groups skipped by depth.
fn group_heads(group: &str, out: &mut BTreeSet<String>) {
    let mut depth = 0usize;
    let mut at_item = true;
    let mut chars = group.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => return,
            '}' => depth -= 1,
            ',' if depth == 0 => at_item = true,
            c if at_item && depth == 0 && (c.is_alphanumeric() || c == '_') => {
                let name: String = group[i..]
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                for _ in 1..name.chars().count() {
                    chars.next();
                }
                out.insert(name);
                at_item = false;
            }
            c if c.is_whitespace() => {}
            _ => at_item = false,
        }
    }
}

/// The leading identifier of `text`.
fn ident(text: &str) -> String {
    text.chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// The top-level modules a piece of code names through `crate::`, and through
/// `super::` chains that climb to the crate root from `module` (the file's module
/// path: `command/handlers/keys.rs` is `["command", "handlers", "keys"]`).
fn referenced(code: &str, module: &[&str]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        let before = rest[..at].chars().next_back();
        rest = &rest[at + "crate::".len()..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '$') {
            continue; // `$crate::` in a macro, or part of a longer name
        }
        if let Some(group) = rest.strip_prefix('{') {
            group_heads(group, &mut out);
            continue;
        }
        let name = ident(rest);
        if !name.is_empty() {
            out.insert(name);
        }
    }
    let mut rest = code;
    while let Some(at) = rest.find("super::") {
        let before = rest[..at].chars().next_back();
        rest = &rest[at..];
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            rest = &rest["super::".len()..];
            continue;
        }
        let mut ups = 0;
        while let Some(tail) = rest.strip_prefix("super::") {
            ups += 1;
            rest = tail;
        }
        // From a file's own scope `super` is its parent; climbing every level of
        // the module path reaches the crate root, where the next name is a
        // top-level module.
        if ups >= module.len() {
            if let Some(group) = rest.strip_prefix('{') {
                group_heads(group, &mut out);
            } else {
                let name = ident(rest);
                if !name.is_empty() {
                    out.insert(name);
                }
            }
        }
    }
    out
}

/// The module path of a source file relative to `src` (`a/mod.rs` is `a`).
fn module_path(rel: &str) -> Vec<&str> {
    let mut parts: Vec<&str> = rel.trim_end_matches(".rs").split('/').collect();
    if parts.last() == Some(&"mod") {
        parts.pop();
    }
    parts
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The layer table and the known exceptions, from doc/design.md.
fn declared() -> (BTreeMap<String, usize>, BTreeSet<(String, String)>) {
    let doc = Path::new(env!("CARGO_MANIFEST_DIR")).join("../doc/design.md");
    let text = std::fs::read_to_string(&doc).expect("doc/design.md");
    let section = text
        .split("## Layers inside pion-core")
        .nth(1)
        .expect("doc/design.md has a \"Layers inside pion-core\" section");
    let section = section.split("\n## ").next().unwrap_or(section);
    let mut layers = BTreeMap::new();
    let mut exceptions = BTreeSet::new();
    for line in section.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        if cells.len() >= 4 {
            if let Ok(n) = cells[1].parse::<usize>() {
                for m in cells[2].split_whitespace() {
                    layers.insert(m.trim_matches('`').to_string(), n);
                }
            }
        }
        if let Some(rest) = line.trim().strip_prefix("- `") {
            if let Some((edge, _)) = rest.split_once('`') {
                if let Some((a, b)) = edge.split_once(" -> ") {
                    exceptions.insert((a.trim().to_string(), b.trim().to_string()));
                }
            }
        }
    }
    (layers, exceptions)
}

/// Every import between two top-level modules, with the files that make it.
fn imports() -> BTreeMap<(String, String), BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut all = Vec::new();
    files(&src, &mut all);
    let mut edges: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for path in all {
        let rel = path
            .strip_prefix(&src)
            .expect("under src")
            .to_string_lossy()
            .replace('\\', "/");
        if rel == "lib.rs" || test_only(&rel) {
            continue;
        }
        let top = rel
            .split('/')
            .next()
            .unwrap_or(&rel)
            .trim_end_matches(".rs")
            .to_string();
        let text = std::fs::read_to_string(&path).expect("source file");
        for name in referenced(&code_of(&text), &module_path(&rel)) {
            let target = root_item(&name).map_or(name, str::to_string);
            if target != top {
                edges
                    .entry((top.clone(), target))
                    .or_default()
                    .insert(rel.clone());
            }
        }
    }
    edges
}

/// A cycle in `graph`, if there is one.
fn cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(n.to_string(), 1);
        path.push(n.to_string());
        for m in graph.get(n).into_iter().flatten() {
            match state.get(m.as_str()) {
                Some(1) => {
                    let at = path.iter().position(|p| p == m).unwrap_or(0);
                    let mut c = path[at..].to_vec();
                    c.push(m.clone());
                    return Some(c);
                }
                Some(_) => {}
                None => {
                    if let Some(c) = visit(m, graph, state, path) {
                        return Some(c);
                    }
                }
            }
        }
        path.pop();
        state.insert(n.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in graph.keys() {
        if !state.contains_key(n.as_str()) {
            if let Some(c) = visit(n, graph, &mut state, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

#[test]
fn no_module_imports_from_a_layer_above_it_and_no_cycle_between_modules() {
    let (layers, exceptions) = declared();
    let edges = imports();
    let mut problems = Vec::new();
    for (a, b) in edges.keys() {
        for m in [a, b] {
            if !layers.contains_key(m.as_str()) {
                problems.push(format!("`{m}` has no layer in doc/design.md's table"));
            }
        }
    }
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for ((a, b), files) in &edges {
        let excepted = exceptions.contains(&(a.clone(), b.clone()));
        if let (Some(la), Some(lb)) = (layers.get(a.as_str()), layers.get(b.as_str())) {
            if lb > la && !excepted {
                problems.push(format!(
                    "{a} (layer {la}) imports {b} (layer {lb}) in {}",
                    files.iter().cloned().collect::<Vec<_>>().join(", ")
                ));
            }
        }
        if !excepted {
            graph.entry(a.clone()).or_default().insert(b.clone());
        }
    }
    if let Some(c) = cycle(&graph) {
        problems.push(format!("a cycle between modules: {}", c.join(" -> ")));
    }
    for (a, b) in &exceptions {
        if !edges.contains_key(&(a.clone(), b.clone())) {
            problems.push(format!(
                "`{a} -> {b}` is listed as an exception but no longer occurs: remove it from doc/design.md"
            ));
        }
    }
    assert!(problems.is_empty(), "\n{}", problems.join("\n"));
}

#[test]
fn the_reader_finds_paths_groups_and_skips_comments() {
    let code = code_of(
        "use crate::{a::{b, c}, d};\n// crate::commented\nfn f() { crate::e::f(); }\n\
         #[cfg(test)]\nmod tests { fn g() { crate::t::u(); } }\nfn h() { $crate::m::n(); }",
    );
    let found: Vec<String> = referenced(&code, &["x"]).into_iter().collect();
    assert_eq!(found, ["a", "d", "e"]);
    // A `mod tests;` declaration hides nothing after it.
    let code = code_of("#[cfg(test)]\nmod tests;\nuse crate::later;");
    assert_eq!(
        referenced(&code, &["x"]).into_iter().collect::<Vec<_>>(),
        ["later"]
    );
    // `super::` chains count once they climb to the crate root.
    let code = "use super::super::engine::Engine;\nuse super::sibling;\nuse super::super::{acl, config::X};";
    assert_eq!(
        referenced(code, &["command", "handlers"])
            .into_iter()
            .collect::<Vec<_>>(),
        ["acl", "config", "engine"]
    );
    assert!(referenced(code, &["command", "handlers", "keys"]).is_empty());
    assert_eq!(module_path("a/mod.rs"), ["a"]);
    assert_eq!(module_path("a/b.rs"), ["a", "b"]);
    let mut g = BTreeMap::new();
    g.insert("x".to_string(), BTreeSet::from(["y".to_string()]));
    g.insert("y".to_string(), BTreeSet::from(["x".to_string()]));
    assert!(cycle(&g).is_some());
    g.remove("y");
    assert!(cycle(&g).is_none());
}
