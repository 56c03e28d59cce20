//! Data-driven tests over the IDL files in `tests/invalid` and
//! `tests/valid`, in the manner of rust-analyzer's test data.
//!
//! * `tests/invalid/NAME.idl` must fail, and its diagnostics (one per line,
//!   `file:line:col: severity: message`, paths relative to
//!   `tests/invalid`) must equal `tests/invalid/NAME.expected`.
//!   Run with `UPDATE_EXPECT=1` to rewrite the expectations, then review
//!   the diff.
//! * `tests/valid/*.idl` must pass with no diagnostic at all.
//!
//! Both directories use `tests/<dir>/include` as the include path; files
//! there are only included, never tested on their own.

use std::path::{Path, PathBuf};

use armillary_idl::{Diagnostic, Frontend};

fn data_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join(name)
}

fn idl_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|err| panic!("cannot read {}: {err}", dir.display()))
        .flatten()
        .map(|entry| entry.path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "idl"))
        .collect();
    files.sort();
    files
}

fn frontend(dir: &Path) -> Frontend {
    Frontend::new().include_dir(dir.join("include"))
}

/// The one-line form of a diagnostic with its path relative to `dir`.
fn relative_line(diagnostic: &Diagnostic, dir: &Path) -> String {
    let mut relative = diagnostic.clone();
    if let Ok(stripped) = diagnostic.file.strip_prefix(dir) {
        relative.file = stripped.to_path_buf();
    }
    relative.one_line()
}

#[test]
fn invalid_idl_files_give_their_expected_diagnostics() {
    let dir = data_dir("invalid");
    let update = std::env::var_os("UPDATE_EXPECT").is_some();
    let files = idl_files(&dir);
    assert!(files.len() >= 45, "only {} invalid cases", files.len());
    let frontend = frontend(&dir);
    let mut mismatches = Vec::new();
    for file in &files {
        let diagnostics = frontend.check(&[file]);
        let name = file.file_name().unwrap_or_default().to_string_lossy();
        if !diagnostics.iter().any(Diagnostic::is_error) {
            mismatches.push(format!("{name}: expected an error, got none"));
            continue;
        }
        let mut actual: String = diagnostics
            .iter()
            .map(|d| relative_line(d, &dir))
            .collect::<Vec<_>>()
            .join("\n");
        actual.push('\n');
        let expected_path = file.with_extension("expected");
        if update {
            if let Err(err) = std::fs::write(&expected_path, &actual) {
                panic!("cannot write {}: {err}", expected_path.display());
            }
            continue;
        }
        let expected = std::fs::read_to_string(&expected_path).unwrap_or_default();
        if expected != actual {
            mismatches.push(format!(
                "{name}:\n--- expected\n{expected}+++ actual\n{actual}"
            ));
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} of {} cases differ (UPDATE_EXPECT=1 rewrites the .expected files):\n\n{}",
        mismatches.len(),
        files.len(),
        mismatches.join("\n")
    );
}

#[test]
fn every_invalid_case_has_an_expectation() {
    let dir = data_dir("invalid");
    for file in idl_files(&dir) {
        assert!(
            file.with_extension("expected").is_file(),
            "{} has no .expected file",
            file.display()
        );
    }
}

#[test]
fn valid_idl_files_pass_without_diagnostics() {
    let dir = data_dir("valid");
    let frontend = frontend(&dir);
    for file in idl_files(&dir) {
        let diagnostics = frontend.check(&[&file]);
        assert!(
            diagnostics.is_empty(),
            "{}:\n{}",
            file.display(),
            diagnostics
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
}
