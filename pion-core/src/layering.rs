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

/// The code of a file without its comments and its test module.
fn code_of(text: &str) -> String {
    let text = match text.find("#[cfg(test)]\nmod tests") {
        Some(at) => &text[..at],
        None => text,
    };
    text.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The top-level modules a piece of code names through `crate::`.
fn referenced(code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            // `use crate::{a::b, c}`: the first segment of each item.
            let end = group.find('}').unwrap_or(group.len());
            for item in group[..end].split(',') {
                let name: String = item
                    .trim()
                    .chars()
                    .take_while(|c| c.is_alphanumeric() || *c == '_')
                    .collect();
                if !name.is_empty() {
                    out.insert(name);
                }
            }
            continue;
        }
        let name: String = rest
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        if !name.is_empty() {
            out.insert(name);
        }
    }
    out
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
        for name in referenced(&code_of(&text)) {
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
        "use crate::{a::b, c};\n// crate::commented\nfn f() { crate::d::e(); }\n#[cfg(test)]\nmod tests { crate::t }",
    );
    let found: Vec<String> = referenced(&code).into_iter().collect();
    assert_eq!(found, ["a", "c", "d"]);
    let mut g = BTreeMap::new();
    g.insert("x".to_string(), BTreeSet::from(["y".to_string()]));
    g.insert("y".to_string(), BTreeSet::from(["x".to_string()]));
    assert!(cycle(&g).is_some());
    g.remove("y");
    assert!(cycle(&g).is_none());
}
