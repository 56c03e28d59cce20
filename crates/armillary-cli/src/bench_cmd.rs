//! `armillary bench`: performance measured against baselines in the same
//! run. `latency` times synchronous two-way `echo_longlong` calls between
//! two Armillary processes (the generated stub against `bench
//! serve-echo`, see `echo_peer`), a raw TCP ping-pong of the same message
//! sizes, and omniORB client → omniORB server when omniORB is installed
//! (its programs built on first use, see `omniorb_peers`); the
//! contenders take turns, round after round, all pinned to the same CPUs.
//! `sync` measures the whole synchronous path the same way against
//! omniORB and raw TCP: latency in two server models, throughput from 1,
//! 2 and 8 threads sharing one reference, oneways, octet sequences (see
//! `bench_sync`, with its servers and clients in `sync_rig` and
//! `sync_throughput`). `invocation` reproduces the AMI paper's latency
//! and throughput tables (see `bench_invocation`); `idl` times the IDL
//! compiler (see `bench_idl`); `soak` runs mixed traffic for minutes and
//! checks nothing is lost (see `bench_soak`); `threading` compares the
//! server concurrency models (see `bench_threading`); `middle-tier`
//! reproduces the AMH paper's middle-tier experiments (see
//! `bench_middle_tier`, with its servers in `middle_tier_peers`, its
//! clients in `middle_tier_clients` and its models in
//! `middle_tier_model`); `collocation` reproduces the collocation paper's
//! Figure 4 (see `bench_collocation`); `lb` the Visibroker study's load
//! balancing (see `bench_lb`); `instructions` counts the instructions a
//! call costs each side of each ORB under callgrind (see
//! `bench_instructions`). What they share to report lives
//! in `bench_report`; their child processes and the raw TCP baseline in
//! `bench_process`; the Armillary echo server and its stub in
//! `echo_peer`; omniORB's peer programs in `omniorb_peers`.

use std::net::TcpStream;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use armillary::Orb;
use clap::{Args, Subcommand};
use serde_json::json;

use crate::bench_process::{message_sizes, raw_ping_pongs, start_raw_server, RawShape};
use crate::bench_report::CallTimes;
use crate::echo_peer;

/// `armillary bench …`
#[derive(Debug, Args)]
pub struct BenchArgs {
    #[command(subcommand)]
    command: BenchCommand,
}

#[derive(Debug, Subcommand)]
enum BenchCommand {
    /// Round-trip latency of a synchronous `long long` echo.
    Latency {
        /// Calls per contender, split over the rounds.
        #[arg(long, default_value_t = 20_000)]
        calls: usize,
        /// Rounds; the contenders take turns in each.
        #[arg(long, default_value_t = 5)]
        rounds: usize,
        /// Write the results as JSON to this file.
        #[arg(long)]
        json: Option<PathBuf>,
        /// CPUs to pin every process to (taskset list, e.g. `0` or `0,1`),
        /// or `none`.
        #[arg(long, default_value = "0")]
        cpus: String,
        /// The Armillary server's concurrency model (`-ORBConcurrency`):
        /// reactive, thread-pool:N, thread-per-connection[:N] or
        /// application; the ORB's default when not given.
        #[arg(long, default_value_t = crate::bench_process::default_concurrency())]
        concurrency: String,
    },
    /// The server concurrency models in the Visibroker and MICO threading
    /// experiments (see `bench_threading`).
    Threading(crate::bench_threading::ThreadingArgs),
    /// The AMI paper's experiments: latency (Table 1) and throughput
    /// (Table 2) of synchronous, AMI (callback, future) and DII deferred
    /// two-way calls against one Armillary server, with omniORB's AMI
    /// client against omniORB's server as the throughput baseline.
    Invocation(crate::bench_invocation::InvocationOptions),
    /// The AMH paper's experiments: clients → middle tier → sink with a
    /// delay; the middle tier's throughput under each server model as the
    /// clients, or the sink's delay, grow (see `bench_middle_tier`).
    MiddleTier(crate::bench_middle_tier::MiddleTierOptions),
    /// The collocation paper's Figure 4: calls/s of `cube(sequence<long>)`
    /// of 4 and 1,024 elements on a servant in this process, remotely over
    /// loopback, thru-POA, direct, and as a plain Rust call (see
    /// `bench_collocation`).
    Collocation(crate::bench_collocation::CollocationOptions),
    /// The synchronous path against omniORB and raw TCP in one run:
    /// two-way latency, throughput with 1, 2 and 8 client threads sharing
    /// one reference, oneways per second and octet-sequence echoes in
    /// MB/s (see `bench_sync`).
    Sync(crate::bench_sync::SyncOptions),
    /// The Visibroker study's load balancing: clients against one server
    /// and against replicas behind `armillary lb serve` (see `bench_lb`).
    Lb(crate::bench_lb::LbBenchOptions),
    /// Instructions one synchronous `echo_longlong` call, and one oneway
    /// `ping`, cost the client and the server, Armillary's and omniORB's,
    /// counted by valgrind's
    /// callgrind: a figure the machine's load does not move (see
    /// `bench_instructions`).
    Instructions(crate::bench_instructions::InstructionsOptions),
    /// Time of `armillary idl compile` over an IDL corpus, each file on
    /// its own, against `omniidl -bcxx` over the same files.
    Idl {
        /// The corpus: every `.idl` file under this directory.
        #[arg(long, default_value = "/usr/share/idl/omniORB")]
        dir: PathBuf,
        /// Rounds (the median is reported).
        #[arg(long, default_value_t = 3)]
        rounds: usize,
        /// Also run rustfmt on each generated file.
        #[arg(long)]
        rustfmt: bool,
        /// Write the results as JSON to this file.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// Mixed synchronous and oneway traffic from many connections, opened
    /// and closed throughout, against an Armillary server: every request
    /// and reply counted, the server's memory and descriptors sampled.
    Soak {
        /// How long to run, in minutes.
        #[arg(long, conflicts_with = "seconds")]
        minutes: Option<u64>,
        /// How long to run, in seconds (for short runs).
        #[arg(long)]
        seconds: Option<u64>,
        /// Client threads, each opening and closing its own connections.
        #[arg(long, default_value_t = 16)]
        connections: usize,
        /// The server's concurrency model (`-ORBConcurrency`).
        #[arg(long, default_value = "thread-pool:4")]
        concurrency: String,
        /// Write the results as JSON to this file.
        #[arg(long)]
        json: Option<PathBuf>,
    },
    /// (internal) The soak benchmark's server.
    #[command(hide = true)]
    ServeSoak {
        #[arg(long)]
        ior_file: PathBuf,
        #[arg(long, default_value = "thread-pool:4")]
        concurrency: String,
    },
    /// (internal) The middle-tier benchmark's sink.
    #[command(hide = true)]
    ServeSink {
        #[arg(long)]
        ior_file: PathBuf,
        #[arg(long)]
        delay_ms: u64,
    },
    /// (internal) The middle-tier benchmark's middle tier.
    #[command(hide = true)]
    ServeMiddleTier {
        #[arg(long)]
        ior_file: PathBuf,
        #[arg(long)]
        sink_ior_file: PathBuf,
        #[arg(long)]
        model: crate::middle_tier_model::MiddleTierModel,
    },
    /// (internal) The middle-tier benchmark's clients.
    #[command(hide = true)]
    DriveMiddleTier(crate::middle_tier_clients::DriveOptions),
    /// (internal) An Armillary echo server for the benchmark.
    #[command(hide = true)]
    ServeEcho {
        #[arg(long)]
        ior_file: PathBuf,
        #[arg(long, default_value_t = crate::bench_process::default_concurrency())]
        concurrency: String,
    },
    /// (internal) A raw TCP server: a reply after every
    /// `requests_per_reply` requests (the request echoed when the sizes
    /// are equal).
    #[command(hide = true)]
    ServeRaw {
        #[arg(long)]
        port_file: PathBuf,
        #[arg(long)]
        request_size: usize,
        #[arg(long)]
        reply_size: usize,
        #[arg(long, default_value_t = 1)]
        requests_per_reply: usize,
    },
    /// (internal) `bench sync`'s Armillary throughput client.
    #[command(hide = true)]
    DriveSyncThroughput(crate::sync_throughput::DriveOptions),
}

/// Runs `armillary bench`.
pub fn run(args: BenchArgs) -> ExitCode {
    let result = match args.command {
        BenchCommand::Latency {
            calls,
            rounds,
            json,
            cpus,
            concurrency,
        } => latency(calls, rounds.max(1), json, &cpus, &concurrency),
        BenchCommand::Threading(args) => crate::bench_threading::run(args),
        BenchCommand::Invocation(options) => crate::bench_invocation::run(options),
        BenchCommand::MiddleTier(options) => crate::bench_middle_tier::run(options),
        BenchCommand::Collocation(options) => crate::bench_collocation::run(options),
        BenchCommand::Lb(options) => crate::bench_lb::run(options),
        BenchCommand::Instructions(options) => crate::bench_instructions::run(options),
        BenchCommand::ServeSink { ior_file, delay_ms } => {
            crate::middle_tier_peers::serve_sink(&ior_file, Duration::from_millis(delay_ms))
        }
        BenchCommand::ServeMiddleTier {
            ior_file,
            sink_ior_file,
            model,
        } => crate::middle_tier_peers::serve_middle_tier(&ior_file, &sink_ior_file, model),
        BenchCommand::DriveMiddleTier(options) => crate::middle_tier_clients::drive(&options),
        BenchCommand::Idl {
            dir,
            rounds,
            rustfmt,
            json,
        } => crate::bench_idl::run(&dir, rounds.max(1), rustfmt, json.as_deref())
            .map(|()| ExitCode::SUCCESS),
        BenchCommand::Soak {
            minutes,
            seconds,
            connections,
            concurrency,
            json,
        } => crate::bench_soak::run(crate::bench_soak::SoakOptions {
            duration: match (minutes, seconds) {
                (_, Some(s)) => Duration::from_secs(s),
                (Some(m), None) => Duration::from_secs(m * 60),
                (None, None) => Duration::from_secs(60),
            },
            connections,
            concurrency,
            json,
        }),
        BenchCommand::ServeSoak {
            ior_file,
            concurrency,
        } => crate::bench_soak::serve(&ior_file, &concurrency),
        BenchCommand::ServeEcho {
            ior_file,
            concurrency,
        } => echo_peer::serve(&ior_file, &concurrency),
        BenchCommand::ServeRaw {
            port_file,
            request_size,
            reply_size,
            requests_per_reply,
        } => crate::bench_process::serve_raw(
            &port_file,
            RawShape {
                request_size,
                reply_size,
                requests_per_reply,
            },
        ),
        BenchCommand::Sync(options) => crate::bench_sync::run(options),
        BenchCommand::DriveSyncThroughput(options) => crate::sync_throughput::drive(&options),
    };
    match result {
        Ok(code) => code,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::from(1)
        }
    }
}

fn latency(
    calls: usize,
    rounds: usize,
    json_file: Option<PathBuf>,
    cpus: &str,
    concurrency: &str,
) -> Result<ExitCode, String> {
    let pinning = match crate::bench_report::pin(cpus)? {
        crate::bench_report::Pinning::RanPinned(code) => return Ok(code),
        crate::bench_report::Pinning::Here(pinning) => pinning,
    };
    eprintln!("pinning: {pinning}");
    // omniORB's peers, built first if they are not yet; none (said once on
    // stderr) when they cannot be.
    let omni = crate::omniorb_peers::find();
    let dir = std::env::temp_dir().join(format!("armillary-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;

    // Contender 1: Armillary client → Armillary server (another process).
    let (_server, ior) = echo_peer::start(&dir, "echo", concurrency, None)?;
    let orb =
        Orb::with_config(armillary::config::OrbConfig::default()).map_err(|e| e.to_string())?;
    let echo = echo_peer::stub(&orb, &ior)?;
    echo.echo_longlong(0)
        .map_err(|e| format!("the Armillary echo server failed: {e}"))?;

    // Contender 2: raw TCP with the same message sizes.
    let (request_size, reply_size) = message_sizes(echo.as_object());
    let shape = RawShape::ping_pong(request_size, reply_size);
    let (_raw_server, port) = start_raw_server(&dir, "raw", shape)?;
    let mut raw = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    raw.set_nodelay(true).map_err(|e| e.to_string())?;

    // Contender 3: omniORB client → omniORB server.
    let mut _omni_server = None;
    let omni_ior = match omni {
        Some(peers) => {
            let (server, file) = peers.start_server(&dir)?;
            _omni_server = Some(server);
            Some(file)
        }
        None => None,
    };

    let per_round = (calls / rounds).max(1);
    let mut ours = CallTimes::default();
    let mut tcp = CallTimes::default();
    let mut theirs = CallTimes::default();
    let steps = rounds as u64 * if omni.is_some() { 3 } else { 2 };
    let bar = crate::bench_report::progress(steps, "");
    for round in 0..rounds {
        bar.set_message(format!("round {} armillary", round + 1));
        echo_peer::timed_echoes(&echo, per_round, &mut ours)?;
        bar.inc(1);
        bar.set_message(format!("round {} raw tcp", round + 1));
        raw_ping_pongs(&mut raw, shape, per_round, &mut tcp)?;
        bar.inc(1);
        if let (Some(peers), Some(file)) = (omni, &omni_ior) {
            bar.set_message(format!("round {} omniORB", round + 1));
            for took in peers.echo_latencies(file, per_round)? {
                theirs.record(took);
            }
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    // Not an upcall: cannot fail.
    let _ = orb.shutdown(armillary::WaitForCompletion::No);

    let mut result = json!({
        "benchmark": "latency",
        "calls": per_round * rounds,
        "rounds": rounds,
        "pinning": pinning,
        "armillary_server_concurrency": concurrency,
        "request_bytes": request_size,
        "reply_bytes": reply_size,
    });
    println!(
        "{:<10} {:>10} {:>10} {:>12}",
        "contender", "p50 µs", "p99 µs", "p50 / raw"
    );
    let raw_p50 = tcp.summary()["p50_us"].as_f64().unwrap_or(f64::NAN);
    for (name, s) in [
        ("armillary", &ours),
        ("raw_tcp", &tcp),
        ("omniorb", &theirs),
    ] {
        if s.micros.is_empty() {
            continue;
        }
        let summary = s.summary();
        let p50 = summary["p50_us"].as_f64().unwrap_or(f64::NAN);
        println!(
            "{:<10} {:>10.2} {:>10.2} {:>12.3}",
            name,
            p50,
            summary["p99_us"].as_f64().unwrap_or(f64::NAN),
            p50 / raw_p50
        );
        result[name] = summary;
    }
    if let Some(path) = json_file {
        crate::bench_report::write_json(&path, &result)?;
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(ExitCode::SUCCESS)
}
