//! The map holds: the crate's rooms (its top-level modules) import each other
//! without a cycle, and display and CLI crates stay out of the rooms that
//! decide and simulate. Read from the source, so a new `use` that closes a
//! loop fails here.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Graph = BTreeMap<String, BTreeSet<String>>;

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// A file's code without comments and without its unit tests (which may
/// use any room to build their fixtures).
fn code(text: &str) -> String {
    let text = text
        .find("#[cfg(test)]\nmod tests")
        .map_or(text, |i| &text[..i]);
    text.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The rooms a piece of code names through `crate::room` or
/// `crate::{room, …}`.
fn named_rooms(code: &str) -> BTreeSet<String> {
    let mut rooms = BTreeSet::new();
    let ident = |s: &str| -> String {
        s.chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect()
    };
    for (i, _) in code.match_indices("crate::") {
        let rest = &code[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let group = &group[..group.find('}').unwrap_or(group.len())];
            for item in group.split(',') {
                let name = ident(item.trim());
                if !name.is_empty() {
                    rooms.insert(name);
                }
            }
        } else {
            let name = ident(rest);
            if !name.is_empty() {
                rooms.insert(name);
            }
        }
    }
    rooms
}

/// Room → rooms it imports, over every file of `src/` but the crate root
/// and the binary.
fn room_graph() -> (Graph, BTreeMap<String, String>) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut graph = Graph::new();
    let mut code_of = BTreeMap::new();
    for f in files {
        let rel = f.strip_prefix(&src).unwrap();
        // The crate root, the binary, and unit-test modules of their own
        // file (`#[cfg(test)] mod tests;`) are not part of any room's code.
        if rel == Path::new("lib.rs")
            || rel == Path::new("main.rs")
            || rel.file_name().is_some_and(|n| n == "tests.rs")
        {
            continue;
        }
        let first = rel.components().next().unwrap().as_os_str();
        let room = Path::new(first)
            .file_stem()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let body = code(&std::fs::read_to_string(&f).unwrap());
        let names = named_rooms(&body);
        let entry = graph.entry(room.clone()).or_default();
        entry.extend(names.into_iter().filter(|n| *n != room));
        code_of
            .entry(room)
            .or_insert_with(String::new)
            .push_str(&body);
    }
    (graph, code_of)
}

/// A cycle of the graph, if it has one (depth-first search).
fn find_cycle(graph: &Graph) -> Option<Vec<String>> {
    fn visit(
        n: &str,
        graph: &Graph,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == n) {
            let mut cycle = path[i..].to_vec();
            cycle.push(n.to_string());
            return Some(cycle);
        }
        if done.contains(n) {
            return None;
        }
        path.push(n.to_string());
        for next in graph.get(n).into_iter().flatten() {
            if let Some(c) = visit(next, graph, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(n.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|n| visit(n, graph, &mut Vec::new(), &mut done))
}

#[test]
fn the_cycle_finder_finds_a_loop_of_any_length() {
    let g = |edges: &[(&str, &str)]| {
        let mut g = Graph::new();
        for (a, b) in edges {
            g.entry(a.to_string()).or_default().insert(b.to_string());
        }
        g
    };
    assert_eq!(find_cycle(&g(&[("a", "b"), ("b", "c")])), None);
    assert_eq!(
        find_cycle(&g(&[("a", "b"), ("b", "c"), ("c", "a")])),
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
    assert_eq!(
        named_rooms(
            "use crate::core::{Event};\nuse crate::{sim, live::site};\nx: crate::units::Size"
        ),
        ["core", "live", "sim", "units"].map(String::from).into()
    );
    assert!(code("use a;\n#[cfg(test)]\nmod tests {\n use crate::sim;\n}").ends_with("use a;"));
}

#[test]
fn no_room_imports_a_room_that_imports_it_back() {
    let (graph, _) = room_graph();
    assert!(graph.len() >= 10, "{graph:?}");
    assert!(graph["sim"].contains("core"), "the reader sees imports");
    if let Some(cycle) = find_cycle(&graph) {
        panic!(
            "the rooms import each other in a loop: {}\n{graph:#?}",
            cycle.join(" → ")
        );
    }
}

#[test]
fn the_core_and_the_engines_depend_on_no_display_or_cli_crate() {
    let (graph, code_of) = room_graph();
    for room in [
        "core", "policy", "sim", "live", "workflow", "config", "units",
    ] {
        let body = &code_of[room];
        for krate in ["clap::", "indicatif::", "plotters::"] {
            assert!(!body.contains(krate), "{room} uses {krate}");
        }
        assert!(
            !graph[room].contains("report"),
            "{room} imports report: {:?}",
            graph[room]
        );
    }
    assert!(graph["core"].is_empty(), "core imports {:?}", graph["core"]);
    // The report reads the engine-neutral RunResult, never an engine.
    for engine in ["sim", "live"] {
        assert!(
            !graph["report"].contains(engine),
            "report imports {engine}: {:?}",
            graph["report"]
        );
    }
}

/// Issue 39: the engines are two drivers of one world and never each
/// other's; a policy sees only the core's seams (and the units it reads,
/// and `interrupt`, a leaf that imports nothing, where an external policy
/// registers the program it starts so that a second signal ends it).
#[test]
fn the_engines_import_neither_each_other_and_policies_only_the_core() {
    let (graph, _) = room_graph();
    assert!(
        !graph["sim"].contains("live"),
        "sim imports {:?}",
        graph["sim"]
    );
    assert!(
        !graph["live"].contains("sim"),
        "live imports {:?}",
        graph["live"]
    );
    let beyond: Vec<&String> = graph["policy"]
        .iter()
        .filter(|r| !["core", "units", "interrupt"].contains(&r.as_str()))
        .collect();
    assert!(beyond.is_empty(), "policy imports {beyond:?}");
    assert!(
        graph["interrupt"].is_empty(),
        "interrupt imports {:?}",
        graph["interrupt"]
    );
}

/// The modules a file declares with `internal!(…)`: `parent::name` each.
fn internal_modules(file: &Path, parent: &str) -> Vec<String> {
    let text = std::fs::read_to_string(file).unwrap();
    let body = code(&text);
    let Some(start) = body.find("internal!(") else {
        return Vec::new();
    };
    let list = &body[start + "internal!(".len()..];
    let list = &list[..list.find(')').unwrap()];
    list.split(',')
        .map(str::trim)
        .filter(|m| !m.is_empty())
        .map(|m| format!("{parent}{m}"))
        .collect()
}

#[test]
fn the_examples_and_the_library_tour_use_only_what_users_can_reach() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut internal = internal_modules(&root.join("src/lib.rs"), "");
    for room in ["core", "live", "sim", "report"] {
        internal.extend(internal_modules(
            &root.join(format!("src/{room}/mod.rs")),
            &format!("{room}::"),
        ));
    }
    for expected in ["cli", "db", "netbed", "core::manager", "live::gridftp"] {
        assert!(internal.iter().any(|m| m == expected), "{internal:?}");
    }
    let mut files = Vec::new();
    rust_files(&root.join("examples"), &mut files);
    files.push(root.join("src/lib.rs"));
    assert!(files.len() > 4, "{files:?}");
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for m in &internal {
            for used in [format!("gridbed::{m}::"), format!("gridbed::{m};")] {
                assert!(
                    !text.contains(&used),
                    "{} uses `{used}`, which is internal (only gridbed's own tests reach it)",
                    file.display()
                );
            }
        }
    }
}

/// The parts of one room (its sub-folders and files) → the parts they name,
/// through `crate::room::part` or `super::…` paths that resolve into the
/// room. A file's module path is read from where it lies.
fn part_graph(room: &str) -> Graph {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join(room);
    let mut files = Vec::new();
    rust_files(&dir, &mut files);
    let mut graph = Graph::new();
    for f in files {
        let rel = f.strip_prefix(&dir).unwrap();
        if rel == Path::new("mod.rs") {
            continue;
        }
        // The module path below the room: `formats/dax.rs` → [formats, dax],
        // `formats/mod.rs` → [formats].
        let mut module: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        let last = module.pop().unwrap();
        if last != "mod.rs" {
            module.push(last.trim_end_matches(".rs").to_string());
        }
        let part = module[0].clone();
        let body = code(&std::fs::read_to_string(&f).unwrap());
        let prefix = format!("crate::{room}::");
        let mut named = BTreeSet::new();
        let ident = |s: &str| -> String {
            s.chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect()
        };
        for (i, _) in body.match_indices(&prefix) {
            named.insert(ident(&body[i + prefix.len()..]));
        }
        for (i, _) in body.match_indices("super::") {
            // Only the first `super::` of a chain starts a path.
            if body[..i].ends_with("super::") {
                continue;
            }
            let mut rest = &body[i..];
            let mut up = 0;
            while let Some(r) = rest.strip_prefix("super::") {
                up += 1;
                rest = r;
            }
            if up == module.len() {
                named.insert(ident(rest));
            }
        }
        named.retain(|n| !n.is_empty() && *n != part);
        graph.entry(part).or_default().extend(named);
    }
    graph
}

/// Issue 39: inside `workflow`, the parsers of the formats users bring and
/// the papers' generators do not lean on each other both ways; what a
/// testbed may ask for (`spec`) is the one part that names both.
#[test]
fn the_parts_of_the_workflow_room_import_each_other_without_a_cycle() {
    let graph = part_graph("workflow");
    assert!(graph["spec"].contains("formats"), "{graph:#?}");
    assert!(graph["spec"].contains("generators"), "{graph:#?}");
    assert!(graph["planner"].contains("clustering"), "{graph:#?}");
    if let Some(cycle) = find_cycle(&graph) {
        panic!(
            "the workflow room's parts import each other in a loop: {}\n{graph:#?}",
            cycle.join(" → ")
        );
    }
}
