//! omniORB's client against a generated AMH servant, in GIOP 1.0, 1.1 and
//! 1.2: clients cannot tell. The servant is `AmhEverything`
//! (`EverythingAmhSkeleton`), which answers every call through its
//! responder from a thread of its own after the upcall has returned.
//!
//! - omniORB's `interop_client`, the suite every synchronous Armillary
//!   server passes, passes against it too (values of every type, inout and
//!   out parameters, user and system exceptions, attributes, inherited
//!   operations, references, a nested call back to the client);
//! - `amh_client` (tests/interop/cpp/amh_client.cc) checks what is AMH's
//!   own: exceptions raised through a responder, and a responder dropped
//!   unanswered (NO_RESPONSE, minor NO_REPLY, COMPLETED_MAYBE).
//!
//! Needs omniORB (`scripts/test.sh` installs it); set
//! `ARMILLARY_SKIP_OMNIORB=1` to skip.

use std::path::Path;
use std::process::Command;

use armillary::config::OrbConfig;
use armillary::{minor, Orb, WaitForCompletion};
use armillary_codegen_tests::interop::interop::EverythingAmhSkeleton;
use armillary_codegen_tests::{AmhEverything, DROPPED_LONG};
use armillary_testkit::{build_peers, omniorb_available};

/// Runs the omniORB client `program` with `args` in every GIOP version
/// against `ior_file` and checks that every check passed.
fn run_in_every_giop_version(peers: &Path, program: &str, ior_file: &Path, args: &[&str]) {
    for (version, extra) in [
        ("1.0", Some("--no-wchar")),
        ("1.1", Some("--no-wchar")),
        ("1.2", None),
    ] {
        let mut cmd = Command::new(peers.join(program));
        cmd.arg(ior_file).args(args);
        if let (Some(flag), "interop_client") = (extra, program) {
            cmd.arg(flag);
        }
        let out = cmd.args(["-ORBmaxGIOPVersion", version]).output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let last = stdout.lines().last().unwrap_or("");
        assert!(
            out.status.success() && last.ends_with(" 0 failed"),
            "{program}, GIOP {version}:\n{stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        println!("{program}, GIOP {version}: {last}");
    }
}

#[test]
fn omniorb_clients_against_a_generated_amh_servant_in_every_giop_version() {
    if !omniorb_available() {
        return;
    }
    let peers = build_peers();
    let orb = Orb::with_config(OrbConfig::default()).unwrap();
    let poa = orb.root_poa();
    poa.manager().activate().unwrap();
    let reference = EverythingAmhSkeleton::new(AmhEverything::default())
        .activate(&poa)
        .unwrap();
    let ior_file = peers.join(format!("amh-server-{}.ior", std::process::id()));
    std::fs::write(&ior_file, orb.object_to_string(reference.as_object())).unwrap();
    run_in_every_giop_version(&peers, "interop_client", &ior_file, &[]);
    let dropped = DROPPED_LONG.to_string();
    let no_reply = minor::NO_REPLY.to_string();
    run_in_every_giop_version(&peers, "amh_client", &ior_file, &[&dropped, &no_reply]);
    let _ = std::fs::remove_file(&ior_file);
    orb.shutdown(WaitForCompletion::No).unwrap();
}
