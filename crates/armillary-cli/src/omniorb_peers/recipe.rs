//! How the peers are built: what the build needs installed, and the build
//! itself — the sources written out as `src/cpp/` and `src/idl/`, then
//! `make` (the Makefile of `tests/interop/cpp`, the one the test suites
//! build the same programs with) run for the benchmarks' programs, with
//! omniORB's `omniidl`, `g++` and the flags `pkg-config` gives for
//! `omniDynamic4`.

use std::fmt;
use std::path::Path;
use std::process::{Command, Stdio};

use super::sources::SourceFile;
use super::PeersError;

/// What the build needs installed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Prerequisite {
    /// omniORB's headers and libraries (`omniDynamic4.pc`).
    OmniorbDev,
    /// omniORB's IDL compiler.
    Omniidl,
    /// The C++ compiler.
    Gxx,
    /// pkg-config, which gives omniORB's compiler and linker flags.
    PkgConfig,
    /// GNU make, which runs the Makefile.
    Make,
}

impl Prerequisite {
    /// The Debian package that installs it.
    pub(crate) fn package(self) -> &'static str {
        match self {
            Prerequisite::Make => "make",
            Prerequisite::Omniidl => "omniidl",
            Prerequisite::Gxx => "g++",
            Prerequisite::PkgConfig => "pkg-config",
            Prerequisite::OmniorbDev => "libomniorb4-dev",
        }
    }
}

impl fmt::Display for Prerequisite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Prerequisite::Make => "make",
            Prerequisite::Omniidl => "omniidl (omniORB's IDL compiler)",
            Prerequisite::Gxx => "g++",
            Prerequisite::PkgConfig => "pkg-config",
            Prerequisite::OmniorbDev => "omniORB's development files (headers, libraries)",
        })
    }
}

/// The pkg-config package of omniORB's flags, as the Makefile asks for it.
const OMNIORB_PACKAGE: &str = "omniDynamic4";

/// What of the build's needs is not installed, in a fixed order.
fn missing() -> Vec<Prerequisite> {
    let runs = |program: &str, arg: &str| {
        Command::new(program)
            .arg(arg)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok()
    };
    let mut missing = Vec::new();
    let omniorb_dev = if runs("pkg-config", "--version") {
        Command::new("pkg-config")
            .args(["--exists", OMNIORB_PACKAGE])
            .status()
            .is_ok_and(|s| s.success())
    } else {
        missing.push(Prerequisite::PkgConfig);
        Path::new("/usr/include/omniORB4/CORBA.h").exists()
    };
    if !omniorb_dev {
        missing.push(Prerequisite::OmniorbDev);
    }
    if !runs("omniidl", "-V") {
        missing.push(Prerequisite::Omniidl);
    }
    if !runs("g++", "--version") {
        missing.push(Prerequisite::Gxx);
    }
    if !runs("make", "--version") {
        missing.push(Prerequisite::Make);
    }
    missing.sort_by_key(|p| *p as u8);
    missing
}

/// `Ok` when everything the build needs is installed, else what is
/// missing.
pub(crate) fn check_prerequisites() -> Result<(), PeersError> {
    let missing = missing();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(PeersError::Missing(missing))
    }
}

/// omniORB's version as pkg-config knows it, or `None` when it cannot
/// say.
pub(crate) fn omniorb_version() -> Option<String> {
    let out = Command::new("pkg-config")
        .args(["--modversion", OMNIORB_PACKAGE])
        .stderr(Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// Builds the programs `targets` (the Makefile's names) from `sources`
/// into `dir` (empty): the programs end up in `dir`, the sources in
/// `dir/src`, omniidl's output beside the programs. Only those programs
/// are built: the Makefile's other peers (the SSL ones) need more than
/// the benchmarks do. Run [`check_prerequisites`] first: this says only
/// that the build failed.
pub(crate) fn build(
    sources: &[SourceFile],
    targets: &[&str],
    dir: &Path,
) -> Result<(), PeersError> {
    let missing = missing();
    if !missing.is_empty() {
        return Err(PeersError::Missing(missing));
    }
    let src = dir.join("src");
    for file in sources {
        let path = src.join(file.path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| PeersError::Write {
                path: parent.to_owned(),
                source: e,
            })?;
        }
        std::fs::write(&path, file.text).map_err(|e| PeersError::Write { path, source: e })?;
    }
    let mut make = Command::new("make");
    make.arg("-s")
        .arg(format!("OUT={}", dir.display()))
        .arg("CXX=g++")
        .args(targets.iter().map(|t| dir.join(t)))
        .current_dir(src.join("cpp"))
        // The build is the same whoever runs it: none of the caller's make
        // or compiler settings (a parent make's jobserver included).
        .env_remove("MAKEFLAGS")
        .env_remove("MFLAGS")
        .env_remove("MAKELEVEL")
        .env_remove("CXXFLAGS")
        .env_remove("CPPFLAGS")
        .env_remove("LDFLAGS")
        .env_remove("LDLIBS")
        .stdin(Stdio::null());
    let out_dir = dir.display();
    let programs: Vec<String> = targets.iter().map(|t| format!("{out_dir}/{t}")).collect();
    let command = format!("make -s OUT={out_dir} CXX=g++ {}", programs.join(" "));
    let out = make.output().map_err(|e| PeersError::Run {
        command: command.clone(),
        source: e,
    })?;
    if !out.status.success() {
        let text = String::from_utf8_lossy(&out.stderr);
        // The end of what it said: the error, without pages of warnings.
        let lines: Vec<&str> = text.lines().collect();
        let tail = lines[lines.len().saturating_sub(20)..].join("\n");
        return Err(PeersError::BuildFailed {
            command,
            status: out.status,
            output: tail,
        });
    }
    Ok(())
}
