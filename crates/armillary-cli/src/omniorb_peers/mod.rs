//! omniORB's peer programs, the baselines `armillary bench` measures
//! Armillary against: `interop_server` (omniORB's server of
//! `Interop::Everything`), `bench_client` (its synchronous latency client),
//! `ami_bench_client` (its AMI throughput client) and `sync_bench_client`
//! (its client of `bench sync`'s throughput, oneway and octet-sequence
//! figures).
//!
//! Their sources are carried in the binary (`sources`: the programs of
//! `tests/interop/cpp`, the IDL they need from `tests/interop/idl` and the
//! Makefile), so an installed `armillary` has them wherever it runs from.
//! The first use builds them (`recipe`: `make` with omniORB's `omniidl`
//! and `g++`) into a cache directory named by a hash of the sources, the
//! recipe and omniORB's version (`cache`), and later uses, of this
//! `armillary` or another built from the same sources, reuse that build:
//! `$ARMILLARY_CACHE_DIR/peers/<hash>/`, else
//! `$XDG_CACHE_HOME/armillary/peers/<hash>/`, else
//! `~/.cache/armillary/peers/<hash>/`. A change to any source or to
//! omniORB's version makes another hash, so another build.
//!
//! When they cannot be had (omniORB, its IDL compiler or a C++ compiler
//! not installed, or the build failing), [`find`] says so on standard
//! error, once per process, naming what is missing and how to install it,
//! and the benchmarks report their omniORB figures as `null`.

mod cache;
mod recipe;
mod sources;

use std::ffi::OsStr;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use crate::bench_process::{command_on_cpus, wait_for_file_from, Peer};
use cache::{CacheError, Outcome};
use recipe::Prerequisite;

/// One of omniORB's peer programs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Program {
    /// omniORB's server of `Interop::Everything` (`server.cc`).
    InteropServer,
    /// omniORB's synchronous `echo_longlong` client, printing each call's
    /// time (`bench_client.cc`).
    BenchClient,
    /// omniORB's AMI throughput client (`ami_bench_client.cc`).
    AmiBenchClient,
    /// omniORB's client of `bench sync`: threads sharing a reference,
    /// oneways, octet sequences (`sync_bench_client.cc`).
    SyncBenchClient,
}

impl Program {
    /// Every program, in build order.
    const ALL: [Program; 4] = [
        Program::InteropServer,
        Program::BenchClient,
        Program::AmiBenchClient,
        Program::SyncBenchClient,
    ];

    /// Its file name (the Makefile's name for it).
    fn file_name(self) -> &'static str {
        match self {
            Program::InteropServer => "interop_server",
            Program::BenchClient => "bench_client",
            Program::AmiBenchClient => "ami_bench_client",
            Program::SyncBenchClient => "sync_bench_client",
        }
    }
}

/// Why the peers cannot be had.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum PeersError {
    /// What the build needs is not installed (never empty).
    #[error(
        "{} not installed; install {} with `apt-get install -y {}`",
        list(.0.iter().map(ToString::to_string)),
        if .0.len() == 1 { "it" } else { "them" },
        .0.iter().map(|p| p.package()).collect::<Vec<_>>().join(" ")
    )]
    Missing(Vec<Prerequisite>),
    /// None of `ARMILLARY_CACHE_DIR`, `XDG_CACHE_HOME` and `HOME` is set,
    /// so there is nowhere to build them.
    #[error(
        "no cache directory to build them in: set ARMILLARY_CACHE_DIR (or XDG_CACHE_HOME or HOME)"
    )]
    NoCacheDir,
    /// The cache could not be written.
    #[error(transparent)]
    Cache(#[from] CacheError),
    /// A source could not be written out for the build.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The file or directory.
        path: PathBuf,
        /// The operating system's error.
        source: io::Error,
    },
    /// The build could not be started.
    #[error("cannot run `{command}`: {source}")]
    Run {
        /// The build command.
        command: String,
        /// Why it did not start.
        source: io::Error,
    },
    /// The build ran and failed.
    #[error("building them failed: `{command}` exited with {status}:\n{output}")]
    BuildFailed {
        /// The build command.
        command: String,
        /// How it exited.
        status: ExitStatus,
        /// The end of its error output.
        output: String,
    },
}

/// `a is`, `a and b are`, `a, b and c are`.
fn list(items: impl Iterator<Item = String>) -> String {
    let items: Vec<String> = items.collect();
    match items.split_last() {
        Some((last, rest)) if !rest.is_empty() => {
            format!("{} and {last} are", rest.join(", "))
        }
        Some((last, _)) => format!("{last} is"),
        None => String::new(),
    }
}

/// omniORB's peer programs, built, in their cache directory.
#[derive(Debug)]
pub(crate) struct OmniorbPeers {
    dir: PathBuf,
}

impl OmniorbPeers {
    /// The path of `program`.
    pub(crate) fn program(&self, program: Program) -> PathBuf {
        self.dir.join(program.file_name())
    }

    /// omniORB's `interop_server` on loopback, its IOR written to
    /// `dir/omni.ior`; returns it (killed when dropped) and the IOR file
    /// once the IOR is there.
    pub(crate) fn start_server(&self, dir: &Path) -> Result<(Peer, PathBuf), String> {
        self.start_server_on(dir, "omni", None)
    }

    /// As [`Self::start_server`], its IOR written to `dir/NAME.ior`, on
    /// the CPUs `cpus` (a `taskset` list) when given, else on the
    /// caller's.
    pub(crate) fn start_server_on(
        &self,
        dir: &Path,
        name: &str,
        cpus: Option<&str>,
    ) -> Result<(Peer, PathBuf), String> {
        let file = dir.join(format!("{name}.ior"));
        let _ = std::fs::remove_file(&file);
        let mut server = Peer(
            command_on_cpus(&self.program(Program::InteropServer), cpus)
                .arg("--ior-file")
                .arg(&file)
                .args(["-ORBendPoint", "giop:tcp:127.0.0.1:0"])
                .stdout(Stdio::null())
                .spawn()
                .map_err(|e| format!("cannot start omniORB's interop_server: {e}"))?,
        );
        wait_for_file_from(&mut server, &file)
            .map_err(|e| format!("omniORB's interop_server did not start: {e}"))?;
        Ok((server, file))
    }

    /// Runs `program` with `args`, on the CPUs `cpus` when given, and
    /// returns what it wrote on standard output; an error, with the end
    /// of its standard error, when it fails.
    pub(crate) fn run(
        &self,
        program: Program,
        args: &[&OsStr],
        cpus: Option<&str>,
    ) -> Result<String, String> {
        let out = command_on_cpus(&self.program(program), cpus)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run omniORB's {}: {e}", program.file_name()))?;
        if !out.status.success() {
            let err = String::from_utf8_lossy(&out.stderr);
            return Err(format!(
                "omniORB's {} failed ({}): {}",
                program.file_name(),
                out.status,
                err.trim()
            ));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// The times of `calls` synchronous `echo_longlong` calls of omniORB's
    /// `bench_client` to the object in `ior_file`, each timed on its own.
    pub(crate) fn echo_latencies(
        &self,
        ior_file: &Path,
        calls: usize,
    ) -> Result<Vec<Duration>, String> {
        let calls = calls.to_string();
        let out = self.run(
            Program::BenchClient,
            &[ior_file.as_os_str(), OsStr::new(&calls)],
            None,
        )?;
        Ok(out
            .lines()
            .filter_map(|l| l.trim().parse::<u64>().ok())
            .map(Duration::from_nanos)
            .collect())
    }
}

/// omniORB's peer programs, built on first use; `None`, said once on
/// standard error with the reason, when they cannot be had. Call it
/// before drawing a progress bar: the first call may build them (a few
/// seconds to a minute, said on standard error too).
pub(crate) fn find() -> Option<&'static OmniorbPeers> {
    static FOUND: OnceLock<Option<OmniorbPeers>> = OnceLock::new();
    FOUND
        .get_or_init(|| match locate() {
            Ok(peers) => Some(peers),
            Err(e) => {
                eprintln!("no omniORB baseline: {e}");
                None
            }
        })
        .as_ref()
}

/// The peers' cache directory, built there if it is not yet.
fn locate() -> Result<OmniorbPeers, PeersError> {
    let root = cache::root(
        std::env::var_os("ARMILLARY_CACHE_DIR"),
        std::env::var_os("XDG_CACHE_HOME"),
        std::env::var_os("HOME"),
    )
    .ok_or(PeersError::NoCacheDir)?;
    let targets = Program::ALL.map(Program::file_name);
    // Unknown when pkg-config cannot say: then no build is found, and the
    // build says what is missing.
    let version = recipe::omniorb_version().unwrap_or_default();
    let key = sources::key(&sources::SOURCES, &targets, &version);
    let is_complete = |dir: &Path| targets.iter().all(|t| dir.join(t).is_file());
    let (dir, outcome) = cache::get_or_build(&root, &key, is_complete, |work| {
        recipe::check_prerequisites()?;
        eprintln!(
            "building omniORB's peer programs into {} (once: later runs reuse them)",
            root.join(&key).display()
        );
        recipe::build(&sources::SOURCES, &targets, work)
    })?;
    if outcome == Outcome::Built {
        eprintln!("built omniORB's peer programs");
    }
    Ok(OmniorbPeers { dir })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_missing_is_named_with_its_install_line() {
        let check = |missing: Vec<Prerequisite>, expect: &str| {
            assert_eq!(PeersError::Missing(missing).to_string(), expect);
        };
        check(
            vec![Prerequisite::Omniidl],
            "omniidl (omniORB's IDL compiler) is not installed; \
             install it with `apt-get install -y omniidl`",
        );
        check(
            vec![Prerequisite::OmniorbDev, Prerequisite::Omniidl],
            "omniORB's development files (headers, libraries) and omniidl (omniORB's IDL \
             compiler) are not installed; install them with \
             `apt-get install -y libomniorb4-dev omniidl`",
        );
        check(
            vec![
                Prerequisite::Gxx,
                Prerequisite::PkgConfig,
                Prerequisite::Make,
            ],
            "g++, pkg-config and make are not installed; \
             install them with `apt-get install -y g++ pkg-config make`",
        );
    }
}
