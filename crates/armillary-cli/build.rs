//! Compiles the benchmarks' IDL into `$OUT_DIR`:
//! `omniorb-peers/idl/invocation_bench.idl` (a link to
//! `tests/interop/idl/invocation_bench.idl`, inside the crate so that a
//! packaged crate has it: the one operation of `armillary bench
//! invocation`) into `invocation_bench.rs`, and
//! `omniorb-peers/idl/middle_tier_bench.idl` (the Quoter of `armillary
//! bench middle-tier`) into `middle_tier_bench.rs`, and
//! `omniorb-peers/idl/collocation_bench.idl` (the Cuber of `armillary
//! bench collocation`) into `collocation_bench.rs`, and
//! `omniorb-peers/idl/sync_bench.idl` (a link to
//! `tests/interop/idl/sync_bench.idl`: the echo server of `armillary bench
//! latency`, `invocation` and `sync`, and `sync`'s stub; its
//! `sequence<octet>` as `armillary::Bytes`) into `sync_bench.rs`, and
//! `omniorb-peers/idl/lb_worker.idl` (a link to
//! `tests/interop/idl/lb_worker.idl`: the replica of `armillary lb
//! worker` and `armillary bench lb`) into `lb_worker.rs`.

use std::path::PathBuf;

fn main() {
    // Read when the script runs, not when it is compiled (a build script
    // reused from a target directory shared with another checkout must
    // find this checkout's files).
    let Some(manifest_dir) = std::env::var_os("CARGO_MANIFEST_DIR") else {
        eprintln!("cargo sets CARGO_MANIFEST_DIR for build scripts");
        std::process::exit(1);
    };
    let idl_dir = PathBuf::from(manifest_dir).join("omniorb-peers/idl");
    for name in [
        "invocation_bench",
        "middle_tier_bench",
        "collocation_bench",
        "sync_bench",
        "lb_worker",
    ] {
        if let Err(e) = armillary_idl::Builder::new()
            .file(idl_dir.join(format!("{name}.idl")))
            .out_name(name)
            // `bench sync`'s echo server answers with the octets it was
            // given, as a slice of the request: no copy on its way in.
            .octet_sequences_as_bytes(name == "sync_bench")
            .compile()
        {
            // The diagnostics, rustc-style, then fail the build.
            eprintln!("{e}");
            std::process::exit(1);
        }
    }
}
