//! `Builder` as build scripts and tools call it: only `compile()`, the
//! build-script entry point, prints `cargo:` lines; `generate()` prints
//! nothing even with `OUT_DIR` set.
//!
//! Each case runs this test binary again as a child with `OUT_DIR` set
//! and a variable naming what the child should do, and reads what the
//! child printed.

use std::path::PathBuf;
use std::process::Command;

use armillary_idl::Builder;

const ROLE: &str = "ARMILLARY_BUILDER_TEST_ROLE";

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "armillary-builder-test-{}-{name}",
        std::process::id()
    ));
    std::fs::create_dir_all(dir.join("inc")).unwrap();
    std::fs::write(
        dir.join("inc/base.idl"),
        "module Base { typedef long T; };\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("main.idl"),
        "#include <base.idl>\nmodule M { typedef Base::T U; };\n",
    )
    .unwrap();
    dir
}

fn builder(dir: &std::path::Path) -> Builder {
    Builder::new()
        .include_dir(dir.join("inc"))
        .file(dir.join("main.idl"))
        .rustfmt(false)
        .quiet(true)
}

/// Runs this binary's test `child` with `OUT_DIR=dir` and the role
/// `role`; returns its standard output.
fn run_child(role: &str, dir: &std::path::Path) -> String {
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child", "--nocapture", "--test-threads=1"])
        .env(ROLE, role)
        .env("OUT_DIR", dir.join("out"))
        .env("ARMILLARY_BUILDER_TEST_DIR", dir)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The child's half: does what the role says (nothing when run as an
/// ordinary test).
#[test]
fn child() {
    let (Ok(role), Some(dir)) = (
        std::env::var(ROLE),
        std::env::var_os("ARMILLARY_BUILDER_TEST_DIR").map(PathBuf::from),
    ) else {
        return;
    };
    match role.as_str() {
        "generate" => {
            let (code, _) = builder(&dir).generate().unwrap();
            assert!(code.contains("pub type U"), "{code}");
        }
        "compile" => {
            let path = builder(&dir).compile().unwrap();
            assert!(path.ends_with("out/main.rs"), "{}", path.display());
        }
        other => panic!("unknown role {other}"),
    }
}

#[test]
fn generate_prints_no_cargo_lines_even_with_out_dir_set() {
    let dir = scratch("generate");
    let stdout = run_child("generate", &dir);
    assert!(!stdout.contains("cargo:"), "{stdout}");
}

#[test]
fn compile_prints_rerun_if_changed_for_every_file_read() {
    let dir = scratch("compile");
    let stdout = run_child("compile", &dir);
    let reruns: Vec<&str> = stdout
        .lines()
        // The harness may print `test child ... ` on the same line.
        .filter_map(|l| l.split_once("cargo:rerun-if-changed=").map(|(_, p)| p))
        .collect();
    let main = dir.join("main.idl");
    let base = dir.join("inc/base.idl");
    assert_eq!(reruns.len(), 2, "{stdout}");
    assert!(reruns.iter().any(|r| PathBuf::from(r) == main), "{stdout}");
    assert!(reruns.iter().any(|r| PathBuf::from(r) == base), "{stdout}");
    assert!(dir.join("out/main.rs").exists());
}
