//! Generates the locator's stubs, skeletons and types from
//! `idl/LoadBalancing.idl` (included by `src/lib.rs` with
//! `armillary::include_idl!("load_balancing")`).

fn main() {
    armillary_idl::Builder::new()
        .file("idl/LoadBalancing.idl")
        .out_name("load_balancing")
        .ami(false)
        .compile()
        .unwrap_or_else(|e| panic!("{e}"));
}
