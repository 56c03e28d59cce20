//! `armillary bench`: performance measured against baselines in the same
//! run. `latency` times synchronous two-way `echo_longlong` calls between
//! two Armillary processes, a raw TCP ping-pong of the same message sizes,
//! and omniORB client → omniORB server when omniORB is installed; the
//! contenders take turns, round after round, all pinned to the same CPUs.
//! `invocation` reproduces the AMI paper's latency and throughput tables
//! (see `bench_invocation`); `idl` times the IDL compiler (see
//! `bench_idl`); `soak` runs mixed traffic for minutes and checks nothing
//! is lost (see `bench_soak`); `threading` compares the server concurrency
//! models (see `bench_threading`). What they share to report lives in
//! `bench_report`.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use armillary::giop::giop::{
    MessageBody, MessageBuilder, ReplyHeader, ReplyStatus, RequestHeader, TargetAddress,
};
use armillary::giop::system_exception::{CompletionStatus, SystemException};
use armillary::giop::{ByteOrder, GiopVersion};
use armillary::runtime::ReplyBody;
use armillary::{ObjectRef, Orb, Servant, ServerRequest};
use clap::{Args, Subcommand};
use serde_json::json;

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
        } => serve_raw(&port_file, request_size, reply_size),
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

pub(crate) fn write_atomically(path: &Path, text: &str) -> Result<(), String> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| format!("cannot write {}: {e}", path.display()))
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

fn serve_raw(port_file: &Path, request_size: usize, reply_size: usize) -> Result<ExitCode, String> {
    let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
    let port = listener.local_addr().map_err(|e| e.to_string())?.port();
    write_atomically(port_file, &port.to_string())?;
    for stream in listener.incoming() {
        let Ok(mut stream) = stream else { continue };
        let _ = stream.set_nodelay(true);
        let mut request = vec![0u8; request_size];
        let reply = vec![0u8; reply_size];
        while stream.read_exact(&mut request).is_ok() {
            if stream.write_all(&reply).is_err() {
                break;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Starts `armillary bench serve-raw` answering each `request_size`-byte
/// message with a `reply_size`-byte one; returns it and its port.
pub(crate) fn start_raw_server(
    dir: &Path,
    request_size: usize,
    reply_size: usize,
) -> Result<(Peer, u16), String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let port_file = dir.join("raw.port");
    let _ = std::fs::remove_file(&port_file);
    let server = Peer(
        Command::new(&exe)
            .args(["bench", "serve-raw", "--port-file"])
            .arg(&port_file)
            .args([
                "--request-size",
                &request_size.to_string(),
                "--reply-size",
                &reply_size.to_string(),
            ])
            .spawn()
            .map_err(|e| format!("cannot start the raw TCP server: {e}"))?,
    );
    let port = wait_for_file(&port_file)?
        .parse()
        .map_err(|_| "bad raw port".to_string())?;
    Ok((server, port))
}

/// A child process killed when dropped.
pub(crate) struct Peer(pub(crate) Child);

impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub(crate) fn wait_for_file(path: &Path) -> Result<String, String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(text) = std::fs::read_to_string(path) {
            if !text.trim().is_empty() {
                return Ok(text.trim().to_owned());
            }
        }
        if Instant::now() > deadline {
            return Err(format!("{} was never written", path.display()));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
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

/// The Request and Reply sizes of one `echo_longlong` call to `obj`.
pub(crate) fn message_sizes(obj: &ObjectRef) -> (usize, usize) {
    let key = obj
        .ior()
        .iiop_profiles()
        .first()
        .map(|p| p.object_key.clone())
        .unwrap_or_default();
    let request = MessageBody::Request(RequestHeader {
        request_id: 1,
        response_flags: 3,
        reserved: [0; 3],
        target: TargetAddress::Key(key),
        operation: "echo_longlong".into(),
        service_contexts: Vec::new(),
        requesting_principal: Vec::new(),
    });
    let reply = MessageBody::Reply(ReplyHeader {
        request_id: 1,
        reply_status: ReplyStatus::NoException,
        service_contexts: Vec::new(),
    });
    let size = |body: &MessageBody| {
        MessageBuilder::new(GiopVersion::V1_2, ByteOrder::NATIVE, body)
            .map(|mut b| {
                b.body().write_longlong(0);
                b.finish(false).len()
            })
            .unwrap_or(64)
    };
    (size(&request), size(&reply))
}

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
    let omni = omniorb_peers();
    let mut _omni_server = None;
    let omni_ior = match &omni {
        Some(peers) => {
            let (server, file) = start_omniorb_server(peers, &dir)?;
            _omni_server = Some(server);
            Some(file)
        }
        None => {
            eprintln!("omniORB is not installed: no omniORB contender");
            None
        }
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
        if let (Some(peers), Some(file)) = (&omni, &omni_ior) {
            bar.set_message(format!("round {} omniORB", round + 1));
            let out = Command::new(peers.join("bench_client"))
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
