//! The README's AMH code blocks are this example's code: each block of
//! the "Answering later (AMH)" section appears, line for line, in
//! `src/main.rs`.

use std::path::Path;

#[test]
fn the_readme_amh_blocks_are_the_example_code() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("../../README.md")).unwrap();
    let source = std::fs::read_to_string(root.join("src/main.rs")).unwrap();
    let section = readme
        .split("### Answering later (AMH)")
        .nth(1)
        .expect("the README has an AMH section");
    let section = section.split("\n## ").next().unwrap_or(section);
    let section = section.split("\n### ").next().unwrap_or(section);
    let blocks: Vec<&str> = section
        .split("```rust\n")
        .skip(1)
        .map(|rest| rest.split("```").next().unwrap_or(rest))
        .collect();
    assert_eq!(blocks.len(), 2, "the AMH section's code blocks");
    for block in blocks {
        assert!(
            source.contains(block),
            "README block not in src/main.rs:\n{block}"
        );
    }
}
