//! `armillary bench idl`: how long the IDL compiler takes over a corpus
//! (by default omniORB's, `/usr/share/idl/omniORB`), and, in the same
//! run, how long omniORB's own `omniidl -bcxx` takes over the same files.
//!
//! Each file is compiled on its own, as `armillary idl compile` would:
//! preprocessing with its includes, parsing, checking, generating Rust and
//! writing it to a scratch directory. rustfmt is an optional last polish
//! (the generated code is formatted by prettyplease already), timed only
//! with `--rustfmt`. Files the front end rejects are counted, not fatal.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use armillary_idl::{BuildError, Builder};
use serde_json::json;

/// What one round over the corpus did.
struct Round {
    elapsed: Duration,
    compiled: usize,
    rejected: usize,
    bytes: usize,
}

/// Include directories: the corpus and each directory in it.
fn include_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut dirs = vec![dir.to_path_buf()];
    if let Ok(entries) = std::fs::read_dir(dir) {
        dirs.extend(entries.flatten().map(|e| e.path()).filter(|p| p.is_dir()));
    }
    dirs
}

fn armillary_round(files: &[PathBuf], includes: &[PathBuf], out: &Path, rustfmt: bool) -> Round {
    let started = Instant::now();
    let (mut compiled, mut rejected, mut bytes) = (0, 0, 0);
    for (i, file) in files.iter().enumerate() {
        let mut builder = Builder::new()
            .file(file)
            .define("__OMNIIDL__", None)
            .out_dir(out)
            .out_name(format!("file{i}"))
            .quiet(true)
            .rustfmt(rustfmt);
        for dir in includes {
            builder = builder.include_dir(dir);
        }
        match builder.compile() {
            Ok(path) => {
                compiled += 1;
                bytes += std::fs::metadata(path)
                    .map(|m| m.len() as usize)
                    .unwrap_or(0);
            }
            Err(BuildError::Diagnostics(_)) => rejected += 1,
            Err(_) => rejected += 1,
        }
    }
    Round {
        elapsed: started.elapsed(),
        compiled,
        rejected,
        bytes,
    }
}

/// `omniidl -bcxx` over the same files, one process each (as a build
/// would run it); `None` when omniidl is not installed.
fn omniidl_round(files: &[PathBuf], includes: &[PathBuf], out: &Path) -> Option<Round> {
    Command::new("omniidl").arg("-V").output().ok()?;
    let started = Instant::now();
    let (mut compiled, mut rejected) = (0, 0);
    for file in files {
        let mut cmd = Command::new("omniidl");
        cmd.arg("-bcxx").arg(format!("-C{}", out.display()));
        for dir in includes {
            cmd.arg(format!("-I{}", dir.display()));
        }
        let ok = cmd
            .arg(file)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if ok {
            compiled += 1;
        } else {
            rejected += 1;
        }
    }
    Some(Round {
        elapsed: started.elapsed(),
        compiled,
        rejected,
        bytes: 0,
    })
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times[times.len() / 2]
}

/// Runs the benchmark; `Err` carries the message for the user.
pub fn run(
    dir: &Path,
    rounds: usize,
    rustfmt: bool,
    json_file: Option<&Path>,
) -> Result<(), String> {
    let files = armillary_idl::idl_files_under(dir);
    if files.is_empty() {
        return Err(format!(
            "no .idl files under {} (install Debian's omniorb-idl, or give --dir)",
            dir.display()
        ));
    }
    let includes = include_dirs(dir);
    let scratch = std::env::temp_dir().join(format!("armillary-bench-idl-{}", std::process::id()));
    std::fs::create_dir_all(&scratch).map_err(|e| format!("{}: {e}", scratch.display()))?;
    println!(
        "IDL compile time over {} files of {} ({} round{}, rustfmt {})",
        files.len(),
        dir.display(),
        rounds,
        if rounds == 1 { "" } else { "s" },
        if rustfmt { "on" } else { "off" }
    );
    let (mut ours, mut theirs) = (Vec::new(), Vec::new());
    let mut last = None;
    for round in 1..=rounds {
        let r = armillary_round(&files, &includes, &scratch, rustfmt);
        println!(
            "  round {round}: armillary {:>8.1} ms ({} compiled, {} rejected, {} KiB of Rust)",
            r.elapsed.as_secs_f64() * 1e3,
            r.compiled,
            r.rejected,
            r.bytes / 1024
        );
        ours.push(r.elapsed);
        last = Some(r);
        if let Some(o) = omniidl_round(&files, &includes, &scratch) {
            println!(
                "  round {round}: omniidl   {:>8.1} ms ({} compiled, {} rejected)",
                o.elapsed.as_secs_f64() * 1e3,
                o.compiled,
                o.rejected
            );
            theirs.push(o.elapsed);
        }
    }
    let _ = std::fs::remove_dir_all(&scratch);
    let ours_median = median(ours);
    let theirs_median = (!theirs.is_empty()).then(|| median(theirs));
    println!(
        "armillary idl compile, whole corpus: median {:.1} ms",
        ours_median.as_secs_f64() * 1e3
    );
    if let Some(t) = theirs_median {
        println!(
            "omniidl -bcxx, whole corpus:         median {:.1} ms (armillary takes {:.2}x its time)",
            t.as_secs_f64() * 1e3,
            ours_median.as_secs_f64() / t.as_secs_f64()
        );
    }
    if let Some(path) = json_file {
        let last = last.expect("at least one round");
        let value = json!({
            "benchmark": "idl",
            "dir": dir.display().to_string(),
            "files": files.len(),
            "rounds": rounds,
            "rustfmt": rustfmt,
            "armillary": {
                "median_ms": ours_median.as_secs_f64() * 1e3,
                "compiled": last.compiled,
                "rejected": last.rejected,
                "rust_bytes": last.bytes,
            },
            "omniidl": theirs_median.map(|t| json!({"median_ms": t.as_secs_f64() * 1e3})),
        });
        crate::bench_report::write_json(path, &value)?;
    }
    Ok(())
}
