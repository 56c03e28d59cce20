//! Generated code is clean under `clippy::pedantic` in a user's crate: runs
//! `cargo clippy -p armillary-quoter --lib -- -W clippy::pedantic` (the
//! quoter example is an ordinary user crate whose `build.rs` calls
//! `armillary_idl::Builder`) and fails on any warning whose code is in the
//! generated file. Warnings in the example's hand-written code are not this
//! test's business.
//!
//! The same holds for the test IDL and omniORB's corpus without running
//! cargo: this crate lints its generated modules with
//! `#[warn(clippy::pedantic)]`, so `cargo clippy --all-targets -- -D
//! warnings` fails on them.
//!
//! Skipped (with a note) when clippy is not installed or
//! `ARMILLARY_SKIP_CLIPPY=1` is set. The check rebuilds the quoter's
//! workspace dependencies with clippy's arguments, so it takes a minute.

use std::path::Path;
use std::process::Command;

#[test]
fn generated_code_is_clean_under_clippy_pedantic() {
    if std::env::var_os("ARMILLARY_SKIP_CLIPPY").is_some() {
        eprintln!("skipped: ARMILLARY_SKIP_CLIPPY is set");
        return;
    }
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let has_clippy = Command::new(&cargo)
        .args(["clippy", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_clippy {
        eprintln!("skipped: cargo clippy is not installed");
        return;
    }
    let output = Command::new(&cargo)
        .current_dir(&root)
        .args([
            "clippy",
            "--quiet",
            "-p",
            "armillary-quoter",
            "--lib",
            "--message-format=json",
            "--",
            "-W",
            "clippy::pedantic",
        ])
        .output()
        .expect("run cargo clippy");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "cargo clippy failed:\n{}\n{stdout}",
        String::from_utf8_lossy(&output.stderr)
    );
    // Each message is a JSON line; the generated file is `quoter.rs` in
    // the build script's OUT_DIR (`…/build/armillary-quoter-*/out/`).
    let generated: Vec<&str> = stdout
        .lines()
        .filter(|line| line.contains("\"reason\":\"compiler-message\""))
        .filter(|line| line.contains("/out/quoter.rs"))
        .collect();
    assert!(
        generated.is_empty(),
        "clippy::pedantic warns about generated code:\n{}",
        generated.join("\n")
    );
    // The check saw the generated code: the example includes it.
    assert!(
        std::fs::read_to_string(root.join("examples/quoter/src/lib.rs"))
            .is_ok_and(|lib| lib.contains("include_idl!(\"quoter\")")),
        "the quoter example no longer includes its generated code"
    );
}
