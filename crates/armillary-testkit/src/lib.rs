//! Test support shared by the workspace's test suites: where the omniORB
//! captures are, the omniORB peer programs (built from
//! `tests/interop/cpp`), omniORBpy 4.3 in a virtual environment of its own
//! and its peer (`omniorbpy`, from `tests/interop/python`), child processes that end with the test (and
//! children whose output is read line by line, [`LinePeer`]), GIOP
//! messages read off a raw socket (`giop`), a raw GIOP server that records
//! requests and answers when told (`raw`), test certificates for TLS
//! (`tls`), omniORB's naming service on a port of its own
//! ([`OmniNames`]), and JacORB with its Java peers (`jacorb`, from
//! `tests/interop/java`).
//!
//! Not for production code: it panics with a message saying what to
//! install whenever the test environment is incomplete.

#![warn(missing_docs, missing_debug_implementations)]

pub mod giop;
pub mod jacorb;
pub mod omniorbpy;
pub mod raw;
pub mod tls;

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The workspace root.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The omniORB 4.2 captures the repository ships
/// (`tests/vectors/omniorb-4.2`, see `tests/vectors/README.md`), or
/// `$ARMILLARY_VECTORS` when it is set (to run the tests on a fresh
/// capture from `scripts/capture-vectors.sh`).
pub fn vectors_dir() -> PathBuf {
    std::env::var_os("ARMILLARY_VECTORS")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace().join("tests/vectors/omniorb-4.2"))
}

/// The GIOP 1.1 fragment captures (`tests/vectors/giop-1.1-fragments`:
/// how omniORB's C++ library and omniORBpy each fragment blocks of 8-byte
/// values; `scripts/capture-fragment-vectors.sh` makes them).
pub fn fragment_vectors_dir() -> PathBuf {
    workspace().join("tests/vectors/giop-1.1-fragments")
}

/// Every captured IOR file (`<session>/*.ior` under [`vectors_dir`]), in
/// path order, with its trimmed text.
pub fn captured_iors() -> Vec<(PathBuf, String)> {
    let root = vectors_dir();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap_or_else(|e| panic!("cannot read the vectors at {}: {e}", root.display()))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .flat_map(|dir| {
            std::fs::read_dir(dir)
                .into_iter()
                .flatten()
                .filter_map(Result::ok)
        })
        .map(|e| e.path())
        .filter(|p| p.extension().and_then(|e| e.to_str()) == Some("ior"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p)
                .unwrap_or_else(|e| panic!("cannot read {}: {e}", p.display()));
            (p, text.trim().to_owned())
        })
        .collect()
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
/// `amh_client`, `bench_client`, `sync_bench_client`, `diff_peer`, `pi_peer`, the SSL peers, the AMI peers
/// `ami_bench_client` and `interop_ami_handler`, the CosNaming client `naming_client`, the load-balancing
/// client `lb_client`) if needed and returns their directory. Runs `make` once
/// per test process: the tests of one file run in parallel, and two
/// `make`s writing the same programs would let a test start one that is
/// half written.
pub fn build_peers() -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let out = peers_dir();
            let status = Command::new("make")
                .arg("-s")
                .arg(format!("OUT={}", out.display()))
                .current_dir(workspace().join("tests/interop/cpp"))
                .status()
                .expect("make is needed to build the omniORB peers");
            assert!(status.success(), "building the omniORB peers failed");
            out
        })
        .clone()
}

/// A child process, killed when dropped.
#[derive(Debug)]
pub struct Peer(pub Child);

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A child process whose standard output a thread reads line by line, so
/// that a test can wait (bounded) for each line it prints; its standard
/// input is a pipe the test holds. Killed when dropped.
#[derive(Debug)]
pub struct LinePeer {
    peer: Peer,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
}

impl LinePeer {
    /// Starts `command` with its standard input and output piped (its
    /// standard error is the test's).
    pub fn spawn(mut command: Command) -> Self {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{command:?} does not start: {e}"));
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("stdout is piped");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            let mut stdout = std::io::BufReader::new(stdout);
            let mut line = Vec::new();
            // Lossy: a line that is not UTF-8 is still a line to compare.
            while matches!(stdout.read_until(b'\n', &mut line), Ok(1..)) {
                if tx
                    .send(String::from_utf8_lossy(&line).into_owned())
                    .is_err()
                {
                    return;
                }
                line.clear();
            }
        });
        LinePeer {
            peer: Peer(child),
            stdin,
            lines,
        }
    }

    /// The next line it prints, trimmed. Panics, naming `what` was
    /// expected, when it ends first or prints nothing for [`WAIT_LIMIT`].
    pub fn next_line(&self, what: &str) -> String {
        match self.lines.recv_timeout(WAIT_LIMIT) {
            Ok(line) => line.trim().to_owned(),
            Err(RecvTimeoutError::Timeout) => panic!("gave up waiting for {what}"),
            Err(RecvTimeoutError::Disconnected) => {
                panic!("the child process ended before printing {what}")
            }
        }
    }

    /// The next `n` lines it prints (see [`next_line`](Self::next_line)).
    pub fn lines(&self, n: usize, what: &str) -> Vec<String> {
        (0..n)
            .map(|i| self.next_line(&format!("{what} (line {} of {n})", i + 1)))
            .collect()
    }

    /// Writes `line` and a newline to its standard input (a command, for
    /// the peers that read one per line). Panics when its input is closed.
    pub fn send_line(&mut self, line: &str) {
        use std::io::Write;
        let stdin = self.stdin.as_mut().expect("its standard input is open");
        writeln!(stdin, "{line}")
            .and_then(|()| stdin.flush())
            .unwrap_or_else(|e| panic!("cannot write to the child process: {e}"));
    }

    /// Closes its standard input (the peers of these tests end then).
    pub fn close_stdin(&mut self) {
        drop(self.stdin.take());
    }

    /// Its process id.
    pub fn id(&self) -> u32 {
        self.peer.0.id()
    }

    /// Kills it with SIGKILL (`kill -9`, by its process id) and waits
    /// for it to be gone.
    pub fn kill(&mut self) {
        let _ = self.peer.0.kill();
        let _ = self.peer.0.wait();
    }

    /// Waits (up to [`WAIT_LIMIT`]) for it to exit, and returns its exit
    /// status.
    pub fn wait_exit(&mut self) -> ExitStatus {
        let mut status = None;
        wait_until("the child process exits", || {
            status = self.peer.0.try_wait().expect("the child can be waited for");
            status.is_some()
        });
        status.unwrap()
    }
}

/// How long [`wait_until`] waits: far beyond anything a working program
/// needs, so that it is reached only when something is broken.
pub const WAIT_LIMIT: Duration = Duration::from_secs(30);

/// Polls `done` until it is true: how a test observes work done on another
/// thread or in another process without depending on timing. Panics,
/// naming `what` it waited for, after [`WAIT_LIMIT`].
pub fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT_LIMIT;
    while !done() {
        assert!(Instant::now() < deadline, "gave up waiting until {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// What a command run to its end with [`run_to_end`] left: its exit code
/// (-1 when a signal ended it) and everything it printed.
#[derive(Debug)]
pub struct Finished {
    /// The exit code, or -1.
    pub code: i32,
    /// Its standard output.
    pub stdout: String,
    /// Its standard error.
    pub stderr: String,
}

impl Finished {
    /// Whether it exited with code 0.
    pub fn success(&self) -> bool {
        self.code == 0
    }
}

/// Runs `command` (no standard input) to its end, collecting what it
/// prints; fails the test if it takes longer than [`WAIT_LIMIT`] (it is
/// killed then).
pub fn run_to_end(command: &mut Command) -> Finished {
    use std::io::Read;
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{command:?} does not start: {e}"));
    let read = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_string(&mut text);
            }
            text
        })
    };
    let stdout = read(child.stdout.take().map(|p| Box::new(p) as _));
    let stderr = read(child.stderr.take().map(|p| Box::new(p) as _));
    let mut peer = Peer(child);
    let deadline = Instant::now() + WAIT_LIMIT;
    let status = loop {
        if let Some(status) = peer.0.try_wait().expect("the child's status") {
            break status;
        }
        assert!(Instant::now() < deadline, "{command:?} did not finish");
        std::thread::sleep(Duration::from_millis(5));
    };
    Finished {
        code: status.code().unwrap_or(-1),
        stdout: stdout.join().expect("its standard output"),
        stderr: stderr.join().expect("its standard error"),
    }
}

/// Waits (up to [`WAIT_LIMIT`]) for a peer to write a line to `path`, and
/// returns it trimmed.
pub fn wait_for_file(path: &Path) -> String {
    let mut text = String::new();
    wait_until(&format!("{} is written", path.display()), || {
        match std::fs::read_to_string(path) {
            // A whole line: a peer that writes the file in place (not
            // through a rename) may have written only part of it.
            Ok(t) if t.ends_with('\n') && !t.trim().is_empty() => {
                text = t.trim().to_owned();
                true
            }
            _ => false,
        }
    });
    text
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
    let mut command = Command::new(peers.join(program));
    command.args(leading);
    serve_with_ior_file(command, peers, &format!("{program}-{tag}"), args)
}

/// Starts `command` (a server that takes `--ior-file FILE` and omniORB's
/// options) on a loopback port with `args` after them, and returns it
/// with the IOR it writes to a file named after `name` in `dir`.
fn serve_with_ior_file(
    mut command: Command,
    dir: &Path,
    name: &str,
    args: &[&str],
) -> (Peer, String) {
    let ior_file = dir.join(format!("{name}-{}.ior", std::process::id()));
    let _ = std::fs::remove_file(&ior_file);
    let peer = Peer(
        command
            .arg("--ior-file")
            .arg(&ior_file)
            .args(["-ORBendPoint", "giop:tcp:127.0.0.1:0"])
            .args(args)
            .stdout(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{command:?} does not start: {e}")),
    );
    let ior = wait_for_file(&ior_file);
    let _ = std::fs::remove_file(&ior_file);
    (peer, ior)
}

/// Starts omniORB's `pi_peer` (built from `tests/interop/cpp/pi_peer.cc`:
/// `Interop::Everything` with omniORB's own interceptors, which answer a
/// request's service context with one of theirs) on a loopback port with
/// `args`, and returns it with its IOR.
pub fn start_pi_server(peers: &Path, tag: &str, args: &[&str]) -> (Peer, String) {
    start_server(peers, "pi_peer", &["serve"], tag, args)
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
    let mut command = Command::new(peers.join("diff_peer"));
    command.arg(mode).arg(ior_file).arg(arg);
    run_client(command, args)
}

/// Runs a differential client (`command` with its mode and arguments,
/// then `args` and a 30 s call timeout) to its end.
fn run_client(mut command: Command, args: &[&str]) -> ClientRun {
    let out = command
        .args(args)
        .args(["-ORBclientCallTimeOutPeriod", "30000"])
        .output()
        .unwrap_or_else(|e| panic!("{command:?} does not run: {e}"));
    ClientRun {
        success: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// omniORB's `omniNames` on a loopback port, with its data in a
/// directory of its own; killed (by its process id) and its directory
/// removed when dropped.
#[derive(Debug)]
pub struct OmniNames {
    peer: Peer,
    dir: PathBuf,
    port: u16,
}

impl OmniNames {
    /// Starts omniNames on a free loopback port and polls `ready(port)`
    /// (the test asks the service something) until it is true. The port
    /// is found free first, but something else may take it before
    /// omniNames binds it; omniNames then exits, and another port is
    /// tried.
    pub fn start(mut ready: impl FnMut(u16) -> bool) -> OmniNames {
        for _ in 0..5 {
            let port = std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .expect("a loopback port")
                .port();
            let dir = std::env::temp_dir()
                .join(format!("armillary-omninames-{}-{port}", std::process::id()));
            std::fs::create_dir_all(&dir).expect("a temporary directory");
            let peer = Peer(
                Command::new("omniNames")
                    .args(["-start", &port.to_string(), "-always", "-datadir"])
                    .arg(&dir)
                    .args(["-ORBendPoint", &format!("giop:tcp:127.0.0.1:{port}")])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .expect("omniNames is installed (package omniorb-nameserver)"),
            );
            let mut names = OmniNames { peer, dir, port };
            let deadline = Instant::now() + WAIT_LIMIT;
            loop {
                if ready(port) {
                    return names;
                }
                if names.peer.0.try_wait().ok().flatten().is_some() {
                    break;
                }
                assert!(Instant::now() < deadline, "omniNames did not start");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        panic!("omniNames could not listen on any of five free ports");
    }

    /// Its port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `corbaloc:iiop:127.0.0.1:PORT/NameService`.
    pub fn corbaloc(&self) -> String {
        format!("corbaloc:iiop:127.0.0.1:{}/NameService", self.port)
    }
}

impl Drop for OmniNames {
    fn drop(&mut self) {
        let _ = self.peer.0.kill();
        let _ = self.peer.0.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
