//! omniORB's IDL corpus through the whole compiler: every file that the
//! front end accepts was generated into `armillary_codegen_tests::corpus`
//! by the build script, so this crate compiling is the proof that the
//! generated Rust compiles. These tests check the lists of what could not
//! be generated and what the back end left out, and use a few of the
//! generated types.

use std::path::Path;

use armillary_codegen_tests::{CORPUS_LEFT_OUT, CORPUS_REJECTED};

const CORPUS: &str = "/usr/share/idl/omniORB";

/// The files that are broken as shipped (see
/// `crates/armillary-idl/tests/omniorb.rs` for each reason and exact
/// diagnostic).
const KNOWN_INVALID: &[&str] = &[
    "COS/CosTSPortability.idl",
    "COS/DCE_CIOPSecurity.idl",
    "COS/NRService.idl",
    "COS/SECIOP.idl",
    "COS/SSLIOP.idl",
    "COS/Security.idl",
    "COS/SecurityAdmin.idl",
    "COS/SecurityLevel1.idl",
    "COS/SecurityLevel2.idl",
    "COS/SecurityReplaceable.idl",
];

fn corpus_present() -> bool {
    if Path::new(CORPUS).is_dir() {
        return true;
    }
    println!("SKIPPED: {CORPUS} is absent (install Debian's omniorb-idl to run this test)");
    false
}

#[test]
fn every_valid_corpus_file_is_generated() {
    if !corpus_present() {
        return;
    }
    let generated = cfg!(omniorb_idl);
    assert!(
        generated,
        "the corpus is installed but the build script did not see it: rebuild the crate"
    );
    let mut rejected: Vec<&str> = CORPUS_REJECTED.iter().map(|(file, _)| *file).collect();
    rejected.sort_unstable();
    assert_eq!(
        rejected, KNOWN_INVALID,
        "files rejected by the front end: {CORPUS_REJECTED:#?}"
    );
}

#[test]
fn only_value_types_are_left_out() {
    if !corpus_present() {
        return;
    }
    let unexpected: Vec<String> = CORPUS_LEFT_OUT
        .iter()
        .inspect(|(file, why)| println!("{file}: {why}"))
        .filter(|(_, why)| {
            let value_type = why.contains("valuetypes are not supported")
                || why.contains("value boxes are not supported");
            // An operation whose signature uses a left-out value type.
            let uses_one = why.contains(", which is left out");
            !(value_type || uses_one)
        })
        .map(|(file, why)| format!("{file}: {why}"))
        .collect();
    assert!(
        unexpected.is_empty(),
        "unexpected left-out definitions:\n{}",
        unexpected.join("\n")
    );
    // The value types omniORB's corpus declares, and nothing else.
    let mut files: Vec<&str> = CORPUS_LEFT_OUT.iter().map(|(file, _)| *file).collect();
    files.dedup();
    assert_eq!(files, ["boxes.idl", "messaging.idl", "pollable.idl"]);
}

#[cfg(omniorb_idl)]
#[test]
fn generated_corpus_types_are_usable() {
    use armillary::runtime::{ByteOrder, CdrDecode, CdrEncode, CdrReader, CdrWriter, GiopVersion};
    use armillary::IdlType;
    use armillary_codegen_tests::corpus::cos_cosnaming::cos_naming;

    assert_eq!(
        cos_naming::NamingContext::REPOSITORY_ID,
        "IDL:omg.org/CosNaming/NamingContext:1.0"
    );
    let name = vec![cos_naming::NameComponent {
        id: "quoter".into(),
        kind: "service".into(),
    }];
    let mut w = CdrWriter::new(ByteOrder::Little, GiopVersion::V1_2);
    name.encode(&mut w).unwrap();
    let bytes = w.into_bytes();
    let mut r = CdrReader::new(&bytes, ByteOrder::Little, GiopVersion::V1_2);
    assert_eq!(
        Vec::<cos_naming::NameComponent>::decode(&mut r).unwrap(),
        name
    );
    let tc = cos_naming::NameComponent::type_code();
    assert_eq!(tc.id().unwrap(), "IDL:omg.org/CosNaming/NameComponent:1.0");
}
