//! omniORBpy 4.3, the second omniORB of the interoperability tests.
//!
//! omniORB 4.3's Python ORB marshals some things differently from the C++
//! library of Debian's omniORB 4.2 (GIOP 1.1 fragments: every value of a
//! sequence aligned on its own; see `armillary_giop::cdr::fragments`), so
//! the differential tests run against both. It comes from PyPI
//! (`tests/interop/python/requirements.txt`: the `jeteve-omniorb` wheel,
//! omniORB 4.3.3 and omniORBpy with its `omniidl`), installed into a
//! virtual environment beside Cargo's output ([`venv_dir`]) by
//! `scripts/test.sh`, or here on first use when it is missing;
//! `tests/interop/idl/differential.idl` is compiled with its
//! `omniidl -bpython`, and the peer is `tests/interop/python/diff_peer.py`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::{peers_dir, run_client, serve_with_ior_file, workspace, ClientRun, Peer};

/// The PyPI requirements installed (omniORB and omniORBpy 4.3.3).
pub fn requirements_file() -> PathBuf {
    workspace().join("tests/interop/python/requirements.txt")
}

/// Where the virtual environment lives: beside the omniORB C++ peers (the
/// place `scripts/test.sh` makes it).
pub fn venv_dir() -> PathBuf {
    peers_dir().with_file_name("omniorbpy")
}

/// Whether the omniORBpy tests should run: false (with a message) when
/// `ARMILLARY_SKIP_OMNIORBPY=1`.
pub fn available() -> bool {
    if std::env::var("ARMILLARY_SKIP_OMNIORBPY").as_deref() == Ok("1") {
        eprintln!("skipped: ARMILLARY_SKIP_OMNIORBPY=1");
        return false;
    }
    true
}

/// omniORBpy, installed and with the differential IDL compiled.
#[derive(Debug)]
pub struct OmniOrbPy {
    python: PathBuf,
    stubs: PathBuf,
}

/// Installs omniORBpy and compiles the test IDL, once per machine (later
/// calls find them; the stubs are made again when the IDL changes).
/// Panics, saying what failed, when it cannot: `python3` with its `venv`
/// module and access to PyPI are needed (`./scripts/test.sh` makes the
/// environment first, so that a failure shows at once).
pub fn omniorbpy() -> &'static OmniOrbPy {
    static READY: OnceLock<OmniOrbPy> = OnceLock::new();
    READY.get_or_init(|| {
        let venv = venv_dir();
        let lock = venv.with_file_name("omniorbpy.lock");
        let requirements = std::fs::read_to_string(requirements_file())
            .expect("tests/interop/python/requirements.txt is readable");
        let marker = venv.join("installed");
        let installed = || std::fs::read_to_string(&marker).is_ok_and(|m| m == requirements);
        once(&lock, installed, || {
            // Half made, or for other requirements.
            let _ = std::fs::remove_dir_all(&venv);
            run(
                Command::new("python3").args(["-m", "venv"]).arg(&venv),
                "python3 -m venv (install python3 and its venv module)",
            );
            run(
                Command::new(venv.join("bin/python"))
                    .args([
                        "-m",
                        "pip",
                        "install",
                        "--quiet",
                        "--disable-pip-version-check",
                    ])
                    .arg("-r")
                    .arg(requirements_file()),
                "pip install -r tests/interop/python/requirements.txt (from PyPI)",
            );
            std::fs::write(&marker, &requirements).expect("the environment can be marked");
        });
        let idl = workspace().join("tests/interop/idl/differential.idl");
        let text = std::fs::read(&idl).expect("differential.idl is readable");
        let stubs = venv.join(format!("stubs-{:016x}", fnv1a(&text)));
        let compiled = stubs.join("compiled");
        once(
            &lock,
            || compiled.exists(),
            || {
                let _ = std::fs::remove_dir_all(&stubs);
                std::fs::create_dir_all(&stubs).expect("the stubs directory can be made");
                run(
                    Command::new(venv.join("bin/omniidl"))
                        .arg("-bpython")
                        .arg("-C")
                        .arg(&stubs)
                        .arg(&idl),
                    "omniidl -bpython differential.idl",
                );
                std::fs::write(&compiled, "").expect("the stubs can be marked");
            },
        );
        OmniOrbPy {
            python: venv.join("bin/python"),
            stubs,
        }
    })
}

/// Runs `make` unless `done`, holding `lock` (a directory, made
/// atomically) meanwhile: test processes may run at once, and a virtual
/// environment cannot be made elsewhere and moved (its scripts name the
/// directory they were installed in). A lock whose process has gone is
/// taken over.
fn once(lock: &Path, done: impl Fn() -> bool, make: impl FnOnce()) {
    let deadline = Instant::now() + Duration::from_secs(900);
    while !done() {
        match std::fs::create_dir(lock) {
            Ok(()) => {
                let _ = std::fs::write(lock.join("pid"), std::process::id().to_string());
                if !done() {
                    make();
                }
                let _ = std::fs::remove_dir_all(lock);
                return;
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let holder = std::fs::read_to_string(lock.join("pid")).ok();
                if holder.is_some_and(|pid| !Path::new("/proc").join(pid.trim()).exists()) {
                    let _ = std::fs::remove_dir_all(lock);
                    continue;
                }
                assert!(
                    Instant::now() < deadline,
                    "gave up waiting for {} to be released",
                    lock.display()
                );
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(e) => panic!("cannot make {}: {e}", lock.display()),
        }
    }
}

/// FNV-1a, to name the stubs after the IDL they come from.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Runs `command`, panicking with `what` and its output if it fails.
fn run(command: &mut Command, what: &str) {
    let out = command
        .output()
        .unwrap_or_else(|e| panic!("{what}: does not run: {e}"));
    assert!(
        out.status.success(),
        "{what} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

impl OmniOrbPy {
    /// The Python peer `tests/interop/python/diff_peer.py`, with the
    /// compiled IDL on its path, ready for its arguments.
    fn diff_peer(&self) -> Command {
        let mut command = Command::new(&self.python);
        command
            .arg("-u")
            .arg(workspace().join("tests/interop/python/diff_peer.py"))
            .env("PYTHONPATH", &self.stubs);
        command
    }

    /// Starts the Python peer as a server of `Differential::Echo` on a
    /// loopback port with `args` (omniORB options), and returns it with its
    /// IOR.
    pub fn start_diff_server(&self, tag: &str, args: &[&str]) -> (Peer, String) {
        let mut command = self.diff_peer();
        command.arg("serve");
        serve_with_ior_file(command, &self.stubs, &format!("omniorbpy-{tag}"), args)
    }

    /// Runs the Python peer as a client: `diff_peer.py MODE IOR-FILE
    /// ARGS...` (modes `sequences N` and `issue25`, then omniORB's
    /// options), every call bounded by a 30 s call timeout.
    pub fn run_diff_client(&self, mode: &str, ior_file: &Path, args: &[&str]) -> ClientRun {
        let mut command = self.diff_peer();
        command.arg(mode).arg(ior_file);
        run_client(command, args)
    }

    /// A directory for the files a test hands the peer (IORs).
    pub fn scratch_dir(&self) -> &Path {
        &self.stubs
    }
}
