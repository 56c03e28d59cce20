//! The README's server-and-client example is the crate documentation's
//! doctest, its AMI example the `armillary::ami` module's, and its
//! interceptor example the `armillary::interceptors` module's, which run:
//! these tests keep the texts the same, so that the README shows code that
//! compiles and works.

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

/// The module documentation (`//!` lines) of a source file as Markdown.
fn module_doc(source: &str) -> String {
    source
        .lines()
        .filter_map(|line| line.strip_prefix("//!"))
        .map(|line| line.strip_prefix(' ').unwrap_or(line))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The README's code block that starts with `first` and the doctest of
/// `source` (a file under `src/`) that does, without the doctest's hidden
/// lines.
fn readme_and_doctest(first: &str, source: &str) -> (Vec<String>, Vec<String>) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("../../README.md")).unwrap();
    let source = std::fs::read_to_string(root.join("src").join(source)).unwrap();
    let doc = module_doc(&source);
    let doctest_text = doc.replace("```\n# use armillary_quoter::generated;\n", "```\n");
    let in_readme = block_starting_with(&readme, first)
        .into_iter()
        .map(str::to_owned)
        .collect();
    let in_doc = block_starting_with(&doctest_text, first)
        .into_iter()
        .filter(|line| !line.starts_with("# ") && *line != "#")
        .map(str::to_owned)
        .collect();
    (in_readme, in_doc)
}

#[test]
fn the_readme_ami_example_is_the_ami_module_doctest() {
    let (in_readme, in_doc) = readme_and_doctest(
        "use generated::stock::{AmiQuoterHandlerServant, AmiQuoterHandlerSkeleton};",
        "ami/mod.rs",
    );
    assert!(
        in_readme.len() > 15,
        "the README's AMI example is shorter than expected"
    );
    assert_eq!(
        in_readme, in_doc,
        "README.md and the `armillary::ami` docs show different examples"
    );
}

#[test]
fn the_readme_interceptor_example_is_the_interceptors_module_doctest() {
    let (in_readme, in_doc) = readme_and_doctest("use std::sync::Arc;", "interceptors/mod.rs");
    assert!(
        in_readme.len() > 20,
        "the README's interceptor example is shorter than expected"
    );
    assert_eq!(
        in_readme, in_doc,
        "README.md and the `armillary::interceptors` docs show different examples"
    );
}

#[test]
fn the_readme_example_is_the_crate_doctest() {
    // The doctest hides its set-up behind `# ` lines (where `generated`
    // comes from, `fn main`, the assertions); the README shows the rest.
    let (in_readme, in_doc) = readme_and_doctest("use armillary::Orb;", "lib.rs");
    assert!(
        in_readme.len() > 20,
        "the README's example is shorter than expected"
    );
    assert_eq!(
        in_readme, in_doc,
        "README.md and the `armillary` crate doc show different examples"
    );
}
