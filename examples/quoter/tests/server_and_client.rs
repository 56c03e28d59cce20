//! The example's two programs as a user runs them: `quoter-server` on its
//! own, writing its IOR, and `quoter-client` calling it by IOR file and
//! by `corbaloc:` URL; bad references are clean errors. omniORB's
//! `catior` reads the server's IOR when omniORB is installed.

use armillary::WaitForCompletion;
use std::process::{Command, Stdio};

use armillary_testkit::{wait_for_file, Peer};

fn start_server(tag: &str) -> (Peer, std::path::PathBuf, String) {
    let ior_file = std::env::temp_dir().join(format!("quoter-{tag}-{}.ior", std::process::id()));
    let _ = std::fs::remove_file(&ior_file);
    let server = Peer(
        Command::new(env!("CARGO_BIN_EXE_quoter-server"))
            .args(["--endpoint", "iiop://127.0.0.1:0", "--ior-file"])
            .arg(&ior_file)
            .stdout(Stdio::null())
            .spawn()
            .expect("quoter-server starts"),
    );
    let ior = wait_for_file(&ior_file);
    (server, ior_file, ior)
}

fn client(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_quoter-client"))
        .args(args)
        .output()
        .expect("quoter-client runs");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn client_calls_server_by_ior_file_and_by_corbaloc() {
    let (_server, ior_file, ior) = start_server("calls");
    assert!(ior.starts_with("IOR:"), "{ior}");
    let (ok, out, err) = client(&[ior_file.to_str().unwrap(), "ACME", "NOPE", "INITECH"]);
    assert!(ok, "{out}{err}");
    assert_eq!(
        out,
        "ACME: 42.17\nNOPE: unknown symbol (Stock::Invalid_Stock_Symbol)\nINITECH: 7.33\n"
    );

    // The same object by its plain key.
    let (orb, _) = armillary::Orb::init(["test"]).unwrap();
    let profile = orb.string_to_object(&ior).unwrap().ior().iiop_profiles()[0].clone();
    let url = format!("corbaloc:iiop:127.0.0.1:{}/Quoter", profile.port);
    let (ok, out, err) = client(&[&url, "GLOBEX"]);
    assert!(ok, "{out}{err}");
    assert_eq!(out, "GLOBEX: 189.50\n");
    orb.shutdown(WaitForCompletion::Yes).unwrap();

    if armillary_testkit::omniorb_available() {
        let cat = Command::new("catior").arg(&ior).output().unwrap();
        let text = String::from_utf8_lossy(&cat.stdout);
        assert!(text.contains("IDL:Stock/Quoter:1.0"), "{text}");
        assert!(text.contains("127.0.0.1"), "{text}");
    }
    let _ = std::fs::remove_file(&ior_file);
}

#[test]
fn bad_references_are_clean_errors() {
    let (ok, _, err) = client(&["IOR:zz", "ACME"]);
    assert!(!ok);
    assert!(err.starts_with("error: IOR:zz: "), "{err}");
    // Nobody listens there: a system exception, not a hang or a panic.
    let (ok, _, err) = client(&["corbaloc:iiop:127.0.0.1:1/Quoter", "ACME"]);
    assert!(!ok);
    assert!(err.starts_with("error: "), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    let (ok, _, err) = client(&[]);
    assert!(!ok);
    assert!(err.contains("usage: quoter-client"), "{err}");
}

#[test]
fn server_rejects_unknown_arguments() {
    let out = Command::new(env!("CARGO_BIN_EXE_quoter-server"))
        .arg("--bogus")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("unknown argument \"--bogus\""), "{err}");
}

/// Sends `signal` (`TERM`, `INT`) to a process with the `kill` command.
fn send_signal(pid: u32, signal: &str) {
    let status = Command::new("kill")
        .args([&format!("-{signal}"), &pid.to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success(), "kill -{signal} {pid}");
}

/// Waits (bounded) for the server to exit and returns its status.
fn wait_for_exit(server: &mut Peer) -> std::process::ExitStatus {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        if let Some(status) = server.0.try_wait().expect("try_wait") {
            return status;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "quoter-server did not stop"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

fn stops_cleanly_on(signal: &str) {
    let (mut server, ior_file, ior) = start_server(&format!("signal-{signal}"));
    let (orb, _) = armillary::Orb::init(["test"]).unwrap();
    let port = orb.string_to_object(&ior).unwrap().ior().iiop_profiles()[0].port;
    orb.shutdown(WaitForCompletion::Yes).unwrap();
    // It serves before the signal...
    let (ok, out, err) = client(&[ior_file.to_str().unwrap(), "ACME"]);
    assert!(ok, "{out}{err}");
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_ok());

    send_signal(server.0.id(), signal);
    let status = wait_for_exit(&mut server);
    assert_eq!(status.code(), Some(0), "{status:?}");
    // ...and its port is closed after.
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err());
    let _ = std::fs::remove_file(&ior_file);
}

#[test]
fn server_stops_cleanly_on_sigterm() {
    stops_cleanly_on("TERM");
}

#[test]
fn server_stops_cleanly_on_sigint() {
    stops_cleanly_on("INT");
}
