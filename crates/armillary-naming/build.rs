//! Generates the CosNaming stubs, skeletons and types from
//! `idl/CosNaming.idl` (included by `src/lib.rs` with
//! `armillary::include_idl!("cos_naming")`).

fn main() {
    armillary_idl::Builder::new()
        .file("idl/CosNaming.idl")
        .out_name("cos_naming")
        .compile()
        .unwrap_or_else(|e| panic!("{e}"));
}
