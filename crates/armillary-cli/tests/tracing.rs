//! `-ORBTraceLevel` and `RUST_LOG` on the `armillary` command: one call
//! followed across two processes (`naming list` calling `naming serve`)
//! by the lines each prints on standard error, and nothing printed at
//! level 0.

use std::path::PathBuf;
use std::process::{Command, Output};

use armillary_testkit::{wait_until, LinePeer};

const ARMILLARY: &str = env!("CARGO_BIN_EXE_armillary");

/// A running `armillary naming serve`, its standard error in a file.
struct Served {
    _peer: LinePeer,
    corbaloc: String,
    stderr: PathBuf,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.stderr);
    }
}

/// Starts `armillary ARGS naming serve --memory` on a port of its own.
fn serve(test: &str, args: &[&str]) -> Served {
    let stderr = std::env::temp_dir().join(format!(
        "armillary-tracing-{test}-{}.stderr",
        std::process::id()
    ));
    let file = std::fs::File::create(&stderr).unwrap();
    let mut command = Command::new(ARMILLARY);
    command
        .args(args)
        .args([
            "naming",
            "serve",
            "--memory",
            "--endpoint",
            "iiop://127.0.0.1:0",
        ])
        .env_remove("RUST_LOG")
        .stderr(file);
    let peer = LinePeer::spawn(command);
    let corbaloc = peer.next_line("the corbaloc URL of the naming service");
    Served {
        _peer: peer,
        corbaloc,
        stderr,
    }
}

/// Runs `armillary naming list --ns URL` with `args` and `env`.
fn list(url: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
    let out = Command::new(ARMILLARY)
        .args(["naming", "list", "--ns", url])
        .args(args)
        .env_remove("RUST_LOG")
        .envs(env.iter().copied())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    out
}

/// The value of `field=` in a line of `tracing-subscriber`'s output.
fn field<'a>(line: &'a str, name: &str) -> Option<&'a str> {
    let start = line.find(&format!(" {name}="))? + name.len() + 2;
    let rest = &line[start..];
    let end = rest.find([' ', '}']).unwrap_or(rest.len());
    Some(rest[..end].trim_matches('"'))
}

#[test]
fn level_4_shows_each_request_on_both_sides_with_its_peer_and_request_id() {
    let served = serve("level4", &["-ORBTraceLevel", "4"]);
    let out = list(&served.corbaloc, &["-ORBTraceLevel", "4"], &[]);
    let client = String::from_utf8_lossy(&out.stderr);
    let call = client
        .lines()
        .find(|l| l.contains("armillary.client.request{") && l.contains(r#"operation="list""#))
        .unwrap_or_else(|| panic!("no request line in:\n{client}"));
    assert!(call.contains(r#"outcome="normal""#), "{call}");
    let request_id = field(call, "request_id").expect("a request id");
    let local = field(call, "local").expect("the client's address");
    assert!(client.contains("connection opened"), "{client}");
    // The server's line for the same call: the client's address as its
    // peer, the same request id.
    let mut server = String::new();
    wait_until("the server's line for the call", || {
        server = std::fs::read_to_string(&served.stderr).unwrap();
        server.lines().any(|l| {
            l.contains("armillary.server.request{")
                && field(l, "peer") == Some(local)
                && field(l, "request_id") == Some(request_id)
        })
    });
    let line = server
        .lines()
        .find(|l| l.contains("armillary.server.request{") && field(l, "peer") == Some(local))
        .unwrap();
    assert!(line.contains(r#"operation="list""#), "{line}");
    assert!(line.contains(r#"outcome="normal""#), "{line}");
    assert!(server.contains("connection accepted"), "{server}");
}

#[test]
fn level_0_prints_nothing_and_rust_log_wins() {
    let served = serve("level0", &[]);
    let quiet = list(&served.corbaloc, &[], &[]);
    assert!(quiet.stderr.is_empty(), "{quiet:?}");
    let zero = list(&served.corbaloc, &["-ORBTraceLevel=0"], &[]);
    assert!(zero.stderr.is_empty(), "{zero:?}");
    // RUST_LOG says connections only: no request lines, whatever the level.
    let filtered = list(
        &served.corbaloc,
        &["-ORBTraceLevel", "4"],
        &[("RUST_LOG", "armillary=info")],
    );
    let text = String::from_utf8_lossy(&filtered.stderr);
    assert!(text.contains("connection opened"), "{text}");
    assert!(!text.contains("armillary.client.request"), "{text}");
    // The server, at level 0, printed nothing either.
    let server = std::fs::read_to_string(&served.stderr).unwrap();
    assert!(
        !server.contains("armillary"),
        "the server printed:\n{server}"
    );
}

#[test]
fn a_bad_trace_level_is_refused() {
    let out = Command::new(ARMILLARY)
        .args(["-ORBTraceLevel", "9", "demo"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("-ORBTraceLevel"), "{err}");
}
