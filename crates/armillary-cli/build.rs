//! Compiles `omniorb-peers/idl/invocation_bench.idl` (a link to
//! `tests/interop/idl/invocation_bench.idl`, inside the crate so that a
//! packaged crate has it: the one operation of `armillary bench
//! invocation`) into `$OUT_DIR/invocation_bench.rs`.

use std::path::PathBuf;

fn main() {
    // Read when the script runs, not when it is compiled (a build script
    // reused from a target directory shared with another checkout must
    // find this checkout's files).
    let Some(manifest_dir) = std::env::var_os("CARGO_MANIFEST_DIR") else {
        eprintln!("cargo sets CARGO_MANIFEST_DIR for build scripts");
        std::process::exit(1);
    };
    let idl = PathBuf::from(manifest_dir).join("omniorb-peers/idl/invocation_bench.idl");
    if let Err(e) = armillary_idl::Builder::new()
        .file(idl)
        .out_name("invocation_bench")
        .compile()
    {
        // The diagnostics, rustc-style, then fail the build.
        eprintln!("{e}");
        std::process::exit(1);
    }
}
