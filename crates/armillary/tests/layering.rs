//! The ORB crate's layering, as a rule a test keeps (the way
//! rust-analyzer keeps its architecture in `tidy` tests): each module of
//! `crates/armillary/src` belongs to one layer, and a module may name
//! only modules of its own layer or of the layers below it. ARCHITECTURE.md
//! ("Layers of the ORB crate") says why each module sits where it does;
//! this table and that section change together.
//!
//! The check reads the sources: every path that starts at the crate root
//! (`crate::…`, in `use` trees too) or climbs out of the module
//! (`super::…`), outside `#[cfg(test)]` code and comments.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The layers, lowest first. A module is named by its path under `src`
/// (`orb`, `transport/client`); a module not listed belongs to the layer
/// of its nearest listed ancestor.
const LAYERS: &[(&str, &[&str])] = &[
    (
        "foundation: configuration, errors, per-thread roles",
        &[
            "completion",
            "config",
            "endpoint",
            "error",
            "exception",
            "fast_map",
            "metrics",
            "net",
            "object_id",
            "pacer",
            "request_count",
            "request_filter",
            "slots",
            "task_queue",
            "thread_key",
            "thread_role",
            "timeout",
            "tls",
            "trace",
        ],
    ),
    ("the reactor", &["reactor"]),
    (
        "the client transport",
        &[
            "transport",
            "transport/client",
            "transport/connection_cache",
            "transport/mux",
            "transport/outbox",
            "transport/profiles",
            "transport/reply",
            "transport/socket_wait",
            "transport/tls",
            "transport/wait",
        ],
    ),
    (
        "the object model and the forms of a call",
        &[
            "amh",
            "ami",
            "dii",
            "dsi",
            "idl_type",
            "interceptors",
            "local_server",
            "object",
            "owed_reply",
            "pending",
            "poa",
            "servant",
        ],
    ),
    ("the server transport", &["transport/server"]),
    (
        "the ORB core",
        &["collocation", "invocation", "metrics/endpoint", "orb"],
    ),
    ("the crate's facade", &["lib", "runtime"]),
];

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Every source file with its module path (`transport/client/mod.rs` is
/// `transport/client`), but the `tests.rs` files of unit tests.
fn files(dir: &Path, out: &mut Vec<(String, PathBuf)>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs")
            && path.file_name().is_some_and(|f| f != "tests.rs")
        {
            let rel = path.strip_prefix(src()).unwrap().with_extension("");
            let mut parts: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if parts.last().is_some_and(|p| p == "mod") {
                parts.pop();
            }
            out.push((parts.join("/"), path));
        }
    }
}

/// The layer (index into [`LAYERS`]) of the module `path`.
fn layer_of(path: &str) -> Option<usize> {
    let mut candidate = path.to_owned();
    loop {
        for (i, (_, modules)) in LAYERS.iter().enumerate() {
            if modules.contains(&candidate.as_str()) {
                return Some(i);
            }
        }
        match candidate.rfind('/') {
            Some(at) => candidate.truncate(at),
            None => return None,
        }
    }
}

/// The source without comments and without the `#[cfg(test)]` module at
/// its end (test code may reach anywhere).
fn product_code(text: &str) -> String {
    let text = match text.find("#[cfg(test)]") {
        Some(at) => &text[..at],
        None => text,
    };
    text.lines()
        .map(|line| match line.find("//") {
            Some(at) => &line[..at],
            None => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The module paths `code` names from the crate root: `crate::a::b::C`
/// gives `a/b/C`, and `use crate::{a::X, b}` gives `a/X` and `b`;
/// `super::` climbs from `module`.
fn named_paths(module: &str, code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let bytes: Vec<char> = code.chars().collect();
    let mut i = 0;
    while i < bytes.len() {
        let rest: String = bytes[i..bytes.len().min(i + 64)].iter().collect();
        let at_word_start = i == 0 || !(bytes[i - 1].is_alphanumeric() || bytes[i - 1] == '_');
        if at_word_start && (rest.starts_with("crate::") || rest.starts_with("super::")) {
            let (mut base, mut j) = if rest.starts_with("crate::") {
                (Vec::new(), i + "crate::".len())
            } else {
                // `super` is the module's parent, for a `mod.rs` file and
                // a leaf file alike (the module path names the module).
                let mut base: Vec<String> = module.split('/').map(str::to_owned).collect();
                base.pop();
                (base, i + "super::".len())
            };
            while bytes[j..].iter().collect::<String>().starts_with("super::") {
                base.pop();
                j += "super::".len();
            }
            let (paths, end) = use_tree(&bytes, j);
            for p in paths {
                let mut full = base.clone();
                full.extend(p);
                out.push(full.join("/"));
            }
            i = end.max(i + 1);
        } else {
            i += 1;
        }
    }
    out
}

/// Parses a path or use tree at `at` (after `crate::`): `a::b::C`,
/// `a::{b, c::D}`; returns the paths it names and where it ends.
fn use_tree(chars: &[char], mut at: usize) -> (Vec<Vec<String>>, usize) {
    let mut prefix = Vec::new();
    loop {
        if chars.get(at) == Some(&'{') {
            let mut all = Vec::new();
            at += 1;
            loop {
                while chars
                    .get(at)
                    .is_some_and(|c| c.is_whitespace() || *c == ',')
                {
                    at += 1;
                }
                if chars.get(at) == Some(&'}') || at >= chars.len() {
                    return (
                        all.into_iter()
                            .map(|p: Vec<String>| prefix.iter().cloned().chain(p).collect())
                            .collect(),
                        at + 1,
                    );
                }
                let (paths, end) = use_tree(chars, at);
                all.extend(paths);
                at = end;
            }
        }
        let start = at;
        while chars
            .get(at)
            .is_some_and(|c| c.is_alphanumeric() || *c == '_')
        {
            at += 1;
        }
        let word: String = chars[start..at].iter().collect();
        if word.is_empty() || word == "self" {
            return (vec![prefix], at);
        }
        prefix.push(word);
        if chars[at..].iter().take(2).collect::<String>() == "::" {
            at += 2;
        } else {
            return (vec![prefix], at);
        }
    }
}

#[test]
fn every_module_names_only_its_own_layer_and_those_below() {
    let mut all = Vec::new();
    files(&src(), &mut all);
    all.sort();
    let mut unplaced = Vec::new();
    let mut breaches: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (module, path) in &all {
        let Some(own) = layer_of(module) else {
            unplaced.push(module.clone());
            continue;
        };
        let text = std::fs::read_to_string(path).unwrap();
        for named in named_paths(module, &product_code(&text)) {
            // Items of the crate root (`crate::Orb`) are the facade's
            // re-exports; the module they come from is what counts, so a
            // root item is looked up by its first segment only when that
            // is a module.
            let Some(layer) = layer_of(&named) else {
                continue;
            };
            if layer > own {
                breaches
                    .entry(format!("{module} ({})", LAYERS[own].0))
                    .or_default()
                    .push(format!("{named} ({})", LAYERS[layer].0));
            }
        }
    }
    assert!(
        unplaced.is_empty(),
        "modules in no layer (add them to LAYERS and to ARCHITECTURE.md): {unplaced:?}"
    );
    let report: Vec<String> = breaches
        .iter()
        .map(|(m, names)| {
            let mut names = names.clone();
            names.sort();
            names.dedup();
            format!("{m} names {}", names.join(", "))
        })
        .collect();
    assert!(
        report.is_empty(),
        "modules that reach up:\n{}",
        report.join("\n")
    );
}

/// The checker itself: it sees through `use` trees and `super::`.
#[test]
fn the_checker_finds_paths_in_use_trees_and_supers() {
    let code = "use crate::{orb::OrbCore, transport::{wait::Waiter, client}};\n\
                fn f() { crate::reactor::handling(x); super::super::super::poa::Poa::new(); }";
    let mut found = named_paths("transport/wait/read", code);
    found.sort();
    assert_eq!(
        found,
        [
            "orb/OrbCore",
            "poa/Poa/new",
            "reactor/handling",
            "transport/client",
            "transport/wait/Waiter"
        ]
    );
    assert_eq!(layer_of("transport/wait/read"), layer_of("transport/wait"));
    assert_eq!(layer_of("orb/OrbCore"), layer_of("orb"));
    assert!(layer_of("transport/server") > layer_of("poa"));
}
