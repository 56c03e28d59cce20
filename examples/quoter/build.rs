//! Compiles `quoter.idl` into Rust (`$OUT_DIR/quoter.rs`), as any
//! Armillary application does from its `build.rs`.

fn main() {
    if let Err(e) = armillary_idl::Builder::new().file("quoter.idl").compile() {
        // The diagnostics, rustc-style, then fail the build.
        eprintln!("{e}");
        std::process::exit(1);
    }
}
