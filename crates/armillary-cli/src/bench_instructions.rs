//! `armillary bench instructions`: the instructions one synchronous
//! `echo_longlong` call, and one oneway `ping`, cost each side,
//! Armillary's and omniORB's, counted by valgrind's callgrind, and the
//! code they run, in 64-byte lines. Neither count moves with the
//! machine's load, as every timing here does: they show what a change
//! to the call path saves where `bench sync` cannot tell it from noise
//! (they are not the time: system calls and the scheduler are not in
//! them).
//!
//! The code lines are the lines holding an instruction run on at least
//! every other call ([`code_lines`]). The instruction cache holds 512
//! (32 KiB); each system call's kernel code evicts much of it, so a
//! call's code is fetched again on every call, a line at a time: more
//! lines cost time that more instructions alone do not show.
//!
//! - **Client**: the generated stub (`bench drive-sync-throughput`, one
//!   thread) and omniORB's `sync_bench_client throughput` (one thread)
//!   each run under callgrind against omniORB's `interop_server` (run
//!   natively), twice: `warm` calls, then `warm + calls`. The difference
//!   over `calls` is the cost of a call alone: the process's start, its
//!   ORB's set-up and the connection cancel out.
//! - **Server**: `bench serve-echo` (the ORB's default model) and
//!   omniORB's `interop_server` each run under callgrind, called by
//!   omniORB's `bench_client` (natively): `warm` calls, the counts zeroed
//!   (`callgrind_control -z`), `calls` calls, the counts written out
//!   (`callgrind_control -d`), every thread of the server counted.
//! - **Oneways**: the same, for a oneway `ping`. The clients are
//!   `bench drive-sync-throughput --oneway` and omniORB's
//!   `sync_bench_client oneway`; each server is driven by the former
//!   (natively), which asks for the server's count every few
//!   milliseconds, not in a loop, so that the count of calls the server
//!   runs does not depend on how slow callgrind makes it.
//!
//! Both clients send the same 80-byte request (GIOP 1.2, to omniORB's
//! object); each server reads the request for its own object (104 bytes
//! for Armillary's, whose object keys are longer, 80 for omniORB's) and
//! sends the same 32-byte reply, so the figures compare the ORBs' work.
//! `callgrind_annotate FILE` on the files kept with `--keep DIR` says
//! where the instructions go, function by function.
//!
//! A third count: the atomic read-modify-write instructions a call runs
//! ([`atomic_rmw`]: those with a `lock` prefix, and `xchg` with memory,
//! found with `objdump`): each takes a lock, counts a reference or swaps
//! a flag, and costs some tens of cycles where most instructions cost
//! one, so two paths of the same length can differ in time by them.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::rc::Rc;

use clap::Args;
use serde_json::json;

use crate::bench_process::{wait_for_file_from, Peer};
use crate::omniorb_peers::{OmniorbPeers, Program};

/// `armillary bench instructions` options.
#[derive(Debug, Args)]
pub struct InstructionsOptions {
    /// Calls counted on each side (after the warm-up).
    #[arg(long, default_value_t = 10_000)]
    calls: usize,
    /// Calls made before counting starts.
    #[arg(long, default_value_t = 2_000)]
    warm: usize,
    /// Write the results as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Keep callgrind's output files in this directory (for
    /// `callgrind_annotate`); by default they are removed.
    #[arg(long)]
    keep: Option<PathBuf>,
}

/// What one call costs one side of one ORB.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
struct Cost {
    /// Instructions run per call.
    instructions: f64,
    /// The code a call runs, in 64-byte lines (the instruction cache's):
    /// the lines holding an instruction run on at least every other call
    /// (see [`code_lines`]).
    code_lines: usize,
    /// Atomic read-modify-write instructions run per call (see
    /// [`atomic_rmw`]); `None` without `objdump`.
    atomics: Option<f64>,
}

impl std::ops::Add for Cost {
    type Output = Cost;

    fn add(self, other: Cost) -> Cost {
        Cost {
            instructions: self.instructions + other.instructions,
            code_lines: self.code_lines + other.code_lines,
            atomics: self.atomics.zip(other.atomics).map(|(a, b)| a + b),
        }
    }
}

impl Cost {
    fn to_json(self) -> serde_json::Value {
        json!({
            "instructions_per_call": round1(self.instructions),
            "code_lines_per_call": self.code_lines,
            "atomic_rmw_per_call": self.atomics.map(round1),
        })
    }
}

/// What one call costs one side of each ORB.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Side {
    armillary: Cost,
    omniorb: Cost,
}

impl Side {
    /// Armillary's instructions over omniORB's.
    fn ratio(&self) -> f64 {
        self.armillary.instructions / self.omniorb.instructions
    }

    /// Armillary's code lines over omniORB's.
    fn lines_ratio(&self) -> f64 {
        self.armillary.code_lines as f64 / self.omniorb.code_lines as f64
    }

    /// Armillary's atomic read-modify-writes over omniORB's.
    fn atomics_ratio(&self) -> Option<f64> {
        let (a, o) = self.armillary.atomics.zip(self.omniorb.atomics)?;
        (o > 0.0).then(|| a / o)
    }

    fn to_json(self) -> serde_json::Value {
        json!({
            "armillary": self.armillary.to_json(),
            "omniorb": self.omniorb.to_json(),
            "armillary_over_omniorb": round3(self.ratio()),
            "code_lines_armillary_over_omniorb": round3(self.lines_ratio()),
            "atomic_rmw_armillary_over_omniorb": self.atomics_ratio().map(round3),
        })
    }
}

fn round1(x: f64) -> f64 {
    (x * 10.0).round() / 10.0
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// Runs `armillary bench instructions`.
pub fn run(options: InstructionsOptions) -> Result<ExitCode, String> {
    if options.calls == 0 {
        return Err("--calls must be at least 1".into());
    }
    for tool in ["valgrind", "callgrind_control"] {
        if !tool_runs(tool) {
            return Err(format!(
                "{tool} is needed to count instructions (Debian: apt-get install valgrind)"
            ));
        }
    }
    let peers = crate::omniorb_peers::find()
        .ok_or("omniORB's peer programs are needed: they are the other side of every call")?;
    let dir = match &options.keep {
        Some(dir) => dir.clone(),
        None => std::env::temp_dir().join(format!("armillary-callgrind-{}", std::process::id())),
    };
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
    let result = measure(&options, peers, &dir);
    if options.keep.is_none() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    let Counted { echo, oneway } = result?;
    let atomics = |n: Option<f64>| n.map_or_else(|| "-".to_owned(), |n| format!("{n:.0}"));
    let rows: Vec<Vec<String>> = [("echo_longlong", &echo), ("oneway ping", &oneway)]
        .iter()
        .flat_map(|(call, sides)| {
            [
                ("client", sides.client),
                ("server", sides.server),
                ("both", sides.both()),
            ]
            .map(|(name, side)| {
                vec![
                    (*call).to_owned(),
                    name.to_owned(),
                    format!("{:.0}", side.armillary.instructions),
                    format!("{:.0}", side.omniorb.instructions),
                    format!("{:.2}", side.ratio()),
                    side.armillary.code_lines.to_string(),
                    side.omniorb.code_lines.to_string(),
                    format!("{:.2}", side.lines_ratio()),
                    atomics(side.armillary.atomics),
                    atomics(side.omniorb.atomics),
                ]
            })
        })
        .collect();
    println!(
        "instructions, code lines (64 bytes) and atomic read-modify-writes per call (callgrind)"
    );
    crate::bench_report::print_table(
        2,
        &[
            "call",
            "side",
            "Armillary",
            "omniORB",
            "Armillary / omniORB",
            "lines, Armillary",
            "lines, omniORB",
            "lines, A. / o.",
            "atomic RMW, A.",
            "atomic RMW, o.",
        ],
        &rows,
    );
    if let Some(path) = &options.json {
        let mut report = json!({
            "benchmark": "instructions",
            "operation": "echo_longlong",
            "calls": options.calls,
            "warm_up_calls": options.warm,
            "oneway": oneway.to_json(),
        });
        // The echo's sides at the top level, as before the oneways came.
        if let (Some(report), serde_json::Value::Object(sides)) =
            (report.as_object_mut(), echo.to_json())
        {
            report.extend(sides);
        }
        crate::bench_report::write_json(path, &report)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// Both sides of both ORBs for one kind of call.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Sides {
    client: Side,
    server: Side,
}

impl Sides {
    fn both(&self) -> Side {
        Side {
            armillary: self.client.armillary + self.server.armillary,
            omniorb: self.client.omniorb + self.server.omniorb,
        }
    }

    fn to_json(self) -> serde_json::Value {
        json!({
            "client": self.client.to_json(),
            "server": self.server.to_json(),
            "both": self.both().to_json(),
        })
    }
}

/// What `bench instructions` counts.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Counted {
    echo: Sides,
    oneway: Sides,
}

/// The kinds of call counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Call {
    /// A synchronous `echo_longlong`.
    Echo,
    /// A oneway `ping`.
    Oneway,
}

impl Call {
    fn name(self) -> &'static str {
        match self {
            Call::Echo => "echo",
            Call::Oneway => "oneway",
        }
    }
}

/// Both sides of both ORBs, for each kind of call.
fn measure(
    options: &InstructionsOptions,
    peers: &OmniorbPeers,
    dir: &Path,
) -> Result<Counted, String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let bar = crate::bench_report::progress(12, "");
    let sites = RefCell::new(AtomicSites::default());
    let sides = |call| measure_call(options, peers, dir, &exe, call, (&bar, &sites));
    let counted = Counted {
        echo: sides(Call::Echo)?,
        oneway: sides(Call::Oneway)?,
    };
    bar.finish_and_clear();
    if sites.borrow().without_objdump {
        eprintln!(
            "objdump is needed to count atomic read-modify-writes (Debian: apt-get install binutils)"
        );
    }
    Ok(counted)
}

/// Both sides of both ORBs for `call`.
fn measure_call(
    options: &InstructionsOptions,
    peers: &OmniorbPeers,
    dir: &Path,
    exe: &Path,
    call: Call,
    (bar, sites): (&indicatif::ProgressBar, &RefCell<AtomicSites>),
) -> Result<Sides, String> {
    let (warm, calls) = (options.warm, options.calls);
    let kind = call.name();
    // Armillary's client: the generated stub, calling the object in
    // `ior` `n` times.
    let armillary_client = |ior: &str, n: usize| -> Vec<OsString> {
        let mut args: Vec<OsString> = ["bench", "drive-sync-throughput", "--ior"]
            .map(OsString::from)
            .to_vec();
        args.push(ior.trim().into());
        args.extend(["--threads", "1", "--calls"].map(OsString::from));
        args.push(n.to_string().into());
        if call == Call::Oneway {
            args.push("--oneway".into());
        }
        args
    };

    // The clients, against omniORB's server run natively.
    let (omni_server, omni_ior_file) = peers.start_server(dir)?;
    let omni_ior = std::fs::read_to_string(&omni_ior_file)
        .map_err(|e| format!("cannot read {}: {e}", omni_ior_file.display()))?;
    // omniORB's: `sync_bench_client`, whose loop does nothing but call
    // (`bench_client`, the latency client, also reads the clock twice a
    // call and prints each call's time: 725 instructions a call more).
    let omniorb_client = |n: usize| -> Vec<OsString> {
        let mut args: Vec<OsString> = Vec::new();
        match call {
            Call::Oneway => args.extend(["oneway".into(), omni_ior_file.clone().into()]),
            Call::Echo => args.extend([
                "throughput".into(),
                omni_ior_file.clone().into(),
                "1".into(),
            ]),
        }
        args.push(n.to_string().into());
        args
    };
    let omniorb_program = peers.program(Program::SyncBenchClient);
    let per_call = |name: &str, program: &Path, args: &dyn Fn(usize) -> Vec<OsString>| {
        bar.set_message(format!("{kind} client: {name}, {warm} calls"));
        let few = counted_run(
            program,
            &args(warm),
            &dir.join(format!("{kind}-client-{name}-few.out")),
        )?;
        bar.inc(1);
        bar.set_message(format!("{kind} client: {name}, {} calls", warm + calls));
        let many = counted_run(
            program,
            &args(warm + calls),
            &dir.join(format!("{kind}-client-{name}-many.out")),
        )?;
        bar.inc(1);
        Ok::<Cost, String>(Cost {
            instructions: many.total.saturating_sub(few.total) as f64 / calls as f64,
            code_lines: code_lines(&many.at, Some(&few.at), calls),
            atomics: atomic_rmw(&many.at, Some(&few.at), calls, &mut sites.borrow_mut()),
        })
    };
    let client = Side {
        armillary: per_call("armillary", exe, &|n| armillary_client(&omni_ior, n))?,
        omniorb: per_call("omniorb", &omniorb_program, &omniorb_client)?,
    };
    drop(omni_server);

    // The servers, each called natively: by omniORB's client (echoes),
    // by Armillary's (oneways; see the module docs).
    let drive = |ior_file: &Path, n: usize| -> Result<(), String> {
        match call {
            Call::Echo => peers.echo_latencies(ior_file, n).map(drop),
            Call::Oneway => {
                let ior = std::fs::read_to_string(ior_file)
                    .map_err(|e| format!("cannot read {}: {e}", ior_file.display()))?;
                let run = Command::new(exe)
                    .args(armillary_client(&ior, n))
                    .stdin(Stdio::null())
                    .output()
                    .map_err(|e| format!("cannot run the oneway client: {e}"))?;
                match run.status.success() {
                    true => Ok(()),
                    false => Err(format!(
                        "the oneway client failed ({}): {}",
                        run.status,
                        String::from_utf8_lossy(&run.stderr).trim()
                    )),
                }
            }
        }
    };
    bar.set_message(format!("{kind} server: armillary"));
    let armillary_ior = dir.join(format!("{kind}-armillary-server.ior"));
    let armillary = counted_server(
        exe,
        &[
            OsStr::new("bench"),
            OsStr::new("serve-echo"),
            OsStr::new("--ior-file"),
            armillary_ior.as_os_str(),
        ],
        &armillary_ior,
        &dir.join(format!("{kind}-server-armillary.out")),
        &drive,
        (warm, calls),
        sites,
    )?;
    bar.inc(1);
    bar.set_message(format!("{kind} server: omniorb"));
    let omniorb_ior = dir.join(format!("{kind}-omniorb-server.ior"));
    let omniorb = counted_server(
        &peers.program(Program::InteropServer),
        &[
            OsStr::new("--ior-file"),
            omniorb_ior.as_os_str(),
            OsStr::new("-ORBendPoint"),
            OsStr::new("giop:tcp:127.0.0.1:0"),
        ],
        &omniorb_ior,
        &dir.join(format!("{kind}-server-omniorb.out")),
        &drive,
        (warm, calls),
        sites,
    )?;
    bar.inc(1);
    Ok(Sides {
        client,
        server: Side { armillary, omniorb },
    })
}

/// Runs `program` with `args` under callgrind, its counts written to
/// `out`; the instructions it ran.
fn counted_run(program: &Path, args: &[OsString], out: &Path) -> Result<Counts, String> {
    let run = under_callgrind(program, args, out)
        .output()
        .map_err(|e| format!("cannot run valgrind: {e}"))?;
    if !run.status.success() {
        let err = String::from_utf8_lossy(&run.stderr);
        let lines: Vec<&str> = err.lines().collect();
        return Err(format!(
            "{} under callgrind failed ({}): {}",
            program.display(),
            run.status,
            lines[lines.len().saturating_sub(5)..].join(" / ")
        ));
    }
    read_counts(out)
}

/// Runs the server `program` with `args` under callgrind until it has
/// written `ior_file`, has `drive` make `warm` calls, then `calls` more
/// with the server's counts zeroed before and written out after them:
/// what a call costs the server's every thread.
fn counted_server(
    program: &Path,
    args: &[&OsStr],
    ior_file: &Path,
    out: &Path,
    drive: &dyn Fn(&Path, usize) -> Result<(), String>,
    (warm, calls): (usize, usize),
    sites: &RefCell<AtomicSites>,
) -> Result<Cost, String> {
    let _ = std::fs::remove_file(ior_file);
    let mut server = Peer(
        under_callgrind(program, args, out)
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot run valgrind: {e}"))?,
    );
    wait_for_file_from(&mut server, ior_file)
        .map_err(|e| format!("{} under callgrind did not start: {e}", program.display()))?;
    let pid = server.0.id().to_string();
    if warm > 0 {
        drive(ior_file, warm)?;
    }
    callgrind_control(&["-z", &pid])?;
    drive(ior_file, calls)?;
    callgrind_control(&["-d", &pid])?;
    // The dump after the zeroing is the first: `OUT.1`.
    let dump = PathBuf::from(format!("{}.1", out.display()));
    let counts = read_counts(&dump)?;
    Ok(Cost {
        instructions: counts.total as f64 / calls as f64,
        code_lines: code_lines(&counts.at, None, calls),
        atomics: atomic_rmw(&counts.at, None, calls, &mut sites.borrow_mut()),
    })
}

/// `program` with `args` run under callgrind, its counts written to
/// `out`; no standard input or output.
fn under_callgrind(program: &Path, args: &[impl AsRef<OsStr>], out: &Path) -> Command {
    let mut out_file = OsString::from("--callgrind-out-file=");
    out_file.push(out);
    let mut command = Command::new("valgrind");
    command
        .arg("--tool=callgrind")
        .arg("--dump-instr=yes")
        .arg(out_file)
        .arg(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null());
    command
}

fn callgrind_control(args: &[&str]) -> Result<(), String> {
    let run = Command::new("callgrind_control")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run callgrind_control: {e}"))?;
    if run.status.success() {
        Ok(())
    } else {
        Err(format!(
            "callgrind_control {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&run.stderr).trim()
        ))
    }
}

fn tool_runs(tool: &str) -> bool {
    Command::new(tool)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// What a callgrind output file counts.
#[derive(Debug, Default)]
struct Counts {
    /// Instructions in all.
    total: u64,
    /// Instructions run at each code address.
    at: Addresses,
}

/// Instructions run at each code address: an object file (by name) and
/// an address in it.
type Addresses = HashMap<(Rc<str>, u64), u64>;

fn read_counts(out: &Path) -> Result<Counts, String> {
    let text = std::fs::read_to_string(out)
        .map_err(|e| format!("callgrind wrote no {}: {e}", out.display()))?;
    let total = total_instructions(&text)
        .ok_or_else(|| format!("{} has no instruction count", out.display()))?;
    Ok(Counts {
        total,
        at: instructions_at(&text),
    })
}

/// The code `calls` calls ran, in 64-byte lines: the lines holding an
/// instruction run at least `calls / 2` times in `counts`, less what
/// `base` ran there (a run of fewer calls, for a client's process). An
/// instruction run once a call, or on every other call, counts; start-up
/// code cancels out. The instruction cache holds 512 such lines (32 KiB):
/// a call path longer than that misses in it on every call.
fn code_lines(counts: &Addresses, base: Option<&Addresses>, calls: usize) -> usize {
    let half = (calls as u64).div_ceil(2);
    let lines: HashSet<(&str, u64)> = counts
        .iter()
        .filter(|(at, n)| {
            let before = base.and_then(|b| b.get(*at)).copied().unwrap_or(0);
            n.saturating_sub(before) >= half
        })
        .map(|((object, address), _)| (&**object, address / 64))
        .collect();
    lines.len()
}

/// Atomic read-modify-write instructions run per call: those of
/// `counts` (less `base`, as for [`code_lines`]) at an address where
/// `objdump` finds one ([`atomic_sites`]); `None` without `objdump`.
fn atomic_rmw(
    counts: &Addresses,
    base: Option<&Addresses>,
    calls: usize,
    sites: &mut AtomicSites,
) -> Option<f64> {
    let mut total = 0u64;
    for ((object, address), n) in counts {
        if !sites.of(object)?.contains(address) {
            continue;
        }
        let before = base.and_then(|b| b.get(&(object.clone(), *address)));
        total += n.saturating_sub(before.copied().unwrap_or(0));
    }
    Some(total as f64 / calls as f64)
}

/// The addresses of the atomic read-modify-write instructions of each
/// object file a run counted, disassembled once each.
#[derive(Debug, Default)]
struct AtomicSites {
    of: HashMap<Rc<str>, HashSet<u64>>,
    /// `objdump` could not be run.
    without_objdump: bool,
}

impl AtomicSites {
    /// The atomic instructions' addresses in `object` (none for an
    /// object that is not a file: valgrind's own code); `None` without
    /// `objdump`.
    fn of(&mut self, object: &Rc<str>) -> Option<&HashSet<u64>> {
        if self.without_objdump {
            return None;
        }
        if !self.of.contains_key(object) {
            let sites = match Path::new(&**object).is_file() {
                true => {
                    let listing = Command::new("objdump")
                        .args(["-d", "--no-show-raw-insn"])
                        .arg(&**object)
                        .stdin(Stdio::null())
                        .stderr(Stdio::null())
                        .output();
                    match listing {
                        Ok(out) => atomic_sites(&String::from_utf8_lossy(&out.stdout)),
                        Err(_) => {
                            self.without_objdump = true;
                            return None;
                        }
                    }
                }
                false => HashSet::new(),
            };
            self.of.insert(object.clone(), sites);
        }
        self.of.get(object)
    }
}

/// The addresses of the atomic read-modify-write instructions in an
/// `objdump -d --no-show-raw-insn` listing (x86-64): those with a `lock`
/// prefix, and `xchg` with a memory operand (locked without one).
fn atomic_sites(listing: &str) -> HashSet<u64> {
    listing
        .lines()
        .filter_map(|line| {
            let (address, instruction) = line.trim_start().split_once(':')?;
            let address = u64::from_str_radix(address, 16).ok()?;
            let instruction = instruction.trim();
            let atomic = instruction.starts_with("lock ")
                || (instruction.starts_with("xchg") && instruction.contains('('));
            atomic.then_some(address)
        })
        .collect()
}

/// Instructions run per code address, read from a callgrind output file
/// written with `--dump-instr=yes` (positions `instr line`, the one
/// event `Ir`). Names are compressed (`ob=(3) /lib/x.so` once, `ob=(3)`
/// after); an address is absolute (`0x1a2b`) or relative to the last
/// one (`+4`, `-8`, `*`); the cost line after `calls=` is the call's
/// inclusive cost, not the instruction's own, and is skipped.
fn instructions_at(text: &str) -> Addresses {
    let mut names: HashMap<&str, Rc<str>> = HashMap::new();
    let mut object: Rc<str> = Rc::from("");
    let mut last = 0u64;
    let mut call_cost_next = false;
    let mut at = Addresses::new();
    // `(3) name` names 3; `(3)` is the name given before.
    fn name<'a>(names: &mut HashMap<&'a str, Rc<str>>, spec: &'a str) -> Rc<str> {
        let spec = spec.trim();
        match spec.strip_prefix('(').and_then(|s| s.split_once(')')) {
            Some((id, rest)) if !rest.trim().is_empty() => {
                let named: Rc<str> = Rc::from(rest.trim());
                names.insert(id, named.clone());
                named
            }
            Some((id, _)) => names.get(id).cloned().unwrap_or_else(|| Rc::from(id)),
            None => Rc::from(spec),
        }
    }
    for line in text.lines() {
        if let Some(spec) = line.strip_prefix("ob=") {
            object = name(&mut names, spec);
            continue;
        }
        if let Some(spec) = line.strip_prefix("cob=") {
            name(&mut names, spec);
            continue;
        }
        if line.starts_with("calls=") {
            call_cost_next = true;
            continue;
        }
        if !line.starts_with(|c: char| c.is_ascii_digit() || matches!(c, '+' | '-' | '*')) {
            continue;
        }
        let mut fields = line.split_whitespace();
        let Some(address) = fields.next().and_then(|a| position(a, last)) else {
            continue;
        };
        last = address;
        if std::mem::take(&mut call_cost_next) {
            continue;
        }
        // The source line, then the count.
        if let Some(n) = fields.nth(1).and_then(|n| n.parse::<u64>().ok()) {
            *at.entry((object.clone(), address)).or_default() += n;
        }
    }
    at
}

/// An instruction address of a callgrind position: absolute (`0x…` or
/// decimal), relative to `last` (`+…`, `-…`) or the same (`*`).
fn position(field: &str, last: u64) -> Option<u64> {
    let number = |s: &str| match s.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    };
    match field.as_bytes().first()? {
        b'*' => Some(last),
        b'+' => last.checked_add(number(&field[1..])?),
        b'-' => last.checked_sub(number(&field[1..])?),
        _ => number(field),
    }
}

/// The instructions a callgrind output file counts in all: its
/// `summary:` line (`totals:` in some versions), the event being `Ir`.
fn total_instructions(text: &str) -> Option<u64> {
    ["summary:", "totals:"].iter().find_map(|key| {
        text.lines()
            .find_map(|line| line.strip_prefix(key))
            .and_then(|rest| rest.split_whitespace().next()?.parse().ok())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_total_is_read_from_the_summary_line() {
        let file = "version: 1\ncreator: callgrind-3.19.0\ncmd: x\nevents: Ir\nsummary: 57390040\n\nfl=(1) a.rs\nfn=(1) f\n3 5\ntotals: 57390195\n";
        assert_eq!(total_instructions(file), Some(57_390_040));
        assert_eq!(total_instructions("events: Ir\ntotals: 12\n"), Some(12));
        assert_eq!(total_instructions("events: Ir\n"), None);
        assert_eq!(total_instructions("summary: many\n"), None);
    }

    #[test]
    fn a_side_reports_its_ratios_rounded() {
        let side = Side {
            armillary: Cost {
                instructions: 5877.04,
                code_lines: 520,
                atomics: Some(45.04),
            },
            omniorb: Cost {
                instructions: 3148.0,
                code_lines: 180,
                atomics: Some(22.0),
            },
        };
        let json = side.to_json();
        assert_eq!(json["armillary"]["instructions_per_call"], 5877.0);
        assert_eq!(json["omniorb"]["instructions_per_call"], 3148.0);
        assert_eq!(json["armillary_over_omniorb"], 1.867);
        assert_eq!(json["armillary"]["code_lines_per_call"], 520);
        assert_eq!(json["omniorb"]["code_lines_per_call"], 180);
        assert_eq!(json["code_lines_armillary_over_omniorb"], 2.889);
        assert_eq!(json["armillary"]["atomic_rmw_per_call"], 45.0);
        assert_eq!(json["atomic_rmw_armillary_over_omniorb"], 2.047);
        let unknown = Side {
            armillary: Cost {
                atomics: None,
                ..side.armillary
            },
            ..side
        };
        assert!(unknown.to_json()["armillary"]["atomic_rmw_per_call"].is_null());
        assert!(unknown.to_json()["atomic_rmw_armillary_over_omniorb"].is_null());
    }

    #[test]
    fn atomic_sites_are_locked_instructions_and_xchg_with_memory() {
        let listing = "\n/bin/app:     file format elf64-x86-64\n\n\
            Disassembly of section .text:\n\n\
            0000000000001000 <f>:\n\
            \x20   1000:\tlock cmpxchg %rcx,(%rdx)\n\
            \x20   1005:\tmov    %rax,(%rdx)\n\
            \x20   1008:\txchg   %eax,(%rdi)\n\
            \x20   100a:\txchg   %ax,%ax\n\
            \x20   100c:\tlock incq 0x8(%rax)\n";
        let sites = atomic_sites(listing);
        assert_eq!(sites, HashSet::from([0x1000, 0x1008, 0x100c]));
        // 100 calls, the base run having run 0x1000 once per call too.
        let at = instructions_at("ob=(1) /bin/app\n0x1000 3 300\n+8 * 100\n+4 * 100\n");
        let base = instructions_at("ob=(1) /bin/app\n0x1000 3 100\n");
        let mut known = AtomicSites::default();
        known.of.insert(Rc::from("/bin/app"), sites);
        assert_eq!(atomic_rmw(&at, None, 100, &mut known), Some(5.0));
        assert_eq!(atomic_rmw(&at, Some(&base), 100, &mut known), Some(4.0));
    }

    /// A callgrind file of `--dump-instr=yes`, as callgrind 3.19 writes
    /// them: compressed names, relative addresses, a call and its
    /// inclusive cost.
    const INSTR_FILE: &str = "# callgrind format\nversion: 1\npositions: instr line\n\
        events: Ir\nsummary: 1000\n\n\
        ob=(1) /bin/app\nfl=(1) a.rs\nfn=(1) f\n\
        0x1000 3 100\n+4 * 100\n+60 +1 100\n\
        cob=(2) /lib/libc.so\ncfn=(2) g\ncalls=100 0x40\n+4 * 5000\n\
        +4 * 50\n\
        ob=(2)\nfl=(2) g.c\nfn=(2)\n0x40 1 100\n-0x10 * 7\n\
        ob=(1)\nfn=(1)\n0x1000 3 1\n";

    #[test]
    fn instructions_are_read_per_address_and_calls_inclusive_costs_skipped() {
        let at = instructions_at(INSTR_FILE);
        let app: Rc<str> = Rc::from("/bin/app");
        let libc: Rc<str> = Rc::from("/lib/libc.so");
        assert_eq!(at[&(app.clone(), 0x1000)], 101);
        assert_eq!(at[&(app.clone(), 0x1004)], 100);
        assert_eq!(at[&(app.clone(), 0x1040)], 100);
        // The call's line (0x1044) carries the callee's cost: not counted.
        assert!(!at.contains_key(&(app.clone(), 0x1044)));
        assert_eq!(at[&(app, 0x1048)], 50);
        assert_eq!(at[&(libc.clone(), 0x40)], 100);
        assert_eq!(at[&(libc, 0x30)], 7);
    }

    #[test]
    fn code_lines_count_what_runs_every_other_call_less_the_base() {
        let at = instructions_at(INSTR_FILE);
        // 100 calls: 0x1000 and 0x1004 share a line, 0x1040 another;
        // 0x1048 ran on every other call (same line as 0x1040); libc's
        // 0x40 is a third line, its 0x30 (7 times) is not.
        assert_eq!(code_lines(&at, None, 100), 3);
        assert_eq!(code_lines(&at, None, 101), 3);
        // 203 calls: none ran half as often.
        assert_eq!(code_lines(&at, None, 203), 0);
        // Less a base that ran the app's first line as often.
        let base = instructions_at("ob=(1) /bin/app\n0x1000 3 101\n+4 * 100\n");
        assert_eq!(code_lines(&at, Some(&base), 100), 2);
    }

    #[test]
    fn positions_are_absolute_relative_or_the_same() {
        assert_eq!(position("0x10", 0), Some(16));
        assert_eq!(position("16", 0), Some(16));
        assert_eq!(position("+4", 16), Some(20));
        assert_eq!(position("-0x4", 16), Some(12));
        assert_eq!(position("*", 16), Some(16));
        assert_eq!(position("-20", 16), None);
        assert_eq!(position("x", 16), None);
    }
}
