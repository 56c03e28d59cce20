//! Test support shared by the workspace's test suites: where the omniORB
//! captures are, the omniORB peer programs (built from
//! `tests/interop/cpp`), and child processes that end with the test.
//!
//! Not for production code: it panics with a message saying what to
//! install whenever the test environment is incomplete.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The workspace root.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The omniORB 4.2 captures (`../shared/vectors/omniorb-4.2`, or
/// `$ARMILLARY_VECTORS`).
pub fn vectors_dir() -> PathBuf {
    std::env::var("ARMILLARY_VECTORS")
        .map(PathBuf::from)
        .unwrap_or_else(|_| workspace().join("../shared/vectors/omniorb-4.2"))
}

/// Whether the omniORB tests should run: false (with a message) when
/// `ARMILLARY_SKIP_OMNIORB=1`; panics, saying what to install, when
/// omniORB is missing.
pub fn omniorb_available() -> bool {
    if std::env::var("ARMILLARY_SKIP_OMNIORB").as_deref() == Ok("1") {
        eprintln!("skipped: ARMILLARY_SKIP_OMNIORB=1");
        return false;
    }
    assert!(
        Path::new("/usr/include/omniORB4/CORBA.h").exists()
            && Command::new("catior").arg("-h").output().is_ok(),
        "omniORB is missing: run ./scripts/test.sh (it installs it) or set ARMILLARY_SKIP_OMNIORB=1"
    );
    true
}

/// Where the omniORB peers are built: next to Cargo's own output.
pub fn peers_dir() -> PathBuf {
    std::env::var("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| workspace().join("target"))
        .join("interop-cpp")
}

/// Builds the omniORB peers (`interop_server`, `interop_client`,
/// `bench_client`, `diff_peer`) if needed and returns their directory.
/// Once per test process: tests run in parallel, and a second `make` could
/// rewrite a peer another test is starting.
pub fn build_peers() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT.get_or_init(make_peers).clone()
}

fn make_peers() -> PathBuf {
    let out = peers_dir();
    let status = Command::new("make")
        .arg("-s")
        .arg(format!("OUT={}", out.display()))
        .current_dir(workspace().join("tests/interop/cpp"))
        .status()
        .expect("make is needed to build the omniORB peers");
    assert!(status.success(), "building the omniORB peers failed");
    out
}

/// A child process, killed when dropped.
pub struct Peer(pub Child);

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Waits (up to 20 s) for a peer to write `path`, and returns its trimmed
/// content.
pub fn wait_for_file(path: &Path) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Ok(text) = std::fs::read_to_string(path) {
            if !text.trim().is_empty() {
                return text.trim().to_owned();
            }
        }
        assert!(
            Instant::now() < deadline,
            "{} was never written",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Starts omniORB's `interop_server` on a loopback port with `args` and
/// returns it with its IOR.
pub fn start_interop_server(peers: &Path, tag: &str, args: &[&str]) -> (Peer, String) {
    start_server(peers, "interop_server", &[], tag, args)
}

/// Starts the omniORB program `program` of `peers` with `leading`
/// arguments, `--ior-file` and a loopback endpoint, then `args`; returns it
/// with the IOR it writes.
fn start_server(
    peers: &Path,
    program: &str,
    leading: &[&str],
    tag: &str,
    args: &[&str],
) -> (Peer, String) {
    let ior_file = peers.join(format!("{program}-{tag}-{}.ior", std::process::id()));
    let _ = std::fs::remove_file(&ior_file);
    let peer = Peer(
        Command::new(peers.join(program))
            .args(leading)
            .arg("--ior-file")
            .arg(&ior_file)
            .args(["-ORBendPoint", "giop:tcp:127.0.0.1:0"])
            .args(args)
            .stdout(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{program} does not start: {e}")),
    );
    let ior = wait_for_file(&ior_file);
    let _ = std::fs::remove_file(&ior_file);
    (peer, ior)
}

/// Starts omniORB's `diff_peer` (the differential tests' peer, built from
/// `tests/interop/cpp/diff_peer.cc`) as a server of `Differential::Echo`
/// on a loopback port with `args`, and returns it with its IOR.
pub fn start_diff_server(peers: &Path, tag: &str, args: &[&str]) -> (Peer, String) {
    start_server(peers, "diff_peer", &["serve"], tag, args)
}

/// What an omniORB client run of the differential tests printed.
#[derive(Debug)]
pub struct ClientRun {
    /// Whether it exited 0 (every check passed).
    pub success: bool,
    /// Its standard output: one line per check, then `N passed, M failed`.
    pub stdout: String,
    /// Its standard error.
    pub stderr: String,
}

impl ClientRun {
    /// Whether the check named `what` printed `ok`.
    pub fn passed(&self, what: &str) -> bool {
        self.stdout
            .lines()
            .any(|l| l.strip_prefix("ok").map(str::trim) == Some(what))
    }
}

/// Runs `diff_peer` as a client: `diff_peer MODE IOR-FILE ARG ARGS...`
/// (modes `anys` and `sequences`; see `diff_peer.cc`). The omniORB
/// client ends by itself: every call it makes is bounded by a 30 s
/// `-ORBclientCallTimeOutPeriod`.
pub fn run_diff_client(
    peers: &Path,
    mode: &str,
    ior_file: &Path,
    arg: &str,
    args: &[&str],
) -> ClientRun {
    let out = Command::new(peers.join("diff_peer"))
        .arg(mode)
        .arg(ior_file)
        .arg(arg)
        .args(["-ORBclientCallTimeOutPeriod", "30000"])
        .args(args)
        .output()
        .expect("diff_peer runs");
    ClientRun {
        success: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}
