//! Generates Rust from the project's test IDL files and, when omniORB's
//! IDL files are installed, from every file of that corpus.
//!
//! The corpus files are compiled one by one, each into a module of
//! `corpus.rs`; those the front end rejects (the few that are broken as
//! shipped) are listed in `corpus_rejected.rs` with their first error,
//! and what the back end left out is listed in `corpus_left_out.rs`, so
//! that the tests can check both lists.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use armillary_idl::{BuildError, Builder};

const CORPUS: &str = "/usr/share/idl/omniORB";

fn main() {
    // Read when the script runs, not baked in when it is compiled: a build
    // script reused from a target directory shared with another checkout
    // must find this checkout's files.
    let manifest_dir = PathBuf::from(
        std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"),
    );
    let root = manifest_dir.join("../..");
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let build = |name: &str, builder: Builder| {
        builder
            .out_name(name)
            .compile()
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    };
    build(
        "quoter",
        Builder::new()
            .file(root.join("examples/quoter/quoter.idl"))
            .amh("Stock::Quoter"),
    );
    // Interop::Everything and Stock::Quoter also get AMH skeletons (beside
    // their synchronous ones): tests/amh.rs and tests/amh_interop.rs.
    build(
        "interop",
        Builder::new()
            .file(root.join("tests/interop/idl/interop.idl"))
            .amh("Interop::Everything"),
    );
    build(
        "traits",
        Builder::new()
            .file(root.join("crates/armillary-codegen-tests/idl/traits.idl"))
            .type_attribute("Traits::Version", "#[derive(PartialOrd, Ord)]")
            .field_attribute("Traits::Version::minor", "#[doc(alias = \"patch\")]")
            .type_attribute("::Traits::Level", "#[doc(alias = \"Tier\")]"),
    );
    // idl/amh.idl: an interface selected whole for AMH (its base's calls
    // flattened in) beside one that mixes an AMH operation with a
    // synchronous one.
    build(
        "amh",
        Builder::new()
            .file(root.join("crates/armillary-codegen-tests/idl/amh.idl"))
            .amh("Amh::Calculator")
            .amh("Amh::Mixed::slow"),
    );
    // idl/bytes.idl: every sequence<octet> as armillary::Bytes, and AMH
    // for one operation (its responder takes Bytes too).
    build(
        "bytes",
        Builder::new()
            .file(root.join("crates/armillary-codegen-tests/idl/bytes.idl"))
            .octet_sequences_as_bytes(true)
            .amh("Octets::Store::echo"),
    );
    build(
        "names",
        Builder::new().file(root.join("crates/armillary-codegen-tests/idl/names.idl")),
    );
    // idl/comments.idl: IDL comments Markdown would misread (indented
    // blocks, links to nothing, HTML), in every kind of item's docs.
    build(
        "comments",
        Builder::new().file(root.join("crates/armillary-codegen-tests/idl/comments.idl")),
    );
    build(
        "collocation",
        Builder::new().file(root.join("crates/armillary-codegen-tests/idl/collocation.idl")),
    );
    let valid = root.join("crates/armillary-idl/tests/valid");
    build(
        "everything",
        // Its valuetypes are left out with warnings, which are expected.
        Builder::new()
            .include_dir(valid.join("include"))
            .file(valid.join("everything.idl"))
            .quiet(true),
    );
    corpus(&out_dir);
}

fn corpus(out_dir: &Path) {
    println!("cargo:rerun-if-changed={CORPUS}");
    println!("cargo::rustc-check-cfg=cfg(omniorb_idl)");
    let files = armillary_idl::idl_files_under(Path::new(CORPUS));
    let mut modules = String::new();
    let mut rejected = String::from("&[\n");
    let mut left_out = String::from("&[\n");
    for file in &files {
        let relative = file
            .strip_prefix(CORPUS)
            .unwrap_or(file)
            .to_string_lossy()
            .into_owned();
        let module = relative
            .trim_end_matches(".idl")
            .replace(['/', '-', '.'], "_")
            .to_lowercase();
        let builder = Builder::new()
            .include_dir(CORPUS)
            .include_dir(Path::new(CORPUS).join("COS"))
            .define("__OMNIIDL__", None)
            .file(file)
            .out_dir(out_dir.join("corpus"))
            .out_name(&module)
            .rustfmt(false);
        match builder.generate() {
            Ok((code, warnings)) => {
                let path = out_dir.join("corpus").join(format!("{module}.rs"));
                std::fs::create_dir_all(out_dir.join("corpus")).expect("create corpus dir");
                std::fs::write(&path, code).expect("write corpus module");
                writeln!(
                    modules,
                    "#[doc = \"`{relative}`\"]\n#[allow(clippy::module_inception)]\npub mod {module} {{ include!({:?}); }}",
                    path.display().to_string()
                )
                .ok();
                // The back end's own warnings; the front end's (such as a
                // forward declaration never defined) are not about the
                // Rust code.
                let left = warnings
                    .iter()
                    .filter(|w| w.message.contains("is left out of the Rust code"));
                for warning in left {
                    writeln!(left_out, "    ({relative:?}, {:?}),", warning.message).ok();
                }
            }
            Err(BuildError::Diagnostics(error)) => {
                let first = error
                    .errors()
                    .next()
                    .map(|d| d.message.clone())
                    .unwrap_or_default();
                writeln!(rejected, "    ({relative:?}, {first:?}),").ok();
            }
            Err(other) => panic!("{relative}: {other}"),
        }
    }
    rejected.push(']');
    left_out.push(']');
    if !files.is_empty() {
        println!("cargo:rustc-cfg=omniorb_idl");
    }
    std::fs::write(out_dir.join("corpus.rs"), modules).expect("write corpus.rs");
    std::fs::write(out_dir.join("corpus_rejected.rs"), rejected).expect("write rejected");
    std::fs::write(out_dir.join("corpus_left_out.rs"), left_out).expect("write left out");
}
