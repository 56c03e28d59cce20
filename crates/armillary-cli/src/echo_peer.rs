//! The Armillary server the synchronous benchmarks call (`armillary
//! bench serve-echo`: `bench latency`, `bench invocation`, `bench sync`)
//! and the stub they call it with: `Interop::Everything`'s
//! `echo_longlong`, `echo_octets`, `ping` and `oneway_count`, compiled
//! from `omniorb-peers/idl/sync_bench.idl` (a link to
//! `tests/interop/idl/sync_bench.idl`) by this crate's `build.rs`. Its
//! repository id and operations are those of `interop.idl`'s
//! `Interop::Everything`, so omniORB's `interop_server` answers the same
//! stub and omniORB's clients call this server.
//!
//! The servant ([`EchoServant`]) returns what it is given and counts the
//! oneway `ping`s it runs; [`serve`] activates it in the RootPOA of an
//! ORB in the concurrency model asked for and writes its IOR to a file,
//! and [`start`] runs that server as a child process, on other CPUs than
//! the caller's if asked. [`timed_echoes`] is the latency figure's
//! client loop.

use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

use armillary::{Orb, SystemException};

use crate::bench_process::{command_on_cpus, wait_for_file_from, write_atomically, Peer};
use crate::bench_report::CallTimes;

/// The Rust generated from `sync_bench.idl`.
// The AMI forms are generated but unused. The generated `_async` methods
// carry a `#[must_use]` their return type already has.
#[allow(
    missing_docs,
    missing_debug_implementations,
    dead_code,
    clippy::double_must_use
)]
pub(crate) mod generated {
    armillary::include_idl!("sync_bench");
}

pub(crate) use generated::interop::Everything;
use generated::interop::{EverythingServant, EverythingSkeleton, OctetSeq};

/// The benchmark's servant: every echo returns its argument; `ping`
/// counts.
#[derive(Debug, Default)]
pub(crate) struct EchoServant {
    oneways: AtomicI32,
}

impl EverythingServant for EchoServant {
    fn echo_longlong(&self, v: i64) -> Result<i64, SystemException> {
        Ok(v)
    }

    fn echo_octets(&self, v: OctetSeq) -> Result<OctetSeq, SystemException> {
        Ok(v)
    }

    fn ping(&self, _n: i32) -> Result<(), SystemException> {
        self.oneways.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn oneway_count(&self) -> Result<i32, SystemException> {
        Ok(self.oneways.load(Ordering::Relaxed))
    }
}

/// `armillary bench serve-echo`: serves an [`EchoServant`] with
/// `-ORBConcurrency concurrency`, its IOR written to `ior_file`, until
/// killed.
pub(crate) fn serve(ior_file: &Path, concurrency: &str) -> Result<ExitCode, String> {
    let (orb, _) = Orb::init(["-ORBConcurrency", concurrency]).map_err(|e| e.to_string())?;
    let poa = orb.root_poa();
    poa.manager().activate().map_err(|e| e.to_string())?;
    let echo = EverythingSkeleton::new(EchoServant::default())
        .activate(&poa)
        .map_err(|e| e.to_string())?;
    write_atomically(ior_file, &orb.object_to_string(echo.as_object()))?;
    orb.run().map_err(|e| e.to_string())?;
    Ok(ExitCode::SUCCESS)
}

/// The echo server's object at `ior`, as a stub of `orb`.
pub(crate) fn stub(orb: &Orb, ior: &str) -> Result<Everything, String> {
    let object = orb.string_to_object(ior).map_err(|e| e.to_string())?;
    Ok(Everything::from_object(object))
}

/// Starts `armillary bench serve-echo` with `-ORBConcurrency
/// concurrency`, on the CPUs `cpus` (a `taskset` list) when given, else
/// on the caller's; its IOR written to `dir/NAME.ior`. Returns it (killed
/// when dropped) and its IOR.
pub(crate) fn start(
    dir: &Path,
    name: &str,
    concurrency: &str,
    cpus: Option<&str>,
) -> Result<(Peer, String), String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let ior_file = dir.join(format!("{name}.ior"));
    let _ = std::fs::remove_file(&ior_file);
    let mut server = Peer(
        command_on_cpus(&exe, cpus)
            .args(["bench", "serve-echo", "--concurrency", concurrency])
            .arg("--ior-file")
            .arg(&ior_file)
            .spawn()
            .map_err(|e| format!("cannot start the echo server: {e}"))?,
    );
    let ior = wait_for_file_from(&mut server, &ior_file)
        .map_err(|e| format!("the echo server ({concurrency}) did not start: {e}"))?;
    Ok((server, ior))
}

/// Makes `calls` oneway `ping`s on `echo`, then asks `oneway_count` until
/// the server has counted them all (every `poll`, or at once again when
/// it is zero), no longer than `deadline`: the time from the first ping
/// to that count. A server that counts fewer, or more, is an error.
///
/// `earlier`: pings the caller sent just before, which the server may
/// not have run yet when it answers the first count. A server may run a
/// oneway after a two-way that followed it on the connection (omniORB
/// hands a connection on before a oneway's upcall), so the count taken
/// first can miss up to that many, and the last can exceed its target
/// by as many.
pub(crate) fn counted_oneways(
    echo: &Everything,
    calls: usize,
    earlier: usize,
    poll: Duration,
    deadline: Duration,
) -> Result<Duration, String> {
    let count = || echo.oneway_count().map_err(|e| e.to_string());
    let before = count()?;
    let target = before + calls as i32;
    let t0 = Instant::now();
    for i in 0..calls as i32 {
        echo.ping(i).map_err(|e| e.to_string())?;
    }
    let mut counted = count()?;
    while counted < target && t0.elapsed() < deadline {
        if !poll.is_zero() {
            std::thread::sleep(poll);
        }
        counted = count()?;
    }
    let elapsed = t0.elapsed();
    if counted < target || counted > target + earlier as i32 {
        return Err(format!(
            "the server counted {} of {calls} oneways",
            counted - before
        ));
    }
    Ok(elapsed)
}

/// Makes `calls` synchronous `echo_longlong` calls on `echo`, one after
/// another, each timed on its own into `times`; a wrong value is an
/// error.
pub(crate) fn timed_echoes(
    echo: &Everything,
    calls: usize,
    times: &mut CallTimes,
) -> Result<(), String> {
    for i in 0..calls as i64 {
        let t = Instant::now();
        let v = echo.echo_longlong(i).map_err(|e| e.to_string())?;
        times.record(t.elapsed());
        if v != i {
            return Err(format!("echo_longlong({i}) returned {v}"));
        }
    }
    Ok(())
}
