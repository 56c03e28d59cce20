//! The README's server-and-client example is the crate documentation's
//! doctest, which runs: this test keeps the two texts the same, so that
//! the README shows code that compiles and works.

use std::path::Path;

/// The lines of the first fenced code block of `text` whose first line is
/// `first`, without the fences.
fn block_starting_with<'a>(text: &'a str, first: &str) -> Vec<&'a str> {
    let lines: Vec<&str> = text.lines().collect();
    let start = lines
        .windows(2)
        .position(|w| w[0].starts_with("```") && w[1] == first)
        .unwrap_or_else(|| panic!("no code block starts with {first:?}"));
    lines[start + 1..]
        .iter()
        .take_while(|line| !line.starts_with("```"))
        .copied()
        .collect()
}

/// The crate documentation (`//!` lines of `lib.rs`) as Markdown.
fn crate_doc(lib_rs: &str) -> String {
    lib_rs
        .lines()
        .filter_map(|line| line.strip_prefix("//!"))
        .map(|line| line.strip_prefix(' ').unwrap_or(line))
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn the_readme_example_is_the_crate_doctest() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("../../README.md")).unwrap();
    let lib_rs = std::fs::read_to_string(root.join("src/lib.rs")).unwrap();
    let doc = crate_doc(&lib_rs);

    let first = "use armillary::Orb;";
    let in_readme = block_starting_with(&readme, first);
    // The doctest hides its set-up behind `# ` lines (where `generated`
    // comes from, `fn main`, the assertions); the README shows the rest.
    let doctest_text = doc.replace("```\n# use armillary_quoter::generated;\n", "```\n");
    let in_doc: Vec<&str> = block_starting_with(&doctest_text, first)
        .into_iter()
        .filter(|line| !line.starts_with("# ") && *line != "#")
        .collect();
    assert!(
        in_readme.len() > 20,
        "the README's example is shorter than expected"
    );
    assert_eq!(
        in_readme, in_doc,
        "README.md and the `armillary` crate doc show different examples"
    );
}
