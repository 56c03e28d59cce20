//! omniORB's peer programs that `armillary bench` measures against
//! (`interop_server`, `bench_client`, `ami_bench_client`, built from
//! `tests/interop/cpp`), and starting omniORB's server.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::bench_process::{wait_for_file, Peer};

fn workspace_root() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    exe.ancestors()
        .find(|p| p.join("tests/interop/cpp/Makefile").exists())
        .map(Path::to_path_buf)
}

/// The omniORB peers, built if omniORB is installed.
pub(crate) fn omniorb_peers() -> Option<PathBuf> {
    if !Path::new("/usr/include/omniORB4/CORBA.h").exists() {
        return None;
    }
    let root = workspace_root()?;
    let out = root.join("target/interop-cpp");
    let ok = Command::new("make")
        .arg("-s")
        .arg(format!("OUT={}", out.display()))
        .current_dir(root.join("tests/interop/cpp"))
        .stdout(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false);
    ok.then_some(out)
}

/// omniORB's `interop_server` from `peers` on loopback, its IOR written to
/// `dir/omni.ior`; returns it (killed when dropped) once the IOR is there.
pub(crate) fn start_omniorb_server(peers: &Path, dir: &Path) -> Result<(Peer, PathBuf), String> {
    let file = dir.join("omni.ior");
    let _ = std::fs::remove_file(&file);
    let server = Peer(
        Command::new(peers.join("interop_server"))
            .arg("--ior-file")
            .arg(&file)
            .args(["-ORBendPoint", "giop:tcp:127.0.0.1:0"])
            .stdout(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start omniORB's interop_server: {e}"))?,
    );
    wait_for_file(&file)?;
    Ok((server, file))
}
