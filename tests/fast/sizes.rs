//! Rooms stay small as features land: no product module — Rust, SQL, Python, Ruby, TypeScript,
//! JavaScript — over 500 lines, no SQL function over 100, and within each crate no module that
//! imports, through its `crate::` paths, a module that imports it back (an arrow running up a
//! floor). Functions of Rust over 100 lines are clippy's `too_many_lines` (clippy.toml).
//! Tests, fixtures, vendored and generated files are not product modules.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use tasker::repo_root;

/// Longest a product module may be, in lines.
const MODULE_LINES: usize = 500;
/// Longest an SQL function may be, in lines (its whole `CREATE … $$ … $$;`).
const SQL_FUNCTION_LINES: usize = 100;

/// Where product code lives, and of which kinds.
const PRODUCT: &[(&str, &[&str])] = &[
    ("tasker-shared/src", &["rs"]),
    ("tasker-orchestration/src", &["rs"]),
    ("tasker-orchestration/sql", &["sql"]),
    ("tasker-orchestration/ui", &["js"]),
    ("tasker-broker/src", &["rs"]),
    ("tasker-worker/src", &["rs"]),
    ("tasker-worker-rust/src", &["rs"]),
    ("tasker-client/src", &["rs"]),
    ("tasker-cli/src", &["rs"]),
    ("tasker-telemetry/src", &["rs"]),
    ("workers/python/src", &["rs"]),
    ("workers/python/python", &["py"]),
    ("workers/ruby/ext", &["rs"]),
    ("workers/ruby/lib", &["rb"]),
    ("workers/typescript/src", &["rs", "ts", "mts"]),
];

/// Not product modules: tests, fixtures, vendored and generated code.
fn excluded(path: &Path) -> bool {
    let text = path.to_string_lossy();
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default();
    name == "tests.rs"
        || name.ends_with(".d.ts")
        // `tasker/client/_api/`: the Python client's wire layer, generated from openapi.json.
        || ["/tests/", "/fixtures/", "/vendor/", "generated", "/_api/", "/node_modules/"]
            .iter()
            .any(|part| text.contains(part))
}

fn files(dir: &Path, kinds: &[&str], out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            files(&path, kinds, out);
        } else if path
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| kinds.contains(&e))
            && !excluded(&path)
        {
            out.push(path);
        }
    }
}

fn product_files() -> Vec<PathBuf> {
    let root = repo_root();
    let mut out = Vec::new();
    for (dir, kinds) in PRODUCT {
        files(&root.join(dir), kinds, &mut out);
    }
    out.sort();
    out
}

fn relative(path: &Path) -> String {
    path.strip_prefix(repo_root())
        .unwrap_or(path)
        .display()
        .to_string()
}

#[test]
fn no_product_module_is_over_500_lines() {
    let files = product_files();
    assert!(
        files.len() > 100,
        "only {} product files found",
        files.len()
    );
    let over: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let lines = std::fs::read_to_string(f).ok()?.lines().count();
            (lines > MODULE_LINES).then(|| format!("{} ({lines} lines)", relative(f)))
        })
        .collect();
    assert!(
        over.is_empty(),
        "modules over {MODULE_LINES} lines; split them by concept:\n  {}",
        over.join("\n  ")
    );
}

/// Each function of an SQL file: its name and how many lines its statement spans.
fn sql_functions(sql: &str) -> Vec<(String, usize)> {
    let mut out = Vec::new();
    let mut current: Option<(String, usize)> = None;
    let mut quoted = false;
    for line in sql.lines() {
        if let Some(rest) = line
            .trim_start()
            .strip_prefix("CREATE OR REPLACE FUNCTION ")
        {
            let name = rest.split('(').next().unwrap_or(rest).trim().to_owned();
            current = Some((name, 0));
        }
        if let Some((_, lines)) = current.as_mut() {
            *lines += 1;
            quoted ^= line.matches("$$").count() % 2 == 1;
            if !quoted && line.trim_end().ends_with(';') {
                out.extend(current.take());
            }
        }
    }
    out.extend(current);
    out
}

#[test]
fn no_sql_function_is_over_100_lines() {
    let mut over = Vec::new();
    let mut seen = 0;
    for f in product_files()
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == "sql"))
    {
        let sql = std::fs::read_to_string(f).expect("readable");
        for (name, lines) in sql_functions(&sql) {
            seen += 1;
            if lines > SQL_FUNCTION_LINES {
                over.push(format!("{name} in {} ({lines} lines)", relative(f)));
            }
        }
    }
    assert!(seen > 30, "only {seen} SQL functions found");
    assert!(
        over.is_empty(),
        "SQL functions over {SQL_FUNCTION_LINES} lines; split them into named parts:\n  {}",
        over.join("\n  ")
    );
}

#[test]
fn sql_functions_are_counted_whole() {
    let sql = "-- a note\nCREATE OR REPLACE FUNCTION f(a int) RETURNS int LANGUAGE sql AS $$\n  \
               SELECT 1;\n  SELECT 2;\n$$;\nCREATE OR REPLACE FUNCTION g() RETURNS int\n\
               LANGUAGE sql AS $$ SELECT 3 $$;\n";
    assert_eq!(
        sql_functions(sql),
        [("f".to_owned(), 4), ("g".to_owned(), 2)]
    );
}

/// The top-level modules of a crate (`src/<name>.rs` or `src/<name>/`), each with the other
/// top-level modules its files name through `crate::`.
fn crate_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut rust = Vec::new();
    files(src, &["rs"], &mut rust);
    let top = |path: &Path| -> Option<String> {
        let rel = path.strip_prefix(src).ok()?;
        let first = rel.components().next()?.as_os_str().to_string_lossy();
        let module = first.trim_end_matches(".rs").to_owned();
        (!matches!(module.as_str(), "lib" | "main")).then_some(module)
    };
    for file in &rust {
        let Some(from) = top(file) else { continue };
        // Code only: a doc comment may name another module without importing it.
        let text: String = std::fs::read_to_string(file)
            .unwrap_or_default()
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n");
        let uses = graph.entry(from.clone()).or_default();
        for (i, _) in text.match_indices("crate::") {
            let after = &text[i + "crate::".len()..];
            let name: String = after
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() && name != from {
                uses.insert(name);
            }
        }
    }
    // `crate::TaskTemplate` names the module that defines it, through the crate root's
    // `pub use template::{…, TaskTemplate, …}`.
    let root = std::fs::read_to_string(src.join("lib.rs")).unwrap_or_default();
    let mut owners: BTreeMap<String, String> = BTreeMap::new();
    for line in root.lines() {
        let Some(rest) = line.trim().strip_prefix("pub use ") else {
            continue;
        };
        let rest = rest.trim_start_matches("crate::").trim_end_matches(';');
        let Some((module, names)) = rest.split_once("::") else {
            continue;
        };
        for name in names.trim_matches(|c| c == '{' || c == '}').split(',') {
            let name = name.rsplit("::").next().unwrap_or(name);
            let name = name.split(" as ").last().unwrap_or(name).trim();
            owners.insert(name.to_owned(), module.to_owned());
        }
    }
    let known: BTreeSet<String> = graph.keys().cloned().collect();
    for (from, uses) in graph.iter_mut() {
        let named: Vec<String> = uses
            .iter()
            .filter_map(|u| owners.get(u).cloned())
            .filter(|m| m != from)
            .collect();
        uses.extend(named);
        uses.retain(|u| known.contains(u));
    }
    graph
}

/// The modules of `graph` that stand in a circle (each reaches itself through its imports).
fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<String> {
    let reaches = |start: &str| {
        let mut seen = BTreeSet::new();
        let mut todo: Vec<&str> = graph[start].iter().map(String::as_str).collect();
        while let Some(m) = todo.pop() {
            if seen.insert(m.to_owned()) {
                todo.extend(graph.get(m).into_iter().flatten().map(String::as_str));
            }
        }
        seen.contains(start)
    };
    graph.keys().filter(|m| reaches(m)).cloned().collect()
}

#[test]
fn no_crate_has_modules_that_import_each_other() {
    let root = repo_root();
    let mut tangled = Vec::new();
    for src in [
        "tasker-shared/src",
        "tasker-orchestration/src",
        "tasker-broker/src",
        "tasker-worker/src",
        "tasker-client/src",
        "tasker-cli/src",
        "tasker-worker-rust/src",
    ] {
        let graph = crate_graph(&root.join(src));
        let knot = circles(&graph);
        if !knot.is_empty() {
            let ties: Vec<String> = knot
                .iter()
                .map(|m| {
                    let back: Vec<&str> = graph[m]
                        .iter()
                        .filter(|u| knot.contains(u))
                        .map(String::as_str)
                        .collect();
                    format!("{m} -> {}", back.join(", "))
                })
                .collect();
            tangled.push(format!("{src}: {}", ties.join("; ")));
        }
    }
    assert!(
        tangled.is_empty(),
        "modules that import each other (an arrow running back up a floor):\n  {}",
        tangled.join("\n  ")
    );
}

#[test]
fn a_circle_is_found_and_a_chain_is_not() {
    let graph = |edges: &[(&str, &str)]| {
        let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (a, b) in edges {
            g.entry((*a).to_owned())
                .or_default()
                .insert((*b).to_owned());
            g.entry((*b).to_owned()).or_default();
        }
        g
    };
    assert!(circles(&graph(&[("a", "b"), ("b", "c")])).is_empty());
    assert_eq!(
        circles(&graph(&[("a", "b"), ("b", "c"), ("c", "a"), ("d", "a")])),
        ["a", "b", "c"]
    );
}
