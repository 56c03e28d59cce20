//! The omniORB IDL corpus (Debian's `omniorb-idl`, installed under
//! `/usr/share/idl/omniORB`) through the whole front end.
//!
//! Every file must pass, except the few that are not valid IDL as shipped
//! (omniidl rejects them too); for those the test pins the exact first
//! error, so a regression in either direction is noticed. The corpus
//! relies on its compiler defining `__OMNIIDL__` (to escape an identifier
//! that collides with the keyword `factory`), so the test defines it.

use std::path::Path;
use std::time::Instant;

use armillary_idl::Frontend;

const CORPUS: &str = "/usr/share/idl/omniORB";

/// Files that are invalid as shipped, with the reason and the expected
/// first error (as `file-name:line:col: message`).
const KNOWN_INVALID: &[(&str, &str, &str)] = &[
    (
        "COS/CosTSPortability.idl",
        "uses CORBA::Environment, which no omniORB IDL file declares",
        "CosTSPortability.idl:25:14: error: cannot find 'Environment' in 'CORBA'",
    ),
    (
        "COS/Security.idl",
        "uses CORBA::ServiceOption, which omniORB's corbaidl.idl does not declare",
        "Security.idl:28:18: error: cannot find 'ServiceOption' in 'CORBA'",
    ),
    (
        "COS/SecurityLevel1.idl",
        "includes Security.idl",
        "Security.idl:28:18: error: cannot find 'ServiceOption' in 'CORBA'",
    ),
    (
        "COS/SecurityLevel2.idl",
        "includes Security.idl",
        "Security.idl:28:18: error: cannot find 'ServiceOption' in 'CORBA'",
    ),
    (
        "COS/SecurityAdmin.idl",
        "includes Security.idl",
        "Security.idl:28:18: error: cannot find 'ServiceOption' in 'CORBA'",
    ),
    (
        "COS/SecurityReplaceable.idl",
        "includes Security.idl",
        "Security.idl:28:18: error: cannot find 'ServiceOption' in 'CORBA'",
    ),
    (
        "COS/NRService.idl",
        "includes Security.idl",
        "Security.idl:28:18: error: cannot find 'ServiceOption' in 'CORBA'",
    ),
    (
        "COS/SSLIOP.idl",
        "includes IOP.idl, which the Debian package does not ship",
        "SSLIOP.idl:10:10: error: cannot find include file 'IOP.idl'",
    ),
    (
        "COS/SECIOP.idl",
        "includes IOP.idl, which the Debian package does not ship",
        "SECIOP.idl:15:10: error: cannot find include file 'IOP.idl'",
    ),
    (
        "COS/DCE_CIOPSecurity.idl",
        "includes IOP.idl, which the Debian package does not ship",
        "DCE_CIOPSecurity.idl:10:10: error: cannot find include file 'IOP.idl'",
    ),
];

fn frontend() -> Frontend {
    Frontend::new()
        .include_dir(CORPUS)
        .include_dir(Path::new(CORPUS).join("COS"))
        .define("__OMNIIDL__", None)
}

/// `file-name:line:col: severity: message` of a diagnostic.
fn short(diagnostic: &armillary_idl::Diagnostic) -> String {
    let name = diagnostic
        .file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    format!(
        "{name}:{}:{}: {}: {}",
        diagnostic.line, diagnostic.col, diagnostic.severity, diagnostic.message
    )
}

#[test]
fn every_omniorb_idl_file_passes_the_front_end() {
    let root = Path::new(CORPUS);
    if !root.is_dir() {
        println!("SKIPPED: {CORPUS} is absent (install Debian's omniorb-idl to run this test)");
        return;
    }
    let files = armillary_idl::idl_files_under(root);
    assert!(
        files.len() > 50,
        "expected the whole corpus, found {} files",
        files.len()
    );
    let frontend = frontend();
    let mut failures = Vec::new();
    let mut passed = 0;
    for file in &files {
        let relative = file
            .strip_prefix(root)
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        let known = KNOWN_INVALID.iter().find(|(name, _, _)| *name == relative);
        match (frontend.parse_files(&[file]), known) {
            (Ok(_), None) => passed += 1,
            (Ok(_), Some((_, reason, _))) => failures.push(format!(
                "{relative}: expected to fail ({reason}) but passed"
            )),
            (Err(error), None) => failures.push(format!(
                "{relative}:\n{}",
                error
                    .diagnostics()
                    .iter()
                    .map(|d| d.to_string())
                    .collect::<Vec<_>>()
                    .join("\n")
            )),
            (Err(error), Some((_, reason, expected))) => {
                let first = error.errors().next().map(short);
                if first.as_deref() != Some(*expected) {
                    failures.push(format!(
                        "{relative} ({reason}): expected `{expected}`, got `{}`",
                        first.unwrap_or_default()
                    ));
                }
            }
        }
    }
    println!(
        "omniORB corpus: {passed} files pass, {} known invalid, {} unexpected",
        KNOWN_INVALID.len(),
        failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn the_omniorb_corpus_as_one_specification() {
    let root = Path::new(CORPUS);
    if !root.is_dir() {
        println!("SKIPPED: {CORPUS} is absent (install Debian's omniorb-idl to run this test)");
        return;
    }
    let mut files = armillary_idl::idl_files_under(root);
    // Naming.idl is omniORB's own copy of COS/CosNaming.idl: the two
    // cannot be in one specification.
    files.retain(|file| {
        let relative = file
            .strip_prefix(root)
            .unwrap_or(file)
            .to_string_lossy()
            .into_owned();
        relative != "Naming.idl" && !KNOWN_INVALID.iter().any(|(name, _, _)| *name == relative)
    });
    files.sort();
    let started = Instant::now();
    let spec = frontend()
        .parse_files(&files)
        .unwrap_or_else(|error| panic!("{}", error.diagnostics()[0]));
    let elapsed = started.elapsed();
    println!(
        "{} files, {} definitions in {elapsed:?}",
        files.len(),
        spec.definitions().count()
    );
    let id = |name: &str| {
        spec.lookup(name)
            .map(|id| spec[id].repository_id.clone())
            .unwrap_or_else(|| panic!("{name} not found"))
    };
    assert_eq!(
        id("CosNaming::NamingContext"),
        "IDL:omg.org/CosNaming/NamingContext:1.0"
    );
    assert_eq!(
        id("CosNaming::NamingContext::resolve"),
        "IDL:omg.org/CosNaming/NamingContext/resolve:1.0"
    );
    assert_eq!(
        id("PortableServer::POA"),
        "IDL:omg.org/PortableServer/POA:1.0"
    );
    assert_eq!(id("PortableServer"), "IDL:omg.org/PortableServer:2.3");
    assert_eq!(
        id("PortableServer::ForwardRequest"),
        "IDL:omg.org/PortableServer/ForwardRequest:2.3"
    );
    assert_eq!(id("CORBA::Repository"), "IDL:omg.org/CORBA/Repository:1.0");
    assert_eq!(
        id("Messaging::ExceptionHolder"),
        "IDL:omg.org/Messaging/ExceptionHolder:1.0"
    );
}
