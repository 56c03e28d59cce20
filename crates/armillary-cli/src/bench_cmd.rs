//! `armillary bench`: performance measured against baselines in the same
//! run. `latency` times synchronous two-way `echo_longlong` calls between
//! two Armillary processes, a raw TCP ping-pong of the same message sizes,
//! and omniORB client → omniORB server when omniORB is installed (its
//! programs built on first use, see `omniorb_peers`); the
//! contenders take turns, round after round, all pinned to the same CPUs.
//! `invocation` reproduces the AMI paper's latency and throughput tables
//! (see `bench_invocation`); `idl` times the IDL compiler (see
//! `bench_idl`); `soak` runs mixed traffic for minutes and checks nothing
//! is lost (see `bench_soak`); `threading` compares the server concurrency
//! models (see `bench_threading`); `middle-tier` reproduces the AMH
//! paper's middle-tier experiments (see `bench_middle_tier`, with its
//! servers in `middle_tier_peers`, its clients in `middle_tier_clients`
//! and its models in `middle_tier_model`); `collocation` reproduces the
//! collocation paper's Figure 4 (see `bench_collocation`); `lb` the
//! Visibroker study's load balancing (see `bench_lb`). What they share to report lives in
//! `bench_report`; their child processes and the raw TCP baseline in
//! `bench_process`; omniORB's peer programs in `omniorb_peers`.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::sync::Arc;
use std::time::{Duration, Instant};

use armillary::giop::system_exception::{CompletionStatus, SystemException};
use armillary::runtime::ReplyBody;
use armillary::{Orb, Servant, ServerRequest};
use clap::{Args, Subcommand};
use serde_json::json;

use crate::bench_process::{
    message_sizes, start_raw_server, wait_for_file, write_atomically, Peer,
};
use crate::omniorb_peers::Program;

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
        /// reactive, thread-pool:N, thread-per-connection or application.
        #[arg(long, default_value = "reactive")]
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
    /// The Visibroker study's load balancing: clients against one server
    /// and against replicas behind `armillary lb serve` (see `bench_lb`).
    Lb(crate::bench_lb::LbBenchOptions),
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
        #[arg(long, default_value = "reactive")]
        concurrency: String,
    },
    /// (internal) A raw TCP ping-pong server.
    #[command(hide = true)]
    ServeRaw {
        #[arg(long)]
        port_file: PathBuf,
        #[arg(long)]
        request_size: usize,
        #[arg(long)]
        reply_size: usize,
    },
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
        } => serve_echo(&ior_file, &concurrency),
        BenchCommand::ServeRaw {
            port_file,
            request_size,
            reply_size,
        } => crate::bench_process::serve_raw(&port_file, request_size, reply_size),
    };
    match result {
        Ok(code) => code,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::from(1)
        }
    }
}

/// The benchmark servant: `echo_longlong` returns its argument.
struct Echo;

impl Servant for Echo {
    fn repository_id(&self) -> &'static str {
        "IDL:Interop/Everything:1.0"
    }

    fn is_a(&self, id: &str) -> bool {
        id == "IDL:Interop/Everything:1.0"
    }

    fn dispatch(&self, req: &mut ServerRequest<'_>) -> Result<(), SystemException> {
        match req.operation() {
            "echo_longlong" => {
                let v = req
                    .args()
                    .read_longlong()
                    .map_err(|e| SystemException::from_cdr_error(&e, CompletionStatus::No))?;
                req.results().write_longlong(v);
                Ok(())
            }
            _ => Err(SystemException::bad_operation(0, CompletionStatus::No)),
        }
    }
}

fn serve_echo(ior_file: &Path, concurrency: &str) -> Result<ExitCode, String> {
    let (orb, _) = Orb::init(["-ORBConcurrency", concurrency]).map_err(|e| e.to_string())?;
    let poa = orb.root_poa();
    poa.manager().activate().map_err(|e| e.to_string())?;
    let servant: Arc<dyn Servant> = Arc::new(Echo);
    let obj = poa
        .servant_to_reference(&servant)
        .map_err(|e| e.to_string())?;
    write_atomically(ior_file, &orb.object_to_string(&obj))?;
    orb.run().map_err(|e| e.to_string())?;
    Ok(ExitCode::SUCCESS)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

struct Samples {
    name: &'static str,
    micros: Vec<f64>,
}

impl Samples {
    fn summary(&self) -> serde_json::Value {
        let mut v = self.micros.clone();
        v.sort_by(f64::total_cmp);
        json!({
            "p50_us": (percentile(&v, 0.5) * 100.0).round() / 100.0,
            "p99_us": (percentile(&v, 0.99) * 100.0).round() / 100.0,
            "samples": v.len(),
        })
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
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let dir = std::env::temp_dir().join(format!("armillary-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;

    // Contender 1: Armillary client → Armillary server (another process).
    let ior_file = dir.join("echo.ior");
    let _server = Peer(
        Command::new(&exe)
            .args([
                "bench",
                "serve-echo",
                "--concurrency",
                concurrency,
                "--ior-file",
            ])
            .arg(&ior_file)
            .spawn()
            .map_err(|e| e.to_string())?,
    );
    let ior = wait_for_file(&ior_file)?;
    let orb =
        Orb::with_config(armillary::config::OrbConfig::default()).map_err(|e| e.to_string())?;
    let echo = orb.string_to_object(&ior).map_err(|e| e.to_string())?;
    let call = |v: i64| -> Result<i64, SystemException> {
        echo.invoke(
            "echo_longlong",
            &|w| {
                w.write_longlong(v);
                Ok(())
            },
            |reply| match reply {
                ReplyBody::Result(r) => Ok(Ok(r.read_longlong()?)),
                ReplyBody::UserException { .. } => {
                    Ok(Err(SystemException::unknown(0, CompletionStatus::Yes)))
                }
            },
        )
    };
    call(0).map_err(|e| format!("the Armillary echo server failed: {e}"))?;

    // Contender 2: raw TCP with the same message sizes.
    let (request_size, reply_size) = message_sizes(&echo);
    let (_raw_server, port) = start_raw_server(&dir, request_size, reply_size)?;
    let mut raw = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    raw.set_nodelay(true).map_err(|e| e.to_string())?;
    let request = vec![1u8; request_size];
    let mut reply = vec![0u8; reply_size];

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
    let mut ours = Samples {
        name: "armillary",
        micros: Vec::new(),
    };
    let mut tcp = Samples {
        name: "raw_tcp",
        micros: Vec::new(),
    };
    let mut theirs = Samples {
        name: "omniorb",
        micros: Vec::new(),
    };
    let steps = rounds as u64 * if omni.is_some() { 3 } else { 2 };
    let bar = crate::bench_report::progress(steps, "");
    for round in 0..rounds {
        bar.set_message(format!("round {} armillary", round + 1));
        for i in 0..per_round {
            let t = Instant::now();
            let v = call(i as i64).map_err(|e| e.to_string())?;
            ours.micros.push(t.elapsed().as_secs_f64() * 1e6);
            if v != i as i64 {
                return Err("echo_longlong returned the wrong value".into());
            }
        }
        bar.inc(1);
        bar.set_message(format!("round {} raw tcp", round + 1));
        for _ in 0..per_round {
            let t = Instant::now();
            raw.write_all(&request).map_err(|e| e.to_string())?;
            raw.read_exact(&mut reply).map_err(|e| e.to_string())?;
            tcp.micros.push(t.elapsed().as_secs_f64() * 1e6);
        }
        bar.inc(1);
        if let (Some(peers), Some(file)) = (omni, &omni_ior) {
            bar.set_message(format!("round {} omniORB", round + 1));
            let out = Command::new(peers.program(Program::BenchClient))
                .arg(file)
                .arg(per_round.to_string())
                .output()
                .map_err(|e| e.to_string())?;
            if !out.status.success() {
                return Err("the omniORB bench client failed".into());
            }
            theirs.micros.extend(
                String::from_utf8_lossy(&out.stdout)
                    .lines()
                    .filter_map(|l| l.trim().parse::<f64>().ok())
                    .map(|ns| ns / 1000.0),
            );
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
    for s in [&ours, &tcp, &theirs] {
        if s.micros.is_empty() {
            continue;
        }
        let summary = s.summary();
        let p50 = summary["p50_us"].as_f64().unwrap_or(f64::NAN);
        println!(
            "{:<10} {:>10.2} {:>10.2} {:>12.3}",
            s.name,
            p50,
            summary["p99_us"].as_f64().unwrap_or(f64::NAN),
            p50 / raw_p50
        );
        result[s.name] = summary;
    }
    if let Some(path) = json_file {
        crate::bench_report::write_json(&path, &result)?;
    }
    let _ = std::fs::remove_dir_all(&dir);
    Ok(ExitCode::SUCCESS)
}
