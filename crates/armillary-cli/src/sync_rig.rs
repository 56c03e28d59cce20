//! The servers, connections and client loops of `armillary bench sync`
//! (see `bench_sync` for what it measures): [`Rig::start`] starts every
//! contender's server once, and [`Rig::measure`] takes one turn of one
//! contender at one point of one figure.
//!
//! The servers:
//! - Armillary's `bench serve-echo` (`echo_peer`) twice on the benchmark's
//!   CPUs, in the default model (`thread-per-connection:64`) and in
//!   `thread-per-connection`, and once more, in the default model, on the
//!   throughput CPUs;
//! - omniORB's `interop_server` once on the benchmark's CPUs and once on
//!   the throughput CPUs (when omniORB's peers can be had);
//! - raw TCP servers (`bench serve-raw`): a ping-pong of the sizes of
//!   `echo_longlong`'s GIOP request and reply, a stream of messages of
//!   the size of `ping`'s request acknowledged by one of the size of
//!   `oneway_count`'s reply after each turn's worth, and one echo server
//!   per octet-sequence size.
//!
//! The Armillary client of the latency, oneway and bytes figures is this
//! process's ORB with the generated stub; of the throughput figure, a
//! child process (`sync_throughput`) on the throughput CPUs. omniORB's
//! clients are its `bench_client` (latency) and `sync_bench_client`
//! (the others), a process per turn, each making its own warm-up calls
//! before it times anything.
//!
//! Each bytes turn, Armillary's and raw TCP's, opens a connection of its
//! own and warms it up ([`BYTES_WARM_UP`] echoes), as omniORB's process
//! per turn does. A TCP connection carries its congestion control's
//! state from one turn to the next: with BBR (this machine's default),
//! a loopback connection that has carried the latency figure's and the
//! oneways' small messages keeps a congestion window under a 1 MiB
//! message, and every echo then waits for acknowledgements on its way.
//! Measured on one connection for everything, Armillary's 1 MiB echo was
//! half raw TCP's dedicated stream's; on a connection of its own per
//! turn, both sides draw the same.

use std::ffi::OsStr;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use armillary::config::OrbConfig;
use armillary::{Bytes, Orb};

use crate::bench_process::{
    command_on_cpus, message_sizes, raw_ping_pongs, reply_size, request_size, start_raw_server,
    Peer, RawShape,
};
use crate::bench_report::CallTimes;
use crate::echo_peer::{self, Everything};
use crate::omniorb_peers::{OmniorbPeers, Program};
use crate::sync_throughput::Elapsed;

/// The octet-sequence sizes of the bytes figure: JSON key stem, label,
/// octets.
pub(crate) const SIZES: [(&str, &str, usize); 3] = [
    ("kib1", "1 KiB", 1 << 10),
    ("kib64", "64 KiB", 1 << 16),
    ("mib1", "1 MiB", 1 << 20),
];

/// The client threads of the throughput figure: JSON key, count.
pub(crate) const THREADS: [(&str, usize); 3] = [("t1", 1), ("t2", 2), ("t8", 8)];

/// Echoes a bytes turn makes on its new connection before it times any.
const BYTES_WARM_UP: usize = 3;

/// How long a oneway turn waits for the server to count every oneway.
const COUNT_DEADLINE: Duration = Duration::from_secs(60);

/// Who is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Contender {
    /// Armillary client → Armillary server in the default model.
    Armillary,
    /// Armillary client → Armillary server in thread per connection.
    ArmillaryThreadPerConnection,
    /// omniORB client → omniORB server.
    Omniorb,
    /// The same bytes over TCP, no ORB.
    RawTcp,
}

impl Contender {
    /// Its JSON key.
    pub(crate) fn key(self) -> &'static str {
        match self {
            Contender::Armillary => "armillary",
            Contender::ArmillaryThreadPerConnection => "armillary_thread_per_connection",
            Contender::Omniorb => "omniorb",
            Contender::RawTcp => "raw_tcp",
        }
    }

    /// Its name in the table and the plot.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Contender::Armillary => "Armillary",
            Contender::ArmillaryThreadPerConnection => "Armillary (thread per conn.)",
            Contender::Omniorb => "omniORB",
            Contender::RawTcp => "raw TCP",
        }
    }
}

/// One turn: what one contender does at one point of one figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Turn {
    /// `calls` two-way `echo_longlong` calls, each timed.
    Latency { calls: usize },
    /// `calls` two-way calls from `threads` threads sharing one reference.
    Throughput { threads: usize, calls: usize },
    /// `calls` oneways from one thread, then a confirmation.
    Oneway { calls: usize },
    /// `calls` echoes of `size` octets, one at a time.
    Bytes { size: usize, calls: usize },
}

/// What a turn measured.
#[derive(Debug)]
pub(crate) enum Measured {
    /// Each call's time (latency).
    Times(Vec<Duration>),
    /// A rate: calls per second, or MB/s for the bytes figure.
    Rate(f64),
}

/// omniORB's side of the rig.
struct OmniorbRig {
    peers: &'static OmniorbPeers,
    /// Its server on the benchmark's CPUs.
    ior_file: PathBuf,
    /// Its server on the throughput CPUs.
    throughput_ior_file: PathBuf,
}

/// Every server of the benchmark, and this process's clients of them.
pub(crate) struct Rig {
    _servers: Vec<Peer>,
    orb: Orb,
    default: Everything,
    thread_per_connection: Everything,
    /// The IOR of the Armillary server on the throughput CPUs.
    throughput_ior: String,
    throughput_cpus: Option<String>,
    omniorb: Option<OmniorbRig>,
    raw_latency: (TcpStream, RawShape),
    raw_oneway: (TcpStream, RawShape),
    /// The IOR of the Armillary server in the default model, for the
    /// bytes figure's connections.
    default_ior: String,
    /// The port of the raw TCP echo server of each entry of [`SIZES`].
    raw_bytes: Vec<u16>,
    /// The sizes of the GIOP messages the raw TCP contender stands for.
    pub(crate) message_bytes: serde_json::Value,
}

impl Rig {
    /// Starts every server (in `dir`), the throughput figure's on
    /// `throughput_cpus` when given, and connects and warms up this
    /// process's clients; `oneway_calls` is a oneway turn's calls (the raw
    /// stream server acknowledges each turn's worth).
    pub(crate) fn start(
        dir: &Path,
        omniorb: Option<&'static OmniorbPeers>,
        throughput_cpus: Option<String>,
        oneway_calls: usize,
    ) -> Result<Rig, String> {
        let wide = throughput_cpus.as_deref();
        let mut servers = Vec::new();
        let default_model = crate::bench_process::default_concurrency();
        let (server, default_ior) = echo_peer::start(dir, "default", &default_model, None)?;
        servers.push(server);
        let (server, tpc_ior) = echo_peer::start(dir, "tpc", "thread-per-connection", None)?;
        servers.push(server);
        let (server, throughput_ior) = echo_peer::start(dir, "throughput", &default_model, wide)?;
        servers.push(server);
        let omniorb = match omniorb {
            Some(peers) => {
                let (server, ior_file) = peers.start_server_on(dir, "omni", None)?;
                servers.push(server);
                let (server, throughput_ior_file) =
                    peers.start_server_on(dir, "omni-throughput", wide)?;
                servers.push(server);
                Some(OmniorbRig {
                    peers,
                    ior_file,
                    throughput_ior_file,
                })
            }
            None => None,
        };

        let orb = Orb::with_config(OrbConfig::default()).map_err(|e| e.to_string())?;
        let stub = |ior: &str| -> Result<Everything, String> {
            let echo = echo_peer::stub(&orb, ior)?;
            let mut times = CallTimes::default();
            echo_peer::timed_echoes(&echo, 100, &mut times)
                .map_err(|e| format!("the Armillary echo server failed: {e}"))?;
            Ok(echo)
        };
        let default = stub(&default_ior)?;
        let thread_per_connection = stub(&tpc_ior)?;

        let (request, reply) = message_sizes(default.as_object());
        let ping = request_size(default.as_object(), "ping", false, |w| w.write_long(0));
        let count = reply_size(|w| w.write_long(0));
        let mut connect = |name: &str, shape: RawShape| -> Result<(TcpStream, RawShape), String> {
            let (server, port) = start_raw_server(dir, name, shape)?;
            servers.push(server);
            Ok((raw_connection(port)?, shape))
        };
        let raw_latency = connect("raw-latency", RawShape::ping_pong(request, reply))?;
        let raw_oneway = connect(
            "raw-oneway",
            RawShape {
                request_size: ping,
                reply_size: count,
                requests_per_reply: oneway_calls.max(1),
            },
        )?;
        let mut raw_bytes = Vec::new();
        for (key, _, size) in SIZES {
            let (server, port) =
                start_raw_server(dir, &format!("raw-{key}"), RawShape::ping_pong(size, size))?;
            servers.push(server);
            raw_bytes.push(port);
        }
        let mut rig = Rig {
            _servers: servers,
            orb,
            default,
            thread_per_connection,
            throughput_ior,
            throughput_cpus,
            omniorb,
            raw_latency,
            raw_oneway,
            default_ior,
            raw_bytes,
            message_bytes: serde_json::json!({
                "echo_longlong_request": request,
                "echo_longlong_reply": reply,
                "ping_request": ping,
                "oneway_count_reply": count,
            }),
        };
        // Warm up what has not been: the raw connections and the
        // Armillary oneways (each bytes turn warms up its own connection).
        rig.measure(Contender::RawTcp, Turn::Latency { calls: 100 })?;
        rig.measure(
            Contender::RawTcp,
            Turn::Oneway {
                calls: oneway_calls,
            },
        )?;
        rig.measure(Contender::Armillary, Turn::Oneway { calls: 100 })?;
        Ok(rig)
    }

    /// Whether omniORB's contender runs.
    pub(crate) fn has_omniorb(&self) -> bool {
        self.omniorb.is_some()
    }

    /// One turn of `contender`.
    pub(crate) fn measure(&mut self, contender: Contender, turn: Turn) -> Result<Measured, String> {
        let wide = self.throughput_cpus.as_deref();
        match (contender, turn) {
            (Contender::Armillary, Turn::Latency { calls }) => {
                armillary_latency(&self.default, calls)
            }
            (Contender::ArmillaryThreadPerConnection, Turn::Latency { calls }) => {
                armillary_latency(&self.thread_per_connection, calls)
            }
            (Contender::Armillary, Turn::Throughput { threads, calls }) => {
                let exe = std::env::current_exe().map_err(|e| e.to_string())?;
                let out = command_on_cpus(&exe, wide)
                    .args(["bench", "drive-sync-throughput", "--ior"])
                    .arg(&self.throughput_ior)
                    .args(["--threads", &threads.to_string()])
                    .args(["--calls", &calls.to_string()])
                    .output()
                    .map_err(|e| format!("cannot run the throughput client: {e}"))?;
                if !out.status.success() {
                    return Err(format!(
                        "the throughput client failed ({}): {}",
                        out.status,
                        String::from_utf8_lossy(&out.stderr).trim()
                    ));
                }
                let out = String::from_utf8_lossy(&out.stdout);
                Ok(Measured::Rate(Elapsed::parse(&out)?.rate()))
            }
            (Contender::Armillary, Turn::Oneway { calls }) => {
                armillary_oneways(&self.default, calls)
            }
            (Contender::Armillary, Turn::Bytes { size, calls }) => {
                // A client ORB of its own: a new connection (see the module
                // documentation).
                let orb = Orb::with_config(OrbConfig::default()).map_err(|e| e.to_string())?;
                let echo = echo_peer::stub(&orb, &self.default_ior)?;
                let measured = timed_octet_echoes(size, calls, |payload, reply| {
                    *reply = echo.echo_octets(payload).map_err(|e| e.to_string())?;
                    Ok(())
                });
                // Not an upcall: cannot fail in a way that matters here.
                let _ = orb.shutdown(armillary::WaitForCompletion::No);
                measured
            }
            (Contender::Omniorb, turn) => {
                let Some(omni) = &self.omniorb else {
                    return Err("omniORB's peers are not built".into());
                };
                omniorb_turn(omni, turn, wide)
            }
            (Contender::RawTcp, Turn::Latency { calls }) => {
                let (stream, shape) = &mut self.raw_latency;
                let mut times = CallTimes::default();
                raw_ping_pongs(stream, *shape, calls, &mut times)?;
                Ok(Measured::Times(durations(&times)))
            }
            (Contender::RawTcp, Turn::Oneway { calls }) => {
                let (stream, shape) = &mut self.raw_oneway;
                raw_oneways(stream, *shape, calls)
            }
            (Contender::RawTcp, Turn::Bytes { size, calls }) => {
                let i = SIZES.iter().position(|s| s.2 == size).unwrap_or(0);
                // A new connection; the server serves one at a time and
                // takes this one when the last turn's closes.
                let stream = &mut raw_connection(self.raw_bytes[i])?;
                timed_octet_echoes(size, calls, |payload, reply: &mut Vec<u8>| {
                    reply.resize(payload.len(), 0);
                    stream.write_all(payload).map_err(|e| e.to_string())?;
                    stream.read_exact(reply).map_err(|e| e.to_string())
                })
            }
            (contender, turn) => Err(format!("{} has no {turn:?} turn", contender.key())),
        }
    }
}

impl Drop for Rig {
    fn drop(&mut self) {
        // Not an upcall: cannot fail in a way that matters here.
        let _ = self.orb.shutdown(armillary::WaitForCompletion::No);
    }
}

/// A client connection to the raw TCP server on `port`.
fn raw_connection(port: u16) -> Result<TcpStream, String> {
    let stream = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    stream.set_nodelay(true).map_err(|e| e.to_string())?;
    Ok(stream)
}

fn durations(times: &CallTimes) -> Vec<Duration> {
    times
        .micros
        .iter()
        .map(|us| Duration::from_secs_f64(us / 1e6))
        .collect()
}

fn armillary_latency(echo: &Everything, calls: usize) -> Result<Measured, String> {
    let mut times = CallTimes::default();
    echo_peer::timed_echoes(echo, calls, &mut times)?;
    Ok(Measured::Times(durations(&times)))
}

/// `calls` oneway `ping`s, then `oneway_count` until the server has
/// counted them all: the time from the first ping to that count.
fn armillary_oneways(echo: &Everything, calls: usize) -> Result<Measured, String> {
    let elapsed = echo_peer::counted_oneways(echo, calls, 0, Duration::ZERO, COUNT_DEADLINE)?;
    Ok(Measured::Rate(calls as f64 / elapsed.as_secs_f64()))
}

/// `calls` messages of the oneway shape's request size written one by
/// one, then the server's acknowledgement read: the time from the first
/// write to the acknowledgement.
fn raw_oneways(stream: &mut TcpStream, shape: RawShape, calls: usize) -> Result<Measured, String> {
    if calls != shape.requests_per_reply {
        return Err(format!(
            "the raw stream server acknowledges {} messages, not {calls}",
            shape.requests_per_reply
        ));
    }
    let message = vec![1u8; shape.request_size];
    let mut ack = vec![0u8; shape.reply_size];
    let t0 = Instant::now();
    for _ in 0..calls {
        stream.write_all(&message).map_err(|e| e.to_string())?;
    }
    stream.read_exact(&mut ack).map_err(|e| e.to_string())?;
    Ok(Measured::Rate(calls as f64 / t0.elapsed().as_secs_f64()))
}

/// [`BYTES_WARM_UP`] echoes, then `calls` echoes of `size` octets
/// through `echo` (which puts the reply in its second argument), each
/// timed on its own and checked (the check not timed): MB/s, counting the
/// bytes sent and received (10⁶ bytes a MB).
fn timed_octet_echoes<R: Default + AsRef<[u8]>>(
    size: usize,
    calls: usize,
    mut echo: impl FnMut(&Bytes, &mut R) -> Result<(), String>,
) -> Result<Measured, String> {
    let mut payload: Vec<u8> = (0..size).map(|j| (j * 7 + 3) as u8).collect();
    let mut reply = R::default();
    let mut total = Duration::ZERO;
    for i in 0..(BYTES_WARM_UP + calls) as u64 {
        // Each call's payload differs in its first octets: a stale reply
        // is caught.
        let stamp = i.to_ne_bytes();
        let n = stamp.len().min(size);
        payload[..n].copy_from_slice(&stamp[..n]);
        // (A `Bytes` for Armillary's stub to share; made before the clock
        // starts.)
        let sent = Bytes::copy_from_slice(&payload);
        let t = Instant::now();
        echo(&sent, &mut reply)?;
        if i >= BYTES_WARM_UP as u64 {
            total += t.elapsed();
        }
        if reply.as_ref() != payload {
            return Err(format!("an echo of {size} octets returned other octets"));
        }
    }
    let bytes = 2.0 * size as f64 * calls as f64;
    Ok(Measured::Rate(bytes / total.as_secs_f64() / 1e6))
}

/// One turn of omniORB's client against omniORB's server.
fn omniorb_turn(omni: &OmniorbRig, turn: Turn, wide: Option<&str>) -> Result<Measured, String> {
    let run = |file: &Path, args: &[String], cpus: Option<&str>| -> Result<Elapsed, String> {
        let mut all: Vec<&OsStr> = vec![OsStr::new(&args[0]), file.as_os_str()];
        all.extend(args[1..].iter().map(OsStr::new));
        Elapsed::parse(&omni.peers.run(Program::SyncBenchClient, &all, cpus)?)
    };
    match turn {
        Turn::Latency { calls } => Ok(Measured::Times(
            omni.peers.echo_latencies(&omni.ior_file, calls)?,
        )),
        Turn::Throughput { threads, calls } => {
            let args = ["throughput".into(), threads.to_string(), calls.to_string()];
            Ok(Measured::Rate(
                run(&omni.throughput_ior_file, &args, wide)?.rate(),
            ))
        }
        Turn::Oneway { calls } => {
            let args = ["oneway".into(), calls.to_string()];
            Ok(Measured::Rate(run(&omni.ior_file, &args, None)?.rate()))
        }
        Turn::Bytes { size, calls } => {
            let args = ["bytes".into(), size.to_string(), calls.to_string()];
            let e = run(&omni.ior_file, &args, None)?;
            let bytes = 2.0 * size as f64 * e.calls as f64;
            Ok(Measured::Rate(bytes / e.elapsed.as_secs_f64() / 1e6))
        }
    }
}
