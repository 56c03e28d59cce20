//! `bench sync`'s Armillary throughput client, a process of its own
//! (`armillary bench drive-sync-throughput`, hidden) so that it can run
//! on other CPUs than the pinned benchmark: `--threads` threads share one
//! generated `Interop::Everything` stub (one reference, one client ORB
//! with its default options) and make `--calls` synchronous
//! `echo_longlong` calls between them, every reply checked; the time is
//! from the threads' common start to the last one's end.
//!
//! With `--oneway` it is `bench instructions`' oneway client instead, and
//! with `--octets N` a client of `echo_octets` of N octets from one
//! thread: the bytes figure alone, for `perf` or `strace` to watch
//! against `armillary bench serve-echo`.
//!
//! It reports as omniORB's `sync_bench_client` does, on standard output:
//! `elapsed_ns T` and `calls N`, which [`Elapsed::parse`] reads for
//! both.

use std::process::ExitCode;
use std::sync::Barrier;
use std::time::{Duration, Instant};

use armillary::config::OrbConfig;
use armillary::{Bytes, Orb};
use clap::Args;

use crate::echo_peer::{self, Everything};

/// Checked calls the client makes before it is timed (the connection
/// opened, the caches filled).
const WARM_UP_CALLS: i64 = 100;

/// What `armillary bench drive-sync-throughput` is asked to do.
#[derive(Debug, Args)]
pub struct DriveOptions {
    /// The server's IOR.
    #[arg(long)]
    ior: String,
    /// Client threads, sharing one reference.
    #[arg(long)]
    threads: usize,
    /// Calls in all, split evenly between the threads.
    #[arg(long)]
    calls: usize,
    /// Oneway `ping`s from one thread instead (`--threads` is not read),
    /// then `oneway_count` every few milliseconds until the server has
    /// counted them all: `bench instructions`' oneway client, and its
    /// driver of each server. A count of calls that does not depend on
    /// how fast the server is, so that the instructions counted do not
    /// either.
    #[arg(long)]
    oneway: bool,
    /// `echo_octets` of this many octets from one thread instead
    /// (`--threads` is not read), each reply checked: `bench sync`'s
    /// bytes figure alone, for a profiler to watch.
    #[arg(long, conflicts_with = "oneway")]
    octets: Option<usize>,
}

/// What a throughput or oneway client measured: `calls` calls in
/// `elapsed`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Elapsed {
    pub(crate) elapsed: Duration,
    pub(crate) calls: usize,
}

impl Elapsed {
    /// Reads `elapsed_ns T` and `calls N` from a client's standard
    /// output.
    pub(crate) fn parse(out: &str) -> Result<Elapsed, String> {
        let field = |name: &str| {
            out.lines()
                .filter_map(|l| l.trim().strip_prefix(name))
                .find_map(|v| v.trim().parse::<u64>().ok())
                .ok_or_else(|| format!("the client printed no `{name}`: {out:?}"))
        };
        Ok(Elapsed {
            elapsed: Duration::from_nanos(field("elapsed_ns ")?),
            calls: field("calls ")? as usize,
        })
    }

    /// Calls per second.
    pub(crate) fn rate(&self) -> f64 {
        self.calls as f64 / self.elapsed.as_secs_f64()
    }
}

/// Runs `armillary bench drive-sync-throughput`.
pub(crate) fn drive(options: &DriveOptions) -> Result<ExitCode, String> {
    let orb = Orb::with_config(OrbConfig::default()).map_err(|e| e.to_string())?;
    let echo = echo_peer::stub(&orb, &options.ior)?;
    if let Some(size) = options.octets {
        let elapsed = octet_echoes(&echo, size, options.calls)?;
        println!("elapsed_ns {}\ncalls {}", elapsed.as_nanos(), options.calls);
        let _ = orb.shutdown(armillary::WaitForCompletion::No);
        return Ok(ExitCode::SUCCESS);
    }
    for i in 0..WARM_UP_CALLS {
        check(i, echo.echo_longlong(i).map_err(|e| e.to_string())?)?;
    }
    if options.oneway {
        let elapsed = oneways(&echo, options.calls)?;
        println!("elapsed_ns {}\ncalls {}", elapsed.as_nanos(), options.calls);
        let _ = orb.shutdown(armillary::WaitForCompletion::No);
        return Ok(ExitCode::SUCCESS);
    }
    let threads = options.threads.max(1);
    let start = Barrier::new(threads + 1);
    let (t0, outcomes) = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let mine = options.calls / threads + usize::from(t < options.calls % threads);
                let (echo, start) = (&echo, &start);
                scope.spawn(move || -> Result<(), String> {
                    start.wait();
                    for i in 0..mine as i64 {
                        let v = t as i64 * 1_000_000_000 + i;
                        check(v, echo.echo_longlong(v).map_err(|e| e.to_string())?)?;
                    }
                    Ok(())
                })
            })
            .collect();
        start.wait();
        let t0 = Instant::now();
        let outcomes: Vec<Result<(), String>> = workers
            .into_iter()
            .map(|w| {
                w.join()
                    .unwrap_or_else(|_| Err("a client thread panicked".into()))
            })
            .collect();
        (t0, outcomes)
    });
    let elapsed = t0.elapsed();
    outcomes.into_iter().collect::<Result<Vec<()>, String>>()?;
    println!("elapsed_ns {}\ncalls {}", elapsed.as_nanos(), options.calls);
    // Not an upcall: cannot fail in a way that matters here.
    let _ = orb.shutdown(armillary::WaitForCompletion::No);
    Ok(ExitCode::SUCCESS)
}

/// How often the oneway client asks the server how many it has counted.
const COUNT_POLL: Duration = Duration::from_millis(5);

/// How long the oneway client waits for the server to count them all (a
/// server under callgrind runs about fifty times slower).
const COUNT_DEADLINE: Duration = Duration::from_secs(600);

/// Warm-up `ping`s, then `calls` counted ones (see
/// [`echo_peer::counted_oneways`](crate::echo_peer::counted_oneways)).
fn oneways(echo: &Everything, calls: usize) -> Result<Duration, String> {
    for i in 0..WARM_UP_CALLS as i32 {
        echo.ping(i).map_err(|e| e.to_string())?;
    }
    crate::echo_peer::counted_oneways(
        echo,
        calls,
        WARM_UP_CALLS as usize,
        COUNT_POLL,
        COUNT_DEADLINE,
    )
}

/// Warm-up echoes, then `calls` timed ones of `size` octets, each
/// reply compared with what was sent (the comparison timed too).
fn octet_echoes(echo: &Everything, size: usize, calls: usize) -> Result<Duration, String> {
    let payload = Bytes::from((0..size).map(|j| (j * 7 + 3) as u8).collect::<Vec<u8>>());
    let mut elapsed = Duration::ZERO;
    for round in [WARM_UP_CALLS as usize, calls] {
        let t0 = Instant::now();
        for _ in 0..round {
            let reply = echo.echo_octets(&payload).map_err(|e| e.to_string())?;
            if reply != payload {
                return Err(format!("an echo of {size} octets returned other octets"));
            }
        }
        elapsed = t0.elapsed();
    }
    Ok(elapsed)
}

fn check(sent: i64, got: i64) -> Result<(), String> {
    if sent == got {
        Ok(())
    } else {
        Err(format!("echo_longlong({sent}) returned {got}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clients_report_is_read_back() {
        let e = Elapsed::parse("elapsed_ns 2000000000\ncalls 500\n").unwrap();
        assert_eq!(e.elapsed, Duration::from_secs(2));
        assert_eq!(e.calls, 500);
        assert!((e.rate() - 250.0).abs() < 1e-9);
        assert!(Elapsed::parse("calls 5\n").is_err());
    }
}
